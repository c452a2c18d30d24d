"""Replay per-rank trace nodes on a cluster: dependencies, one stream per kind, collectives timed by the tuner.

Each rank runs its nodes in file order on streams: 'compute' (GPU kernels), 'cpu' (is_cpu_op nodes),
'comm:<group>' (one per process group, as NCCL gives each communicator its own stream) and 'p2p:<a>-<b>'
(send / recv between two ranks). A node starts when its data and control dependencies have finished and
its stream is free. The k-th collective of a group on every member rank is one call: it starts when the
last member can start it and lasts the time `tuner.select.best` gives on the members' ranks (the size is
nccl-tests' size: the whole buffer of an all-gather or reduce-scatter). A send and the matching receive
are one point-to-point transfer timed as a two-rank sendrecv. Compute nodes take their recorded duration,
else num_ops FLOPs at the GPU's dense BF16 peak times the training model's compute efficiency.
Not modelled: contention between collectives of different groups that overlap in time (each is timed
alone on the fabric), memory / storage nodes without a recorded duration (zero time).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim import hardware
from fabricsim.errors import FabricsimError
from fabricsim.topology.model import Topology
from fabricsim.traces.chakra import TraceNode
from fabricsim.training.efficiency import default_efficiency
from fabricsim.tuner.select import best
from fabricsim.vocab import SIZE_IS_TOTAL

# nccl-tests' size column is the whole buffer for vocab.SIZE_IS_TOTAL (the per-rank count is size / element /
# ranks, src/<coll>.cu *GetCollByteCount), one rank's buffer for the others.
_COMM = ("coll", "send", "recv")


@dataclass(frozen=True)
class Event:
    """One node as it ran: seconds from the start of the step."""

    rank: int
    node: int
    name: str
    kind: str
    stream: str
    start: float
    end: float
    collective: str = ""
    nbytes: int = 0
    group: str = ""
    algo: str = ""
    proto: str = ""
    channels: int = 0


@dataclass(frozen=True)
class RankSummary:
    """Busy time per rank: compute (GPU streams), communication (union of comm streams), the communication
    no compute overlaps, and when the rank's last node ends."""

    rank: int
    compute: float
    comm: float
    exposed_comm: float
    end: float


@dataclass(frozen=True)
class CollRow:
    """Calls of one (group, collective, size): ranks, the tuner's pick and the time of one call."""

    group: str
    collective: str
    ranks: int
    nbytes: int
    algo: str
    proto: str
    channels: int
    time: float
    calls: int


@dataclass(frozen=True)
class Replay:
    events: tuple[Event, ...]
    ranks: tuple[RankSummary, ...]
    collectives: tuple[CollRow, ...]
    notes: tuple[str, ...]

    @property
    def step_time(self) -> float:
        return max((r.end for r in self.ranks), default=0.0)


def _stream(node: TraceNode) -> str:
    if node.kind == "comp":
        return "compute"
    if node.kind == "cpu":
        return "cpu"
    if node.kind == "coll":
        return f"comm:{node.group or 'world'}"
    if node.kind in ("send", "recv"):
        a, b = sorted((node.rank, node.peer))
        return f"p2p:{a}-{b}"
    return "other"


def _groups(trace: list[list[TraceNode]], comm_groups: dict[str, list[int]] | None) -> dict[str, tuple[int, ...]]:
    """Ranks of each process group: as given, else every rank whose trace calls a collective on it."""
    names = {n.group or "world" for nodes in trace for n in nodes if n.kind == "coll"}
    out = {}
    for g in sorted(names):
        if comm_groups and g in comm_groups:
            out[g] = tuple(sorted(int(r) for r in comm_groups[g]))
        elif g == "world":
            out[g] = tuple(range(len(trace)))
        else:
            out[g] = tuple(r for r, nodes in enumerate(trace) if any(n.kind == "coll" and n.group == g for n in nodes))
    for g, members in out.items():
        bad = [r for r in members if not 0 <= r < len(trace)]
        if bad:
            raise FabricsimError(f"process group {g} lists rank {bad[0]}, but the trace has ranks 0..{len(trace) - 1}")
    return out


