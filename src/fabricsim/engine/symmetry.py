"""Timing a rotated (rank-symmetric) schedule by symmetry: an all-to-all beyond 1,024 ranks, whose n^2 transfers
are stored as one node's transfers turned node by node (`Schedule.rotations`).

Evenly spaced rotations (up to ROTATION_SAMPLE_TRANSFERS transfers) are routed; each link class (links that are
the same in every node: device kinds, tiers, technology, place in the node) carries the sampled traffic scaled to
the whole schedule, shared by the links in proportion to the sources whose traffic crosses them (`link_weights`:
a partly filled leaf loads its uplinks less). Exact for regular fabrics under adaptive routing; hashed ECMP
collisions between flows are not counted.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fabricsim.engine.capacity import effective_capacity
from fabricsim.engine.flows import FlowSet
from fabricsim.errors import FabricsimError
from fabricsim.schedules.model import StepTraffic, rotate_ranks
from fabricsim.topology.model import DeviceKind, Topology

ROTATION_SAMPLE_TRANSFERS = 1 << 18  # transfers of a rotated schedule routed explicitly; the rest follow by symmetry


def sample_rotations(steps: Sequence[StepTraffic], nranks: int, rotations: int) -> tuple[list[StepTraffic], float]:
    """Evenly spaced rotations of a rotated schedule's first-rotation traffic, as many as fit in
    ROTATION_SAMPLE_TRANSFERS, and the factor from their traffic to the whole schedule's."""
    if any(st.innet or st.active is not None or st.repeat != 1 for st in steps):
        raise FabricsimError("a rotated schedule's steps must run once, point to point only")
    per_rotation = max(sum(int(st.src.shape[0]) for st in steps), 1)
    k = max(1, min(rotations, ROTATION_SAMPLE_TRANSFERS // per_rotation))
    picked = np.unique(np.arange(k, dtype=np.int64) * rotations // k)
    shift = picked * (nranks // rotations)
    sampled = [StepTraffic(rotate_ranks(st.src, nranks, shift), rotate_ranks(st.dst, nranks, shift),
                           np.tile(np.asarray(st.nbytes, dtype=np.float64), picked.size)) for st in steps]
    return sampled, rotations / picked.size


def check_rotation_placement(topo: Topology, gpu_ranks: np.ndarray, rotations: int) -> None:
    """A rotated schedule is timed by symmetry, which holds when its rotations are whole NVLink domains holding
    their ranks at the same positions: rank r + k * width sits where rank r does, one domain further."""
    width = gpu_ranks.shape[0] // rotations
    domain = topo.gpu_domain[gpu_ranks].reshape(rotations, width)
    local = topo.dev_local[topo.gpu_device[gpu_ranks]].reshape(rotations, width)
    if not ((domain == domain[:, :1]).all() and np.unique(domain[:, 0]).shape[0] == rotations
            and (local == local[:1]).all()):
        raise FabricsimError(f"an all-to-all over {gpu_ranks.shape[0]} ranks is timed node by node, by symmetry: give it "
                             f"whole NVLink domains of {width} GPUs, each in the same order (e.g. ranks 0..n-1)")


def link_class(topo: Topology) -> np.ndarray:
    """Each link's symmetry class: links joining the same kinds of device at the same fabric tiers with the same
    technology (a leaf's uplink, ...), and, for a device inside a host or NVLink domain, at the same position in it
    (GPU 3's NVLink port, PCIe switch 0's uplink to CPU 0, the rail-2 NIC's cable): what is the same in every node.
    Kept in the topology's store of structural data."""
    return topo.derive_structure(("link_class",), lambda: _classify_links(topo))


def _classify_links(topo: Topology) -> np.ndarray:
    kind, level = topo.dev_kind.astype(np.int64), topo.dev_level.astype(np.int64)
    local = np.where(kind == DeviceKind.FABRIC_SWITCH, -1, topo.dev_local.astype(np.int64)) + 1
    s, d = topo.link_src, topo.link_dst

    def side(x: np.ndarray) -> np.ndarray:
        return (kind[x] * 16 + level[x]) * (1 << 21) + local[x]

    key = np.stack([side(s), side(d), topo.link_tech.astype(np.int64)], axis=1)
    return np.unique(key, axis=0, return_inverse=True)[1].ravel()


def link_weights(topo: Topology, gpu_ranks: np.ndarray) -> np.ndarray:
    """How much of a symmetric traffic pattern each link carries relative to the others of its class (0: none).

    Links inside the collective's hosts and NVLink domains weigh their capacity. A fabric link weighs the
    sources whose traffic crosses it when every switch spreads its up traffic over its uplinks by capacity
    (adaptive routing): a NIC counts the ranks using it, a switch the weights of the uplinks reaching it, and
    a link between tiers that of its lower end x its share of that end's uplinks. So a leaf with half its
    ports filled loads its uplinks half as much as a full one; the traffic down mirrors the traffic up."""
    nodes, domains = np.unique(topo.gpu_node[gpu_ranks]), np.unique(topo.gpu_domain[gpu_ranks])
    host = topo.dev_node >= 0
    inside = (host & np.isin(topo.dev_node, nodes)) | (~host & (topo.dev_domain >= 0) & np.isin(topo.dev_domain, domains))
    src, dst, cap = topo.link_src, topo.link_dst, topo.link_capacity
    tier = np.where(topo.dev_kind == DeviceKind.FABRIC_SWITCH, topo.dev_level.astype(np.int64), 0)
    up = tier[dst] > tier[src]
    upcap = np.bincount(src[up], weights=cap[up], minlength=topo.n_devices)
    sources = np.zeros(topo.n_devices)
    if topo.gpu_nic is not None:
        nic = topo.gpu_nic[gpu_ranks]
        np.add.at(sources, nic[nic >= 0], 1.0)
    weight = np.where(inside[src] & inside[dst] & (tier[src] == 0) & (tier[dst] == 0), cap, 0.0)
    share = np.zeros(topo.n_links)
    for level in np.unique(tier[tier > 0]).tolist():
        into = up & (tier[dst] == level)
        share[into] = sources[src[into]] * cap[into] / np.maximum(upcap[src[into]], 1e-300)
        sources += np.bincount(dst[into], weights=share[into], minlength=topo.n_devices)
    down = (tier[src] > tier[dst]) & (tier[src] > 0)
    share[down] = share[np.flatnonzero(down) ^ 1]  # links come in opposite pairs (topology.model)
    return np.where(share > 0, share, weight)


def spread(topo: Topology, scale: float, weight: np.ndarray, per_link: np.ndarray) -> np.ndarray:
    """A rotated schedule's per-link quantity (bytes, flows) of its sampled rotations, summed per symmetry class,
    scaled by `scale` to the whole schedule and shared among the class's links by their weights (`link_weights`)."""
    cls = link_class(topo)
    ncls = int(cls.max(initial=-1)) + 1
    total = scale * np.bincount(cls, weights=per_link, minlength=ncls)
    wsum = np.bincount(cls, weights=weight, minlength=ncls)
    return np.divide(total, wsum, out=np.zeros(ncls), where=wsum > 0)[cls] * weight


def mean_field(topo: Topology, scale: float, weight: np.ndarray, fs: FlowSet) -> tuple[np.ndarray, np.ndarray]:
    """(capacity each link offers the sampled flows, wire bytes on every link) for a rotated schedule: a sampled
    flow sees each of its links drain in the time that link's share of its class's traffic takes."""
    cap = effective_capacity(topo)
    b = fs.link_bytes(topo.n_links)
    load = spread(topo, scale, weight, b)
    offered = np.where(b > 0, b / np.maximum(load / cap, 1e-300), cap)
    return offered, load
