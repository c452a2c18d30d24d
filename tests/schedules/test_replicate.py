"""Many groups at once as one schedule: each copy computes its own group's collective, traffic tiles."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.schedules import Structure, build_schedule, execute, reference, traffic
from fabricsim.schedules.replicate import replicate


CASES = [("all_reduce", "ring", 5, 1), ("all_reduce", "tree", 8, 4), ("all_gather", "ring", 3, 1),
         ("reduce_scatter", "ring", 4, 1), ("alltoall", "pairwise", 4, 1), ("all_reduce", "nvls", 4, 4)]


@pytest.mark.parametrize("collective,algo,n,rpn,op", [
    (*case, op) for case in CASES for op in ("sum", "avg") if op == "sum" or case[0] in ("all_reduce", "reduce_scatter")])
def test_each_copy_computes_its_groups_result(collective, algo, n, rpn, op):
    sched = build_schedule(collective, algo, n, structure=Structure(n, rpn, has_nvswitch=True))
    copies = 3
    rep = replicate(sched, copies)
    assert rep.nranks == n * copies and rep.copies == copies
    rng = np.random.default_rng(7)
    count = 4 * n if collective in ("alltoall", "reduce_scatter") else 11
    xs = [rng.integers(0, 100, count).astype(np.float64) for _ in range(n * copies)]
    out = execute(rep, xs, op)
    for k in range(copies):
        want = reference(collective, xs[k * n:(k + 1) * n], op)
        for got, exp in zip(out[k * n:(k + 1) * n], want):
            np.testing.assert_allclose(got, exp)


def test_traffic_is_the_groups_traffic_side_by_side():
    sched = build_schedule("all_reduce", "ring", 8)
    one, rep = traffic(sched, 1 << 20, 4), traffic(replicate(sched, 5), 1 << 20, 4)
    assert [s.repeat for s in rep] == [s.repeat for s in one]
    for a, b in zip(one, rep):
        np.testing.assert_array_equal(np.tile(a.nbytes, 5), b.nbytes)
        np.testing.assert_array_equal(b.src[8:16], a.src + 8)
