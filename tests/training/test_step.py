from dataclasses import replace

import pytest
from conftest import AlphaBeta
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.training import parallel as P
from fabricsim.training.models import MODELS
from fabricsim.training.step import step_time

L70 = MODELS["llama3-70b"]


def run(par, comm=None, model=L70, gpu=None, **kw):
    from fabricsim.hardware import get_gpu

    return step_time(model, par, gpu or get_gpu("H100"), comm or AlphaBeta(), **kw)


def test_step_composition_adds_up(comm, h100):
    par = P.Parallelism(tp=4, pp=4, dp=2, cp=2, vp=5, global_batch=128, precision="fp8")
    r = step_time(L70, par, h100, comm)
    assert r.step_time == pytest.approx(r.compute + r.bubble + sum(r.exposed.values()))
    assert r.tokens_per_s == pytest.approx(128 * L70.seq / r.step_time)
    assert r.mfu == pytest.approx(r.tflops_per_gpu * 1e12 / h100.fp8_flops)
    assert r.mfu_bf16 == pytest.approx(2 * r.mfu, rel=1e-3)
    assert 0 < r.comm_fraction < 1
    assert {"tp:all_gather", "tp:reduce_scatter", "cp:all_gather", "pp:sendrecv", "dp:reduce_scatter"} <= set(r.call_time)


def test_all_tp_groups_go_in_one_call(comm, h100):
    par = P.Parallelism(tp=8, pp=1, dp=4, global_batch=4, sequence_parallel=False)
    step_time(L70, par, h100, comm)
    tp_calls = [c for c in comm.calls if c[1].shape[1] == 8 and c[0] == "all_reduce"]
    assert tp_calls and tp_calls[0][1].shape == (4, 8)


@pytest.mark.parametrize("pp, m, vp", [(4, 8, 1), (4, 16, 1), (8, 32, 1), (4, 8, 2), (8, 16, 4)])
def test_bubble_formula(pp, m, vp):
    model = MODELS["gpt3-175b"]
    par = P.Parallelism(tp=8, pp=pp, dp=1, vp=vp, global_batch=m)
    r = run(par, AlphaBeta(latency=0, intra=1e30, inter=1e30), model=model)
    pipelined = r.compute - r.compute_parts["optimizer"]  # the optimizer step runs once, outside the pipeline
    assert r.bubble == pytest.approx((pp - 1) / (m * vp) * pipelined, rel=1e-6)


def test_dp_overlap_hides_behind_backward(h100):
    par = P.Parallelism(tp=1, pp=1, dp=64, global_batch=64 * 8, micro_batch=1, precision="bf16")
    r = step_time(MODELS["llama3-8b"], par, h100, AlphaBeta())
    assert r.comm_total["dp"] > 0
    assert r.exposed["dp"] < r.comm_total["dp"]


def test_zero3_gathers_every_micro_batch(comm, h100):
    model = MODELS["mpt-7b"]
    z1 = step_time(model, P.Parallelism(dp=16, zero=1, global_batch=64), h100, AlphaBeta())
    z3 = step_time(model, P.Parallelism(dp=16, zero=3, global_batch=64), h100, AlphaBeta())
    assert z3.comm_total["dp"] > z1.comm_total["dp"]


def test_moe_all_to_all(h100):
    model = MODELS["mixtral-8x7b"]
    r = step_time(model, P.Parallelism(tp=2, pp=1, dp=8, ep=8, global_batch=64), h100, AlphaBeta())
    assert r.comm_total["ep"] > 0 and "ep:alltoall" in r.call_time


def test_recompute_costs_compute(h100):
    base = P.Parallelism(tp=8, pp=1, dp=1, global_batch=8)
    runs = [run(replace(base, recompute=rc)) for rc in ("none", "selective", "mla_up_proj,moe_act", "full")]
    times = [r.compute for r in runs]
    assert times[0] < times[1] < times[3] and times[2] == times[0]  # a dense GQA model has no MLA or experts
    # full recompute repeats every layer's forward: the forward of the no-recompute run, without the output head
    assert runs[3].compute_parts["recompute"] < (times[0] - runs[0].compute_parts["optimizer"]) / 3
    assert runs[3].compute_parts["recompute"] > 0.25 * (times[0] - runs[0].compute_parts["optimizer"])


def test_efficiency_override_and_default_source():
    par = P.Parallelism(tp=8, pp=1, dp=1, global_batch=8)
    def pipelined(r):
        return r.compute - r.compute_parts["optimizer"]

    assert pipelined(run(par, efficiency=0.25)) == pytest.approx(2 * pipelined(run(par, efficiency=0.5)))
    default = run(par)
    assert 0.5 < default.efficiency <= 1 and "MPT-7B, 8x H100" in default.efficiency_source


