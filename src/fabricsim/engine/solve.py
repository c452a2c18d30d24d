"""Draining: how long a plan's flows take on the fabric.

Flow level: max-min fair sharing of each link's capacity x efficiency, re-solved whenever a flow finishes
(`maxmin.drain`); analytical: max over links of wire bytes / effective capacity (and over flows of bytes / rate
cap). Both are linear in the bytes (rates do not depend on them), which lets the protocols of one algorithm and
every size of a sweep share one drain (`Drained.scaled`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.engine import invariants, symmetry
from fabricsim.engine.capacity import effective_capacity
from fabricsim.engine.flows import FlowSet, concat
from fabricsim.engine.maxmin import drain
from fabricsim.engine.plan import Plan
from fabricsim.topology.model import Topology


@dataclass(frozen=True, eq=False)
class Drained:
    """How long a plan's traffic takes on the wire."""

    finishes: tuple[np.ndarray, ...]  # per pattern, each flow's finish time (s)
    t: np.ndarray  # per pattern, its drain time (s)
    steady: float | None  # s: all steps' traffic drained together (the pipeline's steady state); None: not needed
    wire_scale: float = 1.0  # the plan's flow bytes x this = the wire bytes these times are for

    def scaled(self, factor: float) -> Drained:
        """The same traffic with `factor` times the wire bytes (a larger message, a less efficient protocol)."""
        return Drained(tuple(f * factor for f in self.finishes), self.t * factor,
                       None if self.steady is None else self.steady * factor, self.wire_scale * factor)


def finish_times(topo: Topology, sets: list[FlowSet], level: str, bg: FlowSet,
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
        if invariants.ON:  # each flow's mean rate (bytes / finish) within what the links offer the jobs
            _check_mean_rates(topo, jobs, finish, share)
    bounds = np.cumsum([0] + [s.n_flows for s in sets])
    return [finish[bounds[i]:bounds[i + 1]] for i in range(len(sets))]


def _check_mean_rates(topo: Topology, fs: FlowSet, finish: np.ndarray, share: np.ndarray) -> None:
    moving = fs.nbytes > 0
    rate = np.divide(fs.nbytes, finish, out=np.zeros(fs.n_flows), where=moving & (finish > 0))
    invariants.check_rates("analytical level", rate, fs.rate_cap)
    load = np.bincount(fs.edge_link, weights=(rate * fs.mult)[fs.edge_flow] * fs.edge_share, minlength=topo.n_links)
    invariants.check_link_loads("analytical level", load, share)


def offered_capacity(topo: Topology, plan: Plan, fs: FlowSet) -> np.ndarray | None:
    """What each link offers `fs` (one of the plan's flow sets): a rotated schedule's mean field, else None
    (each link's effective capacity)."""
    return None if plan.weight is None else symmetry.mean_field(topo, plan.scale, plan.weight, fs)[0]


def drain_set(topo: Topology, plan: Plan, fs: FlowSet, level: str, bg: FlowSet) -> np.ndarray:
    """Finish times of one of the plan's flow sets draining alone (with background traffic)."""
    return finish_times(topo, [fs], level, bg, offered_capacity(topo, plan, fs))[0]


def steady_state(topo: Topology, plan: Plan, level: str, bg: FlowSet, t: np.ndarray | None = None) -> float:
    """Drain time of all the plan's steps' traffic together (the pipeline's steady state). One pattern (a ring's
    steps): its drain time `t` x its repeats, as draining is linear in the bytes."""
    if len(plan.patterns) == 1 and t is not None:
        return float(t[0] * plan.repeats.sum())
    return float(drain_set(topo, plan, plan.union, level, bg).max(initial=0.0))


def drained(topo: Topology, plan: Plan, level: str, bg: FlowSet, steady: bool) -> Drained:
    """Each pattern drained alone and, when `steady`, all steps' traffic together (at the plan's bytes)."""
    finishes = tuple(drain_set(topo, plan, fs, level, bg) for fs in plan.patterns)
    t = np.array([f.max(initial=0.0) for f in finishes])
    return Drained(finishes, t, steady_state(topo, plan, level, bg, t) if steady else None)
