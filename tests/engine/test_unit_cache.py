"""A sweep times each call once at its unit message and scales it: the scaled result must equal timing the
message itself (bytes, link loads and max-min drain times are linear in the message; latencies are fixed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fabricsim.engine import simulate, time_traffic
from fabricsim.schedules import build_schedule, structure_from_topology, traffic
from fabricsim.topology import load_cluster

TOPO = load_cluster("superpod-h100", nodes=40)  # partly filled scalable unit: uneven links
STRUCT = structure_from_topology(TOPO)
CALLS = [("all_reduce", "ring", 8), ("all_reduce", "tree", 2), ("all_reduce", "nvls_tree", 1), ("all_gather", "pat", 1),
         ("reduce_scatter", "ring", 8), ("alltoall", "pxn", 1), ("broadcast", "ring", 1)]


NO_BACKGROUND = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


def uncached(sched, nbytes, **kw):
    """The message timed itself, from its step traffic (no unit message involved: a call with background traffic,
    here none, is planned at its own size)."""
    return simulate(TOPO, sched, nbytes, protocol=kw.get("protocol", "simple"), level=kw.get("level", "flow"),
                    background=NO_BACKGROUND)


def test_explicit_traffic_of_a_ring_times_like_its_schedule():
    sched = build_schedule("all_reduce", "ring", STRUCT.nranks, structure=STRUCT, channels=8)
    nbytes = 4 * sched.nchunks * 1000
    explicit = time_traffic(TOPO, traffic(sched, nbytes, 4), collective=sched.collective, algorithm=sched.algorithm,
                            nranks=sched.nranks, nbytes=nbytes, channels=sched.channels)
    assert explicit.time == pytest.approx(simulate(TOPO, sched, nbytes).time, rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(call=st.sampled_from(CALLS), proto=st.sampled_from(["simple", "ll128", "ll"]),
       level=st.sampled_from(["flow", "analytical"]), multiple=st.integers(1, 1 << 16), odd=st.booleans())
def test_scaled_unit_equals_timing_the_message(call, proto, level, multiple, odd):
    coll, algo, channels = call
    if proto != "simple" and algo not in ("ring", "tree"):
        proto = "simple"
    sched = build_schedule(coll, algo, STRUCT.nranks, structure=STRUCT, channels=channels)
    cm = sched.chunkmap
    pieces = int(np.prod(cm.split)) if cm is not None else sched.nchunks
    nbytes = 4 * (pieces * multiple + (7 if odd and coll != "alltoall" else 0))
    simulate(TOPO, sched, 4 * pieces * 3, protocol=proto, level=level)  # a first size: the call is now cached
    got = simulate(TOPO, sched, nbytes, protocol=proto, level=level)
    want = uncached(sched, nbytes, protocol=proto, level=level)
    assert got.time == pytest.approx(want.time, rel=1e-9)
    assert got.latency_time == pytest.approx(want.latency_time, rel=1e-9) and got.slices == want.slices
    np.testing.assert_allclose(got.link_bytes, want.link_bytes, rtol=1e-9)
    assert [b.link for b in got.bottlenecks] == [b.link for b in want.bottlenecks]


def test_a_sweep_keeps_one_unit_timing_per_call_in_the_topologys_store():
    topo = load_cluster("dgx-h100", nodes=2)
    sched = build_schedule("all_reduce", "ring", 16, structure=structure_from_topology(topo), channels=8)
    for size in (1 << 20, 1 << 24, 1 << 28):
        simulate(topo, sched, size)
    assert topo._derived.kinds()["unit"] == 1
