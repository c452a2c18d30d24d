"""NVLink paths between GPUs of one NVLink domain (NCCL's NVL and NVB path types).

- Through the domain's NVSWITCH device: GPU -> NVSWITCH -> GPU (2 links).
- Direct GPU <-> GPU NVLink (DGX-1 cube-mesh): 1 link.
- No direct link: through one intermediate GPU of the domain (NVB), the one with the highest
  bottleneck capacity, lowest rank on ties (deterministic).
"""

from __future__ import annotations

import numpy as np

from fabricsim.routing.model import PathKind
from fabricsim.routing.tables import Tables, find_links
from fabricsim.topology.model import Topology


def nvlink_paths(
    topo: Topology, tb: Tables, s: np.ndarray, d: np.ndarray, *, bridge: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Per rank pair: (kind, links (P, 2)); kind -1 where NVLink cannot connect the pair."""
    ds, dd = topo.gpu_device[s], topo.gpu_device[d]
    us, ud = tb.nvsw_link[s], tb.nvsw_link[d]
    via_sw = (us >= 0) & (ud >= 0) & (topo.link_dst[np.maximum(us, 0)] == topo.link_dst[np.maximum(ud, 0)])
    direct = np.where(via_sw, -1, find_links(topo, tb, ds, dd))
    mat = np.full((s.size, 2), -1, dtype=np.int32)
    mat[:, 0] = np.where(via_sw, us, direct)
    mat[:, 1] = np.where(via_sw, ud ^ 1, -1)
    kind = np.where(via_sw | (direct >= 0), PathKind.NVLINK, -1).astype(np.int8)

    dom = topo.gpu_domain[s]
    rest = np.flatnonzero((kind < 0) & (dom >= 0) & (dom == topo.gpu_domain[d]))
    if bridge and rest.size:
        first, second, ok = _bridge(topo, tb, s[rest], d[rest])
        mat[rest[ok], 0], mat[rest[ok], 1] = first[ok], second[ok]
        kind[rest[ok]] = PathKind.NVLINK_BRIDGE
    return kind, mat


def _bridge(topo: Topology, tb: Tables, s: np.ndarray, d: np.ndarray):
    """Best intermediate GPU per pair: argmax of min(cap(s->k), cap(k->d)) over the domain's GPUs."""
    dom = topo.gpu_domain[s]
    start, count = tb.dom_ptr[dom], tb.dom_ptr[dom + 1] - tb.dom_ptr[dom]
    best_bw = np.zeros(s.size)
    first = np.full(s.size, -1, dtype=np.int32)
    second = np.full(s.size, -1, dtype=np.int32)
    for k in range(int(count.max())):  # domain size (8 on a cube-mesh), not pairs
        has = k < count
        mid = np.where(has, tb.dom_ranks[np.minimum(start + k, tb.dom_ranks.size - 1)], -1)
        dev = np.where(has, topo.gpu_device[np.maximum(mid, 0)], -1)
        l1 = find_links(topo, tb, topo.gpu_device[s], dev)
        l2 = find_links(topo, tb, dev, topo.gpu_device[d])
        ok = (l1 >= 0) & (l2 >= 0)
        bw = np.where(ok, np.minimum(topo.link_capacity[np.maximum(l1, 0)], topo.link_capacity[np.maximum(l2, 0)]), 0.0)
        better = ok & (bw > best_bw)
        best_bw = np.where(better, bw, best_bw)
        first = np.where(better, l1, first)
        second = np.where(better, l2, second)
    return first, second, first >= 0
