"""route_pairs: how each (source GPU, destination GPU) pair's bytes cross the cluster.

Classification, first match wins (after NCCL's path types, graph/paths.cc):
  same GPU                                   -> LOCAL, no links
  same NVLink domain, NVLink reaches         -> NVLINK (NVSwitch or direct) / NVLINK_BRIDGE (via one GPU)
  same host                                  -> PCIE (P2P below one CPU) or HOST (through host memory)
  otherwise                                  -> NET (GPUDirect RDMA), NET_HOST (staged in host memory)
                                                or PXN (NVLink to the peer GPU on the destination's rail)
Every class is built for all its pairs at once with numpy (no loop per pair), as padded link
matrices compacted into the CSR `Routes` at the end.
"""

from __future__ import annotations

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.routing.failover import nic_legs
from fabricsim.routing.scaleout import fabric_paths
from fabricsim.routing.host import host_paths, lowest_common, swapped
from fabricsim.routing.model import PathKind, Routes
from fabricsim.routing.nvlink import nvlink_paths
from fabricsim.routing.tables import Tables, nics_per_gpu, tables
from fabricsim.topology.model import DeviceKind, Topology


def route(topo: Topology, src: int, dst: int, *, pxn: bool | None = None, adaptive: bool = False,
          p2p: bool = False) -> Routes:
    """Routes of one (src, dst) GPU rank pair."""
    return route_pairs(topo, [src], [dst], pxn=pxn, adaptive=adaptive, p2p=p2p)


def route_pairs(
    topo: Topology, src_ranks, dst_ranks, *, pxn: bool | None = None, adaptive: bool = False, p2p: bool = False
) -> Routes:
    """Paths for every (src_ranks[i], dst_ranks[i]) pair of GPU ranks.

    pxn: None = as NCCL (on when the fabric is rail-optimised and the GPUs have NVLink), True / False force it.
    adaptive: split each pair evenly over all equal-cost fabric paths instead of one ECMP-hashed path.
    p2p: the pairs are point-to-point operations (AllToAll, SendRecv); it matters only where a receiving GPU's NIC is
    down (`failover`: a point-to-point receive comes in through the CPU, a ring's or tree's at a working NIC's GPU).
    """
    s, d = _ranks(topo, src_ranks, dst_ranks)
    tb = tables(topo)
    blocks: list[tuple] = []
    done = s == d
    idx = np.flatnonzero(done)
    blocks.append((idx, np.ones(idx.size), np.full(idx.size, PathKind.LOCAL, np.int8), np.zeros((idx.size, 0), np.int32)))

    dom = topo.gpu_domain
    idx = np.flatnonzero(~done & (dom[s] == dom[d]) & (dom[s] >= 0))
    kind, mat = nvlink_paths(topo, tb, s[idx], d[idx], bridge=True)
    ok = kind >= 0
    blocks.append((idx[ok], np.ones(int(ok.sum())), kind[ok], mat[ok]))
    done[idx[ok]] = True

    node = topo.gpu_node
    same = ~done & (node[s] == node[d])
    idx = np.flatnonzero(same)
    via_cpu = np.full(idx.size, not _p2p_allowed(topo))
    mat = host_paths(topo, tb, topo.gpu_device[s[idx]], topo.gpu_device[d[idx]], via_cpu)
    same_cpu = tb.root[topo.gpu_device[s[idx]]] == tb.root[topo.gpu_device[d[idx]]]
    kind = np.where(same_cpu & ~via_cpu, PathKind.PCIE, PathKind.HOST).astype(np.int8)
    blocks.append((idx, np.ones(idx.size), kind, mat))
    done |= same

    idx = np.flatnonzero(~done)
    if idx.size:
        use_pxn = bool(topo.features.get("rail_optimized", False)) if pxn is None else bool(pxn)
        blocks.append(_net(topo, tb, idx, s[idx], d[idx], use_pxn, adaptive, p2p))
    return _assemble(topo, blocks, s.size)


def _ranks(topo: Topology, src_ranks, dst_ranks) -> tuple[np.ndarray, np.ndarray]:
    s, d = np.asarray(src_ranks), np.asarray(dst_ranks)
    for name, a in (("src_ranks", s), ("dst_ranks", d)):
        if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer)):
            raise FabricsimError(f"{name} must be a 1-D sequence of integer GPU ranks (got shape {a.shape}, dtype {a.dtype})")
    if s.size != d.size:
        raise FabricsimError(f"src_ranks has {s.size} entries but dst_ranks has {d.size}: pass one destination per source")
    for name, a in (("src_ranks", s), ("dst_ranks", d)):
        bad = (a < 0) | (a >= topo.n_gpus)
        if bad.any():
            raise FabricsimError(
                f"{name} contains rank {int(a[np.argmax(bad)])}, outside 0..{topo.n_gpus - 1} for {topo.name}: "
                f"use ranks below {topo.n_gpus}"
            )
    return s.astype(np.int64), d.astype(np.int64)


