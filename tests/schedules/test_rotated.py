"""Rank-symmetric all-to-all (Schedule.rotations): one node's transfers, rotated node by node, must be the
whole collective: the same results on real numbers, the same bytes per rank, and beyond 1,024 ranks the only
form fabricsim builds."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fabricsim.errors import FabricsimError
from fabricsim.schedules import Structure, build_schedule, execute, rank_traffic, reference, traffic
from fabricsim.schedules import alltoall
from fabricsim.schedules.registry import MAX_ALLTOALL_RANKS
from fabricsim.schedules.replicate import replicate, unroll

TRAFFIC = sys.modules["fabricsim.schedules.traffic"]


def rotated(algo: str, nodes: int, ppn: int):
    s = Structure(nodes * ppn, ppn)
    return alltoall.pxn(s, rotated=True) if algo == "pxn" else alltoall.direct(s.nranks, ppn)


@settings(max_examples=40, deadline=None)
@given(algo=st.sampled_from(["pxn", "direct"]), nodes=st.integers(1, 6), ppn=st.integers(1, 5),
       per_peer=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_rotated_all_to_all_computes_the_reference(algo, nodes, ppn, per_peer, seed):
    sched = rotated(algo, nodes, ppn)
    n = sched.nranks
    assert sched.rotations == nodes and sched.rotation_width == ppn
    rng = np.random.default_rng(seed)
    xs = [rng.integers(-50, 50, n * per_peer).astype(np.int64) for _ in range(n)]
    for got, want in zip(execute(sched, xs), reference("alltoall", xs)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("algo,nodes,ppn", [("pxn", 5, 3), ("direct", 7, 2), ("pxn", 4, 8), ("direct", 3, 1)])
def test_rotation_holds_one_node_and_unrolls_to_the_listed_schedule(algo, nodes, ppn):
    sched = rotated(algo, nodes, ppn)
    full = alltoall.pxn(Structure(nodes * ppn, ppn)) if algo == "pxn" else alltoall.direct(nodes * ppn)
    assert all(int(s.src.max()) < ppn for s in sched.steps)  # only the first node's ranks send
    flat = unroll(sched)
    for a, b in zip(flat.steps, full.steps):
        key = (lambda s: sorted(zip(s.src.tolist(), s.dst.tolist(), s.src_chunk.tolist(), s.dst_chunk.tolist())))
        assert key(a) == key(b)


@pytest.mark.parametrize("algo", ["pxn", "direct"])
def test_rotated_traffic_per_rank_matches_the_unrolled_schedule(algo, monkeypatch):
    sched = rotated(algo, 6, 4)
    nbytes = 4 * sched.nranks * 1000
    want = rank_traffic(unroll(sched), nbytes, 4)
    got = rank_traffic(sched, nbytes, 4)
    monkeypatch.setattr(TRAFFIC, "_LOOP_LIMIT", 0)  # the large-schedule path (no unrolling)
    big = rank_traffic(sched, nbytes, 4)
    for key in ("sent", "received"):
        np.testing.assert_allclose(got[key], want[key])
        np.testing.assert_allclose(big[key], want[key])
    listed = sum(float(t.nbytes.sum()) for t in traffic(unroll(sched), nbytes, 4))
    one = sum(float(t.nbytes.sum()) for t in traffic(sched, nbytes, 4))
    assert one * sched.rotations == pytest.approx(listed)


def test_beyond_the_listing_limit_all_to_all_is_built_rotated():
    n = 2 * MAX_ALLTOALL_RANKS
    s = Structure(n, 8)
    for algo in ("pxn", "direct"):
        sched = build_schedule("alltoall", algo, n, structure=s)
        assert sched.rotations == n // 8 and sched.rotation_width == 8
        assert sum(st.n_transfers for st in sched.steps) <= 2 * 8 * n  # one node's blocks, not n^2
    assert build_schedule("alltoall", "pxn", MAX_ALLTOALL_RANKS, structure=Structure(MAX_ALLTOALL_RANKS, 8)).rotations == 1


def test_beyond_the_listing_limit_pairwise_and_uneven_nodes_are_refused():
    n = MAX_ALLTOALL_RANKS + 8
    with pytest.raises(FabricsimError, match="pairwise all-to-all runs .* use direct or pxn"):
        build_schedule("alltoall", "pairwise", n, structure=Structure(n, 8))
    with pytest.raises(FabricsimError, match="needs equal nodes"):
        build_schedule("alltoall", "direct", n + 3, structure=Structure(n + 3, 8))


def test_a_rotated_schedule_cannot_be_replicated():
    with pytest.raises(FabricsimError, match="cannot be replicated"):
        replicate(rotated("pxn", 3, 2), 2)


def test_direct_all_to_all_over_large_domains_is_refused_with_pxn_offered():
    from fabricsim.schedules import applicable
    from fabricsim.schedules.registry import MAX_ROTATION_TRANSFERS
    n = 72 * (MAX_ROTATION_TRANSFERS // (72 * 72) + 1)
    s = Structure(n, 72)
    with pytest.raises(FabricsimError, match="direct all-to-all over .* use pxn"):
        build_schedule("alltoall", "direct", n, structure=s)
    assert applicable("alltoall", s) == ["pxn"]


def test_one_large_nvlink_domain_still_lists_direct_all_to_all():
    from fabricsim.schedules import applicable
    n = 2304  # one NVSwitch domain: nothing to rotate, every block listed as below the limit
    s = Structure(n, n)
    assert applicable("alltoall", s) == ["direct"]
    assert build_schedule("alltoall", "direct", n, structure=s).rotations == 1
