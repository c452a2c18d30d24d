"""Timing each call once, at its unit message, for every size and protocol.

A schedule cuts a message into equal pieces; at one element per piece (the unit message) every size that is a
whole number k of units moves k times the bytes on the same flows. Bytes, link loads and max-min drain times are
linear in the bytes (rates do not depend on them) and latencies are fixed, so the unit's drain, scaled by
k / wire efficiency, is the drain of that size under any protocol. The unit plan and its drain are kept in the
topology's stores, keyed by what fixes the flows (schedule, element size, channels, ranks, level, routing,
network cap), not by size or protocol: a tuner sweep over sizes and protocols drains each algorithm once. The
plan (flows on routed paths, link loads) follows from the devices and links alone and is shared with the
topology's calibrated variants (`Topology.derive_structure`); the drain reads effective capacities, so each
topology drains its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fabricsim.engine import solve
from fabricsim.engine.assemble import link_loads, result
from fabricsim.engine.call import Call, Options
from fabricsim.engine.flows import empty_flows
from fabricsim.engine.plan import Plan, call_chunks, call_model, plan_traffic, price
from fabricsim.engine.result import Result
from fabricsim.schedules import traffic as schedule_traffic
from fabricsim.schedules.model import StepTraffic
from fabricsim.topology.model import Topology


@dataclass(frozen=True, eq=False)
class Unit:
    """A call's plan and drain at its unit message (one element per schedule piece), at wire efficiency 1."""

    plan: Plan
    drained: solve.Drained  # without the steady state, which `steady` adds when a size needs it


def timed(topo: Topology, call: Call, opts: Options) -> Result | None:
    """The Result of `call`, scaled from its unit timing; None when its message does not split into equal
    pieces, or it is a replicated schedule (training groups, made afresh per call: nothing to reuse)."""
    if not by_unit(call):
        return None
    count = call.nbytes // call.elem_size
    key = ("unit", call.schedule, call.elem_size, call.channels, opts, call.gpu_ranks.tobytes(), call.net_peer_bw)
    model = call_model(topo, call)
    unit = topo.derive(key, lambda: _unit(topo, call, opts, model, key))
    k = count // call.pieces
    pricing = price(unit.plan, model, call_chunks(call, model))
    drained = unit.drained
    if pricing.slices > 1:
        drained = replace(drained, steady=topo.derive(("unit_steady", *key[1:]), lambda: _steady(topo, unit, opts)))
    loads = topo.derive_structure(("unit_loads", *key[1:]), lambda: link_loads(topo, unit.plan))  # every size's
    plan = replace(unit.plan, nbytes=call.nbytes)
    return result(topo, plan, pricing, drained.scaled(k / pricing.wire_efficiency), opts.level, loads=loads)


def unit_traffic(topo: Topology, call: Call) -> list[StepTraffic]:
    """The step traffic of the schedule of `call` (one `by_unit`) at its unit message, kept in the topology's store
    of structural data (the tuner bounds a candidate's time by it before the engine times it)."""
    schedule = call.schedule
    assert schedule is not None, "unit_traffic needs a call timed by its unit (by_unit)"
    unit_bytes = call.pieces * call.elem_size
    return topo.derive_structure(("unit_traffic", schedule, call.elem_size),
                       lambda: schedule_traffic(schedule, unit_bytes, call.elem_size))


def by_unit(call: Call) -> bool:
    """Whether `timed` times the call by its unit: its message splits into equal pieces of its schedule (and it is
    no replicated schedule)."""
    count = call.nbytes // call.elem_size
    return not (call.schedule is None or call.nbytes % call.elem_size or count == 0 or count % call.pieces
                or call.copies > 1)


def _unit(topo: Topology, call: Call, opts: Options, model, key: tuple) -> Unit:
    """The unit plan (from the store of structural data: it reads none of the model's latencies, only its network
    cap and NVLS efficiency, which no calibration changes) drained on `topo`."""
    unit_bytes = call.pieces * call.elem_size
    steps = unit_traffic(topo, call)
    plan = topo.derive_structure(("unit_plan", *key[1:]),
                                 lambda: plan_traffic(topo, steps, replace(call, nbytes=unit_bytes), opts, model))
    return Unit(plan, solve.drained(topo, plan, opts.level, empty_flows(), steady=False))


def _steady(topo: Topology, unit: Unit, opts: Options) -> float:
    """The unit's steady-state drain: all steps' traffic together (needed once a size is cut into chunks)."""
    return solve.steady_state(topo, unit.plan, opts.level, empty_flows(), unit.drained.t)
