"""Every preset builds, respects switch radix, and gives hand-computed counts and bisection."""

import numpy as np
import pytest

from fabricsim import hardware
from fabricsim.topology import PRESETS, DeviceKind, load_cluster
from fabricsim.topology.summary import summarize

GB = 1e9
# preset -> (GPUs, NVSwitch chips, PCIe switches, NICs, bisection bytes/s per direction by hand)
EXPECTED = {
    "pcie-l40s-8": (8, 0, 4, 4, 22 * GB),  # socket link (UPI 22 GB/s) < 4 x PCIe4 x16
    "pcie-rtx4090-8": (8, 0, 4, 2, 22 * GB),
    "pcie-rtx5090-8": (8, 0, 4, 2, 22 * GB),
    "dgx1-p100": (8, 0, 4, 4, 4 * 20 * GB),  # quads {0..3} | {4..7}: 4 single NVLink1 links
    "dgx1-v100": (8, 0, 4, 4, 6 * 25 * GB),  # min balanced cut of the V100 cube-mesh: 6 links
    "dgx-a100": (8, 6, 4, 8, 4 * 12 * 25 * GB),  # n/2 GPUs x 300 GB/s
    "dgx-h100": (8, 4, 4, 8, 4 * 18 * 25 * GB),
    "hgx-h200": (8, 4, 4, 8, 4 * 18 * 25 * GB),
    "hgx-h800": (8, 4, 4, 8, 4 * 8 * 25 * GB),
    "dgx-b200": (8, 2, 4, 8, 4 * 18 * 50 * GB),
    "dgx-b300": (8, 2, 8, 8, 4 * 18 * 50 * GB),  # one PCIe Gen6 switch per GPU: the one inside its CX-8
    "gb200-nvl72": (72, 18, 0, 72, 36 * 900 * GB),  # 32.4 TB/s per direction
    "gb300-nvl72": (72, 18, 0, 72, 36 * 900 * GB),
    "superpod-h100": (256, 128, 128, 256, 256 * 50 * GB / 2),  # 1:1 fat tree: half the NIC bandwidth
    "superpod-b200": (256, 64, 128, 256, 256 * 50 * GB / 2),
    "superpod-gb200": (576, 144, 0, 576, 576 * 50 * GB / 2),
}


def test_every_preset_is_listed():
    assert set(PRESETS) == set(EXPECTED)
    assert all(desc and "\n" not in desc for desc, _ in PRESETS.values())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_counts_and_bisection(name):
    topo = load_cluster(name)
    gpus, chips, psw, nics, bisection = EXPECTED[name]
    s = summarize(topo)
    assert s["gpus"] == topo.n_gpus == gpus
    assert s["switches"]["nvswitch_chips"] == chips
    assert s["switches"]["pcie_switches"] == psw
    assert s["switches"]["nics"] == nics
    assert s["bisection_bw"] == pytest.approx(bisection)
    _check_radix(topo)
    assert np.array_equal(topo.link_src[0::2], topo.link_dst[1::2])
    assert topo.dev_kind[topo.gpu_device].tolist() == [DeviceKind.GPU] * gpus
    assert (topo.dev_kind[topo.gpu_nic] == DeviceKind.NIC).all()


def _check_radix(topo):
    used = np.bincount(topo.link_src, weights=topo.link_count, minlength=topo.n_devices)
    for d in np.flatnonzero(np.isin(topo.dev_kind, [DeviceKind.NVSWITCH, DeviceKind.FABRIC_SWITCH, DeviceKind.PCIE_SWITCH])):
        sw = hardware.SWITCHES[topo.parts[topo.dev_part[d]]]
        assert used[d] <= sw.ports * topo.dev_units[d]


def _tiers(topo):
    fs = topo.dev_kind == DeviceKind.FABRIC_SWITCH
    return [int((fs & (topo.dev_level == lvl)).sum()) for lvl in (1, 2, 3)]


# NV-B200-RA (docs/SOURCES.md): SUs -> leaf / spine / core
@pytest.mark.parametrize("sus,tiers", [(2, [16, 8, 0]), (4, [32, 16, 0]), (8, [64, 32, 0]), (16, [128, 128, 64]),
                                       (32, [256, 256, 128]), (64, [512, 512, 256])])
def test_superpod_b200_matches_reference_architecture(sus, tiers):
    topo = load_cluster("superpod-b200", nodes=32 * sus)
    assert _tiers(topo) == tiers
    _check_radix(topo)


