"""What a cluster file says a user knows: transport, NIC layout and ports, PCIe width and generation, NVLinks,
bridged pairs, host CPU vendor, racks; every impossible combination is one clear error, and each field is built."""

from __future__ import annotations

import json
from dataclasses import replace

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim import inputs
from fabricsim.errors import FabricsimError
from fabricsim.topology import ClusterSpec, DeviceKind, build, preset_spec
from fabricsim.tuner.nccl_system import system_from_topology

H100 = preset_spec("dgx-h100", nodes=2)
P5 = replace(H100, name="p5", nics_per_node=32, nic="efa-p5", nic_gbps=100.0, fabric="ethernet", transport="efa",
             rail_optimized=False, pcie_switches_per_node=8, leaf_switch="sn5600", spine_switch="sn5600",
             routing="adaptive")
A100_4NIC = replace(preset_spec("dgx-a100", nodes=2), nics_per_node=4, rail_optimized=False)


def _gpu_links(topo, gpu: int, kind: DeviceKind) -> list[int]:
    return [int(i) for i in topo.links_from(int(topo.gpu_device[gpu])) if topo.dev_kind[topo.link_dst[i]] == kind]


@pytest.mark.parametrize("changes, match", [
    (dict(transport="efa"), "transport 'efa' does not run on fabric 'infiniband'"),
    (dict(transport="efa", fabric="ethernet", nic="cx7-eth", leaf_switch="sn5600", spine_switch="sn5600"),
     "NIC cx7-eth does not run transport 'efa'.*efa-p5"),
    (dict(transport="ib", fabric="ethernet", nic="cx7-eth", leaf_switch="sn5600", spine_switch="sn5600"),
     "transport 'ib' needs fabric infiniband"),
    (dict(transport="tcpx"), "transport 'tcpx' does not run on fabric 'infiniband'"),
    (dict(transport="socket"), "transport 'socket' moves host memory only.*gpudirect: false"),
    (dict(fabric="none", transport="roce"), "transport 'roce' without a fabric"),
    (dict(nics_per_node=3), "nics_per_node 3 neither divides nor is a multiple of gpus_per_node 8"),
    (dict(nic_ports=2), "nic_ports 2: NIC cx7 has 1 port"),
    (dict(nvlinks=19), "nvlinks 19: a H100 has 18 NVLinks"),
    (dict(scaleup="pcie", nvswitch_chips=0, nvls=False, nvlinks=4), "GPUs on PCIe only have no NVLinks"),
    (dict(cpu_vendor="amd", host_cpu="grace"), "Grace is an Arm CPU"),
    (dict(pcie_switches_per_node=0, pcie_switch="", pcie_switch_lanes=8), "pcie_switch_lanes 8 needs PCIe switches"),
    (dict(rack_trays=18), "rack_trays and domain_racks describe NVL72-style racks"),
])
def test_impossible_combinations_are_one_clear_error(changes, match):
    with pytest.raises(FabricsimError, match=match):
        replace(H100, **changes)


@pytest.mark.parametrize("nics, gpus, offered", [(3, 8, "2, 4 or 8"), (8, 7, "7 or 14"), (12, 8, "8 or 16"),
                                                  (5, 6, "3 or 6")])
def test_a_nic_count_that_does_not_fit_offers_counts_that_do(nics, gpus, offered):
    with pytest.raises(FabricsimError, match=f"e.g. the compute NICs, {offered}\\)$"):
        replace(H100, nics_per_node=nics, gpus_per_node=gpus, domain_size=gpus)


def test_rack_fields_of_an_nvl72_rack():
    gb = preset_spec("gb200-nvl72")
    assert replace(gb, rack_trays=18).rack_trays == 18
    with pytest.raises(FabricsimError, match="uses 18 trays per rack but rack_trays is 16"):
        replace(gb, rack_trays=16)
    with pytest.raises(FabricsimError, match="domain_racks 4 does not divide the NVLink domain's 18 trays"):
        replace(gb, domain_racks=4)


@pytest.mark.parametrize("key, value, match", [
    ("transport", "verbs", "field 'transport' is 'verbs': it must be one of 'auto', 'efa', 'ib', 'roce', 'socket', 'tcpx', 'tcpxo'"),
    ("pcie_lanes", "12", "field 'pcie_lanes' is 12: it must be one of 1, 2, 4, 8, 16"),
    ("pcie_gen", "2", "field 'pcie_gen' is 2: it must be one of 0, 3, 4, 5, 6"),
    ("cpu_vendor", "arm", "field 'cpu_vendor' is 'arm': it must be one of 'amd', 'auto', 'intel'"),
    ("nic_ports", "0", "field 'nic_ports' is 0: it must be a whole number from 1 to 8"),
])
def test_field_types_and_ranges(key, value, match):
    text = H100.to_yaml() + f"{key}: {value}\n"
    with pytest.raises(FabricsimError, match=match):
        ClusterSpec.from_yaml(text)


