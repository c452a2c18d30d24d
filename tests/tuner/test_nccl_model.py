"""NCCL 2.30.7 cost model: 8x H100 SXM worked through tuning.cc's formulas by hand, applicability, forced choices."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.errors import FabricsimError
from fabricsim.tuner.nccl_graph import search_graphs
from fabricsim.tuner.nccl_model import NcclSystem, nccl_predict, nccl_table

H100 = NcclSystem(n_ranks=8, n_nodes=1, ppn=8, compcap=90, nvlink_bw_per_gpu=18 * 20.6, pcie_bw=48.0,
                  has_nvswitch=True, nvls_support=True)
A100 = NcclSystem(n_ranks=8, n_nodes=1, ppn=8, compcap=80, nvlink_bw_per_gpu=12 * 20.0, pcie_bw=24.0,
                  has_nvswitch=True)


def h100_nodes(nodes: int, **kw) -> NcclSystem:
    return NcclSystem(n_ranks=8 * nodes, n_nodes=nodes, ppn=8, compcap=90, nvlink_bw_per_gpu=370.8, pcie_bw=48.0,
                      nic_bw=50.0, nics_per_node=8, has_nvswitch=True, nvls_support=True, **kw)


def test_h100_graphs_match_worked_example():
    g = search_graphs(H100)
    assert (g["Ring"].n_channels, g["Ring"].bw_intra) == (12, 30.0)
    assert g["Ring"].n_channels * g["Ring"].bw_intra == 360.0
    assert (g["NVLS"].n_channels, g["NVLS"].bw_intra, g["NVLS"].bw_inter) == (8, 40.0, 60.0)


def test_h100_allreduce_table():
    t = nccl_table(H100, "all_reduce")
    expect = {("Ring", "LL"): (15.0, 80.6), ("Ring", "LL128"): (40.6, 189.3), ("Ring", "Simple"): (56.0, 205.7),
              ("Tree", "Simple"): (64.4, 165.6), ("NVLS", "Simple"): (25.0, 272.0)}
    for key, (lat, bw) in expect.items():
        assert t[key][0] == pytest.approx(lat, abs=0.05), key
        assert t[key][1] == pytest.approx(bw, abs=0.05), key
    assert t[("NVLSTree", "Simple")] is None  # one node
    assert t[("CollNetDirect", "Simple")] is None  # no SHARP


def test_h100_nvls_busbw_476():
    c = nccl_predict(H100, "all_reduce", 1 << 40)
    assert (c.algo, c.proto) == ("NVLS", "Simple")
    assert c.busbw / 1e9 == pytest.approx(476.0, rel=1e-4)
    assert c.algbw / 1e9 == pytest.approx(272.0, rel=1e-4)


def test_h100_crossover_ring_ll_to_nvls():
    # 10 us / (1/80.6 - 1/272) GB/s ~ 1.14 MB (tuning.cc:306-437 by hand)
    assert nccl_predict(H100, "all_reduce", 1_000_000).algo == "Ring"
    assert nccl_predict(H100, "all_reduce", 1_000_000).proto == "LL"
    assert nccl_predict(H100, "all_reduce", 1_300_000).algo == "NVLS"
    lo, hi = 1 << 10, 1 << 24
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if nccl_predict(H100, "all_reduce", mid).algo == "Ring" else (lo, mid)
    assert 1.10e6 < hi < 1.18e6


def test_h100_allgather_ring_wins():
    t = nccl_table(H100, "all_gather")
    assert t[("Ring", "Simple")][0] == pytest.approx(32.2)
    assert t[("Ring", "Simple")][1] == pytest.approx(360 * 8 / 7, rel=1e-6)
    assert t[("NVLS", "Simple")][1] == pytest.approx(8 * 40 * 0.85 * 7 / 8 * 7 / 8, rel=1e-6)
    c = nccl_predict(H100, "all_gather", 1 << 38)
    assert (c.algo, c.proto) == ("Ring", "Simple")
    assert c.busbw / 1e9 == pytest.approx(360.0, rel=1e-3)


def test_a100_ring_busbw_240():
    g = search_graphs(A100)["Ring"]
    assert (g.n_channels, g.bw_intra) == (12, 20.0)
    _, algbw = nccl_table(A100, "all_reduce")[("Ring", "Simple")]
    assert algbw * 14 / 8 == pytest.approx(240.0)
    assert "NVLS" not in {a for (a, _), v in nccl_table(A100, "all_reduce").items() if v}


@pytest.mark.parametrize("coll, algos", [
    ("broadcast", {"Ring"}), ("reduce", {"Ring"}),
    ("all_gather", {"Ring", "CollNetDirect", "NVLS", "PAT"}),
    ("reduce_scatter", {"Ring", "CollNetDirect", "NVLS", "PAT"}),
    ("all_reduce", {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree"}),
])
def test_applicability_per_collective(coll, algos):
    assert {a for a, _ in nccl_table(H100, coll)} == algos
    for (a, p) in nccl_table(H100, coll):
        assert p == "Simple" or a in ("Ring", "Tree")


def test_pat_only_with_one_gpu_per_node():
    one = NcclSystem(n_ranks=16, n_nodes=16, ppn=1, compcap=90, pcie_bw=48.0, nic_bw=50.0, nics_per_node=1,
                     intra_type="pci")
    assert nccl_table(one, "all_gather")[("PAT", "Simple")] is not None
    assert nccl_table(h100_nodes(2), "all_gather")[("PAT", "Simple")] is None
    with pytest.raises(FabricsimError, match="PAT|pat|choose among"):
        nccl_predict(h100_nodes(2), "all_gather", 1 << 20, algo="pat")


def test_forced_algo_and_proto():
    c = nccl_predict(H100, "all_reduce", 1 << 38, algo="ring")
    assert (c.algo, c.proto) == ("Ring", "Simple")
    assert c.busbw / 1e9 == pytest.approx(360.0, rel=0.01)
    c = nccl_predict(H100, "all_reduce", 1 << 30, algo="ring,tree", proto="ll128")
    assert (c.algo, c.proto) == ("Ring", "LL128")
    c = nccl_predict(H100, "all_reduce", 1 << 30, algo="^nvls")
    assert c.algo == "Ring"
    c = nccl_predict(H100, "all_reduce", 4096, proto=["simple"])
    assert c.proto == "Simple"


@pytest.mark.parametrize("coll, algo, proto", [
    ("all_gather", "tree", None), ("broadcast", "nvls", None), ("all_reduce", "nvls", "ll"),
    ("all_reduce", "nvls_tree", None), ("all_reduce", "collnet_direct", None),
])
def test_forced_choice_that_does_not_apply(coll, algo, proto):
    with pytest.raises(FabricsimError, match="choose among"):
        nccl_predict(H100, coll, 1 << 20, algo=algo, proto=proto)


def test_bad_names_and_sizes():
    with pytest.raises(FabricsimError, match="bruck is not an NCCL algorithm"):
        nccl_predict(H100, "all_reduce", 1024, algo="bruck")
    with pytest.raises(FabricsimError, match="unknown algorithm 'bogus'"):
        nccl_predict(H100, "all_reduce", 1024, algo="ring,bogus")
    with pytest.raises(FabricsimError, match="unknown collective"):
        nccl_predict(H100, "alltoall", 1024)
    with pytest.raises(FabricsimError, match="positive"):
        nccl_predict(H100, "all_reduce", 0)
    with pytest.raises(FabricsimError, match="n_nodes"):
        NcclSystem(n_ranks=9, n_nodes=2, ppn=4, compcap=90, nvlink_bw_per_gpu=370.8)
    with pytest.raises(FabricsimError, match="nic"):
        NcclSystem(n_ranks=16, n_nodes=2, ppn=8, compcap=90, nvlink_bw_per_gpu=370.8)


def test_multinode_h100_400g():
    m = h100_nodes(2)
    g = search_graphs(m)["Ring"]
    assert (g.n_channels, g.bw_intra) == (8, 48.0)  # 8 NICs x 48 GB/s, maintainers' ~396 GB/s ring figure
    c = nccl_predict(m, "all_reduce", 16 << 30, algo="ring")
    assert c.busbw / 1e9 == pytest.approx(384.0, rel=0.01)
    t = nccl_table(m, "all_reduce")
    assert t[("NVLS", "Simple")] is None  # multi-node NVLS needs CollNet
    assert t[("NVLSTree", "Simple")] is not None
    assert nccl_table(h100_nodes(2, collnet_support=True), "all_reduce")[("NVLS", "Simple")] is not None
    # latency grows with the node count
    assert nccl_table(h100_nodes(8), "all_reduce")[("Ring", "LL")][0] > t[("Ring", "LL")][0]


def test_one_gpu_per_node_reaches_the_network_through_its_own_pcie_link():
    """NCCL's topology holds only the communicator's GPUs: one GPU per node pushes every channel through its own
    PCIe link, so the ring gets one NIC's bandwidth however many NICs the node has (xxrjun 10 x 1 H100: 48.9 GB/s)."""
    one = NcclSystem(n_ranks=10, n_nodes=10, ppn=1, compcap=90, nvlink_bw_per_gpu=370.8, pcie_bw=48.0,
                     nic_bw=50.0, nics_per_node=8, has_nvswitch=True)
    g = search_graphs(one)["Ring"]
    assert g.n_channels * g.bw_inter == pytest.approx(48.0)
    assert nccl_predict(one, "all_reduce", 16 << 30, algo="ring").busbw / 1e9 == pytest.approx(48.0, rel=0.02)