@settings(max_examples=30, deadline=None)
@given(scale=st.floats(1.0, 8.0), tp=st.sampled_from([2, 4, 8]), pp=st.sampled_from([1, 2, 4]), zero=st.sampled_from([0, 1, 3]))
def test_more_bandwidth_is_never_slower(scale, tp, pp, zero):
    par = P.Parallelism(tp=tp, pp=pp, dp=64 // (tp * pp), zero=zero, global_batch=4 * (64 // (tp * pp)))
    slow = run(par, AlphaBeta(intra=200e9, inter=25e9), model=MODELS["llama3-8b"])
    fast = run(par, AlphaBeta(intra=200e9 * scale, inter=25e9 * scale), model=MODELS["llama3-8b"])
    assert fast.step_time <= slow.step_time * (1 + 1e-12)


def test_ep_overlap_and_flex_dispatch_hide_or_shrink_the_all_to_all(h100):
    model = MODELS["mixtral-8x7b"]
    par = P.Parallelism(tp=1, pp=1, dp=64, ep=8, global_batch=64, recompute="none")
    slow = AlphaBeta(inter=5e9)
    base = step_time(model, par, h100, slow)
    overlapped = step_time(model, replace(par, ep_overlap=True), h100, slow)
    assert base.exposed["ep"] > 0 and overlapped.exposed["ep"] < base.exposed["ep"]
    assert overlapped.comm_total["ep"] == base.comm_total["ep"]


def test_flex_dispatcher_sends_a_token_once_per_remote_domain():
    from fabricsim.training.comm import engine_comm_model
    from fabricsim.training.step import dispatch_dedup
    from fabricsim.training.sweep import cluster_topology

    model = MODELS["deepseek-v3"]
    topo = cluster_topology("dgx-h100", 64)
    comm = engine_comm_model(topo)
    par = P.Parallelism(tp=1, pp=1, dp=64, ep=64)
    ep = P.ep_groups(par)
    assert dispatch_dedup(model, par, ep, comm) == 1.0  # the all-to-all dispatcher sends every copy
    # DeepEP / HybridEP: at most 4 of the 8 nodes (group-limited routing), 8 experts a token
    flex = dispatch_dedup(model, replace(par, dispatcher="hybridep"), ep, comm)
    assert flex == pytest.approx(8 * (1 - (7 / 8) ** 4) / 8)
    inside = P.Parallelism(tp=1, pp=1, dp=64, ep=8, dispatcher="deepep")
    assert dispatch_dedup(model, inside, P.ep_groups(inside), comm) == 1.0  # one node: nothing to save


def test_interleaved_pipeline_sends_overlap_compute(h100):
    model = MODELS["gpt3-175b"]
    par = P.Parallelism(tp=8, pp=8, dp=1, vp=2, global_batch=32)
    slow = AlphaBeta(inter=1e9)
    on, off = run(par, slow, model=model), run(replace(par, pp_overlap=False), slow, model=model)
    assert on.exposed["pp"] < off.exposed["pp"] and on.comm_total["pp"] == off.comm_total["pp"]


def test_cpu_offloading_is_exposed_only_past_the_passes(h100):
    model = MODELS["llama3-70b"]
    par = P.Parallelism(tp=1, pp=1, dp=8, micro_batch=1, global_batch=8, zero=3, offload_layers=40)
    r = step_time(model, par, h100, AlphaBeta())  # PCIe Gen5: 40 layers' activations per pass
    assert r.compute_parts["offload"] >= 0
    assert step_time(model, replace(par, offload_layers=0), h100, AlphaBeta()).compute_parts["offload"] == 0


def test_userbuffers_pair_each_tp_collective_with_its_gemm():
    """Ring exchange hides a gather behind tp - 1 of its GEMM's tp chunks; a pipelined reduce-scatter always leaves
    its last chunk; bulk overlap hides what the GEMM covers."""
    from fabricsim.training.step import UB_PIPELINE_SPLITS, _tp_overlap_exposed

    big = {"qkv": (1.0, 1.0, 1.0), "proj": (1.0, 1.0, 1.0)}
    assert _tp_overlap_exposed(big, 0.5, 0.5, 4, True, 1.0) == 0.0  # every GEMM outlasts its collective
    assert _tp_overlap_exposed(big, 0.5, 0.5, 4, False, 1.0) == pytest.approx(0.5 / UB_PIPELINE_SPLITS)
    small = {"qkv": (0.1, 0.1, 0.1), "proj": (0.1, 0.1, 0.1)}
    ring = 3 * (0.5 / 3 - 0.1 / 4)  # (tp - 1) max(0, c / (tp - 1) - g / tp)
    bulk = 0.5 - 0.1
    assert _tp_overlap_exposed(small, 0.5, 0.5, 4, True, 1.0) == pytest.approx(3 * ring + 2 * bulk)
    assert _tp_overlap_exposed(small, 0.5, 0.5, 4, True, 1.0, refwd=True) == pytest.approx(5 * ring + 2 * bulk)
    assert _tp_overlap_exposed(small, 0.5, 0.5, 4, True, 10.0) == 0.0  # slower GEMMs hide more


def test_tp_collectives_per_layer_and_recompute(h100):
    """Sequence parallelism: 6 gathers + 4 reduce-scatters a layer; full recompute adds the forward's 2 + 2; the
    pipeline sends 1/tp of the activations from each TP rank with or without SP."""
    par = P.Parallelism(tp=8, pp=2, dp=1, global_batch=4, precision="bf16", recompute="none")
    base = run(par)
    gathers = base.call_time["tp:all_gather"] * 6 + base.call_time["tp:reduce_scatter"] * 4
    assert base.comm_total["tp"] == pytest.approx(gathers * L70.layers / 2 * 4)
    full = run(replace(par, recompute="full"))
    assert full.comm_total["tp"] == pytest.approx(base.comm_total["tp"] * 14 / 10)
    comm_sp, comm_ar = AlphaBeta(), AlphaBeta()
    run(par, comm_sp)
    run(replace(par, sequence_parallel=False), comm_ar)
    sends = {c[2] for c in comm_sp.calls if c[0] == "sendrecv"} | {c[2] for c in comm_ar.calls if c[0] == "sendrecv"}
    assert sends == {L70.seq * L70.hidden * 2 / 8}
    overlapped = run(replace(par, tp_overlap=True))
    assert 0 < overlapped.exposed["tp"] < base.exposed["tp"] == base.comm_total["tp"]
