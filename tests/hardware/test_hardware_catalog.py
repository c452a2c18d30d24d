"""Catalog integrity, unit sanity against published figures, lookups and errors."""

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricsim import hardware
from fabricsim.errors import FabricsimError
from fabricsim.hardware import GPUS, LINKS, NICS, SWITCHES
from fabricsim.hardware.gpus import ARCHS
from fabricsim.hardware.links import KINDS
from fabricsim.hardware.switches import REDUCTIONS

CATALOGS = {"GPU": GPUS, "link": LINKS, "switch": SWITCHES, "NIC": NICS}

REQUIRED = {
    "GPU": "P100 V100 RTX2080Ti A100-40GB A100-80GB H100 H100-PCIe H800 H200 B200 B300 GB200 GB300 L40S RTX4090 "
           "RTX5090 MI300X",
    "link": "pcie3 pcie4 pcie5 pcie6 nvlink1 nvlink2 nvlink3 nvlink4 nvlink5 nvlink-c2c ib-edr ib-hdr ib-ndr ib-xdr "
            "eth-100g eth-200g eth-400g eth-800g xgmi upi",
    "switch": "nvswitch1 nvswitch2 nvswitch3 nvswitch4 sb7800 qm8700 qm9700 q3400 sn5600 pcie-switch4 pcie-switch5",
    "NIC": "cx5 cx6 cx7 cx8 bf3",
}
ALL_ENTRIES = [(kind, entry) for kind, cat in CATALOGS.items() for entry in cat.values()]


@pytest.mark.parametrize("kind", REQUIRED)
def test_required_keys_present(kind):
    assert set(REQUIRED[kind].split()) <= set(CATALOGS[kind])


@pytest.mark.parametrize("kind", CATALOGS)
def test_keys_match_names(kind):
    for key, entry in CATALOGS[kind].items():
        assert entry.name == key


@pytest.mark.parametrize("kind,entry", ALL_ENTRIES, ids=lambda x: getattr(x, "name", x))
def test_every_entry_sourced_and_frozen(kind, entry):
    assert entry.source.strip()
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.name = "x"


def test_every_link_reference_exists():
    refs = [g.scaleup_link for g in GPUS.values() if g.scaleup_link] + [g.pcie_link for g in GPUS.values()]
    refs += [g.c2c_link for g in GPUS.values() if g.c2c_link]
    refs += [s.port_link for s in SWITCHES.values()]
    refs += [n.port_link for n in NICS.values()] + [n.pcie_link for n in NICS.values()]
    assert set(refs) <= set(LINKS)


def test_field_domains():
    for link in LINKS.values():
        assert link.kind in KINDS
        assert link.bw > 0 and 0 < link.efficiency <= 1 and 0 < link.latency < 1e-6
        assert link.efficiency_source.strip()
        assert (link.line_rate_gbps is not None) == (link.kind in ("infiniband", "ethernet"))
    for gpu in GPUS.values():
        assert gpu.arch in ARCHS
        assert gpu.bf16_flops > 0 and gpu.fp8_flops >= 0 and gpu.hbm_bytes > 0 and gpu.hbm_bw > 0 and gpu.tdp_w > 0
        assert (gpu.scaleup_link is None) == (gpu.scaleup_links == 0)
        assert LINKS[gpu.pcie_link].kind == "pcie"
    for sw in SWITCHES.values():
        assert sw.reduction in REDUCTIONS and sw.ports > 0 and 0 < sw.hop_latency < 1e-6
        assert LINKS[sw.port_link].kind == {"nvswitch": "nvlink"}.get(sw.kind, sw.kind)
    for nic in NICS.values():
        assert LINKS[nic.port_link].kind in ("infiniband", "ethernet") and nic.ports >= 1
        assert LINKS[nic.pcie_link].kind == "pcie" and 0 < nic.latency < 1e-5


