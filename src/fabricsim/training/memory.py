"""HBM per GPU as Megatron counts it (megatron/training/theoretical_memory_usage.py), extended to what that file
leaves out: gated MLPs, GQA / MLA widths, routed experts, low-precision saved inputs and the recompute variants.

- Weights, gradients, optimizer: the most loaded shard (the first pipeline stage, which holds the input embedding),
  tensor-parallel parts / tp, routed experts / (ep x etp). BF16 weights (2 bytes, plus the quantized copy Transformer
  Engine caches for a low-precision run), gradients in FP32 (4 bytes; Megatron-LM accumulates BF16 runs' gradients in
  FP32) or BF16 (2, Megatron-Bridge's performance recipes: `grad_reduce_in_fp32 = False`), Adam in FP32 (12 bytes:
  master weights, two moments). The distributed optimizer (ZeRO-1) shards the 12 bytes over the data-parallel ranks
  (dp x cp; experts over their expert-data-parallel ranks), ZeRO-2 also the gradients, ZeRO-3 / FSDP the weights.
- Activations per layer and micro-batch (Korthikanti et al. 2022, arXiv:2205.05198, Table 2, in bytes of s*b*h,
  divided by tp under sequence parallelism): norms 4; attention 2 (QKV input) + 2(q + 2 kv)/h (Q, K, V) + 2 q/h (the
  output, the out projection's input) + 1 dropout mask; MLP 2 (fc1 input) + 2 m f/h (fc1 output, m = 2 when gated)
  + 2 f/h (activation output) + 1 mask; routed experts the same per routed row (top_k rows a token) plus the permuted
  input. Flash attention keeps no s x s scores (what selective recompute removes). Low-precision runs keep each
  GEMM's input as its quantized copy. `recompute_modules` drop what they recompute; full recompute keeps each
  layer's input (2). Megatron's own dense formula, 18 + 4 f/h, is this for a non-gated MLP with MHA and dropout;
  models without dropout keep no masks. CPU offloading (`offload_layers`, Megatron `cpu_offloading_num_layers`)
  keeps that many layers' activations in host memory instead.
- Low-precision weights: with FP8 parameters (`fp8_param_gather`) only the quantized weights are kept, else BF16
  weights plus the quantized copy Transformer Engine caches for the step.
- In flight: the first stage holds min(pp, micro-batches) micro-batches of its layers under 1F1B, x (1 + (pp - 1) /
  (pp vp)) when interleaved (Megatron's penalty); plus the embedding's input and dropout (8 s b pp + s b h pp bytes)
  and, without pipelining, the output layer's logits and their gradient (4 s b h (1 + V/h)).
Framework workspace (cuBLAS, NCCL buffers, the allocator's fragmentation) is not counted, as in Megatron.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.training.compute import stage_plan
from fabricsim.training.models import ModelSpec
from fabricsim.training.precision import precision

GB = 1e9


@dataclass(frozen=True)
class Memory:
    """Bytes of HBM on the most loaded GPU, by what holds them."""

    weights: float
    gradients: float
    optimizer: float
    activations: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations

    def as_dict(self) -> dict:
        return {"weights_GB": self.weights / GB, "gradients_GB": self.gradients / GB, "optimizer_GB": self.optimizer / GB,
                "activations_GB": self.activations / GB, "total_GB": self.total / GB}

    def text(self) -> str:
        return (f"{self.total / GB:.1f} GB = weights {self.weights / GB:.1f} + gradients {self.gradients / GB:.1f} + "
                f"optimizer {self.optimizer / GB:.1f} + activations {self.activations / GB:.1f}")


def shard_params(model: ModelSpec, par) -> tuple[float, float]:
    """(non-expert, routed-expert) parameters on the first pipeline stage's GPU."""
    plan = stage_plan(model, par.pp, par.vp)
    dense_layers, moe_layers = plan.dense[0], plan.moe[0]
    attn = model.attention_params
    mult = 3 if model.gated else 2
    dense_mlp = mult * model.hidden * model.ffn
    shared = mult * model.hidden * model.moe_ffn * model.shared_experts
    expert_layer = model.experts * mult * model.hidden * model.moe_ffn
    tp_sharded = dense_layers * (attn + dense_mlp) + moe_layers * (attn + shared)
    embedding = model.vocab * model.hidden * (1 if par.pp > 1 or model.tied_embeddings else 2)
    non_expert = (tp_sharded + embedding) / par.tp + moe_layers * model.hidden * model.experts  # + replicated router
    expert = moe_layers * expert_layer / (par.ep * par.etp) if model.is_moe else 0.0
    return non_expert, expert


