"""Planning: one collective's step traffic turned into flows on routed paths, and priced for one protocol.

`plan_traffic` makes a `Plan`: the distinct traffic patterns among the steps (a ring's 2(n-1) steps are one),
their order and repeats, all steps' flows together (`union`, the pipeline's steady state), and what each
pattern's flows wait on the wire per NCCL hop class (`HopLatency`). A plan carries bytes as a protocol of wire
efficiency 1 would (`flows`), so every protocol of one algorithm shares it: `price` adds what the protocol
changes (wire efficiency, NCCL's per-step hop latencies, base latency, per-channel caps) and `call_chunks` what
the message size changes: the channels NCCL runs the call on and the chunks each pipelines (engine.chunking).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache

import numpy as np

from fabricsim.engine import chunking, symmetry
from fabricsim.engine.call import Call, Options
from fabricsim.engine.flows import N_HOPS, FlowRules, FlowSet, concat, item_latency, step_flows
from fabricsim.engine.protocols import HOP_NET, ProtocolModel, nccl_arch, net_step_latency, protocol_model
from fabricsim.errors import FabricsimError
from fabricsim.schedules.model import StepTraffic
from fabricsim.topology import calibrated
from fabricsim.topology.derived import memo
from fabricsim.topology.model import Topology
from fabricsim.vocab import P2P_COLLECTIVES

WINDOW_LATENCY_LIMIT = 1 << 22  # (distinct windows x repetitions) evaluated; beyond, every repetition waits for the slowest hop


@dataclass(frozen=True, eq=False)
class HopLatency:
    """Path latency of groups of flows (patterns, or a pipeline's windows) per NCCL hop class, so each
    protocol's per-step hop latency is added without routing again."""

    longest: np.ndarray  # (groups, 3) longest path latency among each group's flows of each hop class, -inf: none
    weighted: np.ndarray  # (groups,) sum over a group's flows of weight x path latency (weight: payload x copies)
    weight: np.ndarray  # (groups, 3) sum of the weights of each hop class's flows

    @staticmethod
    def of(sets: Sequence[FlowSet]) -> HopLatency:
        longest = np.full((len(sets), N_HOPS), -np.inf)
        weighted, weight = np.zeros(len(sets)), np.zeros((len(sets), N_HOPS))
        for i, fs in enumerate(sets):
            if fs.n_flows:
                w = fs.payload * fs.mult
                for hop in np.flatnonzero(np.bincount(fs.hop, minlength=N_HOPS)).tolist():
                    mine = fs.hop == hop
                    longest[i, hop] = fs.latency[mine].max()
                    weight[i, hop] = w[mine].sum()
                weighted[i] = float(np.dot(w, fs.latency))
        return HopLatency(longest, weighted, weight)

    def mean(self, step_hw: np.ndarray) -> np.ndarray:
        """Per group, the mean over its flows (by weight) of path latency + per-step hop latency; 0: no flows."""
        total = self.weight.sum(axis=1)
        return np.divide(self.weighted + self.weight @ step_hw, total, out=np.zeros(total.shape), where=total > 0)

    def slowest(self, step_hw: np.ndarray) -> np.ndarray:
        """Per group, its slowest flow's path latency + per-step hop latency; 0: no flows."""
        return np.maximum((self.longest + step_hw).max(axis=1, initial=-np.inf), 0.0)

    @property
    def hops(self) -> np.ndarray:
        """Hop classes any group's flows use."""
        return np.isfinite(self.longest).any(axis=0)


@dataclass(frozen=True, eq=False)
class Windows:
    """A pipelined step's transfers grouped by the repetitions they work in (a tree's levels), each group's path
    latency by hop class: every repetition waits for the slowest group working in it."""

    first: np.ndarray  # first repetition of each group
    last: np.ndarray  # last repetition of each group
    latency: HopLatency
    repeat: int

    def share_with(self, hop: int) -> float:
        """The fraction of the step's repetitions in which some group with items of hop class `hop` works."""
        has = np.isfinite(self.latency.longest[:, hop])
        k = np.arange(self.repeat)
        cover = (self.first[has, None] <= k) & (k <= self.last[has, None])
        return float(cover.any(axis=0).mean()) if self.repeat else 0.0

    def total(self, step_hw: np.ndarray) -> float:
        """Latency summed over the step's repetitions."""
        g_lat = self.latency.slowest(step_hw)
        k = np.arange(self.repeat)
        cover = (self.first[:, None] <= k) & (k <= self.last[:, None])
        return float(np.where(cover, g_lat[:, None], 0.0).max(axis=0, initial=0.0).sum())


@dataclass(frozen=True, eq=False)
class Plan:
    """A collective's traffic as flows, for every protocol of its algorithm."""

    collective: str
    algorithm: str
    nranks: int  # the collective's own ranks (one copy)
    nbytes: int
    channels: int
    patterns: tuple[FlowSet, ...]  # distinct step traffic patterns (bytes at wire efficiency 1)
    order: np.ndarray  # pattern of each schedule step
    repeats: np.ndarray  # repetitions of each schedule step
    union: FlowSet  # every step's flows together, bytes x repetitions
    latency: HopLatency  # per pattern
    windows: tuple[Windows | None, ...]  # per schedule step: a pipeline's windows (None: every transfer every repetition)
    net_peer_bw: float  # bytes/s cap per point-to-point transfer across the network (inf: none)
    net_out: float = 0.0  # payload bytes the busiest GPU sends (or receives, if more) across the network, all steps
    scale: float = 1.0  # rotated schedules: the whole schedule's traffic / the sampled rotations' traffic
    weight: np.ndarray | None = None  # rotated schedules: each link's share of its class's traffic (symmetry.link_weights)

    @cached_property
    def stage_net(self) -> np.ndarray | None:
        """Per schedule step, the share of its repetitions that cross the network (NaN: not a pipeline): there a
        stage hands on whole chunks, the GPU posting a step to the proxy only after its closing barrier and the proxy
        sending it as one message (v2.30.7-1 src/transport/net.cc:1304-1414 sendProxyProgress, one isend per step).
        None where no step is a pipeline."""
        if all(w is None for w in self.windows):
            return None
        return np.array([np.nan if w is None else w.share_with(HOP_NET) for w in self.windows])


@dataclass(frozen=True, eq=False)
class Pricing:
    """What one protocol makes of a plan."""

    protocol: str
    wire_efficiency: float  # payload bytes per byte on the wire
    step_latency: np.ndarray  # s per repetition of each schedule step
    once_latency: float  # s, once per collective
    slices: int  # chunks each channel pipelines (NCCL's loops, engine.chunking)
    copy_stages: int  # pipeline stages of NCCL's kernel besides the schedule's steps (NVLS buffer copies)
    proxy_rate: float  # payload bytes/s one GPU's proxy thread posts to the network (message / post overhead)
    algbw_cap: float  # bytes/s: NCCL's per-channel caps (tuning.cc) on this call's algorithm bandwidth; inf if none
    cap_source: str  # which tuning.cc table the cap comes from
    stage: float  # fraction of a chunk a pipeline stage inside a node hands on at once (0: no stage pacing)
    stage_net: np.ndarray | None  # Plan.stage_net: pipelined repetitions that cross the network (whole chunks)


def call_model(topo: Topology, call: Call) -> ProtocolModel:
    """NCCL's protocol constants for this call (its algorithm, protocol, GPU generation, node count, channels), made
    once per call shape and kept by the topology (topology.derived.memo: the tuner bounds and times every candidate
    of every size with the same few)."""
    key = (call.algorithm, call.protocol, call.channels, call.collective, call.nranks, call.copies,
           call.gpu_ranks.tobytes(), call.net_peer_bw, call.comm.channel_caps if call.comm else None)
    return memo(topo.derive, "call_models", key, lambda: _call_model(topo, call))


def _call_model(topo: Topology, call: Call) -> ProtocolModel:
    nranks = call.nranks // call.copies
    n_nodes = int(np.count_nonzero(np.bincount(topo.gpu_domain[call.gpu_ranks[:nranks]])))
    model = protocol_model(call.algorithm, call.protocol, nccl_arch(topo, call.gpu_ranks), n_nodes, call.channels,
                           call.collective, nranks, net_step=net_step_latency(topo, call.gpu_ranks) if n_nodes > 1 else None,
                           cpu_vendor=topo.features.get("cpu_vendor", "intel"),
                           channel_caps=call.comm.channel_caps if call.comm else None)
    model = _calibrated(model, calibrated.of(topo.spec))
    return model if call.net_peer_bw is None else replace(model, net_peer_bw=call.net_peer_bw)


def call_chunks(call: Call, model: ProtocolModel, nbytes: int | None = None) -> chunking.CallChunks:
    """How NCCL cuts `call` (at `nbytes`, default its own size): its channels and each channel's chunks. Stages
    NCCL's kernel adds around a schedule's steps (NVLS buffer copies) belong to its schedules: explicit step
    traffic (`engine.time_traffic`) is timed as given."""
    nranks = call.nranks // call.copies
    comm = call.comm or chunking.default_comm(call.channels, nranks, model.n_nodes)
    return _chunks(comm, model.family, model.protocol, call.collective, call.nbytes if nbytes is None else nbytes,
                   nranks, model.n_nodes, call.schedule is not None)


@lru_cache(maxsize=4096, typed=True)
def _chunks(comm: chunking.CommPlan, family: str, protocol: str, collective: str, nbytes: int, nranks: int,
            n_nodes: int, scheduled: bool) -> chunking.CallChunks:
    """`chunking.call_chunks`, without the kernel's copy stages for explicit traffic: a pure function of these
    values, made once per distinct call (the tuner bounds a candidate by it, then times it)."""
    chunks = chunking.call_chunks(comm, family, protocol, collective, nbytes, nranks, n_nodes)
    return chunks if scheduled else replace(chunks, copy_stages=0)


def _calibrated(model: ProtocolModel, cal: calibrated.Calibrated | None) -> ProtocolModel:
    """NCCL's latencies plus the cluster file's calibrated costs: `launch_latency` once per call, `net_step_latency`
    on the network hop class wherever NCCL charges that class (topology.calibrated)."""
    if cal is None:
        return model
    launch, net = cal.value("launch_latency") or 0.0, cal.value("net_step_latency") or 0.0
    if not launch and not net:
        return model
    hop = list(model.hop_latency)
    hop[HOP_NET] += net
    return replace(model, base_latency=model.base_latency + launch, hop_latency=(hop[0], hop[1], hop[2]))


def plan_traffic(topo: Topology, steps: Sequence[StepTraffic], call: Call, opts: Options, model: ProtocolModel) -> Plan:
    """The plan of `steps`, the traffic of `call` (its message, or its unit message for the unit cache)."""
    scale, weight = 1.0, None
    if call.rotations > 1:
        symmetry.check_rotation_placement(topo, call.gpu_ranks, call.rotations)
        steps, scale = symmetry.sample_rotations(steps, call.nranks, call.rotations)
        weight = symmetry.link_weights(topo, call.gpu_ranks)
    rules = FlowRules(call.connections, opts.pxn, opts.adaptive, model.net_peer_bw, model.nvls_efficiency,
                      call.collective in P2P_COLLECTIVES)
    order, firsts = _distinct(steps)
    patterns = [step_flows(topo, steps[i], call.gpu_ranks, rules) for i in firsts]
    order_a = np.array(order, dtype=np.int64)
    rep_a = np.array([int(st.repeat) for st in steps], dtype=np.int64)
    total = np.bincount(order_a, weights=rep_a, minlength=len(patterns))
    windows = tuple(None if call.algorithm == "ring" else _windows(topo, st, call.gpu_ranks, rules) for st in steps)
    union = concat([fs.scaled(float(total[i])) for i, fs in enumerate(patterns)])
    return Plan(
        collective=call.collective, algorithm=call.algorithm, nranks=call.nranks // call.copies, nbytes=call.nbytes,
        channels=call.channels, patterns=tuple(patterns), order=order_a, repeats=rep_a,
        union=union, latency=HopLatency.of(patterns), windows=windows, net_peer_bw=model.net_peer_bw,
        net_out=_net_out(union), scale=scale, weight=weight)


def price(plan: Plan, model: ProtocolModel, chunks: chunking.CallChunks) -> Pricing:
    """What `model`'s protocol makes of `plan` cut as `chunks`: latencies (a ring's chunks rotate through every
    position, so it pays the mean hop per step; other schedules wait for their slowest hop, a pipeline only for
    the transfers working in each repetition; a Simple ring also waits one step at every loop boundary), the
    chunks each channel pipelines and the per-channel caps, which count the channels the call runs on (a call on
    fewer channels than the communicator's gets their share), and whether those caps pace each stage of a
    pipelined step (a protocol that works chunk by chunk, engine.assemble)."""
    hw, step_hw = np.array(model.hop_latency), model.step_hop_latency
    per_pattern = plan.latency.mean(step_hw) if plan.algorithm == "ring" else plan.latency.slowest(step_hw)
    step_lat = per_pattern[plan.order] if plan.order.size else np.zeros(0)
    for j, win in enumerate(plan.windows):
        if win is not None:
            step_lat[j] = win.total(step_hw) / win.repeat
    if chunks.loops > 1 and step_lat.size and chunking.drains_every_loop(model.family, model.protocol, plan.collective):
        # each loop after the first waits one step's latency at its boundary (chunking.drains_every_loop), spread
        # over the steps' repetitions so that the steps' latencies add up to every wait
        step_lat = step_lat + (chunks.loops - 1) * float(step_lat.max()) / float(plan.repeats.sum())
    once_hops = plan.latency.hops & ~np.array(model.per_step_latency)
    return Pricing(
        protocol=model.protocol, wire_efficiency=model.wire_efficiency, step_latency=step_lat,
        once_latency=model.base_latency + float(hw[once_hops].sum()),
        slices=chunks.loops, copy_stages=chunks.copy_stages, proxy_rate=chunks.message / chunks.post,
        algbw_cap=algbw_cap(model, plan.channels, chunks), cap_source=model.busbw_cap_source,
        stage=chunks.stage if plan.stage_net is not None else 0.0, stage_net=plan.stage_net)


def algbw_cap(model: ProtocolModel, channels: int, chunks: chunking.CallChunks) -> float:
    """bytes/s: NCCL's per-channel caps (tuning.cc) on the algorithm bandwidth of a call on `channels` channels
    cut as `chunks` (a call on fewer channels than the communicator's gets their share); inf where none."""
    return model.busbw_cap_per_channel * channels * chunks.share * model.bus_to_alg


def _windows(topo: Topology, st: StepTraffic, gpu_ranks: np.ndarray, rules: FlowRules) -> Windows | None:
    """A pipelined step's windows: its transfers and in-network operations grouped by the (first, last)
    repetitions they move bytes in, each group's path latency the longest of its items'. None when the step has
    no windows, or too many to evaluate (then every repetition waits for the step's slowest hop)."""
    if st.active is None or st.repeat <= 1:
        return None
    first, last = (np.asarray(a, dtype=np.int64) for a in st.active)
    n_items = st.src.shape[0] + len(st.innet)
    live = first <= last
    if first.shape != (n_items,) or last.shape != (n_items,) or (live & ((first < 0) | (last >= st.repeat))).any():
        raise FabricsimError(f"StepTraffic.active must give (first, last) repetitions in 0..{st.repeat - 1} for each of the "
                             f"{n_items} transfers and in-network operations (first > last: never active)")
    key = first * (st.repeat + 1) + last
    groups, group = np.unique(key[live], return_inverse=True)
    if groups.size * st.repeat > WINDOW_LATENCY_LIMIT:
        return None
    group = group.ravel()
    order = np.argsort(group, kind="stable")  # items by group: each group's longest latency in one reduceat
    starts = np.flatnonzero(np.concatenate([[True], group[order][1:] != group[order][:-1]]))
    longest = np.maximum.reduceat(item_latency(topo, st, gpu_ranks, rules)[live][order], starts, axis=0)
    latency = HopLatency(longest, np.zeros(groups.size), np.zeros((groups.size, N_HOPS)))
    return Windows(groups // (st.repeat + 1), groups % (st.repeat + 1), latency, int(st.repeat))


def _net_out(fs: FlowSet) -> float:
    """Payload bytes the busiest GPU sends, or receives, across the network (NCCL's NET hop class): what its
    proxy thread posts message by message. (A rotated schedule's sample holds whole rotations: each sampled GPU's
    sends are all there.)"""
    net = fs.hop == HOP_NET
    w = fs.payload * fs.mult
    out = [np.bincount(end[mask], weights=w[mask]).max() for end in (fs.src, fs.dst)
           for mask in [net & (end >= 0)] if mask.any()]
    return float(max(out, default=0.0))


def _distinct(steps: Sequence[StepTraffic]) -> tuple[list[int], list[int]]:
    """The traffic pattern of each step (steps moving the same bytes between the same ranks share one, timed
    once) and the first step of each pattern. Steps are told apart by counts and sums first; only steps alike
    in those are compared byte by byte."""
    order: list[int] = []
    firsts: list[int] = []
    alike: dict[tuple, list[int]] = {}  # quick signature -> patterns having it
    full: dict[int, bytes] = {}  # step -> its full key, made when a signature is shared

    def key(i: int) -> bytes:
        if i not in full:
            full[i] = _pattern_key(steps[i])
        return full[i]

    for i, st in enumerate(steps):
        ops = st.innet
        sig = (st.src.shape[0], len(ops), int(np.sum(st.src)), int(np.sum(st.dst)), float(np.sum(st.nbytes)),
               float(np.sum(ops.nbytes)), (int(ops.n_inputs[0]), int(ops.n_outputs[0])) if len(ops) else ())
        same = [p for p in alike.get(sig, []) if key(firsts[p]) == key(i)]
        if same:
            order.append(same[0])
            continue
        alike.setdefault(sig, []).append(len(firsts))
        order.append(len(firsts))
        firsts.append(i)
    return order, firsts


def _pattern_key(st: StepTraffic) -> bytes:
    """Identity of a step's traffic: same transfers and in-network ops give the same flows."""
    parts = [np.asarray(st.src, np.int64).tobytes(), np.asarray(st.dst, np.int64).tobytes(),
             np.asarray(st.nbytes, np.float64).tobytes()]
    ops = st.innet
    if len(ops):
        parts += ["/".join(ops.kind.tolist()).encode(), ops.n_inputs.tobytes(), ops.n_outputs.tobytes(),
                  np.asarray(ops.ends, np.int64).tobytes(), np.asarray(ops.nbytes, np.float64).tobytes()]
    return b"|".join(parts)
