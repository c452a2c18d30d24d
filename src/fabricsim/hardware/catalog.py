"""Name lookups over the catalogs: case-insensitive, with aliases, and one clear error for unknown names."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TypeVar

from fabricsim.errors import FabricsimError
from fabricsim.hardware.gpus import GPU, GPUS
from fabricsim.hardware.links import LINKS, LinkTech
from fabricsim.hardware.nics import NIC, NICS
from fabricsim.hardware.switches import SWITCHES, Switch

Entry = TypeVar("Entry")

# Vendor and family words that never distinguish two catalog entries.
_NOISE = re.compile(r"\b(nvidia|tesla|geforce|amd|instinct|mellanox)\b")

# Extra spellings, written in any case/punctuation; they are normalised like user input.
_GPU_ALIASES = {
    "H100": ("H100-SXM", "H100-SXM5", "H100-80GB", "H100-SXM5-80GB", "H100 80GB HBM3"),
    "H100-PCIe": ("H100-PCIe-80GB",),
    "H800": ("H800-SXM", "H800-SXM5", "H800-80GB"),
    "H200": ("H200-SXM", "H200-SXM5", "H200-141GB"),
    "A100-80GB": ("A100-SXM4-80GB", "A100-SXM-80GB"),
    "A100-40GB": ("A100-SXM4-40GB", "A100-SXM-40GB"),
    "V100": ("V100-SXM2", "V100-SXM2-32GB", "V100-32GB"),
    "P100": ("P100-SXM2", "P100-SXM2-16GB"),
    "RTX2080Ti": ("RTX 2080 Ti",),
    "B200": ("B200-SXM", "HGX B200"),
    "B300": ("B300-SXM", "HGX B300"),
    "MI300X": ("MI300X-192GB",),
}
_LINK_ALIASES = {
    **{f"pcie{g}": (f"pcie gen{g}", f"pcie{g}.0", f"gen{g}") for g in (3, 4, 5, 6)},
    **{f"nvlink{g}": (f"nvlink {g}.0",) for g in range(1, 6)},
    "nvlink-c2c": ("c2c",),
    "ib-edr": ("edr",), "ib-hdr": ("hdr",), "ib-ndr": ("ndr",), "ib-xdr": ("xdr",),
    **{f"eth-{r}g": (f"{r}gbe", f"roce-{r}g") for r in (100, 200, 400, 800)},
    "xgmi": ("infinity fabric",),
}
_SWITCH_ALIASES = {
    "qm8700": ("qm8790", "quantum"), "qm9700": ("qm9790", "quantum-2"), "q3400": ("q3400-ra", "quantum-x800"),
    "sb7800": ("sb7890", "switch-ib 2"), "sn5600": ("spectrum-4",),
    "pcie-switch3-64": ("pex8764",), "pcie-switch4": ("pex88096", "pex88000"), "pcie-switch5": ("pex89144", "pex89000"),
    "cx8-pcie-switch": ("connectx-8 pcie switch",),
    **{f"nvswitch{g}": (f"nvswitch gen{g}", f"nvswitch{g}.0") for g in (1, 2, 3, 4)},
}
_NIC_ALIASES = {
    **{f"cx{g}": (f"connectx-{g}",) for g in (5, 6, 7, 8)},
    **{f"cx{g}-eth": (f"connectx-{g}-eth",) for g in (5, 6, 7, 8)},
    "bf3": ("bluefield-3", "bluefield3"),
}


def _norm(name: str) -> str:
    """'NVIDIA H100 SXM5' -> 'h100sxm5': lower case, vendor words and punctuation removed."""
    return _norm_text(str(name))


@lru_cache(maxsize=1024)  # the engine looks up its topology's few part names on every call
def _norm_text(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", _NOISE.sub("", text.lower()))


def _index(catalog: dict[str, Entry], aliases: dict[str, tuple[str, ...]]) -> dict[str, str]:
    index = {_norm(key): key for key in catalog}
    for key, spellings in aliases.items():
        for spelling in spellings:
            index[_norm(spelling)] = key
    return index


_INDEX = {
    "GPU": (GPUS, _index(GPUS, _GPU_ALIASES), "src/fabricsim/hardware/gpus.py"),
    "link": (LINKS, _index(LINKS, _LINK_ALIASES), "src/fabricsim/hardware/links.py"),
    "switch": (SWITCHES, _index(SWITCHES, _SWITCH_ALIASES), "src/fabricsim/hardware/switches.py"),
    "NIC": (NICS, _index(NICS, _NIC_ALIASES), "src/fabricsim/hardware/nics.py"),
}


def _lookup(what: str, name: str):
    catalog, index, module = _INDEX[what]
    key = index.get(_norm(name))
    if key is None:
        raise FabricsimError(
            f"unknown {what} '{name}'; known {what} names: {', '.join(catalog)}; "
            f"use one of these names or add the {what} to {module}"
        )
    return catalog[key]


def get_gpu(name: str) -> GPU:
    """The GPU for a catalog name or alias ('H100-SXM', 'A100-SXM4-80GB', 'rtx 2080 ti', ...)."""
    return _lookup("GPU", name)


def get_link(name: str) -> LinkTech:
    """The link technology for a catalog name or alias ('pcie5', 'NVLink 4.0', 'NDR', '400GbE', ...)."""
    return _lookup("link", name)


def get_switch(name: str) -> Switch:
    """The switch for a catalog name or alias ('qm9700', 'QM9790', 'Quantum-2', 'PEX89144', ...)."""
    return _lookup("switch", name)


def nvswitch_for(link: str) -> Switch | None:
    """The NVSwitch generation whose ports speak NVLink generation `link` ('nvlink4' -> nvswitch3); None where the
    catalog has none."""
    return next((sw for _, sw in sorted(SWITCHES.items()) if sw.kind == "nvswitch" and sw.port_link == link), None)


def get_nic(name: str) -> NIC:
    """The NIC for a catalog name or alias ('cx7', 'ConnectX-7', 'BlueField-3', ...)."""
    return _lookup("NIC", name)


def _link_for_speed(kind: str, gbps: float) -> str:
    matches = [link.name for link in LINKS.values() if link.kind == kind and link.line_rate_gbps == float(gbps)]
    if not matches:
        speeds = sorted(link.line_rate_gbps for link in LINKS.values() if link.kind == kind)
        raise FabricsimError(
            f"no {kind} link runs at {gbps:g} Gb/s; supported port speeds: "
            f"{', '.join(f'{s:g}' for s in speeds)} Gb/s"
        )
    return matches[0]


def ib_link_for_speed(gbps: float) -> str:
    """LINKS key of the InfiniBand rate with this port speed: 400 -> 'ib-ndr'."""
    return _link_for_speed("infiniband", gbps)


def eth_link_for_speed(gbps: float) -> str:
    """LINKS key of the Ethernet (RoCE) port with this speed: 400 -> 'eth-400g'."""
    return _link_for_speed("ethernet", gbps)


def nic_speeds(nic: NIC) -> tuple[float, ...]:
    """Port speeds (Gb/s, ascending) `nic` runs: every catalog rate of its port's kind up to its port's own. A
    ConnectX port negotiates down to the earlier rates of its network (NV-ConnectX, ConnectX-7 VPI supported speeds:
    NDR, HDR, EDR, ... on InfiniBand; 400, 200, 100, ... GbE on Ethernet); the catalog holds other NICs to the same
    rule, as the topology builder always has (a port never above its own rate)."""
    port = LINKS[nic.port_link]
    rates = (link.line_rate_gbps or 0.0 for link in LINKS.values() if link.kind == port.kind)
    return tuple(sorted(r for r in rates if 0 < r <= (port.line_rate_gbps or 0.0)))


# Per-GPU network bandwidth (Gb/s) -> the ConnectX generation that introduced that rate (NV-ConnectX;
# node layouts: DGX-1 EDR, DGX A100 CX-6, DGX H100/B200 CX-7, B300/GB300 CX-8).
_NIC_BY_SPEED = {
    "infiniband": {100: "cx5", 200: "cx6", 400: "cx7", 800: "cx8"},
    "ethernet": {100: "cx5-eth", 200: "cx6-eth", 400: "cx7-eth", 800: "cx8-eth"},
}


def nic_for_speed(gbps: float, kind: str = "infiniband") -> NIC:
    """The ConnectX NIC giving `gbps` per GPU on an 'infiniband' or 'ethernet' / 'roce' fabric."""
    fabric = "ethernet" if kind in ("ethernet", "roce") else kind
    if fabric not in _NIC_BY_SPEED:
        raise FabricsimError(f"unknown network kind '{kind}'; use 'infiniband', 'ethernet' or 'roce'")
    table = _NIC_BY_SPEED[fabric]
    name = table.get(gbps)
    if name is None:
        raise FabricsimError(
            f"no {fabric} NIC delivers {gbps:g} Gb/s per GPU; supported speeds: "
            f"{', '.join(str(s) for s in table)} Gb/s"
        )
    return NICS[name]
