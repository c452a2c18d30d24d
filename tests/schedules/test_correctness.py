"""Every (collective, algorithm) on the rank counts and structures it applies to, checked on
real numbers against the directly computed result, for every reduction."""

import numpy as np
import pytest

from fabricsim.schedules import REDUCTIONS, Structure, build_schedule, execute, reference
from fabricsim.schedules.layout import REDUCING

from .conftest import assert_same, cases, make_inputs

COUNTS = (0, 1, 13)


@pytest.mark.parametrize("collective,algorithm,n,rpn", cases())
def test_matches_reference(collective, algorithm, n, rpn):
    s = Structure(n, rpn, True, True)
    root = (n * 5) // 7  # a root that is not always 0
    sched = build_schedule(collective, algorithm, n, structure=s, root=root, channels=2, pipeline=2)
    rng = np.random.default_rng(n * 100 + rpn)
    ops = REDUCTIONS if collective in REDUCING else ("sum",)
    for count in COUNTS:
        xs = make_inputs(collective, n, count, rng)
        for op in ops:
            assert_same(execute(sched, xs, op), reference(collective, xs, op, root=root))
    xs = make_inputs(collective, n, 11, rng, dtype=np.float32)
    assert_same(execute(sched, xs, "sum"), reference(collective, xs, "sum", root=root), exact=False)


@pytest.mark.parametrize("channels,pipeline", [(1, 1), (3, 1), (1, 4), (4, 3)])
@pytest.mark.parametrize("collective", ["all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce"])
def test_ring_channels_and_pipeline(collective, channels, pipeline):
    rng = np.random.default_rng(channels * 10 + pipeline)
    for n in (2, 5, 8):
        sched = build_schedule(collective, "ring", n, root=n - 1, channels=channels, pipeline=pipeline)
        xs = make_inputs(collective, n, 29, rng)
        assert_same(execute(sched, xs, "sum"), reference(collective, xs, "sum", root=n - 1))


@pytest.mark.parametrize("channels,pipeline", [(1, 1), (2, 5), (3, 2)])
def test_tree_channels_and_pipeline(channels, pipeline):
    rng = np.random.default_rng(7)
    for n, rpn in ((24, 4), (40, 8), (9, 1)):
        sched = build_schedule("all_reduce", "tree", n, structure=Structure(n, rpn), channels=channels, pipeline=pipeline)
        assert sched.channels % 2 == 0
        xs = make_inputs("all_reduce", n, 31, rng)
        assert_same(execute(sched, xs, "max"), reference("all_reduce", xs, "max"))


def test_step_counts_follow_the_algorithms():
    assert build_schedule("all_reduce", "ring", 8).n_steps == 14  # 2(n-1)
    assert build_schedule("reduce_scatter", "ring", 8).n_steps == 7
    assert build_schedule("broadcast", "ring", 8, pipeline=4).n_steps == 4 + 8 - 2  # chunks + hops - 1
    assert build_schedule("all_reduce", "rabenseifner", 8).n_steps == 6
    assert build_schedule("all_reduce", "recursive_doubling", 6).n_steps == 2 + 2  # fold + log2(4) + unfold
    assert build_schedule("all_gather", "bruck", 7).n_steps == 3
    assert build_schedule("alltoall", "pairwise", 8).n_steps == 7
    s = Structure(32, 8, True, True)
    assert build_schedule("all_reduce", "hierarchical", 32, structure=s).n_steps == 7 + 2 * 3 + 7


def test_nccl_double_binary_tree_shapes():
    from fabricsim.schedules.trees import btree_parent, dtree_parents

    # trees.cc illustration for 14 ranks: 0 -> 8 -> {4, 12}, 12 -> {10, 13}
    parent = btree_parent(14)
    assert parent[8] == 0 and parent[4] == 8 and parent[12] == 8 and parent[13] == 12 and parent[10] == 12
    t0, t1 = dtree_parents(12)  # even: mirror, root 11 with child 3
    assert t1[11] == -1 and t1[3] == 11 and t1[7] == 3
    t0, t1 = dtree_parents(13)  # odd: shift by one, root 1 with child 9
    assert t1[1] == -1 and t1[9] == 1 and t1[0] == 9
