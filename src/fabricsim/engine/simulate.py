"""Time a collective schedule on a fabric, alone or with other jobs, at flow level or analytically.

Model (both levels share it; they differ only in how a set of flows drains):
- every step's transfers become flows on their routed paths (`flows.step_flows`); identical steps
  (a ring's 2(n-1) steps) are one traffic pattern, timed once;
- a pattern's bandwidth time t is how long its flows take to drain: flow level = max-min fair sharing
  of each link's capacity x efficiency, re-solved whenever a flow finishes (`maxmin.drain`);
  analytical = max over links of wire bytes / effective capacity (and over flows of bytes / rate cap);
- NCCL pipelines each channel's data in slices (protocols.slice_bytes), so the schedule runs as a
  pipeline of P slices: time = latency + sum_k t_k / P + (1 - 1/P) * B, where B is the drain time of
  all steps' traffic together (the steady state in which every step works on a different slice).
  For a ring every step loads the same links, B = sum_k t_k, giving nsteps x latency + bytes / bandwidth;
  for a chain or tree, B is one link's share, not the store-and-forward sum;
- latency = NCCL base latency + per-step software latency of the step's hop class (tuning.cc hwLat)
  + wire/switch latency of the paths. A ring's chunks rotate through every position, so its per-step
  latency is the mean over the step's hops; other schedules wait for their slowest hop, and a pipelined
  step (tree, chain) only for the hops working in that repetition, so a tree pays each level's hop once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from fabricsim.engine.capacity import effective_capacity, link_efficiency, nccl_arch
from fabricsim.engine.flows import FlowSet, concat, empty_flows, p2p_flows, step_flows
from fabricsim.engine.maxmin import drain
from fabricsim.engine.protocols import ProtocolModel, protocol_model
from fabricsim.engine.result import BUSBW_FACTOR, Bottleneck, Result, Timeline
from fabricsim.errors import FabricsimError
from fabricsim.schedules.model import Schedule, StepTraffic, rotate_ranks
from fabricsim.schedules import traffic as schedule_traffic
from fabricsim.topology.model import DeviceKind, Topology

LEVELS = ("flow", "analytical")
FLOW_TIMELINE_LIMIT = 20_000  # flows (repetitions expanded) listed individually in the timeline
MAX_BOTTLENECKS = 8  # tied bottleneck links listed by name (all are counted)


@dataclass(frozen=True)
class Job:
    """One collective in a concurrent simulation."""

    schedule: Schedule
    nbytes: int
    ranks: Sequence[int] | np.ndarray | None = None
    elem_size: int = 4
    protocol: str = "simple"
    channels: int | None = None
    net_peer_bw: float | None = None  # bytes/s cap per point-to-point transfer across the network (see time_traffic)


@dataclass(frozen=True, eq=False)
class _Plan:
    """A job's traffic turned into flows: distinct patterns, their order and repeats, latencies."""

    collective: str
    algorithm: str
    nranks: int
    nbytes: int
    protocol: str
    patterns: list[FlowSet]
    order: np.ndarray  # pattern of each schedule step
    repeats: np.ndarray  # repetitions of each schedule step
    step_latency: np.ndarray  # s per repetition of each schedule step (mean over its repetitions)
    once_latency: float  # s, once per collective
    union: FlowSet  # every step's flows together, bytes x repetitions
    slices: int
    algbw_cap: float  # bytes/s: NCCL's per-channel caps (tuning.cc) on this call's algorithm bandwidth; inf if none
    scale: float = 1.0  # rotated schedules: the whole schedule's traffic / the sampled rotations' traffic
    weight: np.ndarray | None = None  # rotated schedules: each link's share of its class's traffic (_link_weights)


def _check_ranks(topo: Topology, nranks: int, ranks) -> np.ndarray:
    if nranks > topo.n_gpus:
        raise FabricsimError(f"the schedule has {nranks} ranks but topology '{topo.name}' has {topo.n_gpus} GPUs: "
                             "use fewer ranks or a larger cluster")
    if ranks is None:
        return np.arange(nranks, dtype=np.int32)
    arr = np.asarray(ranks)
    if arr.ndim != 1 or arr.shape[0] != nranks or not np.issubdtype(arr.dtype, np.integer):
        raise FabricsimError(f"ranks must list {nranks} integer GPU ranks, one per schedule rank: got {arr.shape[0] if arr.ndim == 1 else arr.shape}")
    if arr.min() < 0 or arr.max() >= topo.n_gpus:
        raise FabricsimError(f"ranks must be GPU ranks 0..{topo.n_gpus - 1} of topology '{topo.name}': got {int(arr.min())}..{int(arr.max())}")
    if np.unique(arr).shape[0] != nranks:
        raise FabricsimError("ranks lists a GPU twice: give each schedule rank its own GPU")
    return arr.astype(np.int32)


