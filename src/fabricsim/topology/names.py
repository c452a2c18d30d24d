"""Devices and links by name: every device's name (as `Topology.device_name` prints it), glob patterns over them,
link patterns `A -> B`, and the classes a fault count draws from (`random:3:spines`).

Names are made for all devices at once and kept in the topology's store of structural data, so a pattern over a
131,072-GPU cluster is one pass over a list of strings. A cable is one pair of opposite links (2k, 2k+1); its
physical cables are its `link_count` parallel links (a leaf joined to a spine by two cables is one link of count 2).
"""

from __future__ import annotations

import fnmatch
import re

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.topology.model import DeviceKind, Topology

_LABEL = {DeviceKind.GPU: "gpu", DeviceKind.CPU: "cpu", DeviceKind.PCIE_SWITCH: "pcisw", DeviceKind.NIC: "nic"}
_TIER = {1: "leaf", 2: "spine", 3: "core"}

# What a count draws from: devices of a kind (and fabric tier), or physical cables between two kinds of device.
DEVICE_CLASSES = {"leaves": (DeviceKind.FABRIC_SWITCH, 1), "spines": (DeviceKind.FABRIC_SWITCH, 2),
                  "cores": (DeviceKind.FABRIC_SWITCH, 3), "nics": (DeviceKind.NIC, None),
                  "nvswitches": (DeviceKind.NVSWITCH, None), "gpus": (DeviceKind.GPU, None)}
LINK_CLASSES = {
    "nic-links": "NIC <-> leaf cables",
    "spine-links": "leaf <-> spine cables",
    "core-links": "spine <-> core cables",
    "links": "fabric switch <-> switch cables (leaf-spine and spine-core)",
    "nvlinks": "NVLinks (GPU <-> NVSwitch or GPU <-> GPU)",
}
CLASSES = (*DEVICE_CLASSES, *LINK_CLASSES)


def device_names(topo: Topology) -> list[str]:
    """The name of every device, index by index (kept in the topology's store of structural data)."""
    return topo.derive_structure(("device_names",), lambda: _names(topo)).tolist()


def _names(topo: Topology) -> np.ndarray:
    kind, node, dom, local = (a.tolist() for a in (topo.dev_kind, topo.dev_node, topo.dev_domain, topo.dev_local))
    level, pod = topo.dev_level.tolist(), topo.dev_pod.tolist()
    out = []
    for k, n, d, i, lv, p in zip(kind, node, dom, local, level, pod):
        if k == DeviceKind.FABRIC_SWITCH:
            out.append(f"{f'su{p}.' if p >= 0 else ''}{_TIER.get(lv, f'l{lv}')}{i}")
        elif k == DeviceKind.NVSWITCH:
            out.append(f"domain{d}.nvswitch{i}")
        else:
            out.append(f"node{n}.{_LABEL[DeviceKind(k)]}{i}")
    return np.array(out, dtype=object)


def _regex(pattern: str) -> re.Pattern:
    return re.compile(fnmatch.translate(pattern))


def match_devices(topo: Topology, pattern: str) -> np.ndarray:
    """Indices of the devices whose name matches `pattern` (shell globs: `node3.nic*`, `su?.leaf2`, `spine*`);
    `nodeN` without a dot stands for that node's GPUs (`node3` is `node3.gpu*`)."""
    pattern = pattern.strip()
    if "." not in pattern and pattern.startswith("node"):
        pattern += ".gpu*"
    names = device_names(topo)
    if not any(c in pattern for c in "*?["):
        hit = _index(topo).get(pattern)
        return np.array([] if hit is None else [hit], dtype=np.int64)
    rx = _regex(pattern)
    return np.array([i for i, name in enumerate(names) if rx.match(name)], dtype=np.int64)


def _index(topo: Topology) -> dict[str, int]:
    return topo.derive_structure(("device_index",), lambda: {name: i for i, name in enumerate(device_names(topo))})