def activation_units(model: ModelSpec, par) -> tuple[float, float]:
    """(dense-layer, MoE-layer) activation bytes per token (in units of h bytes: multiply by s*b*h) on one GPU before
    the tensor-parallel division."""
    h = model.hidden
    p = precision(par.precision)
    low = p.name != "bf16"
    q = p.element_bytes if low else 2.0  # bytes per saved GEMM-input element
    mods = set() if par.recompute in ("none", "selective", "full") else set(par.recompute.split(","))
    mult = 2 if model.gated else 1
    hd = model.head_dim or h // model.heads
    if model.kv_lora_rank:
        qkv = 2 * (model.heads * (hd + model.rope_dim) + model.heads * (hd + model.v_head_dim)) / h
        if "mla_up_proj" in mods:
            qkv = 2 * (model.q_lora_rank + model.kv_lora_rank + model.rope_dim) / h
    else:
        qkv = 2 * (model.heads + 2 * model.kv_heads) * hd / h
    mask = 1 if model.dropout else 0  # a dropout mask byte per element (none without dropout)
    attn = q + qkv + q * model.q_dim / h + mask
    norms = 0 if "layernorm" in mods else 4
    f = model.ffn / h
    dense_mlp = q + 2 * mult * f + q * f + mask
    if "mlp" in mods:
        dense_mlp = 0
    fe = model.moe_ffn / h
    routed = model.top_k * (q + 2 * mult * fe + (0 if "moe_act" in mods else q * fe)) * max(1.0, par.capacity_factor)
    shared = model.shared_experts * (q + 2 * mult * fe + q * fe) if model.shared_experts else 0.0
    moe_mlp = 0 if "moe" in mods else routed + shared + mask
    if par.recompute == "full":
        return 2.0, 2.0
    return norms + attn + dense_mlp, norms + attn + moe_mlp


def _resident(dense: int, moe: int, offloaded: int) -> tuple[int, int]:
    """(dense, MoE) layers whose activations stay in HBM when `offloaded` of them (MoE first) go to host memory."""
    off_moe = min(moe, offloaded)
    return max(0, dense - (offloaded - off_moe)), moe - off_moe


def offloaded_bytes(model: ModelSpec, par) -> float:
    """Activation bytes per micro-batch that CPU offloading moves to host memory (and back in the backward)."""
    if not par.offload_layers:
        return 0.0
    plan = stage_plan(model, par.pp, par.vp)
    dense_units, moe_units = activation_units(model, par)
    dense_res, moe_res = _resident(plan.dense[0], plan.moe[0], par.offload_layers)
    sbh = model.seq / par.cp * par.micro_batch * model.hidden
    tp_div = par.tp if par.sp or par.tp == 1 else 1.0
    return sbh * ((plan.dense[0] - dense_res) * dense_units + (plan.moe[0] - moe_res) * moe_units) / tp_div


def memory(model: ModelSpec, par) -> Memory:
    """HBM on the first pipeline stage's GPU (see the module docstring)."""
    p = precision(par.precision)
    non_expert, expert = shard_params(model, par)
    dp = par.dp * par.cp
    edp = max(1, par.tp * par.cp * par.dp // (par.ep * par.etp))
    quantized = p.element_bytes * (2 if p.transposed_copy else 1)
    fp8_params = par.fp8_param_gather if par.fp8_param_gather is not None else p.param_gather_bytes < 2
    # FP8 parameters (fp8_param_gather) are kept quantized only; else BF16 plus the quantized copy TE caches
    weight_bytes = quantized if p.name != "bf16" and fp8_params else 2.0 + (quantized if p.name != "bf16" else 0.0)
    grad_bytes = 4.0 if par.grad_fp32 else 2.0

    def state(per_param: float, zero_stage: int) -> float:
        """Bytes of one kind of state, sharded over the data-parallel ranks from ZeRO stage `zero_stage` on."""
        if par.zero < zero_stage:
            return (non_expert + expert) * per_param
        return non_expert * per_param / dp + expert * per_param / edp

    weights, grads, optim = state(weight_bytes, 3), state(grad_bytes, 2), state(12.0, 1)

    plan = stage_plan(model, par.pp, par.vp)
    dense_units, moe_units = activation_units(model, par)
    sbh = model.seq / par.cp * par.micro_batch * model.hidden
    tp_div = par.tp if par.sp or par.tp == 1 else 1.0
    dense_layers, moe_layers = _resident(plan.dense[0], plan.moe[0], par.offload_layers)
    layer_bytes = sbh * (dense_layers * dense_units + moe_layers * moe_units) / tp_div
    if not par.sp and par.tp > 1 and par.recompute != "full":  # without SP only the TP-split widths shrink
        # (Korthikanti: 10 + 24/t); full recompute keeps each layer's whole input (2 sbh, Korthikanti et al. 2022 sec. 5)
        layer_bytes = sbh * (dense_layers * (10 + (dense_units - 10) / par.tp) + moe_layers * (10 + (moe_units - 10) / par.tp))
    m = par.micro_batches
    in_flight = min(par.pp, m) if par.vp == 1 else par.pp
    interleave = 1 + (par.pp - 1) / (par.pp * par.vp) if par.vp > 1 else 1.0
    acts = layer_bytes * in_flight * interleave
    sb = model.seq / par.cp * par.micro_batch
    acts += (8 * sb * par.pp + sb * model.hidden * par.pp) / tp_div
    if par.pp == 1:
        acts += 4 * sb * model.hidden * (1 + model.vocab / model.hidden) / par.tp
    return Memory(weights, grads, optim, acts)
