"""The tuner's pruned search picks what timing every candidate picks, with the same figures: a candidate is left
untimed only when its lower bound (engine.bound.least_time) exceeds a time found, and no bound exceeds the time
the engine finds for its candidate."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricsim.engine.bound import least_time
from fabricsim.topology import load_cluster
from fabricsim.tuner.select import best, plan_call

CLUSTERS = [("dgx-h100", None), ("gb200-nvl72", None), ("pcie-l40s-8", 2), ("dgx-a100", 4), ("dgx1-v100", 2),
            ("superpod-h100", 64), ("pcie-rtx4090-8", 2)]
COLLECTIVES = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall"]
SIZES = [8, 1 << 16, 3 << 19, 1 << 26, 1 << 33]


@pytest.mark.parametrize("name,nodes", CLUSTERS)
def test_the_pruned_search_picks_what_the_exhaustive_one_picks(name, nodes):
    topo = load_cluster(name, nodes=nodes)
    for collective in COLLECTIVES:
        for size in SIZES:
            full = best(topo, collective, size, prune=False)
            fast = best(topo, collective, size)
            assert (fast.algorithm, fast.protocol, fast.channels) == (full.algorithm, full.protocol, full.channels)
            assert (fast.result.time, fast.result.busbw, fast.result.latency_time) == (
                full.result.time, full.result.busbw, full.result.latency_time)
            assert set(fast.table) <= set(full.table)  # what it timed, it timed alike
            ranks = np.arange(topo.n_gpus, dtype=np.int32)
            for algo, proto, t in full.table:
                job = plan_call(topo, collective, algo, proto, size, ranks)
                job = replace(job, protocol=proto)
                assert max(least_time(topo, job), least_time(topo, job, steps=True)) <= t


def test_a_1_gib_all_reduce_on_a_superpod_times_nvlstree_alone():
    topo = load_cluster("superpod-h100", gpus=1024)
    full, fast = best(topo, "all_reduce", 1 << 30, prune=False), best(topo, "all_reduce", 1 << 30)
    assert (fast.algorithm, fast.protocol, fast.result.time) == (full.algorithm, full.protocol, full.result.time)
    assert len(full.table) == 7 and [a for a, _, _ in fast.table] == ["nvls_tree"]  # ring's steps, tree's cap: slower


def test_a_candidate_the_time_found_rules_out_is_bounded_without_its_schedule():
    """A ring's or tree's first bound reads its channels alone (engine.bound.least_time_planned gives least_time's
    figure), so the tuner builds the schedule of a candidate it does not time only where it needs the steps."""
    from fabricsim.engine.bound import least_time_planned
    from fabricsim.schedules import registry

    topo = load_cluster("superpod-h100", gpus=1024)
    ranks = np.arange(topo.n_gpus, dtype=np.int32)
    for algo in ("ring", "tree"):
        for proto in ("ll", "ll128", "simple"):
            job = plan_call(topo, "all_reduce", algo, proto, 1 << 30, ranks)
            assert least_time_planned(topo, "all_reduce", algo, ranks, 1 << 30, proto, job.channels, job.comm,
                                      job.net_peer_bw) == least_time(topo, job)
    registry._build.cache_clear()
    built = []
    build = registry._build
    try:
        registry._build = lambda *a, **k: built.append(a[1]) or build(*a, **k)
        fast = best(topo, "all_reduce", 1 << 30)
    finally:
        registry._build = build
    assert fast.algorithm == "nvls_tree" and "tree" not in built  # the tree's bandwidth bound rules it out
