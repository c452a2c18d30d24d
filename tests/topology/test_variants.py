"""What-if variants: new topologies from a built one, sharing unchanged arrays, each with a fresh derived store,
giving the figures of the changed cluster while the original keeps its own."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fabricsim.engine import simulate
from fabricsim.errors import FabricsimError
from fabricsim.routing import route
from fabricsim.schedules import build_schedule
from fabricsim.topology import build, load_cluster, preset_spec
from fabricsim.topology.calibrated import Calibrated, Fitted, LogUsed
from fabricsim.topology.model import DeviceKind
from fabricsim.topology.variants import link_indices, with_calibration, with_link_capacity, without_links
from fabricsim.tuner.select import best

GIB = 1 << 30


def ring_busbw(topo) -> float:
    return best(topo, "all_reduce", GIB, algos=["ring"]).result.busbw


@pytest.fixture(scope="module")
def h100():
    return load_cluster("dgx-h100")


def test_halving_every_link_gives_the_fresh_figure_and_leaves_the_original_alone(h100):
    before = ring_busbw(h100)
    half = with_link_capacity(h100, np.ones(h100.n_links, dtype=bool), 0.5)
    fresh = dataclasses.replace(load_cluster("dgx-h100"), link_capacity=h100.link_capacity * 0.5)
    assert ring_busbw(half) == pytest.approx(ring_busbw(fresh), rel=1e-12)
    assert ring_busbw(half) / 1e9 == pytest.approx(184.0, abs=0.05)
    assert ring_busbw(h100) == before and before / 1e9 == pytest.approx(366.0, abs=0.05)


def test_a_variant_shares_unchanged_arrays_and_starts_an_empty_store(h100):
    ring_busbw(h100)
    v = with_link_capacity(h100, [0], 2.0)
    assert v.link_src is h100.link_src and v.dev_kind is h100.dev_kind and v.gpu_device is h100.gpu_device
    assert v.link_capacity is not h100.link_capacity and not v.link_capacity.flags.writeable
    assert len(v._derived) == 0 and len(h100._derived) > 0
    assert len(v._structure) == 0 and v._structure is not h100._structure  # other capacities: routed anew


def test_links_by_index_or_mask_and_both_directions_of_a_cable(h100):
    mask = np.zeros(h100.n_links, dtype=bool)
    mask[[4, 9]] = True
    by_mask, by_index = with_link_capacity(h100, mask, 0.25), with_link_capacity(h100, [9, 4, 4], 0.25)
    np.testing.assert_array_equal(by_mask.link_capacity, by_index.link_capacity)
    changed = np.flatnonzero(by_mask.link_capacity != h100.link_capacity)
    assert changed.tolist() == [4, 5, 8, 9]  # each named link and its opposite direction
    one_way = with_link_capacity(h100, [4], 0.25, both_directions=False)
    assert np.flatnonzero(one_way.link_capacity != h100.link_capacity).tolist() == [4]
    each = with_link_capacity(h100, [4, 5], [0.5, 0.25])
    assert each.link_capacity[4] == h100.link_capacity[4] * 0.5 and each.link_capacity[5] == h100.link_capacity[5] * 0.25


@pytest.mark.parametrize("links,factor,match", [
    ([0], 0.0, "without_links"), ([0], -1.0, "positive"), ([0], float("nan"), "positive"),
    ([0, 1], [0.5, 0.5, 0.5], "one per named link"), ([10**9], 0.5, "not a link"), ([-1], 0.5, "not a link"),
    (np.zeros(3, dtype=bool), 0.5, "one boolean per link"), ([0.5], 0.5, "integer"),
])
def test_bad_variant_requests_name_the_fix(h100, links, factor, match):
    with pytest.raises(FabricsimError, match=match):
        with_link_capacity(h100, links, factor)


@pytest.fixture(scope="module")
def two_pods():
    return load_cluster("superpod-h100", nodes=64)  # two scalable units joined by spines


def _spine_links(topo, spine: int) -> np.ndarray:
    return np.flatnonzero((topo.link_src == spine) | (topo.link_dst == spine))


def test_a_failed_spine_is_routed_around(two_pods):
    a, b = 0, 32 * 8  # GPU 0 of node 0 and of node 32: another scalable unit, through a spine
    path = route(two_pods, a, b).path_links(0)
    spine = next(int(d) for d in two_pods.link_dst[path] if two_pods.dev_level[d] == 2)
    down = without_links(two_pods, _spine_links(two_pods, spine))
    assert down.n_links == two_pods.n_links - _spine_links(two_pods, spine).size
    detour = down.link_origin[route(down, a, b).path_links(0)]
    assert not np.isin(detour, _spine_links(two_pods, spine)).any()
    assert not (down.link_dst == spine).any() and not (down.link_src == spine).any()
    np.testing.assert_array_equal(down.link_src, two_pods.link_src[down.link_origin])
    sched = build_schedule("sendrecv", "direct", 2)
    healthy = simulate(two_pods, sched, GIB, ranks=[a, b])
    assert simulate(down, sched, GIB, ranks=[a, b]).time == pytest.approx(healthy.time, rel=1e-12)  # spines to spare


def test_failing_no_link_gives_back_the_healthy_figure_exactly(two_pods):
    same = without_links(two_pods, [])
    assert same.n_links == two_pods.n_links
    sched = build_schedule("all_reduce", "ring", 512, channels=8)
    assert simulate(same, sched, GIB).time == simulate(two_pods, sched, GIB).time


def test_failures_compose_and_keep_the_built_numbering(two_pods):
    spines = np.flatnonzero((two_pods.dev_kind == DeviceKind.FABRIC_SWITCH) & (two_pods.dev_level == 2))
    one = without_links(two_pods, _spine_links(two_pods, int(spines[0])))
    two = without_links(one, _spine_links(one, int(spines[1])))
    gone = np.concatenate([_spine_links(two_pods, int(s)) for s in spines[:2]])
    np.testing.assert_array_equal(two.link_origin, np.setdiff1d(np.arange(two_pods.n_links), gone))


def test_cutting_a_gpu_off_names_the_cut(h100):
    gpu0 = int(h100.gpu_device[0])
    with pytest.raises(FabricsimError, match="cannot reach GPU rank 0: fail fewer links"):
        without_links(h100, (h100.link_src == gpu0))


def test_link_indices_accepts_a_mask_or_indices(h100):
    assert link_indices(h100, [3, 1, 3]).tolist() == [1, 3]
    assert link_indices(h100, h100.link_tech == h100.link_tech[0]).size > 0


def _calibration(**values: float) -> Calibrated:
    log = LogUsed("run.log", "ab" * 32, "all_reduce", 16, "20 rows, 8 B .. 8 GiB, out-of-place")
    return Calibrated(**{k: Fitted(v, 0.5, ("run.log",), 20) for k, v in values.items()}, logs=(log,), method="test")


CALIBRATIONS = [
    _calibration(net_efficiency=0.5, nvlink_efficiency=0.7, pcie_efficiency=0.6, net_step_latency=8e-6,
                 launch_latency=5e-6),
    _calibration(net_efficiency=0.9, launch_latency=1e-6),
    None,
]


@pytest.mark.parametrize("preset, nodes, level", [("dgx-h100", 2, "flow"), ("pcie-l40s-8", 2, "analytical"),
                                                  ("pcie-rtx4090-8", 1, "analytical")])
def test_a_calibrated_variant_times_every_call_as_the_cluster_built_calibrated(preset, nodes, level):
    """Each variant shares the structural store the base (and the variant before it) filled; every pick and figure
    is the one the topology built from the calibrated spec gives, exactly."""
    spec = preset_spec(preset, nodes=nodes)
    base = build(spec)
    calls = [("all_reduce", 1 << 30), ("all_reduce", 48 << 10), ("all_reduce", 1000), ("all_gather", 1 << 24),
             ("alltoall", 1 << 22)]  # 1000 B: 250 floats, timed at its own size (not by a unit message)
    for coll, size in calls:
        best(base, coll, size, level=level)
    for cal in CALIBRATIONS:
        variant = with_calibration(base, cal)
        fresh = build(dataclasses.replace(spec, calibrated=cal))
        assert variant.spec == fresh.spec and variant._structure is base._structure and variant._sized is base._sized
        for coll, size in calls:
            got, want = best(variant, coll, size, level=level), best(fresh, coll, size, level=level)
            assert (got.algorithm, got.protocol, got.channels) == (want.algorithm, want.protocol, want.channels)
            assert (got.result.time, got.result.busbw) == (want.result.time, want.result.busbw), (coll, size)
            assert [b.link for b in got.result.bottlenecks] == [b.link for b in want.result.bottlenecks]
            np.testing.assert_array_equal(got.result.link_bytes, want.result.link_bytes)


def test_a_calibrated_variant_keeps_its_own_drains_and_leaves_the_base_alone():
    base = build(preset_spec("dgx-h100", nodes=2))
    before = best(base, "all_reduce", GIB).result.time
    variant = with_calibration(base, CALIBRATIONS[0])
    slower = best(variant, "all_reduce", GIB).result.time
    assert slower > before and best(base, "all_reduce", GIB).result.time == before
    assert variant._derived is not base._derived
    assert "unit" in variant._derived.kinds() and "unit" in base._derived.kinds()
    assert variant.link_capacity is base.link_capacity and variant.link_src is base.link_src


def test_a_topology_without_a_spec_has_no_calibration_to_vary(h100):
    with pytest.raises(FabricsimError, match="built without a cluster spec"):
        with_calibration(dataclasses.replace(h100, spec=None), None)
