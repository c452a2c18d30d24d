"""Every (collective, algorithm) on the rank counts and structures it applies to, checked on
real numbers against the directly computed result, for every reduction."""

import numpy as np
import pytest

from fabricsim.errors import FabricsimError
from fabricsim.schedules import REDUCTIONS, Structure, build_schedule, execute, reference
from fabricsim.schedules.layout import REDUCING
from fabricsim.schedules.trees import dtree_parents

from .conftest import assert_same, cases, make_inputs

pytestmark = pytest.mark.costly  # seconds of work in one file: collected first (tests/conftest.py)

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
        assert sched.channels == channels and sched.chunkmap.split == (2 * channels, pipeline)  # both trees a channel
        xs = make_inputs("all_reduce", n, 31, rng)
        assert_same(execute(sched, xs, "max"), reference("all_reduce", xs, "max"))


def test_every_tree_channel_runs_both_trees_on_its_head():
    """NCCL's channel c and its duplicate c + nChannels (tree 0 and tree 1) share channel c's GPUs and NIC
    (connect.cc connectTrees): each channel's head carries the node edges of both trees."""
    n, rpn = 24, 4
    sched = build_schedule("all_reduce", "tree", n, structure=Structure(n, rpn), channels=2, pipeline=1)
    t0, t1 = dtree_parents(n // rpn)
    both = {(c, int(p)) for t in (t0, t1) for c, p in enumerate(t) if p >= 0}
    both |= {(p, c) for c, p in both}
    for head in (0, 1):
        crossing = {(int(a) // rpn, int(b) // rpn) for st in sched.steps for a, b in zip(st.src, st.dst)
                    if a // rpn != b // rpn and a % rpn == head}
        assert {(a, b) for a, b in crossing} | {(b, a) for a, b in crossing} == both


@pytest.mark.parametrize("heads", [(0, 2, 4, 6), (3,), (7, 1)])
def test_tree_with_given_channel_heads(heads):
    rng = np.random.default_rng(len(heads))
    n, rpn = 24, 8
    sched = build_schedule("all_reduce", "tree", n, structure=Structure(n, rpn), channels=4, pipeline=2,
                           tree_heads=heads)
    crossing = [(int(a), int(b)) for st in sched.steps for a, b in zip(st.src, st.dst) if a // rpn != b // rpn]
    assert {a % rpn for a, _ in crossing} == set(heads)  # every inter-node edge leaves from a channel's head
    xs = make_inputs("all_reduce", n, 31, rng)
    assert_same(execute(sched, xs, "sum"), reference("all_reduce", xs, "sum"))
    with pytest.raises(FabricsimError, match="tree_heads"):
        build_schedule("all_reduce", "tree", n, structure=Structure(n, rpn), channels=4, tree_heads=(0, rpn))


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


# The rings NCCL 2.19.3 and 2.27.5 find on an 8 x V100 SXM2 hybrid cube-mesh (NCCL_DEBUG=INFO; see
# tuner/nccl_graph.mesh_rings for the source): four ring orders of the node's local ranks.
CUBE_MESH_RINGS = ((0, 3, 2, 1, 5, 6, 7, 4), (0, 4, 7, 6, 5, 1, 2, 3), (0, 1, 3, 7, 5, 4, 6, 2), (0, 2, 6, 4, 5, 7, 3, 1))


@pytest.mark.parametrize("collective", ["all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce"])
@pytest.mark.parametrize("n", [8, 24])
def test_ring_schedules_follow_given_node_rings(collective, n):
    """Rings given per node (one node, or three nodes of 8) still compute the collective on real numbers."""
    rng = np.random.default_rng(n)
    s = Structure(n, 8)
    for channels, root in ((6, 0), (4, n - 3)):
        sched = build_schedule(collective, "ring", n, structure=s, channels=channels, pipeline=2, root=root,
                               rings=CUBE_MESH_RINGS)
        for op in REDUCTIONS if collective in REDUCING else ("sum",):
            xs = make_inputs(collective, n, 37, rng)
            assert_same(execute(sched, xs, op), reference(collective, xs, op, root=root))


def _chain_edges(sched) -> set[tuple[int, int, int]]:
    """(channel, sender, receiver) of a broadcast chain's transfers that move real chunks."""
    step = sched.steps[0]
    M = sched.nchunks // sched.channels
    return {(int(c) // M, int(s), int(d)) for s, d, c in zip(step.src, step.dst, step.src_chunk)}


@pytest.mark.parametrize("n,rpn,rings", [(8, 8, ()), (16, 8, ()), (8, 8, CUBE_MESH_RINGS), (144, 72, ())])
def test_broadcast_chains_run_along_each_channels_ring(n, rpn, rings):
    """NCCL's broadcast sends down ring->next from the root (ncclPatternPipelineFrom): channel c's chain is channel
    c's ring without the edge into the root, so across nodes the channels leave on different GPUs (issue 12 item 1:
    every chain used to leave node 0 from the same GPU, through one NIC of 8)."""
    from fabricsim.schedules.ring import ring_order

    channels, root = 8, 3
    sched = build_schedule("broadcast", "ring", n, structure=Structure(n, rpn), channels=channels, root=root, rings=rings)
    want = set()
    for ch in range(channels):
        order = ring_order(n, ch, rpn, rings)
        want |= {(ch, int(a), int(b)) for a, b in zip(order, np.roll(order, -1)) if b != root}
    assert _chain_edges(sched) == want
    if n > rpn:  # the chains leave the root's node from as many GPUs as there are channels
        leave = {s for _, s, d in want if s // rpn == 0 and d // rpn != 0}
        assert len(leave) == min(channels, rpn)


@pytest.mark.parametrize("n,rpn,heads", [(16, 8, 3), (24, 8, 8), (18, 6, 4), (40, 8, 1)])
def test_nvls_tree_with_fewer_heads_than_local_ranks(n, rpn, heads):
    """NCCL's NVLSTree has one head GPU per NVLS channel; with fewer heads than local ranks only the heads cross
    the network, on 2 channels each, and the result is still the allreduce."""
    s = Structure(n, rpn, True, True)
    sched = build_schedule("all_reduce", "nvls_tree", n, structure=s, pipeline=2, heads=heads)
    assert sched.channels == 2 * heads and sched.meta["heads"] == heads
    heads_local = set((np.arange(heads) * rpn // heads).tolist())
    for step in sched.steps:
        crossing = (step.src // rpn) != (step.dst // rpn)
        assert set((step.src[crossing] % rpn).tolist()) <= heads_local
        assert set((step.dst[crossing] % rpn).tolist()) <= heads_local
    rng = np.random.default_rng(n + heads)
    for count in COUNTS:
        xs = make_inputs("all_reduce", n, count, rng)
        for op in REDUCTIONS:
            assert_same(execute(sched, xs, op), reference("all_reduce", xs, op))


def test_nvls_tree_heads_default_to_every_local_rank():
    s = Structure(16, 8, True, True)
    full = build_schedule("all_reduce", "nvls_tree", 16, structure=s)
    assert full.channels == 16 and full.meta["heads"] == 8
    assert build_schedule("all_reduce", "nvls_tree", 16, structure=s, heads=99).meta["heads"] == 8
