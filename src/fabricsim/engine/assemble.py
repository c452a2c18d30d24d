"""Assembling a Result: times, nccl-tests bandwidths, link loads, bottlenecks, the limiter and the timeline.

NCCL pipelines each channel's data in chunks (engine.chunking: its loops), so the schedule runs as a pipeline of
P chunks: bandwidth time = sum_k t_k / P + (1 - 1/P) * B, where t_k is step k's drain time and B the drain time
of all steps' traffic together (the steady state in which every step works on a different chunk). For a ring
every step loads the same links, B = sum_k t_k, giving nsteps x latency + bytes / bandwidth; for a chain or
tree, B is one link's share, not the store-and-forward sum. Stages NCCL's kernel adds around the schedule's steps
(NVLS's buffer copies, chunking.NVLS_COPY_STAGES) each add to the pipeline's fill one chunk's turn at the pace of
the schedule's first step (the NVLS reduction whose warps they share the channel with), t_0 / P. NCCL's
per-channel caps bound it from below, and pace every stage of a pipelined step (a tree's or chain's levels): with
LL128 and Simple a rank passes a chunk on only once its channel's threads have moved it (engine.chunking
stage_fraction), so each repetition lasts at least that fraction of the message at the cap, the pipeline's fill
and steady state at the channel's rate as well as the links'.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from fabricsim.engine import invariants, symmetry
from fabricsim.engine.capacity import effective_capacity, link_efficiency
from fabricsim.engine.flows import FlowSet
from fabricsim.engine.plan import Plan, Pricing
from fabricsim.engine.result import Bottleneck, Limiter, Result, Timeline
from fabricsim.engine.solve import Drained
from fabricsim.topology.model import Topology
from fabricsim.vocab import BUSBW_FACTOR

FLOW_TIMELINE_LIMIT = 20_000  # flows (repetitions expanded) listed individually in the timeline
MAX_BOTTLENECKS = 8  # tied bottleneck links listed by name (all are counted)
PEER_CAP_SOURCE = "net_peer_bw: NCCL's point-to-point channels per network peer x each channel's rate"
PROXY_SOURCE = ("message bytes / NCCL's network post overhead (tuning.cc getNetOverhead), one proxy thread per GPU "
                "(src/proxy.cc)")


@dataclass(frozen=True, eq=False)
class LinkLoads:
    """What a plan puts on every link whatever its size and protocol (the unit cache keeps it per unit plan)."""

    flow_bytes: np.ndarray  # all steps' flow bytes (x a drain's wire scale: its wire bytes)
    most_flows: np.ndarray  # the most flows any one step crosses the link with


def link_loads(topo: Topology, plan: Plan) -> LinkLoads:
    """The plan's LinkLoads; a rotated schedule's are its class totals spread by the links' weights (they read no
    capacity: the unit cache keeps them with the plan, for the topology's calibrated variants too)."""
    flow_bytes = plan.union.link_bytes(topo.n_links)
    if plan.weight is not None:
        flow_bytes = symmetry.spread(topo, plan.scale, plan.weight, flow_bytes)
    most = np.zeros(topo.n_links)
    for fs in plan.patterns:
        most = np.maximum(most, _link_flows(topo, plan, fs))
    return LinkLoads(flow_bytes, most)


