"""The kernel-level compute model: GEMM shapes, precisions, experts, attention, pipeline splits."""

from dataclasses import replace

import pytest

from fabricsim.errors import FabricsimError
from fabricsim.hardware import get_gpu
from fabricsim.training import compute as C
from fabricsim.training import efficiency as E
from fabricsim.training.models import MODELS
from fabricsim.training.precision import gemm_peak


def shape(**kw):
    base = dict(tokens=4096, tp=1, ep=1, etp=1, sp=False, precision="bf16", recompute="none", capacity_factor=0.0)
    return C.Shape(**(base | kw))


def test_gemm_efficiency_follows_deepgemm_h800_table():
    """The inner-dimension law reproduces DeepGEMM's published H800 FP8 GEMMs within 7%."""
    r = C.rates(get_gpu("H800"), "fp8")
    for m, n, k, published in ((4096, 7168, 16384, 1470), (4096, 7168, 2048, 1204), (4096, 24576, 1536, 1166),
                               (4096, 32768, 512, 748)):
        fwd, _ = C._gemm(r, True, m, n, k)
        assert 2 * m * n * k / fwd / 1e12 == pytest.approx(published, rel=0.07)


def test_precision_rates_per_gpu():
    assert gemm_peak(get_gpu("B200"), "nvfp4") == 9000e12 and gemm_peak(get_gpu("GB300"), "nvfp4") == 15000e12
    assert gemm_peak(get_gpu("GB200"), "mxfp8") == get_gpu("GB200").fp8_flops
    with pytest.raises(FabricsimError, match="H100 .* has no mxfp8 tensor cores: use bf16 or fp8 or fp8-block"):
        gemm_peak(get_gpu("H100"), "mxfp8")
    with pytest.raises(FabricsimError, match="no nvfp4"):
        gemm_peak(get_gpu("H100"), "nvfp4")


def test_low_precision_speeds_up_gemms_not_attention():
    model, gpu = MODELS["llama3-70b"], get_gpu("GB200")
    times = {p: C.layer_times(model, shape(precision=p), C.rates(gpu, p), False) for p in ("bf16", "mxfp8", "nvfp4")}
    assert times["bf16"].gemm_fwd > times["mxfp8"].gemm_fwd > times["nvfp4"].gemm_fwd
    assert times["bf16"].attn_fwd == times["mxfp8"].attn_fwd == times["nvfp4"].attn_fwd  # attention stays BF16
    assert times["nvfp4"].mem_fwd > times["bf16"].mem_fwd  # quantization casts cost memory traffic
    speedup = times["bf16"].total / times["nvfp4"].total
    assert 1.3 < speedup < 4  # far from the 4x peak ratio: BF16 parts and casts stay


def test_expert_gemms_lose_efficiency_as_rows_per_expert_shrink():
    """The same routed work split over more local experts: each expert's rows pad to the 128-row block and its
    wgrad has a short inner dimension."""
    model = MODELS["deepseek-v3"]
    r = C.rates(get_gpu("H100"), "bf16")
    one_expert = C.layer_times(model, shape(tokens=4096), r, True)  # 256 local experts of 128 rows (4096 x 8 / 256)
    padded = C.layer_times(model, shape(tokens=256), r, True)  # 8 rows each, padded to the 128-row block
    assert padded.expert_fwd > 0.9 * one_expert.expert_fwd  # 1/16 of the FLOPs, about the same time
    dense = C.layer_times(model, shape(tokens=4096, ep=256), r, True)  # 1 local expert of 32,768 rows
    assert dense.expert_fwd < one_expert.expert_fwd * 1.01  # same FLOPs, full blocks either way


def test_blackwell_ultra_attention_and_sfu_bound():
    model = MODELS["gpt-oss-120b"]
    b200, b300 = (C.rates(get_gpu(g), "bf16") for g in ("B200", "B300"))
    t200 = C.layer_times(model, shape(), b200, True)
    t300 = C.layer_times(model, shape(), b300, True)
    assert t300.attn_fwd < t200.attn_fwd / 1.3  # doubled SFU throughput
    # head dim 64 on B200 is bound by exponentials: slower per FLOP than head dim 128
    assert C._sfu_bound(E.TENSOR_FLOPS_PER_EXP["blackwell"], 64, 4) == pytest.approx(2.0)
    assert C._sfu_bound(E.TENSOR_FLOPS_PER_EXP["hopper"], 64, 4) == 1.0


def test_sliding_window_attention_costs_whole_tiles():
    model = MODELS["gpt-oss-120b"]
    r = C.rates(get_gpu("H100"), "bf16")
    windowed = C.layer_times(model, shape(), r, True).attn_fwd
    full = C.layer_times(replace(model, window=0, windowed_layers=0), shape(), r, True).attn_fwd
    # half the layers attend 2 tiles (256 keys) instead of seq / 2 = 2048 on average
    assert windowed == pytest.approx(full * (0.5 + 0.5 * 256 / 2048))


