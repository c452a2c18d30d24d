"""An nccl-tests size sweep predicted on a cluster: one row per size, the pick behind it, and why.

`predict` times every size as `all_reduce_perf -b .. -e ..` would run it: with fabricsim's tuner (the algorithm and
protocol NCCL's own model picks, as NCCL does, timed on the topology by the engine; with `library='all'` every
applicable schedule simulated and the fastest kept) or with NCCL's own cost model alone. `explain` puts NCCL's model's pick beside fabricsim's per size. The CLI's `perf` and `compare`
and the Python API (`fabricsim.perf`) all call these; nothing here prints.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fabricsim.errors import FabricsimError, option
from fabricsim.reports.nccltests_table import DTYPE_SIZES, ROOTED, PerfRow, count_for
from fabricsim.units import MAX_BYTES
# nccl-tests' -o names; its size column is the whole buffer for SIZE_IS_TOTAL; it prints the redop for REDUCING only
from fabricsim.vocab import REDUCING, REDUCTION_OPS as REDOPS, SIZE_IS_TOTAL

Progress = Callable[[int, int], None]  # (steps done, steps in all): a caller's progress display

COST_MODELS = ("fabricsim", "nccl")
LEVELS = ("flow", "analytical")
LIBRARIES = ("nccl", "all")
MAX_SWEEP_SIZES = 4096


def sizes(minbytes: int, maxbytes: int, factor: float | None = None, step: int | None = None) -> list[int]:
    """nccl-tests' size sweep: multiply by `factor` (-f, default 2), or add `step` (-i), from -b up to -e inclusive."""
    lo, hi = option("minbytes", flag="-b"), option("maxbytes", flag="-e")
    if maxbytes < minbytes:
        raise FabricsimError(f"{option('maxbytes', maxbytes, flag='-e')} is smaller than "
                             f"{option('minbytes', minbytes, flag='-b')}: the sweep runs from {lo} up to {hi}")
    if maxbytes > MAX_BYTES:
        raise FabricsimError(f"{option('maxbytes', maxbytes, flag='-e')} bytes is more than fabricsim sizes a buffer "
                             f"({MAX_BYTES} bytes, 256 TiB): use a smaller {hi}")
    if factor is not None and not math.isfinite(factor):
        raise FabricsimError(f"{option('factor', factor, flag='-f')}: the factor must be a finite number greater than 1")
    if factor is not None and step is not None:
        raise FabricsimError(f"give either {option('factor', flag='-f')} or {option('step', flag='-i')}, not both")
    if step is not None and step <= 0:
        raise FabricsimError(f"{option('step', step, flag='-i')}: the step must be a positive number of bytes")
    if factor is not None and factor <= 1 and maxbytes > minbytes:
        raise FabricsimError(f"{option('factor', factor, flag='-f')}: the factor must be greater than 1")
    out, size = [], minbytes
    while size <= maxbytes:
        out.append(size)
        if size == maxbytes:
            break
        grown = size + step if step is not None else size * (factor or 2)  # a float: a huge -f overflows nothing
        if grown > maxbytes:
            break
        if int(grown) <= size:  # only a factor step stalls (0 x f, or f too small for the size): nccl-tests loops
            raise FabricsimError(_stalled(size, factor or 2))
        size = int(grown)
        if len(out) > MAX_SWEEP_SIZES:
            raise FabricsimError(f"the sweep has more than {MAX_SWEEP_SIZES} sizes: use a larger "
                                 f"{option('factor', flag='-f')} or {option('step', flag='-i')}")
    return out


def least_bytes(collective: str, dtype: str, n_ranks: int) -> tuple[int, str]:
    """(the smallest size that moves data, what it is): one element, one per rank where the size is the whole buffer
    (nccl-tests' count column, `count_for`); below it a count of 0 moves nothing."""
    elem = DTYPE_SIZES[dtype]
    if collective in SIZE_IS_TOTAL:
        return elem * n_ranks, f"one {dtype} for each of {n_ranks} ranks: {n_ranks} x {elem} B"
    return elem, f"one {dtype}"


def empty_rows_note(collective: str, size_list: Sequence[int], dtype: str, n_ranks: int) -> str | None:
    """What to tell a user whose sweep starts below `least_bytes`: nccl-tests prints those sizes as rows of size 0
    that move nothing, and so does fabricsim."""
    least, what = least_bytes(collective, dtype, n_ranks)
    empty = [s for s in size_list if 0 < s < least]
    if not empty:
        return None
    many = len(empty) > 1
    return (f"{f'{len(empty)} sizes' if many else f'size {empty[0]}'} below {least} B ({what}) "
            f"{'print' if many else 'prints'} as size 0 and {'move' if many else 'moves'} nothing, as in nccl-tests: "
            f"start at {option('minbytes', least, flag='-b')} to leave {'them' if many else 'it'} out")


