"""HBM per GPU as Megatron counts it."""

from dataclasses import replace

import pytest

from fabricsim.training import parallel as P
from fabricsim.training.memory import activation_units, memory
from fabricsim.training.models import MODELS


def test_activations_reduce_to_megatrons_formula_for_a_gpt3_layer():
    """megatron/training/theoretical_memory_usage.py: s*b*h*(18 + 4*ffn/h) per layer, for MHA, a 4h non-gated MLP
    and dropout (bf16, selective recompute)."""
    m = MODELS["gpt3-175b"]
    dense, _ = activation_units(m, P.Parallelism(tp=8, pp=8, dp=1))
    assert dense == pytest.approx(18 + 4 * m.ffn / m.hidden)
    no_dropout, _ = activation_units(replace(m, dropout=0.0), P.Parallelism(tp=8, pp=8, dp=1))
    assert no_dropout == dense - 2


def test_llama3_405b_published_layout_fits():
    """Llama 3 405B at TP 8, PP 16, 8K sequences on 8,192 GPUs with Meta's 16M-token batch, no activation
    checkpointing (Llama 3 paper sec. 3.3.2): it fits 80 GB (no dropout masks, 126 layers as 7 + 14 x 8 + 7);
    sharding the gradients too (the paper's FSDP) leaves more room."""
    m = MODELS["llama3-405b"]
    par = P.resolve(P.Parallelism(tp=8, pp=16, zero=1, global_batch=2048, recompute="none"), 8192, m.seq)
    z1, z2 = memory(m, par), memory(m, replace(par, zero=2))
    assert 60e9 < z2.total < z1.total < 80e9
    assert z1.activations == z2.activations and z2.gradients < z1.gradients / 50


def test_state_sharding_offloading_and_fp8_parameters_shrink_memory():
    m = MODELS["llama3-70b"]
    base = P.Parallelism(tp=1, pp=1, dp=64, micro_batch=2, global_batch=256, precision="fp8", zero=3, grad_fp32=False)
    full = memory(m, base)
    offloaded = memory(m, replace(base, offload_layers=40))
    assert offloaded.activations < 0.6 * full.activations and offloaded.weights == full.weights
    bf16_params = memory(m, replace(base, fp8_param_gather=False))
    assert bf16_params.weights > full.weights
    mem = [memory(m, replace(base, zero=z)).total for z in range(4)]
    assert mem[0] > mem[1] > mem[2] > mem[3]


def test_experts_shard_over_ep_and_their_optimizer_over_expert_dp():
    m = MODELS["deepseek-v3"]
    par = P.resolve(P.Parallelism(tp=1, pp=16, ep=8, global_batch=4096, precision="mxfp8"), 256, m.seq)
    wide = P.resolve(P.Parallelism(tp=1, pp=16, ep=16, global_batch=4096, precision="mxfp8"), 256, m.seq)
    assert memory(m, wide).weights < memory(m, par).weights
    assert memory(m, par).total < 180e9  # the DeepSeek-V3 B200 layout that ran fits a 180 GB B200
