"""The rate solver: max-min fairness by progressive filling, and event-driven draining."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.engine import drain, maxmin_rates


def test_classic_two_level_example():
    # link 0 cap 1 shared by f0, f1; link 1 cap 2 shared by f1, f2 -> f0 = f1 = 0.5, f2 = 1.5
    rates = maxmin_rates(np.array([0, 1, 1, 2]), np.array([0, 0, 1, 1]), 3, np.array([1.0, 2.0]))
    assert np.allclose(rates, [0.5, 0.5, 1.5])


def test_multiplicity_counts_as_copies_and_rate_cap_binds():
    # flow 0 stands for 3 copies; flow 1 single: link cap 4 -> each copy gets 1
    assert np.allclose(maxmin_rates(np.array([0, 1]), np.array([0, 0]), 2, np.array([4.0]), mult=np.array([3.0, 1.0])), [1, 1])
    # a capped flow leaves the rest to the other
    rates = maxmin_rates(np.array([0, 1]), np.array([0, 0]), 2, np.array([4.0]), rate_cap=np.array([0.5, np.inf]))
    assert np.allclose(rates, [0.5, 3.5])


def test_drain_refills_when_a_flow_finishes():
    # two flows on one link of 1 B/s with 1 and 3 bytes: both at 0.5 until t=2, then the second at 1 -> t=4
    finish = drain(np.array([0, 1]), np.array([0, 0]), np.array([1.0, 3.0]), np.array([1.0]))
    assert np.allclose(finish, [2.0, 4.0])


def test_drain_with_persistent_background_flow():
    finish = drain(np.array([0, 1]), np.array([0, 0]), np.array([2.0, 1.0]), np.array([2.0]),
                   persistent=np.array([False, True]))
    assert np.isclose(finish[0], 2.0) and np.isinf(finish[1])


@st.composite
def flow_sets(draw):
    n_links = draw(st.integers(1, 6))
    n_flows = draw(st.integers(1, 8))
    edges = []
    for f in range(n_flows):
        links = draw(st.lists(st.integers(0, n_links - 1), min_size=1, max_size=n_links, unique=True))
        edges += [(f, lk) for lk in links]
    cap = np.array(draw(st.lists(st.floats(0.5, 100), min_size=n_links, max_size=n_links)))
    nbytes = np.array(draw(st.lists(st.floats(1, 1000), min_size=n_flows, max_size=n_flows)))
    e = np.array(edges)
    return e[:, 0], e[:, 1], n_flows, cap, nbytes


@settings(max_examples=150, deadline=None)
@given(flow_sets())
def test_maxmin_is_feasible_and_every_flow_has_a_bottleneck(case):
    ef, el, n, cap, _ = case
    rates = maxmin_rates(ef, el, n, cap)
    load = np.bincount(el, weights=rates[ef], minlength=cap.shape[0])
    assert (load <= cap * (1 + 1e-9)).all()  # no link over capacity
    saturated = load >= cap * (1 - 1e-9)
    for f in range(n):  # max-min: each flow crosses a saturated link where no flow is faster
        mine = el[ef == f]
        assert any(saturated[lk] and rates[f] >= rates[ef[el == lk]].max() * (1 - 1e-9) for lk in mine)


@settings(max_examples=100, deadline=None)
@given(flow_sets())
def test_drain_delivers_every_byte_within_capacity(case):
    ef, el, n, cap, nbytes = case
    finish = drain(ef, el, nbytes, cap)
    assert (finish > 0).all()
    # no link can deliver its bytes faster than at full capacity
    link_bytes = np.bincount(el, weights=nbytes[ef], minlength=cap.shape[0])
    assert finish.max() >= (link_bytes / cap).max() * (1 - 1e-9)
    # and the makespan never exceeds running the flows one after another at their worst link
    assert finish.max() <= sum(nbytes[f] / cap[el[ef == f]].min() for f in range(n)) * (1 + 1e-9)
    again = drain(ef, el, nbytes, cap)
    assert np.array_equal(finish, again)  # deterministic


def test_a_sprayed_flow_is_one_flow_at_its_shared_link():
    # link 0 (cap 2) carries flow 0, sprayed half and half over links 1 and 2, and flow 1, which goes on over link 3:
    # the two share link 0 equally (1 each), however many paths flow 0 is split into
    edge_flow, edge_link = np.array([0, 0, 0, 1, 1]), np.array([0, 1, 2, 0, 3])
    share = np.array([1.0, 0.5, 0.5, 1.0, 1.0])
    cap = np.array([2.0, 10.0, 10.0, 10.0])
    assert np.allclose(maxmin_rates(edge_flow, edge_link, 2, cap, edge_share=share), [1.0, 1.0])
    # a path's share of the rate is what it puts on its link: 0.5 x rate on a link of 0.25 caps the flow at 0.5
    cap[1] = 0.25
    assert np.allclose(maxmin_rates(edge_flow, edge_link, 2, cap, edge_share=share), [0.5, 1.5])
    # equal bytes then finish together (as one flow each), as on the wire
    finish = drain(edge_flow, edge_link, np.array([4.0, 4.0]), np.array([2.0, 10.0, 10.0, 10.0]), edge_share=share)
    assert np.allclose(finish, [4.0, 4.0])


@settings(max_examples=100, deadline=None)
@given(flow_sets(), st.data())
def test_maxmin_with_shares_is_feasible_and_every_flow_has_a_bottleneck(case, data):
    ef, el, n, cap, _ = case
    share = np.array(data.draw(st.lists(st.floats(0.05, 1.0), min_size=ef.shape[0], max_size=ef.shape[0])))
    rates = maxmin_rates(ef, el, n, cap, edge_share=share)
    load = np.bincount(el, weights=rates[ef] * share, minlength=cap.shape[0])
    assert (load <= cap * (1 + 1e-9)).all()
    saturated = load >= cap * (1 - 1e-9)
    assert all(saturated[el[ef == f]].any() for f in range(n))  # every flow is stopped by a full link


def _reference_drain(ef, el, nbytes, cap, mult, rate_cap, persistent, share):
    """Draining re-solved from scratch at every finish (what `drain` resumes warm)."""
    remaining, finish = nbytes.astype(float).copy(), np.where(persistent, np.inf, 0.0)
    alive, t = persistent | (remaining > 0), 0.0
    while (alive & ~persistent).any():
        ids = np.flatnonzero(alive)
        remap = np.full(nbytes.shape[0], -1)
        remap[ids] = np.arange(ids.size)
        keep = alive[ef]
        rates = maxmin_rates(remap[ef[keep]], el[keep], ids.size, cap, mult[ids], rate_cap[ids], share[keep])
        finite = ~persistent[ids]
        left = remaining[ids[finite]] / rates[finite]
        dt = left.min()
        t += dt
        remaining[ids] -= rates * dt
        done = ids[finite][left <= dt * (1 + 1e-9)]
        finish[done], alive[done] = t, False
    return finish


@settings(max_examples=150, deadline=None)
@given(flow_sets(), st.data())
def test_warm_started_drain_equals_solving_every_finish_from_scratch(case, data):
    ef, el, n, cap, nbytes = case
    mult = np.array(data.draw(st.lists(st.integers(1, 4), min_size=n, max_size=n)), dtype=float)
    rate_cap = np.array(data.draw(st.lists(st.sampled_from([np.inf, 0.7, 3.0, 25.0]), min_size=n, max_size=n)))
    persistent = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n))) & (np.arange(n) > 0)
    share = np.array(data.draw(st.lists(st.sampled_from([1.0, 0.5, 0.25]), min_size=ef.size, max_size=ef.size)))
    got = drain(ef, el, nbytes, cap, mult, rate_cap, persistent, share)
    want = _reference_drain(ef, el, nbytes, cap, mult, rate_cap, persistent, share)
    np.testing.assert_allclose(got, want, rtol=1e-9)


@settings(max_examples=100, deadline=None)
@given(flow_sets(), st.integers(2, 4), st.data())
def test_copies_of_flows_drain_as_one_flow_of_their_multiplicity(case, k, data):
    """k separate copies of every flow (same links, bytes and cap) finish together, when one flow of k x the
    multiplicity does; bytes drawn from a few values make flows of equal bytes but different rates start in one
    class of the drain and part ways."""
    ef, el, n, cap, _ = case
    nbytes = np.array(data.draw(st.lists(st.sampled_from([10.0, 100.0, 250.0]), min_size=n, max_size=n)))
    rate_cap = np.array(data.draw(st.lists(st.sampled_from([np.inf, 0.7, 3.0]), min_size=n, max_size=n)))
    one = drain(ef, el, nbytes, cap, np.full(n, float(k)), rate_cap)
    many = drain(np.concatenate([ef + i * n for i in range(k)]), np.tile(el, k), np.tile(nbytes, k), cap, None,
                 np.tile(rate_cap, k))
    assert (many.reshape(k, n) == many[:n]).all()
    np.testing.assert_allclose(many[:n], one, rtol=1e-9)