def split_link(pattern: str) -> tuple[str, str, str | None] | None:
    """`A -> B (tech)` -> (A, B, tech or None); None when `pattern` names no link (no arrow)."""
    if "->" not in pattern:
        return None
    left, _, right = pattern.partition("->")
    tech = None
    m = re.fullmatch(r"\s*(.*?)\s*\(([^()]*)\)\s*", right)
    if m:
        right, tech = m.group(1), m.group(2).strip()
    left, right = left.strip(), right.strip()
    if not left or not right or "->" in right:
        raise FabricsimError(f"link '{pattern}' must read 'A -> B' (optionally '(tech)'), as fabricsim prints links: "
                             "e.g. 'node3.nic0 -> su0.leaf0'")
    return left, right, tech


def match_links(topo: Topology, pattern: str) -> np.ndarray:
    """The cables (even link index of each opposite pair) joining a device matching A to one matching B, either
    way round, for a link pattern `A -> B` (each side a device pattern; an optional `(tech)` must match too)."""
    parts = split_link(pattern)
    if parts is None:
        raise FabricsimError(f"'{pattern}' is not a link: links read 'A -> B', e.g. 'node3.nic0 -> su0.leaf0'")
    left, right, tech = parts
    a = np.zeros(topo.n_devices, dtype=bool)
    b = np.zeros(topo.n_devices, dtype=bool)
    a[match_devices(topo, left)] = True
    b[match_devices(topo, right)] = True
    src, dst = topo.link_src[0::2], topo.link_dst[0::2]
    hit = (a[src] & b[dst]) | (b[src] & a[dst])
    if tech is not None:
        rx = _regex(tech)
        ok = np.array([bool(rx.match(t)) for t in topo.techs], dtype=bool)
        hit &= ok[topo.link_tech[0::2]]
    return 2 * np.flatnonzero(hit)


def class_devices(topo: Topology, name: str) -> np.ndarray:
    """The devices of a device class ('spines', 'nics', ...)."""
    kind, level = DEVICE_CLASSES[name]
    mask = topo.dev_kind == kind
    if level is not None:
        mask &= topo.dev_level == level
    return np.flatnonzero(mask)


def class_cables(topo: Topology, name: str) -> np.ndarray:
    """The cables (even link index) of a link class ('spine-links', 'nvlinks', ...)."""
    kind, level = topo.dev_kind, topo.dev_level
    src, dst = topo.link_src[0::2], topo.link_dst[0::2]
    sw = DeviceKind.FABRIC_SWITCH
    lo = np.where(kind[src] == sw, level[src], 0)
    hi = np.where(kind[dst] == sw, level[dst], 0)
    tiers = np.sort(np.column_stack([lo, hi]), axis=1)
    both_sw = (kind[src] == sw) & (kind[dst] == sw)
    if name == "nic-links":
        mask = ((kind[src] == DeviceKind.NIC) & (kind[dst] == sw)) | ((kind[dst] == DeviceKind.NIC) & (kind[src] == sw))
    elif name == "spine-links":
        mask = both_sw & (tiers[:, 0] == 1) & (tiers[:, 1] == 2)
    elif name == "core-links":
        mask = both_sw & (tiers[:, 0] == 2) & (tiers[:, 1] == 3)
    elif name == "links":
        mask = both_sw
    elif name == "nvlinks":
        gpu, nvs = DeviceKind.GPU, DeviceKind.NVSWITCH
        mask = ((kind[src] == gpu) & np.isin(kind[dst], (gpu, nvs))) | ((kind[dst] == gpu) & (kind[src] == nvs))
    else:
        raise FabricsimError(f"unknown link class '{name}': use one of {', '.join(LINK_CLASSES)}")
    return 2 * np.flatnonzero(mask)


def examples(topo: Topology) -> str:
    """A few real names of `topo`, for messages: one device of each kind it has and one link."""
    names = device_names(topo)
    seen: dict[int, str] = {}
    for kind in (DeviceKind.GPU, DeviceKind.NIC, DeviceKind.NVSWITCH, DeviceKind.FABRIC_SWITCH):
        idx = np.flatnonzero(topo.dev_kind == kind)
        if idx.size:
            seen[int(kind)] = names[int(idx[-1])]
    nic_up = np.flatnonzero((topo.dev_kind[topo.link_src] == DeviceKind.NIC)
                            & (topo.dev_kind[topo.link_dst] == DeviceKind.FABRIC_SWITCH))
    link = f", '{names[int(topo.link_src[nic_up[0]])]} -> {names[int(topo.link_dst[nic_up[0]])]}'" if nic_up.size else ""
    return ", ".join(seen.values()) + link
