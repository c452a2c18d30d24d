"""NCCL's per-call chunking (engine.chunking) against values worked out by hand from NCCL 2.30.7's enqueue.cc."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fabricsim.engine import chunking
from fabricsim.engine.chunking import CommPlan, call_chunks, channels_used, chunk_bytes, exec_channels
from fabricsim.schedules import build_schedule, structure_from_topology
from fabricsim.topology import load_cluster
from fabricsim.tuner.select import best

MIB = 1 << 20
H100_NODE = CommPlan(channels=32, nvls_channels=16, nvls_heads=8, nvls_tree_max_chunk=128 << 10)


def test_nvls_chunks_shrink_with_the_message_as_enqueue_cc_says():
    # 8 heads x 16 channels: a 16 MiB AllReduce gives each channel 1 MiB; 1 MiB < 8 x 8 heads x 64 KiB, so the
    # 128 KiB chunk falls to 64 KiB then 32 KiB (not below: 1 MiB >= 2 x 8 x 32 KiB); a loop is 8 x 32 KiB.
    c = call_chunks(H100_NODE, "NVLS", "simple", "all_reduce", 16 * MIB, 8, 1)
    assert (c.channels, c.chunk, c.loops, c.copy_stages) == (16, 32 << 10, 4, 2)
    big = call_chunks(H100_NODE, "NVLS", "simple", "all_reduce", 1 << 30, 8, 1)
    assert (big.chunk, big.loops) == (128 << 10, 64)


def test_ring_simple_chunks_are_four_steps_of_the_buffer_and_a_loop_holds_one_per_rank():
    assert chunk_bytes(H100_NODE, "Ring", "simple", "all_reduce", 1 << 30, 8, 1) == 2 * MIB
    assert chunk_bytes(H100_NODE, "Ring", "simple", "broadcast", 1 << 30, 8, 1) == 512 << 10
    c = call_chunks(H100_NODE, "Ring", "simple", "all_reduce", 1 << 30, 8, 1)
    assert c.loops == 2  # 1 GiB / 32 channels = 32 MiB per channel; a loop is 8 ranks x 2 MiB


def test_tree_ll128_chunk_halves_to_keep_the_pipeline_full():
    # 2 nodes x 8: nsteps = 1 + 1 + 0.8 = 2.8; 64 KiB per channel: 576000 -> 72000 (first rule, floor 128 KiB),
    # then -> 18000 (second rule, floor 32 KiB), aligned to the 1920-byte LL128 grain.
    assert chunk_bytes(H100_NODE, "Tree", "ll128", "all_reduce", 64 << 10, 16, 2) == 18000 // 1920 * 1920


def test_small_calls_run_on_fewer_channels():
    # Ring LL drops a channel while bytes < channels x 512 threads x 8 x nRanks; Simple keeps 32 KiB of traffic a cell
    assert exec_channels(H100_NODE, "Ring", "ll", 64 << 10, 8, 1) == 2
    assert channels_used(32, "all_reduce", "simple", 64 << 10, 8) == 4  # 64 KiB / 16 KiB cells
    assert channels_used(32, "all_gather", "simple", 64 << 10, 8) == 2  # 64 KiB total / 32 KiB cells
    # topoGetAlgoInfo keeps 2 Simple ring channels (64 KiB >= 2 x 512 x 64) and the planner's 4 cells fit on them
    c = call_chunks(H100_NODE, "Ring", "simple", "all_reduce", 64 << 10, 8, 1)
    assert c.channels == 2 and c.share == pytest.approx(2 / 32)


@settings(max_examples=60, deadline=None)
@given(family=st.sampled_from(["Ring", "Tree", "NVLS", "NVLSTree", "CollNetDirect", "CollNetChain", "PAT"]),
       protocol=st.sampled_from(["ll", "ll128", "simple"]), nbytes=st.integers(1, 1 << 36), nodes=st.sampled_from([1, 2, 4, 16]))
def test_chunks_cover_every_byte_and_stay_within_the_buffer(family, protocol, nbytes, nodes):
    coll = "all_gather" if family == "PAT" else "all_reduce"
    c = call_chunks(H100_NODE, family, protocol, coll, nbytes, 8 * nodes, nodes)
    per_loop = c.chunk * chunking.chunks_per_loop(family, coll, H100_NODE, 8 * nodes)
    assert 1 <= c.channels <= 32 and 0 < c.share <= 1
    assert c.loops * per_loop * c.channels >= nbytes
    assert c.chunk <= 4 * MIB // 8 * 4


def test_nvls_on_one_node_pays_the_fill_of_its_scatter_and_gather_stages():
    # at 16 MiB NCCL runs 4 loops per channel through 3 stages (scatter, reduce + multicast, gather): the fill
    # makes the bandwidth time well above the steady state; at 1 GiB (64 loops) it all but vanishes
    topo = load_cluster("dgx-h100", gpus=8)
    mid = best(topo, "all_reduce", 16 * MIB, algos=["nvls"]).result
    big = best(topo, "all_reduce", 1 << 30, algos=["nvls"]).result
    assert mid.slices == 4 and big.slices == 64
    steady_rate = (1 << 30) / big.bandwidth_time
    assert mid.bandwidth_time > 1.4 * (16 * MIB) / steady_rate
    assert big.bandwidth_time < 1.1 * (1 << 30) / steady_rate


def test_a_caller_without_nccls_communicator_gets_its_defaults():
    topo = load_cluster("dgx-h100", gpus=8)
    sched = build_schedule("all_reduce", "ring", 8, structure=structure_from_topology(topo), channels=1)
    comm = chunking.default_comm(16, 8, 1)
    assert (comm.channels, comm.nvls_channels, comm.nvls_heads) == (32, 16, 8)
    from fabricsim.engine import simulate
    assert simulate(topo, sched, 1 << 28, channels=16).time == pytest.approx(
        simulate(topo, sched, 1 << 28, channels=16, comm=comm).time)


def test_a_gpus_proxy_thread_posts_its_network_messages_one_after_another():
    # NCCL's network post overhead (tuning.cc getNetOverhead: 1 us Intel/Arm, 2 us AMD) per 128 KiB p2p message:
    # at 1 us the 50 GB/s NIC binds, at a slow host's 10 us the proxy does (128 KiB / 10 us = 13.1 GB/s)
    from dataclasses import replace

    from fabricsim.engine import simulate
    from fabricsim.tuner.select import plan_call
    topo = load_cluster("dgx-h100", nodes=2)
    job = plan_call(topo, "sendrecv", "direct", "simple", 1 << 30, np.asarray([0, 8], dtype=np.int32))
    run = lambda comm: simulate(topo, job.schedule, 1 << 30, ranks=job.ranks, channels=job.channels,  # noqa: E731
                                net_peer_bw=job.net_peer_bw, comm=comm)
    fast, slow = run(job.comm), run(replace(job.comm, net_overhead=10e-6))
    assert fast.limiter.kind != "proxy"
    assert slow.limiter.kind == "proxy" and slow.bandwidth_time == pytest.approx((1 << 30) / (128 * 1024 / 10e-6))


def test_nccl_buffsize_and_nvls_chunk_sizes_from_the_environment_resize_the_chunks():
    # NCCL_BUFFSIZE=8 MiB: a Simple ring chunk is 4 steps of 1 MiB; the p2p network chunk stays within a step
    env = chunking.ChunkEnv(buffsize=8 * MIB, p2p_net_chunk=2 * MIB)
    comm = env.apply(H100_NODE)
    assert chunk_bytes(comm, "Ring", "simple", "all_reduce", 1 << 30, 8, 1) == 4 * MIB
    assert comm.p2p_net_chunk == MIB  # min(2 MiB, 8 MiB / NCCL_STEPS) (init.cc:839-840)
    # NCCL_NVLS_CHUNKSIZE alone: NVLSTree's maximum follows it where the rule's fallback was the NVLS chunk itself
    # (fewer than 4 nodes); NCCL_NVLSTREE_MAX_CHUNKSIZE wins over the rule
    two_nodes = CommPlan(channels=32, nvls_channels=16, nvls_heads=8, nvls_tree_max_chunk=128 << 10)
    bigger = chunking.ChunkEnv(nvls_chunk=512 << 10).apply(two_nodes)
    assert (bigger.nvls_chunk, bigger.nvls_tree_max_chunk) == (512 << 10, 512 << 10)
    assert chunk_bytes(bigger, "NVLSTree", "simple", "all_reduce", 1 << 30, 16, 2) == 512 << 10
    four_nodes = CommPlan(channels=32, nvls_channels=16, nvls_heads=8, nvls_tree_max_chunk=64 << 10)
    assert chunking.ChunkEnv(nvls_chunk=512 << 10).apply(four_nodes).nvls_tree_max_chunk == 64 << 10
    capped = chunking.ChunkEnv(nvls_chunk=512 << 10, nvls_tree_max_chunk=256 << 10).apply(four_nodes)
    assert chunk_bytes(capped, "NVLSTree", "simple", "all_reduce", 1 << 30, 32, 4) == 256 << 10
    assert chunking.ChunkEnv().apply(H100_NODE) == H100_NODE


def test_nvls_tree_chunks_start_from_the_simple_step_before_nccl_2_21():
    # NCCL 2.18-2.20: chunkSize = buffSizes[Simple] / NCCL_STEPS, capped only by NCCL_NVLSTREE_MAX_CHUNKSIZE or, from
    # 4 nodes, 64 KiB (v2.20.3 enqueue.cc:1684-1716); 2.21.5 on: comm->nvlsChunkSize
    old = CommPlan(channels=32, nvls_channels=16, nvls_heads=8, nvls_tree_max_chunk=0, nvls_tree_from_step=True)
    assert chunk_bytes(old, "NVLSTree", "simple", "all_reduce", 1 << 30, 16, 2) == 512 << 10
    assert chunk_bytes(chunking.ChunkEnv(buffsize=8 * MIB).apply(old), "NVLSTree", "simple", "all_reduce",
                       1 << 30, 16, 2) == MIB
    env = chunking.ChunkEnv(buffsize=8 * MIB, nvls_tree_max_chunk=512 << 10)
    assert chunk_bytes(env.apply(old), "NVLSTree", "simple", "all_reduce", 1 << 30, 16, 2) == 512 << 10
    from fabricsim.tuner.select import plan_call
    topo = load_cluster("dgx-h100", nodes=2)
    ranks = np.arange(16, dtype=np.int32)
    comms = {v: plan_call(topo, "all_reduce", "nvls_tree", "simple", 1 << 30, ranks, nccl_version=v).comm
             for v in ("2.20.3", "2.22.3")}
    assert comms["2.20.3"].nvls_tree_from_step and comms["2.20.3"].nvls_tree_max_chunk == 0
    assert not comms["2.22.3"].nvls_tree_from_step and comms["2.22.3"].nvls_tree_max_chunk == 128 << 10


def test_the_tuner_runs_every_candidate_on_the_environments_buffers():
    from fabricsim.tuner.select import plan_call
    topo = load_cluster("dgx-h100", nodes=2)
    ranks = np.arange(16, dtype=np.int32)
    env = chunking.ChunkEnv(buffsize=8 * MIB)
    job = plan_call(topo, "all_reduce", "ring", "simple", 64 * MIB, ranks, chunk_env=env)
    assert job.comm.simple_buffsize == 8 * MIB
    default = best(topo, "all_reduce", 1 << 30, ranks=ranks, algos=["ring"], protos=["simple"])
    bigger = best(topo, "all_reduce", 1 << 30, ranks=ranks, algos=["ring"], protos=["simple"], chunk_env=env)
    assert bigger.job.comm.simple_buffsize == 8 * MIB and default.job.comm.simple_buffsize == 4 * MIB
    # twice the chunk: a loop of 16 ranks' chunks is twice as long, so each channel pipelines half as many
    assert bigger.result.slices * 2 == default.result.slices
