"""The engine's entry points: time a collective schedule on a fabric, alone or with other jobs, at flow level
or analytically.

One call runs through one module per job, with one `Options` handed down:
  `call`       checks the input once (`job_call` / `traffic_call`, `options`);
  `unit_cache` times a schedule once at its unit message and scales it to every size and protocol;
  `plan`       turns step traffic into flows on routed paths (identical steps are one pattern) and prices them
               for the protocol (`symmetry` samples a rotated all-to-all);
  `solve`      drains the flows (max-min fair sharing, or per-link bottleneck);
  `assemble`   builds the Result: pipelined time, latencies, link loads, bottlenecks, limiter, timeline.

Latency = NCCL base latency + per-step software latency of the step's hop class (tuning.cc hwLat) + wire and
switch latency of the paths: a ring pays the mean hop per step, a pipelined tree or chain each level's slowest
hop once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from fabricsim.engine import solve, unit_cache
from fabricsim.engine.assemble import result
from fabricsim.engine.capacity import effective_capacity
from fabricsim.engine.call import Call, Job, Options, job_call, options, traffic_call
from fabricsim.engine.chunking import CommPlan
from fabricsim.engine.flows import FlowRules, FlowSet, empty_flows, p2p_flows
from fabricsim.engine.plan import Plan, call_chunks, call_model, plan_traffic, price
from fabricsim.engine.result import Result
from fabricsim.errors import FabricsimError
from fabricsim.schedules import traffic as schedule_traffic
from fabricsim.schedules.model import Schedule, StepTraffic
from fabricsim.topology.model import Topology

if TYPE_CHECKING:  # coflows is imported by the one entry point that runs them: a plain simulate never needs it
    from fabricsim.engine import coflows

__all__ = ["Job", "simulate", "simulate_concurrent", "time_traffic"]


def simulate(topo: Topology, schedule: Schedule, nbytes: int, *, elem_size: int = 4, protocol: str = "simple",
             channels: int | None = None, level: str = "flow", ranks=None, pxn: bool | None = None,
             adaptive: bool | None = None, background=None, net_peer_bw: float | None = None,
             comm: CommPlan | None = None) -> Result:
    """Time `schedule` moving `nbytes` (nccl-tests' size) on `topo`; schedule rank i runs on GPU `ranks[i]`.
    `net_peer_bw`, `adaptive`, `background`: see `time_traffic`; `comm`: NCCL's communicator (channels, NVLS heads,
    chunk sizes) the call's chunks follow (engine.chunking; None: NCCL's defaults for `channels`)."""
    opts = options(topo, level, pxn, adaptive)
    call = job_call(topo, Job(schedule, nbytes, ranks, elem_size, protocol, channels, net_peer_bw, comm))
    if background is None:
        scaled = unit_cache.timed(topo, call, opts)
        if scaled is not None:
            return scaled
        if call.copies == 1:  # a replicated schedule (training groups) is made afresh per call: nothing to reuse
            return _time(topo, None, call, opts, None)
    return _time(topo, schedule_traffic(schedule, call.nbytes, call.elem_size), call, opts, background)


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
    `rotations` > 1: `steps` are one rotation of a rank-symmetric schedule (Schedule.rotations), timed by
    symmetry (`engine.symmetry`): hashed ECMP collisions between flows are not counted.
    """
    opts = options(topo, level, pxn, adaptive)
    call = traffic_call(topo, collective=collective, algorithm=algorithm, nranks=nranks, nbytes=nbytes, copies=copies,
                        ranks=ranks, protocol=protocol, channels=channels, connections=connections,
                        net_peer_bw=net_peer_bw, rotations=rotations)
    return _time(topo, steps, call, opts, background)


def _time(topo: Topology, steps: Sequence[StepTraffic] | None, call: Call, opts: Options, background) -> Result:
    """Plan, price, drain and assemble one checked call (`steps` None: its schedule's traffic at its size, planned
    once per size in the topology's store of structural data, which its calibrated variants share: a calibration
    fit times the same sizes on every variant)."""
    model = call_model(topo, call)
    if steps is None:
        plan = _sized_plan(topo, call, opts, model)
    else:
        plan = plan_traffic(topo, steps, call, opts, model)
    pricing = price(plan, model, call_chunks(call, model))
    drained = solve.drained(topo, plan, opts.level, _background(topo, background, opts), steady=pricing.slices > 1)
    return result(topo, plan, pricing, drained.scaled(1 / pricing.wire_efficiency), opts.level)