def result(topo: Topology, plan: Plan, price: Pricing, drained: Drained, level: str, slowdown: float = 1.0,
           loads: LinkLoads | None = None) -> Result:
    """The Result of a plan priced for one protocol and drained at its wire bytes (`drained.wire_scale`);
    `loads`: the plan's link_loads, when the caller keeps them."""
    p = price.slices
    t = drained.t
    times = _step_times(plan, price, t)
    t_sum = float(np.sum(times * plan.repeats))
    steady = max(drained.steady, _stage_floor(plan, price)) if p > 1 else t_sum
    pipelined = slowdown * (t_sum / p + (1 - 1 / p) * steady + _copy_fill(plan, price, t))
    bandwidth_time = max(pipelined, plan.nbytes / price.algbw_cap, _proxy_time(plan, price, drained))
    latency_time = price.once_latency + float(np.sum(price.step_latency * plan.repeats))
    time = latency_time + bandwidth_time
    loads = link_loads(topo, plan) if loads is None else loads
    link_bytes = drained.wire_scale * loads.flow_bytes
    link_util = link_bytes / (topo.link_capacity * time) if time > 0 else np.zeros(topo.n_links)
    size = plan.nbytes
    algbw = size / time if time > 0 else 0.0
    busbw = algbw * BUSBW_FACTOR[plan.collective](plan.nranks) if plan.collective in BUSBW_FACTOR else algbw
    if invariants.ON:
        _check(topo, link_bytes, bandwidth_time)
    return Result(
        collective=plan.collective, algorithm=plan.algorithm, protocol=price.protocol, nranks=plan.nranks, nbytes=size,
        level=level, time=time, latency_time=latency_time, bandwidth_time=bandwidth_time, algbw=algbw, busbw=busbw,
        bound="latency-bound" if latency_time >= bandwidth_time else "bandwidth-bound",
        necks_of=partial(_necks, topo, plan, price, drained, loads, link_bytes, link_util, slowdown),
        link_bytes=link_bytes, link_util=link_util,
        timeline_of=_timeline(plan, price, drained, t_sum, steady, slowdown), slices=p, slowdown=slowdown, topo=topo,
        connection_bytes=drained.wire_scale * _connection_bytes(plan.union),
    )


def _necks(topo: Topology, plan: Plan, price: Pricing, drained: Drained, loads: LinkLoads, link_bytes: np.ndarray,
           link_util: np.ndarray, slowdown: float) -> tuple[Limiter, tuple[Bottleneck, ...], int]:
    """The Result's limiter, bottleneck links and their count, made when first read (a tuner assembles a Result per
    candidate and keeps one)."""
    bottlenecks, count = _bottlenecks(topo, loads, link_bytes, link_util)
    return _limiter(plan, price, drained, bottlenecks, slowdown), bottlenecks, count


def _check(topo: Topology, link_bytes: np.ndarray, bandwidth_time: float) -> None:
    """No link carries bytes it could not move in the bandwidth time (at its effective capacity: a degraded link at
    its degraded one, a link of no capacity nothing), and none carries a negative amount."""
    if (link_bytes < 0).any():
        lk = int(np.argmin(link_bytes))
        raise invariants.InvariantViolation(f"link {topo.link_name(lk)} carries {link_bytes[lk]:.6g} bytes")
    invariants.check_link_loads(f"Result over its {bandwidth_time:.6g} s bandwidth time", link_bytes,
                                effective_capacity(topo) * bandwidth_time)


def _connection_bytes(fs: FlowSet) -> float:
    """Mean bytes one connection of these flows moves (a flow of multiplicity m is m connections)."""
    connections = float(fs.mult.sum())
    return float(np.dot(fs.nbytes, fs.mult)) / connections if connections > 0 else 0.0


def _stage_floor(plan: Plan, price: Pricing) -> float:
    """s: the least time one repetition of a pipelined step lasts when its stages hand on whole chunks, its
    channels moving their share of the message at NCCL's per-channel cap; 0 where no cap paces the stages."""
    if not price.stage or price.stage_net is None or not np.isfinite(price.algbw_cap):
        return 0.0
    return plan.nbytes / price.algbw_cap


def _step_times(plan: Plan, price: Pricing, t: np.ndarray) -> np.ndarray:
    """The mean drain of one repetition of each schedule step: its pattern's; for a pipelined step (a repetition is
    one level working on one chunk per channel) at least the stage floor in the repetitions that cross the network
    (the proxy sends whole steps) and `price.stage` of it in the others."""
    times = t[plan.order] if plan.order.size else np.zeros(0)
    floor = _stage_floor(plan, price)
    if floor > 0 and price.stage_net is not None:
        net = price.stage_net
        paced = net * np.maximum(times, floor) + (1 - net) * np.maximum(times, price.stage * floor)
        times = np.where(np.isnan(net), times, paced)
    return times


