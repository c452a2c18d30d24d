"""A Simple ring drains at every loop: each channel's thread block sends a loop's first chunk only after the
previous loop's last receive (NCCL's ring kernels run the steps in program order), so each loop after the first
waits one step's latency, and the steps' latencies add up to every wait."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.engine import chunking, plan
from fabricsim.engine.call import job_call
from fabricsim.engine.chunking import drains_every_loop
from fabricsim.topology import load_cluster
from fabricsim.tuner.select import best

GIB = 1 << 30


def test_only_simple_rings_of_the_chunked_collectives_drain_every_loop():
    for coll in ("all_reduce", "all_gather", "reduce_scatter"):
        assert drains_every_loop("Ring", "simple", coll)
        assert not drains_every_loop("Ring", "ll", coll) and not drains_every_loop("Ring", "ll128", coll)
        assert not drains_every_loop("Tree", "simple", coll) and not drains_every_loop("NVLS", "simple", coll)
    assert not drains_every_loop("Ring", "simple", "broadcast")  # a chain: each rank forwards slice by slice


def _two_single_gpu_nodes(collective: str, proto: str = "simple", nbytes: int = GIB):
    topo = load_cluster("dgx-a100", nodes=2)  # a fresh topology: nothing it derived is shared between the runs
    ranks = np.array([0, topo.spec.gpus_per_node], dtype=np.int32)
    return best(topo, collective, nbytes, ranks=ranks, algos=["ring"], protos=[proto], nccl_version="2.17.1")


@pytest.mark.parametrize("collective", ["all_gather", "all_reduce"])
def test_each_loop_after_the_first_waits_one_step_on_two_single_gpu_nodes(collective, monkeypatch):
    drained = _two_single_gpu_nodes(collective)
    call = job_call(drained.result.topo, drained.job)
    model = plan.call_model(drained.result.topo, call)
    # 1 GiB on 2 channels of 2 MiB chunks, 2 ranks a loop: 128 loops per channel
    assert plan.call_chunks(call, model).loops == 128
    monkeypatch.setattr(chunking, "drains_every_loop", lambda *a: False)
    kept = _two_single_gpu_nodes(collective)
    steps = 1 if collective == "all_gather" else 2  # n-1 and 2(n-1) ring steps, every one across the network
    per_step = (kept.result.latency_time - model.base_latency) / steps
    assert per_step > 0
    assert drained.result.latency_time - kept.result.latency_time == pytest.approx(127 * per_step, rel=1e-9)
    assert drained.result.bandwidth_time == pytest.approx(kept.result.bandwidth_time, rel=1e-12)
    assert drained.result.busbw < kept.result.busbw


def test_ll_rings_and_single_loop_calls_are_unchanged(monkeypatch):
    ll = _two_single_gpu_nodes("all_gather", "ll")
    one_loop = _two_single_gpu_nodes("all_gather", nbytes=4 << 20)  # 2 channels x 2 ranks x 2 MiB chunks: one loop
    monkeypatch.setattr(chunking, "drains_every_loop", lambda *a: False)
    assert _two_single_gpu_nodes("all_gather", "ll").result.time == pytest.approx(ll.result.time, rel=1e-12)
    assert _two_single_gpu_nodes("all_gather", nbytes=4 << 20).result.time == pytest.approx(one_loop.result.time,
                                                                                             rel=1e-12)
