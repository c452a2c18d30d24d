"""Jobs sharing links over time (engine.coflows): hand-computed cases on a few links."""

import numpy as np
import pytest

from fabricsim.engine import invariants
from fabricsim.engine.coflows import Coflow, Phase, Workload, run
from fabricsim.errors import FabricsimError

C = 100e9  # bytes/s of every link


def coflow(weights: dict[int, float], size: float = 1e9, seconds: float = 0.01) -> Coflow:
    """Connections crossing the links given (connection-equivalents each), `size` bytes each, `seconds` alone."""
    links = np.array(sorted(weights), dtype=np.int64)
    return Coflow(links, np.array([weights[lk] for lk in links.tolist()], dtype=np.float64), size, size / seconds)


def comm(cf: Coflow, **kw) -> Phase:
    return Phase("comm", cf, **kw)


def loop(name, *phases, iterations=1, start=0.0) -> Workload:
    return Workload(name, tuple(phases), iterations, start)


def ends(schedule) -> list[float]:
    return [schedule.job_span(j)[1] for j in range(len(schedule.workloads))]


def test_a_job_alone_runs_at_its_own_pace():
    cf = coflow({0: 10}, seconds=0.5)  # 10 connections of 1 GB: 20 GB/s asked of a 100 GB/s link
    s = run(np.full(2, C), [loop("a", comm(cf, latency=0.1), Phase("compute", floor=0.2), iterations=3)])
    assert ends(s) == pytest.approx([3 * (0.5 + 0.1 + 0.2)])
    assert s.workloads[0].alone == pytest.approx(2.4)
    assert not s.contention


def test_two_jobs_saturating_one_link_take_twice_as_long():
    cf = coflow({0: 100}, seconds=1.0)  # 100 x 1 GB in 1 s: the whole link
    s = run(np.array([C]), [loop("a", comm(cf)), loop("b", comm(cf))])
    assert ends(s) == pytest.approx([2.0, 2.0])
    assert s.contention == pytest.approx({(0, 0): 2.0, (1, 0): 2.0})
    assert s.progress(0, 0) == pytest.approx(0.5)


def test_jobs_below_the_link_share_it_without_slowing():
    cf = coflow({0: 40}, seconds=1.0)  # 40% of the link each
    s = run(np.array([C]), [loop("a", comm(cf)), loop("b", comm(cf))])
    assert ends(s) == pytest.approx([1.0, 1.0]) and not s.contention


def test_a_late_job_slows_the_first_only_while_they_overlap():
    cf = coflow({0: 100}, seconds=1.0)
    s = run(np.array([C]), [loop("a", comm(cf)), loop("b", comm(cf), start=0.5)])
    # a: 0.5 s alone, then its last half at half rate (1 s); b: 1 s at half rate, then its last half alone
    assert ends(s) == pytest.approx([1.5, 2.0])
    assert s.times.tolist() == pytest.approx([0.0, 0.5, 1.5, 2.0])


def test_links_are_shared_per_connection():
    many = coflow({0: 200}, size=0.5e9, seconds=1.0)  # each fills the link alone
    few = coflow({0: 100}, size=0.25e9, seconds=0.25)
    s = run(np.array([C]), [loop("many", comm(many)), loop("few", comm(few))])
    # 300 connections, C / 300 each: few's 0.25 GB per connection drain at 0.75 s; many has 0.25 GB left per
    # connection, alone again at its pace (0.5 GB/s): 0.5 s more
    assert ends(s) == pytest.approx([1.25, 0.75])


def test_a_slowed_job_moves_in_lockstep_on_its_other_links():
    a = coflow({0: 100, 1: 100}, seconds=1.0)  # a fills link 0 (shared with b) and link 1 (its own)
    b = coflow({0: 100}, seconds=1.0)
    c = coflow({1: 50}, seconds=1.0)  # half of link 1: fits beside a only while a runs at half its pace
    s = run(np.full(2, C), [loop("a", comm(a)), loop("b", comm(b)), loop("c", comm(c))])
    assert ends(s) == pytest.approx([2.0, 2.0, 1.0])
    assert (2, 1) not in s.contention and (0, 0) in s.contention


