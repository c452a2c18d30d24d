"""Contention on real cluster topologies (builders + routing): oversubscription, ECMP, rails, GPUDirect, jobs."""

import dataclasses

import numpy as np
import pytest

from fabricsim.engine import Job, simulate, simulate_concurrent, time_traffic
from fabricsim.errors import FabricsimError
from fabricsim.schedules import StepTraffic, build_schedule, structure_from_topology
from fabricsim.topology import DeviceKind, build, load_cluster, load_spec

S = 256 << 20
BASE = load_spec("superpod-h100", nodes=64)  # 2 scalable units, 2-level NDR fat tree, 8 rails


def send(topo, src, dst, **kw):
    st = StepTraffic(np.asarray(src, np.int32), np.asarray(dst, np.int32), np.full(len(src), float(S)))
    return time_traffic(topo, [st], collective="sendrecv", algorithm="direct", nranks=topo.n_gpus, nbytes=S, **kw)


def spine_bytes(topo, r):
    up = (topo.dev_kind[topo.link_dst] == DeviceKind.FABRIC_SWITCH) & (topo.dev_level[topo.link_dst] == 2)
    return float(r.link_bytes[up].sum())


@pytest.fixture(scope="module")
def fat_tree():
    return {ov: build(dataclasses.replace(BASE, oversubscription=ov)) for ov in (1.0, 2.0)}


def test_oversubscription_halves_cross_leaf_bandwidth(fat_tree):
    src = np.arange(32) * 8  # GPU 0 of every node of SU 0 (one leaf) to GPU 0 of SU 1 (another leaf)
    full = send(fat_tree[1.0], src, src + 256, adaptive=True)
    half = send(fat_tree[2.0], src, src + 256, adaptive=True)
    assert half.bandwidth_time == pytest.approx(2 * full.bandwidth_time, rel=1e-6)
    assert half.bottlenecks[0].tech == "ib-ndr"


def test_ecmp_collisions_slower_than_adaptive_routing(fat_tree):
    src = np.arange(32) * 8
    ecmp = send(fat_tree[1.0], src, src + 256)
    adaptive = send(fat_tree[1.0], src, src + 256, adaptive=True)
    nic_limited = S / (48e9)  # 400G NDR x 0.96 (= PCIe 5 x16 at NCCL's 48 GB/s)
    assert adaptive.bandwidth_time == pytest.approx(nic_limited, rel=1e-6)
    assert ecmp.bandwidth_time >= 2 * adaptive.bandwidth_time * (1 - 1e-9)  # some uplink carries >= 2 flows
    assert ecmp.bottlenecks[0].flows >= 2


def test_cluster_routing_sets_the_default_and_a_call_can_override_it(fat_tree):
    src = np.arange(32) * 8
    adaptive_fabric = build(dataclasses.replace(BASE, routing="adaptive"))
    assert adaptive_fabric.features["routing"] == "adaptive"
    by_cluster = send(adaptive_fabric, src, src + 256)
    assert by_cluster.bandwidth_time == pytest.approx(send(fat_tree[1.0], src, src + 256, adaptive=True).bandwidth_time)
    assert send(adaptive_fabric, src, src + 256, adaptive=False).bandwidth_time == pytest.approx(
        send(fat_tree[1.0], src, src + 256).bandwidth_time)


def test_rail_optimised_keeps_same_rail_traffic_off_the_spines():
    src = np.arange(128)  # every GPU of nodes 0..15 to the same GPU index of nodes 16..31
    rail = build(dataclasses.replace(BASE, oversubscription=2.0))
    flat = build(dataclasses.replace(BASE, oversubscription=2.0, rail_optimized=False))
    r_rail, r_flat = send(rail, src, src + 128, adaptive=True), send(flat, src, src + 128, adaptive=True)
    assert spine_bytes(rail, r_rail) == 0 and spine_bytes(flat, r_flat) > 0
    assert r_flat.bandwidth_time == pytest.approx(2 * r_rail.bandwidth_time, rel=1e-6)


def test_gpudirect_off_bounces_through_host_and_is_slower():
    on = build(BASE)
    off = build(dataclasses.replace(BASE, gpudirect=False))
    src = np.arange(8)  # all 8 GPUs of node 0 to node 1: two GPUs share each PCIe switch's host uplink
    r_on, r_off = send(on, src, src + 8), send(off, src, src + 8)
    assert r_off.bandwidth_time == pytest.approx(2 * r_on.bandwidth_time, rel=1e-6)
    assert "cpu" in r_off.bottlenecks[0].name


def test_two_jobs_sharing_leaf_uplinks(fat_tree):
    topo = fat_tree[2.0]  # 16 uplinks per leaf: 16 flows fit, 32 need twice as long
    src = np.arange(32) * 8
    sched = build_schedule("sendrecv", "direct", 2)
    jobs = [Job(sched, S, [int(src[i]), int(src[i] + 256)]) for i in range(32)]
    alone = simulate(topo, sched, S, ranks=[0, 256], adaptive=True)
    both = simulate_concurrent(topo, jobs, adaptive=True)
    assert all(r.slowdown == pytest.approx(2.0, rel=1e-6) for r in both)
    assert both[0].time == pytest.approx(alone.latency_time + 2 * alone.bandwidth_time, rel=1e-6)
    few = simulate_concurrent(topo, jobs[:16], adaptive=True)
    assert all(r.slowdown == pytest.approx(1.0, rel=1e-6) for r in few)