def _sized_plan(topo: Topology, call: Call, opts: Options, model) -> Plan:
    """The plan of a schedule's call at its own size, keyed as the unit cache keys its unit plans (what fixes the
    flows) and by the size; the model's latencies, which a calibration changes, are no part of a plan."""
    schedule = call.schedule
    assert schedule is not None, "a sized plan is the plan of a schedule's call"
    key = ("plan", schedule, call.nbytes, call.elem_size, call.channels, opts, call.gpu_ranks.tobytes(),
           call.net_peer_bw)
    return topo.derive_structure(key, lambda: plan_traffic(
        topo, schedule_traffic(schedule, call.nbytes, call.elem_size), call, opts, model), per_size=True)


def _background(topo: Topology, background, opts: Options) -> FlowSet:
    """Persistent flows between GPU ranks (src, dst) that never finish: competing traffic on the fabric."""
    if background is None:
        return empty_flows()
    src, dst = (np.asarray(a, dtype=np.int64) for a in background)
    if src.shape != dst.shape or (src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= topo.n_gpus)):
        raise FabricsimError(f"background must be (src, dst) arrays of equal length with GPU ranks 0..{topo.n_gpus - 1}")
    return p2p_flows(topo, src.astype(np.int32), dst.astype(np.int32), np.ones(src.shape[0]),
                     FlowRules(pxn=opts.pxn, adaptive=opts.adaptive))


def simulate_concurrent(topo: Topology, jobs: Sequence[Job | tuple], *, level: str = "flow", pxn: bool | None = None,
                        adaptive: bool | None = None, background=None) -> list[Result]:
    """Time several collectives starting together on one fabric; they contend on shared links.

    Each job is timed alone (with the background traffic), then all run at once as coflows (`engine.coflows`):
    each job's connections in lockstep at its own pace, sharing the links they ask more of than there is max-min
    fairly per connection, re-shared as jobs finish. A job's bandwidth time is stretched by what it lost
    (`Result.slowdown`: its bandwidth time together / alone). Jobs are `Job`s or tuples (schedule, nbytes,
    ranks, ...) in `Job`'s field order; `background`: (src, dst) GPU ranks of never-ending flows.
    """
    from fabricsim.engine import coflows

    opts = options(topo, level, pxn, adaptive)
    calls = [job_call(topo, j if isinstance(j, Job) else Job(*j)) for j in jobs]
    bg = _background(topo, background, opts)
    alone = []
    for call in calls:
        model = call_model(topo, call)
        plan = plan_traffic(topo, schedule_traffic(call.schedule, call.nbytes, call.elem_size), call, opts, model)
        pricing = price(plan, model, call_chunks(call, model))
        drained = solve.drained(topo, plan, opts.level, bg, steady=pricing.slices > 1)
        alone.append((plan, pricing, drained.scaled(1 / pricing.wire_efficiency)))
    solo = [result(topo, plan, pricing, drained, opts.level) for plan, pricing, drained in alone]
    work = [coflows.Workload(f"job {i}", (coflows.Phase("collective", coflows.Coflow.of(
        r.link_bytes, r.connection_bytes, r.bandwidth_time)),)) for i, r in enumerate(solo)]
    ran = coflows.run(effective_capacity(topo), work, _persistent(topo, bg))
    results = []
    for i, (r, (plan, pricing, drained)) in enumerate(zip(solo, alone)):
        shared = ran.job_span(i)[1]
        slowdown = max(1.0, shared / r.bandwidth_time) if r.bandwidth_time > 0 else 1.0
        results.append(r if slowdown == 1.0 else result(topo, plan, pricing, drained, opts.level, slowdown))
    return results


def _persistent(topo: Topology, bg: FlowSet) -> list[coflows.Coflow]:
    """Background flows as never-ending coflows of one connection each (every copy its own)."""
    from fabricsim.engine import coflows

    out = []
    for f in range(bg.n_flows):
        mine = bg.edge_flow == f
        links = bg.edge_link[mine]
        weight = np.bincount(links, weights=bg.edge_share[mine] * bg.mult[f], minlength=topo.n_links)
        out.append(coflows.Coflow(np.flatnonzero(weight), weight[weight > 0], 1.0, float(bg.rate_cap[f])))
    return out