def test_published_figures():
    assert GPUS["H100"].bf16_flops == pytest.approx(989.4e12)
    nvl5 = LINKS["nvlink5"]
    b200 = GPUS["B200"]
    assert b200.scaleup_links * nvl5.bw == pytest.approx(900e9)  # per direction
    assert 2 * b200.scaleup_links * nvl5.bw == pytest.approx(1.8e12)  # NVIDIA's bidirectional figure
    h100 = GPUS["H100"]
    assert 2 * h100.scaleup_links * LINKS[h100.scaleup_link].bw == pytest.approx(900e9)
    assert 2 * GPUS["H800"].scaleup_links * LINKS["nvlink4"].bw == pytest.approx(400e9)
    assert 2 * GPUS["A100-80GB"].scaleup_links * LINKS["nvlink3"].bw == pytest.approx(600e9)
    assert 2 * GPUS["V100"].scaleup_links * LINKS["nvlink2"].bw == pytest.approx(300e9)
    assert 2 * GPUS["MI300X"].scaleup_links * LINKS["xgmi"].bw == pytest.approx(896e9)
    assert LINKS["pcie5"].bw == pytest.approx(63e9, rel=0.01)
    assert LINKS["pcie4"].bw == pytest.approx(31.5e9, rel=0.01)
    assert LINKS["pcie6"].bw == pytest.approx(121e9)
    qm9700 = SWITCHES["qm9700"]
    # NVIDIA's IB aggregates count both directions (QM9700 51.2, QM8700 16 Tb/s); Spectrum-4 and Q3400 one.
    assert 2 * qm9700.ports * LINKS[qm9700.port_link].bw * 8 == pytest.approx(51.2e12)
    assert 2 * SWITCHES["qm8700"].ports * LINKS["ib-hdr"].bw * 8 == pytest.approx(16e12)
    assert LINKS["ib-xdr"].bw * 8 == pytest.approx(800e9) and LINKS["ib-xdr"].line_rate_gbps == 800
    q3400 = SWITCHES["q3400"]
    assert q3400.ports * LINKS[q3400.port_link].bw * 8 == pytest.approx(115.2e12)
    sn5600 = SWITCHES["sn5600"]
    assert sn5600.ports * LINKS[sn5600.port_link].bw * 8 == pytest.approx(51.2e12)
    assert SWITCHES["nvswitch4"].ports * 2 * LINKS["nvlink5"].bw == pytest.approx(7.2e12)


def test_efficiencies_reproduce_nccl_and_maintainer_figures():
    # NCCL per-link NVLink bandwidth (SM90 20.6, SM100 40.1 GB/s) and sjeaugey's 370 GB/s for H100.
    h100 = GPUS["H100"]
    nvl4 = LINKS["nvlink4"]
    assert h100.scaleup_links * nvl4.bw * nvl4.efficiency == pytest.approx(370.8e9)
    assert GPUS["B200"].scaleup_links * LINKS["nvlink5"].bw * LINKS["nvlink5"].efficiency == pytest.approx(721.8e9)
    assert GPUS["A100-80GB"].scaleup_links * LINKS["nvlink3"].bw * LINKS["nvlink3"].efficiency == pytest.approx(240e9)
    for gen, nccl in ((3, 12e9), (4, 24e9), (5, 48e9), (6, 96e9)):
        link = LINKS[f"pcie{gen}"]
        assert link.bw * link.efficiency == pytest.approx(nccl)
    for name, gbs in (("ib-edr", 12e9), ("ib-hdr", 24e9), ("ib-ndr", 48e9)):
        assert LINKS[name].bw * LINKS[name].efficiency == pytest.approx(gbs)
    assert LINKS["upi"].bw * LINKS["upi"].efficiency == pytest.approx(22e9)


def test_ampere_and_older_have_no_fp8_and_hopper_on_does():
    for gpu in GPUS.values():
        if gpu.arch in ("pascal", "volta", "turing", "ampere"):
            assert gpu.fp8_flops == 0.0
        else:
            assert gpu.fp8_flops > gpu.bf16_flops


def test_grace_superchips_have_c2c():
    assert {g.name for g in GPUS.values() if g.c2c_link} == {"GB200", "GB300"}
    assert LINKS["nvlink-c2c"].bw * 2 == pytest.approx(900e9)


@pytest.mark.parametrize(
    "alias,key",
    [
        ("H100-SXM", "H100"), ("H100-80GB", "H100"), ("h100 sxm5", "H100"), ("NVIDIA H100 80GB HBM3", "H100"),
        ("A100-SXM4-80GB", "A100-80GB"), ("A100-80GB", "A100-80GB"), ("A100-SXM4-40GB", "A100-40GB"),
        ("RTX-2080Ti", "RTX2080Ti"), ("GeForce RTX 4090", "RTX4090"), ("AMD Instinct MI300X", "MI300X"),
        ("gb200", "GB200"), ("Tesla V100-SXM2-32GB", "V100"), ("h100-pcie", "H100-PCIe"),
    ],
)
def test_gpu_aliases(alias, key):
    assert hardware.get_gpu(alias) is GPUS[key]


