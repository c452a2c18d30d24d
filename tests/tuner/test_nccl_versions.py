"""NCCL's rules by release (tuner.nccl_versions): parsing, the table's rows, and what they change in the tuner."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from fabricsim.engine.call import job_call
from fabricsim.engine.plan import call_model
from fabricsim.errors import FabricsimError
from fabricsim.topology import load_cluster
from fabricsim.tuner import nccl_graph, nccl_model, nccl_versions as V, select
from fabricsim.tuner.nccl_graph import NcclSystem


@pytest.mark.parametrize("text, want", [("2.18.5", (2, 18, 5)), ("2.18", (2, 18, 6)), ("v2.26.2-1", (2, 26, 2)),
                                        ((2, 29), (2, 29, 7)), ((2, 28, 3), (2, 28, 3)), (22602, (2, 26, 2)),
                                        ("2.31", (2, 31, 99))])
def test_versions_parse_as_nccl_prints_them(text, want):
    assert V.parse_version(text) == want


@pytest.mark.parametrize("text", ["1.3.4", "2.3", "abc", "2", "3.0"])
def test_unmodelled_or_malformed_versions_are_refused(text):
    with pytest.raises(FabricsimError, match="NCCL"):
        V.parse_version(text)


def test_a_release_newer_than_the_table_is_read_as_the_newest_and_says_so():
    rel = V.release("2.32.6")
    assert rel.version == V.NEWEST and "newer than any release modelled" in rel.label


@given(minor=st.integers(4, 30))
def test_every_rule_holds_over_a_range_and_names_its_source(minor):
    rel = V.release((2, minor))
    assert all(r.source.startswith("NVIDIA/nccl ") and (r.until is None or r.since <= r.until) for r in rel.applied)
    assert len({r.setting for r in rel.applied}) == len(rel.applied)  # one value per setting in any release


def test_algorithms_arrive_when_their_release_notes_say():
    got = {v: [a for a in ("nvls", "nvls_tree", "pat") if V.release(v).has_algorithm(a)]
           for v in ("2.16", "2.17", "2.18", "2.22", "2.23")}
    assert got == {"2.16": [], "2.17": ["nvls"], "2.18": ["nvls", "nvls_tree"], "2.22": ["nvls", "nvls_tree"],
                   "2.23": ["nvls", "nvls_tree", "pat"]}
    assert V.release("2.10").has_algorithm("ring") and V.release("2.10").has_algorithm("rabenseifner")


def test_the_tuner_offers_what_the_release_has():
    topo = load_cluster("dgx-h100", gpus=16)
    ranks = np.arange(16)
    assert ("nvls_tree", "simple") not in select.candidates(topo, "all_reduce", ranks, nccl_version="2.17")
    assert ("nvls_tree", "simple") in select.candidates(topo, "all_reduce", ranks, nccl_version="2.18")
    with pytest.raises(FabricsimError, match="NCCL 2.16.5 has no nvls_tree"):
        select.best(topo, "all_reduce", 1 << 20, ranks=ranks, algos=["nvls_tree"], nccl_version="2.16")


def test_blackwell_ring_channels_fall_from_32_to_16_across_nodes_in_2_28():
    # 2.22.3-2.27.7 raise comm->nChannels to nvlsChannels (32 on Blackwell across nodes); 2.28.3 drops the raise
    topo = load_cluster("dgx-b200", gpus=16)
    key = np.arange(16, dtype=np.int32).tobytes()
    channels = {}
    for v in ("2.25", "2.27", "2.28"):
        system = select._nccl_system(topo, key, v)
        channels[v] = nccl_graph.comm_channels(system, nccl_graph.search_graphs(system))
    assert channels == {"2.25": 32, "2.27": 32, "2.28": 16}


def test_ll128_follows_each_releases_default_rule():
    sm86 = NcclSystem(n_ranks=4, n_nodes=1, ppn=4, compcap=86, nvlink_bw_per_gpu=48.0, has_nvswitch=False,
                      version=(2, 26, 6))
    graph = nccl_graph.search_graphs(sm86)["Ring"]
    assert not nccl_model.ll128_enabled(sm86, graph)  # 2.25-2.26: sm70/80/90/100/120 only
    sm86_27 = NcclSystem(**{**sm86.__dict__, "version": (2, 27, 7)})
    assert nccl_model.ll128_enabled(sm86_27, graph)  # 2.27.3: any sm >= 70 over NVLink
    pcie = load_cluster("pcie-l40s-8")
    assert all(p != "ll128" for _, p in select.candidates(pcie, "all_reduce", np.arange(8)))  # PCIe: never
    assert ("ring", "ll128") in [(a, p) for a, p in select.candidates(pcie, "all_reduce", np.arange(8), ll128_rule=False)]


def test_a_gpu_the_release_predates_is_refused():
    with pytest.raises(FabricsimError, match="compute capability 10.0"):
        NcclSystem(n_ranks=8, n_nodes=1, ppn=8, compcap=100, nvlink_bw_per_gpu=720.0, has_nvswitch=True,
                   version=(2, 20, 5))


def test_the_cost_model_prices_with_its_releases_constants():
    assert V.tuning(V.release("2.20")).hw_lat[0]["Tree"][2] == 28.0
    assert V.tuning(V.release("2.23")).hw_lat[0]["Tree"][2] == 4.0
    assert V.tuning(V.release("2.27")).per_ch_tree[3] == (77.4, 82.8, 72.0)
    assert V.tuning(V.release("2.28")).per_ch_tree[3] == (70.0, 42.8, 24.0)
    assert V.tuning(V.release("2.27")).per_ch_nvls_tree is None
    h100 = dict(n_ranks=16, n_nodes=2, ppn=8, compcap=90, nvlink_bw_per_gpu=370.8, nic_bw=50.0, nics_per_node=8,
                has_nvswitch=True, nvls_support=True)
    old, new = NcclSystem(**h100, version=(2, 20, 5)), NcclSystem(**h100)
    lat_old = nccl_model.nccl_table(old, "all_reduce")[("Tree", "Simple")][0]
    lat_new = nccl_model.nccl_table(new, "all_reduce")[("Tree", "Simple")][0]
    assert lat_old > lat_new  # 28 us per NVLink tree step then, 4 us now


def test_collnet_busbw_refinements_follow_their_releases():
    """tuning.cc: CollNetChain x0.75 in 2.14.3-2.17.1, gone in 2.18.1, which gave CollNetDirect on sm90+ x0.85."""
    h100 = dict(n_ranks=16, n_nodes=2, ppn=8, compcap=90, nvlink_bw_per_gpu=370.8, nic_bw=50.0, nics_per_node=8,
                has_nvswitch=True, collnet_support=True)
    table = {v: nccl_model.nccl_table(NcclSystem(**h100, version=v), "all_reduce") for v in ((2, 17, 1), (2, 18, 1))}
    bw = {v: {a: t[(a, "Simple")][1] for a in ("CollNetChain", "CollNetDirect")} for v, t in table.items()}
    assert bw[(2, 17, 1)]["CollNetChain"] == pytest.approx(0.75 * bw[(2, 18, 1)]["CollNetChain"])
    assert bw[(2, 18, 1)]["CollNetDirect"] == pytest.approx(0.85 * bw[(2, 17, 1)]["CollNetDirect"])


def test_nvls_tree_plan_uses_nccls_nvls_heads_per_domain():
    """An NVL72 domain has more GPUs than NCCL's NVLS heads (the NVLS graph's channels, at most
    NCCL_MAX_NVLS_ARITY): the NVLSTree schedule crosses racks from those heads only, on 2 channels each."""
    topo = load_cluster("gb200-nvl72", gpus=144)
    job = select.plan_call(topo, "all_reduce", "nvls_tree", "simple", 1 << 30, np.arange(144))
    assert job.schedule.meta["ranks_per_node"] == 72
    assert job.schedule.meta["heads"] == job.comm.nvls_heads < 72
    assert job.schedule.channels == 2 * job.comm.nvls_heads
    topo = load_cluster("dgx-h100", nodes=2)
    job = select.plan_call(topo, "all_reduce", "nvls_tree", "simple", 1 << 30, np.arange(16))
    assert job.schedule.meta["heads"] == job.comm.nvls_heads == 8


def test_nvls_busbw_follows_each_releases_formula():
    """tuning.cc: before 2.28.3 NVLS / NVLSTree took min(bwIntra, bwInter) per channel (NVLSTree half the network
    from 3 nodes) and x5/6 to algBw (2.19.1-2.27.7); 2.18.3-2.18.6 NVLSTree x.70 n/(2(n-1)); 2.28.3 nvlsEfficiency."""
    h100 = dict(compcap=90, nvlink_bw_per_gpu=370.8, nic_bw=50.0, nics_per_node=8, has_nvswitch=True, nvls_support=True)

    def nvls(version, algo, nodes):
        s = NcclSystem(n_ranks=8 * nodes, n_nodes=nodes, ppn=8, **h100, version=version)
        return nccl_graph.search_graphs(s)[algo], nccl_model.nccl_table(s, "all_reduce")[(algo, "Simple")][1]

    for nodes in (2, 4):
        g, bw = nvls((2, 26, 2), "NVLSTree", nodes)
        inter = g.bw_inter if nodes <= 2 else g.bw_inter / 2
        assert bw == pytest.approx(g.n_channels * min(g.bw_intra, inter) * 5 / 6)
        g, bw = nvls((2, 18, 5), "NVLSTree", nodes)
        assert bw == pytest.approx(g.n_channels * (g.bw_intra if nodes <= 2 else g.bw_inter) * 0.7 * nodes / (2 * (nodes - 1)))
    g, bw = nvls((2, 26, 2), "NVLS", 1)
    assert bw == pytest.approx(g.n_channels * min(g.bw_intra, g.bw_inter) * 5 / 6)
    # 2.28.3 on: the NVLink side at nvlsEfficiency, x2 for AllReduce's two pipelined operations, then nRanks/nSteps
    g, bw = nvls((2, 29, 2), "NVLS", 1)
    intra = g.bw_intra * 0.85 * (g.n_channels - 1) / g.n_channels * 2
    assert bw == pytest.approx(g.n_channels * min(intra, g.bw_inter) * 8 / 14)


def test_tree_on_one_gpu_per_node_takes_the_tree_patterns_factor_from_2_26_2():
    """search.cc forces the TREE pattern on a node with one GPU of the communicator; tuning.cc then prices Tree's
    busBw x0.85 (from 2.26.2)."""
    one = dict(n_ranks=10, n_nodes=10, ppn=1, compcap=90, nvlink_bw_per_gpu=370.8, pcie_bw=48.0, nic_bw=50.0,
               nics_per_node=8, has_nvswitch=True)
    bw = {v: nccl_model.nccl_table(NcclSystem(**one, version=v), "all_reduce")[("Tree", "Simple")][1]
          for v in ((2, 25, 1), (2, 26, 2), (2, 29, 2))}
    assert bw[(2, 26, 2)] == pytest.approx(0.85 * bw[(2, 25, 1)])
    assert bw[(2, 29, 2)] == pytest.approx(bw[(2, 26, 2)])
    eight = {**one, "n_ranks": 16, "n_nodes": 2, "ppn": 8}  # the balanced tree of a full node keeps its busBw
    assert (nccl_model.nccl_table(NcclSystem(**eight), "all_reduce")[("Tree", "Simple")][1]
            == nccl_model.nccl_table(NcclSystem(**eight, version=(2, 25, 1)), "all_reduce")[("Tree", "Simple")][1])


def test_grace_gpus_reach_their_nics_through_the_cpu_as_phb_then_p2c():
    # a GB200 GPU has no PCIe link of its own: NVLink-C2C to Grace, whose PCIe root holds the NIC; NCCL calls that
    # path PHB up to 2.26 (paths.cc:96-97) and P2C from 2.27.3 (paths.cc:669-681); a DGX H100 GPU's NIC is PXB
    racks = load_cluster("gb200-nvl72", gpus=144)
    key = np.arange(144, dtype=np.int32).tobytes()
    assert {v: select._nccl_system(racks, key, v).inter_type for v in ("2.26.2", "2.27.3", "2.30")} == {
        "2.26.2": "phb", "2.27.3": "p2c", "2.30": "p2c"}
    h100 = load_cluster("dgx-h100", nodes=2)
    assert select._nccl_system(h100, np.arange(16, dtype=np.int32).tobytes(), "2.26.2").inter_type == "pxb"
    protos = {v: {p for _, p in select.candidates(racks, "all_reduce", np.arange(144), nccl_version=v)}
              for v in ("2.26.2", "2.28.9")}
    assert "ll128" not in protos["2.26.2"] and "ll128" in protos["2.28.9"]  # LL128 needs typeInter <= PXN (P2C)


def test_ll128_over_pxn_stays_on_through_2_27():
    # 2.27.3 bounds sm90+ LL128 at PATH_P2C (tuning.cc:460), which its topo.h numbers after PATH_PXN (6 < 7): a PXN
    # path keeps LL128; 2.27.5+ put P2C before PXN and bound at PXN (tuning.cc:459-461): both allowed all along
    rules = {v: V.release(v).get("ll128 inter path sm90") for v in ("2.26.6", "2.27.3", "2.27.7", "2.28.3")}
    assert rules == dict.fromkeys(rules, "pxn")
    one = dict(n_ranks=16, n_nodes=2, ppn=8, compcap=90, nvlink_bw_per_gpu=360.0, nic_bw=50.0, nics_per_node=8,
               has_nvswitch=True, inter_type="pxn")
    graph = nccl_graph.search_graphs(NcclSystem(**one, version=(2, 27, 3)))["Ring"]
    assert nccl_model.ll128_enabled(NcclSystem(**one, version=(2, 27, 3)), graph)


def test_the_engine_paces_trees_with_the_caps_of_the_release_that_ran():
    # Blackwell's Tree cap across 4+ nodes: 72 GB/s per channel up to 2.27, 24 from 2.28 (tuning.cc perChMaxTreeBws)
    topo = load_cluster("dgx-b200", nodes=4)
    caps = {}
    for v in ("2.27.3", "2.28.9"):
        choice = select.best(topo, "all_reduce", 1 << 30, algos="tree", protos="simple", nccl_version=v)
        caps[v] = call_model(topo, job_call(topo, choice.job)).busbw_cap_per_channel
    assert caps == {"2.27.3": pytest.approx(72e9), "2.28.9": pytest.approx(24e9)}


def test_the_ll_cap_is_the_release_s_too():
    # llMaxBws' Hopper row on one node: 87.7 GB/s up to 2.20.5 (Ampere's row), 141 since (tuning.cc llMaxBws)
    topo = load_cluster("dgx-h100")
    cap = {}
    for v in ("2.18.5", "2.30.7"):
        choice = select.best(topo, "all_reduce", 1 << 16, algos="ring", protos="ll", nccl_version=v)
        call = job_call(topo, choice.job)
        cap[v] = call_model(topo, call).busbw_cap_per_channel * call.channels
    assert cap == {"2.18.5": pytest.approx(87.7e9), "2.30.7": pytest.approx(141e9)}
