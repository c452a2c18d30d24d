"""Placement policies on a rail-optimised SuperPOD (4 scalable units of 32 nodes: one leaf group each)."""

import numpy as np
import pytest

from fabricsim.errors import FabricsimError
from fabricsim.multijob.placement import Request, leaf_group, parse_ranks, place
from fabricsim.topology import load_cluster


@pytest.fixture(scope="module")
def pod():
    return load_cluster("superpod-h100", gpus=1024)


def units(topo, gpus):
    """The scalable units (leaf groups) a job's GPUs sit in."""
    return sorted(set(leaf_group(topo)[np.unique(topo.gpu_domain[gpus])].tolist()))


def test_leaf_groups_are_the_scalable_units(pod):
    groups = leaf_group(pod)
    assert groups.shape == (128,) and len(set(groups.tolist())) == 4
    assert (groups[:32] == groups[0]).all() and groups[32] != groups[0]


def test_packed_jobs_fill_the_fewest_units(pod):
    a, b, c = place(pod, [Request("a", 128), Request("b", 256), Request("c", 64)])
    assert len(units(pod, a)) == 1 and len(units(pod, b)) == 1 and len(units(pod, c)) == 1
    assert units(pod, b) != units(pod, a)  # 256 GPUs fill a unit; a's unit has only 128 left
    assert units(pod, c) == units(pod, a)  # the smallest unit with room: a's
    assert np.unique(np.concatenate([a, b, c])).size == 448 and (np.diff(a) > 0).all()


def test_scattered_jobs_span_every_unit_and_random_follows_its_seed(pod):
    (s,) = place(pod, [Request("s", 256, "scattered")])
    assert units(pod, s) == sorted(set(leaf_group(pod).tolist()))
    assert np.bincount(leaf_group(pod)[np.unique(pod.gpu_domain[s])]).max() == 8  # 8 nodes in each unit
    r1 = place(pod, [Request("r", 64, "random", seed=1)])[0]
    assert np.array_equal(r1, place(pod, [Request("r", 64, "random", seed=1)])[0])
    assert not np.array_equal(r1, place(pod, [Request("r", 64, "random", seed=2)])[0])


def test_part_of_a_domain_goes_where_it_fits_best(pod):
    a, b, c = place(pod, [Request("a", 12), Request("b", 4), Request("c", 4, "scattered")])
    assert a.size == 12 and np.unique(pod.gpu_domain[a]).size == 2
    assert np.unique(pod.gpu_domain[b]).tolist() == np.unique(pod.gpu_domain[a[8:]]).tolist()  # a's half-used node
    assert np.unique(pod.gpu_domain[c]).size == 1


def test_explicit_ranks_come_first_and_must_not_overlap(pod):
    x, p = place(pod, [Request("x", ranks=parse_ranks("0-7", 1024, "x")), Request("p", 8)])
    assert x.tolist() == list(range(8)) and p.tolist() == list(range(8, 16))
    with pytest.raises(FabricsimError, match="jobs 'x' and 'y' both list GPU rank 4"):
        place(pod, [Request("x", ranks=np.arange(8)), Request("y", ranks=np.arange(4, 12))])
    with pytest.raises(FabricsimError, match="job 'big' needs 2048 GPUs but only 1024"):
        place(pod, [Request("big", 2048)])


@pytest.mark.parametrize("text, message", [
    ("0-7,x", "must be ranks and ranges"), ("7-0", "runs backwards"), ("1020-1030", "rank 1030 is not a GPU"),
    ("0-3,2", "lists a GPU twice"),
])
def test_rank_lists_are_checked(text, message):
    with pytest.raises(FabricsimError, match=message):
        parse_ranks(text, 1024, "job 'j'")
    assert parse_ranks("8-11,0", 1024, "j").tolist() == [0, 8, 9, 10, 11]
    assert parse_ranks([3, 1], 1024, "j").tolist() == [1, 3]