@pytest.mark.parametrize(
    "getter,alias,key",
    [
        (hardware.get_link, "PCIe Gen5", "pcie5"), (hardware.get_link, "NVLink 4.0", "nvlink4"),
        (hardware.get_link, "NDR", "ib-ndr"), (hardware.get_link, "400GbE", "eth-400g"),
        (hardware.get_link, "NVLink-C2C", "nvlink-c2c"),
        (hardware.get_switch, "QM9790", "qm9700"), (hardware.get_switch, "Quantum-X800", "q3400"),
        (hardware.get_switch, "PEX89144", "pcie-switch5"), (hardware.get_switch, "NVSwitch Gen3", "nvswitch3"),
        (hardware.get_nic, "ConnectX-7", "cx7"), (hardware.get_nic, "BlueField-3", "bf3"),
    ],
)
def test_other_aliases(getter, alias, key):
    assert getter(alias).name == key


def test_aliases_never_shadow_each_other():
    from fabricsim.hardware import catalog

    for _, (cat, index, _) in catalog._INDEX.items():
        for key in cat:
            assert index[catalog._norm(key)] == key


@given(
    st.sampled_from(sorted(GPUS)), st.lists(st.booleans(), min_size=12, max_size=12), st.sampled_from(["", " ", "-"])
)
def test_gpu_lookup_ignores_case_and_punctuation(key, upper, sep):
    spelled = "".join(c.upper() if u else c.lower() for c, u in zip(key, upper + [False] * len(key)))
    spelled = spelled.replace("-", sep)
    assert hardware.get_gpu(spelled) is GPUS[key]


@pytest.mark.parametrize(
    "getter,what,module",
    [
        (hardware.get_gpu, "GPU", "gpus.py"), (hardware.get_link, "link", "links.py"),
        (hardware.get_switch, "switch", "switches.py"), (hardware.get_nic, "NIC", "nics.py"),
    ],
)
def test_unknown_names_list_known_ones(getter, what, module):
    with pytest.raises(FabricsimError) as err:
        getter("X9000")
    msg = str(err.value)
    assert f"unknown {what} 'X9000'" in msg and module in msg and "\n" not in msg
    assert all(k in msg for k in CATALOGS[what])


def test_link_for_speed():
    assert [hardware.ib_link_for_speed(g) for g in (100, 200, 400, 800)] == ["ib-edr", "ib-hdr", "ib-ndr", "ib-xdr"]
    assert hardware.eth_link_for_speed(400.0) == "eth-400g"
    for fn in (hardware.ib_link_for_speed, hardware.eth_link_for_speed):
        with pytest.raises(FabricsimError, match="100, 200, 400, 800 Gb/s"):
            fn(300)


@pytest.mark.parametrize("kind", ["infiniband", "ethernet", "roce"])
@pytest.mark.parametrize("gbps", [100, 200, 400, 800])
def test_nic_for_speed_delivers_that_speed(kind, gbps):
    nic = hardware.nic_for_speed(gbps, kind)
    port = LINKS[nic.port_link]
    assert port.line_rate_gbps * nic.ports == gbps
    assert port.kind == ("infiniband" if kind == "infiniband" else "ethernet")


def test_nic_generations():
    assert [hardware.nic_for_speed(g).name for g in (100, 200, 400, 800)] == ["cx5", "cx6", "cx7", "cx8"]
    assert NICS["cx8"].pcie_link == "pcie6"


def test_nic_for_speed_errors():
    with pytest.raises(FabricsimError, match="supported speeds"):
        hardware.nic_for_speed(1600)
    with pytest.raises(FabricsimError, match="unknown network kind 'omnipath'"):
        hardware.nic_for_speed(400, "omnipath")


def test_nccltests_buffer_limit_follows_its_reserve_rule():
    from fabricsim.hardware.memory import GiB, fit_note, nccltests_max_bytes

    h100 = hardware.get_gpu("H100")  # 80 GB: 5 x 16 GiB started, reserve capped at 4 GiB, 1 GiB more, 3 buffers
    assert nccltests_max_bytes(h100) == (80 * 10**9 - 5 * GiB) // 3
    assert nccltests_max_bytes(h100, datacheck=False) == (80 * 10**9 - 5 * GiB) // 2
    p100 = hardware.get_gpu("P100")  # 16 GB: one 16 GiB block started -> 1 GiB reserve
    assert nccltests_max_bytes(p100) == (16 * 10**9 - 2 * GiB) // 3
    assert fit_note(h100, 1 << 30) is None
    assert "HBM" in fit_note(h100, 1 << 48) and f"{nccltests_max_bytes(h100):,}" in fit_note(h100, 1 << 48)
