"""Refusals name what is missing and what to use instead."""

import types

import numpy as np
import pytest

from fabricsim.errors import FabricsimError
from fabricsim.schedules import Structure, applicable, build_schedule, execute, reference, structure_from_topology


@pytest.mark.parametrize(
    "collective,algorithm,n,structure,match",
    [
        ("all_reduce", "nvls", 8, Structure(8, 8), "NVSwitch"),
        ("all_reduce", "nvls", 16, Structure(16, 8, True), "one NVLink domain"),
        ("all_reduce", "hierarchical", 8, Structure(8, 8), "two nodes"),
        ("all_reduce", "hierarchical", 12, Structure(12, 8), "divide"),
        ("all_reduce", "collnet_direct", 16, Structure(16, 8, True), "SHARP"),
        ("all_reduce", "collnet_chain", 16, Structure(16, 8), "SHARP"),
        ("all_gather", "tree", 8, None, "all_reduce only"),
        ("all_reduce", "bruck", 8, None, "rabenseifner"),
        ("all_reduce", "pat", 8, None, "not all_reduce"),
        ("broadcast", "direct", 8, None, "algorithms for broadcast: ring"),
        ("all_reduce", "magic", 8, None, "unknown algorithm"),
        ("gather", "ring", 8, None, "unknown collective"),
        ("alltoall", "pxn", 8, Structure(8, 8), "direct"),
        ("all_reduce", "ring", 0, None, "at least one rank"),
        ("all_reduce", "ring", 8, Structure(4), "build it for 8"),
    ],
)
def test_refusals(collective, algorithm, n, structure, match):
    with pytest.raises(FabricsimError, match=match):
        build_schedule(collective, algorithm, n, structure=structure)


def test_root_outside_ranks():
    with pytest.raises(FabricsimError, match="outside ranks"):
        build_schedule("broadcast", "ring", 4, root=4)
    with pytest.raises(FabricsimError, match="outside ranks"):
        reference("reduce", [np.ones(2)] * 3, "sum", root=-1)


def test_bad_inputs():
    sched = build_schedule("all_reduce", "ring", 3)
    with pytest.raises(FabricsimError, match="one per rank"):
        execute(sched, [np.ones(2)] * 2)
    with pytest.raises(FabricsimError, match="same element count"):
        execute(sched, [np.ones(2), np.ones(2), np.ones(3)])
    with pytest.raises(FabricsimError, match="unknown reduction"):
        execute(sched, [np.ones(2)] * 3, "mean")
    with pytest.raises(FabricsimError, match="at least one rank"):
        reference("all_reduce", [], "sum")
    with pytest.raises(FabricsimError, match="at least 1"):
        build_schedule("all_reduce", "ring", 4, channels=0)


def test_applicable_follows_structure():
    assert "nvls" in applicable("all_reduce", Structure(8, 8, True))
    assert "nvls" not in applicable("all_reduce", Structure(8, 8))
    assert applicable("broadcast", Structure(3)) == ["ring"]
    assert "collnet_direct" in applicable("all_reduce", Structure(16, 8, True, True))


def _topo(domains, features):
    d = np.asarray(domains)
    return types.SimpleNamespace(name="t", n_gpus=d.size, gpu_domain=d, features=features)


def test_structure_from_topology():
    s = structure_from_topology(_topo([3, 3, 3, 3, 7, 7, 7, 7], {"nvls": True, "sharp": False}))
    assert (s.nranks, s.ranks_per_node, s.has_nvswitch, s.has_sharp) == (8, 4, True, False)
    with pytest.raises(FabricsimError, match="domain by domain"):
        structure_from_topology(_topo([0, 1, 0, 1], {}))


def test_structure_from_a_built_preset():
    from fabricsim.topology import load_cluster

    topo = load_cluster("dgx-h100", nodes=2)
    s = structure_from_topology(topo)
    assert (s.nranks, s.ranks_per_node, s.has_nvswitch) == (16, 8, True)
    assert "ring" in applicable("all_reduce", s)
