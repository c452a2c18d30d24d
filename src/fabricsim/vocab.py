"""The one vocabulary: collectives, algorithms, protocols, data types and reduction operations, and the
NCCL_ALGO / NCCL_PROTO list syntax. Every other module takes these names and facts from here.

Adding an algorithm is one row of `ALGORITHMS` (plus its schedule builder in `fabricsim.schedules`).
Sources: NCCL v2.30.7 (`src/include/nccl_common.h` ncclFunc_t, `src/include/device.h` NCCL_ALGO_* / NCCL_PROTO_*,
`src/device/generate.py` algos_of_coll and the protocols each algorithm is built with), nccl-tests 2.19
(`src/<coll>.cu` *GetBw bus factors and *GetCollByteCount size conventions, `src/common.cu` type and op names)
and the NCCL user guide's NCCL_ALGO / NCCL_PROTO entries (env.rst: comma-separated, not case sensitive,
a leading '^' excludes the listed names).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from fabricsim.errors import FabricsimError


@dataclass(frozen=True)
class Collective:
    """One collective as fabricsim and nccl-tests name it.

    `nccl_func`: NCCL's ncclFunc_t name where NCCL's tuning model prices it (None: NCCL runs it as
    point-to-point sends and receives). `size_is_total`: the nccl-tests size column is the whole buffer
    (count x nranks x element). `bus_factor(n)`: nccl-tests busBw / algBw. `scheduled`: fabricsim has schedules for it.
    """

    name: str
    nccl_func: str | None
    reduces: bool
    rooted: bool
    size_is_total: bool
    bus_factor: Callable[[int], float]
    scheduled: bool = True


def _ring(n: int) -> float:
    return (n - 1) / n


_TABLE = (
    Collective("all_reduce", "AllReduce", True, False, False, lambda n: 2 * (n - 1) / n),
    Collective("reduce_scatter", "ReduceScatter", True, False, True, _ring),
    Collective("all_gather", "AllGather", False, False, True, _ring),
    Collective("broadcast", "Broadcast", False, True, False, lambda n: 1.0),
    Collective("reduce", "Reduce", True, True, False, lambda n: 1.0),
    Collective("alltoall", None, False, False, True, _ring),
    Collective("sendrecv", None, False, False, False, lambda n: 1.0),
    Collective("gather", None, False, True, True, _ring, scheduled=False),
    Collective("scatter", None, False, True, True, _ring, scheduled=False),
)
COLLECTIVE_TABLE: dict[str, Collective] = {c.name: c for c in _TABLE}

COLLECTIVES = tuple(c.name for c in _TABLE if c.scheduled)  # what fabricsim schedules, simulates and predicts
NCCL_TESTS_COLLECTIVES = tuple(sorted(COLLECTIVE_TABLE))  # every nccl-tests test fabricsim reads or prints
REDUCING = tuple(c.name for c in _TABLE if c.reduces)  # nccl-tests prints the redop for these, 'none' otherwise
ROOTED = tuple(c.name for c in _TABLE if c.rooted)  # nccl-tests prints the root for these, -1 otherwise
SIZE_IS_TOTAL = tuple(c.name for c in _TABLE if c.size_is_total)
P2P_COLLECTIVES = tuple(c.name for c in _TABLE if c.scheduled and c.nccl_func is None)  # NCCL runs these as send/recv
_NCCL_FUNC_ORDER = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")  # ncclFunc_t order
NCCL_FUNCS = {c.name: c.nccl_func for f in _NCCL_FUNC_ORDER for c in _TABLE if c.nccl_func == f}
BUSBW_FACTOR = {c.name: c.bus_factor for c in _TABLE if c.scheduled}


def bus_factor(collective: str, nranks: int) -> float:
    """busBw / algBw as nccl-tests computes it: 2(n-1)/n for all_reduce, (n-1)/n for gathers and scatters, else 1."""
    if collective not in COLLECTIVE_TABLE:
        raise FabricsimError(f"unknown nccl-tests collective '{collective}': use one of "
                             f"{', '.join(NCCL_TESTS_COLLECTIVES)}")
    if nranks < 1:
        raise FabricsimError(f"nranks {nranks} is not positive: give the number of GPUs in the communicator")
    return COLLECTIVE_TABLE[collective].bus_factor(nranks)


# Protocols in NCCL's index order (NCCL_PROTO_LL 0, LL128 1, SIMPLE 2): fabricsim name -> NCCL name.
NCCL_PROTO_NAMES = {"ll": "LL", "ll128": "LL128", "simple": "Simple"}
PROTOCOLS = tuple(NCCL_PROTO_NAMES)
NCCL_PROTOCOLS = tuple(NCCL_PROTO_NAMES.values())


@dataclass(frozen=True)
class Algorithm:
    """One collective algorithm.

    `nccl` / `nccl_id`: NCCL's name and NCCL_ALGO_* index (None: NCCL has no such algorithm). `family`: the NCCL
    algorithm whose protocol and latency constants time it (NCCL's own, else Ring's per-step send/recv costs).
    `graph`: the NCCL search graph whose channels it runs on. `protocols`: those NCCL builds it with (LL and LL128
    exist for Ring and Tree only). `collectives`: what fabricsim schedules it for; `nccl_collectives`: where NCCL
    runs it (its algos_of_coll, and the point-to-point patterns NCCL uses for all-to-all and send/recv).
    """

    name: str
    nccl: str | None
    nccl_id: int | None
    family: str
    collectives: tuple[str, ...]
    nccl_collectives: tuple[str, ...] = ()
    protocols: tuple[str, ...] = ("simple",)

    @property
    def graph(self) -> str:
        return self.nccl or "Ring"


_AG_RS = ("all_gather", "reduce_scatter")
_NCCL_COLLS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
# Row order is the candidate order of every per-collective list below (and so the tuner's tie-break).
ALGORITHMS: dict[str, Algorithm] = {a.name: a for a in (
    Algorithm("ring", "Ring", 1, "Ring", _NCCL_COLLS, _NCCL_COLLS, PROTOCOLS),
    Algorithm("tree", "Tree", 0, "Tree", ("all_reduce",), ("all_reduce",), PROTOCOLS),
    Algorithm("rabenseifner", None, None, "Ring", ("all_reduce",)),
    Algorithm("recursive_doubling", None, None, "Ring", ("all_reduce", "all_gather")),
    Algorithm("hierarchical", None, None, "Ring", ("all_reduce",)),
    Algorithm("bruck", None, None, "Ring", _AG_RS),
    # PAT is timed with Ring's constants (engine.protocols has no PAT rows) but runs on NCCL's PAT graph.
    Algorithm("pat", "PAT", 6, "Ring", _AG_RS, _AG_RS),
    Algorithm("nvls", "NVLS", 4, "NVLS", ("all_reduce", *_AG_RS), ("all_reduce", *_AG_RS)),
    Algorithm("nvls_tree", "NVLSTree", 5, "NVLSTree", ("all_reduce",), ("all_reduce",)),
    Algorithm("collnet_direct", "CollNetDirect", 2, "CollNetDirect", ("all_reduce",), ("all_reduce", *_AG_RS)),
    Algorithm("collnet_chain", "CollNetChain", 3, "CollNetChain", ("all_reduce",), ("all_reduce",)),
    Algorithm("direct", None, None, "Ring", ("alltoall", "sendrecv"), ("alltoall", "sendrecv")),
    Algorithm("pairwise", None, None, "Ring", ("alltoall",)),
    Algorithm("pxn", None, None, "Ring", ("alltoall",), ("alltoall",)),
)}

ALGORITHMS_BY_COLLECTIVE = {c: tuple(a for a in ALGORITHMS if c in ALGORITHMS[a].collectives) for c in COLLECTIVES}
NCCL_ALGORITHMS_BY_COLLECTIVE = {c: tuple(a for a in ALGORITHMS if c in ALGORITHMS[a].nccl_collectives)
                                 for c in COLLECTIVES}
NCCL_ALGO_NAMES = {a.name: a.nccl for a in sorted(ALGORITHMS.values(), key=lambda a: a.nccl_id or 0) if a.nccl}
# NCCL's tuning model's algorithms per collective, NCCL names in NCCL_ALGO_* order (tuning.cc's per-function skips).
NCCL_TUNED_ALGOS = {c: tuple(ALGORITHMS[a].nccl for a in NCCL_ALGO_NAMES if c in ALGORITHMS[a].nccl_collectives)
                    for c in NCCL_FUNCS}
ALGO_FAMILY = {a.name: a.family for a in ALGORITHMS.values()}

# nccl-tests type names and element sizes in bytes (src/common.cu test_typenames).
DTYPE_SIZES = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "half": 2, "float": 4,
               "double": 8, "bfloat16": 2, "f8e4m3": 1, "f8e5m2": 1}
REDUCTION_OPS = ("sum", "prod", "max", "min", "avg")  # nccl-tests -o names, in ncclRedOp_t order (nccl.h)


@dataclass(frozen=True)
class Selection:
    """A parsed NCCL_ALGO / NCCL_PROTO list: canonical fabricsim names, kept (exclude False) or excluded."""

    names: tuple[str, ...]
    exclude: bool = False

    def keeps(self, name: str) -> bool:
        return (name in self.names) != self.exclude

    def apply(self, universe: Iterable[str]) -> list[str]:
        """The names of `universe` this selection allows, in universe order."""
        return [n for n in universe if self.keeps(n)]

    def spec(self) -> str:
        """The list as NCCL_ALGO would spell it: 'ring,tree' or '^nvls'."""
        return ("^" if self.exclude else "") + ",".join(self.names)


_ALGO_LOOKUP = {**{a: (a,) for a in ALGORITHMS}, **{v.lower(): (k,) for k, v in NCCL_ALGO_NAMES.items()},
                "collnet": ("collnet_direct", "collnet_chain")}  # NCCL <= 2.13's one CollNet, split in 2.14 (env.rst)
_PROTO_LOOKUP = {**{p: (p,) for p in PROTOCOLS}, **{v.lower(): (k,) for k, v in NCCL_PROTO_NAMES.items()}}
# Collective names of the per-collective form 'allreduce:tree,ring;allgather:ring' (NCCL 2.24+): ncclFuncStr
# lowercased, and fabricsim's own.
_PER_COLLECTIVE = {**{f.lower(): c for c, f in NCCL_FUNCS.items()}, **{c: c for c in NCCL_FUNCS}}


def _for_collective(text: str, collective: str | None, kind: str) -> str | None:
    """The list for `collective` of 'allreduce:tree,ring;allgather:ring' (None: that collective is not named), or
    `text` itself when it is one plain list."""
    if ":" not in text:
        return text
    if collective is None:
        raise FabricsimError(f"{kind} list '{text}' is set per collective ('allreduce:ring'): give a plain list, "
                             "e.g. ring,tree")
    chosen = None
    for part in text.split(";"):
        coll, sep, rest = part.partition(":")
        key = coll.strip().lower()
        if not sep or key not in _PER_COLLECTIVE:
            raise FabricsimError(f"{kind} list '{text}': '{part.strip()}' is not 'collective:list' with a collective "
                                 f"among {', '.join(f.lower() for f in NCCL_FUNCS.values())}; use one form throughout")
        if _PER_COLLECTIVE[key] == collective:
            chosen = rest
    return chosen


def _parse(spec: str | Sequence[str] | Selection | None, lookup: dict[str, tuple[str, ...]], kind: str, names: str,
           collective: str | None) -> Selection | None:
    if spec is None or isinstance(spec, Selection):
        return spec
    text = spec if isinstance(spec, str) else ",".join(str(s) for s in spec)
    part = _for_collective(text, collective, kind)
    if part is None or not part.strip():
        return None
    items = [t.strip() for t in part.split(",")]
    exclude = items[0].startswith("^")
    if exclude:
        items[0] = items[0][1:].strip()
    items = [t for t in items if t]
    if not items:
        raise FabricsimError(f"{kind} list '{text}' names nothing: give names such as {names} "
                             "('^' first excludes them)")
    out: list[str] = []
    for item in items:
        if item.startswith("^"):
            raise FabricsimError(f"{kind} list '{text}': '^' may only start the list (it excludes every name "
                                 f"after it), e.g. ^{item.lstrip('^')}")
        canonical = lookup.get(item.lower())
        if canonical is None:
            raise FabricsimError(f"unknown {kind} '{item}' in '{text}': use {names} "
                                 "(NCCL's spellings, any case, work too)")
        out += [c for c in canonical if c not in out]
    return Selection(tuple(out), exclude)


def parse_algorithms(spec: str | Sequence[str] | Selection | None, collective: str | None = None) -> Selection | None:
    """An NCCL_ALGO-style list ('ring,tree', '^nvls', 'NVLSTree', a list of names) -> Selection; None: no restriction.

    Names are fabricsim's (ALGORITHMS) or NCCL's (NCCL_ALGO_NAMES, and 'collnet' of NCCL <= 2.13), any case; a leading
    '^' excludes them. The per-collective form 'allreduce:tree;allgather:ring' needs `collective` and gives its list."""
    return _parse(spec, _ALGO_LOOKUP, "algorithm", ", ".join(ALGORITHMS), collective)


def parse_protocols(spec: str | Sequence[str] | Selection | None, collective: str | None = None) -> Selection | None:
    """An NCCL_PROTO-style list ('ll,ll128', '^LL', 'Simple', or per collective) -> Selection; None: no restriction."""
    return _parse(spec, _PROTO_LOOKUP, "protocol", ", ".join(PROTOCOLS), collective)
