"""Paths inside one host: up the PCIe / C2C tree towards the CPU and down again.

Two shapes (NCCL's PIX/PXB/PHB vs host-memory staging):
- peer-to-peer: up to the lowest common ancestor (a PCIe switch or the CPU root complex), then down;
- via host memory: all the way up to the source's CPU, across the CPU <-> CPU link when the other end
  hangs below another socket, then down. Used when P2P / GPUDirect RDMA is off, and whenever the two
  ends sit below different CPUs.
Paths are returned as padded link matrices (one row per pair, -1 = no hop) so callers stay vectorised.
"""

from __future__ import annotations

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.routing.tables import Tables, find_links
from fabricsim.topology.model import Topology


def _climb(topo: Topology, tb: Tables, dev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ancestors (P, D+1: the device itself first) and up-links (P, D) of each device, -1 padded."""
    d = tb.max_depth
    anc = np.full((dev.size, d + 1), -1, dtype=np.int64)
    up = np.full((dev.size, d), -1, dtype=np.int32)
    cur = dev.astype(np.int64)
    anc[:, 0] = cur
    for k in range(d):
        link = np.where(cur >= 0, tb.parent_link[np.maximum(cur, 0)], -1)
        up[:, k] = link
        cur = np.where(link >= 0, topo.link_dst[np.maximum(link, 0)], -1)
        anc[:, k + 1] = cur
    return anc, up


def _check_in_host(topo: Topology, tb: Tables, dev: np.ndarray) -> None:
    bad = tb.depth[dev] < 0
    if bad.any():
        d = int(dev[np.argmax(bad)])
        raise FabricsimError(
            f"{topo.device_name(d)} is not connected to any CPU: connect it through a PCIe switch (or NVLink-C2C) to its host CPU"
        )


def lowest_common(topo: Topology, tb: Tables, a: np.ndarray, b: np.ndarray):
    """For device pairs in the same host tree: (found, i, j, lca) where the lowest common ancestor
    `lca` is i hops above a and j hops above b (found False: different CPU roots)."""
    anc_a, up_a = _climb(topo, tb, a)
    anc_b, up_b = _climb(topo, tb, b)
    eq = (anc_a[:, :, None] == anc_b[:, None, :]) & (anc_a[:, :, None] >= 0)
    row_hit = eq.any(axis=2)
    found = row_hit.any(axis=1)
    i = np.argmax(row_hit, axis=1)
    j = np.argmax(eq[np.arange(a.size), i], axis=1)
    lca = np.where(found, anc_a[np.arange(a.size), i], -1)
    return found, i, j, lca, up_a, up_b


def swapped(common: tuple) -> tuple:
    """`lowest_common(b, a)` from `lowest_common(a, b)`: in a tree the lowest common ancestor is the first of
    either end's ancestors the other end shares, so the two ends' hop counts and up-links trade places."""
    found, i, j, lca, up_a, up_b = common
    return found, j, i, lca, up_b, up_a


def host_paths(
    topo: Topology, tb: Tables, a: np.ndarray, b: np.ndarray, via_cpu: np.ndarray, common: tuple | None = None
) -> np.ndarray:
    """Links from device a to device b inside their host(s), as a padded (P, 2D+1) matrix.

    via_cpu[k] forces row k through the CPU (host memory); rows whose ends hang below different CPUs
    always go through both CPUs and the CPU <-> CPU link. `common`: `lowest_common(a, b)`, when the caller has it.
    """
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    d = tb.max_depth
    if a.size == 0:
        return np.full((0, 2 * d + 1), -1, dtype=np.int32)
    _check_in_host(topo, tb, a)
    _check_in_host(topo, tb, b)
    found, i, j, _, up_a, up_b = lowest_common(topo, tb, a, b) if common is None else common
    direct = found & ~np.asarray(via_cpu, dtype=bool)
    i = np.where(direct, i, tb.depth[a])
    j = np.where(direct, j, tb.depth[b])
    ra, rb = tb.root[a], tb.root[b]
    need_sys = ~direct & (ra != rb)
    sys = np.full(a.size, -1, dtype=np.int32)
    if need_sys.any():
        sys[need_sys] = find_links(topo, tb, ra[need_sys], rb[need_sys])
        missing = need_sys & (sys < 0)
        if missing.any():
            k = int(np.argmax(missing))
            raise FabricsimError(
                f"no link between {topo.device_name(int(ra[k]))} and {topo.device_name(int(rb[k]))}: "
                "add a CPU <-> CPU (socket interconnect) link to the host"
            )
    cols = np.arange(d)
    up = np.where(cols[None, :] < i[:, None], up_a, -1)
    idx = j[:, None] - 1 - cols[None, :]
    down_src = np.take_along_axis(up_b, np.maximum(idx, 0), axis=1)
    down = np.where(idx >= 0, down_src ^ 1, -1)
    return np.hstack([up, sys[:, None], down]).astype(np.int32)
