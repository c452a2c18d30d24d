"""Interconnect what-ifs: the same cluster with one part of its fabric changed (`train --compare`)."""

from __future__ import annotations

from dataclasses import replace

from fabricsim.errors import FabricsimError
from fabricsim.topology.spec import ClusterSpec

NVL72_TRAY_GPUS, NVL72_DOMAIN, NVL72_SWITCH_CHIPS = 4, 72, 18  # GB200 NVL72: 18 trays x 4 GPUs, 18 NVSwitch chips (hardware.md s3a)


def _pcie(s: ClusterSpec) -> ClusterSpec:
    return replace(s, scaleup="pcie", domain_size=s.gpus_per_node, nvswitch_chips=0, nvls=False)


def _xdr(s: ClusterSpec) -> ClusterSpec:
    if s.fabric == "none":
        raise FabricsimError(f"cluster {s.name} has no scale-out fabric to upgrade to XDR: drop 'xdr' from --compare")
    # ConnectX-8 800 Gb/s XDR with Quantum-X800 Q3400 switches (hardware.md s5d, s7b DGX B300 XDR); Ethernet: SN5600 800G.
    if s.fabric == "infiniband":
        return replace(s, nic="cx8", nic_gbps=800.0, leaf_switch="q3400", spine_switch="q3400")
    return replace(s, nic="cx8-eth", nic_gbps=800.0, leaf_switch="sn5600", spine_switch="sn5600")


def _nvl72(s: ClusterSpec) -> ClusterSpec:
    nics = max(1, s.nics_per_node * NVL72_TRAY_GPUS // s.gpus_per_node) if s.nics_per_node else 0
    return replace(s, scaleup="nvl72", gpus_per_node=NVL72_TRAY_GPUS, domain_size=NVL72_DOMAIN,
                   nvswitch_chips=NVL72_SWITCH_CHIPS, nics_per_node=nics,
                   nodes=max(1, -(-s.nodes * s.gpus_per_node // NVL72_DOMAIN)) * (NVL72_DOMAIN // NVL72_TRAY_GPUS))


def _sharp(s: ClusterSpec) -> ClusterSpec:
    if s.fabric != "infiniband":
        raise FabricsimError(f"SHARP needs an InfiniBand fabric and {s.name} has '{s.fabric}': drop 'sharp' from --compare")
    return replace(s, sharp=not s.sharp)


VARIANTS = {
    "pcie": ("PCIe only (no NVLink)", _pcie),
    "xdr": ("XDR 800G NICs", _xdr),
    "nvl72": ("NVL72 domains", _nvl72),
    "sharp": ("SHARP toggled", _sharp),
    "no-gpudirect": ("GPUDirect RDMA off", lambda s: replace(s, gpudirect=False)),
}


def variant(spec: ClusterSpec, name: str) -> ClusterSpec:
    """`spec` with one interconnect feature changed; the name records the change."""
    if name not in VARIANTS:
        raise FabricsimError(f"unknown --compare option '{name}': use one of {', '.join(VARIANTS)}")
    return replace(VARIANTS[name][1](spec), name=f"{spec.name}+{name}")
