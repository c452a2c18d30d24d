"""NCCL's channel search on two GPUs joined only by NVLink bridges (H100 PCIe): how many channels each link count gives.

NCCL 2.30.7 src/graph/search.cc ncclTopoCompute: the first sm90 intra speed (60 GB/s) that fits the pair's NVLinks,
lowered while the next is over 0.49 x the best, until channels x speed reach the GPU's NVLink total;
ncclTopoDupChannels doubles the channels at speeds of 25 GB/s and more (not below 50 with more than 4 channels);
src/graph/connect.cc ncclTopoPostset doubles them again. 12 links of 20.6 GB/s (SM90_NVLINK_BW, topo.h): 4 x 60
-> 8 x 30 search channels -> 16 run. (The 24 channels of nccl-tests#194's log are what NCCL 2.15.5-2.16.2 give
on 12 links: no sm90 speed array yet, speeds 44 / 30 / 22, 22 GB/s a link, v2.16.2-1 search.cc:729, :893, topo.h
SM80_NVLINK_BW; tests/tuner/test_graph_search_releases.py checks those releases' rules, this one 2.30.7's.)
"""

from __future__ import annotations

import pytest

from fabricsim.topology import ClusterSpec, build
from fabricsim.tuner.nccl_graph import NcclSystem, comm_channels, search_graphs
from fabricsim.tuner.nccl_model import system_from_topology
from fabricsim.tuner.nccl_versions import graph_search


def _pair(links: int) -> NcclSystem:
    bw = links * graph_search(None, 90).nvlink_bw
    return NcclSystem(n_ranks=2, n_nodes=1, ppn=2, compcap=90, nvlink_bw_per_gpu=bw, nvlink_peer_bw=bw, pcie_bw=48.0)


@pytest.mark.parametrize("links, search, speed, run", [(4, 4, 20.0, 8), (8, 8, 20.0, 16), (12, 8, 30.0, 16),
                                                       (14, 12, 24.0, 24), (18, 12, 30.0, 24)])
def test_two_gpu_nvlink_pair_channels(links, search, speed, run):
    system = _pair(links)
    graphs = search_graphs(system)
    assert (graphs["Ring"].n_channels, graphs["Ring"].bw_intra) == (search, speed)
    assert comm_channels(system, graphs) == run


def test_bridged_h100_pcie_pair_is_searched_as_its_12_links():
    spec = ClusterSpec(name="h100-pcie-pair", gpu="H100-PCIe", nodes=1, gpus_per_node=2, scaleup="nvlink-bridge",
                       pcie_switches_per_node=1, pcie_switch="pcie-switch5", cpus_per_node=1)
    system = system_from_topology(build(spec))
    assert system.nvlink_bw_per_gpu == pytest.approx(12 * 20.6)
    assert comm_channels(system, search_graphs(system)) == 16
