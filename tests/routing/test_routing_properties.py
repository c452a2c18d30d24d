"""Property tests: every routed path is a connected chain from the source GPU to the destination GPU,
weights of a pair sum to 1, and routing is deterministic."""

from __future__ import annotations

import numpy as np
from handmade import cube_mesh_node, nvswitch_cluster, pcie_node
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.routing import PathKind, path_bandwidth, route_pairs

TOPOS = {
    "nvswitch": nvswitch_cluster(nodes=4, nodes_per_pod=2),
    "nvswitch-nogdr": nvswitch_cluster(nodes=4, nodes_per_pod=2, gpudirect=False),
    "nvl-2node-domain": nvswitch_cluster(nodes=4, domain_nodes=2, rail_optimized=False),
    "cube-mesh": cube_mesh_node(nodes=2),
    "pcie": pcie_node(p2p=False),
}


def check_routes(t, s, d, r):
    assert r.n_pairs == s.size
    assert np.allclose(np.bincount(r.path_pair, weights=r.path_weight, minlength=s.size), 1.0)
    for p in range(r.n_paths):
        links = r.path_links(p)
        pair = r.path_pair[p]
        if r.path_kind[p] == PathKind.LOCAL:
            assert links.size == 0 and s[pair] == d[pair]
            continue
        assert t.link_src[links[0]] == t.gpu_device[s[pair]]
        assert t.link_dst[links[-1]] == t.gpu_device[d[pair]]
        assert np.array_equal(t.link_dst[links[:-1]], t.link_src[links[1:]])
        assert np.isclose(r.path_latency[p], t.link_latency[links].sum())


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(sorted(TOPOS)),
    data=st.data(),
    adaptive=st.booleans(),
    pxn=st.sampled_from([None, True, False]),
)
def test_paths_are_connected_chains(name, data, adaptive, pxn):
    t = TOPOS[name]
    n = data.draw(st.integers(1, 40))
    s = np.array(data.draw(st.lists(st.integers(0, t.n_gpus - 1), min_size=n, max_size=n)))
    d = np.array(data.draw(st.lists(st.integers(0, t.n_gpus - 1), min_size=n, max_size=n)))
    r = route_pairs(t, s, d, pxn=pxn, adaptive=adaptive)
    check_routes(t, s, d, r)
    bw = path_bandwidth(t, r)
    assert np.all(bw > 0)
    again = route_pairs(t, s, d, pxn=pxn, adaptive=adaptive)
    for field in ("path_pair", "path_weight", "path_ptr", "links", "path_kind", "path_latency"):
        assert np.array_equal(getattr(again, field), getattr(r, field))
    # a pair routed alone gets the same paths as inside a batch
    k = data.draw(st.integers(0, n - 1))
    one = route_pairs(t, s[k : k + 1], d[k : k + 1], pxn=pxn, adaptive=adaptive)
    mine = np.flatnonzero(r.path_pair == k)
    assert one.n_paths == mine.size
    for i, p in enumerate(mine):
        assert np.array_equal(one.path_links(i), r.path_links(p))
