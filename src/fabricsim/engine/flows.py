"""Turn one step's traffic into flows on links: routed point-to-point transfers and in-network operations.

A `FlowSet` is the solver's input: a COO flow->link incidence list (with the share of the flow's rate
each link carries) plus per-flow wire bytes, multiplicity (identical parallel connections, e.g. NCCL
channels between the same GPUs), rate cap, path latency and NCCL hop class. Identical transfers of a
step are merged into one flow of higher multiplicity, which max-min fairness treats exactly like the
separate flows. A transfer routed over several weighted paths (adaptive routing) is one flow whose
links carry its paths' weights: spraying keeps the paths' rates in proportion, and the transfer
competes for its NIC and PCIe links as one flow, as it does on the wire.

Flows carry their bytes as a protocol with wire efficiency 1 would put them on the wire: every protocol
(LL, LL128, Simple) only divides all of them by its efficiency (`FlowSet.on_wire`), so the flows, and the
drain times the solver finds for them (linear in the bytes), are shared by the protocols of one algorithm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from fabricsim.engine import invariants
from fabricsim.engine.protocols import HOP_NET, HOP_NVLINK, HOP_PCI
from fabricsim.errors import FabricsimError
from fabricsim import routing
from fabricsim.routing.model import PathKind, Routes
from fabricsim.routing.tables import tables
from fabricsim.schedules.model import InNetworkTraffic, StepTraffic
from fabricsim.topology.model import DeviceKind, Topology

N_HOPS = 3  # NCCL hop classes: nvlink, pci, net (protocols.HOP_CLASSES)
# NCCL hop class of each routing PathKind (tuning.cc prices NVLink, PCI and NET hops differently).
HOP_OF_KIND = np.array([HOP_NVLINK] * 8, dtype=np.int8)
HOP_OF_KIND[[PathKind.PCIE, PathKind.HOST]] = HOP_PCI
HOP_OF_KIND[[PathKind.NET, PathKind.NET_HOST, PathKind.PXN]] = HOP_NET


@dataclass(frozen=True, eq=False)
class FlowSet:
    edge_flow: np.ndarray  # int64, flow of each edge
    edge_link: np.ndarray  # int64, link of each edge
    edge_share: np.ndarray  # float64, fraction of the flow's rate crossing the edge's link (its paths' weights)
    nbytes: np.ndarray  # float64 wire bytes per copy
    payload: np.ndarray  # float64 payload bytes per copy
    mult: np.ndarray  # float64 identical copies
    rate_cap: np.ndarray  # float64 bytes/s per copy (inf: none)
    latency: np.ndarray  # float64 s, path latency
    hop: np.ndarray  # int8 NCCL hop class
    src: np.ndarray  # int32 GPU rank sending (in-network flows: -1 when the source is a switch)
    dst: np.ndarray  # int32 GPU rank receiving (-1 when the destination is a switch)

    @property
    def n_flows(self) -> int:
        return int(self.nbytes.shape[0])

    def scaled(self, factor: float) -> FlowSet:
        """The same flows carrying `factor` times the bytes."""
        return replace(self, nbytes=self.nbytes * factor, payload=self.payload * factor)

    def on_wire(self, efficiency: float) -> FlowSet:
        """The same flows under a protocol whose wire carries `efficiency` payload bytes per byte."""
        return self if efficiency == 1.0 else replace(self, nbytes=self.nbytes / efficiency)

    def link_bytes(self, n_links: int) -> np.ndarray:
        """Wire bytes each link carries."""
        return np.bincount(self.edge_link, weights=(self.nbytes * self.mult)[self.edge_flow] * self.edge_share,
                           minlength=n_links)

    def link_flows(self, n_links: int) -> np.ndarray:
        """Number of flows (counting copies) crossing each link."""
        return np.bincount(self.edge_link, weights=self.mult[self.edge_flow], minlength=n_links)


@dataclass(frozen=True)
class FlowRules:
    """How transfers become flows, besides their routes."""

    connections: int = 1  # parallel connections carrying each transfer (NCCL channels between the same GPUs)
    pxn: bool | None = None  # PXN for cross-rail traffic: None as NCCL, True / False forced
    adaptive: bool = False  # spread over every equal-cost fabric path instead of one hashed path
    net_peer_bw: float = math.inf  # bytes/s one point-to-point transfer gets across the network (NCCL p2p channels)
    nvls_efficiency: float = 1.0  # NCCL nvlsEfficiency: NVLS moves this fraction of NVLink's rate (0: no NVLS)
    p2p: bool = False  # point-to-point operations (AllToAll, SendRecv): routed as such where a NIC is down


def empty_flows() -> FlowSet:
    i, f = np.zeros(0, np.int64), np.zeros(0)
    return FlowSet(i, i, f, f, f, f, f, f, np.zeros(0, np.int8), np.zeros(0, np.int32), np.zeros(0, np.int32))


def concat(sets: list[FlowSet]) -> FlowSet:
    """One FlowSet holding all flows of `sets`, in order (the one set with flows itself, when only one has)."""
    sets = [s for s in sets if s.n_flows] or [empty_flows()]
    if len(sets) == 1:
        return sets[0]
    offsets = np.cumsum([0] + [s.n_flows for s in sets[:-1]])
    return FlowSet(
        edge_flow=np.concatenate([s.edge_flow + o for s, o in zip(sets, offsets)]),
        **{f: np.concatenate([getattr(s, f) for s in sets])
           for f in ("edge_link", "edge_share", "nbytes", "payload", "mult", "rate_cap", "latency", "hop", "src", "dst")},
    )


def routes_for(topo: Topology, src: np.ndarray, dst: np.ndarray, pxn: bool | None, adaptive: bool,
               p2p: bool = False) -> Routes:
    """`route_pairs`, kept in the topology's store of structural data by the exact pair list (a ring's steps all share
    one; so do the topology's calibrated variants): the key holds the pairs' bytes themselves (8 per pair, far less
    than their routes), so no two lists can share one."""
    key = ("routes", src.astype(np.int32).tobytes() + b"|" + dst.astype(np.int32).tobytes(), pxn, adaptive, p2p)
    return topo.derive_structure(key, lambda: routing.route_pairs(topo, src, dst, pxn=pxn, adaptive=adaptive, p2p=p2p))


def _unique_transfers(src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray) -> tuple[np.ndarray, ...]:
    """Distinct (src, dst, bytes) transfers sorted by src, dst, bytes, how often each occurs, and which distinct
    transfer each input is (two integer sort keys: much faster than np.unique over rows for an all-to-all's n^2
    transfers)."""
    pair = (src.astype(np.int64) << 32) | dst.astype(np.int64)
    size = np.asarray(nbytes, dtype=np.float64)
    order = np.lexsort((size, pair))
    pair, size = pair[order], size[order]
    first = np.concatenate([[True], (pair[1:] != pair[:-1]) | (size[1:] != size[:-1])])
    start = np.flatnonzero(first)
    counts = np.diff(np.append(start, pair.shape[0]))
    which = np.empty(order.shape[0], dtype=np.int64)
    which[order] = np.cumsum(first) - 1
    return ((pair[start] >> 32).astype(np.int32), (pair[start] & 0xFFFFFFFF).astype(np.int32), size[start], counts,
            which)


def p2p_flows(topo: Topology, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray, rules: FlowRules) -> FlowSet:
    """Flows of point-to-point transfers between GPU ranks, each split over `rules.connections` parallel
    connections; one flow per transfer, crossing its routed paths' links with their weights. Local copies
    (src == dst) and empty transfers are free. A transfer that crosses the network is capped at
    `rules.net_peer_bw` in all (NCCL point-to-point operations stripe one peer's data over a fixed number of
    channels, each with a bounded rate)."""
    keep = (src != dst) & (nbytes > 0)
    if not keep.any():
        return empty_flows()
    conns = rules.connections
    usrc, udst, ubytes, counts, _ = _unique_transfers(src[keep], dst[keep], nbytes[keep])
    routes = routes_for(topo, usrc, udst, rules.pxn, rules.adaptive, rules.p2p)
    edge_flow, edge_link, edge_share = _transfer_edges(routes, topo.n_links)
    if invariants.ON:
        invariants.check_conservation("routed transfers", topo.link_src, topo.link_dst, topo.n_devices, edge_flow,
                                      edge_link, edge_share, topo.gpu_device[usrc], topo.gpu_device[udst])
    pair = routes.path_pair.astype(np.int64)
    first = np.flatnonzero(np.concatenate([[True], pair[1:] != pair[:-1]]))  # paths of a pair are contiguous
    payload = ubytes / conns
    hop = HOP_OF_KIND[routes.path_kind[first]]  # a pair's paths are all of one kind
    rate_cap = np.where(hop == HOP_NET, rules.net_peer_bw / conns, np.inf)
    return FlowSet(
        edge_flow=edge_flow,
        edge_link=edge_link,
        edge_share=edge_share,
        nbytes=payload,
        payload=payload,
        mult=(counts * conns).astype(np.float64),
        rate_cap=rate_cap,
        latency=np.bincount(pair, weights=routes.path_weight * routes.path_latency, minlength=usrc.shape[0]),
        hop=hop,
        src=usrc,
        dst=udst,
    )


def _transfer_edges(routes: Routes, n_links: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flow, link, share) of every link a pair's paths cross, one edge per (pair, link) in the order the
    paths first reach it; share = the summed weights of the pair's paths through that link."""
    lengths = np.diff(routes.path_ptr)
    flow = np.repeat(routes.path_pair.astype(np.int64), lengths)
    link = routes.links.astype(np.int64)
    share = np.repeat(routes.path_weight.astype(np.float64), lengths)
    if routes.n_paths == routes.n_pairs:  # one path per pair: its links are already distinct
        return flow, link, share
    key, first, inv = np.unique(flow * n_links + link, return_index=True, return_inverse=True)
    total = np.bincount(inv.ravel(), weights=share, minlength=key.shape[0])
    order = np.argsort(first, kind="stable")
    return key[order] // n_links, key[order] % n_links, total[order]


