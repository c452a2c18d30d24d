"""Property tests: random rank counts, sizes, roots, dtypes and reductions."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.schedules import (ALGORITHMS, Structure, applicable, build_schedule, built_channels, execute, rank_traffic,
                                 reference)
from fabricsim.schedules.layout import REDUCING

from .conftest import assert_same, make_inputs

DTYPES = (np.int32, np.int64, np.uint16, np.float64)


@st.composite
def problems(draw):
    n = draw(st.integers(1, 20))
    rpn = draw(st.sampled_from(sorted({d for d in range(1, n + 1) if n % d == 0} | {1, n})))
    s = Structure(n, rpn, draw(st.booleans()), draw(st.booleans()))
    coll = draw(st.sampled_from(sorted(ALGORITHMS)))
    algos = applicable(coll, s)
    algo = draw(st.sampled_from(algos))
    return coll, algo, s, draw(st.integers(0, n - 1)), draw(st.integers(0, 40)), draw(st.sampled_from(DTYPES))


@settings(max_examples=120, deadline=None)
@given(problems(), st.sampled_from(["sum", "prod", "min", "max", "avg"]), st.integers(1, 3), st.integers(1, 3))
def test_random_problems_match_reference(problem, op, channels, pipeline):
    coll, algo, s, root, count, dtype = problem
    sched = build_schedule(coll, algo, s.nranks, structure=s, root=root, channels=channels, pipeline=pipeline)
    xs = make_inputs(coll, s.nranks, count, np.random.default_rng(count), dtype=dtype)
    op = op if coll in REDUCING else "sum"
    exact = np.issubdtype(dtype, np.integer)
    assert_same(execute(sched, xs, op), reference(coll, xs, op, root=root), exact=exact)


@settings(max_examples=60, deadline=None)
@given(problems(), st.integers(0, 5000))
def test_bytes_are_conserved(problem, nbytes):
    coll, algo, s, root, _, _ = problem
    sched = build_schedule(coll, algo, s.nranks, structure=s, root=root)
    t = rank_traffic(sched, nbytes * 4, 4)
    assert np.isclose(t["sent"].sum(), t["received"].sum())
    assert (t["sent"] >= 0).all() and t["steps"] == sched.n_steps


@settings(max_examples=80, deadline=None)
@given(problems(), st.integers(1, 9))
def test_built_channels_are_the_schedules_own(problem, channels):
    """Where `built_channels` knows a schedule's channels before it is built (the tuner bounds a candidate by them
    and builds it only when the bound does not rule it out), they are the built schedule's."""
    coll, algo, s, root, _, _ = problem
    known = built_channels(algo, channels)
    if known is not None:
        assert build_schedule(coll, algo, s.nranks, structure=s, root=root, channels=channels).channels == known
