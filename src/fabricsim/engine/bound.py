"""Lower bounds on a collective's simulated time, found without routing or draining anything.

A Result's time is its latency plus its bandwidth time (engine.assemble). The latency is NCCL's base latency,
hop latencies that are never negative, and per schedule step the latency `price` gives it: for a step whose
traffic has flows and no pipeline windows, a mean (a ring) or a maximum (other schedules) over its flows of path
latency (never negative) + the protocol's per-step hop latency of the flow's hop class, so at least the least
per-step hop latency of any class. The bandwidth time is at least the message over NCCL's per-channel cap. These
come from NCCL's protocol constants, the channels and the schedule's traffic alone, so the tuner can rule out a
candidate whose bound exceeds a time it has already found before timing it (NCCL's own tuner ranks by such a
model first).
"""

from __future__ import annotations

import numpy as np

from fabricsim.engine import unit_cache
from fabricsim.engine.call import Call, Job, job_call, traffic_call
from fabricsim.engine.chunking import CommPlan
from fabricsim.engine.plan import algbw_cap, call_chunks, call_model
from fabricsim.engine.protocols import ProtocolModel
from fabricsim.schedules.traffic import step_facts
from fabricsim.topology.model import Topology

ROUNDING_MARGIN = 1e-9  # relative: the step terms are summed in another order than the engine sums them


def least_time(topo: Topology, job: Job, *, steps: bool = False) -> float:
    """Seconds `simulate` takes at least for `job` (at any engine level, with no background traffic): NCCL's
    base latency + the message over NCCL's per-channel cap, as engine.assemble adds them up; with `steps`, also
    each schedule step's least per-step hop latency where the step is sure to pay one (its traffic at the unit
    message, which the unit cache keeps and then times, has flows and no pipeline windows)."""
    call = job_call(topo, job)
    model = call_model(topo, call)
    least = _least(call, model)
    if not steps or not unit_cache.by_unit(call):
        return least
    hop = float(np.min(model.step_hop_latency))
    paid = _paid_steps(topo, call)
    return (least + paid * hop) * (1 - ROUNDING_MARGIN) if paid * hop > 0 else least


def least_time_planned(topo: Topology, collective: str, algorithm: str, ranks: np.ndarray, nbytes: int, protocol: str,
                       channels: int, comm: CommPlan | None = None, net_peer_bw: float | None = None) -> float:
    """`least_time(topo, job)` (no steps) of a call of `algorithm` on `ranks` whose schedule is not built yet: the
    bound reads the schedule for nothing but its collective, algorithm and ranks (one copy, no rotation), so any
    schedule of the call with these `channels` gives this bound."""
    call = traffic_call(topo, collective=collective, algorithm=algorithm, nranks=len(ranks), nbytes=nbytes, copies=1,
                        ranks=ranks, protocol=protocol, channels=channels, connections=1, net_peer_bw=net_peer_bw,
                        rotations=1, comm=comm)
    return _least(call, call_model(topo, call))


def _least(call: Call, model: ProtocolModel) -> float:
    """NCCL's base latency + the message over NCCL's per-channel cap, as engine.assemble adds them up."""
    return model.base_latency + call.nbytes / algbw_cap(model, call.channels, call_chunks(call, model))


def _paid_steps(topo: Topology, call: Call) -> int:
    """Steps (repetitions counted) of the call's schedule sure to pay a per-step hop latency: those that move bytes
    at the unit message and are not pipeline windows (a ring's every step), kept in the topology's store of
    structural data (the tuner bounds every candidate of every size by them)."""
    assert call.schedule is not None, "a call timed by its unit has a schedule"
    return topo.derive_structure(("unit_paid_steps", call.schedule, call.elem_size), lambda: sum(
        repeat for repeat, moves, windowed in _unit_steps(topo, call)
        if moves and (call.algorithm == "ring" or not windowed or repeat <= 1)))


def _unit_steps(topo: Topology, call: Call) -> list[tuple[int, bool, bool]]:
    """(repeat, moves bytes, has pipeline windows) of each step of the call's traffic at its unit message: read off
    the schedule where every chunk holds bytes (`schedules.traffic.step_facts`: a ring's thousands of steps cost
    no traffic), else off the traffic the unit cache keeps (and then times)."""
    assert call.schedule is not None, "a call timed by its unit has a schedule"
    facts = step_facts(call.schedule, call.pieces * call.elem_size, call.elem_size)
    if facts is not None:
        return facts
    return [(st.repeat, bool(((st.src != st.dst) & (st.nbytes > 0)).any()) or bool((st.innet.nbytes > 0).any()),
             st.active is not None) for st in unit_cache.unit_traffic(topo, call)]