def _switch_flows(links: np.ndarray, ends: np.ndarray, is_up: np.ndarray, nbytes, latency: float,
                  hop: int, conns: int, copies: np.ndarray | int = 1) -> FlowSet:
    """One single-link flow per link of an in-network operation's tree; `ends` is the GPU rank at the link's
    GPU side (-1 between switches); `nbytes` per link or one for all; `copies`: identical flows each stands for."""
    n = links.shape[0]
    payload = np.broadcast_to(np.asarray(nbytes, dtype=np.float64) / conns, (n,)).copy()
    return FlowSet(
        edge_flow=np.arange(n, dtype=np.int64), edge_link=links.astype(np.int64), edge_share=np.ones(n),
        nbytes=payload, payload=payload,
        mult=np.broadcast_to(np.asarray(copies, dtype=np.float64) * conns, (n,)).copy(), rate_cap=np.full(n, np.inf),
        latency=np.full(n, latency),
        hop=np.full(n, hop, dtype=np.int8), src=np.where(is_up, ends, -1).astype(np.int32),
        dst=np.where(is_up, -1, ends).astype(np.int32),
    )


def nvls_flows(topo: Topology, ops: InNetworkTraffic, gpu_ranks: np.ndarray, rules: FlowRules) -> FlowSet:
    """NVLink SHARP, every NVLS operation of a step at once (schedule ranks): each input's GPU->NVSwitch link and
    each output's NVSwitch->GPU link carry the chunk, at NCCL's nvlsEfficiency (the multimem loads/stores reach
    less than NVLink's bulk rate). The same chunk size on the same link (every channel's operation on one GPU) is
    one flow of higher multiplicity, as identical transfers are."""
    if rules.nvls_efficiency <= 0:
        raise FabricsimError("NVLS needs Hopper or newer GPUs (NCCL nvlsEfficiency is 0 before sm_90): use a ring or tree schedule")
    ranks, is_up, nbytes = gpu_ranks[ops.ends], ops.is_input, ops.nbytes[ops.owner]
    links = _nvls_links(topo, ranks, is_up)
    order = np.lexsort((nbytes, links))
    sorted_links, sorted_bytes = links[order], nbytes[order]
    same = np.concatenate([[False], (sorted_links[1:] == sorted_links[:-1]) & (sorted_bytes[1:] == sorted_bytes[:-1])])
    start = np.flatnonzero(~same)
    one = order[start]
    flows = _switch_flows(links[one], ranks[one], is_up[one], nbytes[one], 2 * float(topo.link_latency[links].max()),
                          HOP_NVLINK, rules.connections, np.diff(np.append(start, order.shape[0])))
    return replace(flows, nbytes=flows.payload / rules.nvls_efficiency)