@pytest.mark.parametrize("algorithm", ["ring", "hierarchical"])
def test_levels_agree_when_uncongested(algorithm):
    topo = load_cluster("superpod-h100", nodes=4)
    sched = build_schedule("all_reduce", algorithm, topo.n_gpus, structure=structure_from_topology(topo))
    flow = simulate(topo, sched, 1 << 28, level="flow", adaptive=True)
    ana = simulate(topo, sched, 1 << 28, level="analytical", adaptive=True)
    assert flow.time == pytest.approx(ana.time, rel=0.05)
    assert (flow.level, ana.level) == ("flow", "analytical")


def test_single_node_ring_allreduce_busbw_near_nccl():
    topo = load_cluster("dgx-h100")
    r = simulate(topo, build_schedule("all_reduce", "ring", 8), 1 << 30)
    assert 340e9 < r.busbw < 371e9  # NCCL ring on 8x H100: ~370 GB/s busbw (sjeaugey, NVIDIA/nccl-tests#212)
    assert r.bottlenecks[0].tech == "nvlink4" and r.bound == "bandwidth-bound"
    small = simulate(topo, build_schedule("all_reduce", "ring", 8), 1024)
    assert small.bound == "latency-bound"


def test_tree_latency_counts_each_level_once():
    """A small tree AllReduce waits for each level's hop once (NCCL tuning.cc: base + 2((ppn-1) intra +
    log2(nNodes) inter)), plus wire latency; not for the network hop at every level."""
    topo = load_cluster("dgx-a100", nodes=2)
    sched = build_schedule("all_reduce", "tree", 16, structure=structure_from_topology(topo), channels=8)
    r = simulate(topo, sched, 1024, protocol="ll", channels=8)
    base, nvlink, net = 6.8e-6, 0.6e-6, 5.0e-6  # tuning.cc Tree/LL: baseLat, hwLat NVLink, hwLat NET
    nccl = base + 2 * (7 * nvlink + 1 * net)
    assert nccl < r.latency_time < nccl + 16 * 2e-6  # 16 levels, each adding its path's wire latency
    assert r.latency_time < base + 16 * net  # the network hop is not paid at every level


def test_nvls_tree_pays_nvlink_once_and_the_network_per_tree_level():
    """tuning.cc NVLSTree latency: intraLat + 2 log2(nNodes) interLat (NVLSTree/Simple: 25 us NVLink, 20.9 us NET)."""
    for nodes in (2, 8):
        topo = load_cluster("superpod-h100", nodes=nodes)
        sched = build_schedule("all_reduce", "nvls_tree", topo.n_gpus, structure=structure_from_topology(topo))
        r = simulate(topo, sched, 8 * topo.n_gpus, channels=sched.channels)
        nccl = 25e-6 + 2 * int(np.log2(nodes)) * 20.9e-6
        assert nccl < r.latency_time < nccl + (2 * int(np.log2(nodes)) + 2) * 3e-6  # + each step's wire latency


def test_bad_active_windows_are_named():
    topo = load_cluster("dgx-h100")
    st = StepTraffic(np.array([0, 1], np.int32), np.array([1, 2], np.int32), np.array([8.0, 8.0]), repeat=4,
                     active=(np.array([5, 0]), np.array([9, 3])))
    with pytest.raises(FabricsimError, match="active must give"):
        time_traffic(topo, [st], collective="all_reduce", algorithm="tree", nranks=8, nbytes=64)


def test_deterministic():
    topo = load_cluster("superpod-h100", nodes=4)
    sched = build_schedule("all_reduce", "ring", topo.n_gpus)
    a, b = simulate(topo, sched, 1 << 26), simulate(topo, sched, 1 << 26)
    assert a.time == b.time and np.array_equal(a.link_bytes, b.link_bytes)
    assert np.array_equal(a.timeline.step_end, b.timeline.step_end)


def test_errors_name_problem_and_fix():
    topo = load_cluster("dgx-h100")
    sched = build_schedule("all_reduce", "ring", 8)
    with pytest.raises(FabricsimError, match="GPUs"):
        simulate(topo, build_schedule("all_reduce", "ring", 16), 1024)
    with pytest.raises(FabricsimError, match="GPU ranks 0..7"):
        simulate(topo, sched, 1024, ranks=list(range(1, 9)))
    with pytest.raises(FabricsimError, match="twice"):
        simulate(topo, sched, 1024, ranks=[0] * 8)
    with pytest.raises(FabricsimError, match="non-negative"):
        simulate(topo, sched, -1)
    with pytest.raises(FabricsimError, match="protocol"):
        simulate(topo, sched, 1024, protocol="fast")
    with pytest.raises(FabricsimError, match="level"):
        simulate(topo, sched, 1024, level="exact")
    with pytest.raises(FabricsimError, match="simple"):
        nvls = build_schedule("all_reduce", "nvls", 8, structure=structure_from_topology(topo))
        simulate(topo, nvls, 1024, protocol="ll")


def test_adaptive_routing_never_loses_to_ecmp_on_a_non_blocking_tree(fat_tree):
    """A sprayed transfer is one flow at its NIC and PCIe links (its paths' rates stay in proportion), so spreading
    it over every uplink of a 1:1 tree cannot be slower than one hashed path: an NVLS-tree all-reduce across two
    scalable units (issue 12 item 3: 296.6 against 357.0 GB/s busbw at 512 GPUs when each path was its own flow)."""
    topo = fat_tree[1.0]
    ranks = np.arange(topo.n_gpus, dtype=np.int32)
    sched = build_schedule("all_reduce", "nvls_tree", topo.n_gpus, structure=structure_from_topology(topo, ranks))
    ecmp = simulate(topo, sched, 1 << 30, adaptive=False)
    adaptive = simulate(topo, sched, 1 << 30, adaptive=True)
    assert adaptive.time <= ecmp.time * (1 + 1e-9)
    assert adaptive.link_bytes.sum() == pytest.approx(ecmp.link_bytes.sum())  # same bytes, spread differently