def _check_nbytes(nbytes) -> int:
    if not isinstance(nbytes, (int, np.integer, float)) or nbytes < 0 or nbytes != int(nbytes):
        raise FabricsimError(f"invalid size {nbytes!r}: give a whole, non-negative number of bytes")
    return int(nbytes)


def _adaptive(topo: Topology, adaptive: bool | None) -> bool:
    """Whether flows spread over every equal-cost path: as asked, else the cluster's routing ('adaptive' / 'ecmp')."""
    return topo.features.get("routing") == "adaptive" if adaptive is None else bool(adaptive)


def _background(topo: Topology, background, model: ProtocolModel, adaptive: bool = False) -> FlowSet:
    """Persistent flows between GPU ranks (src, dst) that never finish: competing traffic on the fabric."""
    if background is None:
        return empty_flows()
    src, dst = (np.asarray(a, dtype=np.int64) for a in background)
    if src.shape != dst.shape or (src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= topo.n_gpus)):
        raise FabricsimError(f"background must be (src, dst) arrays of equal length with GPU ranks 0..{topo.n_gpus - 1}")
    neutral = replace(model, wire_efficiency=1.0, busbw_cap_per_channel=math.inf, net_peer_bw=math.inf)
    return p2p_flows(topo, src.astype(np.int32), dst.astype(np.int32), np.ones(src.shape[0]), neutral, 1, None, adaptive)


def _plan(topo: Topology, steps: Sequence[StepTraffic], *, collective: str, algorithm: str, nranks: int, nbytes: int,
          gpu_ranks: np.ndarray, protocol: str, channels: int, connections: int, pxn, adaptive: bool,
          net_peer_bw: float | None = None, copies: int = 1, rotations: int = 1) -> tuple[_Plan, ProtocolModel]:
    if copies < 1 or nranks % copies:
        raise FabricsimError(f"copies={copies} must divide the {nranks} ranks into equal groups")
    if rotations < 1 or nranks % rotations or (rotations > 1 and copies > 1):
        raise FabricsimError(f"rotations={rotations} must divide the {nranks} ranks of one collective (no copies)")
    scale = 1.0
    if rotations > 1:
        _check_rotation_placement(topo, gpu_ranks, rotations)
        steps, scale = _sample_rotations(steps, nranks, rotations)
    nranks //= copies  # the collective's own rank count; the copies run side by side
    n_nodes = int(np.unique(topo.gpu_domain[gpu_ranks[:nranks]]).shape[0])
    model = protocol_model(algorithm, protocol, nccl_arch(topo, gpu_ranks), n_nodes, channels, collective, nranks)
    if net_peer_bw is not None:
        if not net_peer_bw > 0:
            raise FabricsimError(f"net_peer_bw={net_peer_bw!r} must be a positive bandwidth in bytes/s (or None: no cap)")
        model = replace(model, net_peer_bw=float(net_peer_bw))
    index: dict[bytes, int] = {}
    patterns: list[FlowSet] = []
    order, repeats = [], []
    for st in steps:
        key = _pattern_key(st)
        if key not in index:
            index[key] = len(patterns)
            patterns.append(step_flows(topo, st, gpu_ranks, model, connections, pxn, adaptive))
        order.append(index[key])
        repeats.append(int(st.repeat))
    order_a, rep_a = np.array(order, dtype=np.int64), np.array(repeats, dtype=np.int64)
    total = np.bincount(order_a, weights=rep_a, minlength=len(patterns))
    hw, step_hw = np.array(model.hop_latency), model.step_hop_latency
    lat = np.zeros(len(patterns))
    classes: set[int] = set()
    for i, fs in enumerate(patterns):
        if fs.n_flows == 0:
            continue
        per_flow = fs.latency + step_hw[fs.hop]
        lat[i] = float(np.average(per_flow, weights=fs.payload * fs.mult)) if algorithm == "ring" else float(per_flow.max())
        classes.update(np.unique(fs.hop).tolist())
    step_lat = lat[order_a]
    if algorithm != "ring":  # a pipeline's repetition waits only for the transfers working in it
        for j, st in enumerate(steps):
            windowed = _windowed_latency(topo, st, gpu_ranks, model, connections, pxn, adaptive)
            if windowed is not None:
                step_lat[j] = windowed / st.repeat
    once = model.base_latency + float(sum(hw[c] for c in classes if not model.per_step_latency[c]))
    union = concat([fs.scaled(float(total[i])) for i, fs in enumerate(patterns)])
    biggest = max((_channel_bytes(fs, channels) for fs in patterns if fs.n_flows), default=0.0)
    slices = max(1, math.ceil(biggest / model.slice_bytes))
    algbw_cap = model.busbw_cap_per_channel * channels * model.bus_to_alg
    plan = _Plan(collective, algorithm, nranks, nbytes, protocol, patterns, order_a, rep_a, step_lat, once, union, slices,
                 algbw_cap, scale, _link_weights(topo, gpu_ranks) if rotations > 1 else None)
    return plan, model