def _nvls_links(topo: Topology, ranks: np.ndarray, is_up: np.ndarray) -> np.ndarray:
    """Each end's link to (inputs) or from (outputs) its domain's one logical NVSwitch."""
    up = tables(topo).nvsw_link[ranks]
    if (up < 0).any():
        bad = int(ranks[up < 0][0])
        raise FabricsimError(f"GPU rank {bad} has no NVSwitch link, so NVLS cannot run on it: use a ring or tree schedule, or a topology with NVSwitch")
    return np.where(is_up, up, up ^ 1)


def sharp_flows(topo: Topology, inputs: np.ndarray, outputs: np.ndarray, nbytes: float, conns: int) -> FlowSet:
    """InfiniBand SHARP: every input's path GPU -> NIC -> leaf and the switch tree up to the aggregation switch
    (lowest common ancestor of the participating leaves) carry the chunk once, and the same tree back down to
    every output. Each tree link carries the data once because switches reduce (up) and replicate (down)."""
    if not topo.features.get("sharp"):
        raise FabricsimError(f"topology '{topo.name}' has no SHARP-capable fabric (features['sharp'] is false): use a ring or tree schedule, or a SHARP fabric")
    ranks = np.unique(np.concatenate([inputs, outputs])).astype(np.int32)
    nodes = topo.gpu_node[ranks]
    if np.unique(nodes).shape[0] < 2:
        raise FabricsimError("a SHARP operation needs ranks on at least two nodes: use NVLS or a ring inside one node")
    # Probe routes to a rank on another node give each GPU's own way onto the fabric (GPUDirect or host bounce).
    probe = ranks[np.argmax(nodes != nodes[0])]
    other = np.where(nodes == topo.gpu_node[probe], ranks[0], probe).astype(np.int32)
    up_routes = routes_for(topo, ranks, other, None, False)
    down_routes = routes_for(topo, other, ranks, None, False)
    leaf_of = {}
    up_links, down_links, up_ends, down_ends = [], [], [], []
    lat_edge = 0.0
    in_set, out_set = set(inputs.tolist()), set(outputs.tolist())
    for i, r in enumerate(ranks.tolist()):
        up = _first_path(up_routes, i)
        cut = _index_into_leaf(topo, up)
        leaf_of[r] = int(topo.link_dst[up[cut]])
        down = _first_path(down_routes, i)
        start = _index_out_of_leaf(topo, down)
        if r in in_set:
            up_links.append(up[: cut + 1])
            up_ends.append(np.where(np.arange(cut + 1) == 0, r, -1))
        if r in out_set:
            down_links.append(down[start:])
            down_ends.append(np.where(np.arange(down.shape[0] - start) == down.shape[0] - start - 1, r, -1))
        lat_edge = max(lat_edge, float(topo.link_latency[up[: cut + 1]].sum() + topo.link_latency[down[start:]].sum()))
    leaves = sorted(set(leaf_of.values()))
    tree_up, climb = _aggregation_tree(topo, leaves)
    tree_links = np.array(tree_up, dtype=np.int64)
    links = np.concatenate(up_links + [tree_links] + down_links + [tree_links ^ 1]).astype(np.int64)
    ends = np.concatenate(up_ends + [np.full(tree_links.shape[0], -1)] + down_ends + [np.full(tree_links.shape[0], -1)])
    is_up = np.concatenate([np.ones(sum(len(x) for x in up_links) + tree_links.shape[0], bool),
                            np.zeros(sum(len(x) for x in down_links) + tree_links.shape[0], bool)])
    links, first = np.unique(links, return_index=True)
    return _switch_flows(links, ends[first], is_up[first], nbytes, lat_edge + 2 * climb, HOP_NET, conns)


