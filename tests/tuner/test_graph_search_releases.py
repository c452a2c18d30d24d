"""NCCL's graph-search inputs per release (tuner.nccl_versions.graph_search): per-NVLink bandwidth, speed arrays,
channel duplication and MAXCHANNELS, and the channel counts they give."""

from __future__ import annotations

import pytest

from fabricsim.engine import nccl_constants as K
from fabricsim.topology import load_cluster
from fabricsim.tuner import nccl_versions as V
from fabricsim.tuner.nccl_graph import NcclSystem, comm_channels, ring_orders, search_graphs
from fabricsim.tuner.nccl_model import system_from_topology


def _two_gpus(version, links: int = 12, compcap: int = 90) -> NcclSystem:
    """Two GPUs joined directly by `links` NVLinks, as NCCL's topology of that release counts them."""
    bw = links * V.graph_search(version, compcap).nvlink_bw
    return NcclSystem(n_ranks=2, n_nodes=1, ppn=2, compcap=compcap, nvlink_bw_per_gpu=bw, nvlink_peer_bw=bw,
                      version=V.parse_version(version or "2.30.7"))


@pytest.mark.parametrize("version, search_channels, bw, run_channels", [
    ("2.16.2", 12, 22.0, 24),  # 264 GB/s: 6 x 44 fills it, duplicated (>= 25 GB/s) to 12 x 22 after pass 2
    ("2.17.1", 8, 33.0, 16),  # sm90 speeds from 2.16.5: 4 x 66, duplicated (>= 50 on sm90)
    ("2.18.5", 8, 30.0, 16),  # 20 GB/s links: 4 x 60, duplicated
    ("2.30.7", 8, 30.0, 16),  # 20.6 GB/s links: 4 x 60 best, duplicated, pass 2 finds no faster 8
])
def test_two_h100s_with_12_nvlinks_get_their_releases_channels(version, search_channels, bw, run_channels):
    system = _two_gpus(version)
    graphs = search_graphs(system)
    assert (graphs["Ring"].n_channels, graphs["Ring"].bw_intra) == (search_channels, bw)
    assert comm_channels(system, graphs) == run_channels


@pytest.mark.parametrize("version, compcap, bw", [
    ("2.16.2", 90, 22.0), ("2.17.1", 90, 22.0),  # Hopper falls into SM80_NVLINK_BW before SM90's arrived
    ("2.17.1", 80, 22.0), ("2.18.1", 80, 20.0), ("2.17.1", 70, 22.0), ("2.18.1", 70, 20.0),
    ("2.18.5", 90, 20.0), ("2.19.4", 90, 20.0), ("2.20.3", 90, 20.6), ("2.30.7", 90, 20.6),
    ("2.26.5", 100, 40.0), ("2.27.3", 100, 40.0), ("2.27.5", 100, 40.1), ("2.30.7", 100, 40.1),
    ("2.30.7", 86, 12.0), ("2.30.7", 60, 18.0),
])
def test_per_link_nvlink_bandwidth_by_release(version, compcap, bw):
    assert V.graph_search(version, compcap).nvlink_bw == bw


def test_newest_release_searches_with_nccl_constants():
    """The default (no version) must stay NCCL 2.30.7's: the tables' newest rows are engine.nccl_constants'."""
    for compcap, intra, inter in ((80, K.SPEEDS_INTRA, K.SPEEDS_INTER), (90, K.SPEEDS_INTRA_SM90, K.SPEEDS_INTER_SM90),
                                  (100, K.SPEEDS_INTRA_SM100, K.SPEEDS_INTER_SM100)):
        rules = V.graph_search(None, compcap)
        assert (rules.speeds_intra, rules.speeds_inter) == (intra, inter)
        assert rules == V.graph_search("2.30.7", compcap) and rules.dup_first and rules.start_within_total
    assert V.release(None).get("max channels") == K.MAXCHANNELS == 64
    assert V.release("2.24.3").get("max channels") == 32


def test_hopper_searched_the_default_arrays_before_2_16_5():
    assert V.graph_search("2.16.2", 90).speeds_intra[0] == 44.0
    assert V.graph_search("2.16.5", 90).speeds_intra[0] == 66.0
    assert 45.0 not in V.graph_search("2.28.9", 100).speeds_intra and 45.0 in V.graph_search("2.29.2", 100).speeds_intra


def test_a_measurements_release_reaches_the_system_built_from_its_topology():
    topo = load_cluster("dgx-h100")
    old, new = system_from_topology(topo, version="2.16.2"), system_from_topology(topo)
    assert (old.nvlink_bw_per_gpu, new.nvlink_bw_per_gpu) == (18 * 22.0, pytest.approx(18 * 20.6))
    # 2.16.2: 9 x 44 fill 396 GB/s, duplicated to 16 (MAXCHANNELS 32 / 2) and run on 32; 2.30.7: 12 x 30, run on 24
    assert comm_channels(old, search_graphs(old)) == 32
    assert comm_channels(new, search_graphs(new)) == 24


def test_dgx1_v100_rings_at_the_release_that_logged_them():
    """The DGX-1 V100 rings NCCL 2.19.3 logged (tests/tuner/test_mesh_rings.py) come out of 2.19.3's tables too."""
    from tests.tuner.test_mesh_rings import NCCL_V100_RINGS

    system = system_from_topology(load_cluster("dgx1-v100"), version="2.19.3")
    assert ring_orders(system) == NCCL_V100_RINGS
    assert (search_graphs(system)["Ring"].n_channels, search_graphs(system)["Ring"].bw_intra) == (6, 20.0)
