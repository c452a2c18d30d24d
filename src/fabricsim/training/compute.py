"""Compute time of one micro-batch on one GPU: every GEMM, attention kernel and memory-bound kernel of the layers a
pipeline rank holds, at the kernel efficiencies of `training.efficiency`, divided by the framework factor.

Per layer and micro-batch (T = micro_batch x seq / cp tokens; GEMMs see all T rows, their widths split by TP;
with sequence parallelism the norms, residuals and dropouts see T / tp rows):
- Linear GEMMs at the run's precision: QKV (or MLA's down/up projections, the down ones duplicated over TP as in
  Megatron-Core's MLA), the out projection, the MLP's fc1 / fc2, shared experts. Backward runs dgrad (inner
  dimension N) and wgrad (inner dimension = the rows), so each pass has its own GEMM efficiency.
- Routed experts: balanced routing (Megatron's force-balanced benchmark setting, or dropless with auxiliary loss)
  gives each GPU T x top_k / tp routed rows per micro-batch, spread over its experts / ep local experts (each split
  over etp GPUs); every expert's rows are padded to the kernel's M block, so efficiency falls as rows per expert
  shrink; with a capacity factor each expert computes capacity rows (dropped or padded tokens still cost).
- Router (FP32 logits in BF16 GEMM), output layer and loss (last stage), embedding: BF16.
- Core attention: causal (keys = seq / 2 on average, CP's load-balanced chunks keep that) or a sliding window
  (whole key tiles); MLA's 192-wide keys and 128-wide values; Flash-Attention's backward recomputes the scores,
  2.5x the forward FLOPs.
- Memory-bound bytes: norms, residual adds, RoPE, the activation, MoE permute / unpermute, quantization casts of
  every low-precision GEMM input (and of every output gradient in the backward), the fused cross-entropy over the
  vocabulary shard; the backward streams twice the forward's elementwise bytes. Where Megatron-Core (core_v0.16)
  leaves a kernel unfused, its passes are counted as it runs them: RoPE with a YaRN mscale other than 1 (TE's fused
  RoPE does not take one: `rope_utils.apply_rotary_pos_emb` falls back to `_apply_rotary_pos_emb_bshd`), the
  all-to-all dispatcher's second permutation that sorts received tokens by local expert (`sort_chunks_by_idxs`,
  when a GPU holds more than one expert), the clamp of a clamped GLU's inputs (`weighted_bias_quick_geglu_impl`:
  two clamps and a concatenation before the fused activation) and the routed experts' fc2 bias, which
  `TEGroupedMLP` adds outside the grouped GEMM (skip_bias_add, then `_apply_bias`: bias x prob, add, concatenate).
Recompute adds the forward of what it recomputes to the backward: 'selective' the core attention (Megatron's
default module), 'full' the whole layer, or any of Megatron-Core's `recompute_modules`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

from fabricsim.training import efficiency as E
from fabricsim.training.models import ModelSpec
from fabricsim.training.precision import gemm_peak, precision

ACT = 2.0  # bytes per BF16 activation element
# Unfused Megatron-Core kernels: (forward, backward) bytes per element of the tensor they act on, as their PyTorch
# op chains run them in BF16 (2 bytes a read or a write; a view costs nothing, a product's backward reads the
# saved operand). They take their own backward instead of the fused kernels' "twice the forward".
# RoPE `_apply_rotary_pos_emb_bshd` on q and k: rotate_half (negate a half: 0.5 + 0.5 passes, concatenate: 1 + 1),
# t * cos (1 + 1), rotated * sin (1 + 1), their sum (2 + 1), concatenation with the unrotated part (1 + 1): 12 passes;
# backward: the two products (2 + 2), the negation (0.5 + 0.5), concatenating the halves' gradients (1 + 1), the sum
# of the two paths (2 + 1): 10. The fused RoPE kernel reads and writes once (4 bytes).
ROPE_UNFUSED_BYTES, ROPE_FUSED_BYTES = (24.0, 20.0), 4.0
# Clamped GLU (`weighted_bias_quick_geglu_impl`), per element of the fc1 output: each half clamped (1 + 1) and the
# halves concatenated (1 + 1); backward: clamp's masked gradient (grad and input read, 2 + 1), the chunk's gradient
# concatenated (1 + 1).
CLAMP_BYTES = (8.0, 10.0)
# Routed experts' fc2 bias (`TEGroupedMLP._apply_bias`, split per expert), per element of the fc2 output: bias x prob
# (write 1), added to the output (2 + 1), experts concatenated (1 + 1); backward: the bias and prob gradients, each a
# product (2 + 2) and a reduction (2): 12 + 12 bytes with BF16 probs. HybridEP hands the experts FP32 probs
# ("HybridEP only supports float32 probs": `_HybridEPManager.dispatch` upcasts them), so the chain runs in FP32 and is
# cast back: 4 (product) + 2 + 4 + 4 (add) + 4 + 4 (concatenate) + 4 + 2 (cast) = 28 bytes; backward: the casts'
# gradients (2 + 4, 4 + 2), the two products (4 + 4 each) and reductions (4 each) = 36.
EXPERT_BIAS_BYTES = {"bf16": (12.0, 12.0), "fp32": (28.0, 36.0)}
# A token permutation (fused permute / unpermute / `sort_chunks_by_idxs`) reads and writes each routed row once, and
# its backward is the inverse permutation.
PERMUTE_BYTES = (4.0, 4.0)
RECOMPUTE_MODULES = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")


@dataclass(frozen=True)
class Shape:
    """What the compute of a layer depends on (a hashable summary of model, layout and GPU)."""

    tokens: float  # T rows per micro-batch on this GPU's sequence shard
    tp: int
    ep: int
    etp: int
    sp: bool
    precision: str
    recompute: str  # 'none' | 'selective' | 'full' | comma-separated recompute_modules
    capacity_factor: float  # 0: dropless
    imbalance: float = 1.0  # routed rows on the busiest EP rank over the mean
    dispatcher: str = "alltoall"  # MoE token dispatcher (what permutations run beside the all-to-all)


@dataclass
class PassTimes:
    """Seconds of one layer's (or one stage's) forward and backward on one GPU, by kind of kernel."""

    gemm_fwd: float = 0.0  # dense (non-expert) GEMMs
    gemm_bwd: float = 0.0
    expert_fwd: float = 0.0  # routed-expert grouped GEMMs
    expert_bwd: float = 0.0
    attn_fwd: float = 0.0
    attn_bwd: float = 0.0
    mem_fwd: float = 0.0
    mem_bwd: float = 0.0
    recompute: float = 0.0  # forward work repeated in the backward

    @property
    def fwd(self) -> float:
        return self.gemm_fwd + self.expert_fwd + self.attn_fwd + self.mem_fwd

    @property
    def bwd(self) -> float:
        return self.gemm_bwd + self.expert_bwd + self.attn_bwd + self.mem_bwd + self.recompute

    @property
    def total(self) -> float:
        return self.fwd + self.bwd

    def scaled(self, k: float) -> PassTimes:
        return PassTimes(*(getattr(self, f) * k for f in _FIELDS))

    def __add__(self, other: PassTimes) -> PassTimes:
        return PassTimes(*(getattr(self, f) + getattr(other, f) for f in _FIELDS))


_FIELDS = ("gemm_fwd", "gemm_bwd", "expert_fwd", "expert_bwd", "attn_fwd", "attn_bwd", "mem_fwd", "mem_bwd", "recompute")


@dataclass(frozen=True)
class Rates:
    low: float  # FLOP/s peak of low-precision GEMMs
    bf16: float
    frac_low: float  # GEMM_PEAK_FRACTION of the low-precision rate
    frac_bf16: float
    attn_fwd: float  # FLOP/s of flash attention at head dim 128
    attn_bwd: float
    hbm: float  # bytes/s for memory-bound kernels
    exp_flops: float = 256.0  # tensor FLOPs per softmax exponential's SFU time


def rates(gpu, prec: str) -> Rates:
    fam = E.family(gpu)
    p = precision(prec)
    fwd, bwd = E.attention_efficiency(fam)
    return Rates(low=gemm_peak(gpu, prec), bf16=gpu.bf16_flops, frac_low=E.gemm_peak_fraction(fam, p.rate),
                 frac_bf16=E.gemm_peak_fraction(fam, "bf16_flops"), attn_fwd=gpu.bf16_flops * fwd,
                 attn_bwd=gpu.bf16_flops * bwd, hbm=gpu.hbm_bw * E.HBM_EFFICIENCY[0],
                 exp_flops=E.TENSOR_FLOPS_PER_EXP.get(fam, 256))


def _gemm_parts(r: Rates, low: bool, m: float, n: float, k: float, groups: int = 1,
                padded_m: float | None = None) -> tuple[float, float, float]:
    """(fprop, dgrad, wgrad) seconds of `groups` GEMMs of m x n x k (dgrad's inner dimension is n, wgrad's m);
    `padded_m` is the rows the kernel really computes (grouped GEMMs align each group's rows)."""
    if m <= 0 or n <= 0 or k <= 0:
        return 0.0, 0.0, 0.0
    peak, frac = (r.low, r.frac_low) if low else (r.bf16, r.frac_bf16)
    rows = padded_m or m
    flops = 2.0 * rows * n * k * groups

    def t(inner: float) -> float:
        return flops / (peak * frac * inner / (inner + E.GEMM_K_HALF))

    return t(k), t(n), t(rows)


def _gemm(r: Rates, low: bool, m: float, n: float, k: float, groups: int = 1, padded_m: float | None = None) -> tuple[float, float]:
    """(forward, backward) seconds of `groups` GEMMs of m x n x k (see `_gemm_parts`)."""
    f, dgrad, wgrad = _gemm_parts(r, low, m, n, k, groups, padded_m)
    return f, dgrad + wgrad


def _sfu_bound(flops_per_exp: float, head_dim: float, flops_per_score_per_dim: float) -> float:
    """Slow-down of flash attention at `head_dim` against head dim 128 (where the published efficiencies were
    measured) when its exponentials outlast its matmuls (`efficiency.TENSOR_FLOPS_PER_EXP`)."""
    def bound(hd: float) -> float:
        return max(1.0, flops_per_exp / (flops_per_score_per_dim * hd))

    return bound(head_dim) / bound(128.0)


def _yarn_mscale(factor: float) -> float:
    """YaRN's attention scale for a RoPE scaling factor (Megatron-Core `_yarn_get_mscale` with mscale 1:
    0.1 ln(factor) + 1; 1 for plain RoPE)."""
    return 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0


def _recompute_set(spec: str) -> frozenset[str]:
    if spec in ("none", "full"):
        return frozenset()
    if spec == "selective":
        return frozenset({"core_attn"})
    return frozenset(spec.split(","))


TP_GEMMS = ("qkv", "proj", "fc1", "fc2")  # the Linear layers Transformer Engine's userbuffers pair with TP collectives


def layer_times(model: ModelSpec, shape: Shape, r: Rates, moe: bool) -> PassTimes:
    """Kernel-level seconds of one transformer layer (dense or MoE) for one micro-batch on one GPU (no framework
    factor)."""
    return _layer(model, shape, r, moe)[0]


def tp_gemms(model: ModelSpec, shape: Shape, r: Rates, moe: bool) -> dict[str, tuple[float, float, float]]:
    """(fprop, dgrad, wgrad) kernel-level seconds of the layer's tensor-parallel Linear layers, by `TP_GEMMS` name:
    the attention's input projections (MLA's down and up projections together), its output projection, and the
    dense MLP's or the shared experts' fc1 / fc2 (absent in an MoE layer without shared experts)."""
    return _layer(model, shape, r, moe)[1]


@lru_cache(maxsize=4096)
def _layer(model: ModelSpec, shape: Shape, r: Rates, moe: bool) -> tuple[PassTimes, dict[str, tuple[float, float, float]]]:
    T, tp, h = shape.tokens, shape.tp, model.hidden
    p = precision(shape.precision)
    low = shape.precision != "bf16"
    rows_sp = T / tp if shape.sp else T
    hd = model.head_dim or h // model.heads
    heads = model.heads / tp
    out = PassTimes()
    modules = _recompute_set(shape.recompute)
    quant_w = p.element_bytes * (2 if p.transposed_copy else 1)  # bytes written per quantized element
    quant_rw = ACT * (1 + p.extra_passes) + quant_w  # read BF16 (and extra passes) + write the quantized copies

    named: dict[str, tuple[float, float, float]] = {}

    def gemm(name: str, m, n, k, lp=True, groups=1, padded=None, role=""):
        f, dgrad, wgrad = _gemm_parts(r, lp and low, m, n, k, groups, padded)
        if name == "expert":
            out.expert_fwd += f
            out.expert_bwd += dgrad + wgrad
        else:
            out.gemm_fwd += f
            out.gemm_bwd += dgrad + wgrad
        if role:
            named[role] = tuple(a + b for a, b in zip(named.get(role, (0.0, 0.0, 0.0)), (f, dgrad, wgrad)))
        return f

    mem_fwd = 0.0  # bytes
    mem_grad_quant = 0.0
    unfused = [0.0, 0.0]  # (forward, backward) bytes of kernels with their own backward (see the *_BYTES tables)

    def chain(table: tuple[float, float], elements: float) -> float:
        """Add an unfused chain over `elements`; its forward bytes."""
        unfused[0] += table[0] * elements
        unfused[1] += table[1] * elements
        return table[0] * elements
    # attention projections
    if model.kv_lora_rank:
        qk = hd + model.rope_dim
        v = model.v_head_dim
        up = 0.0
        if model.q_lora_rank:
            gemm("dense", T, model.q_lora_rank, h, role="qkv")
            up += gemm("dense", T, heads * qk, model.q_lora_rank, role="qkv")
        else:
            gemm("dense", T, heads * qk, h, role="qkv")
        gemm("dense", T, model.kv_lora_rank + model.rope_dim, h, role="qkv")
        up += gemm("dense", T, heads * (hd + v), model.kv_lora_rank, role="qkv")
        if "mla_up_proj" in modules:
            out.recompute += up
        rope = T * (heads + 1) * model.rope_dim
        q_out, kv_out = heads * qk + (model.q_lora_rank or 0), model.kv_lora_rank + model.rope_dim + heads * (hd + v)
    else:
        qk = v = hd
        kv_heads = max(1.0, model.kv_heads / tp)
        gemm("dense", T, (heads + 2 * kv_heads) * hd, h, role="qkv")
        rope = T * (heads + kv_heads) * hd
        q_out, kv_out = (heads + 2 * kv_heads) * hd, 0.0
    gemm("dense", T, h, heads * v, role="proj")
    if _yarn_mscale(model.rope_yarn_factor) != 1.0:  # TE's fused RoPE takes no mscale: Megatron's op chain runs
        chain(ROPE_UNFUSED_BYTES, rope)
    else:
        mem_fwd += ROPE_FUSED_BYTES * rope  # RoPE reads and writes q and k
    mem_fwd += quant_rw * T * heads * v * low  # the out projection's input is cast
    mem_grad_quant += quant_rw * T * (q_out + kv_out + h) * low

    # core attention
    windowed = model.windowed_layers / model.layers if model.window else 0.0
    full_keys = model.seq / 2
    tile = E.ATTENTION_TILE
    window_keys = min(full_keys, (math.ceil(model.window / tile) + 1) * tile) if model.window else full_keys
    keys = (1 - windowed) * full_keys + windowed * window_keys
    attn = 2.0 * T * heads * (qk + v) * keys
    small = E.ATTENTION_HEAD_DIM_64[0]
    hd_eff = min(1.0, max(small, small + ((qk + v) / 2 - 64) / 64 * (1 - small)))
    out.attn_fwd = attn / (r.attn_fwd * hd_eff) * _sfu_bound(r.exp_flops, (qk + v) / 2, 4)
    out.attn_bwd = 2.5 * attn / (r.attn_bwd * hd_eff) * _sfu_bound(r.exp_flops, (qk + v) / 2, 10)
    if "core_attn" in modules:
        out.recompute += out.attn_fwd

    # MLP: dense, or router + shared + routed experts
    mult = 2 if model.gated else 1
    act_bytes = (3 if model.gated else 2) * ACT  # read mult x f, write f
    norms = 8 * h * rows_sp  # two norms: read and write h each
    mem_fwd += norms + 12 * h * rows_sp  # + two fused bias-dropout-residual adds (read 2h, write h)
    if "layernorm" in modules:
        out.recompute += norms / r.hbm
    if not moe:
        f = model.ffn / tp
        t1 = gemm("dense", T, mult * f, h, role="fc1")
        t2 = gemm("dense", T, h, f, role="fc2")
        act = act_bytes * T * f
        mem_fwd += act + quant_rw * T * f * low
        mem_grad_quant += quant_rw * T * (mult * f + h) * low
        if "mlp" in modules:
            out.recompute += t1 + t2 + act / r.hbm
    else:
        gemm("dense", T, model.experts, h, lp=False)  # router
        mlp_fwd = 0.0
        if model.shared_experts:
            f = model.shared_experts * model.moe_ffn / tp
            ts = gemm("dense", T, mult * f, h, role="fc1") + gemm("dense", T, h, f, role="fc2")
            mem_fwd += act_bytes * T * f + quant_rw * T * f * low
            mem_grad_quant += quant_rw * T * (mult * f + h) * low
            mlp_fwd += ts
            if "shared_experts" in modules:
                out.recompute += ts
        routed = T * model.top_k / tp  # rows this GPU's experts compute per micro-batch (balanced)
        local = model.experts / shape.ep
        per_expert = routed * shape.etp / local
        if shape.capacity_factor > 0:
            per_expert = per_expert * shape.capacity_factor
        per_expert *= shape.imbalance
        padded = math.ceil(per_expert / E.GEMM_M_BLOCK) * E.GEMM_M_BLOCK
        fe = model.moe_ffn / shape.etp
        te = gemm("expert", per_expert, mult * fe, h, groups=int(local), padded=padded)
        te += gemm("expert", per_expert, h, fe, groups=int(local), padded=padded)
        rows = per_expert * local
        act = act_bytes * rows * fe
        # clamped GLU inputs, before the fused activation
        clamp = chain(CLAMP_BYTES, rows * mult * fe) if model.activation_clamp and model.gated else 0.0
        # Token permutations, each a permute before the expert GEMMs and an unpermute after: the all-to-all and
        # DeepEP dispatchers permute locally (`permute` / `unpermute`), the all-to-all one also sorts the received
        # rows by local expert and back when this GPU holds several experts (`sort_chunks_by_idxs`); HybridEP's
        # dispatch and combine kernels deliver and take rows in expert order (`_HybridEPManager`: no permute).
        sorts = {"hybridep": 0}.get(shape.dispatcher, 1) + (shape.dispatcher == "alltoall" and local > 1)
        perm = chain(PERMUTE_BYTES, 2 * sorts * rows * h / shape.etp)
        if model.linear_bias:  # fc2 bias added outside the grouped GEMM
            perm += chain(EXPERT_BIAS_BYTES["fp32" if shape.dispatcher == "hybridep" else "bf16"], rows * h)
        mem_fwd += act + quant_rw * rows * (h / shape.etp + fe) * low
        mem_grad_quant += quant_rw * rows * (mult * fe + h) * low
        mlp_fwd += te + (act + clamp + perm) / r.hbm
        if "moe_act" in modules:  # the activation (and its clamp) run again in the backward
            out.recompute += (act + clamp) / r.hbm
        if "moe" in modules:
            out.recompute += mlp_fwd
    out.mem_fwd = (mem_fwd + unfused[0]) / r.hbm
    out.mem_bwd = (2 * mem_fwd + mem_grad_quant + unfused[1]) / r.hbm
    if shape.recompute == "full":
        out.recompute += out.fwd
    return out, named


def head_times(model: ModelSpec, shape: Shape, r: Rates) -> PassTimes:
    """The last stage's output layer, fused cross-entropy and multi-token-prediction modules (BF16 logits)."""
    T, h = shape.tokens, model.hidden
    v = model.vocab / shape.tp
    heads = 1 + model.mtp_layers
    f, b = _gemm(r, False, T, v, h)
    out = PassTimes(gemm_fwd=f * heads, gemm_bwd=b * heads)
    out.mem_fwd = heads * 4 * T * v / r.hbm  # write BF16 logits, the fused loss reads them
    out.mem_bwd = heads * 4 * T * v / r.hbm  # the loss writes its gradient in place, dgrad reads it
    if model.mtp_layers:  # each MTP module: 2h -> h projection and one more transformer layer
        pf, pb = _gemm(r, shape.precision != "bf16", T, h / shape.tp, 2 * h)
        extra = layer_times(model, shape, r, model.is_moe).scaled(model.mtp_layers)
        out = out + extra + PassTimes(gemm_fwd=pf * model.mtp_layers, gemm_bwd=pb * model.mtp_layers)
    return out


@dataclass(frozen=True)
class StagePlan:
    """Layers each pipeline rank runs per micro-batch (summed over its virtual stages)."""

    dense: tuple[int, ...]
    moe: tuple[int, ...]
    last: int  # the rank holding the output layer and loss (pp - 1)


def layer_weights(model: ModelSpec) -> tuple[float, float, float]:
    """(dense layer, MoE layer, output head) forward FLOPs per token: what a balanced pipeline split weighs."""
    h, mult = model.hidden, (3 if model.gated else 2)
    attn = 2.0 * model.attention_params + 4.0 * model.heads * (model.head_dim or h // model.heads) * model.seq / 2
    dense = attn + 2.0 * mult * h * model.ffn
    moe = attn + 2.0 * mult * h * model.moe_ffn * (model.top_k + model.shared_experts) if model.is_moe else dense
    head = 2.0 * h * model.vocab * (1 + model.mtp_layers) + model.mtp_layers * (moe if model.is_moe else dense)
    return dense, moe, head


def stage_plan(model: ModelSpec, pp: int, vp: int) -> StagePlan:
    """Layers per pipeline rank (virtual stage v on rank v % pp) as Megatron splits them over pp x vp virtual stages:
    evenly when the layers divide; when only layers + 2 divide, the embedding and the loss take one layer's place
    each (Megatron-Core `account_for_embedding_in_pipeline_split` / `account_for_loss_in_pipeline_split`: Llama 3
    405B's 126 layers on pp x vp = 128); otherwise as the recipes' explicit layouts do, contiguous layers with the
    output layer, loss and MTP modules weighing on the last virtual stage (`layer_weights`) so the heaviest virtual
    stage is as light as it can be (Megatron-Bridge's DeepSeek-V3 layouts: four layers a stage and one beside the
    MTP module and loss on the last)."""
    return _stage_plan(model, pp, vp)


@lru_cache(maxsize=256)
def _stage_plan(model: ModelSpec, pp: int, vp: int) -> StagePlan:
    n_virtual, layers = pp * vp, model.layers
    if layers % n_virtual == 0 or n_virtual == 1:
        counts = [layers // n_virtual] * n_virtual
    elif (layers + 2) % n_virtual == 0 and n_virtual > 2:
        counts = [(layers + 2) // n_virtual] * n_virtual
        counts[0] -= 1
        counts[-1] -= 1
    else:
        counts = _balanced(model, n_virtual)
    dense, moe = [0] * pp, [0] * pp
    start = 0
    for v, c in enumerate(counts):
        n_dense = max(0, min(c, model.n_dense_layers - start))
        dense[v % pp] += n_dense
        moe[v % pp] += c - n_dense
        start += c
    return StagePlan(tuple(dense), tuple(moe), pp - 1)


def _balanced(model: ModelSpec, n_virtual: int) -> list[int]:
    """Layer counts of the contiguous split whose heaviest virtual stage (the last carrying the head) is lightest."""
    dense_w, moe_w, head_w = layer_weights(model)
    w = [dense_w if i < model.n_dense_layers else moe_w for i in range(model.layers)]

    def split(cap: float) -> list[int] | None:
        counts, i = [], 0
        for v in range(n_virtual):
            # leave the last stage what fits beside the head: fill earlier stages first
            load, c = (head_w if v == n_virtual - 1 else 0.0), 0
            while i < len(w) and load + w[i] <= cap:
                load, i, c = load + w[i], i + 1, c + 1
            counts.append(c)
        return counts if i == len(w) else None

    lo, hi = max(max(w), head_w), sum(w) + head_w
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if split(mid) else (mid, hi)
    return split(hi)


@dataclass(frozen=True)
class StageCompute:
    """Compute of the busiest pipeline rank for one micro-batch (framework factor applied)."""

    times: PassTimes
    per_rank: tuple[float, ...]  # seconds per micro-batch of every pipeline rank
    busiest: int
    moe_layers: int  # MoE layers on the busiest rank (what EP all-to-alls it runs)
    layers: int
    factor: float  # framework factor used
    factor_source: str = field(default="")


def stage_compute(model: ModelSpec, shape: Shape, gpu, pp: int, vp: int, factor: float | None = None) -> StageCompute:
    """Per micro-batch compute of every pipeline rank; the busiest sets the pipeline's pace."""
    r = rates(gpu, shape.precision)
    fw, source = (factor, "given") if factor is not None else framework_factor(gpu, shape.precision)
    plan = stage_plan(model, pp, vp)
    dense_t = layer_times(model, shape, r, False) if any(plan.dense) else PassTimes()
    moe_t = layer_times(model, shape, r, True) if any(plan.moe) else PassTimes()
    head = head_times(model, shape, r)
    ranks = []
    for rank in range(pp):
        t = dense_t.scaled(plan.dense[rank]) + moe_t.scaled(plan.moe[rank])
        if rank == plan.last:
            t = t + head
        ranks.append(t.scaled(1 / fw))
    busiest = max(range(pp), key=lambda i: ranks[i].total)
    return StageCompute(ranks[busiest], tuple(t.total for t in ranks), busiest, plan.moe[busiest],
                        plan.dense[busiest] + plan.moe[busiest], fw, source)


def optimizer_time(params_local: float, shard: int, gpu) -> float:
    """Seconds of the Adam step once per optimizer step: each rank updates its 1/shard of the parameters it holds
    (FP32 master weights, moments and gradient: ~28 bytes read and written per parameter) and refreshes its BF16
    copy of the rest."""
    return (28.0 * params_local / shard + 4.0 * params_local) / (gpu.hbm_bw * E.HBM_EFFICIENCY[0])


_FACTORS: dict[tuple[str, str], tuple[float, str]] = {}


def framework_factor(gpu, prec: str) -> tuple[float, str]:
    """(framework factor, source) for a GPU and precision: the anchor run's published compute rate over the rate the
    kernel model predicts for that run (`efficiency.ANCHORS`)."""
    fam = E.family(gpu)
    cls = "bf16" if prec == "bf16" else "low"
    key = (E.ANCHOR_FAMILY.get(fam, fam), cls)
    if key not in _FACTORS:
        anchor = next((a for a in E.ANCHORS if (a.family, a.precision_class) == key), None)
        if anchor is None:  # e.g. Ampere has no low-precision run (and no FP8 tensor cores)
            anchor = next(a for a in E.ANCHORS if (a.family, a.precision_class) == (key[0], "bf16"))
        _FACTORS[key] = (_anchor_factor(anchor), anchor.source)
    value, source = _FACTORS[key]
    borrowed = "" if fam == key[0] else f"{fam}: {key[0]}'s, "
    return value, f"{borrowed}{source}"


def _anchor_factor(a: E.Anchor) -> float:
    from dataclasses import replace

    from fabricsim.hardware import get_gpu
    from fabricsim.training.models import MODELS

    model = replace(MODELS[a.model], seq=a.seq)
    gpu = get_gpu(a.gpu)
    shape = Shape(tokens=a.micro_batch * a.seq, tp=1, ep=1, etp=1, sp=False, precision=a.precision, recompute="none",
                  capacity_factor=0.0)
    micro_batches = a.global_batch // (a.micro_batch * a.gpus)
    kernel = micro_batches * stage_compute(model, shape, gpu, 1, 1, factor=1.0).times.total
    kernel += optimizer_time(model.params, a.gpus, gpu)
    measured = a.global_batch * a.seq / a.gpus / a.measured_tokens_per_s_per_gpu
    return min(1.0, kernel / measured)