def _copy_fill(plan: Plan, price: Pricing, t: np.ndarray) -> float:
    """The pipeline fill of the stages NCCL's kernel adds (its NVLS buffer copies): one chunk's turn each at the pace
    of the schedule's first step, t_0 / P."""
    if not price.copy_stages or not plan.order.size:
        return 0.0
    return price.copy_stages * float(t[plan.order[0]]) / price.slices


def _proxy_time(plan: Plan, price: Pricing, drained: Drained) -> float:
    """The busiest GPU's network messages posted one after another by its proxy thread (engine.chunking): its
    network payload / the proxy's rate (the plan's bytes are at wire efficiency 1: payload = wire_scale x
    efficiency)."""
    return plan.net_out * drained.wire_scale * price.wire_efficiency / price.proxy_rate


def _limiter(plan: Plan, price: Pricing, drained: Drained, bottlenecks: tuple[Bottleneck, ...],
             slowdown: float) -> Limiter:
    """The largest of the lower bounds on the bandwidth time: the busiest link's busy time, the longest
    capped transfer at its per-peer network cap (all steps' traffic together), NCCL's per-channel cap. Only the
    largest is described (its text is made for it alone: the tuner assembles a Result per candidate)."""
    neck = bottlenecks[0] if bottlenecks else None
    shared = f", x{slowdown:.2f} sharing the fabric with other jobs" if slowdown > 1 else ""
    bounds: list[tuple[float, Callable[[float], Limiter]]] = []  # (time, the Limiter of that time)
    if neck is not None:
        bounds.append((slowdown * neck.busy_time, lambda time: Limiter(
            "links", neck.effective_capacity, time, f"{neck.tech} capacity x catalog efficiency {neck.efficiency:.2f}",
            f"bottleneck {neck.name}, {neck.effective_capacity / 1e9:.1f} GB/s effective, "
            f"{neck.flows} flow{'s' * (neck.flows != 1)}{shared}")))
    capped = np.isfinite(plan.union.rate_cap)
    if capped.any():
        union = plan.union
        worst = float((union.nbytes[capped] * drained.wire_scale / union.rate_cap[capped]).max())
        bounds.append((slowdown * worst, lambda time: Limiter(
            "peer cap", plan.net_peer_bw, time, PEER_CAP_SOURCE,
            f"per-peer network cap {plan.net_peer_bw / 1e9:.1f} GB/s per point-to-point transfer{shared}")))
    proxy = _proxy_time(plan, price, drained)
    if proxy > 0:
        bounds.append((proxy, lambda time: Limiter(
            "proxy", price.proxy_rate, time, PROXY_SOURCE,
            f"network messages of the busiest GPU, posted by its proxy thread at {price.proxy_rate / 1e9:.1f} GB/s")))
    if np.isfinite(price.algbw_cap):
        bounds.append((plan.nbytes / price.algbw_cap, lambda time: Limiter(
            "channel cap", price.algbw_cap, time, f"{price.cap_source} x {plan.channels} channels",
            f"NCCL per-channel bus bandwidth cap: algorithm bandwidth at most {price.algbw_cap / 1e9:.1f} GB/s")))
    if not bounds:
        return Limiter("links", 0.0, 0.0, "no traffic crosses a link", "no shared link")
    time, limiter = max(bounds, key=lambda b: b[0])  # the first of equal bounds: links before caps
    return limiter(time)


def _link_flows(topo: Topology, plan: Plan, fs: FlowSet) -> np.ndarray:
    """Flows crossing each link; for a rotated schedule, its class's flows spread by the links' weights."""
    flows = fs.link_flows(topo.n_links)
    return flows if plan.weight is None else symmetry.spread(topo, plan.scale, plan.weight, flows)