def test_recompute_modules_add_what_they_recompute():
    model, r = MODELS["deepseek-v3"], C.rates(get_gpu("H100"), "bf16")
    none = C.layer_times(model, shape(), r, True)
    mla = C.layer_times(model, shape(recompute="mla_up_proj"), r, True)
    act = C.layer_times(model, shape(recompute="moe_act"), r, True)
    full = C.layer_times(model, shape(recompute="full"), r, True)
    assert 0 < mla.recompute < act.recompute + mla.recompute < full.recompute
    assert full.recompute == pytest.approx(none.fwd)


@pytest.mark.parametrize("name, pp, vp, expect", [
    ("llama3-70b", 8, 5, [10] * 8),  # even: Megatron's default split
    ("llama3-405b", 16, 8, [7] + [8] * 14 + [7]),  # 126 + embedding + loss on 128 virtual stages
    ("deepseek-v3", 16, 1, [4] * 15 + [1]),  # Megatron-Bridge's layout: the last stage holds MTP and the loss
    ("deepseek-v3", 2, 8, [32, 29]),  # 'Et*4|(t*4|)*14tmL'
])
def test_stage_plan_matches_megatron_layouts(name, pp, vp, expect):
    plan = C.stage_plan(MODELS[name], pp, vp)
    assert [d + m for d, m in zip(plan.dense, plan.moe)] == expect
    assert sum(plan.dense) == MODELS[name].n_dense_layers


def test_framework_factor_comes_from_the_anchor_runs():
    h100, b200 = get_gpu("H100"), get_gpu("B200")
    f, source = C.framework_factor(h100, "fp8")
    assert 0.5 < f <= 1 and "Llama2-7B" in source
    assert C.framework_factor(b200, "mxfp8")[0] == f and "hopper's" in C.framework_factor(b200, "mxfp8")[1]
    assert C.framework_factor(h100, "bf16")[0] != f


def test_whole_step_default_efficiency_for_flop_counted_work():
    """`efficiency.default_efficiency`, what trace replay charges FLOPs at: the anchors' published figures."""
    assert E.default_efficiency("hopper", "bf16")[0] == 0.4644
    assert E.default_efficiency("ampere", "bf16")[0] == 0.6423
    value, source = E.default_efficiency("ada", "bf16")
    assert value == 0.4644 and source.startswith("ada: no published figure, using hopper's")


def test_unfused_megatron_kernels_cost_what_their_op_chains_move():
    """GPT-OSS's YaRN RoPE (mscale != 1), clamped GLU and fc2 expert bias run as unfused PyTorch chains; the
    all-to-all dispatcher sorts received rows by local expert; HybridEP permutes inside its dispatch kernels."""
    gpt_oss, gpu = MODELS["gpt-oss-120b"], get_gpu("GB300")
    r = C.rates(gpu, "bf16")
    plain = replace(gpt_oss, rope_yarn_factor=0.0, activation_clamp=0.0, linear_bias=False)
    t = {name: C.layer_times(m, shape(tokens=16384, ep=64), r, True) for name, m in (("gpt-oss", gpt_oss), ("plain", plain))}
    rope = 16384 * (64 + 8) * 64  # q and k elements
    clamp = 16384 * 4 * 2 * 2880  # fc1 output elements (top-4 rows, gated)
    bias = 16384 * 4 * 2880  # fc2 output elements
    extra_fwd = (C.ROPE_UNFUSED_BYTES[0] - C.ROPE_FUSED_BYTES) * rope + C.CLAMP_BYTES[0] * clamp + C.EXPERT_BIAS_BYTES["bf16"][0] * bias
    assert (t["gpt-oss"].mem_fwd - t["plain"].mem_fwd) * r.hbm == pytest.approx(extra_fwd, rel=1e-9)
    assert t["gpt-oss"].mem_bwd > t["plain"].mem_bwd
    assert C._yarn_mscale(32.0) == pytest.approx(1.3466, abs=1e-4) and C._yarn_mscale(0.0) == 1.0
    # permutations: 2 experts per GPU under all-to-all (permute + sort by expert), 1 expert (permute only), HybridEP
    perm = {}
    for key, ep, dispatcher in (("a2a-2", 64, "alltoall"), ("a2a-1", 128, "alltoall"), ("deepep-2", 64, "deepep"),
                                ("hybridep-2", 64, "hybridep")):
        perm[key] = C.layer_times(plain, shape(tokens=16384, ep=ep, dispatcher=dispatcher), r, True).mem_fwd
    routed_bytes = 2 * C.PERMUTE_BYTES[0] * 16384 * 4 * 2880 / r.hbm  # a permute and an unpermute of every routed row
    assert perm["a2a-2"] - perm["deepep-2"] == pytest.approx(routed_bytes, rel=1e-9)
    assert perm["deepep-2"] - perm["hybridep-2"] == pytest.approx(routed_bytes, rel=1e-9)
    assert perm["a2a-1"] == pytest.approx(perm["deepep-2"], rel=1e-9)