class _Timer:
    """Times of compute nodes and of collective calls (cached per group, collective and size)."""

    def __init__(self, topo: Topology, efficiency: float | None) -> None:
        self.topo = topo
        gpu = hardware.get_gpu(topo.spec.gpu)
        eff = efficiency if efficiency is not None else default_efficiency(gpu.arch, "bf16")[0]
        self.flops_per_s = gpu.bf16_flops * eff
        self.cache: dict = {}
        self.zero_compute = 0

    def compute(self, node: TraceNode) -> float:
        if node.duration_s > 0:
            return node.duration_s
        if node.flops > 0:
            return node.flops / self.flops_per_s
        self.zero_compute += node.kind in ("comp", "cpu")
        return 0.0

    def call(self, collective: str, nbytes: int, ranks: tuple[int, ...]) -> tuple[float, str, str, int, int]:
        """(time, algorithm, protocol, channels, bytes timed) of one call, as `fabricsim perf` times it."""
        key = (collective, nbytes, ranks)
        if key not in self.cache:
            n = len(ranks)
            per = 4 * (n if collective in SIZE_IS_TOTAL else 1)  # float elements, as fabricsim perf
            timed = nbytes // per * per
            if timed == 0:
                raise FabricsimError(f"{collective} of {nbytes} B on {n} rank{'s' * (n != 1)} is less than one float "
                                     "per rank: give a comm_size of at least 4 x ranks bytes")
            choice = best(self.topo, collective, timed, ranks=np.asarray(ranks, dtype=np.int32))  # 1 rank: NCCL's copy
            self.cache[key] = (choice.result.time, choice.algorithm, choice.protocol, choice.channels, timed)
        return self.cache[key]


def _check_deps(trace: list[list[TraceNode]]) -> None:
    for nodes in trace:
        ids = {n.id for n in nodes}
        if len(ids) != len(nodes):
            raise FabricsimError(f"rank {nodes[0].rank}: two nodes share an id: node ids must be unique per rank")
        for n in nodes:
            missing = [d for d in n.deps if d not in ids]
            if missing:
                raise FabricsimError(f"rank {n.rank}: node {n.id} '{n.name}' depends on node {missing[0]}, which the "
                                     "rank's trace does not have")


def replay(trace: list[list[TraceNode]], topo: Topology, *, comm_groups: dict[str, list[int]] | None = None,
           efficiency: float | None = None) -> Replay:
    """Time every rank's nodes on `topo` (rank r of the trace is GPU rank r)."""
    if len(trace) > topo.n_gpus:
        raise FabricsimError(f"the trace has {len(trace)} ranks but {topo.name} has {topo.n_gpus} GPUs: use a larger "
                             "cluster (--nodes / --gpus)")
    _check_deps(trace)
    groups = _groups(trace, comm_groups)
    timer = _Timer(topo, efficiency)
    streams: list[dict[str, list[TraceNode]]] = []
    for nodes in trace:
        per: dict[str, list[TraceNode]] = {}
        for n in nodes:
            per.setdefault(_stream(n), []).append(n)
        streams.append(per)
    head = [{s: 0 for s in per} for per in streams]
    free = [{s: 0.0 for s in per} for per in streams]
    finish: list[dict[int, float]] = [{} for _ in trace]
    events: list[Event] = []
    left = sum(len(nodes) for nodes in trace)

    def ready(rank: int, stream: str) -> tuple[TraceNode, float] | None:
        """The stream's next node and the earliest it can start, or None while a dependency is running."""
        queue = streams[rank][stream]
        i = head[rank][stream]
        if i >= len(queue):
            return None
        node = queue[i]
        if any(d not in finish[rank] for d in node.deps):
            return None
        return node, max([free[rank][stream], *(finish[rank][d] for d in node.deps)])

    def run(rank: int, node: TraceNode, stream: str, start: float, end: float, **extra) -> None:
        nonlocal left
        finish[rank][node.id] = end
        free[rank][stream] = end
        head[rank][stream] += 1
        events.append(Event(rank, node.id, node.name, node.kind, stream, start, end, **extra))
        left -= 1

    calls: dict[tuple, list] = {}
    while left:
        progressed = False
        for rank, per in enumerate(streams):
            for stream in per:
                while (r := ready(rank, stream)) is not None and r[0].kind not in _COMM:
                    node, start = r
                    run(rank, node, stream, start, start + timer.compute(node))
                    progressed = True
        for g, members in groups.items():
            stream = f"comm:{g}"
            heads = [ready(r, stream) if stream in streams[r] else None for r in members]
            if not heads or any(h is None for h in heads):
                continue
            first = heads[0][0]
            for r, (node, _) in zip(members, heads):
                if (node.collective, node.nbytes) != (first.collective, first.nbytes):
                    raise FabricsimError(f"group {g}: rank {members[0]} calls {first.collective} of {first.nbytes} B "
                                         f"(node {first.id}) where rank {r} calls {node.collective} of {node.nbytes} B "
                                         f"(node {node.id}): the ranks' traces are out of step")
            t, algo, proto, ch, timed = timer.call(first.collective, first.nbytes, members)
            start = max(s for _, s in heads)
            for r, (node, _) in zip(members, heads):
                run(r, node, stream, start, start + t, collective=node.collective, nbytes=node.nbytes, group=g,
                    algo=algo, proto=proto, channels=ch)
            row = calls.setdefault((g, first.collective, first.nbytes), [len(members), algo, proto, ch, t, 0])
            row[5] += 1
            progressed = True
        progressed |= _p2p(streams, ready, run, timer)
        if not progressed:
            raise FabricsimError(_stuck(streams, head))
    notes = []
    if timer.zero_compute:
        notes.append(f"{timer.zero_compute} compute nodes have neither a recorded duration nor num_ops: zero time")
    others = sum(1 for nodes in trace for n in nodes if n.kind == "other")
    if others:
        notes.append(f"{others} memory / metadata / storage nodes are not modelled (recorded duration or zero)")
    if len(groups) > 1:
        notes.append("collectives of different process groups that overlap in time are each timed alone on the fabric "
                     "(no contention between them)")
    colls = tuple(CollRow(g, c, v[0], b, v[1], v[2], v[3], v[4], v[5]) for (g, c, b), v in sorted(calls.items()))
    return Replay(tuple(sorted(events, key=lambda e: (e.rank, e.start, e.node))), _summaries(events, len(trace)),
                  colls, tuple(notes))