def _stalled(size: int, factor: float) -> str:
    """Why a factor sweep from `size` repeats it (the size times the factor rounds down to the size), and the fix."""
    def b(n: int) -> str:
        return option("minbytes", n, flag="-b")

    f = option("factor", int(factor) if float(factor).is_integer() else factor, flag="-f")  # -f 2, not -f 2.0
    if size == 0:
        return (f"{b(0)} with a factor sweep ({f}): 0 times any factor is 0, so every size would be 0 bytes: start "
                f"at {b(1)} or more (nccl-tests' usual {b(8)}), or step by bytes with {option('step', flag='-i')}")
    need = max(size + 1, math.ceil(1 / (factor - 1)))
    while int(need * factor) <= need:  # the float product can round below the exact bound
        need += 1
    return (f"{b(size)} with {f}: {size} x {factor:g} rounds down to {size}, so the sweep would repeat size {size}: "
            f"start at {b(need)} or more, or use a larger factor ({option('factor', 2, flag='-f')})")


def check_options(collective: str, n_ranks: int, *, dtype: str, redop: str, root: int, level: str | None,
                  cost_model: str, library: str) -> str:
    """Reject options that do not apply (none is ignored silently); the engine level the sweep runs at."""
    from fabricsim.schedules import COLLECTIVES

    if collective not in COLLECTIVES:
        raise FabricsimError(f"unknown collective '{collective}': use one of {', '.join(COLLECTIVES)}")
    if cost_model not in COST_MODELS:
        raise FabricsimError(f"unknown cost model '{cost_model}': use 'fabricsim' (simulate every candidate on the "
                             "topology) or 'nccl' (NCCL's own tuning model)")
    if dtype not in DTYPE_SIZES:
        raise FabricsimError(f"unknown data type '{dtype}': use one of {', '.join(sorted(DTYPE_SIZES))}")
    if redop not in REDOPS:
        raise FabricsimError(f"unknown reduction '{redop}': use one of {', '.join(REDOPS)}")
    if level is not None and level not in LEVELS:
        raise FabricsimError(f"unknown engine level '{level}': use 'flow' or 'analytical'")
    if library not in LIBRARIES:
        raise FabricsimError(f"unknown library '{library}': use 'nccl' (what NCCL runs) or 'all' (every fabricsim "
                             "schedule)")
    if cost_model == "nccl":
        if level is not None:
            raise FabricsimError(f"{option('level', level)} sets how fabricsim simulates; NCCL's cost model has no "
                                 f"engine: drop {option('level')}, or drop {option('cost_model', 'nccl')}")
        if library != "nccl":
            raise FabricsimError(f"{option('library', 'all')} adds fabricsim's own schedules, which NCCL's cost model "
                                 f"does not price: drop {option('library')}, or drop {option('cost_model', 'nccl')}")
    if collective in ROOTED and not 0 <= root < n_ranks:
        raise FabricsimError(f"root {root} is outside the {n_ranks} ranks: use a root in 0..{n_ranks - 1}")
    if collective == "sendrecv" and n_ranks < 2:
        raise FabricsimError(f"sendrecv needs at least 2 GPUs: use a larger {option('nodes')}/{option('gpus')}")
    return "flow" if level is None and cost_model == "fabricsim" else (level or "")


def forced_notes(topo, ranks: np.ndarray, collective: str, algos: Sequence[str] | None) -> list[str]:
    """What to tell a user who forced algorithms NCCL would not run here (the run goes on), and the
    error for one that cannot run for want of hardware the cluster file can enable."""
    if not algos or algos[0].startswith("^"):
        return []
    from fabricsim import schedules

    structure = schedules.structure_from_topology(topo, ranks)
    notes = []
    if any(a.startswith("collnet") for a in algos) and not topo.features.get("sharp"):
        from fabricsim.reports.nccl_env import sharp_switches

        if topo.spec is not None and sharp_switches(topo.spec):  # SHARP there, CollNet off (NCCL's default)
            raise FabricsimError(
                f"CollNet is off on {topo.name}, whose {topo.spec.leaf_switch} switches do SHARP: NCCL runs it only "
                f"with NCCL_COLLNET_ENABLE=1 (0 by default): give it in the run's NCCL environment "
                f"({option('env')}), or set 'sharp: true' in a cluster file")
        raise FabricsimError(
            f"CollNet needs SHARP in-network reduction, which {topo.name} has no switch for: set 'sharp: true' in a "
            f"cluster file (fabricsim topo save {topo.name} -o cluster.yaml, edit it, then --cluster cluster.yaml)")
    from fabricsim.vocab import NCCL_ALGORITHMS_BY_COLLECTIVE

    nccl_runs = NCCL_ALGORITHMS_BY_COLLECTIVE.get(collective, ())
    own = [a for a in dict.fromkeys(algos) if a not in nccl_runs]
    if own:
        which = ", ".join(own)
        notes.append(f"NCCL does not implement {which} for {collective} (it runs {', '.join(nccl_runs) or 'none'}), "
                     f"so the {which} rows are fabricsim's own schedule{'s' * (len(own) > 1)}, which no NCCL run "
                     "would show")
    if "pat" in algos and structure.ranks_per_node > 1:
        notes.append(f"NCCL runs PAT only with one GPU per node (ncclPatEnable: nNodes == nRanks); these ranks have "
                     f"{structure.ranks_per_node} per node, so the pat rows are fabricsim's PAT schedule, which NCCL "
                     "would not run here")
    return notes


