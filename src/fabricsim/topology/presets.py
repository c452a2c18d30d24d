"""Named cluster presets: PRESETS[name] = (one-line description, fn(nodes=None, gpus=None) -> ClusterSpec).

Each preset's base spec is built the first time the preset is asked for, not at import: a spec checks itself on
construction, and building all of them would cost every command's start-up (`fabricsim perf` on one preset).

Figures and layouts come from NVIDIA's user guides, NVSwitch documents and SuperPOD reference architectures
(keys in docs/SOURCES.md); where a layout detail is a common
server design rather than a vendor document it is marked [U].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cache

from fabricsim.errors import FabricsimError, option
from fabricsim.topology.spec import ClusterSpec


def _size(preset: str, per_unit: int, unit: str, nodes_per_unit: int, nodes: int | None, gpus: int | None,
          default_nodes: int) -> int:
    """Node count from `nodes` or `gpus`; gpus must be whole units (nodes or racks)."""
    if nodes is not None and gpus is not None:
        raise FabricsimError(f"preset {preset}: give nodes or gpus, not both")
    if gpus is not None:
        if gpus <= 0:
            raise FabricsimError(f"preset {preset}: {option('gpus')} must be a positive multiple of {per_unit}, "
                                 f"got {gpus}")
        if gpus % per_unit:
            lo = max(per_unit, gpus // per_unit * per_unit)
            spread = -(-gpus // per_unit)  # the fewest units that hold them, the same number on each
            even = (f", or {option('nodes', spread)} {option('gpus', gpus)} for {gpus // spread} on each of {spread} "
                    f"{unit}s" if unit == "node" and gpus > per_unit and gpus % spread == 0 else "")
            raise FabricsimError(f"preset {preset}: {gpus} GPUs is not a multiple of {per_unit} GPUs per {unit}: use "
                                 f"{lo} or {lo + per_unit}{even}")
        return gpus // per_unit * nodes_per_unit
    if nodes is None:
        return default_nodes
    if nodes <= 0:
        raise FabricsimError(f"preset {preset}: {option('nodes')} must be positive, got {nodes}")
    if nodes % nodes_per_unit:
        raise FabricsimError(
            f"preset {preset}: {nodes} node{'s are' if nodes > 1 else ' is'} not a multiple of the {nodes_per_unit} trays "
            f"per {unit}: use whole {unit}s (--nodes {nodes_per_unit}, {2 * nodes_per_unit}, ... or --gpus in whole {unit}s)"
        )
    return nodes


Base = Callable[[], ClusterSpec]  # makes a preset's base spec (one node or rack), called once


def _server(preset: str, base_of: Base, default_nodes: int = 1) -> Callable[..., ClusterSpec]:
    """Preset of 8-GPU (or G-GPU) servers: nodes = servers."""
    once = cache(base_of)

    def make(nodes: int | None = None, gpus: int | None = None) -> ClusterSpec:
        base = once()
        n = _size(preset, base.gpus_per_node, "node", 1, nodes, gpus, default_nodes)
        return replace(base, nodes=n)

    return make


def _superpod(preset: str, base_of: Base, two_level_sus: int | None) -> Callable[..., ClusterSpec]:
    """SuperPOD: one SU by default; 2 fabric tiers up to `two_level_sus` SUs, 3 above (None: fit)."""
    once = cache(base_of)

    def make(nodes: int | None = None, gpus: int | None = None) -> ClusterSpec:
        base = once()
        n = _size(preset, base.gpus_per_node, "node", 1, nodes, gpus, base.su_nodes)
        levels = "auto" if two_level_sus is None else (2 if n <= two_level_sus * base.su_nodes else 3)
        return replace(base, nodes=n, levels=levels)

    return make


def _rack(preset: str, base_of: Base, default_racks: int = 1) -> Callable[..., ClusterSpec]:
    """NVL72-style preset: nodes = compute trays, gpus whole racks."""
    once = cache(base_of)

    def make(nodes: int | None = None, gpus: int | None = None) -> ClusterSpec:
        base = once()
        trays = base.domain_size // base.gpus_per_node
        n = _size(preset, base.domain_size, "rack", trays, nodes, gpus, default_racks * trays)
        return replace(base, nodes=n)

    return make


def _pcie(name, gpu, switch, nic, gbps, nics, p2p, gpudirect) -> ClusterSpec:
    # 8 GPUs behind 4 PCIe switches (2 GPUs + NIC per switch, 2 switches per socket): a common
    # 4U 8-GPU PCIe server layout [U]; scale-out RoCE on Spectrum-4 SN5600 (NV-SN5600).
    return ClusterSpec(name=name, gpu=gpu, nodes=1, gpus_per_node=8, scaleup="pcie", domain_size=8,
                       nics_per_node=nics, nic=nic, nic_gbps=gbps, fabric="roce", p2p=p2p, gpudirect=gpudirect,
                       pcie_switches_per_node=4, pcie_switch=switch, leaf_switch="sn5600", spine_switch="sn5600")


def _dgx(name, gpu, chips, nic, gbps, switch, pcie_switch="pcie-switch5", su_nodes=32, pcie_switches=4,
         **kw) -> ClusterSpec:
    # DGX/HGX 8-GPU board: one NIC per GPU on the GPU's PCIe switch (4 switches, 2 GPUs + 2 NICs each,
    # DGX H100 user guide port map, NV-H100-UG), rail-optimised InfiniBand (NV-H100-RA).
    return ClusterSpec(name=name, gpu=gpu, nodes=1, gpus_per_node=8, scaleup="nvswitch", domain_size=8,
                       nvswitch_chips=chips, nics_per_node=8, nic=nic, nic_gbps=gbps, fabric="infiniband",
                       rail_optimized=True, pcie_switches_per_node=pcie_switches, pcie_switch=pcie_switch,
                       su_nodes=su_nodes, leaf_switch=switch, spine_switch=switch, **kw)


def _nvl72(name, gpu, nic, gbps, switch, su_nodes=144) -> ClusterSpec:
    # GB200/GB300 NVL72 rack: 18 compute trays of 4 GPUs + 2 Grace, 18 NVLink 5 switch chips (9 trays x 2),
    # each GPU 1 link to each chip; 4 NICs per tray, 1 per GPU, on the Grace side (NV-GB200-UG).
    # SU = 8 racks = 144 trays = 576 GPUs (NV-GB200-RA, §7b).
    return ClusterSpec(name=name, gpu=gpu, nodes=18, gpus_per_node=4, scaleup="nvl72", domain_size=72,
                       nvswitch_chips=18, nics_per_node=4, nic=nic, nic_gbps=gbps, fabric="infiniband",
                       rail_optimized=True, nvls=True, host_cpu="grace", cpus_per_node=2,
                       su_nodes=su_nodes, leaf_switch=switch, spine_switch=switch)


# DGX-1: hybrid cube-mesh, 4 PCIe Gen3 switches (2 GPUs + 1 NIC each), one EDR 100G NIC per 2 GPUs
# (STH-HC32); P100 / V100 host links are Gen3 x16 (WikiNVLink, Klockwood).
_DGX1 = dict(gpus_per_node=8, nodes=1, scaleup="nvlink-mesh", domain_size=8, nics_per_node=4, nic="cx5",
             nic_gbps=100.0, fabric="infiniband", pcie_switches_per_node=4, pcie_switch="pcie-switch3-64",
             leaf_switch="sb7800", spine_switch="sb7800")


def _h100() -> ClusterSpec:
    return _dgx("dgx-h100", "H100", 4, "cx7", 400.0, "qm9700", nvls=True)  # 4 NVSwitch3 (§3a)


def _b200() -> ClusterSpec:
    return _dgx("dgx-b200", "B200", 2, "cx7", 400.0, "qm9700", nvls=True)  # 2 NVSwitch4 (§3a)


def _gb200() -> ClusterSpec:
    return _nvl72("gb200-nvl72", "GB200", "cx7", 400.0, "qm9700")


PRESETS: dict[str, tuple[str, Callable[..., ClusterSpec]]] = {
    "pcie-l40s-8": ("8x L40S on PCIe Gen4 switches, P2P allowed, 4x 400GbE RoCE per node",
                    _server("pcie-l40s-8", lambda: _pcie("pcie-l40s-8", "L40S", "pcie-switch4", "cx7-eth", 400.0, 4, True, True))),
    "pcie-rtx4090-8": ("8x RTX 4090 on PCIe Gen4, no P2P (GeForce): GPU-to-GPU via host memory, 2x 200GbE RoCE",
                       _server("pcie-rtx4090-8", lambda: _pcie("pcie-rtx4090-8", "RTX4090", "pcie-switch4", "cx6-eth", 200.0, 2, False, False))),
    "pcie-rtx5090-8": ("8x RTX 5090 on PCIe Gen5, no P2P (GeForce): GPU-to-GPU via host memory, 2x 400GbE RoCE",
                       _server("pcie-rtx5090-8", lambda: _pcie("pcie-rtx5090-8", "RTX5090", "pcie-switch5", "cx7-eth", 400.0, 2, False, False))),
    "dgx1-p100": ("DGX-1 P100: NVLink 1 hybrid cube-mesh (4 links/GPU), 4x EDR 100G (1 per 2 GPUs)",
                  _server("dgx1-p100", lambda: ClusterSpec(name="dgx1-p100", gpu="P100", **_DGX1))),
    "dgx1-v100": ("DGX-1 V100: NVLink 2 hybrid cube-mesh (6 links/GPU), 4x EDR 100G (1 per 2 GPUs)",
                  _server("dgx1-v100", lambda: ClusterSpec(name="dgx1-v100", gpu="V100", **_DGX1))),
    # DGX A100: 6 NVSwitch2, 8x CX-6 HDR 200G, SU = 20 nodes [U] (STH-HC32; the DGX A100 SuperPOD RA's 20-node SU is widely quoted, not read); NVSwitch2 has no NVLS.
    # Hosts: 2x AMD EPYC 7742 (NVIDIA DGX A100 User Guide, system specifications), joined by Infinity Fabric.
    "dgx-a100": ("DGX A100: 8x A100 on 6 NVSwitch2, 8x HDR 200G rail-optimised (QM8700), 2x AMD EPYC hosts",
                 _server("dgx-a100", lambda: _dgx("dgx-a100", "A100-80GB", 6, "cx6", 200.0, "qm8700",
                                          pcie_switch="pcie-switch4", su_nodes=20, cpu_vendor="amd"))),
    "dgx-h100": ("DGX H100: 8x H100 on 4 NVSwitch3 (18 NVLink4 each), 8x NDR 400G rail-optimised (QM9700)",
                 _server("dgx-h100", _h100)),
    "hgx-h200": ("HGX H200: 8x H200 on 4 NVSwitch3, 8x NDR 400G rail-optimised (QM9700)",
                 _server("hgx-h200", lambda: replace(_h100(), name="hgx-h200", gpu="H200"))),
    "hgx-h800": ("HGX H800: 8x H800 (8 NVLink4 each) on 4 NVSwitch3, 8x NDR 400G rail-optimised",
                 _server("hgx-h800", lambda: replace(_h100(), name="hgx-h800", gpu="H800"))),
    "dgx-b200": ("DGX B200: 8x B200 on 2 NVSwitch4 (18 NVLink5 each), 8x NDR 400G rail-optimised (QM9700)",
                 _server("dgx-b200", _b200)),
    # DGX B300: 8x CX-8 XDR 800G on Quantum-X800 Q3400 (NV-B300-RA XDR variant); each GPU on
    # the PCIe Gen6 switch inside its own CX-8 (NV-ConnectX, Klockwood-B300).
    "dgx-b300": ("DGX B300: 8x B300 on 2 NVSwitch4, 8x CX-8 XDR 800G rail-optimised (Q3400), PCIe Gen6 through each CX-8",
                 _server("dgx-b300", lambda: _dgx("dgx-b300", "B300", 2, "cx8", 800.0, "q3400", su_nodes=72,
                                          pcie_switch="cx8-pcie-switch", pcie_switches=8, nvls=True))),
    "gb200-nvl72": ("GB200 NVL72: 72 GPUs/rack (18 trays x 4 + 2 Grace), 18 NVSwitch4 chips, CX-7 NDR 400G per GPU; nodes = trays",
                    _rack("gb200-nvl72", _gb200)),
    "gb300-nvl72": ("GB300 NVL72: 72 GPUs/rack, 18 NVSwitch4 chips, CX-8 XDR 800G per GPU (Q3400); nodes = trays",
                    _rack("gb300-nvl72", lambda: _nvl72("gb300-nvl72", "GB300", "cx8", 800.0, "q3400"))),
    # NV-H100-RA: SU = 32 nodes, 8 rails, 2-level up to 4 SU, core tier above.
    "superpod-h100": ("DGX H100 SuperPOD: SU = 32 nodes, 8 rails, NDR 400G; 2-level to 4 SU, 3-level above",
                      _superpod("superpod-h100", lambda: replace(_h100(), name="superpod-h100"), 4)),
    # NV-B200-RA: 2-level to 8 SU (64 leaves on 64-port spines), core tier from 16 SU.
    "superpod-b200": ("DGX B200 SuperPOD: SU = 32 nodes, 8 rails, NDR 400G; core layer from 16 SU",
                      _superpod("superpod-b200", lambda: replace(_b200(), name="superpod-b200"), None)),
    "superpod-gb200": ("DGX GB200 SuperPOD: SU = 8 NVL72 racks (576 GPUs), NDR 400G, one CX-7 per GPU",
                       _rack("superpod-gb200", lambda: replace(_gb200(), name="superpod-gb200"), default_racks=8)),
}


def preset_spec(name: str, nodes: int | None = None, gpus: int | None = None) -> ClusterSpec:
    """The spec of preset `name` sized by nodes or gpus."""
    if name not in PRESETS:
        raise FabricsimError(f"unknown cluster '{name}': use a YAML file or one of {', '.join(PRESETS)}")
    return PRESETS[name][1](nodes=nodes, gpus=gpus)