def test_overlapped_communication_is_exposed_only_beyond_the_compute_it_hides_behind():
    cf = coflow({0: 50}, seconds=0.5)  # fills the link for 0.5 s
    hidden = loop("hidden", comm(cf, floor=1.0))
    s = run(np.array([C]), [hidden, loop("other", comm(cf))])
    assert ends(s)[0] == pytest.approx(1.0)  # its comm takes 1 s now, still within the 1 s of compute
    s3 = run(np.array([C]), [hidden, loop("b", comm(cf)), loop("c", comm(cf))])
    assert ends(s3)[0] == pytest.approx(1.5)  # three-way share: 1.5 s of communication, 0.5 s exposed


def test_background_traffic_never_finishes_and_takes_its_share():
    cf = coflow({0: 1}, seconds=1e9 / C)
    bg = Coflow(np.array([0]), np.array([1.0]), 1.0, np.inf)
    s = run(np.array([C]), [loop("a", comm(cf))], persistent=[bg])
    assert ends(s) == pytest.approx([2e9 / C])


def test_a_job_on_a_link_with_no_capacity_is_an_error():
    with pytest.raises(FabricsimError, match="no capacity"):
        run(np.array([0.0]), [loop("a", comm(coflow({0: 1}))), loop("b", comm(coflow({0: 1})))])


def test_link_loads_never_exceed_capacity_and_every_job_delivers_its_bytes():
    rng = np.random.default_rng(7)
    n_links = 12
    cap = rng.uniform(20e9, 200e9, n_links)
    jobs = []
    for j in range(6):
        links = rng.choice(n_links, 4, replace=False)
        cf = coflow({int(lk): float(w) for lk, w in zip(links, rng.uniform(1, 50, 4))}, seconds=rng.uniform(0.1, 1))
        cf = Coflow(cf.links, cf.weight, cf.size, min(cf.pace, float(np.min(cap[cf.links] / cf.weight))))
        jobs.append(loop(f"j{j}", comm(cf), Phase("compute", floor=0.05), iterations=3, start=float(rng.uniform(0, 1))))
    with invariants.checking():
        s = run(cap, jobs)
    for k in range(s.times.shape[0] - 1):  # every interval, every link
        load = np.zeros(n_links)
        for j in np.flatnonzero(s.phase_of[k] >= 0):
            cf = s.workloads[j].phases[int(s.phase_of[k, j])].coflow
            np.add.at(load, cf.links, s.rate[k, j] * cf.weight)
        assert (load <= cap * (1 + 1e-9)).all()
    for j, w in enumerate(s.workloads):  # bytes per connection moved over the run: iterations x size
        cf = w.phases[0].coflow
        moved = np.sum(np.diff(s.times) * s.rate[:, j] * (s.phase_of[:, j] == 0))
        assert moved == pytest.approx(w.iterations * cf.size, rel=1e-9)
        assert s.job_span(j)[1] - w.start >= w.alone * (1 - 1e-12)


def test_invariant_checks_catch_a_link_over_capacity():
    with invariants.checking(), pytest.raises(invariants.InvariantViolation, match="over its capacity"):
        invariants.check_link_loads("test", np.array([1.0, 2.0 + 1e-3]), np.array([1.0, 2.0]))
    with invariants.checking(), pytest.raises(invariants.InvariantViolation, match="delivered"):
        invariants.check_delivered("test", np.array([1.0, 0.999]), np.array([1.0, 1.0]))


def test_only_links_asked_for_more_than_they_have_enter_the_solver_and_nothing_changes():
    from fabricsim.engine.maxmin import maxmin_rates

    rng = np.random.default_rng(3)
    n_links, cap = 30, rng.uniform(50e9, 150e9, 30)
    flows = []
    for _ in range(8):
        links = np.sort(rng.choice(n_links, 6, replace=False))
        w = rng.uniform(1, 40, 6)
        flows.append(Coflow(links.astype(np.int64), w, 1e9, float(rng.uniform(0.2, 1.5) * np.min(cap[links] / w))))
    s = run(cap, [loop(f"j{i}", comm(cf)) for i, cf in enumerate(flows)])
    every = maxmin_rates(np.repeat(np.arange(8), 6), np.concatenate([cf.links for cf in flows]), 8, cap,
                         rate_cap=np.array([cf.pace for cf in flows]),
                         edge_share=np.concatenate([cf.weight for cf in flows]))
    assert s.rate[0] == pytest.approx(every, rel=1e-9)  # the first interval: all eight active
