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

import numpy as np

from fabricsim.engine import solve, unit_cache
from fabricsim.engine.assemble import result
from fabricsim.engine.call import Call, Job, Options, job_call, options, traffic_call
from fabricsim.engine.flows import FlowRules, FlowSet, empty_flows, p2p_flows
from fabricsim.engine.plan import call_model, plan_traffic, price
from fabricsim.engine.result import Result
from fabricsim.errors import FabricsimError
from fabricsim.schedules import traffic as schedule_traffic
from fabricsim.schedules.model import Schedule, StepTraffic
from fabricsim.topology.model import Topology

__all__ = ["Job", "simulate", "simulate_concurrent", "time_traffic"]


def simulate(topo: Topology, schedule: Schedule, nbytes: int, *, elem_size: int = 4, protocol: str = "simple",
             channels: int | None = None, level: str = "flow", ranks=None, pxn: bool | None = None,
             adaptive: bool | None = None, background=None, net_peer_bw: float | None = None) -> Result:
    """Time `schedule` moving `nbytes` (nccl-tests' size) on `topo`; schedule rank i runs on GPU `ranks[i]`.
    `net_peer_bw`, `adaptive`, `background`: see `time_traffic`."""
    opts = options(topo, level, pxn, adaptive)
    call = job_call(topo, Job(schedule, nbytes, ranks, elem_size, protocol, channels, net_peer_bw))
    if background is None:
        scaled = unit_cache.timed(topo, call, opts)
        if scaled is not None:
            return scaled
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


def _time(topo: Topology, steps: Sequence[StepTraffic], call: Call, opts: Options, background) -> Result:
    """Plan, price, drain and assemble one checked call."""
    model = call_model(topo, call)
    plan = plan_traffic(topo, steps, call, opts, model)
    pricing = price(plan, model)
    drained = solve.drained(topo, plan, opts.level, _background(topo, background, opts), steady=pricing.slices > 1)
    return result(topo, plan, pricing, drained.scaled(1 / pricing.wire_efficiency), opts.level)


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
    """Time several collectives running at once on one fabric; they contend on shared links.

    Each job's pipelined bandwidth phase is drained together with every other job's (flows re-share links as
    jobs finish); its bandwidth time is its solo time scaled by (drain time together / drain time alone).
    Jobs are `Job`s or tuples (schedule, nbytes, ranks, ...) in `Job`'s field order.
    """
    opts = options(topo, level, pxn, adaptive)
    jobs = [j if isinstance(j, Job) else Job(*j) for j in jobs]
    if len(jobs) > 1 and any(j.schedule.rotations > 1 for j in jobs):
        raise FabricsimError("a rotated all-to-all (more than 1,024 ranks) is timed alone, by symmetry: "
                             "simulate it on its own, or run the concurrent jobs on fewer ranks")
    calls = [job_call(topo, j) for j in jobs]
    bg = _background(topo, background, opts)
    timed = []
    for call in calls:
        model = call_model(topo, call)
        plan = plan_traffic(topo, schedule_traffic(call.schedule, call.nbytes, call.elem_size), call, opts, model)
        timed.append((plan, price(plan, model)))
    wire = [plan.union.on_wire(pricing.wire_efficiency) for plan, pricing in timed]
    solo = timed[0][0] if timed and timed[0][0].weight is not None else None  # a rotated schedule, alone (checked above)
    together = solve.finish_times(topo, wire, opts.level, bg, None if solo is None else
                                  solve.offered_capacity(topo, solo, solo.union))
    results = []
    for (plan, pricing), fin in zip(timed, together):
        drained = solve.drained(topo, plan, opts.level, bg, steady=True).scaled(1 / pricing.wire_efficiency)
        alone, shared = drained.steady, float(fin.max(initial=0.0))
        results.append(result(topo, plan, pricing, drained, opts.level, shared / alone if alone > 0 else 1.0))
    return results
