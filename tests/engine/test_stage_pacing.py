"""A pipelined tree's stages paced by NCCL's per-channel rate (engine.chunking.stage_fraction, engine.assemble):
with LL128 and Simple a rank passes a chunk on only once its channel's threads have moved it, so the pipeline's
fill costs (stages - 1) chunks at the channel's rate; LL forwards line by line and rings have no fill."""

from __future__ import annotations

import pytest

from fabricsim.engine import chunking
from fabricsim.engine.call import job_call
from fabricsim.engine.chunking import CommPlan
from fabricsim.engine.plan import algbw_cap, call_chunks, call_model
from fabricsim.topology import load_cluster
from fabricsim.tuner.select import best

MIB = 1 << 20
H100_NODE = CommPlan(channels=32, nvls_channels=16, nvls_heads=8, nvls_tree_max_chunk=128 << 10)


def test_stage_fraction_follows_each_protocols_kernel():
    # Simple posts whole slices; LL128 hands on one wave of 20 warps x 1920 data bytes; LL streams its lines
    assert chunking.stage_fraction("Tree", "simple", 512 << 10, H100_NODE) == 1.0
    assert chunking.stage_fraction("Tree", "ll", 16 << 10, H100_NODE) == 0.0
    assert chunking.stage_fraction("Tree", "ll128", 30720, H100_NODE) == 1.0  # a mid-size chunk: under a wave
    assert chunking.stage_fraction("Tree", "ll128", 576000, H100_NODE) == pytest.approx(20 * 1920 / 576000)


def _cap_time(topo, choice, nbytes):
    call = job_call(topo, choice.job)
    model = call_model(topo, call)
    chunks = call_chunks(call, model)
    return nbytes / algbw_cap(model, call.channels, chunks), chunks


def test_a_mid_size_tree_pays_its_fill_at_the_channel_rate():
    # 2 DGX H100s, Tree LL128 at 1 MiB: chunks of one wave or less, so each of the tree's 2 x 8 levels holds a
    # chunk for its time at NCCL's per-channel cap, and the P chunks leave after (levels + P - 1) chunk times
    topo = load_cluster("dgx-h100", nodes=2)
    choice = best(topo, "all_reduce", MIB, algos="tree", protos="ll128")
    cap_time, chunks = _cap_time(topo, choice, MIB)
    levels = choice.job.schedule.steps[0].repeat
    assert chunks.stage == 1.0 and levels == 16 and chunks.loops > 1
    expected = cap_time * (levels + chunks.loops - 1) / chunks.loops
    assert choice.result.bandwidth_time == pytest.approx(expected, rel=1e-9)
    assert choice.result.bandwidth_time > 3 * cap_time  # the links alone would drain it within the cap's time


def test_ll_and_rings_keep_their_time_at_the_cap():
    topo = load_cluster("dgx-h100", nodes=2)
    ll = best(topo, "all_reduce", 256 << 10, algos="tree", protos="ll")
    cap_time, _ = _cap_time(topo, ll, 256 << 10)
    assert ll.result.bandwidth_time < 1.5 * cap_time  # no per-level fill: LL hands on lines, not chunks
    ring = best(topo, "all_reduce", 16 * MIB, algos="ring", protos="ll128")
    cap_time, _ = _cap_time(topo, ring, 16 * MIB)
    assert ring.result.bandwidth_time == pytest.approx(max(cap_time, ring.result.limiter.time), rel=1e-9)