# NV-H100-RA Table 4: 1 SU 8/4, 2 SU 16/8, 3 SU 24/16, 4 SU 32/16; core layer above 4 SU
@pytest.mark.parametrize("sus,tiers", [(1, [8, 4, 0]), (2, [16, 8, 0]), (3, [24, 16, 0]), (4, [32, 16, 0])])
def test_superpod_h100_matches_reference_architecture(sus, tiers):
    assert _tiers(load_cluster("superpod-h100", nodes=32 * sus)) == tiers


def test_superpod_h100_adds_core_above_four_sus():
    topo = load_cluster("superpod-h100", nodes=32 * 8)
    assert topo.features["fabric_levels"] == 3 and _tiers(topo)[2] > 0
    _check_radix(topo)


def test_rail_optimised_su_cabling():
    topo = load_cluster("superpod-h100", nodes=64)
    nic_leaf = topo.link_dst[(topo.dev_kind[topo.link_src] == DeviceKind.NIC)
                             & (topo.dev_kind[topo.link_dst] == DeviceKind.FABRIC_SWITCH)]
    rail = topo.dev_local[topo.devices_of(DeviceKind.NIC)]
    node = topo.dev_node[topo.devices_of(DeviceKind.NIC)]
    assert np.array_equal(topo.dev_local[nic_leaf], rail)  # rail k -> leaf k of its SU
    assert np.array_equal(topo.dev_pod[nic_leaf], node // 32)
    leaves = topo.devices_of(DeviceKind.FABRIC_SWITCH)[:16]
    down = np.bincount(nic_leaf, minlength=topo.n_devices)[leaves]
    assert (down == 32).all()


def test_oversubscription_halves_bisection_and_uplinks():
    from dataclasses import replace

    from fabricsim.topology import build, preset_spec

    spec = preset_spec("superpod-h100", nodes=64)
    full = summarize(build(spec))
    half = summarize(build(replace(spec, oversubscription=2.0)))
    assert half["bisection_bw"] == pytest.approx(full["bisection_bw"] / 2)
    assert full["bisection_bw"] == pytest.approx(512 * 50 * GB / 2)


def test_multi_rack_nvl72_and_gpu_nic_locality():
    topo = load_cluster("gb200-nvl72", gpus=144)
    assert topo.n_gpus == 144 and np.unique(topo.gpu_domain).size == 2
    # each GPU's NIC and CPU are in its own tray
    assert np.array_equal(topo.dev_node[topo.gpu_nic], topo.gpu_node)
    assert np.array_equal(topo.dev_node[topo.gpu_cpu], topo.gpu_node)
    assert summarize(topo)["bisection_bw"] == pytest.approx(144 * 50 * GB / 2)


def test_nic_shares_pcie_switch_with_its_gpu():
    topo = load_cluster("dgx-h100")
    for r in range(8):
        up_gpu = topo.link_dst[topo.links_from(int(topo.gpu_device[r]))]
        up_nic = topo.link_dst[topo.links_from(int(topo.gpu_nic[r]))]
        psw = set(up_gpu[topo.dev_kind[up_gpu] == DeviceKind.PCIE_SWITCH])
        assert psw and psw <= set(up_nic)


def test_dgx1_v100_mesh_link_multiplicity():
    topo = load_cluster("dgx1-v100")
    gg = (topo.dev_kind[topo.link_src] == DeviceKind.GPU) & (topo.dev_kind[topo.link_dst] == DeviceKind.GPU)
    per_gpu = np.bincount(topo.link_src[gg], weights=topo.link_count[gg], minlength=8)
    assert per_gpu.tolist() == [6] * 8 and topo.link_count[gg].sum() == 2 * 24


def test_rail_planes_at_131k_gpus():
    topo = load_cluster("superpod-h100", gpus=131072)
    assert topo.n_gpus == 131072 and topo.features["fabric_planes"] == 8
    _check_radix(topo)


@pytest.mark.parametrize("name,gen", [("dgx1-p100", "pcie3"), ("dgx1-v100", "pcie3"), ("dgx-b300", "pcie6"),
                                      ("dgx-h100", "pcie5"), ("dgx-a100", "pcie4")])
def test_pcie_parts_match_the_host_generation(name, gen):
    """Issue 12 item 6: DGX-1 (Gen3) listed a Gen4 switch part; dgx-b300 printed a Gen6 121 GB/s/dir PCIe figure from
    the catalog while every link was Gen5. Each preset's PCIe switches, links and `topo show` figure now agree."""
    topo = load_cluster(name)
    s = summarize(topo)
    pcie = {t for t, lt in s["links"].items() if lt["kind"] == "pcie"}
    assert pcie == {gen}
    switches = {p["port_link"] for p in s["switch_parts"].values() if p["kind"] == "pcie"}
    assert switches == {gen}
    assert s["pcie_bw_per_gpu"] == s["links"][gen]["bw"] == s["host_link_bw_per_gpu"]
