"""NCCL's view of a degraded node: a broken NVLink changes the rings NCCL's search finds on a direct mesh, a GPU with
fewer working NVLinks bounds every channel, a GPU off the NVSwitch rules NVLS out, and a dead NIC leaves the node's
NIC count."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.topology import Faults, apply_faults, load_cluster
from fabricsim.tuner.select import _nccl_system, best, node_rings

GIB = 1 << 30
RANKS = np.arange(8, dtype=np.int32)


def _adjacent(rings, a: int, b: int) -> bool:
    return any({ring[i], ring[(i + 1) % len(ring)]} == {a, b} for ring in rings for i in range(len(ring)))


def test_a_broken_nvlink_changes_the_rings_of_a_dgx1():
    v100 = load_cluster("dgx1-v100")
    assert _adjacent(node_rings(v100, RANKS), 0, 3)
    broken = apply_faults(v100, Faults(fail=("node0.gpu0 -> node0.gpu3",)))
    rings = node_rings(broken, RANKS)
    assert rings and not _adjacent(rings, 0, 3)  # NCCL's search runs on the mesh without that link
    assert _nccl_system(broken, RANKS.tobytes()).nvlink_mesh[0][3] == 0
    healthy = best(v100, "all_reduce", GIB, algos=["ring"]).result.busbw
    assert best(broken, "all_reduce", GIB, algos=["ring"]).result.busbw < healthy


def test_one_nvlink_down_of_eighteen_bounds_every_channel_of_an_nvswitch_node():
    h100 = load_cluster("dgx-h100")
    slow = apply_faults(h100, Faults(degrade=("node0.gpu2 -> domain0.nvswitch0:17/18",)))
    system = _nccl_system(slow, RANKS.tobytes())
    assert system.nvlink_bw_per_gpu == pytest.approx(17 * 20.6)  # NCCL counts the 17 links left (20.6 GB/s each)
    for algo in ("ring", "nvls"):
        before = best(h100, "all_reduce", GIB, algos=[algo]).result
        after = best(slow, "all_reduce", GIB, algos=[algo]).result
        assert after.bottlenecks[0].name.startswith("node0.gpu2 -> domain0.nvswitch0")
        assert after.busbw / before.busbw == pytest.approx(17 / 18, rel=0.01)


def test_a_gpu_off_the_nvswitch_rules_nvls_out_and_runs_the_ring_over_pcie():
    off = apply_faults(load_cluster("dgx-h100"), Faults(fail=("node0.gpu2 -> domain0.nvswitch0",)))
    system = _nccl_system(off, RANKS.tobytes())
    assert not system.has_nvswitch and system.intra_type == "pci"
    choice = best(off, "all_reduce", GIB)
    assert choice.algorithm == "ring" and "pcie" in choice.result.bottlenecks[0].tech


def test_a_dead_nic_leaves_the_node_with_fewer_nics():
    two = load_cluster("dgx-h100", nodes=2)
    ranks = np.arange(16, dtype=np.int32)
    assert _nccl_system(two, ranks.tobytes()).nics_per_node == 8
    down = apply_faults(two, Faults(fail=("node0.nic0",)))
    system = _nccl_system(down, ranks.tobytes())
    assert system.nics_per_node == 7 and system.nic_bw == 50.0  # rank 0's NIC is down: another one's speed
