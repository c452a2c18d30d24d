"""Timing a rotated (rank-symmetric) all-to-all by symmetry: on a regular fabric with adaptive routing it must
equal timing every transfer; on irregular fabrics stay close; with hashed ECMP it misses only collisions."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fabricsim.engine import Job, simulate, simulate_concurrent
from fabricsim.errors import FabricsimError
from fabricsim.schedules import alltoall, build_schedule, structure_from_topology
from fabricsim.topology import build, load_cluster, load_spec

pytestmark = pytest.mark.costly  # seconds of work in one file: collected first (tests/conftest.py)


def fabric(nodes: int, oversubscription: float, rail: bool):
    spec = load_spec("superpod-h100", nodes=nodes)
    return build(dataclasses.replace(spec, oversubscription=oversubscription, rail_optimized=rail))


def both(topo, algo):
    s = structure_from_topology(topo)
    if algo == "pxn":
        return alltoall.pxn(s), alltoall.pxn(s, rotated=True)
    return alltoall.direct(s.nranks), alltoall.direct(s.nranks, s.ranks_per_node)


@pytest.fixture(scope="module")
def oversubscribed():
    return fabric(64, 2.0, True)  # the spine uplinks, not the NICs, are the bottleneck


@pytest.mark.parametrize("algo,level", [("pxn", "flow"), ("pxn", "analytical"), ("direct", "analytical")])
def test_regular_fabric_adaptive_routing_times_exactly(oversubscribed, algo, level):
    listed, rotated = both(oversubscribed, algo)
    nbytes = listed.nranks * 4 * 4096
    a = simulate(oversubscribed, listed, nbytes, level=level, adaptive=True, channels=8)
    b = simulate(oversubscribed, rotated, nbytes, level=level, adaptive=True, channels=8)
    print(f"{algo} {level}: listed {a.time * 1e6:.2f} us, rotated {b.time * 1e6:.2f} us")
    assert b.time == pytest.approx(a.time, rel=1e-9)
    assert b.bottlenecks[0].tech == a.bottlenecks[0].tech == "ib-ndr"
    assert b.link_bytes.sum() == pytest.approx(a.link_bytes.sum(), rel=1e-9)
    np.testing.assert_allclose(np.sort(b.link_bytes)[-64:], np.sort(a.link_bytes)[-64:], rtol=1e-9)


def test_partly_filled_leaves_stay_close():
    topo = fabric(48, 2.0, False)  # the last leaf is partly filled
    listed, rotated = both(topo, "pxn")
    nbytes = listed.nranks * 4 * 4096
    a = simulate(topo, listed, nbytes, level="analytical", adaptive=True, channels=8)
    b = simulate(topo, rotated, nbytes, level="analytical", adaptive=True, channels=8)
    err = b.time / a.time - 1
    print(f"48 nodes, 2:1, not rail-optimised: listed {a.time * 1e6:.2f} us, rotated {b.time * 1e6:.2f} us ({err:+.2%})")
    assert abs(err) < 0.01


def test_hashed_ecmp_collisions_are_what_symmetry_misses(oversubscribed):
    listed, rotated = both(oversubscribed, "pxn")
    nbytes = listed.nranks * 4 * 4096
    a = simulate(oversubscribed, listed, nbytes, level="analytical", adaptive=False, channels=8)
    b = simulate(oversubscribed, rotated, nbytes, level="analytical", adaptive=False, channels=8)
    even = simulate(oversubscribed, listed, nbytes, level="analytical", adaptive=True, channels=8)
    print(f"ECMP: listed {a.time * 1e6:.2f} us, rotated {b.time * 1e6:.2f} us, adaptive {even.time * 1e6:.2f} us")
    assert b.time == pytest.approx(even.time, rel=1e-9) and a.time > b.time


def test_perf_scale_all_to_all_is_timed_alone_and_together():
    topo = build(load_spec("superpod-h100", gpus=2048))
    sched = build_schedule("alltoall", "pxn", 2048, structure=structure_from_topology(topo))
    assert sched.rotations == 256
    r = simulate(topo, sched, 1 << 30, channels=8)
    assert 40e9 < r.busbw < 50e9  # one NDR NIC (50 GB/s) per GPU, a little lost to PCIe and protocol
    alone = simulate_concurrent(topo, [Job(sched, 1 << 30, channels=8)])[0]
    assert alone.time == pytest.approx(r.time, rel=1e-9) and alone.slowdown == 1.0
    # two communicators on the same GPUs share every link they load: together they drain in twice the busiest
    # link's busy time (alone the pipeline kept it a little below its busiest link's pace)
    both = simulate_concurrent(topo, [Job(sched, 1 << 30, channels=8), Job(sched, 1 << 30, channels=8)])
    busiest = r.bottlenecks[0].busy_time
    assert [b.bandwidth_time for b in both] == pytest.approx([2 * busiest] * 2, rel=1e-9)
    assert 1.99 < both[0].slowdown <= 2.0


def test_links_at_different_places_in_a_node_keep_their_own_loads():
    topo = load_cluster("pcie-rtx4090-8", nodes=4)  # PCIe switches with and without a NIC behind them
    listed, rotated = both(topo, "direct")
    nbytes = listed.nranks * 4 * 1024
    a = simulate(topo, listed, nbytes, level="analytical", adaptive=True)
    b = simulate(topo, rotated, nbytes, level="analytical", adaptive=True)
    assert b.time == pytest.approx(a.time, rel=1e-9)
    np.testing.assert_allclose(b.link_bytes, a.link_bytes, rtol=1e-9, atol=1e-3)


def test_rotations_must_fall_on_whole_nodes_in_the_same_order():
    topo = load_cluster("dgx-h100", nodes=4)
    _, rotated = both(topo, "pxn")
    shuffled = np.arange(32).reshape(4, 8)[:, ::-1].ravel()
    shuffled[:8] = shuffled[:8][::-1]  # node 0 in another order than the others
    with pytest.raises(FabricsimError, match="whole NVLink domains of 8 GPUs, each in the same order"):
        simulate(topo, rotated, 32 * 4 * 64, ranks=shuffled)
    same_order = np.arange(32).reshape(4, 8)[::-1].ravel()  # nodes reversed, each in order: still symmetric
    assert simulate(topo, rotated, 32 * 4 * 64, ranks=same_order).time > 0
