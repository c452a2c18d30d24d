"""One training step: compute plus every communication, composed on the critical path.

Time per step = compute + exposed TP + exposed CP + exposed EP + exposed PP + pipeline bubble + exposed DP.

- Compute: hardware FLOPs / (GPUs x dense peak at the run precision x efficiency). Hardware FLOPs are
  model FLOPs ('megatron' convention) plus recompute: selective re-runs the attention core forward
  (1/3 of the attention term), full re-runs the whole forward (+1/3).
- TP (Megatron-LM, Shoeybi et al. 2019; Korthikanti et al. 2022): per layer and micro-batch 2 all-reduces
  forward + 2 backward of b*s*h activations; with sequence parallelism each becomes an all-gather plus a
  reduce-scatter of the same tensor. Exposed unless `tp_overlap` (TE userbuffers), where it hides behind
  the linear-layer GEMMs: exposed = max(0, comm - GEMM time).
- CP (Megatron-Core ring attention): per layer, forward all-gathers K,V over the CP group, backward
  all-gathers K,V and reduce-scatters dK,dV; it overlaps the attention core: exposed = max(0, comm - attention time).
- EP: per MoE layer dispatch + combine all-to-all forward and the same two backward (tokens*top_k*h bytes), exposed.
- PP: per micro-batch and virtual stage one activation send forward and one gradient send backward of
  b*s*h/(tp with SP) bytes; the 1F1B critical path crosses 2*(m*vp + pp - 1) of them, exposed.
- Bubble: (pp - 1)/(m*vp) of the per-micro-batch critical path (compute + exposed TP/CP/EP)
  (Narayanan et al. 2021, sec. 2.2: 1F1B (p-1)/m, interleaved (p-1)/(m*v)).
- DP (Megatron overlap-grad-reduce / overlap-param-gather): gradients are reduced once per step in buckets while
  the last micro-batch's backward runs; exposed = max(comm - that backward, last bucket). ZeRO-1/2 reduce-scatter
  gradients then all-gather bf16 weights (hidden behind the first forward the same way); ZeRO-0 all-reduces.
  ZeRO-3 (FSDP) all-gathers weights in every micro-batch's forward and backward and reduce-scatters gradients in
  every backward, each overlapping that pass, with the first layer's gather always exposed.
Concurrency: every call passes all groups of one type at once, so groups contend for the fabric as they do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from fabricsim.training import parallel as P
from fabricsim.training.efficiency import default_efficiency
from fabricsim.training.models import ModelSpec

# Megatron-Core DDP bucket: max(40M, 1M x dp) parameters (megatron/core/distributed/distributed_data_parallel.py).
BUCKET_PARAMS, BUCKET_PARAMS_PER_DP = 40_000_000, 1_000_000


class CommModel(Protocol):
    """Times one collective run by every group at once.

    collective: all_reduce | all_gather | reduce_scatter | alltoall | sendrecv.
    groups: int array (n_groups, group_size) of GPU ranks (sendrecv: (sender, receiver) pairs).
    nbytes: per-rank size in nccl-tests' convention (all_reduce: the buffer; all_gather: the gathered
    output; reduce_scatter: the input; alltoall: the whole send buffer; sendrecv: bytes sent).
    An implementation may set `last_detail` (anything) describing its latest call (e.g. bottleneck links).
    """

    def time(self, collective: str, groups: np.ndarray, nbytes: float) -> float: ...


@dataclass
class StepResult:
    model: str
    n_gpus: int
    layout: str
    parallelism: P.Parallelism
    step_time: float  # s
    tokens_per_s: float
    tflops_per_gpu: float  # model FLOP/s per GPU (megatron convention), in TFLOP/s
    mfu_bf16: float  # against the dense BF16 peak
    mfu: float  # against the dense peak of the run's precision
    efficiency: float
    efficiency_source: str  # where the compute efficiency comes from
    compute: float  # s per step
    bubble: float
    exposed: dict[str, float]  # group type -> exposed seconds per step
    comm_total: dict[str, float]  # group type -> seconds of communication per step (exposed or not)
    call_time: dict[str, float] = field(default_factory=dict)  # 'type:collective' -> seconds of one call
    detail: dict[str, Any] = field(default_factory=dict)  # 'type:collective' -> the comm model's last_detail

    @property
    def comm_fraction(self) -> float:
        """Share of the step spent in exposed communication."""
        return sum(self.exposed.values()) / self.step_time

    def as_dict(self) -> dict:
        return {
            "model": self.model, "gpus": self.n_gpus, "layout": self.layout, "step_time_s": self.step_time,
            "tokens_per_s": self.tokens_per_s, "tflops_per_gpu": self.tflops_per_gpu, "mfu_bf16": self.mfu_bf16,
            "mfu": self.mfu, "efficiency": self.efficiency, "compute_s": self.compute, "bubble_s": self.bubble,
            "exposed_s": dict(self.exposed), "comm_total_s": dict(self.comm_total), "comm_fraction": self.comm_fraction,
            "call_time_s": dict(self.call_time),
        }


class _Timer:
    """Calls the comm model once per distinct (type, collective, size) and records what it said."""

    def __init__(self, comm: CommModel):
        self.comm, self.calls, self.detail = comm, {}, {}

    def __call__(self, kind: str, collective: str, groups: np.ndarray, nbytes: float) -> float:
        if groups.shape[1] < 2 or nbytes <= 0:
            return 0.0
        t = float(self.comm.time(collective, groups, float(nbytes)))
        key = f"{kind}:{collective}"
        self.calls[key] = t
        if getattr(self.comm, "last_detail", None) is not None:
            self.detail[key] = self.comm.last_detail
        return t


def step_time(model: ModelSpec, par: P.Parallelism, gpu, comm: CommModel, efficiency: float | None = None) -> StepResult:
    """Time one optimizer step of `model` laid out as `par` (resolved and validated) on GPUs of type `gpu` (a hardware.GPU)."""
    n, m, b, s, h = par.n_gpus, par.micro_batches, par.micro_batch, model.seq, model.hidden
    peak = gpu.fp8_flops if par.precision == "fp8" else gpu.bf16_flops
    eff, eff_source = (efficiency, "set by the user") if efficiency is not None else default_efficiency(gpu.arch, par.precision)
    tokens = par.global_batch * s

    model_flops = model.flops_per_token(s) * tokens
    attn_flops = model.attention_flops_per_token(s) * tokens
    extra = {"none": 0.0, "selective": attn_flops / 3, "full": model_flops / 3}[par.recompute]
    layers = P.stage_layers(model, par)  # layers the busiest GPU runs per micro-batch (all its virtual stages)
    imbalance = layers * par.pp / model.layers  # > 1 when stages are uneven: the busiest stage sets the pace
    rate = n * peak * eff / imbalance
    compute = (model_flops + extra) / rate
    fwd_mb = model_flops / 3 / rate / m
    bwd_mb = compute / m - fwd_mb
    gemm = (model_flops - attn_flops) / rate  # linear layers: what TP overlap hides behind
    attention = (attn_flops + extra * (par.recompute == "selective")) / rate

    timer = _Timer(comm)
    moe_layers = model.n_moe_layers * layers / model.layers
    seq_local = s / par.cp
    act = b * seq_local * h * P.ACT_BYTES
    total, exposed = {}, {}

    tp = P.tp_groups(par)
    if par.sp:
        per_layer = 4 * (timer("tp", "all_gather", tp, act) + timer("tp", "reduce_scatter", tp, act))
    else:
        per_layer = 4 * timer("tp", "all_reduce", tp, act)
    total["tp"] = per_layer * layers * m
    exposed["tp"] = max(0.0, total["tp"] - gemm) if par.tp_overlap else total["tp"]

    cp = P.cp_groups(par)
    kv = b * s * 2 * model.kv_dim / par.tp * P.ACT_BYTES
    total["cp"] = (2 * timer("cp", "all_gather", cp, kv) + timer("cp", "reduce_scatter", cp, kv)) * layers * m
    exposed["cp"] = max(0.0, total["cp"] - attention)

    ep = P.ep_groups(par)
    dispatch = b * seq_local / (par.tp if par.sp else 1) * model.top_k * h * P.ACT_BYTES
    total["ep"] = 4 * timer("ep", "alltoall", ep, dispatch) * moe_layers * m if model.is_moe else 0.0
    exposed["ep"] = total["ep"]

    p2p = act / (par.tp if par.sp else 1)
    hop = timer("pp", "sendrecv", P.pp_pairs(par), p2p) if par.pp > 1 else 0.0
    total["pp"] = exposed["pp"] = 2 * (m * par.vp + par.pp - 1) * hop

    bubble = (par.pp - 1) / (m * par.vp) * (compute + exposed["tp"] + exposed["cp"] + exposed["ep"])

    total["dp"], exposed["dp"] = _data_parallel(model, par, timer, fwd_mb, bwd_mb)

    t_step = compute + bubble + sum(exposed.values())
    achieved = model_flops / t_step / n
    return StepResult(
        model=model.name, n_gpus=n, layout=par.label(), parallelism=par, step_time=t_step,
        tokens_per_s=tokens / t_step, tflops_per_gpu=achieved / 1e12, mfu_bf16=achieved / gpu.bf16_flops,
        mfu=achieved / peak, efficiency=eff, efficiency_source=eff_source, compute=compute, bubble=bubble, exposed=exposed, comm_total=total,
        call_time=dict(timer.calls), detail=dict(timer.detail),
    )


def _data_parallel(model: ModelSpec, par: P.Parallelism, timer: _Timer, fwd_mb: float, bwd_mb: float) -> tuple[float, float]:
    """(total, exposed) seconds per step of gradient reduction and ZeRO weight gathers."""
    if par.dp * par.cp < 2:
        return 0.0, 0.0
    local = P.params_per_gpu(model, par)
    expert = model.expert_params / (par.tp * par.pp * par.ep) if model.is_moe else 0.0
    dense = local - expert
    groups, edp = P.dp_cp_groups(par), P.expert_dp_groups(par)

    def both(collective: str, bytes_per_param: float) -> float:
        t = timer("dp", collective, groups, dense * bytes_per_param)
        return t + (timer("dp-expert", collective, edp, expert * bytes_per_param) if expert else 0.0)

    m = par.micro_batches
    if par.zero >= 3:
        gather, scatter = both("all_gather", P.WEIGHT_BYTES), both("reduce_scatter", P.GRAD_BYTES)
        first = gather / max(1.0, model.layers / par.pp)
        exposed = m * (max(gather - fwd_mb, first) + max(gather + scatter - bwd_mb, first))
        return m * (2 * gather + scatter), exposed
    bucket = min(1.0, max(BUCKET_PARAMS, BUCKET_PARAMS_PER_DP * par.dp) / max(local, 1.0))
    if par.zero == 0:
        reduce = both("all_reduce", P.GRAD_BYTES)
        return reduce, max(reduce - bwd_mb, reduce * bucket)
    scatter, gather = both("reduce_scatter", P.GRAD_BYTES), both("all_gather", P.WEIGHT_BYTES)
    return scatter + gather, max(scatter - bwd_mb, scatter * bucket) + max(gather - fwd_mb, gather * bucket)
