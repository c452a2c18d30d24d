"""Up/down routing over the scale-out fat tree, NIC to NIC, with deterministic ECMP.

A flow climbs only as high as needed: the same leaf (NIC -> leaf -> NIC, 2 hops); a spine above
both leaves (4 hops); otherwise spine -> core -> spine (6 hops). Where several equal-cost next hops
exist the flow takes one chosen by a hash of (source NIC, destination NIC):

    hop k's choice = splitmix64(key + k * 0x9E3779B97F4A7C15 + seed * 0xD1B54A32D192ED03) mod (candidates),
    key = source NIC device << 32 | destination NIC device,

i.e. the k-th output of Vigna's splitmix64 generator seeded with the flow key, so every hop of a flow
draws an independent, well-mixed value and distinct flows spread evenly over uplinks. `seed` is the switches'
hash seed (the topology's `ecmp_seed` feature, 0 by default): which flows collide is luck of the hash, so
`fabricsim perf --ecmp-seeds N` times N seeds and reports the spread, not one seed's outcome. With
`adaptive=True` (adaptive routing / packet spraying) a flow is instead split evenly over every
equal-cost candidate at every hop: several weighted paths per pair.

A whole fabric is a Clos (every core above a spine reaches every pod), as the topology builders make it. With
failed links (a `topology.variants.without_links` variant) up/down routing skips what is gone, as a subnet manager's
fat-tree routing does: a hop only considers the switches that still lead down to the destination leaf, and ECMP
hashes over the candidates left (the same hash, modulo fewer candidates).
"""

from __future__ import annotations

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.routing.tables import Tables, find_links
from fabricsim.topology.faults import Cut
from fabricsim.topology.model import Topology

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_SEED_STEP = np.uint64(0xD1B54A32D192ED03)  # odd 64-bit multiplier (Steele & Vigna's LXM), a seed's offset


def splitmix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's output function (Vigna), elementwise on uint64 with wrap-around."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def flow_hash(src_nic: np.ndarray, dst_nic: np.ndarray, hop: int, seed: int = 0) -> np.ndarray:
    """Hop `hop`'s ECMP hash of each (source NIC, destination NIC) flow under hash `seed` (module docstring)."""
    key = (src_nic.astype(np.uint64) << np.uint64(32)) | dst_nic.astype(np.uint64)
    with np.errstate(over="ignore"):
        return splitmix64(key + np.uint64(hop) * _GOLDEN + np.uint64(seed) * _SEED_STEP)


def _up_matrix(tb: Tables, dev: np.ndarray) -> np.ndarray:
    """Fabric up-links of each device, padded (P, max count) with -1."""
    start = tb.up_ptr[dev]
    count = tb.up_ptr[dev + 1] - start
    width = int(count.max()) if count.size else 0
    cols = np.arange(width)
    idx = np.minimum(start[:, None] + cols[None, :], max(tb.up_links.size - 1, 0))
    if tb.up_links.size == 0:
        return np.full((dev.size, width), -1, dtype=np.int32)
    return np.where(cols[None, :] < count[:, None], tb.up_links[idx], -1).astype(np.int32)


def _choose(mask: np.ndarray, h: np.ndarray, adaptive: bool):
    """Pick among the True columns of each row: one by hash, or all (adaptive).
    Returns (row, column, weight) per chosen path."""
    count = mask.sum(axis=1)
    if mask.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    if adaptive:
        row, col = np.nonzero(mask)
        return row, col, 1.0 / count[row]
    k = (h % np.maximum(count, 1).astype(np.uint64)).astype(np.int64)
    col = np.argmax(np.cumsum(mask, axis=1) > k[:, None], axis=1)
    return np.arange(mask.shape[0]), col, np.ones(mask.shape[0])


def _unreachable(topo: Topology, a: int, b: int):
    what = f"fabric cannot route from {topo.device_name(a)} to {topo.device_name(b)}: no up/down path exists; "
    if topo.link_origin is not None:
        raise Cut(what + "the failed links cut every up/down path between them: fail fewer switches or cables")
    planes = int(topo.features.get("fabric_planes", 1) or 1)
    fix = (
        f"the fabric is split into {planes} planes that never meet, so cross-rail traffic needs PXN (pxn=None or True)"
        if planes > 1
        else "connect every leaf to spines and, across pods, spines to a common core level"
    )
    raise FabricsimError(what + fix)


def _core_reaches(topo: Topology, tb: Tables, up: np.ndarray, leaf: np.ndarray) -> np.ndarray:
    """Per up-link into a core (-1: none), whether that core still reaches `leaf` (one per row) going down."""
    core = topo.link_dst[np.maximum(up, 0)]
    return (up >= 0) & tb.core_reach[tb.fabric_ord[core], tb.fabric_ord[leaf][:, None]]


