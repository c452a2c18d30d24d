"""Routing around failures: up/down routing skips failed spines and cables and ECMP spreads over what is left (2 and
3 levels), and a GPU whose NIC is down reaches the network through the node's other NICs as NCCL does (through its
own other ports first where it has several)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricsim.errors import FabricsimError
from fabricsim.routing import PathKind, route, route_pairs
from fabricsim.topology import Faults, apply_faults, build, load_cluster, load_spec
from fabricsim.topology import names as N
from fabricsim.topology.model import DeviceKind


@pytest.fixture(scope="module")
def pod():
    return load_cluster("superpod-h100", gpus=1024)  # 2 levels: 32 leaves x 16 spines


def _cross_su_pairs(topo, n: int = 4000) -> tuple[np.ndarray, np.ndarray]:
    """Rail-0 GPUs of SU 0 to rail-0 GPUs of the other SUs: every pair climbs to a spine."""
    src = np.repeat(np.arange(32) * 8, n // 32)[:n]
    dst = (32 + np.arange(n) % 96) * 8
    return src, dst


def _spines_used(topo, routes) -> np.ndarray:
    dst = topo.link_dst[routes.links]
    return dst[(topo.dev_kind[dst] == DeviceKind.FABRIC_SWITCH) & (topo.dev_level[dst] == 2)]


def test_ecmp_spreads_over_the_spines_left(pod):
    down = apply_faults(pod, Faults(fail=("spine3",)))
    spine3 = N.device_names(pod).index("spine3")
    src, dst = _cross_su_pairs(pod)
    used = np.bincount(_spines_used(down, route_pairs(down, src, dst, pxn=False)), minlength=down.n_devices)
    spines = N.class_devices(pod, "spines")
    assert used[spine3] == 0 and (used[np.setdiff1d(spines, [spine3])] > 0).all()
    share = used[spines[spines != spine3]] / used.sum()
    assert share.max() < 2 / 15 and share.min() > 0.5 / 15  # hashed over 15 spines, not piled on a few
    healthy = np.bincount(_spines_used(pod, route_pairs(pod, src, dst, pxn=False)), minlength=pod.n_devices)
    assert used.sum() == healthy.sum()  # every pair still crosses exactly one spine


def test_adaptive_routing_splits_evenly_over_the_spines_left(pod):
    down = apply_faults(pod, Faults(fail=("spine3",)))
    r = route(down, 0, 32 * 8, pxn=False, adaptive=True)
    assert r.n_paths == 15 and np.allclose(r.path_weight, 1 / 15)


def test_three_levels_route_around_a_failed_spine_of_the_destination_pod():
    big = load_cluster("superpod-h100", gpus=4096)  # 3 levels: spine j of every pod joins core group j
    dst_gpu = 4095
    healthy = route(big, 0, dst_gpu, pxn=False)
    spines = [int(d) for d in big.link_dst[healthy.path_links(0)] if big.dev_level[d] == 2]
    far = N.device_names(big)[spines[-1]]  # the spine the path comes down through, in the destination's pod
    down = apply_faults(big, Faults(fail=(far,)))
    for adaptive in (False, True):
        r = route(down, 0, dst_gpu, pxn=False, adaptive=adaptive)
        names = {N.device_names(down)[int(d)] for d in down.link_dst[r.links]}
        assert far not in names and r.path_weight.sum() == pytest.approx(1.0)


def test_a_cut_fabric_is_an_error_naming_the_failure():
    big = load_cluster("superpod-h100", gpus=4096)
    # every spine above one destination leaf: the leaf keeps its NICs, but no up/down path reaches it
    leaf = N.device_names(big)[int(big.link_dst[route(big, 4095, 0, pxn=False).path_links(0)[2]])]
    down = apply_faults(big, Faults(fail=(f"{leaf} -> *spine*",)))  # physically joined through other nodes' NVLink
    with pytest.raises(FabricsimError, match=f"to {leaf}: no up/down path exists; the failed links cut every"):
        route(down, 0, 4095, pxn=False)


def test_a_gpu_whose_nic_is_down_sends_by_pxn_over_the_other_nics(pod):
    down = apply_faults(pod, Faults(fail=("node1.nic0",)))
    r = route(down, 8, 16, pxn=False)  # node1.gpu0 -> node2.gpu0
    assert r.n_paths == 7 and np.allclose(r.path_weight, 1 / 7) and (r.path_kind == PathKind.PXN).all()
    names = N.device_names(down)
    first_nic = [names[int(down.link_dst[r.path_links(p)[3]])] for p in range(7)]
    assert first_nic == [f"node1.nic{k}" for k in range(1, 8)]  # through node1.gpu k and its NIC
    relays = [names[int(down.link_dst[r.path_links(p)[1]])] for p in range(7)]
    assert relays == [f"node1.gpu{k}" for k in range(1, 8)]


def test_a_receiver_whose_nic_is_down_takes_its_channels_in_on_the_other_nics(pod):
    down = apply_faults(pod, Faults(fail=("node1.nic0",)))
    names = N.device_names(down)
    ring = route(down, 16, 8, pxn=False)  # node2.gpu0 -> node1.gpu0, a ring or tree: at the NIC's GPU, then NVLink
    p2p = route(down, 16, 8, pxn=False, p2p=True)  # a point-to-point receive: over PCIe through the CPU
    for r in (ring, p2p):
        assert r.n_paths == 7 and np.allclose(r.path_weight, 1 / 7)
    last = [names[int(down.link_src[ring.path_links(p)[-1]])] for p in range(7)]
    assert last == ["domain1.nvswitch0"] * 7
    crossed = {names[int(d)] for d in down.link_dst[p2p.links]}
    assert "node1.cpu0" in crossed and "node1.cpu1" in crossed  # NICs under the other socket cross UPI


def test_healthy_routes_are_unchanged_by_a_failure_elsewhere(pod):
    down = apply_faults(pod, Faults(fail=("node100.nic0",)))
    src, dst = np.arange(0, 64), np.arange(64, 128)
    a, b = route_pairs(pod, src, dst), route_pairs(down, src, dst)
    np.testing.assert_array_equal(down.link_origin[b.links], a.links)
    np.testing.assert_array_equal(b.path_weight, a.path_weight)


@pytest.fixture(scope="module")
def two_ports():
    """2 nodes of 8 H100s with 16 NICs: each GPU sends on 2 NIC ports of its own (nics_per_gpu 2)."""
    return build(replace(load_spec("dgx-h100", nodes=2), nics_per_node=16))


def _nics_on(topo, r) -> list[list[str]]:
    names = N.device_names(topo)
    return [[names[int(d)] for d in topo.link_dst[r.path_links(p)] if topo.dev_kind[d] == DeviceKind.NIC]
            for p in range(r.n_paths)]


def test_a_gpu_with_two_ports_one_down_keeps_the_other_and_moves_the_lost_share_onto_it(two_ports):
    healthy = route(two_ports, 0, 8, pxn=False)  # node0.gpu0 -> node1.gpu0, port j to port j
    assert _nics_on(two_ports, healthy) == [["node0.nic0", "node1.nic0"], ["node0.nic1", "node1.nic1"]]
    assert np.allclose(healthy.path_weight, 0.5)
    down = apply_faults(two_ports, Faults(fail=("node0.nic1",)))
    send = route(down, 0, 8, pxn=False)  # the lost port's half goes out on the GPU's other port, no PXN
    assert _nics_on(down, send) == [["node0.nic0", "node1.nic0"], ["node0.nic0", "node1.nic1"]]
    assert np.allclose(send.path_weight, 0.5) and (send.path_kind == PathKind.NET).all()
    recv = route(down, 8, 0, pxn=False)  # and comes in on it
    assert _nics_on(down, recv) == [["node1.nic0", "node0.nic0"], ["node1.nic1", "node0.nic0"]]
    other = route(down, 1, 9, pxn=False)  # another GPU of the node keeps both its ports
    assert _nics_on(down, other) == [["node0.nic2", "node1.nic2"], ["node0.nic3", "node1.nic3"]]


def test_a_gpu_with_both_ports_down_sends_by_pxn_over_the_nodes_other_nics(two_ports):
    down = apply_faults(two_ports, Faults(fail=("node0.nic0", "node0.nic1")))
    r = route(down, 0, 8, pxn=False)
    assert r.n_paths == 2 * 14 and np.allclose(r.path_weight, 1 / 28) and (r.path_kind == PathKind.PXN).all()
    assert {nics[0] for nics in _nics_on(down, r)} == {f"node0.nic{k}" for k in range(2, 16)}
