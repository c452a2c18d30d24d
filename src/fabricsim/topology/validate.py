"""Structural checks on a Topology: every violation is one FabricsimError naming the device or link."""

from __future__ import annotations

import numpy as np

from fabricsim import hardware
from fabricsim.errors import FabricsimError
from fabricsim.topology.model import DeviceKind, Topology

_SWITCH_KINDS = (DeviceKind.NVSWITCH, DeviceKind.FABRIC_SWITCH, DeviceKind.PCIE_SWITCH)


def components(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Connected-component label (smallest member index) per vertex of an undirected graph.

    Vectorised hook-and-compress (Shiloach-Vishkin style): each round hooks the larger root
    onto the smaller across every edge, then compresses pointers; a few rounds for any tree.
    """
    parent = np.arange(n, dtype=np.int64)
    while True:
        a, b = parent[src], parent[dst]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        moved = lo != hi
        if not moved.any():
            return parent
        np.minimum.at(parent, hi[moved], lo[moved])
        while True:
            nxt = parent[parent]
            if np.array_equal(nxt, parent):
                break
            parent = nxt


def validate(topo: Topology) -> None:
    """Raise FabricsimError if links are unpaired, capacities or latencies invalid, switch ports
    oversubscribed, or any GPU unable to reach every other GPU."""
    n, m = topo.n_devices, topo.n_links
    src, dst = topo.link_src, topo.link_dst
    if m % 2:
        raise FabricsimError(f"topology '{topo.name}' has an odd number of links ({m}): links must come in opposite pairs")
    if m and ((src.min() < 0) or (dst.min() < 0) or (src.max() >= n) or (dst.max() >= n)):
        raise FabricsimError(f"topology '{topo.name}' has links to devices outside 0..{n - 1}: fix the builder")
    bad = np.flatnonzero((src[0::2] != dst[1::2]) | (dst[0::2] != src[1::2]))
    if bad.size:
        link = int(2 * bad[0])
        raise FabricsimError(f"link {link} ({topo.link_name(link)}) has no opposite twin at {link + 1}: links must come in pairs (2k, 2k+1)")
    bad = np.flatnonzero(~(topo.link_capacity > 0) | ~np.isfinite(topo.link_capacity))
    if bad.size:
        link = int(bad[0])
        raise FabricsimError(
            f"link {topo.link_name(link)} has capacity {float(topo.link_capacity[link])} B/s: capacities must be positive and finite"
        )
    bad = np.flatnonzero(~(topo.link_latency >= 0) | ~np.isfinite(topo.link_latency))
    if bad.size:
        link = int(bad[0])
        raise FabricsimError(f"link {topo.link_name(link)} has latency {float(topo.link_latency[link])} s: latencies must be >= 0")
    _check_ports(topo)
    _check_connected(topo)


def _check_ports(topo: Topology) -> None:
    # A PCIe switch's ports are x16 lane groups: a link uses its lanes / 16 of them (an x8 GPU half a port, the ports of
    # a dual-port NIC card one port between them: each carries its share of the card's x16, topology.builders).
    tech_bw = np.array([hardware.get_link(t).bw for t in topo.techs])[topo.link_tech]
    pcie = np.array([hardware.get_link(t).kind == "pcie" for t in topo.techs])[topo.link_tech]
    weight = np.where(pcie, topo.link_capacity / tech_bw, topo.link_count)
    used = np.round(np.bincount(topo.link_src, weights=weight, minlength=topo.n_devices), 9)
    ports = np.zeros(len(topo.parts))
    for i, part in enumerate(topo.parts):
        if part in hardware.SWITCHES:
            ports[i] = hardware.SWITCHES[part].ports
    is_switch = np.isin(topo.dev_kind, np.array(_SWITCH_KINDS, dtype=np.int8))
    capacity = ports[topo.dev_part] * topo.dev_units
    over = np.flatnonzero(is_switch & (used > capacity))
    if over.size:
        d = int(over[0])
        part = topo.parts[int(topo.dev_part[d])]
        fix = "use fewer nodes per switch, more switches or a higher-radix part"
        if topo.dev_kind[d] == DeviceKind.NVSWITCH:  # one device per NVLink domain, its chips its units
            chips = int(-(-used[d] // ports[topo.dev_part[d]]))
            fix = (f"set nvswitch_chips to {chips} or more ({part} has {int(ports[topo.dev_part[d]])} ports), or give "
                   "each GPU fewer NVLinks (nvlinks)")
        raise FabricsimError(
            f"{topo.device_name(d)} ({part} x{int(topo.dev_units[d])}) has {int(used[d])} links but only "
            f"{int(capacity[d])} ports: {fix}"
        )


def cut_rank(n_devices: int, link_src: np.ndarray, link_dst: np.ndarray, gpu_device: np.ndarray) -> int:
    """The first GPU rank that cannot reach GPU rank 0 over the links (given in opposite pairs), or -1."""
    label = components(n_devices, link_src[0::2], link_dst[0::2])[gpu_device]
    cut = np.flatnonzero(label != label[0])
    return int(cut[0]) if cut.size else -1


def _check_connected(topo: Topology) -> None:
    if topo.n_gpus < 2:
        return
    r = cut_rank(topo.n_devices, topo.link_src, topo.link_dst, topo.gpu_device)
    if r >= 0:
        raise FabricsimError(
            f"GPU rank {r} ({topo.device_name(int(topo.gpu_device[r]))}) cannot reach GPU rank 0: "
            f"the cluster is disconnected; add a scale-out fabric (fabric: infiniband or roce) or fix the links"
        )
