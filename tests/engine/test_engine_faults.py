"""The engine on faulted fabrics: a failed link carries nothing, a degraded link never carries more than its degraded
capacity, removing a failure gives back the healthy figure exactly, and where ECMP spreads over the spines left the
spine layer loses exactly the share that failed."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricsim.engine.capacity import effective_capacity
from fabricsim.topology import Faults, apply_faults, build, load_cluster, load_spec
from fabricsim.topology import names as N
from fabricsim.topology.model import DeviceKind
from fabricsim.tuner.select import best

GIB = 1 << 30


def _on_built(topo, values: np.ndarray, n_built: int) -> np.ndarray:
    """Per-link values of a variant laid out on the built topology's links (0 on links it lacks)."""
    out = np.zeros(n_built)
    out[topo.link_origin if topo.link_origin is not None else np.arange(topo.n_links)] = values
    return out


@pytest.fixture(scope="module")
def oversubscribed():
    """512 GPUs in two scalable units, leaves 2:1 oversubscribed to 4 spines, adaptive routing: the spine layer binds."""
    return build(replace(load_spec("superpod-h100", gpus=512), oversubscription=2.0, routing="adaptive"))


def test_a_failed_spine_carries_nothing_and_its_share_moves_to_the_spines_left(oversubscribed):
    healthy = best(oversubscribed, "alltoall", 1 << 28).result
    down = apply_faults(oversubscribed, Faults(fail=("spine1",)))
    failed = best(down, "alltoall", 1 << 28).result
    spine = N.device_names(oversubscribed).index("spine1")
    touches = (oversubscribed.link_src == spine) | (oversubscribed.link_dst == spine)
    assert healthy.link_bytes[touches].sum() > 0
    moved = _on_built(down, failed.link_bytes, oversubscribed.n_links)
    assert moved[touches].sum() == 0
    tier = (oversubscribed.dev_kind[oversubscribed.link_src] == DeviceKind.FABRIC_SWITCH) & \
           (oversubscribed.dev_kind[oversubscribed.link_dst] == DeviceKind.FABRIC_SWITCH)
    assert moved[tier].sum() == pytest.approx(healthy.link_bytes[tier].sum(), rel=1e-9)  # the same bytes, fewer spines
    assert failed.bottlenecks[0].name.startswith("su0.leaf0 -> spine0")  # a surviving uplink binds
    assert failed.busbw / healthy.busbw == pytest.approx(3 / 4, rel=0.01)  # 1 of 4 spines: a quarter of the uplinks


def test_a_degraded_link_never_carries_more_than_its_degraded_capacity():
    two = load_cluster("dgx-h100", nodes=2)
    slow = apply_faults(two, Faults(degrade=("node0.nic0:0.25",)))
    for algo in ("ring", "tree"):
        r = best(slow, "all_reduce", GIB, algos=[algo]).result
        rate = r.link_bytes / r.time
        assert (rate <= effective_capacity(slow) * (1 + 1e-9)).all()
        nic = N.device_names(slow).index("node0.nic0")
        at_nic = np.flatnonzero((slow.link_src == nic) | (slow.link_dst == nic))
        assert slow.link_capacity[at_nic] == pytest.approx(two.link_capacity[at_nic] * 0.25)
        assert r.bottlenecks[0].link in at_nic  # the slowest member sets the pace
        # busy all the time but for a tree's pipeline fill (its 15 more levels of 128 chunks at the channel's rate)
        assert rate[at_nic].max() == pytest.approx(effective_capacity(slow)[at_nic].max(), rel=0.08)


def test_removing_a_failure_gives_back_the_healthy_figure_exactly():
    pod = load_cluster("superpod-h100", gpus=512)
    first = best(pod, "all_reduce", GIB)
    down = best(apply_faults(pod, Faults(fail=("node3.nic0", "spine2"))), "all_reduce", GIB)
    assert down.result.time != first.result.time
    again = best(pod, "all_reduce", GIB)  # the healthy topology keeps its own store and figures
    healed = best(apply_faults(pod, Faults(degrade=("spine2:1",))), "all_reduce", GIB)  # a fresh store, nothing lost
    for r in (again, healed):
        assert (r.algorithm, r.protocol) == (first.algorithm, first.protocol)
        assert r.result.time == first.result.time and r.result.busbw == first.result.busbw
        np.testing.assert_array_equal(r.result.link_bytes, first.result.link_bytes)


def test_a_gpu_with_two_ports_one_down_runs_at_the_port_left():
    """Each GPU sends on 2 NIC ports of 100 Gb/s (the NICs bind, not PCIe): with node0.gpu0's second port down its
    share moves to the first, which then carries the GPU's whole send and receive, at half the healthy rate."""
    two = build(replace(load_spec("dgx-h100", nodes=2), nics_per_node=16, nic_gbps=100.0))
    down = apply_faults(two, Faults(fail=("node0.nic1",)))
    healthy, failed = best(two, "sendrecv", GIB).result, best(down, "sendrecv", GIB).result
    assert failed.busbw / healthy.busbw == pytest.approx(1 / 2, rel=1e-3)  # the bandwidth part halves
    nic0 = N.device_names(two).index("node0.nic0")
    assert nic0 in {int(down.link_src[b.link]) for b in failed.bottlenecks} | \
        {int(down.link_dst[b.link]) for b in failed.bottlenecks}
    rate = failed.link_bytes / failed.time
    assert (rate <= effective_capacity(down) * (1 + 1e-9)).all()
    repaired = best(apply_faults(two, Faults()), "sendrecv", GIB).result
    assert repaired.time == healthy.time
