"""Per-pair figures of a Routes: bottleneck bandwidth and latency, each pair taken alone (no contention
with other pairs; the engine handles sharing)."""

from __future__ import annotations

import numpy as np

from fabricsim.routing.model import Routes
from fabricsim.topology.model import Topology


def path_bandwidth(topo: Topology, routes: Routes) -> np.ndarray:
    """Bytes/s each pair can move alone: the largest rate r with r * load(l) <= capacity(l) on every
    link l, where load(l) is the summed weight of the pair's paths through l (multipath paths that
    share a link, e.g. the NIC link under packet spraying, share its capacity). Pairs with no links
    (LOCAL) are not limited by the fabric: inf."""
    n_links = max(topo.n_links, 1)
    lengths = np.diff(routes.path_ptr)
    path = np.repeat(np.arange(routes.n_paths), lengths)
    key = routes.path_pair[path].astype(np.int64) * n_links + routes.links
    uniq, inv = np.unique(key, return_inverse=True)
    load = np.bincount(inv.ravel(), weights=routes.path_weight[path], minlength=uniq.size)
    pair, link = uniq // n_links, uniq % n_links
    rate = topo.link_capacity[link] / load
    out = np.full(routes.n_pairs, np.inf)
    if uniq.size:
        starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])
        out[pair[starts]] = np.minimum.reduceat(rate, starts)
    return out


def path_latency(topo: Topology, routes: Routes) -> np.ndarray:
    """Seconds for a pair's first byte to arrive over its slowest path (sum of link latencies; 0 for LOCAL)."""
    out = np.zeros(routes.n_pairs)
    if routes.n_paths:
        order = np.argsort(routes.path_pair, kind="stable")
        pair = routes.path_pair[order]
        starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])
        out[pair[starts]] = np.maximum.reduceat(routes.path_latency[order], starts)
    return out
