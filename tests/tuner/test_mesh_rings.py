"""NCCL's ring search on a direct NVLink mesh (DGX-1): the rings NCCL really builds, and fabricsim running on them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabricsim.cli.main import main
from fabricsim.topology import DeviceKind, load_cluster
from fabricsim.tuner import select
from fabricsim.tuner.nccl_graph import ring_orders, search_graphs
from fabricsim.tuner.nccl_model import system_from_topology
from fabricsim.tuner.nccl_ring_search import mesh_rings

# NCCL 2.19.3 on 8 x V100 SXM2 in a hybrid cube-mesh, NCCL_DEBUG=INFO (a public log, see the docstring of
# tuner/nccl_ring_search.py): channels {0,1,6,7}, {2,3,8,9}, {4,10}, {5,11}; the six search channels are the first six,
# duplicated by ncclTopoPostset. That machine's `nvidia-smi topo -m` is fabricsim's DGX-1 V100 mesh.
NCCL_V100_RINGS = ((0, 3, 2, 1, 5, 6, 7, 4), (0, 3, 2, 1, 5, 6, 7, 4), (0, 4, 7, 6, 5, 1, 2, 3), (0, 4, 7, 6, 5, 1, 2, 3),
                   (0, 1, 3, 7, 5, 4, 6, 2), (0, 2, 6, 4, 5, 7, 3, 1))


def _edges(ring) -> list[tuple[int, int]]:
    return list(zip(ring, ring[1:] + ring[:1]))


def test_search_finds_the_rings_nccl_logged_on_a_dgx1_v100():
    system = system_from_topology(load_cluster("dgx1-v100"))
    assert ring_orders(system) == NCCL_V100_RINGS
    ring = search_graphs(system)["Ring"]
    assert (ring.n_channels, ring.bw_intra) == (6, 20.0)  # 6 x SM70_NVLINK_BW: every NVLink of a GPU


def test_p100_rings_cover_every_nvlink_once_per_direction():
    """P100 (4 single NVLinks per GPU): NCCL builds 4 rings on a DGX-1 (NVIDIA in nccl#299); the search's four are
    Hamiltonian cycles over direct links using each directed link exactly once."""
    topo = load_cluster("dgx1-p100")
    system = system_from_topology(topo)
    rings = ring_orders(system)
    assert len(rings) == 4 and search_graphs(system)["Ring"].bw_intra == 18.0
    mesh = np.array(system.nvlink_mesh)
    used = [e for r in rings for e in _edges(r)]
    assert all(mesh[a, b] == 1 for a, b in used)
    assert len(set(used)) == len(used) == int(mesh.sum())


def test_no_mesh_rings_on_nvswitch_pcie_or_two_gpu_bridges():
    for name in ("dgx-h100", "pcie-l40s-8"):
        assert ring_orders(system_from_topology(load_cluster(name))) == ()
    assert mesh_rings(((0, 2), (2, 0)), 70, 12.0)[0] == ((0, 1), (0, 1))  # the search itself works on two GPUs


@pytest.mark.parametrize("cluster", ["dgx1-v100", "dgx1-p100"])
@pytest.mark.parametrize("collective", ["all_gather", "all_reduce", "broadcast"])
def test_ring_channels_spread_over_every_nvlink(cluster, collective):
    """Issue 12 item 2: the rings used to run 0-1-...-7 on every channel, pinning them to one NVLink (20.0 GB/s on a
    DGX-1 V100). On NCCL's rings every NVLink of the cube-mesh is equally busy for its capacity."""
    topo = load_cluster(cluster)
    choice = select.best(topo, collective, 1 << 30, algos=["ring"], protos=["simple"])
    gpu_gpu = np.flatnonzero((topo.dev_kind[topo.link_src] == DeviceKind.GPU) & (topo.dev_kind[topo.link_dst] == DeviceKind.GPU))
    busy = choice.result.link_bytes[gpu_gpu] / topo.link_capacity[gpu_gpu]
    chain = collective == "broadcast"  # a chain leaves out the ring edge into the root
    assert (busy > 0).sum() >= gpu_gpu.size - (choice.channels if chain else 0)
    assert busy.max() == pytest.approx(np.median(busy), rel=1e-6)  # pieces of 1/6 differ by an element


@pytest.mark.parametrize("args,nccl_busbw", [
    (("all_gather", "--cluster", "dgx1-v100"), 119.5),
    (("all_reduce", "--cluster", "dgx1-p100", "--algo", "ring"), 71.8),
])
def test_perf_on_dgx1_reaches_nccls_ring_bandwidth(capsys, args, nccl_busbw):
    rc = main(["perf", *args, "-b", "1G", "-e", "1G", "--format", "json"])
    assert rc == 0
    busbw = json.loads(capsys.readouterr().out)["rows"][0]["busbw_GBps"]
    assert busbw == pytest.approx(nccl_busbw, rel=0.05)  # was 20.0 and 9.0


def test_across_dgx1_nodes_the_rings_leave_and_enter_on_every_nic_equally():
    """Two DGX-1: each channel's ring is turned to leave a node on its NIC rail (4 EDR NICs, 1 per 2 GPUs), enough
    channels for every rail to carry as many exits and entries: NCCL's model's 4 x 12 GB/s (47.8), not one NIC."""
    topo = load_cluster("dgx1-v100", nodes=2)
    ranks = np.arange(topo.n_gpus, dtype=np.int32)
    rings = select.node_rings(topo, ranks)
    assert len(rings) == 12 and sorted(map(sorted, rings)) == [list(range(8))] * 12
    nic = lambda g: g // 2  # noqa: E731  (GPU 2k and 2k+1 share NIC k)
    assert sorted(nic(r[-1]) for r in rings) == sorted(nic(r[0]) for r in rings) == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    choice = select.best(topo, "all_gather", 1 << 30, algos=["ring"], protos=["simple"])
    assert choice.result.busbw / 1e9 == pytest.approx(47.8, rel=0.02)  # was 20.0
