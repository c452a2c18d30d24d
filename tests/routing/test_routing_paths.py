"""Routing on hand-built topologies: path shapes, kinds, bottlenecks and errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from handmade import NDR, NVL4, PCIE5, cube_mesh_node, leaf_spine, nvswitch_cluster, pcie_node

from fabricsim.errors import FabricsimError
from fabricsim.routing import PathKind, path_bandwidth, path_latency, route, route_pairs
from fabricsim.topology.model import DeviceKind


def devices_on(topo, routes, p=None):
    links = routes.links if p is None else routes.path_links(p)
    return np.unique(np.concatenate([topo.link_src[links], topo.link_dst[links]]))


def kinds_on(topo, routes, p=None):
    return set(DeviceKind(int(k)) for k in topo.dev_kind[devices_on(topo, routes, p)])


def test_same_gpu_is_local_with_no_links():
    t = nvswitch_cluster()
    r = route(t, 3, 3)
    assert r.n_paths == 1 and r.path_kind[0] == PathKind.LOCAL and r.path_links(0).size == 0
    assert path_bandwidth(t, r)[0] == np.inf and path_latency(t, r)[0] == 0.0


def test_nvswitch_path_two_links_and_h100_bottleneck():
    t = nvswitch_cluster()
    r = route(t, 0, 5)
    assert r.path_kind[0] == PathKind.NVLINK
    assert [DeviceKind(int(t.dev_kind[t.link_dst[l]])) for l in r.path_links(0)] == [DeviceKind.NVSWITCH, DeviceKind.GPU]
    assert path_bandwidth(t, r)[0] == pytest.approx(18 * 25e9)  # 18 NVLink 4 links x 25 GB/s per direction
    assert path_latency(t, r)[0] == pytest.approx(2e-7)


def test_intra_node_and_intra_domain_traffic_never_touches_the_fabric():
    for t in (nvswitch_cluster(nodes=4), nvswitch_cluster(nodes=4, domain_nodes=2), cube_mesh_node(nodes=2)):
        dom = t.gpu_domain
        s, d = np.meshgrid(np.arange(t.n_gpus), np.arange(t.n_gpus), indexing="ij")
        keep = dom[s.ravel()] == dom[d.ravel()]
        r = route_pairs(t, s.ravel()[keep], d.ravel()[keep])
        assert not ({DeviceKind.FABRIC_SWITCH, DeviceKind.NIC} & kinds_on(t, r))
        assert set(r.path_kind.tolist()) <= {PathKind.LOCAL, PathKind.NVLINK, PathKind.NVLINK_BRIDGE}


def test_multi_node_nvlink_domain_stays_on_nvlink():
    t = nvswitch_cluster(nodes=4, domain_nodes=2)
    r = route(t, 0, 12)  # node 0 -> node 1, same NVLink domain
    assert r.path_kind[0] == PathKind.NVLINK and r.path_links(0).size == 2


def test_cross_node_gpudirect_net_path_and_ndr_bottleneck():
    t = nvswitch_cluster()
    r = route(t, 2, 10)  # same rail, same leaf
    assert r.path_kind[0] == PathKind.NET
    assert DeviceKind.CPU not in kinds_on(t, r)
    assert path_bandwidth(t, r)[0] == pytest.approx(NDR)
    fab = [l for l in r.path_links(0) if t.dev_kind[t.link_dst[l]] == DeviceKind.FABRIC_SWITCH
           or t.dev_kind[t.link_src[l]] == DeviceKind.FABRIC_SWITCH]
    assert len(fab) == 2  # NIC -> leaf -> NIC
    first = r.path_links(0)
    assert t.link_src[first[0]] == t.gpu_device[2] and t.link_dst[first[-1]] == t.gpu_device[10]


def test_gpudirect_off_stages_through_host_memory_on_both_ends():
    t = nvswitch_cluster(gpudirect=False)
    r = route_pairs(t, np.arange(8), np.arange(8) + 8)
    assert set(r.path_kind.tolist()) == {PathKind.NET_HOST}
    for p in range(r.n_paths):
        devs = devices_on(t, r, p)
        cpus = devs[t.dev_kind[devs] == DeviceKind.CPU]
        assert set(t.dev_node[cpus].tolist()) == {0, 1}  # a CPU on each end


def test_pxn_on_rail_optimized_fabric_and_off():
    t = nvswitch_cluster(nodes=4, nodes_per_pod=4)
    r = route(t, 0, 8 + 5)  # GPU 0 (rail 0) -> node 1 GPU 5 (rail 5)
    assert r.path_kind[0] == PathKind.PXN
    links = r.path_links(0)
    assert t.link_dst[links[1]] == t.gpu_device[5]  # over NVLink to the rail-5 GPU of node 0
    nic = t.link_dst[links[3]]
    assert t.dev_kind[nic] == DeviceKind.NIC and t.dev_local[nic] == 5 and t.dev_node[nic] == 0
    assert links.size == 2 + 2 + 2 + 2  # NVLink, PCIe to NIC, same-rail leaf, PCIe to GPU
    off = route(t, 0, 13, pxn=False)
    assert off.path_kind[0] == PathKind.NET
    assert t.dev_local[t.link_dst[off.path_links(0)[1]]] == 0  # its own rail-0 NIC
    assert DeviceKind.NVSWITCH not in kinds_on(t, off)
    assert off.path_links(0).size == 2 + 4 + 2  # leaf -> spine -> leaf across rails
    same_rail = route(t, 0, 8)
    assert same_rail.path_kind[0] == PathKind.NET


def test_no_pxn_by_default_without_rail_optimisation():
    t = nvswitch_cluster(nodes=4, rail_optimized=False)
    assert route(t, 0, 13).path_kind[0] == PathKind.NET
    assert route(t, 0, 13, pxn=True).path_kind[0] == PathKind.PXN


def test_fabric_climbs_only_as_high_as_needed():
    t = nvswitch_cluster(nodes=4, nodes_per_pod=2)
    hops = {}
    for name, dst in (("leaf", 8), ("spine", 8 + 1), ("core", 16)):
        r = route(t, 0, dst, pxn=False)
        links = r.path_links(0)
        hops[name] = int(np.sum((t.dev_kind[t.link_src[links]] == DeviceKind.FABRIC_SWITCH)
                                | (t.dev_kind[t.link_dst[links]] == DeviceKind.FABRIC_SWITCH)))
        levels = t.dev_level[t.link_dst[links]]
        assert levels.max() == {"leaf": 1, "spine": 2, "core": 3}[name]
    assert hops == {"leaf": 2, "spine": 4, "core": 6}


def test_ecmp_spreads_flows_evenly_over_uplinks():
    t = leaf_spine(leaves=2, nics_per_leaf=64, spines=8)
    s, d = np.meshgrid(np.arange(64), np.arange(64, 128), indexing="ij")
    r = route_pairs(t, s.ravel(), d.ravel())
    assert r.n_paths == 4096
    up = r.links[(t.dev_level[t.link_src[r.links]] == 1) & (t.dev_level[t.link_dst[r.links]] == 2)]
    counts = np.bincount(t.link_dst[up])[t.link_dst[up].min():]
    counts = counts[counts > 0]
    assert counts.size == 8
    assert counts.max() / counts.mean() < 1.12 and counts.min() / counts.mean() > 0.88
    again = route_pairs(t, s.ravel(), d.ravel())
    assert np.array_equal(again.links, r.links) and np.array_equal(again.path_ptr, r.path_ptr)


def test_adaptive_routing_splits_evenly_and_shares_the_nic_link():
    t = leaf_spine(leaves=2, nics_per_leaf=4, spines=8)
    r = route(t, 0, 5, adaptive=True)
    assert r.n_paths == 8 and np.allclose(r.path_weight, 1 / 8)
    spines = {int(t.link_dst[r.path_links(p)[3]]) for p in range(8)}
    assert len(spines) == 8
    assert path_bandwidth(t, r)[0] == pytest.approx(NDR)  # the NIC link carries all 8 paths
    r3 = route(nvswitch_cluster(nodes=4, nodes_per_pod=2), 0, 16, pxn=False, adaptive=True)
    # spine x core x down-spine: every core meets every spine in this test fabric
    assert r3.n_paths == 4 * 4 * 4 and np.isclose(r3.path_weight.sum(), 1.0)


def test_cube_mesh_direct_and_bridge():
    t = cube_mesh_node()
    r = route(t, 0, 3)
    assert r.path_kind[0] == PathKind.NVLINK and r.path_links(0).size == 1
    assert path_bandwidth(t, r)[0] == pytest.approx(2 * NVL4)
    r = route(t, 0, 7)  # no direct link: via GPU 4 (0-4 x2, 4-7 x2) beats GPU 3 (3-7 x1)
    assert r.path_kind[0] == PathKind.NVLINK_BRIDGE
    assert t.link_dst[r.path_links(0)[0]] == t.gpu_device[4]
    assert path_bandwidth(t, r)[0] == pytest.approx(2 * NVL4)
    r = route(t, 1, 6)  # 1-5 x2, 5-6 x2 beats 1-2 x2, 2-6 x1
    assert t.link_dst[r.path_links(0)[0]] == t.gpu_device[5]


def test_pcie_p2p_versus_host_bounce():
    t = pcie_node(p2p=True)
    r = route_pairs(t, [0, 0, 0], [1, 2, 4])
    assert r.path_kind.tolist() == [PathKind.PCIE, PathKind.PCIE, PathKind.HOST]
    assert np.diff(r.path_ptr).tolist() == [2, 4, 5]  # same switch; via CPU root; across sockets
    assert DeviceKind.CPU not in kinds_on(t, r, 0)
    assert path_bandwidth(t, r).tolist()[:2] == [PCIE5, PCIE5]
    off = route_pairs(pcie_node(p2p=False), [0, 0], [1, 4])
    assert off.path_kind.tolist() == [PathKind.HOST, PathKind.HOST]
    assert np.diff(off.path_ptr).tolist() == [4, 5]
    assert DeviceKind.CPU in kinds_on(t, off, 0)


def test_nvlink_pairs_without_full_mesh_fall_back_to_pcie():
    t = pcie_node(nvlink_pairs=[(0, 1), (2, 3)])
    r = route_pairs(t, [0, 0], [1, 2])
    assert r.path_kind.tolist() == [PathKind.NVLINK, PathKind.PCIE]


def test_multi_pair_order_and_weights():
    t = nvswitch_cluster(nodes=4, nodes_per_pod=2)
    s = np.array([5, 0, 3, 17, 9])
    d = np.array([5, 16, 4, 2, 30])
    r = route_pairs(t, s, d, adaptive=True)
    assert np.all(np.diff(r.path_pair) >= 0)
    assert np.allclose(np.bincount(r.path_pair, weights=r.path_weight, minlength=5), 1.0)


@pytest.mark.parametrize(
    "src,dst,match",
    [([0, 1], [1], "pass one destination"), ([0], [999], "outside 0..15"), ([-1], [0], "outside"),
     ([[0, 1]], [[1, 0]], "1-D"), ([0.5], [1.0], "integer")],
)
def test_bad_input_raises_fabricsim_error(src, dst, match):
    with pytest.raises(FabricsimError, match=match):
        route_pairs(nvswitch_cluster(), src, dst)


def test_gpu_without_nic_cannot_leave_its_host():
    t = dataclasses.replace(nvswitch_cluster(), gpu_nic=np.full(16, -1, dtype=np.int32))
    with pytest.raises(FabricsimError, match="has no NIC"):
        route(t, 0, 8)


def test_empty_request():
    r = route_pairs(nvswitch_cluster(), np.array([], dtype=int), np.array([], dtype=int))
    assert r.n_pairs == 0 and r.n_paths == 0 and path_bandwidth(nvswitch_cluster(), r).size == 0