def test_new_fields_round_trip_and_validate_against_the_schema():
    spec = replace(P5, pcie_lanes=8, pcie_gen=4, cpu_vendor="amd")
    text = spec.to_yaml()
    assert "transport: efa" in text and "pcie_lanes: 8" in text and "cpu_vendor: amd" in text
    assert "nic_ports" not in text  # at its default: written only when set
    assert ClusterSpec.from_yaml(text) == spec
    schema = inputs.json_schema(ClusterSpec)
    jsonschema.validate(spec.fields(), schema)  # plain data, as a file writes it
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**spec.fields(), "transport": "verbs"}, schema)


@settings(max_examples=20, deadline=None)
@given(lanes=st.sampled_from([1, 2, 4, 8, 16]), gen=st.sampled_from([0, 3, 4, 5]), vendor=st.sampled_from(["auto", "intel", "amd"]),
       nvlinks=st.integers(0, 18), nics=st.sampled_from([2, 4, 8, 16]))
def test_random_layouts_build_and_round_trip(lanes, gen, vendor, nvlinks, nics):
    spec = replace(H100, pcie_lanes=lanes, pcie_gen=gen, cpu_vendor=vendor, nvlinks=nvlinks, nics_per_node=nics,
                   rail_optimized=nics >= 8)
    assert ClusterSpec.from_yaml(spec.to_yaml()) == spec
    topo = build(spec)
    assert topo.features["nics_per_gpu"] == max(1, nics // 8)


def test_several_nics_per_gpu_on_its_own_switch():
    topo = build(P5)
    assert topo.features["nics_per_gpu"] == 4 and topo.features["transport"] == "efa"
    for g in range(8):
        up = {int(topo.link_dst[i]) for i in _gpu_links(topo, g, DeviceKind.PCIE_SWITCH)}
        for j in range(4):
            nic = int(topo.gpu_nic[g]) + j
            assert topo.dev_local[nic] == 4 * g + j
            assert {int(topo.link_dst[i]) for i in topo.links_from(nic)} & up


def test_dual_port_cards_share_one_x16_and_cable_each_port():
    oke = replace(A100_4NIC, nics_per_node=8, nic="cx6dx-eth", nic_gbps=100.0, nic_ports=2, fabric="roce",
                  leaf_switch="sn5600", spine_switch="sn5600")
    topo = build(oke)
    nics = [d for d in topo.devices_of(DeviceKind.NIC) if topo.dev_node[d] == 0]
    assert len(nics) == 16 and topo.features["nics_per_gpu"] == 2
    to_pcie = [i for d in nics[:2] for i in topo.links_from(d) if topo.dev_kind[topo.link_dst[i]] == DeviceKind.PCIE_SWITCH]
    assert topo.link_capacity[to_pcie].sum() == pytest.approx(topo.link_capacity[_gpu_links(topo, 0, DeviceKind.PCIE_SWITCH)][0])
    up = [i for d in nics for i in topo.links_from(d) if topo.dev_kind[topo.link_dst[i]] == DeviceKind.FABRIC_SWITCH]
    assert len(up) == 16 and set(topo.link_capacity[up]) == {12.5e9}
    system = system_from_topology(topo)
    assert (system.nics_per_node, system.nic_bw) == (8, 25.0)  # NCCL fuses a card's ports (NET_MERGE_LEVEL PORT)


def test_pcie_lanes_and_generation_per_gpu_and_switch_uplink():
    x8 = build(replace(H100, pcie_lanes=8, pcie_gen=4, pcie_switch_lanes=8))
    full = build(H100)
    (link,) = _gpu_links(x8, 0, DeviceKind.PCIE_SWITCH)
    (ref,) = _gpu_links(full, 0, DeviceKind.PCIE_SWITCH)
    assert x8.techs[int(x8.link_tech[link])] == "pcie4"
    assert x8.link_capacity[link] == pytest.approx(full.link_capacity[ref] / 2 / 2)  # Gen4 x8 = Gen5 x16 / 4
    assert system_from_topology(x8).pcie_bw == 12.0  # NCCL: width 8 x code 120 / 80
    sw = int(x8.link_dst[link])
    uplink = [i for i in x8.links_from(sw) if x8.dev_kind[x8.link_dst[i]] == DeviceKind.CPU]
    assert x8.link_capacity[uplink[0]] == pytest.approx(full.link_capacity[uplink[0]] / 2)


def test_bridged_pairs_with_some_nvlinks():
    # 4 A100 PCIe-style cards in two bridged pairs, 4 NVLinks per pair (e.g. a 2-GPU board with 4 links)
    spec = ClusterSpec(name="pairs", gpu="A100-80GB", nodes=1, gpus_per_node=4, scaleup="nvlink-bridge", domain_size=4,
                       nvlinks=4, pcie_switches_per_node=2, pcie_switch="pcie-switch4")
    topo = build(spec)
    gg = [i for i in range(topo.n_links) if topo.dev_kind[topo.link_src[i]] == DeviceKind.GPU
          and topo.dev_kind[topo.link_dst[i]] == DeviceKind.GPU]
    pairs = {(int(topo.link_src[i]), int(topo.link_dst[i]), int(topo.link_count[i])) for i in gg}
    g = topo.gpu_device
    assert pairs == {(g[0], g[1], 4), (g[1], g[0], 4), (g[2], g[3], 4), (g[3], g[2], 4)}
    from fabricsim.routing import PathKind, route_pairs
    kinds = route_pairs(topo, [0, 0], [1, 2]).path_kind
    assert kinds[0] == PathKind.NVLINK and kinds[1] in (PathKind.PCIE, PathKind.HOST)


def test_amd_hosts_join_their_sockets_by_infinity_fabric():
    topo = build(preset_spec("dgx-a100"))
    cpu = topo.devices_of(DeviceKind.CPU)
    links = [i for i in topo.links_from(int(cpu[0])) if topo.dev_kind[topo.link_dst[i]] == DeviceKind.CPU]
    assert topo.techs[int(topo.link_tech[links[0]])] == "amd-if" and topo.features["cpu_vendor"] == "amd"
    assert system_from_topology(topo).cpu_vendor == "amd"
    one_socket = build(replace(preset_spec("dgx-a100"), cpus_per_node=1))  # no socket link: the part says so
    assert system_from_topology(one_socket).cpu_vendor == "amd"
    assert system_from_topology(build(H100)).cpu_vendor == "intel"


def test_shared_nic_layout_and_what_nccl_sees():
    topo = build(A100_4NIC)
    assert [int(topo.dev_local[topo.gpu_nic[g]]) for g in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]
    system = system_from_topology(topo)
    assert (system.nics_per_node, system.nic_bw, system.gpu_nics) == (4, 25.0, 1)


def test_efa_nic_groups_are_one_nccl_device_per_gpu_with_the_plugin_latency():
    system = system_from_topology(build(P5))
    assert (system.nics_per_node, system.nic_bw, system.gpu_nics, system.latency_inter_us) == (8, 50.0, 1, 75.0)
    ib = system_from_topology(build(replace(P5, transport="roce", nic="cx5-eth", fabric="roce")))
    assert (ib.nics_per_node, ib.nic_bw, ib.gpu_nics, ib.latency_inter_us) == (32, 12.5, 4, 0.0)


def test_tcpx_is_an_unpack_network():
    a3 = replace(H100, nics_per_node=4, nic="gvnic-200", nic_gbps=200.0, fabric="ethernet", transport="tcpx",
                 rail_optimized=False, leaf_switch="sn5600", spine_switch="sn5600")
    system = system_from_topology(build(a3))
    assert system.net_unpack and system.latency_inter_us == 0.0
    from fabricsim.tuner import nccl_graph
    plain = replace(system, net_unpack=False)
    graphs = nccl_graph.search_graphs(system)
    assert nccl_graph.comm_channels(system, graphs) == 2 * nccl_graph.comm_channels(plain, nccl_graph.search_graphs(plain))
    assert np.all(build(a3).gpu_nic[:8:2] == build(a3).gpu_nic[1:8:2])  # two GPUs per gVNIC


def test_grace_trays_join_their_two_sockets_so_host_staged_traffic_routes():
    """P2P off on a GB200 tray: GPUs under different Graces meet in host memory over the socket link
    (NCCL's ARM_BW), instead of failing for want of a link."""
    spec = replace(preset_spec("gb200-nvl72"), nodes=1, scaleup="pcie", domain_size=4, nvswitch_chips=0,
                   nvls=False, p2p=False, fabric="none", nics_per_node=0, nic="", nic_gbps=0.0)
    topo = build(spec)
    cpu = topo.devices_of(DeviceKind.CPU)
    links = [i for i in topo.links_from(int(cpu[0])) if topo.dev_kind[topo.link_dst[i]] == DeviceKind.CPU]
    assert [topo.techs[int(topo.link_tech[i])] for i in links] == ["grace-sys"]
    from fabricsim.routing import route_pairs
    routes = route_pairs(topo, [0], [3])
    assert routes is not None
    import fabricsim as fs
    row = fs.perf(spec, "all_reduce", 1 << 28).rows[0]
    assert 0 < row.busbw < 6e9  # the ring crosses the 6 GB/s socket link: it sets the pace
