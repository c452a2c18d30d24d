"""Interconnect what-ifs: the same cluster with one part of its fabric changed (`train --compare`)."""

from __future__ import annotations

from dataclasses import replace

from fabricsim import hardware
from fabricsim.errors import FabricsimError, option
from fabricsim.topology.spec import ClusterSpec

NVL72_TRAY_GPUS, NVL72_DOMAIN, NVL72_SWITCH_CHIPS = 4, 72, 18  # GB200 NVL72: 18 trays x 4 GPUs, 18 NVSwitch chips (NV-GB200-UG)


def _pcie(s: ClusterSpec) -> ClusterSpec:
    return replace(s, scaleup="pcie", domain_size=s.gpus_per_node, nvswitch_chips=0, nvls=False)


def _xdr(s: ClusterSpec) -> ClusterSpec:
    if s.fabric == "none":
        raise FabricsimError(f"cluster {s.name} has no scale-out fabric to upgrade to XDR: drop 'xdr' from {option('compare')}")
    # ConnectX-8 800 Gb/s XDR with Quantum-X800 Q3400 switches (NV-ConnectX, NV-B300-RA XDR variant); Ethernet: SN5600 800G.
    if s.fabric == "infiniband":
        return replace(s, nic="cx8", nic_gbps=800.0, leaf_switch="q3400", spine_switch="q3400")
    # ConnectX-8 in Ethernet mode is 2 x 400GbE ports (hardware.nics): nic_gbps is per port
    return replace(s, nic="cx8-eth", nic_gbps=400.0, nic_ports=2, leaf_switch="sn5600", spine_switch="sn5600")


def _nvl72_chips(gpu_name: str) -> int:
    """NVSwitch chips a 72-GPU domain of this GPU needs: GB200's 18, or more where the GPU's NVLink generation
    has smaller switch chips (an H100 NVL72 needs ceil(72 x 18 / 64) = 21 NVSwitch3 chips)."""
    gpu = hardware.get_gpu(gpu_name)
    if not gpu.scaleup_link:
        raise FabricsimError(f"{gpu.name} has no NVLink, so it cannot form an NVL72 domain: drop 'nvl72' from {option('compare')}")
    sw = hardware.nvswitch_for(gpu.scaleup_link)
    if sw is None:
        raise FabricsimError(f"no NVSwitch in the catalog has {gpu.scaleup_link} ports for an NVL72 of {gpu.name}: "
                             f"drop 'nvl72' from {option('compare')}")
    return max(NVL72_SWITCH_CHIPS, -(-NVL72_DOMAIN * gpu.scaleup_links // sw.ports))


def _nvl72(s: ClusterSpec) -> ClusterSpec:
    nics = max(1, s.nics_per_node * NVL72_TRAY_GPUS // s.gpus_per_node) if s.nics_per_node else 0
    return replace(s, scaleup="nvl72", gpus_per_node=NVL72_TRAY_GPUS, domain_size=NVL72_DOMAIN,
                   nvswitch_chips=_nvl72_chips(s.gpu), nics_per_node=nics,
                   nodes=max(1, -(-s.nodes * s.gpus_per_node // NVL72_DOMAIN)) * (NVL72_DOMAIN // NVL72_TRAY_GPUS))


def _sharp(s: ClusterSpec) -> ClusterSpec:
    if s.fabric != "infiniband":
        raise FabricsimError(f"SHARP needs an InfiniBand fabric and {s.name} has '{s.fabric}': drop 'sharp' from {option('compare')}")
    return replace(s, sharp=not s.sharp)


def _routing(s: ClusterSpec) -> ClusterSpec:
    if s.fabric == "none":
        raise FabricsimError(f"cluster {s.name} has no scale-out fabric to route: drop 'routing' from {option('compare')}")
    return replace(s, routing="adaptive" if s.routing == "ecmp" else "ecmp")


VARIANTS = {
    "pcie": ("PCIe only (no NVLink)", _pcie),
    "xdr": ("XDR 800G NICs", _xdr),
    "nvl72": ("NVL72 domains", _nvl72),
    "sharp": ("SHARP toggled", _sharp),
    "no-gpudirect": ("GPUDirect RDMA off", lambda s: replace(s, gpudirect=False)),
    "routing": ("fat-tree routing toggled (ECMP <-> adaptive)", _routing),
}


def variant(spec: ClusterSpec, name: str) -> ClusterSpec:
    """`spec` with one interconnect feature changed; the name records the change."""
    if name not in VARIANTS:
        raise FabricsimError(f"unknown {option('compare')} variant '{name}': use one of {', '.join(VARIANTS)}")
    return replace(VARIANTS[name][1](spec), name=f"{spec.name}+{name}")