def _spine_reaches(topo: Topology, tb: Tables, spine: np.ndarray, leaf: np.ndarray) -> np.ndarray:
    """Per candidate spine (-1: none), whether a core above it still reaches `leaf` (one per row) going down."""
    key = np.maximum(spine, 0).astype(np.int64) * topo.n_devices + leaf[:, None]
    uniq, inv = np.unique(key, return_inverse=True)
    ups = _up_matrix(tb, uniq // topo.n_devices)
    ok = _core_reaches(topo, tb, ups, uniq % topo.n_devices).any(axis=1)
    return (spine >= 0) & ok[inv.reshape(spine.shape)]


def fabric_paths(topo: Topology, tb: Tables, nic_s: np.ndarray, nic_d: np.ndarray, adaptive: bool):
    """NIC-to-NIC fabric paths. Returns (row, weight, links (Q, 6)): path q belongs to input pair row[q]."""
    nic_s, nic_d = nic_s.astype(np.int64), nic_d.astype(np.int64)
    first, last = tb.nic_leaf[nic_s], tb.nic_leaf[nic_d]
    loose = (first < 0) | (last < 0)
    if loose.any():
        k = int(np.argmax(loose))
        nic = int(nic_s[k] if first[k] < 0 else nic_d[k])
        raise FabricsimError(f"{topo.device_name(nic)} is not cabled to a fabric leaf switch: connect it to a leaf")
    leaf_s, leaf_d = topo.link_dst[first].astype(np.int64), topo.link_dst[last].astype(np.int64)
    seed = int(topo.features.get("ecmp_seed", 0))
    down_last = last ^ 1  # leaf_d -> nic_d
    rows, weights, mats = [], [], []

    one = np.flatnonzero(leaf_s == leaf_d)
    rows.append(one)
    weights.append(np.ones(one.size))
    mats.append(np.column_stack([first[one], down_last[one]]))

    rest = np.flatnonzero(leaf_s != leaf_d)
    up1 = _up_matrix(tb, leaf_s[rest])  # leaf_s -> spine
    spine = np.where(up1 >= 0, topo.link_dst[np.maximum(up1, 0)], -1)
    down2 = find_links(topo, tb, spine, leaf_d[rest][:, None])  # spine -> leaf_d
    two_mask = down2 >= 0
    two = two_mask.any(axis=1)

    sel = np.flatnonzero(two)
    r, c, w = _choose(two_mask[sel], flow_hash(nic_s[rest[sel]], nic_d[rest[sel]], 1, seed), adaptive)
    pr = rest[sel][r]
    rows.append(pr)
    weights.append(w)
    mats.append(np.column_stack([first[pr], up1[sel[r], c], down2[sel[r], c], down_last[pr]]))

    sel = np.flatnonzero(~two)
    if sel.size:
        p_idx = rest[sel]
        climb = (spine[sel] >= 0) & (tb.up_ptr[np.maximum(spine[sel], 0) + 1] > tb.up_ptr[np.maximum(spine[sel], 0)])
        if tb.core_reach is not None:
            climb &= _spine_reaches(topo, tb, spine[sel], leaf_d[p_idx])
        none = ~climb.any(axis=1)
        if none.any():
            k = int(np.argmax(none))
            _unreachable(topo, int(leaf_s[p_idx[k]]), int(leaf_d[p_idx[k]]))
        r1, c1, w1 = _choose(climb, flow_hash(nic_s[p_idx], nic_d[p_idx], 1, seed), adaptive)
        l_up1 = up1[sel[r1], c1]
        up2 = _up_matrix(tb, spine[sel[r1], c1])  # spine -> core
        live = up2 >= 0 if tb.core_reach is None else _core_reaches(topo, tb, up2, leaf_d[p_idx[r1]])
        r2, c2, w2 = _choose(live, flow_hash(nic_s[p_idx[r1]], nic_d[p_idx[r1]], 2, seed), adaptive)
        core = topo.link_dst[up2[r2, c2]].astype(np.int64)
        pair = p_idx[r1[r2]]
        up_d = _up_matrix(tb, leaf_d[pair])  # leaf_d -> spine'
        spine_d = np.where(up_d >= 0, topo.link_dst[np.maximum(up_d, 0)], -1)
        core_down = find_links(topo, tb, spine_d, core[:, None])  # spine' -> core
        ok = core_down >= 0
        lost = ~ok.any(axis=1)
        if lost.any():
            k = int(np.argmax(lost))
            _unreachable(topo, int(core[k]), int(leaf_d[pair[k]]))
        r3, c3, w3 = _choose(ok, flow_hash(nic_s[pair], nic_d[pair], 3, seed), adaptive)
        q = pair[r3]
        rows.append(q)
        weights.append(w1[r2[r3]] * w2[r3] * w3)
        mats.append(
            np.column_stack(
                [first[q], l_up1[r2[r3]], up2[r2[r3], c2[r3]], core_down[r3, c3] ^ 1, up_d[r3, c3] ^ 1, down_last[q]]
            )
        )

    width = max(m.shape[1] for m in mats)
    mat = np.vstack([np.pad(m.astype(np.int32), ((0, 0), (0, width - m.shape[1])), constant_values=-1) for m in mats])
    return np.concatenate(rows), np.concatenate(weights), mat