ROTATION_SAMPLE_TRANSFERS = 1 << 18  # transfers of a rotated schedule routed explicitly; the rest follow by symmetry


def _sample_rotations(steps: Sequence[StepTraffic], nranks: int, rotations: int) -> tuple[list[StepTraffic], float]:
    """Evenly spaced rotations of a rotated schedule's first-rotation traffic, as many as fit in
    ROTATION_SAMPLE_TRANSFERS, and the factor from their traffic to the whole schedule's."""
    if any(st.innet or st.active is not None or st.repeat != 1 for st in steps):
        raise FabricsimError("a rotated schedule's steps must run once, point to point only")
    per_rotation = max(sum(int(st.src.shape[0]) for st in steps), 1)
    k = max(1, min(rotations, ROTATION_SAMPLE_TRANSFERS // per_rotation))
    picked = np.unique(np.arange(k, dtype=np.int64) * rotations // k)
    shift = picked * (nranks // rotations)
    sampled = [StepTraffic(rotate_ranks(st.src, nranks, shift), rotate_ranks(st.dst, nranks, shift),
                           np.tile(np.asarray(st.nbytes, dtype=np.float64), picked.size)) for st in steps]
    return sampled, rotations / picked.size


def _check_rotation_placement(topo: Topology, gpu_ranks: np.ndarray, rotations: int) -> None:
    """A rotated schedule is timed by symmetry, which holds when its rotations are whole NVLink domains holding
    their ranks at the same positions: rank r + k * width sits where rank r does, one domain further."""
    width = gpu_ranks.shape[0] // rotations
    domain = topo.gpu_domain[gpu_ranks].reshape(rotations, width)
    local = topo.dev_local[topo.gpu_device[gpu_ranks]].reshape(rotations, width)
    if not ((domain == domain[:, :1]).all() and np.unique(domain[:, 0]).shape[0] == rotations
            and (local == local[:1]).all()):
        raise FabricsimError(f"an all-to-all over {gpu_ranks.shape[0]} ranks is timed node by node, by symmetry: give it "
                             f"whole NVLink domains of {width} GPUs, each in the same order (e.g. ranks 0..n-1)")


def _link_class(topo: Topology) -> np.ndarray:
    """Each link's symmetry class: links joining the same kinds of device at the same fabric tiers with the same
    technology (a leaf's uplink, ...), and, for a device inside a host or NVLink domain, at the same position in it
    (GPU 3's NVLink port, PCIe switch 0's uplink to CPU 0, the rail-2 NIC's cable): what is the same in every node.
    Kept in the topology's derived store."""
    return topo.derive(("link_class",), lambda: _classify_links(topo))


def _classify_links(topo: Topology) -> np.ndarray:
    kind, level = topo.dev_kind.astype(np.int64), topo.dev_level.astype(np.int64)
    local = np.where(kind == DeviceKind.FABRIC_SWITCH, -1, topo.dev_local.astype(np.int64)) + 1
    s, d = topo.link_src, topo.link_dst

    def side(x: np.ndarray) -> np.ndarray:
        return (kind[x] * 16 + level[x]) * (1 << 21) + local[x]

    key = np.stack([side(s), side(d), topo.link_tech.astype(np.int64)], axis=1)
    return np.unique(key, axis=0, return_inverse=True)[1].ravel()


def _link_weights(topo: Topology, gpu_ranks: np.ndarray) -> np.ndarray:
    """How much of a symmetric traffic pattern each link carries relative to the others of its class (0: none).

    Links inside the collective's hosts and NVLink domains weigh their capacity. A fabric link weighs the
    sources whose traffic crosses it when every switch spreads its up traffic over its uplinks by capacity
    (adaptive routing): a NIC counts the ranks using it, a switch the weights of the uplinks reaching it, and
    a link between tiers that of its lower end x its share of that end's uplinks. So a leaf with half its
    ports filled loads its uplinks half as much as a full one; the traffic down mirrors the traffic up."""
    nodes, domains = np.unique(topo.gpu_node[gpu_ranks]), np.unique(topo.gpu_domain[gpu_ranks])
    host = topo.dev_node >= 0
    inside = (host & np.isin(topo.dev_node, nodes)) | (~host & (topo.dev_domain >= 0) & np.isin(topo.dev_domain, domains))
    src, dst, cap = topo.link_src, topo.link_dst, topo.link_capacity
    tier = np.where(topo.dev_kind == DeviceKind.FABRIC_SWITCH, topo.dev_level.astype(np.int64), 0)
    up = tier[dst] > tier[src]
    upcap = np.bincount(src[up], weights=cap[up], minlength=topo.n_devices)
    sources = np.zeros(topo.n_devices)
    if topo.gpu_nic is not None:
        nic = topo.gpu_nic[gpu_ranks]
        np.add.at(sources, nic[nic >= 0], 1.0)
    weight = np.where(inside[src] & inside[dst] & (tier[src] == 0) & (tier[dst] == 0), cap, 0.0)
    share = np.zeros(topo.n_links)
    for level in np.unique(tier[tier > 0]).tolist():
        into = up & (tier[dst] == level)
        share[into] = sources[src[into]] * cap[into] / np.maximum(upcap[src[into]], 1e-300)
        sources += np.bincount(dst[into], weights=share[into], minlength=topo.n_devices)
    down = (tier[src] > tier[dst]) & (tier[src] > 0)
    share[down] = share[np.flatnonzero(down) ^ 1]  # links come in opposite pairs (topology.model)
    return np.where(share > 0, share, weight)


def _spread(topo: Topology, plan: _Plan, per_link: np.ndarray) -> np.ndarray:
    """A rotated schedule's per-link quantity (bytes, flows) of its sampled rotations, summed per symmetry class,
    scaled to the whole schedule and shared among the class's links by their weights (`_link_weights`)."""
    cls = _link_class(topo)
    ncls = int(cls.max(initial=-1)) + 1
    total = plan.scale * np.bincount(cls, weights=per_link, minlength=ncls)
    wsum = np.bincount(cls, weights=plan.weight, minlength=ncls)
    return np.divide(total, wsum, out=np.zeros(ncls), where=wsum > 0)[cls] * plan.weight


def _mean_field(topo: Topology, plan: _Plan, fs: FlowSet) -> tuple[np.ndarray, np.ndarray]:
    """(capacity each link offers the sampled flows, wire bytes on every link) for a rotated schedule: a sampled
    flow sees each of its links drain in the time that link's share of its class's traffic takes."""
    cap = effective_capacity(topo)
    b = fs.link_bytes(topo.n_links)
    load = _spread(topo, plan, b)
    offered = np.where(b > 0, b / np.maximum(load / cap, 1e-300), cap)
    return offered, load


def _link_flows(topo: Topology, plan: _Plan, fs: FlowSet) -> np.ndarray:
    """Flows crossing each link; for a rotated schedule, its class's flows spread by the links' weights."""
    flows = fs.link_flows(topo.n_links)
    return flows if plan.weight is None else _spread(topo, plan, flows)


WINDOW_LATENCY_LIMIT = 1 << 22  # (distinct windows x repetitions) evaluated; beyond, every repetition waits for the slowest hop


def _windowed_latency(topo: Topology, st: StepTraffic, gpu_ranks: np.ndarray, model: ProtocolModel, conns: int,
                      pxn, adaptive: bool) -> float | None:
    """Latency summed over a pipelined step's repetitions, each waiting for the slowest transfer or
    in-network operation that moves bytes in it (a tree's levels: NVLink hops, then the network hop,
    ...), as NCCL's tree latency counts each level's hop once. None when the step has no windows."""
    if st.active is None or st.repeat <= 1:
        return None
    first, last = (np.asarray(a, dtype=np.int64) for a in st.active)
    n_items = st.src.shape[0] + len(st.innet)
    live = first <= last
    if first.shape != (n_items,) or last.shape != (n_items,) or (live & ((first < 0) | (last >= st.repeat))).any():
        raise FabricsimError(f"StepTraffic.active must give (first, last) repetitions in 0..{st.repeat - 1} for each of the "
                             f"{n_items} transfers and in-network operations (first > last: never active)")
    key = first * (st.repeat + 1) + last
    groups = np.unique(key[live])
    if groups.size * st.repeat > WINDOW_LATENCY_LIMIT:
        return None
    m, step_hw = st.src.shape[0], model.step_hop_latency
    g_lat = np.zeros(groups.size)
    for g, k in enumerate(groups.tolist()):
        sel = live & (key == k)
        sub = StepTraffic(st.src[sel[:m]], st.dst[sel[:m]], np.asarray(st.nbytes)[sel[:m]],
                          innet=tuple(o for o, s in zip(st.innet, sel[m:]) if s))
        fs = step_flows(topo, sub, gpu_ranks, model, conns, pxn, adaptive)
        if fs.n_flows:
            g_lat[g] = float((fs.latency + step_hw[fs.hop]).max())
    g_first, g_last = groups // (st.repeat + 1), groups % (st.repeat + 1)
    k = np.arange(st.repeat)
    cover = (g_first[:, None] <= k) & (k <= g_last[:, None])
    return float(np.where(cover, g_lat[:, None], 0.0).max(axis=0, initial=0.0).sum())


def _channel_bytes(fs: FlowSet, channels: int) -> float:
    """Bytes one channel of the busiest rank moves in this step: what NCCL cuts into pipeline slices. Each
    channel handles 1/channels of every rank's data (an NVLS head's share of all chunks included), so the
    slices a step is pipelined over follow the rank's whole send, not one flow's share of it."""
    sent = fs.src >= 0
    if not sent.any():  # only switch-sourced flows: every receiver gets its payload
        return float(fs.payload.max())
    return float(np.bincount(fs.src[sent], weights=(fs.payload * fs.mult)[sent]).max()) / max(channels, 1)


def _pattern_key(st: StepTraffic) -> bytes:
    """Identity of a step's traffic: same transfers and in-network ops give the same flows."""
    parts = [np.asarray(st.src, np.int64).tobytes(), np.asarray(st.dst, np.int64).tobytes(),
             np.asarray(st.nbytes, np.float64).tobytes()]
    if st.innet:
        kinds, inputs, outputs, nb = zip(*st.innet)
        parts += ["/".join(kinds).encode(),
                  np.array([len(a) for a in inputs] + [len(a) for a in outputs], dtype=np.int64).tobytes(),
                  np.concatenate([np.asarray(a, np.int64) for a in inputs + outputs]).tobytes(),
                  np.asarray(nb, np.float64).tobytes()]
    return b"|".join(parts)


def _finish_times(topo: Topology, sets: list[FlowSet], level: str, bg: FlowSet,
                  capacity: np.ndarray | None = None) -> list[np.ndarray]:
    """Finish time of every flow of every set when all sets run at once (with background traffic);
    `capacity`: what each link offers them instead of its effective capacity (a rotated schedule's)."""
    cap = effective_capacity(topo) if capacity is None else capacity
    allf = concat(sets + [bg])
    n = allf.n_flows - bg.n_flows
    if n == 0:
        return [np.zeros(0) for _ in sets]
    if level == "flow":
        persistent = np.arange(allf.n_flows) >= n
        finish = drain(allf.edge_flow, allf.edge_link, allf.nbytes, cap, allf.mult, allf.rate_cap, persistent,
                       allf.edge_share)[:n]
    else:
        jobs = concat(sets)
        share = cap.copy()
        if bg.n_flows:
            m, k = jobs.link_flows(topo.n_links), bg.link_flows(topo.n_links)
            share = np.where(m > 0, cap * m / np.maximum(m + k, 1e-300), cap)
        link_time = jobs.link_bytes(topo.n_links) / share
        finish = np.zeros(n)
        np.maximum.at(finish, jobs.edge_flow, link_time[jobs.edge_link])
        finish = np.maximum(finish, jobs.nbytes / jobs.rate_cap)
    bounds = np.cumsum([0] + [s.n_flows for s in sets])
    return [finish[bounds[i]:bounds[i + 1]] for i in range(len(sets))]


def _drain(topo: Topology, plan: _Plan, fs: FlowSet, level: str, bg: FlowSet) -> np.ndarray:
    """Finish times of one of the plan's flow sets draining alone (with background traffic)."""
    capacity = _mean_field(topo, plan, fs)[0] if plan.weight is not None else None
    return _finish_times(topo, [fs], level, bg, capacity)[0]


def _pattern_times(topo: Topology, plan: _Plan, level: str, bg: FlowSet) -> tuple[list[np.ndarray], np.ndarray]:
    finishes = [_drain(topo, plan, fs, level, bg) for fs in plan.patterns]
    return finishes, np.array([f.max(initial=0.0) for f in finishes])


def _result(topo: Topology, plan: _Plan, level: str, finishes: list[np.ndarray], t: np.ndarray, steady: float,
            slowdown: float) -> Result:
    """Assemble times, bandwidths, link loads, bottlenecks and the timeline."""
    p = plan.slices
    t_sum = float(np.sum(t[plan.order] * plan.repeats))
    bandwidth_time = max(slowdown * (t_sum / p + (1 - 1 / p) * steady), plan.nbytes / plan.algbw_cap)
    latency_time = plan.once_latency + float(np.sum(plan.step_latency * plan.repeats))
    time = latency_time + bandwidth_time
    link_bytes = plan.union.link_bytes(topo.n_links) if plan.weight is None else _mean_field(topo, plan, plan.union)[1]
    link_util = link_bytes / (topo.link_capacity * time) if time > 0 else np.zeros(topo.n_links)
    size = plan.nbytes
    algbw = size / time if time > 0 else 0.0
    busbw = algbw * BUSBW_FACTOR[plan.collective](plan.nranks) if plan.collective in BUSBW_FACTOR else algbw
    bottlenecks, count = _bottlenecks(topo, plan, link_bytes, link_util)
    return Result(
        collective=plan.collective, algorithm=plan.algorithm, protocol=plan.protocol, nranks=plan.nranks, nbytes=size,
        level=level, time=time, latency_time=latency_time, bandwidth_time=bandwidth_time, algbw=algbw, busbw=busbw,
        bound="latency-bound" if latency_time >= bandwidth_time else "bandwidth-bound",
        bottlenecks=bottlenecks, bottleneck_count=count, link_bytes=link_bytes, link_util=link_util,
        timeline=_timeline(plan, finishes, t, t_sum, steady, slowdown), slices=p, slowdown=slowdown, topo=topo,
    )


def _bottlenecks(topo: Topology, plan: _Plan, link_bytes: np.ndarray, link_util: np.ndarray) -> tuple[tuple[Bottleneck, ...], int]:
    """Links with the longest busy time (wire bytes / effective capacity), ties included."""
    busy = link_bytes / effective_capacity(topo)
    top = float(busy.max(initial=0.0))
    if top <= 0:
        return (), 0
    tied = np.flatnonzero(busy >= top * (1 - 1e-6))
    shown = tied[:MAX_BOTTLENECKS]
    sharing = np.zeros(shown.shape[0])
    for fs in plan.patterns:
        sharing = np.maximum(sharing, _link_flows(topo, plan, fs)[shown])
    eff = link_efficiency(topo)
    cap = effective_capacity(topo)
    return tuple(
        Bottleneck(link=int(lk), name=topo.link_name(int(lk)), tech=topo.techs[int(topo.link_tech[lk])],
                   capacity=float(topo.link_capacity[lk]), efficiency=float(eff[lk]), effective_capacity=float(cap[lk]),
                   flows=int(round(sharing[i])), busy_time=float(busy[lk]), utilisation=float(link_util[lk]))
        for i, lk in enumerate(shown)
    ), int(tied.shape[0])


def _timeline(plan: _Plan, finishes: list[np.ndarray], t: np.ndarray, t_sum: float, steady: float,
              slowdown: float) -> Timeline:
    """Expanded steps, each given its share of the pipelined time, and (small cases) flows within them."""
    p = plan.slices
    pat = np.repeat(plan.order, plan.repeats)
    step_lat = np.repeat(plan.step_latency, plan.repeats)
    share = t[pat] / t_sum if t_sum > 0 else np.zeros(pat.shape[0])
    bw = slowdown * (t[pat] / p + (1 - 1 / p) * steady * share)
    dur = step_lat + bw
    end = plan.once_latency + np.cumsum(dur)
    start = end - dur
    n_flows = int(sum(plan.patterns[k].n_flows for k in pat.tolist())) if pat.shape[0] <= FLOW_TIMELINE_LIMIT else FLOW_TIMELINE_LIMIT + 1
    if n_flows > FLOW_TIMELINE_LIMIT:
        return Timeline(start, end, pat)
    steps, src, dst, links, f_start, f_end = [], [], [], [], [], []
    for i, k in enumerate(pat.tolist()):
        fs = plan.patterns[k]
        if fs.n_flows == 0:
            continue
        frac = finishes[k] / t[k] if t[k] > 0 else np.ones(fs.n_flows)
        steps.append(np.full(fs.n_flows, i))
        src.append(fs.src)
        dst.append(fs.dst)
        order = np.argsort(fs.edge_flow, kind="stable")
        links.extend(np.split(fs.edge_link[order], np.cumsum(np.bincount(fs.edge_flow, minlength=fs.n_flows))[:-1]))
        f_start.append(np.full(fs.n_flows, start[i]))
        f_end.append(start[i] + step_lat[i] + bw[i] * frac)
    cat = (lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dt))
    return Timeline(start, end, pat, cat(steps, np.int64), cat(src, np.int32), cat(dst, np.int32), tuple(links),
                    cat(f_start, np.float64), cat(f_end, np.float64))


def _check_level(level: str) -> None:
    if level not in LEVELS:
        raise FabricsimError(f"unknown level '{level}': use 'flow' or 'analytical'")


def time_traffic(topo: Topology, steps: Sequence[StepTraffic], *, collective: str, algorithm: str, nranks: int,
                 nbytes: int, copies: int = 1, ranks=None, protocol: str = "simple", channels: int = 1, connections: int = 1,
                 level: str = "flow", pxn: bool | None = None, adaptive: bool | None = None, background=None,
                 net_peer_bw: float | None = None, rotations: int = 1) -> Result:
    """Time explicit step traffic (what `schedules.traffic` returns) on `topo`.

    `channels`: NCCL channels the collective uses (per-channel bandwidth caps); `connections`: parallel
    connections carrying each transfer; `copies`: the traffic is that many disjoint copies of an
    (nranks / copies)-rank collective running at once (one per group; see schedules.replicate), timed together
    and reported per copy; `background`: (src, dst) GPU ranks of never-ending competing flows;
    `net_peer_bw`: bytes/s cap on each point-to-point transfer across the network (NCCL's p2p channels per
    network peer x their rate, which the tuner derives); None: no cap. `adaptive`: spread every flow over all
    equal-cost fabric paths (True) or one hashed path each (False); None: the cluster's `routing`.
    `rotations` > 1: `steps` are one rotation of a rank-symmetric schedule (Schedule.rotations); evenly spaced
    rotations are routed (ROTATION_SAMPLE_TRANSFERS) and each symmetry class's traffic, scaled to the whole
    schedule, is shared among its links by weight (`_link_weights`, as adaptive routing spreads it): hashed ECMP
    collisions between flows are not counted.
    """
    _check_level(level)
    if collective not in BUSBW_FACTOR:
        raise FabricsimError(f"unknown collective '{collective}': use one of {', '.join(BUSBW_FACTOR)}")
    nbytes = _check_nbytes(nbytes)
    gpu_ranks = _check_ranks(topo, nranks, ranks)
    adaptive = _adaptive(topo, adaptive)
    plan, model = _plan(topo, steps, collective=collective, algorithm=algorithm, nranks=nranks, nbytes=nbytes,
                        gpu_ranks=gpu_ranks, protocol=protocol, channels=channels, connections=connections,
                        pxn=pxn, adaptive=adaptive, net_peer_bw=net_peer_bw, copies=copies, rotations=rotations)
    bg = _background(topo, background, model, adaptive)
    finishes, t = _pattern_times(topo, plan, level, bg)
    t_sum = float(np.sum(t[plan.order] * plan.repeats))
    steady = float(_drain(topo, plan, plan.union, level, bg).max(initial=0.0)) if plan.slices > 1 else t_sum
    return _result(topo, plan, level, finishes, t, steady, 1.0)


def _job_checks(topo: Topology, job: Job) -> tuple[int, int]:
    """(channels, nbytes) of a job, after checking what it asks for."""
    sched = job.schedule
    channels = sched.channels if job.channels is None else int(job.channels)
    if channels < 1 or channels % max(sched.channels, 1):
        raise FabricsimError(f"channels={job.channels} must be a positive multiple of the schedule's {sched.channels} channels")
    if not isinstance(job.elem_size, (int, np.integer)) or job.elem_size <= 0:
        raise FabricsimError(f"elem_size={job.elem_size!r} must be a positive number of bytes per element")
    nbytes = _check_nbytes(job.nbytes)
    _check_ranks(topo, sched.nranks, job.ranks)
    return channels, nbytes


def _job_args(topo: Topology, job: Job) -> dict:
    sched = job.schedule
    channels, nbytes = _job_checks(topo, job)
    steps = schedule_traffic(sched, nbytes, job.elem_size)
    return dict(steps=steps, collective=sched.collective, algorithm=sched.algorithm, nranks=sched.nranks,
                copies=sched.copies, rotations=sched.rotations, nbytes=nbytes,
                ranks=job.ranks, protocol=job.protocol, channels=channels, connections=channels // max(sched.channels, 1),
                net_peer_bw=job.net_peer_bw)


def _job_plan(topo: Topology, job: Job, pxn, adaptive: bool) -> tuple[_Plan, ProtocolModel]:
    """A job's traffic turned into a plan (flows, latencies, slices) on `topo`."""
    args = _job_args(topo, job)
    gpu_ranks = _check_ranks(topo, job.schedule.nranks, args.pop("ranks"))
    return _plan(topo, args.pop("steps"), **args, gpu_ranks=gpu_ranks, pxn=pxn, adaptive=adaptive)


def simulate(topo: Topology, schedule: Schedule, nbytes: int, *, elem_size: int = 4, protocol: str = "simple",
             channels: int | None = None, level: str = "flow", ranks=None, pxn: bool | None = None,
             adaptive: bool | None = None, background=None, net_peer_bw: float | None = None) -> Result:
    """Time `schedule` moving `nbytes` (nccl-tests' size) on `topo`; schedule rank i runs on GPU `ranks[i]`.
    `net_peer_bw`: see `time_traffic`."""
    _check_level(level)
    job = Job(schedule, nbytes, ranks, elem_size, protocol, channels, net_peer_bw)
    if background is None:
        scaled = _from_unit(topo, job, level, pxn, _adaptive(topo, adaptive))
        if scaled is not None:
            return scaled
    args = _job_args(topo, job)
    return time_traffic(topo, args.pop("steps"), **args, level=level, pxn=pxn, adaptive=adaptive, background=background)


@dataclass(eq=False)
class _Unit:
    """A call timed at its unit message (one element per schedule piece), which every message whose pieces
    are all equal scales: bytes, link loads and max-min drain times are linear in the message, latencies fixed."""

    plan: _Plan
    finishes: list[np.ndarray]
    t: np.ndarray
    steady: float | None  # drain time of all steps together, computed when a size first needs it (slices > 1)
    biggest: float  # payload bytes one channel of the busiest rank moves in one step (what is cut into slices)
    slice_bytes: float


def _from_unit(topo: Topology, job: Job, level: str, pxn, adaptive: bool) -> Result | None:
    """The result of `job`, scaled from its cached unit timing, when the message splits into equal pieces."""
    sched = job.schedule
    channels, nbytes = _job_checks(topo, job)
    cm = sched.chunkmap
    pieces = math.prod(cm.split) if cm is not None else sched.nchunks
    count = nbytes // job.elem_size
    if nbytes % job.elem_size or count == 0 or count % pieces or sched.copies > 1:
        return None  # replicated schedules are made afresh per call (training): nothing to reuse
    ranks = np.arange(sched.nranks) if job.ranks is None else np.asarray(job.ranks)
    key = ("unit", sched, int(job.elem_size), job.protocol, channels, level, ranks.astype(np.int64).tobytes(), pxn,
           adaptive, job.net_peer_bw)

    def timed_unit() -> _Unit:
        plan, model = _job_plan(topo, replace(job, nbytes=pieces * job.elem_size), pxn, adaptive)
        finishes, t = _pattern_times(topo, plan, level, empty_flows())
        biggest = max((_channel_bytes(fs, channels) for fs in plan.patterns if fs.n_flows), default=0.0)
        return _Unit(plan, finishes, t, None, biggest, model.slice_bytes)

    unit = topo.derive(key, timed_unit)
    k = count // pieces
    plan = replace(unit.plan, nbytes=nbytes, patterns=[fs.scaled(k) for fs in unit.plan.patterns],
                   union=unit.plan.union.scaled(k), slices=max(1, math.ceil(k * unit.biggest / unit.slice_bytes)))
    t = unit.t * k
    if plan.slices > 1 and unit.steady is None:
        unit.steady = float(_drain(topo, unit.plan, unit.plan.union, level, empty_flows()).max(initial=0.0))
    steady = unit.steady * k if plan.slices > 1 else float(np.sum(t[plan.order] * plan.repeats))
    return _result(topo, plan, level, [f * k for f in unit.finishes], t, steady, 1.0)


def simulate_concurrent(topo: Topology, jobs: Sequence[Job | tuple], *, level: str = "flow", pxn: bool | None = None,
                        adaptive: bool | None = None, background=None) -> list[Result]:
    """Time several collectives running at once on one fabric; they contend on shared links.

    Each job's pipelined bandwidth phase is drained together with every other job's (flows re-share links as
    jobs finish); its bandwidth time is its solo time scaled by (drain time together / drain time alone).
    Jobs are `Job`s or tuples (schedule, nbytes, ranks, ...) in `Job`'s field order.
    """
    _check_level(level)
    adaptive = _adaptive(topo, adaptive)
    jobs = [j if isinstance(j, Job) else Job(*j) for j in jobs]
    if len(jobs) > 1 and any(j.schedule.rotations > 1 for j in jobs):
        raise FabricsimError("a rotated all-to-all (more than 1,024 ranks) is timed alone, by symmetry: "
                             "simulate it on its own, or run the concurrent jobs on fewer ranks")
    plans = []
    bg = empty_flows()
    for i, job in enumerate(jobs):
        plan, model = _job_plan(topo, job, pxn, adaptive)
        if i == 0:
            bg = _background(topo, background, model, adaptive)
        plans.append(plan)
    solo = plans[0].weight is not None  # a rotated schedule, alone (checked above)
    together = _finish_times(topo, [p.union for p in plans], level, bg,
                             _mean_field(topo, plans[0], plans[0].union)[0] if solo else None)
    results = []
    for plan, fin in zip(plans, together):
        finishes, t = _pattern_times(topo, plan, level, bg)
        alone = float(_drain(topo, plan, plan.union, level, bg).max(initial=0.0))
        shared = float(fin.max(initial=0.0))
        t_sum = float(np.sum(t[plan.order] * plan.repeats))
        steady = alone if plan.slices > 1 else t_sum
        results.append(_result(topo, plan, level, finishes, t, steady, shared / alone if alone > 0 else 1.0))
    return results