def _bottlenecks(topo: Topology, loads: LinkLoads, link_bytes: np.ndarray,
                 link_util: np.ndarray) -> tuple[tuple[Bottleneck, ...], int]:
    """Links with the longest busy time (wire bytes / effective capacity), ties included."""
    cap = effective_capacity(topo)
    busy = link_bytes / cap
    top = float(busy.max(initial=0.0))
    if top <= 0:
        return (), 0
    tied = np.flatnonzero(busy >= top * (1 - 1e-6))
    shown = tied[:MAX_BOTTLENECKS]
    eff = link_efficiency(topo)
    techs = topo.techs
    columns = zip(shown.tolist(), _link_names(topo, shown), topo.link_tech[shown].tolist(),
                  topo.link_capacity[shown].tolist(), eff[shown].tolist(), cap[shown].tolist(),
                  loads.most_flows[shown].tolist(), busy[shown].tolist(), link_util[shown].tolist())
    return tuple(
        Bottleneck(link=lk, name=name, tech=techs[tech], capacity=capacity, efficiency=e, effective_capacity=c,
                   flows=int(round(flows)), busy_time=b, utilisation=u)
        for lk, name, tech, capacity, e, c, flows, b, u in columns
    ), int(tied.shape[0])


def _link_names(topo: Topology, links: np.ndarray) -> list[str]:
    """`Topology.link_name` of each link, each made once per topology's structure: every Result names its
    bottlenecks, and a tuner's candidates share theirs. Kept as a dict filled as links are named (a structural
    fact, the same for every caller; naming every link of a large fabric up front would cost more than it saves)."""
    known: dict[int, str] = topo.derive_structure(("link_names",), dict)
    out = []
    for lk in links.tolist():
        name = known.get(lk)
        if name is None:
            name = known[lk] = topo.link_name(lk)
        out.append(name)
    return out


def _timeline(plan: Plan, price: Pricing, drained: Drained, t_sum: float,
              steady: float, slowdown: float) -> Callable[[], Timeline]:
    """The timeline's builder: expanded steps, each given its share of the pipelined time, and (small cases, at
    most FLOW_TIMELINE_LIMIT flows) the flows within them. Laying out the steps and listing flows costs more than
    timing them (a tuner times dozens of candidates and reads one timeline, if any), so a small case's timeline is
    made when it is read; a large run's step timeline is made now (the builder then holds no plan)."""
    n_flows = int(np.array([fs.n_flows for fs in plan.patterns], dtype=np.int64)[plan.order] @ plan.repeats)
    if n_flows > FLOW_TIMELINE_LIMIT:
        pat, start, end, _, _ = _steps(plan, price, drained, t_sum, steady, slowdown)
        return partial(Timeline, start, end, pat)
    return partial(_flow_timeline, plan, price, drained, t_sum, steady, slowdown)


def _steps(plan: Plan, price: Pricing, drained: Drained, t_sum: float, steady: float,
           slowdown: float) -> tuple[np.ndarray, ...]:
    """The expanded steps: pattern, start, end, per-step latency and bandwidth time of each."""
    p, t = price.slices, drained.t
    pat = np.repeat(plan.order, plan.repeats)
    step_lat = np.repeat(price.step_latency, plan.repeats)
    times = np.repeat(_step_times(plan, price, t), plan.repeats)
    share = times / t_sum if t_sum > 0 else np.zeros(pat.shape[0])
    bw = slowdown * (times / p + ((1 - 1 / p) * steady + _copy_fill(plan, price, t)) * share)
    dur = step_lat + bw
    end = price.once_latency + np.cumsum(dur)
    start = end - dur
    return pat, start, end, step_lat, bw


def _flow_timeline(plan: Plan, price: Pricing, drained: Drained, t_sum: float, steady: float,
                   slowdown: float) -> Timeline:
    pat, start, end, step_lat, bw = _steps(plan, price, drained, t_sum, steady, slowdown)
    t = drained.t
    steps, src, dst, links, f_start, f_end = [], [], [], [], [], []
    for i, k in enumerate(pat.tolist()):
        fs = plan.patterns[k]
        if fs.n_flows == 0:
            continue
        frac = drained.finishes[k] / t[k] if t[k] > 0 else np.ones(fs.n_flows)
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