def _p2p(streams, ready, run, timer) -> bool:
    """Start every send whose peer's matching receive is also ready (and vice versa)."""
    progressed = False
    for rank, per in enumerate(streams):
        for stream in [s for s in per if s.startswith("p2p:")]:
            mine = ready(rank, stream)
            if mine is None or mine[0].kind != "send":
                continue
            node, t0 = mine
            peer = node.peer
            theirs = ready(peer, stream) if 0 <= peer < len(streams) and stream in streams[peer] else None
            if theirs is None or theirs[0].kind != "recv" or theirs[0].peer != rank:
                continue
            other, t1 = theirs
            if (other.nbytes, other.tag) != (node.nbytes, node.tag):
                raise FabricsimError(f"rank {rank} sends {node.nbytes} B (tag {node.tag}, node {node.id}) to rank {peer}, "
                                     f"whose next receive from it is {other.nbytes} B (tag {other.tag}, node {other.id})")
            t, algo, proto, ch, _ = timer.call("sendrecv", node.nbytes, tuple(sorted((rank, peer))))
            start = max(t0, t1)
            extra = dict(collective="sendrecv", nbytes=node.nbytes, algo=algo, proto=proto, channels=ch)
            run(rank, node, stream, start, start + t, **extra)
            run(peer, other, stream, start, start + t, **extra)
            progressed = True
    return progressed


def _stuck(streams, head) -> str:
    for rank, per in enumerate(streams):
        for stream, queue in per.items():
            i = head[rank][stream]
            if i < len(queue):
                n = queue[i]
                what = f"{n.collective} on group {n.group or 'world'}" if n.kind == "coll" else \
                    f"{n.kind} with rank {n.peer}" if n.kind in ("send", "recv") else n.kind
                return (f"no node can start: rank {rank} waits at node {n.id} '{n.name}' ({what}); a dependency cycle, "
                        "or a collective / send / receive some rank's trace does not match")
    return "no node can start"


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _length(intervals) -> float:
    return sum(e - s for s, e in intervals)


def _minus(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Length of the union `a` not covered by the union `b`."""
    covered, j = 0.0, 0
    for s, e in a:
        while j < len(b) and b[j][1] <= s:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            covered += min(e, b[k][1]) - max(s, b[k][0])
            k += 1
    return _length(a) - covered


def _summaries(events: list[Event], n: int) -> tuple[RankSummary, ...]:
    by_rank: dict[int, list[Event]] = {r: [] for r in range(n)}
    for e in events:
        by_rank[e.rank].append(e)
    out = []
    for r in range(n):
        mine = by_rank[r]
        comp = _union([(e.start, e.end) for e in mine if e.kind == "comp"])
        comm = _union([(e.start, e.end) for e in mine if e.kind in _COMM])
        out.append(RankSummary(r, _length(comp), _length(comm), _minus(comm, comp), max((e.end for e in mine),
                                                                                        default=0.0)))
    return tuple(out)
