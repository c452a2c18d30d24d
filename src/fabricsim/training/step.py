"""One training step: compute plus every communication, composed on the critical path.

Time per step = compute + exposed TP + exposed CP + exposed EP + exposed PP + pipeline bubble + exposed DP.

- Compute (`training.compute`): the busiest pipeline rank's kernels for each of its m micro-batches (GEMMs at the
  run precision's rate and shape-dependent efficiency, routed experts as grouped GEMMs, flash attention, memory-bound
  kernels, recompute), over the framework factor, plus the optimizer step. `efficiency=` instead charges the
  hardware FLOPs (model FLOPs + recompute) at that fraction of the precision's dense peak, split as the kernel model
  splits them.
- TP (Megatron-LM, Shoeybi et al. 2019; Korthikanti et al. 2022): per layer and micro-batch 2 all-reduces forward +
  2 backward of b*s*h activations; with sequence parallelism all-gathers and reduce-scatters instead, one pair per
  Linear as Transformer Engine's userbuffers name them (`module/base.py` initialize_ub): forward qkv_fprop and fc1_fprop
  gather, proj_fprop and fc2_fprop reduce-scatter; backward proj_dgrad and fc2_dgrad gather the output gradient,
  qkv_dgrad and fc1_dgrad re-gather the saved input for the weight gradient, qkv_wgrad and fc1_wgrad reduce-scatter
  the input gradient: 6 all-gathers + 4 reduce-scatters a layer; full recompute repeats the forward's (Korthikanti
  et al. 2022 sec. 5: recomputation reruns the forward's communication). An MoE layer with etp = 1 keeps the attention's
  (and its shared experts'). Exposed unless `tp_overlap` (TE userbuffers, which need sequence parallelism), where each
  collective overlaps only the GEMM it is paired with, as its method runs (`_tp_overlap_exposed`).
- CP (Megatron-Core ring attention): per layer, forward all-gathers K,V over the CP group, backward all-gathers K,V and
  reduce-scatters dK,dV; it overlaps the attention kernels: exposed = max(0, comm - attention time).
- EP: per MoE layer dispatch + combine all-to-all forward and the same two backward (each rank sends its
  tokens x top_k rows of h, x the capacity factor when tokens are padded; the busiest rank x moe_imbalance).
  Exposed, less what Megatron overlaps: the shared experts run during the dispatch (moe_shared_expert_overlap; the
  flex dispatchers, DeepEP and HybridEP, turn it off: Megatron-Bridge `apply_flex_dispatcher_backend`), and
  with `ep_overlap` (overlap_moe_expert_parallel_comm, DeepSeek-V3's dual-micro-batch overlap) the all-to-alls of one
  micro-batch hide behind the other's compute: exposed = max(0, comm - compute of the MoE layers).
- PP: per micro-batch and virtual stage one activation send forward and one gradient send backward of b*s*h/tp
  bytes per GPU (the SP shard; without SP Megatron's scatter/gather optimization sends 1/tp from each TP rank and
  all-gathers it over NVLink at the receiver, Narayanan et al. 2021 sec. 4.1); the 1F1B critical path crosses
  2*(m*vp + pp - 1) of them, exposed.
- Bubble: (pp - 1)/(m*vp) of the busiest rank's per-micro-batch critical path (compute + exposed TP/CP/EP)
  (Narayanan et al. 2021, sec. 2.2: 1F1B (p-1)/m, interleaved (p-1)/(m*v)).
- DP (Megatron overlap-grad-reduce / overlap-param-gather, `dp_overlap`): gradients are reduced once per step in
  buckets while the last micro-batch's backward runs; exposed = max(comm - that backward, last bucket). ZeRO-1/2
  reduce-scatter gradients (FP32 or BF16) then all-gather weights (in FP8 with fp8_param_gather), hidden behind the
  first forward the same way; ZeRO-0 all-reduces. ZeRO-3 (FSDP) all-gathers weights in every micro-batch's forward
  and backward and reduce-scatters gradients in every backward, each prefetched during that pass, with the first
  layer's gather always exposed. Without `dp_overlap` all of it is exposed.
- CPU offloading (`offload_layers`): those layers' activations go to host memory and back over the host link,
  beside the compute; what outlasts the forward or backward is exposed.
Concurrency: every call passes all groups of one type at once, so groups contend for the fabric as they do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from fabricsim.training import parallel as P
from fabricsim.training.compute import PassTimes, Shape, optimizer_time, rates, stage_compute, tp_gemms
from fabricsim.training.memory import Memory
from fabricsim.training.models import ModelSpec
from fabricsim.training.precision import gemm_peak, precision

# Megatron-Core DDP bucket: max(40M, 1M x dp) parameters (megatron/core/distributed/distributed_data_parallel.py).
BUCKET_PARAMS, BUCKET_PARAMS_PER_DP = 40_000_000, 1_000_000
GROUPS = ("tp", "cp", "ep", "pp", "dp")


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
    efficiency: float  # framework factor, or the user's fraction of peak
    efficiency_source: str  # where the compute efficiency comes from
    compute: float  # s per step
    bubble: float
    exposed: dict[str, float]  # group type -> exposed seconds per step
    comm_total: dict[str, float]  # group type -> seconds of communication per step (exposed or not)
    call_time: dict[str, float] = field(default_factory=dict)  # 'type:collective' -> seconds of one call
    detail: dict[str, Any] = field(default_factory=dict)  # 'type:collective' -> the comm model's last_detail
    compute_parts: dict[str, float] = field(default_factory=dict)  # kind of kernel -> seconds per step
    memory: Memory | None = None
    tflops: dict[str, float] = field(default_factory=dict)  # FLOP convention -> model TFLOP/s per GPU
    hbm_bytes: float = 0.0
    gpu: str = ""  # catalog name of the GPU

    @property
    def comm_fraction(self) -> float:
        """Share of the step spent in exposed communication."""
        return sum(self.exposed.values()) / self.step_time

    @property
    def over_hbm(self) -> bool:
        return bool(self.memory and self.hbm_bytes and self.memory.total > self.hbm_bytes)

    def as_dict(self) -> dict:
        par = self.parallelism
        return {
            "model": self.model, "gpus": self.n_gpus, "layout": self.layout, "global_batch": par.global_batch,
            "micro_batch": par.micro_batch, "micro_batches": par.micro_batches, "precision": par.precision,
            "recompute": par.recompute, "step_time_s": self.step_time, "tokens_per_s": self.tokens_per_s,
            "tflops_per_gpu": self.tflops_per_gpu, "tflops_per_gpu_by_convention": dict(self.tflops),
            "mfu_bf16": self.mfu_bf16, "mfu": self.mfu, "efficiency": self.efficiency,
            "efficiency_source": self.efficiency_source, "compute_s": self.compute, "compute_parts_s": dict(self.compute_parts),
            "bubble_s": self.bubble, "exposed_s": dict(self.exposed), "comm_total_s": dict(self.comm_total),
            "comm_fraction": self.comm_fraction, "call_time_s": dict(self.call_time),
            "memory_per_gpu": self.memory.as_dict() if self.memory else None, "hbm_GB": self.hbm_bytes / 1e9,
            "over_hbm": self.over_hbm,
        }


class _Timer:
    """Calls the comm model once per distinct (type, collective, size) and records what it said; calls of the
    group types in `free` cost nothing (a lower bound of the step for layout searches)."""

    def __init__(self, comm: CommModel, free: tuple[str, ...] = ()):
        self.comm, self.calls, self.detail, self.free = comm, {}, {}, free

    def __call__(self, kind: str, collective: str, groups: np.ndarray, nbytes: float) -> float:
        if groups.shape[1] < 2 or nbytes <= 0 or kind.split("-")[0] in self.free:
            return 0.0
        t = float(self.comm.time(collective, groups, float(nbytes)))
        key = f"{kind}:{collective}"
        self.calls[key] = t
        if getattr(self.comm, "last_detail", None) is not None:
            self.detail[key] = self.comm.last_detail
        return t


def shape_of(model: ModelSpec, par: P.Parallelism) -> Shape:
    return Shape(tokens=par.micro_batch * model.seq / par.cp, tp=par.tp, ep=par.ep, etp=par.etp, sp=par.sp,
                 precision=par.precision, recompute=par.recompute, capacity_factor=par.capacity_factor,
                 imbalance=par.moe_imbalance, dispatcher=par.dispatcher)


def step_time(model: ModelSpec, par: P.Parallelism, gpu, comm: CommModel, efficiency: float | None = None, *,
              free: tuple[str, ...] = (), compute_speed: float = 1.0) -> StepResult:
    """Time one optimizer step of `model` laid out as `par` (resolved and validated) on GPUs of type `gpu` (a
    hardware.GPU); communication of the group types in `free` ('tp', 'dp', ...) is taken as free (a lower bound).
    `compute_speed` < 1: every kernel and the optimizer take 1 / compute_speed as long (a throttled GPU, as
    `training.stragglers` times one stage of a step), the communication as it is."""
    n, m, b, s, h = par.n_gpus, par.micro_batches, par.micro_batch, model.seq, model.hidden
    peak = gemm_peak(gpu, par.precision)
    tokens = par.global_batch * s
    model_flops = model.flops_per_token(s) * tokens
    sc = stage_compute(model, shape_of(model, par), gpu, par.pp, par.vp)
    per_mb = sc.times
    eff, eff_source = sc.factor, f"framework factor {sc.factor:.2f} of the kernel-level rate ({sc.factor_source})"
    if efficiency is not None:  # the user's fraction of peak for the hardware FLOPs, split as the kernel model splits
        attn_flops = model.attention_flops_per_token(s) * tokens
        extra = {"none": 0.0, "full": model_flops / 3}.get(par.recompute, attn_flops / 3)
        target = (model_flops + extra) / (n * peak * efficiency) * (sc.layers * par.pp / model.layers) / m
        per_mb = per_mb.scaled(target / per_mb.total)
        eff, eff_source = efficiency, "set by the user"
    if compute_speed != 1.0:
        per_mb = per_mb.scaled(1.0 / compute_speed)
    local = P.params_per_gpu(model, par)
    optimizer = optimizer_time(local, par.dp * par.cp if par.zero >= 1 else 1, gpu) / compute_speed
    compute = m * per_mb.total + optimizer

    timer = _Timer(comm, free)
    layers, moe_layers = sc.layers, sc.moe_layers
    dense_layers = layers - moe_layers
    seq_local = s / par.cp
    act = b * seq_local * h * P.ACT_BYTES
    total, exposed = {}, {}

    tp = P.tp_groups(par)
    moe_tp = 0.5 + (0.5 if model.shared_experts or par.etp > 1 else 0.0)  # share of a dense layer's TP calls
    tp_layers = dense_layers + moe_tp * moe_layers
    refwd = par.recompute == "full"  # full recompute runs each layer's forward, and its TP collectives, twice
    if par.sp:
        ag, rs = timer("tp", "all_gather", tp, act), timer("tp", "reduce_scatter", tp, act)
        per_layer = (6 + 2 * refwd) * ag + (4 + 2 * refwd) * rs
    else:
        ag = rs = 0.0
        per_layer = (4 + 2 * refwd) * timer("tp", "all_reduce", tp, act)
    total["tp"] = per_layer * tp_layers * m
    exposed["tp"] = total["tp"]
    if par.tp_overlap and par.sp and total["tp"]:  # userbuffers need sequence parallelism
        scale = per_mb.total / sc.times.total / sc.factor if sc.times.total else 0.0  # framework factor, --efficiency
        r = rates(gpu, par.precision)
        shape = shape_of(model, par)
        exposed["tp"] = m * sum(
            count * _tp_overlap_exposed(tp_gemms(model, shape, r, moe), ag, rs, par.tp, par.precision != "bf16", scale,
                                        refwd)
            for moe, count in ((False, dense_layers), (True, moe_layers)) if count)

    cp = P.cp_groups(par)
    kv = b * s * 2 * model.kv_dim / par.tp * P.ACT_BYTES
    total["cp"] = (2 * timer("cp", "all_gather", cp, kv) + timer("cp", "reduce_scatter", cp, kv)) * layers * m
    exposed["cp"] = max(0.0, total["cp"] - m * (per_mb.attn_fwd + per_mb.attn_bwd))

    ep = P.ep_groups(par)
    rows = b * seq_local / (par.tp if par.sp else 1) * model.top_k * max(1.0, par.capacity_factor) * par.moe_imbalance
    dispatch = rows * h * P.ACT_BYTES * dispatch_dedup(model, par, ep, comm)
    total["ep"] = 4 * timer("ep", "alltoall", ep, dispatch) * moe_layers * m if model.is_moe else 0.0
    hidden_ep = 0.0
    if total["ep"] and par.ep_overlap:
        hidden_ep = m * per_mb.total * (moe_layers / max(layers, 1))
    elif total["ep"] and model.shared_experts and par.dispatcher == "alltoall":  # flex dispatchers turn it off
        hidden_ep = m * (per_mb.gemm_fwd + per_mb.gemm_bwd) * _shared_share(model) * moe_layers / max(layers, 1)
    exposed["ep"] = max(0.0, total["ep"] - hidden_ep)

    p2p = act / par.tp  # each TP rank sends its 1/tp (SP shard, or Megatron's scatter-gather without SP)
    hop = timer("pp", "sendrecv", P.pp_pairs(par), p2p) if par.pp > 1 else 0.0
    total["pp"] = exposed["pp"] = 2 * (m * par.vp + par.pp - 1) * hop
    if hop and par.vp > 1 and par.pp_overlap:  # steady-state sends hide behind the next chunk's forward / backward
        steady = m * par.vp * (max(0.0, hop - per_mb.fwd / par.vp) + max(0.0, hop - per_mb.bwd / par.vp))
        exposed["pp"] = 2 * (par.pp - 1) * hop + steady

    bubble = (par.pp - 1) / (m * par.vp) * (m * per_mb.total + exposed["tp"] + exposed["cp"] + exposed["ep"])

    total["dp"], exposed["dp"] = _data_parallel(model, par, timer, per_mb)
    offload = _offload(model, par, gpu, per_mb)

    t_step = compute + bubble + sum(exposed.values()) + m * offload
    achieved = model_flops / t_step / n
    tflops = {conv: model.flops_per_token(s, conv) * tokens / t_step / n / 1e12
              for conv in ("megatron", "megatron-bridge", "6n")}
    parts = {"gemm": m * (per_mb.gemm_fwd + per_mb.gemm_bwd), "experts": m * (per_mb.expert_fwd + per_mb.expert_bwd),
             "attention": m * (per_mb.attn_fwd + per_mb.attn_bwd), "memory_bound": m * (per_mb.mem_fwd + per_mb.mem_bwd),
             "recompute": m * per_mb.recompute, "optimizer": optimizer, "offload": m * offload}
    return StepResult(
        model=model.name, n_gpus=n, layout=par.label(), parallelism=par, step_time=t_step,
        tokens_per_s=tokens / t_step, tflops_per_gpu=achieved / 1e12, mfu_bf16=achieved / gpu.bf16_flops,
        mfu=achieved / peak, efficiency=eff, efficiency_source=eff_source, compute=compute, bubble=bubble, exposed=exposed,
        comm_total=total, call_time=dict(timer.calls), detail=dict(timer.detail), compute_parts=parts,
        memory=P.memory_breakdown(model, par), tflops=tflops, hbm_bytes=gpu.hbm_bytes, gpu=gpu.name,
    )


# Transformer Engine userbuffers' pipelined reduce-scatter splits its GEMM into this many chunks (TE
# `initialize_ub` default config: "num_splits": 4 for the "pipeline" method).
UB_PIPELINE_SPLITS = 4


def _tp_overlap_exposed(gemms: dict[str, tuple[float, float, float]], ag: float, rs: float, tp: int, low: bool,
                        scale: float, refwd: bool = False) -> float:
    """Exposed TP seconds of one layer and micro-batch under TE userbuffers, each collective against the GEMM it is
    paired with (`module/base.py` initialize_ub methods; comm_gemm_overlap.cpp):
    - ring exchange (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad; and proj_fprop, fc2_fprop in the low-precision
      configs, Megatron-Bridge `comm_overlap.py` userbuffers_fp8_*): the GEMM runs in tp chunks, the first on the
      local shard, each later one behind one of tp - 1 peer exchanges: exposed (tp - 1) max(0, c/(tp-1) - g/tp);
    - pipeline (proj_fprop, fc2_fprop in BF16, TE's default): the GEMM in UB_PIPELINE_SPLITS chunks, each chunk's
      reduce-scatter behind the next chunk's GEMM, the last one after it: exposed (n-1)/n max(0, c - g) + c/n;
    - bulk (qkv_dgrad / fc1_dgrad gathers, qkv_wgrad / fc1_wgrad reduce-scatters): launched beside the GEMM:
      exposed max(0, c - g).
    `scale` turns the kernel-level GEMM seconds into the step's (framework factor, or the user's efficiency);
    `refwd`: full recompute runs the forward pairs once more in the backward."""
    def ring(c: float, g: float) -> float:
        return (tp - 1) * max(0.0, c / (tp - 1) - g / tp)

    def pipeline(c: float, g: float) -> float:
        n = UB_PIPELINE_SPLITS
        return (n - 1) / n * max(0.0, c - g) + c / n

    def bulk(c: float, g: float) -> float:
        return max(0.0, c - g)

    reduce_fprop = ring if low else pipeline
    out = 0.0
    for into, outof in (("qkv", "proj"), ("fc1", "fc2")):
        if into not in gemms:
            continue
        f_in, dgrad_in, wgrad_in = (scale * t for t in gemms[into])
        f_out, dgrad_out, _ = (scale * t for t in gemms[outof])
        out += (1 + refwd) * (ring(ag, f_in) + reduce_fprop(rs, f_out))  # forward (and its recompute)
        out += ring(ag, dgrad_out) + bulk(ag, dgrad_in) + bulk(rs, wgrad_in)  # backward
    return out


def _offload(model: ModelSpec, par: P.Parallelism, gpu, per_mb: PassTimes) -> float:
    """Exposed seconds per micro-batch of CPU activation offloading: the offloaded layers' activations go to host
    memory during the forward and come back during the backward over the GPU's host link (NVLink-C2C on Grace
    superchips, else PCIe), on their own stream beside the compute (Megatron-Core cpu_offloading): exposed where the
    copies outlast the passes they overlap."""
    from fabricsim.hardware import get_link
    from fabricsim.training.memory import offloaded_bytes

    moved = offloaded_bytes(model, par)
    if not moved:
        return 0.0
    link = get_link(gpu.c2c_link or gpu.pcie_link)
    t = moved / (link.bw * link.efficiency)
    return max(0.0, t - per_mb.fwd) + max(0.0, t - per_mb.bwd)


def dispatch_dedup(model: ModelSpec, par: P.Parallelism, ep: np.ndarray, comm) -> float:
    """Share of the routed rows a flex dispatcher (DeepEP / HybridEP) sends across NVLink domains: it sends a token once
    per destination domain and fans it out over NVLink there (DeepEP README, 'forwarding from the NVLink domain to
    the RDMA domain'), so with D domains in the EP group a token's top_k experts cost its expected distinct remote
    domains, D (1 - (1 - 1/D)^draws), not top_k copies; group-limited routing draws router_group_topk groups
    (DeepSeek-V3: at most 4 nodes). 1 for the all-to-all dispatcher or an EP group inside one domain."""
    topo = getattr(comm, "topo", None)
    if par.dispatcher == "alltoall" or topo is None or not model.is_moe or ep.shape[1] < 2:
        return 1.0
    placement = getattr(comm, "placement", None)
    gpus = ep[0] if placement is None else placement[ep[0]]
    domains = len(np.unique(np.asarray(topo.gpu_domain)[gpus]))
    if domains < 2:
        return 1.0
    draws = model.router_group_topk if model.router_groups else model.top_k
    distinct = domains * (1 - (1 - 1 / domains) ** draws)
    return min(1.0, distinct / model.top_k)


def _shared_share(model: ModelSpec) -> float:
    """Share of an MoE layer's dense GEMM time that is shared-expert work (what runs during the dispatch)."""
    mult = 3 if model.gated else 2
    shared = mult * model.hidden * model.moe_ffn * model.shared_experts
    return shared / (shared + model.attention_params + model.hidden * model.experts)


def _data_parallel(model: ModelSpec, par: P.Parallelism, timer: _Timer, per_mb: PassTimes) -> tuple[float, float]:
    """(total, exposed) seconds per step of gradient reduction and ZeRO weight gathers."""
    from fabricsim.training.memory import shard_params

    non_expert, expert = shard_params(model, par)
    if par.dp * par.cp < 2 and (not expert or par.tp * par.cp * par.dp // (par.ep * par.etp) < 2):
        return 0.0, 0.0
    groups, edp = P.dp_cp_groups(par), P.expert_dp_groups(par)
    grad_bytes = 4.0 if par.grad_fp32 else 2.0
    gather_bytes = precision(par.precision).param_gather_bytes
    if par.fp8_param_gather is not None:
        gather_bytes = 1.0 if par.fp8_param_gather and par.precision != "bf16" else float(P.WEIGHT_BYTES)

    def both(collective: str, bytes_per_param: float) -> float:
        t = timer("dp", collective, groups, non_expert * bytes_per_param)
        return t + (timer("dp-expert", collective, edp, expert * bytes_per_param) if expert else 0.0)

    m = par.micro_batches
    fwd_mb, bwd_mb = per_mb.fwd, per_mb.bwd
    if par.zero >= 3:
        gather, scatter = both("all_gather", gather_bytes), both("reduce_scatter", grad_bytes)
        first = gather / max(1.0, model.layers / par.pp)
        if not par.dp_overlap:
            return m * (2 * gather + scatter), m * (2 * gather + scatter)
        exposed = m * (max(gather - fwd_mb, first) + max(gather + scatter - bwd_mb, first))
        return m * (2 * gather + scatter), exposed
    bucket = min(1.0, max(BUCKET_PARAMS, BUCKET_PARAMS_PER_DP * par.dp) / max(non_expert + expert, 1.0))
    if par.zero == 0:
        reduce = both("all_reduce", grad_bytes)
        return reduce, (max(reduce - bwd_mb, reduce * bucket) if par.dp_overlap else reduce)
    scatter, gather = both("reduce_scatter", grad_bytes), both("all_gather", gather_bytes)
    if not par.dp_overlap:
        return scatter + gather, scatter + gather
    return scatter + gather, max(scatter - bwd_mb, scatter * bucket) + max(gather - fwd_mb, gather * bucket)