def _p2p_allowed(topo: Topology) -> bool:
    """PCIe peer-to-peer between GPUs: features['p2p'], else the spec's `p2p`, else allowed (NCCL default)."""
    if "p2p" in topo.features:
        return bool(topo.features["p2p"])
    return bool(getattr(topo.spec, "p2p", True))


def _gdr(topo: Topology, tb: Tables, ranks: np.ndarray, nics: np.ndarray | None = None,
         common: tuple | None = None) -> np.ndarray:
    """GPUDirect RDMA between each GPU and its own NIC (or the NIC `nics` names for it), as NCCL's
    ncclTopoCheckGdr decides it: on when enabled and the GPU-NIC path stays below a PCIe switch (PIX/PXB), or
    enters the CPU over NVLink-C2C (P2C, Grace); a path through the CPU root complex stages in host memory.
    `common`: `lowest_common` of the GPUs' devices and the NICs, when the caller has it."""
    if not topo.features.get("gpudirect", True):
        return np.zeros(ranks.size, dtype=bool)
    gpu, nic = topo.gpu_device[ranks], topo.gpu_nic[ranks] if nics is None else nics
    found, i, _, lca, _, _ = lowest_common(topo, tb, gpu, nic) if common is None else common
    at_cpu = topo.dev_kind[np.maximum(lca, 0)] == DeviceKind.CPU
    first_hop = tb.parent_link[gpu]
    c2c = (i == 1) & (first_hop >= 0) & tb.c2c_tech[topo.link_tech[np.maximum(first_hop, 0)]]
    return found & (~at_cpu | c2c)


def _net(topo: Topology, tb: Tables, idx: np.ndarray, s: np.ndarray, d: np.ndarray, use_pxn: bool, adaptive: bool,
         p2p: bool = False):
    """Pairs on different hosts: source host part, fabric, destination host part. A GPU with several NIC ports sends
    on all of them at once, its j-th port to the destination's j-th (the same rail): NCCL spreads a GPU's channels
    over its NICs (ncclTopoGetLocalNet: channelId mod NICs per GPU) and multi-rail plugins stripe one message over
    them (aws-ofi-nccl), so each pair's bytes split evenly over its k port pairs. A sub-flow whose port is down
    crosses on the GPU's other working ports, or the node's working NICs, instead (`failover`); the others keep
    their share."""
    gpu_nic = topo.gpu_nic if topo.gpu_nic is not None else np.full(topo.n_gpus, -1, dtype=np.int32)
    no_nic = (gpu_nic[s] < 0) | (gpu_nic[d] < 0)
    if no_nic.any():
        k = int(np.argmax(no_nic))
        r = int(s[k] if gpu_nic[s[k]] < 0 else d[k])
        raise FabricsimError(
            f"GPU rank {r} has no NIC but must reach another host (ranks {int(s[k])} -> {int(d[k])}): give its node a NIC on the fabric"
        )
    k = nics_per_gpu(topo)
    pair = np.repeat(np.arange(s.size), k)  # pair of each (pair, port) sub-flow
    port = np.tile(np.arange(k, dtype=np.int64), s.size)
    s, d, idx = s[pair], d[pair], idx[pair]
    leg, share, nic_s, nic_d = nic_legs(topo, tb, s, d, gpu_nic[s] + port, gpu_nic[d] + port, use_pxn, p2p)
    s, d, idx, share = s[leg], d[leg], idx[leg], share / k
    relay = s.copy()
    nv = np.full((s.size, 2), -1, dtype=np.int32)
    pxn = np.zeros(s.size, dtype=bool)
    if use_pxn and tb.n_rails:
        rail_s, rail_d = topo.dev_local[nic_s], topo.dev_local[nic_d]
        peer = tb.rail_gpu[topo.gpu_node[s].astype(np.int64) * tb.n_rails + rail_d]
        want = np.flatnonzero((rail_s != rail_d) & (peer >= 0) & (peer != s))
        # the relay's port on the destination's rail (a GPU's ports are consecutive NIC devices in rail order)
        on_rail = gpu_nic[peer[want]] + (rail_d[want] - topo.dev_local[gpu_nic[peer[want]]])
        kind, mat = nvlink_paths(topo, tb, s[want], peer[want], bridge=False)
        ok = (kind == PathKind.NVLINK) & _gdr(topo, tb, peer[want], on_rail)
        w = want[ok]
        relay[w], nv[w], pxn[w], nic_s[w] = peer[w], mat[ok], True, on_rail[ok]
    # NIC down: through the chosen NIC's own GPU (PXN), unless the NIC is another port of the sender's own
    lost = np.flatnonzero(~pxn & ~_own_port(topo, s, nic_s, k))
    if lost.size:
        peer = tb.nic_gpu[nic_s[lost]].astype(np.int64)
        kind, mat = nvlink_paths(topo, tb, s[lost], np.maximum(peer, 0), bridge=False)
        ok = (peer >= 0) & (peer != s[lost]) & (kind == PathKind.NVLINK)
        ok &= _gdr(topo, tb, np.maximum(peer, 0), nic_s[lost])
        w = lost[ok]
        relay[w], nv[w], pxn[w] = peer[ok], mat[ok], True
    # a receiver whose NIC is down: a ring or tree enters its node at the working NIC's GPU, which forwards over
    # NVLink (NCCL's graph search starts and ends channels at GPUs local to a NIC, search.cc); a point-to-point
    # receive stays local, over PCIe through the CPU (paths.cc enables PXN in the GPU -> NIC direction only)
    sink, nv_in = d.copy(), np.full((d.size, 2), -1, dtype=np.int32)
    lost = np.flatnonzero(~_own_port(topo, d, nic_d, k)) if not p2p else np.zeros(0, dtype=np.int64)
    if lost.size:
        peer = tb.nic_gpu[nic_d[lost]].astype(np.int64)
        kind, mat = nvlink_paths(topo, tb, np.maximum(peer, 0), d[lost], bridge=False)
        ok = (peer >= 0) & (peer != d[lost]) & (kind == PathKind.NVLINK)
        ok &= _gdr(topo, tb, np.maximum(peer, 0), nic_d[lost])
        w = lost[ok]
        sink[w], nv_in[w], pxn[w] = peer[ok], mat[ok], True
    # GPUDirect and the host part of the path depend on the GPU and its NIC alone: found once per distinct pair
    src_part, gdr_src = _host_part(topo, tb, relay, nic_s, outward=True)
    dst_part, gdr_dst = _host_part(topo, tb, sink, nic_d, outward=False)
    row, weight, fab = fabric_paths(topo, tb, nic_s, nic_d, adaptive)
    kind = np.where(pxn, PathKind.PXN, np.where(gdr_src & gdr_dst, PathKind.NET, PathKind.NET_HOST)).astype(np.int8)
    mat = np.hstack([nv[row], src_part[row], fab, dst_part[row], nv_in[row]])
    return idx[row], weight * share[row], kind[row], mat