@dataclass(frozen=True, eq=False)
class Point:
    """One size of a sweep: the nccl-tests row, and the pick behind it (a tuner `Choice`, NCCL's model's
    `NcclChoice`, or None where the size moves no data)."""

    row: PerfRow
    pick: Any

    def __repr__(self) -> str:
        r = self.row
        return f"Point({r.size_bytes} B: {r.algo}/{r.proto}, {r.time_s * 1e6:.2f} us, busbw {r.busbw / 1e9:.2f} GB/s)"


def predict(topo, ranks: np.ndarray, collective: str, size_list: Sequence[int], *, dtype: str = "float",
            redop: str = "sum", root: int = 0, algos: Sequence[str] | None = None, protos: Sequence[str] | None = None,
            level: str = "flow", library: str = "nccl", cost_model: str = "fabricsim",
            progress: Progress | None = None, nccl_version=None, chunk_env=None) -> list[Point]:
    """One nccl-tests row per size (size and count as nccl-tests rounds them) and the pick behind it.
    `ranks` are the GPU ranks of the communicator (a partial node uses the first few); `nccl_version` the NCCL
    release whose rules apply (tuner.nccl_versions; None: the newest modelled); `chunk_env` the buffer and chunk
    sizes and channel bounds the run's NCCL environment set (engine.chunking.ChunkEnv; NCCL's cost model has no
    buffers, its channels follow the bounds)."""
    from fabricsim.tuner import nccl_model

    elem = DTYPE_SIZES[dtype]
    ranks = np.asarray(ranks, dtype=np.int32)
    n = int(ranks.size)
    algo_list = list(algos) if algos else None
    proto_list = list(protos) if protos else None
    system = nccl_model.system_from_topology(topo, ranks=ranks, version=nccl_version) if cost_model == "nccl" else None
    if system is not None and chunk_env is not None:  # its channel bounds: the channels NCCL's model counts
        system = replace(system, channel_env=chunk_env.channels)
    r = root if collective in ROOTED else -1
    op = redop if collective in REDUCING else "none"
    out = []
    if progress is not None:
        progress(0, len(size_list))
    for i, size in enumerate(size_list):
        count = count_for(collective, size, n, elem)
        nbytes = count * elem * (n if collective in SIZE_IS_TOTAL else 1)
        if nbytes == 0:  # fewer bytes than one element: NCCL returns at once for a count of 0, nothing moves
            out.append(Point(PerfRow(0, 0, dtype, op, r, 0.0, 0.0, 0.0, "none", "none", 0, "none"), None))
        elif system is not None:
            ch = nccl_model.nccl_predict(system, collective, nbytes, algo=algo_list, proto=proto_list, redop=redop,
                                         dtype=dtype)
            out.append(Point(PerfRow(nbytes, count, dtype, op, r, ch.time_s, ch.algbw, ch.busbw, fabricsim_algo(ch.algo),
                                     ch.proto.lower(), ch.channels, "nccl-model"), ch))  # spelled as fabricsim's rows
        else:
            out.append(_simulated(topo, ranks, collective, nbytes, count, elem, dtype, op, r, redop, algo_list,
                                  proto_list, level, library, nccl_version, chunk_env))
        if progress is not None:
            progress(i + 1, len(size_list))
    return out


def _simulated(topo, ranks, collective, nbytes, count, elem, dtype, op, root, redop, algos, protos, level,
               library, nccl_version, chunk_env=None) -> Point:
    from fabricsim.tuner.select import best

    choice = best(topo, collective, nbytes, ranks=ranks, elem_size=elem, algos=algos, protos=protos, level=level,
                  library=library, root=max(root, 0), redop=redop, dtype=dtype, nccl_version=nccl_version,
                  chunk_env=chunk_env)
    res = choice.result
    neck = res.bottlenecks[0].name if res.bottlenecks else None
    return Point(PerfRow(nbytes, count, dtype, op, root, res.time, res.algbw, res.busbw, choice.algorithm,
                         choice.protocol, choice.channels, res.level, bound=res.bound, bottleneck=neck), choice)