def test_amd_cpu_changes_ll_cap_and_overhead():
    intel, amd = h100_nodes(4), h100_nodes(4, cpu_vendor="amd")
    ti, ta = nccl_table(intel, "all_reduce"), nccl_table(amd, "all_reduce")
    assert ta[("Ring", "Simple")][0] > ti[("Ring", "Simple")][0]  # 2 us net overhead vs 1
    assert ta[("Ring", "LL")][1] < ti[("Ring", "LL")][1]  # llMaxBw 19.0 vs 20.4


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"]),
       st.integers(min_value=1, max_value=1 << 34), st.sampled_from([1, 2, 3, 8]))
def test_choice_is_the_table_minimum(coll, nbytes, nodes):
    system = H100 if nodes == 1 else h100_nodes(nodes)
    c = nccl_predict(system, coll, nbytes)
    assert c.time_s > 0 and c.channels >= 1
    assert c.algbw == pytest.approx(nbytes / c.time_s)
    for (a, p), v in c.table.items():
        if v is not None:
            assert nccl_predict(system, coll, nbytes, algo=a, proto=p).time_s >= c.time_s * (1 - 1e-12)


def test_system_from_topology_presets():
    from fabricsim.topology import load_cluster
    from fabricsim.tuner.nccl_model import system_from_topology

    h100 = system_from_topology(load_cluster("dgx-h100"))
    assert (h100.n_ranks, h100.n_nodes, h100.ppn, h100.compcap) == (8, 1, 8, 90)
    assert h100.nvlink_bw_per_gpu == pytest.approx(370.8) and h100.has_nvswitch and h100.nvls_support
    assert nccl_table(h100, "all_reduce") == nccl_table(H100, "all_reduce")
    a100 = system_from_topology(load_cluster("dgx-a100"))
    assert search_graphs(a100)["Ring"].n_channels * search_graphs(a100)["Ring"].bw_intra == pytest.approx(240.0)
    nvl72 = system_from_topology(load_cluster("superpod-gb200"))
    assert nvl72.ppn == 72 and nvl72.nics_per_node == 72  # NCCL counts the NVLink domain as one node
