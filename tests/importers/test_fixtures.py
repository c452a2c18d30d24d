"""`topo import` on real dumps: every built cluster is checked against numbers read by hand from the input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fabricsim.importers import import_cluster, read_machine
from fabricsim.importers.check import compare
from fabricsim.topology import DeviceKind, build
from fabricsim.units import Gbit

FIX = Path(__file__).parent / "fixtures"


def _built(files, **kw):
    imp = import_cluster([FIX / f for f in files], **kw)
    return imp, build(imp.spec)


def _nvlinks_per_gpu(topo, gpu: int) -> int:
    links = topo.links_from(int(topo.gpu_device[gpu]))
    return int(sum(topo.link_count[i] for i in links if topo.techs[topo.link_tech[i]].startswith("nvlink")))


def _node_nics(topo) -> list[int]:
    return [int(d) for d in topo.devices_of(DeviceKind.NIC) if topo.dev_node[d] == 0]


def _nic_gbps(topo, nic: int) -> float:
    up = [i for i in topo.links_from(nic) if topo.dev_kind[topo.link_dst[i]] == DeviceKind.FABRIC_SWITCH]
    return float(topo.link_capacity[up[0]] / Gbit)


def _switch_of(topo, device: int) -> set[int]:
    return {int(topo.link_dst[i]) for i in topo.links_from(device)
            if topo.dev_kind[topo.link_dst[i]] == DeviceKind.PCIE_SWITCH}


def _all_checks_hold(imp, topo, allowed=()):
    for c in compare(imp, topo):
        if c.what not in allowed:
            assert c.ok is not False, c


def test_ibm_h100_dump_nvlinks_nvswitches_and_roce_nics():
    # The XML lists 8 <gpu sm="90"> on PCI device 0x2330, each with NVLinks 5+5+4+4 to f3..f6 (4 NVSwitches),
    # and 8 <net speed="200000"> on Ethernet-class (0x020000) PCI functions, one beside each GPU.
    imp, topo = _built(["xml/ibm-vpc-h100-topo.xml"])
    s = imp.spec
    assert (s.gpu, s.gpus_per_node, s.scaleup, s.nvswitch_chips) == ("H100", 8, "nvswitch", 4)
    assert topo.n_gpus == 8 and all(_nvlinks_per_gpu(topo, g) == 18 for g in range(8))
    nics = _node_nics(topo)
    assert len(nics) == 8 and {_nic_gbps(topo, n) for n in nics} == {200.0}
    assert s.fabric == "roce"
    assert all(_switch_of(topo, int(topo.gpu_device[g])) & _switch_of(topo, int(topo.gpu_nic[g])) for g in range(8))
    _all_checks_hold(imp, topo)
    assert not imp.gaps


def test_azure_ndv5_needs_the_gpu_and_keeps_one_nic_per_gpu_switch():
    # ndv5-topo.xml: 8 bridges on 2 CPUs, each with one 3D controller (GPU) and one 0x0207 (InfiniBand) NIC.
    with pytest.raises(Exception, match="--gpu"):
        import_cluster([FIX / "xml/azure-ndv5-topo.xml"])
    imp, topo = _built(["xml/azure-ndv5-topo.xml"], gpu="H100", nodes=2)
    s = imp.spec
    assert (s.gpus_per_node, s.nodes, s.nics_per_node, s.fabric, s.pcie_switches_per_node, s.cpus_per_node) == \
        (8, 2, 8, "infiniband", 8, 2)
    assert s.pcie_switch == "pcie-switch5"  # link_speed="32.0 GT/s PCIe" = Gen5
    assert all(_switch_of(topo, int(topo.gpu_device[g])) == _switch_of(topo, int(topo.gpu_nic[g])) for g in range(8))
    assert any("NIC rate" in a for a in imp.assumptions)  # the file gives no NIC speed
    _all_checks_hold(imp, topo)


def test_azure_ndv4_with_its_aks_log_two_nodes_no_gpudirect():
    # ndv4-topo.xml: 4 NUMA nodes, each one bridge with 2 GPUs + 2 IB NICs (AMD, 16 GT/s).
    # The AKS log: A100-SXM4-40GB, nRanks 16 nNodes 2 localRanks 8, 'via NET/IB/9' (no GDRDMA), P2P/CUMEM/read,
    # 'NVLS multicast support is not available'.
    imp, topo = _built(["xml/azure-ndv4-topo.xml", "logs/azure-aks-30-ndv4-excerpts.log"])
    s = imp.spec
    assert (s.gpu, s.nodes, s.gpus_per_node, s.nics_per_node) == ("A100-40GB", 2, 8, 8)
    assert (s.pcie_switches_per_node, s.pcie_switch, s.cpus_per_node) == (4, "pcie-switch4", 4)
    assert (s.gpudirect, s.nvls, s.p2p) == (False, False, True)
    assert topo.n_gpus == 16
    # GPUs 2k, 2k+1 and NICs 2k, 2k+1 share switch k, as the XML nests them
    for g in range(8):
        assert _switch_of(topo, int(topo.gpu_device[g])) == _switch_of(topo, int(topo.gpu_device[g ^ 1]))
        assert _switch_of(topo, int(topo.gpu_device[g])) == _switch_of(topo, int(topo.gpu_nic[g]))
    assert s.cpu_vendor == "amd" and not any("AMD" in gap for gap in imp.gaps)  # the XML's AMD hosts, said
    assert topo.features["cpu_vendor"] == "amd"
    _all_checks_hold(imp, topo)


def test_azure_ndv2_single_nic_for_eight_gpus_on_root_ports():
    # ndv2-topo.xml: 8 GPUs and one IB NIC directly under the CPUs (no bridge): NIC 0101 on NUMA 0.
    imp, topo = _built(["xml/azure-ndv2-topo.xml"], gpu="V100")
    s = imp.spec
    assert (s.gpus_per_node, s.nics_per_node, s.pcie_switches_per_node, s.scaleup) == (8, 1, 0, "nvlink-mesh")
    assert s.gpudirect is False  # GPU-NIC path crosses the CPU (PHB / SYS), beyond NCCL's default PXB
    assert len({int(topo.gpu_nic[g]) for g in range(8)}) == 1
    _all_checks_hold(imp, topo)


def test_aws_p5_xml_and_log_four_efa_nics_per_gpu():
    # p5.48xl-topo.xml: 8 <gpu sm="90">, each bridge with 4 x <net speed="100000">; the log: 16 ranks on 2 hosts,
    # 'NET/OFI Selected Provider is efa (found 32 nics)', '16 nvls channels', 'via NET/AWS Libfabric/0/GDRDMA'.
    imp, topo = _built(["xml/aws-p5.48xl-topo.xml", "logs/aws-p5-efa-16gpu-nccl-info.log"])
    s = imp.spec
    assert (s.gpu, s.nodes, s.gpus_per_node) == ("H100", 2, 8)
    assert (s.nics_per_node, s.nic_gbps, s.fabric, s.gpudirect, s.nvls) == (32, 100.0, "ethernet", True, True)
    assert (s.transport, s.nic, s.routing, s.nics_per_gpu) == ("efa", "efa-p5", "adaptive", 4)
    assert sum(_nic_gbps(topo, n) for n in _node_nics(topo)) == 32 * 100  # the node's 3.2 Tb/s
    assert not imp.gaps  # EFA and its 4 devices per GPU are cluster fields now
    # each GPU's 4 EFA devices sit on its own PCIe switch, and it sends on all of them
    for g in range(8):
        first = int(topo.gpu_nic[g])
        assert all(_switch_of(topo, first + j) == _switch_of(topo, int(topo.gpu_device[g])) for j in range(4))
    _all_checks_hold(imp, topo)
    # 4 x 100G EFA per GPU carry what one 400G NDR NIC does at 1 GiB; at 64 KiB each network step costs EFA's
    # 20 us (aws-ofi-nccl's cost model) instead of NCCL's hwLat
    import fabricsim as fs

    ours = [r.time_s for r in fs.perf(fs.cluster(s), "all_reduce", [1 << 16, 1 << 30]).rows]
    dgx = [r.time_s for r in fs.perf(fs.cluster("dgx-h100", nodes=2), "all_reduce", [1 << 16, 1 << 30]).rows]
    assert ours[0] > 1.2 * dgx[0] and abs(ours[1] / dgx[1] - 1) < 0.02


def test_aws_p4d_one_nic_per_two_gpus_on_gen3_links():
    # p4d-24xl-topo.xml: 4 bridges, each 2 GPUs + 1 Ethernet NIC, all at 8 GT/s: the catalog's 4-port Gen3 switch
    # (the DGX-1's) holds 2 GPUs + a NIC + its uplink, so the links stay Gen3 (the A100 rated Gen4 is the gap left).
    imp, topo = _built(["xml/aws-p4d-24xl-topo.xml"], gpu="A100-40GB")
    s = imp.spec
    assert (s.gpus_per_node, s.nics_per_node, s.pcie_switches_per_node, s.pcie_switch) == (8, 4, 4, "pcie-switch3-64")
    assert [int(topo.gpu_nic[g]) for g in range(8)] == [int(topo.gpu_nic[g - g % 2]) for g in range(8)]
    assert s.pcie_gen == 3 and not imp.gaps  # the 8 GT/s links are said: the GPUs' links run at Gen3
    assert {topo.techs[int(topo.link_tech[i])] for g in range(8) for i in topo.links_from(int(topo.gpu_device[g]))
            if topo.dev_kind[topo.link_dst[i]] == DeviceKind.PCIE_SWITCH} == {"pcie3"}
    _all_checks_hold(imp, topo)


def test_nvidia_smi_h100_nvswitch_fabric_and_pix_nics():
    # NV18 between every pair (7 x 18 > 18 links: an NVSwitch fabric); NICk is PIX to GPUk only.
    imp, topo = _built(["smi/sglang-30401-h100-topo-m.txt"])
    m = imp.machine
    assert dict(m.nvlink_fabric) == {g: 18 for g in range(8)} and not m.nvlinks
    assert [n.name for n in m.nics] == [f"mlx5_{k}" for k in range(8)]
    assert {(g, k) for g, k, t in m.affinity if t == "PIX"} == {(g, f"mlx5_{g}") for g in range(8)}
    assert [g.numa for g in m.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert imp.spec.pcie_switches_per_node == 8 and all(_nvlinks_per_gpu(topo, g) == 18 for g in range(8))
    _all_checks_hold(imp, topo)


def test_ibstat_ports_models_and_front_end_nic():
    m = read_machine(FIX / "ib/gpud-ibstat-h100-all-active.txt")
    ib = [n for n in m.nics if n.link_layer == "infiniband"]
    assert [n.name for n in ib] == ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
    assert {(n.gbps, n.model, n.active) for n in ib} == {(400.0, "cx7", True)}
    (bond,) = [n for n in m.nics if n.link_layer == "ethernet"]
    assert (bond.name, bond.gbps, bond.model, bond.transport) == ("mlx5_bond_0", 200.0, "bf3", "roce")


def test_ibstat_with_a_gpu_count_leaves_the_front_end_nic_out():
    # ibstat says nothing of GPUs; with an 8-GPU H100 log of the same kind the 8 NDR ports are the compute NICs.
    from fabricsim.importers.machine import Gpu, Machine, merge
    from fabricsim.importers.mapping import to_spec

    ib = read_machine(FIX / "ib/gpud-ibstat-h100-all-active.txt")
    gpus = Machine(sources=("8 GPUs",), gpus=tuple(Gpu(index=g, model="H100") for g in range(8)))
    imp = to_spec(merge([gpus, ib]))
    assert (imp.spec.nics_per_node, imp.spec.nic, imp.spec.nic_gbps) == (8, "cx7", 400.0)
    assert any("mlx5_bond_0" in a for a in imp.assumptions)


def test_ibstatus_and_ibv_devinfo_rates():
    m = read_machine(FIX / "ib/gpud-ibstatus-a100-all-active.txt")
    assert [(n.name, n.gbps, n.link_layer) for n in m.nics][:2] == [("mlx5_0", 200.0, "infiniband"),
                                                                  ("mlx5_1", 200.0, "infiniband")]
    assert (m.nics[-1].name, m.nics[-1].gbps, m.nics[-1].link_layer) == ("mlx5_8", 40.0, "ethernet")
    d = read_machine(FIX / "ib/ucx-9908-ibv-devinfo-vv-a100.txt")
    assert [(n.name, n.gbps, n.model, n.active) for n in d.nics] == [("mlx5_0", 200.0, "cx6", True),
                                                                    ("mlx5_1", 0.0, "cx6", False)]


def test_nccl_logs_facts():
    p5 = read_machine(FIX / "logs/aws-p5-efa-16gpu-nccl-info.log")
    assert (p5.ranks, p5.nodes, p5.local_ranks, p5.nccl_version) == (16, 2, 8, "2.20.3")
    assert (p5.net, p5.net_provider, p5.net_nic_count, p5.gdr, p5.p2p, p5.nvls, p5.channels) == \
        ("OFI", "efa", 32, True, True, True, 16)
    assert {g.model for g in p5.gpus} == {"H100"} and len(p5.gpus) == 8
    aks = read_machine(FIX / "logs/azure-aks-30-ndv4-excerpts.log")
    assert (aks.ranks, aks.nodes, aks.local_ranks, aks.gdr, aks.p2p, aks.nvls) == (16, 2, 8, False, True, False)
    assert aks.gpus[0].model == "A100-40GB"


@pytest.mark.parametrize("files, kw, preset, nodes", [
    (["xml/ibm-vpc-h100-topo.xml"], {}, "dgx-h100", 1),
    (["xml/azure-ndv5-topo.xml"], {"gpu": "H100", "nodes": 2}, "dgx-h100", 2),
    (["xml/azure-ndv4-topo.xml"], {"gpu": "A100-80GB", "nodes": 2}, "dgx-a100", 2),
    (["smi/sglang-30401-h100-topo-m.txt"], {"nodes": 2}, "dgx-h100", 2),
])
def test_perf_on_imported_dgx_class_machines_within_10_percent_of_the_preset(files, kw, preset, nodes):
    import fabricsim as fs

    imp, _topo = _built(files, **kw)
    sizes = [1 << 20, 1 << 24, 1 << 28, 1 << 30]
    ours = [r.time_s for r in fs.perf(fs.cluster(imp.spec), "all_reduce", sizes).rows]
    theirs = [r.time_s for r in fs.perf(fs.cluster(preset, nodes=nodes), "all_reduce", sizes).rows]
    ratio = np.array(ours) / np.array(theirs)
    assert np.all(np.abs(ratio - 1) <= 0.10), (imp.spec, ratio)