@dataclass(frozen=True)
class ExplainRow:
    """One size: fabricsim's pick and NCCL's model's pick (fabricsim's spelling, lower case), and why they differ."""

    size_bytes: int
    fabricsim_pick: str
    fabricsim_time_s: float
    fabricsim_busbw: float
    nccl_pick: str | None  # None where NCCL's model cannot price the call (the reason says why)
    nccl_time_s: float | None
    nccl_busbw: float | None
    same_pick: bool
    reason: str


def explain(topo, ranks: np.ndarray, collective: str, points: Sequence[Point],
            algos: Sequence[str] | None = None, protos: Sequence[str] | None = None,
            nccl_version=None) -> list[ExplainRow]:
    """Per simulated size: NCCL's model's pick (of release `nccl_version`) beside fabricsim's, and why they differ."""
    from fabricsim.tuner import nccl_model

    system = nccl_model.system_from_topology(topo, ranks=np.asarray(ranks, dtype=np.int32), version=nccl_version)
    out = []
    for p in points:
        if p.pick is None or not hasattr(p.pick, "result"):
            continue
        choice, row = p.pick, p.row
        res = choice.result
        fab = f"{choice.algorithm}/{choice.protocol}"
        try:
            ch = nccl_model.nccl_predict(system, collective, row.size_bytes, algo=list(algos) if algos else None,
                                         proto=list(protos) if protos else None,
                                         redop=row.redop if row.redop != "none" else "sum", dtype=row.dtype)
        except FabricsimError as err:
            out.append(ExplainRow(row.size_bytes, fab, res.time, res.busbw, None, None, None, False,
                                  f"NCCL's model cannot price this call ({err}); fabricsim is {_where(res)}"))
            continue
        nccl = f"{fabricsim_algo(ch.algo)}/{ch.proto.lower()}"
        same = nccl == fab
        reason = (f"same pick; fabricsim is {_where(res)}" if same else
                  f"different pick: fabricsim times every candidate on the topology ({_where(res)}); NCCL ranks by "
                  "its latency/bandwidth tables")
        out.append(ExplainRow(row.size_bytes, fab, res.time, res.busbw, nccl, ch.time_s, ch.busbw, same, reason))
    return out


def fabricsim_algo(nccl_name: str) -> str:
    """NCCL's algorithm name (NVLSTree, CollNetDirect) in fabricsim's spelling (nvls_tree, collnet_direct)."""
    from fabricsim.vocab import NCCL_ALGO_NAMES

    back = {v.lower(): k for k, v in NCCL_ALGO_NAMES.items()}
    return back.get(nccl_name.lower(), nccl_name.lower())


def _where(res) -> str:
    """'bandwidth-bound: per-peer network cap 28.0 GB/s per point-to-point transfer (its source)': what the engine
    says limits the bandwidth time (`Result.limiter`: the busiest links, or a rate cap, with value and source)."""
    return f"{res.bound}: {res.limiter}"


def explain_record(e: ExplainRow) -> dict:
    """One explain row as JSON-able values, units in the key names as in the perf rows (us, GB/s)."""
    def us(t: float | None) -> float | None:
        return None if t is None else t * 1e6

    def gbps(b: float | None) -> float | None:
        return None if b is None else b / 1e9

    return {"size_bytes": e.size_bytes, "fabricsim_pick": e.fabricsim_pick, "fabricsim_time_us": us(e.fabricsim_time_s),
            "fabricsim_busbw_GBps": gbps(e.fabricsim_busbw), "nccl_pick": e.nccl_pick,
            "nccl_time_us": us(e.nccl_time_s), "nccl_busbw_GBps": gbps(e.nccl_busbw), "same_pick": e.same_pick,
            "reason": e.reason}


def format_explain(rows: Sequence[ExplainRow]) -> str:
    """The explain rows as '#'-prefixed text under an nccl-tests table."""
    lines = ["", "# explain: fabricsim (topology simulation) vs NCCL's own cost model (tuning.cc)",
             f"# {'size':>12}  {'fabricsim':<18} {'time us':>10} {'busbw':>8}   {'nccl model':<18} {'time us':>10} "
             f"{'busbw':>8}  reason"]
    for e in rows:
        nccl = ((e.nccl_pick, f"{e.nccl_time_s * 1e6:.1f}", f"{e.nccl_busbw / 1e9:.1f}")
                if e.nccl_pick is not None and e.nccl_time_s is not None and e.nccl_busbw is not None
                else ("n/a", "-", "-"))
        lines.append(f"# {e.size_bytes:>12}  {e.fabricsim_pick:<18} {e.fabricsim_time_s * 1e6:>10.1f} "
                     f"{e.fabricsim_busbw / 1e9:>8.1f}   {nccl[0]:<18} {nccl[1]:>10} {nccl[2]:>8}  {e.reason}")
    return "\n".join(lines)
