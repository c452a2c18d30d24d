"""Per-topology lookup tables routing reuses across calls: built once per Topology, kept in its derived store.

A Topology is immutable, so its tables never go stale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.topology.model import DeviceKind, Topology


@dataclass(frozen=True, eq=False)
class Tables:
    """Vectorised indexes over one topology.

    link_keys/link_order: sorted `src * n_devices + dst` and the link each key belongs to (lowest
        link index first when two devices are joined twice), for `find_links`.
    nvsw_link: per GPU rank, its link to the NVLink domain's NVSWITCH device (-1: none).
    parent_link/depth/root: the host tree. Every host device (GPU, NIC, PCIe switch) hangs below a
        CPU socket; parent_link is the link towards that CPU (-1 at CPUs and outside hosts), depth the
        hops to it and root the CPU itself (-1 outside hosts). Found by BFS from the CPUs over
        GPU/NIC/PCIe-switch -> PCIe-switch/CPU links (PCIe and NVLink-C2C), fewest hops first.
    up_ptr/up_links: CSR over devices of fabric up-links (FABRIC_SWITCH -> higher-level FABRIC_SWITCH),
        sorted by destination device for deterministic ECMP columns.
    nic_leaf: per device, the NIC's link into the fabric (-1: not a cabled NIC).
    nic_alive: per device, a NIC cabled to a leaf and reachable from its host (a NIC whose cables failed is not:
        NCCL lists only ports in the ACTIVE state, net_ib/init.cc `portAttr.state != IBV_PORT_ACTIVE`).
    nic_gpu: per device, the NIC's local GPU: the lowest GPU rank whose own NIC (one of its `nics_per_gpu`
        ports) it is (-1: none), a PXN relay.
    node_nic_ptr/node_nics: CSR per node of its working NICs, in rail order.
    rail_gpu/n_rails: `rail_gpu[node * n_rails + rail]` is the lowest GPU rank of that node one of whose own
        NIC ports sits on that rail and works (-1: none); the PXN relay lookup.
    core_reach/fabric_ord: on a 3-level fabric with failed links, `core_reach[fabric_ord[core], fabric_ord[leaf]]`
        says whether the core reaches the leaf going down (through a spine joined to both); None on a whole fabric,
        where every core reaches every leaf (a Clos).
    dom_ranks/dom_ptr: GPU ranks sorted by NVLink domain (rank order inside a domain) and CSR pointers
        per domain, for NVLink-bridge candidates.
    c2c_tech: per entry of `topo.techs`, whether it is NVLink-C2C (GPU <-> Grace CPU).
    """

    link_keys: np.ndarray
    link_order: np.ndarray
    nvsw_link: np.ndarray
    parent_link: np.ndarray
    depth: np.ndarray
    root: np.ndarray
    max_depth: int
    up_ptr: np.ndarray
    up_links: np.ndarray
    nic_leaf: np.ndarray
    nic_alive: np.ndarray
    nic_gpu: np.ndarray
    node_nic_ptr: np.ndarray
    node_nics: np.ndarray
    rail_gpu: np.ndarray
    n_rails: int
    dom_ranks: np.ndarray
    dom_ptr: np.ndarray
    c2c_tech: np.ndarray
    core_reach: np.ndarray | None = None
    fabric_ord: np.ndarray | None = None


def tables(topo: Topology) -> Tables:
    """The routing tables of `topo` (built on first use, then kept in its store of structural data)."""
    return topo.derive_structure(("routing_tables",), lambda: _build(topo))


def find_links(topo: Topology, tb: Tables, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Link index from device `src` to device `dst`, elementwise (-1 where none; -1 inputs give -1)."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    out = np.full(np.broadcast(src, dst).shape, -1, dtype=np.int32)
    if tb.link_keys.size == 0:
        return out
    key = src * topo.n_devices + dst
    i = np.minimum(np.searchsorted(tb.link_keys, key), tb.link_keys.size - 1)
    hit = (tb.link_keys[i] == key) & (src >= 0) & (dst >= 0)
    out[hit] = tb.link_order[i[hit]]
    return out


def nics_per_gpu(topo: Topology) -> int:
    """NIC ports each GPU sends on: `features['nics_per_gpu']` consecutive NIC devices from its `gpu_nic`
    (topology.builders); 1 where the topology does not say."""
    return max(int(topo.features.get("nics_per_gpu", 1) or 1), 1)


def gpu_ports(topo: Topology) -> tuple[np.ndarray, np.ndarray]:
    """(GPU rank, NIC device) of every NIC port a GPU sends on, rank-major (ranks ascend; a GPU's ports in order)."""
    nic = topo.gpu_nic if topo.gpu_nic is not None else np.full(topo.n_gpus, -1, dtype=np.int32)
    ranks = np.flatnonzero(nic >= 0)
    k = nics_per_gpu(topo)
    return np.repeat(ranks, k), (np.repeat(nic[ranks].astype(np.int64), k) + np.tile(np.arange(k), ranks.size))


def _first_index(group: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(the groups 0..size-1 present, ascending; the index of each one's first member): np.unique's
    `return_index` without sorting (groups are small integers)."""
    n = group.shape[0]
    first = np.full(size, n, dtype=np.int64)
    np.minimum.at(first, group, np.arange(n))
    present = np.flatnonzero(first < n)
    return present, first[present]


def _first_per(group: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """`out[g]` = the first value (in array order) whose group is g; -1 where none."""
    out = np.full(size, -1, dtype=np.int32)
    g, first = _first_index(group, size)
    out[g] = values[first]
    return out


def _build(topo: Topology) -> Tables:
    n_dev, n_links = topo.n_devices, topo.n_links
    kind, src, dst = topo.dev_kind, topo.link_src.astype(np.int64), topo.link_dst.astype(np.int64)
    links = np.arange(n_links, dtype=np.int32)

    keys = src * n_dev + dst
    order = np.argsort(keys, kind="stable")
    link_keys, link_order = keys[order], order.astype(np.int32)

    rank_of = np.full(n_dev, -1, dtype=np.int64)
    rank_of[topo.gpu_device] = np.arange(topo.n_gpus)

    to_nvsw = (kind[src] == DeviceKind.GPU) & (kind[dst] == DeviceKind.NVSWITCH)
    per_gpu = np.bincount(rank_of[src[to_nvsw]], minlength=topo.n_gpus)
    if per_gpu.size and per_gpu.max() > 1:
        r = int(np.argmax(per_gpu))
        raise FabricsimError(
            f"GPU rank {r} links to {int(per_gpu[r])} NVSwitch devices: routing expects one logical NVSWITCH "
            "device per NVLink domain; aggregate the chips into one device with dev_units = chips"
        )
    nvsw_link = _first_per(rank_of[src[to_nvsw]], links[to_nvsw], topo.n_gpus)

    parent_link, depth, root = _host_tree(topo, src, dst, links)

    up = (kind[src] == DeviceKind.FABRIC_SWITCH) & (kind[dst] == DeviceKind.FABRIC_SWITCH)
    up &= topo.dev_level[dst] > topo.dev_level[src]
    up_l = links[up]
    up_l = up_l[np.lexsort((up_l, dst[up_l], src[up_l]))]
    up_ptr = np.zeros(n_dev + 1, dtype=np.int64)
    np.cumsum(np.bincount(src[up_l], minlength=n_dev), out=up_ptr[1:])

    nic_up = (kind[src] == DeviceKind.NIC) & (kind[dst] == DeviceKind.FABRIC_SWITCH)
    per_nic = np.bincount(src[nic_up], minlength=n_dev)
    if per_nic.size and per_nic.max() > 1:
        nic = int(np.argmax(per_nic))
        raise FabricsimError(
            f"NIC {topo.device_name(nic)} has {int(per_nic[nic])} fabric ports: routing expects one leaf link per NIC; "
            "model each port (plane) as its own NIC"
        )
    nic_leaf = _first_per(src[nic_up], links[nic_up], n_dev)
    nic_alive = (kind == DeviceKind.NIC) & (nic_leaf >= 0) & (depth >= 0)
    nic_gpu, node_nic_ptr, node_nics = _nic_tables(topo, nic_alive)

    rail_gpu, n_rails = _rail_table(topo, nic_alive)
    core_reach, fabric_ord = _core_reach(topo, src, dst) if topo.link_origin is not None else (None, None)

    dom = topo.gpu_domain
    dom_ranks = np.argsort(dom, kind="stable").astype(np.int64)
    n_dom = int(dom.max()) + 1 if dom.size and dom.max() >= 0 else 0
    dom_ptr = np.zeros(n_dom + 1, dtype=np.int64)
    if n_dom:
        np.cumsum(np.bincount(dom[dom >= 0], minlength=n_dom), out=dom_ptr[1:])
        dom_ranks = dom_ranks[np.count_nonzero(dom < 0) :]
    c2c = np.array(["c2c" in t.lower() for t in topo.techs], dtype=bool)
    return Tables(
        link_keys=link_keys,
        link_order=link_order,
        nvsw_link=nvsw_link,
        parent_link=parent_link,
        depth=depth,
        root=root,
        max_depth=max(int(depth.max()), 0) if depth.size else 0,  # -1 depths: no host tree (no CPU)
        up_ptr=up_ptr,
        up_links=up_l.astype(np.int32),
        nic_leaf=nic_leaf,
        nic_alive=nic_alive,
        nic_gpu=nic_gpu,
        node_nic_ptr=node_nic_ptr,
        node_nics=node_nics,
        rail_gpu=rail_gpu,
        n_rails=n_rails,
        dom_ranks=dom_ranks,
        dom_ptr=dom_ptr,
        c2c_tech=c2c,
        core_reach=core_reach,
        fabric_ord=fabric_ord,
    )


def _host_tree(topo: Topology, src: np.ndarray, dst: np.ndarray, links: np.ndarray):
    """BFS from every CPU over child -> parent host links (see Tables)."""
    kind, node = topo.dev_kind, topo.dev_node
    child_ok = np.isin(kind, (DeviceKind.GPU, DeviceKind.NIC, DeviceKind.PCIE_SWITCH))
    parent_ok = np.isin(kind, (DeviceKind.PCIE_SWITCH, DeviceKind.CPU))
    edge = child_ok[src] & parent_ok[dst] & (node[src] == node[dst]) & (node[src] >= 0)
    e_src, e_dst, e_link = src[edge], dst[edge], links[edge]

    n_dev = topo.n_devices
    depth = np.full(n_dev, -1, dtype=np.int32)
    root = np.full(n_dev, -1, dtype=np.int32)
    parent_link = np.full(n_dev, -1, dtype=np.int32)
    cpus = topo.devices_of(DeviceKind.CPU)
    depth[cpus], root[cpus] = 0, cpus
    level = 0
    while True:
        step = (depth[e_dst] == level) & (depth[e_src] < 0)
        if not step.any():
            break
        child, first = _first_index(e_src[step], n_dev)
        chosen = e_link[step][first]
        parent_link[child] = chosen
        depth[child] = level + 1
        root[child] = root[dst[chosen]]
        level += 1
    return parent_link, depth, root


def _nic_tables(topo: Topology, alive: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(local GPU of each NIC, CSR pointers per node, the node's working NICs in rail order)."""
    n_dev = topo.n_devices
    ranks, nic = gpu_ports(topo)
    nic_gpu = _first_per(nic, ranks.astype(np.int32), n_dev)  # ranks ascend: the first is the lowest
    nics = np.flatnonzero(alive)
    nics = nics[np.lexsort((topo.dev_local[nics], topo.dev_node[nics]))]
    n_nodes = int(topo.dev_node.max()) + 1 if n_dev else 0
    ptr = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(topo.dev_node[nics], minlength=n_nodes), out=ptr[1:])
    return nic_gpu, ptr, nics.astype(np.int32)


def _core_reach(topo: Topology, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Which cores reach which leaves going down (see Tables), on a 3-level fabric; (None, None) otherwise."""
    kind, level = topo.dev_kind, topo.dev_level
    sw = kind == DeviceKind.FABRIC_SWITCH
    if not (sw & (level == 3)).any():
        return None, None
    ord_ = np.full(topo.n_devices, -1, dtype=np.int64)
    for lv in (1, 2, 3):
        members = np.flatnonzero(sw & (level == lv))
        ord_[members] = np.arange(members.size)
    down = sw[src] & sw[dst] & (level[src] == level[dst] + 1)
    sc = down & (level[src] == 3)  # core -> spine
    sl = down & (level[src] == 2)  # spine -> leaf
    n_spine = int((sw & (level == 2)).sum())
    order = np.argsort(ord_[src[sl]], kind="stable")
    leaf_of = ord_[dst[sl]][order]  # leaves below each spine, grouped by spine
    ptr = np.zeros(n_spine + 1, dtype=np.int64)
    np.cumsum(np.bincount(ord_[src[sl]], minlength=n_spine), out=ptr[1:])
    core, spine = ord_[src[sc]], ord_[dst[sc]]
    per = ptr[spine + 1] - ptr[spine]
    reach = np.zeros((int((sw & (level == 3)).sum()), int((sw & (level == 1)).sum())), dtype=bool)
    starts = np.repeat(ptr[spine], per) + np.arange(int(per.sum())) - np.repeat(np.cumsum(per) - per, per)
    reach[np.repeat(core, per), leaf_of[starts]] = True
    return reach, ord_


def _rail_table(topo: Topology, alive: np.ndarray) -> tuple[np.ndarray, int]:
    ranks, nic = gpu_ports(topo)
    if not nic.size:
        return np.full(0, -1, dtype=np.int64), 0
    n_rails = int(topo.dev_local[nic].max()) + 1
    has = alive[nic]
    ranks, rail = ranks[has], topo.dev_local[nic[has]].astype(np.int64)
    n_nodes = int(topo.dev_node.max()) + 1
    key = topo.gpu_node[ranks].astype(np.int64) * n_rails + rail
    table = np.full(n_nodes * n_rails, -1, dtype=np.int64)
    k, first = np.unique(key, return_index=True)  # ranks ascend, so the first is the lowest rank
    table[k] = ranks[first]
    return table, n_rails
