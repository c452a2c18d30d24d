"""The engine's invariant checks (engine.invariants): they run on every engine call of the suite (tests/conftest.py),
catch what they are meant to, and hold on failed and degraded fabrics."""

import numpy as np
import pytest

from fabricsim.engine import flows, invariants, maxmin, simulate
from fabricsim.engine.capacity import effective_capacity
from fabricsim.schedules import build_schedule, structure_from_topology
from fabricsim.topology import DeviceKind, build, load_spec, with_link_capacity, without_links


def test_the_suite_runs_with_the_checks_on():
    assert invariants.ON


@pytest.fixture(scope="module")
def two_units():
    topo = build(load_spec("superpod-h100", nodes=64))  # 2 scalable units: rings between them cross the spines
    ranks = np.arange(0, topo.n_gpus, 8, dtype=np.int32)  # GPU 0 of every node: all on rail 0
    sched = build_schedule("all_reduce", "ring", ranks.size, structure=structure_from_topology(topo, ranks))
    return topo, ranks, sched


def spine_uplinks(topo):
    return np.flatnonzero((topo.dev_kind[topo.link_dst] == DeviceKind.FABRIC_SWITCH) & (topo.dev_level[topo.link_dst] == 2)
                          & (topo.dev_level[topo.link_src] == 1))


def test_a_solver_that_overfills_a_link_is_caught(monkeypatch):
    fill = maxmin._fill
    monkeypatch.setattr(maxmin, "_fill", lambda *a: fill(*a) * 1.5)
    with invariants.checking(), pytest.raises(invariants.InvariantViolation, match="over its capacity"):
        maxmin.maxmin_rates(np.array([0, 1]), np.array([0, 0]), 2, np.array([10.0]))
    with invariants.checking(False):  # off: nothing is checked
        assert maxmin.maxmin_rates(np.array([0, 1]), np.array([0, 0]), 2, np.array([10.0])).tolist() == [7.5, 7.5]


def test_a_drain_that_loses_bytes_is_caught(monkeypatch):
    monkeypatch.setattr(maxmin, "_REL_TOL", 0.3)  # finishes flows with up to 30% of their bytes still to move
    with invariants.checking(), pytest.raises(invariants.InvariantViolation, match="delivered"):
        maxmin.drain(np.array([0, 1]), np.array([0, 0]), np.array([1.0, 1.25]), np.array([1.0]))


def test_a_route_that_leaks_is_caught(monkeypatch, two_units):
    topo, ranks, _ = two_units
    edges = flows._transfer_edges
    monkeypatch.setattr(flows, "_transfer_edges", lambda routes, n: tuple(a[:-1] for a in edges(routes, n)))
    with invariants.checking(), pytest.raises(invariants.InvariantViolation, match="not conserved"):
        flows.p2p_flows(topo, ranks[:1], ranks[-1:], np.ones(1), flows.FlowRules())


def test_a_failed_link_carries_nothing_and_a_degraded_one_no_more_than_it_has(two_units):
    topo, ranks, sched = two_units
    healthy = simulate(topo, sched, 1 << 30, ranks=ranks, adaptive=True)
    up = spine_uplinks(topo)
    loaded = up[healthy.link_bytes[up] > 0]
    failed_topo = without_links(topo, loaded[:1])
    failed = simulate(failed_topo, sched, 1 << 30, ranks=ranks, adaptive=True)
    on_built = np.zeros(topo.n_links)
    on_built[failed_topo.link_origin] = failed.link_bytes
    assert on_built[loaded[0]] == 0 and on_built[loaded[0] ^ 1] == 0
    assert on_built.sum() == pytest.approx(healthy.link_bytes.sum(), rel=1e-9)  # the same bytes, on other links
    slow = with_link_capacity(topo, loaded, 0.02)
    degraded = simulate(slow, sched, 1 << 30, ranks=ranks, adaptive=True)
    carried = degraded.link_bytes[loaded] / degraded.bandwidth_time
    assert (carried <= 0.02 * effective_capacity(topo)[loaded] * (1 + 1e-9)).all()
    assert degraded.time > 1.5 * healthy.time and degraded.bottlenecks[0].link in loaded


def test_removing_a_failure_gives_back_the_healthy_figure_exactly(two_units):
    topo, ranks, sched = two_units
    healthy = simulate(topo, sched, 1 << 30, ranks=ranks, adaptive=True)
    up = spine_uplinks(topo)
    simulate(without_links(topo, up[:2]), sched, 1 << 30, ranks=ranks, adaptive=True)
    simulate(with_link_capacity(topo, up, 0.5), sched, 1 << 30, ranks=ranks, adaptive=True)
    again = simulate(topo, sched, 1 << 30, ranks=ranks, adaptive=True)
    repaired = simulate(with_link_capacity(topo, up, 1.0), sched, 1 << 30, ranks=ranks, adaptive=True)
    rebuilt = simulate(build(topo.spec), sched, 1 << 30, ranks=ranks, adaptive=True)
    for r in (again, repaired, rebuilt):
        assert r.time == healthy.time and r.busbw == healthy.busbw
        assert np.array_equal(r.link_bytes, healthy.link_bytes)