def _first_path(routes: Routes, pair: int) -> np.ndarray:
    p = int(np.flatnonzero(routes.path_pair == pair)[0])
    return routes.path_links(p).astype(np.int64)


def _index_into_leaf(topo: Topology, path: np.ndarray) -> int:
    hit = np.flatnonzero((topo.dev_kind[topo.link_dst[path]] == DeviceKind.FABRIC_SWITCH))
    if hit.shape[0] == 0:
        raise FabricsimError("SHARP needs the ranks' traffic to cross the fabric switches: place the ranks on nodes joined by an InfiniBand fabric")
    return int(hit[0])


def _index_out_of_leaf(topo: Topology, path: np.ndarray) -> int:
    hit = np.flatnonzero((topo.dev_kind[topo.link_src[path]] == DeviceKind.FABRIC_SWITCH))
    return int(hit[-1])


def _aggregation_tree(topo: Topology, leaves: list[int]) -> tuple[list[int], float]:
    """Upward links from each leaf to the aggregation switch (the lowest, then lowest-index, switch that is
    an ancestor of every participating leaf; each leaf climbs by breadth-first search, lowest link first),
    and the latency of the longest climb."""
    if len(leaves) == 1:
        return [], 0.0
    parents = []
    for leaf in leaves:
        seen = {leaf: -1}
        frontier = [leaf]
        while frontier:
            nxt = []
            for d in frontier:
                for lk in topo.links_from(d).tolist():
                    t = int(topo.link_dst[lk])
                    if topo.dev_kind[t] == DeviceKind.FABRIC_SWITCH and topo.dev_level[t] > topo.dev_level[d] and t not in seen:
                        seen[t] = lk
                        nxt.append(t)
            frontier = nxt
        parents.append(seen)
    common = set(parents[0]).intersection(*parents[1:])
    if not common:
        raise FabricsimError("the ranks' leaf switches share no common ancestor switch, so no SHARP tree spans them: use a ring or tree schedule")
    root = min(common, key=lambda d: (int(topo.dev_level[d]), d))
    links, climb = set(), 0.0
    for seen in parents:
        d, lat = root, 0.0
        while seen[d] != -1:
            links.add(seen[d])
            lat += float(topo.link_latency[seen[d]])
            d = int(topo.link_src[seen[d]])
        climb = max(climb, lat)
    return sorted(links), climb