def _own_port(topo: Topology, ranks: np.ndarray, nics: np.ndarray, k: int) -> np.ndarray:
    """Whether each NIC is one of the `k` ports of its rank's GPU (consecutive NIC devices from `gpu_nic`)."""
    first = topo.gpu_nic[ranks].astype(np.int64)
    return (nics >= first) & (nics < first + k)


def _host_part(topo: Topology, tb: Tables, gpus: np.ndarray, nics: np.ndarray, outward: bool):
    """(links between each GPU and its NIC inside the host (GPU to NIC when `outward`), GPUDirect per row), found
    once per distinct (GPU, NIC), whose lowest common ancestor both read."""
    keys, of_key = np.unique(gpus.astype(np.int64) * topo.n_devices + nics, return_inverse=True)
    g, n = keys // topo.n_devices, keys % topo.n_devices
    dev = topo.gpu_device[g]
    common = lowest_common(topo, tb, dev, n) if dev.size else None
    gdr = _gdr(topo, tb, g, n, common)
    part = (host_paths(topo, tb, dev, n, ~gdr, common) if outward else
            host_paths(topo, tb, n, dev, ~gdr, None if common is None else swapped(common)))
    of_key = of_key.ravel()
    return part[of_key], gdr[of_key]


def _assemble(topo: Topology, blocks: list[tuple], n_pairs: int) -> Routes:
    """Compact padded link matrices into the CSR Routes, paths ordered by pair (stable)."""
    pairs, weights, kinds, lengths, flats, lats = [], [], [], [], [], []
    latency = np.append(topo.link_latency, 0.0)  # the padding's -1 reads the 0.0 at the end
    for pair, weight, kind, mat in blocks:
        valid = mat >= 0
        pairs.append(pair)
        weights.append(weight)
        kinds.append(kind)
        lengths.append(np.count_nonzero(valid, axis=1))
        flats.append(mat[valid])
        lats.append(latency[mat].sum(axis=1))
    pair = np.concatenate(pairs).astype(np.int64)
    length = np.concatenate(lengths).astype(np.int64)
    flat = np.concatenate(flats).astype(np.int32)
    start = np.zeros(length.size + 1, dtype=np.int64)
    np.cumsum(length, out=start[1:])
    order = np.argsort(pair, kind="stable")
    length = length[order]
    ptr = np.zeros(length.size + 1, dtype=np.int64)
    np.cumsum(length, out=ptr[1:])
    gather = np.arange(ptr[-1], dtype=np.int64) + np.repeat(start[:-1][order] - ptr[:-1], length)
    return Routes(
        n_pairs=n_pairs,
        path_pair=pair[order],
        path_weight=np.concatenate(weights).astype(np.float64)[order],
        path_ptr=ptr,
        links=flat[gather],
        path_latency=np.concatenate(lats).astype(np.float64)[order],
        path_kind=np.concatenate(kinds).astype(np.int8)[order],
    )
