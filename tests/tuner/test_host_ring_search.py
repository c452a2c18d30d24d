"""NCCL's ring search on a node whose GPU hops go through the CPU (P2P off, separate root ports): followPath takes
the channel's bandwidth from every link of every hop, 6/5 of it on PCIe links through an Intel root complex."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.topology import build
from fabricsim.topology.spec import ClusterSpec
from fabricsim.tuner.nccl_graph import comm_channels, search_graphs
from fabricsim.tuner.nccl_system import system_from_topology


def _graph(**spec):
    base = dict(name="pcie-host", nodes=1, scaleup="pcie", cpus_per_node=1, p2p=False)
    base.update(spec)
    s = system_from_topology(build(ClusterSpec(**base)), np.arange(base["gpus_per_node"]), (2, 19, 3))
    graphs = search_graphs(s)
    return s, graphs["Ring"], comm_channels(s, graphs)


@pytest.mark.parametrize("vendor, n, bw, channels", [("intel", 1, 20.0, 2), ("amd", 2, 12.0, 4)])
def test_root_port_gpus_without_p2p(vendor, n, bw, channels):
    # Gen4 x16 = 24: Intel fits one channel at 20 (x 6/5 = 24), not two at 12 (28.8); others two at 12
    s, ring, comm = _graph(gpu="RTX4090", gpus_per_node=2, domain_size=2, gpudirect=False, cpu_vendor=vendor)
    assert s.host_ring_cap == pytest.approx(24.0)
    assert (ring.n_channels, ring.bw_intra, comm) == (n, pytest.approx(bw), channels)


def test_gpus_below_one_switch_share_its_uplink():
    # both hops of a 2-GPU ring climb the Gen3 switch uplink: 12 / 2 per channel, 5 after Intel's 6/5
    s, ring, comm = _graph(gpu="RTX2080Ti", gpus_per_node=2, domain_size=2, pcie_switches_per_node=1,
                           pcie_switch="pcie-switch3")
    assert s.host_ring_cap == pytest.approx(6.0)
    assert (ring.n_channels, ring.bw_intra, comm) == (1, pytest.approx(5.0), 2)


def test_p2p_below_a_switch_keeps_the_gpu_link():
    s, _, _ = _graph(gpu="RTX2080Ti", gpus_per_node=2, domain_size=2, pcie_switches_per_node=1,
                     pcie_switch="pcie-switch3", p2p=True)
    assert s.host_ring_cap == 0.0