def _live_innet(st: StepTraffic) -> InNetworkTraffic:
    """The step's in-network operations that move bytes, after checking each is one the engine times."""
    ops = st.innet
    unknown = (ops.kind != "nvls") & (ops.kind != "sharp")
    if unknown.any():
        raise FabricsimError(f"unknown in-network operation '{ops.kind[unknown][0]}': the engine times 'nvls' and 'sharp'")
    return ops.take(ops.nbytes > 0)


def step_flows(topo: Topology, st: StepTraffic, gpu_ranks: np.ndarray, rules: FlowRules) -> FlowSet:
    """All flows of one step: routed transfers plus every in-network operation's links."""
    parts = [p2p_flows(topo, gpu_ranks[st.src], gpu_ranks[st.dst], np.asarray(st.nbytes, np.float64), rules)]
    ops = _live_innet(st)
    for _, inputs, outputs, nbytes in ops.take(ops.kind == "sharp"):
        parts.append(sharp_flows(topo, gpu_ranks[inputs], gpu_ranks[outputs], float(nbytes), rules.connections))
    nvls = ops.take(ops.kind == "nvls")
    if len(nvls):
        parts.append(nvls_flows(topo, nvls, gpu_ranks, rules))
    return concat(parts)


def item_latency(topo: Topology, st: StepTraffic, gpu_ranks: np.ndarray, rules: FlowRules) -> np.ndarray:
    """(transfers + in-network operations, 3): the path latency of each item's flows per NCCL hop class (nvlink,
    pci, net), -inf where it has none (a local copy, an empty transfer): what `step_flows` gives them, found
    without building the flows. A transfer's routes are the step's own (kept in the store), its latency the mean
    of its paths' by weight (as p2p_flows); an NVLS operation waits 2 x its slowest NVSwitch link, a SHARP
    operation its tree's climb and edges."""
    m = st.src.shape[0]
    out = np.full((m + len(st.innet), N_HOPS), -np.inf)
    src, dst, nbytes = gpu_ranks[st.src], gpu_ranks[st.dst], np.asarray(st.nbytes, np.float64)
    keep = (src != dst) & (nbytes > 0)
    if keep.any():
        usrc, udst, _, _, which = _unique_transfers(src[keep], dst[keep], nbytes[keep])
        routes = routes_for(topo, usrc, udst, rules.pxn, rules.adaptive, rules.p2p)
        pair = routes.path_pair.astype(np.int64)
        first = np.flatnonzero(np.concatenate([[True], pair[1:] != pair[:-1]]))  # a pair's paths: one kind
        per = np.full((usrc.shape[0], N_HOPS), -np.inf)  # as p2p_flows: the weighted mean of the pair's paths
        per[np.arange(usrc.shape[0]), HOP_OF_KIND[routes.path_kind[first]]] = np.bincount(
            pair, weights=routes.path_weight * routes.path_latency, minlength=usrc.shape[0])
        out[np.flatnonzero(keep)] = per[which]
    ops = _live_innet(st)
    live = np.flatnonzero(st.innet.nbytes > 0)
    nvls = ops.kind == "nvls"
    if nvls.any():
        mine = ops.take(nvls)
        slowest = np.full(len(mine), -np.inf)
        np.maximum.at(slowest, mine.owner, topo.link_latency[_nvls_links(topo, gpu_ranks[mine.ends], mine.is_input)])
        out[m + live[nvls], HOP_NVLINK] = 2 * slowest
    for i, (_, inputs, outputs, nbytes) in zip(live[~nvls].tolist(), ops.take(~nvls)):
        fs = sharp_flows(topo, gpu_ranks[inputs], gpu_ranks[outputs], float(nbytes), 1)
        out[m + i, HOP_NET] = float(fs.latency.max())
    return out
