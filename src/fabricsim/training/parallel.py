"""Parallel layout of a training job: validation, memory estimate, Megatron rank groups, a default layout.

Rank order follows Megatron-Core's RankGenerator ('tp-cp-ep-dp-pp'): TP is innermost (consecutive
ranks, so a TP group sits inside one NVLink domain), then CP, then DP (EP is carved out of the
DP x CP ranks, innermost first), PP outermost. GPU rank r of the topology runs Megatron rank r.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.training.models import ModelSpec

PRECISIONS = ("bf16", "fp8")
RECOMPUTE = ("none", "selective", "full")

# Mixed-precision Adam bytes per parameter (Rajbhandari et al. 2020, ZeRO, sec. 3.1): bf16 weights (2),
# bf16 gradients (2), fp32 master weights + momentum + variance (12). ZeRO stage k shards the last
# k of (optimizer, gradients, weights) over the data-parallel (x context-parallel) group.
WEIGHT_BYTES, GRAD_BYTES, OPTIMIZER_BYTES = 2, 2, 12
ACT_BYTES = 2  # activations and their gradients travel as bf16 (Transformer Engine keeps FP8 inside GEMMs)


@dataclass(frozen=True)
class Parallelism:
    """A Megatron-style layout. dp = 0 means 'whatever is left' (resolved by `resolve`)."""

    tp: int = 1
    pp: int = 1
    dp: int = 0
    cp: int = 1
    ep: int = 1
    vp: int = 1  # virtual (interleaved) stages per pipeline rank
    zero: int = 1  # 0 none, 1 optimizer (Megatron distributed optimizer), 2 + gradients, 3 + weights (FSDP)
    sequence_parallel: bool = True  # only meaningful when tp > 1
    micro_batch: int = 1
    global_batch: int = 0  # 0: micro_batch * dp (one micro-batch per step)
    precision: str = "bf16"
    recompute: str = "selective"
    tp_overlap: bool = False  # TP comm overlapped with GEMMs (Transformer Engine userbuffers)
    allow_tp_spill: bool = False

    @property
    def n_gpus(self) -> int:
        return self.tp * self.pp * self.cp * self.dp

    @property
    def micro_batches(self) -> int:
        """Micro-batches per pipeline per step."""
        return self.global_batch // (self.micro_batch * self.dp)

    @property
    def sp(self) -> bool:
        return self.sequence_parallel and self.tp > 1

    def label(self) -> str:
        parts = [f"tp{self.tp}", f"pp{self.pp}" + (f"v{self.vp}" if self.vp > 1 else ""), f"dp{self.dp}"]
        parts += [f"cp{self.cp}"] * (self.cp > 1) + [f"ep{self.ep}"] * (self.ep > 1) + [f"z{self.zero}"] * (self.zero > 0)
        return " ".join(parts)


# Default batch when none is given: about 4M tokens per step, the batch Llama 3 405B pre-training started with
# ("initial batch size of 4M tokens", Llama 3 paper, arXiv:2407.21783 s3.4.1; GPT-3 175B used 3.2M, Brown et al.
# 2020 Table 2.1), and at least 4 micro-batches per pipeline stage so the 1F1B bubble stays near 20%
# (Narayanan et al. 2021, arXiv:2104.04473 s2.2).
DEFAULT_BATCH_TOKENS = 4 * 2**20
MIN_MICRO_BATCHES_PER_STAGE = 4


def default_global_batch(par: Parallelism, seq: int) -> int:
    """Sequences per step when the user gives none (see DEFAULT_BATCH_TOKENS), a multiple of micro_batch * dp."""
    per_step = par.micro_batch * par.dp
    want = max(-(-DEFAULT_BATCH_TOKENS // seq), MIN_MICRO_BATCHES_PER_STAGE * par.pp * per_step if par.pp > 1 else 1)
    return -(-want // per_step) * per_step


def resolve(par: Parallelism, n_gpus: int, seq: int | None = None) -> Parallelism:
    """Fill dp (from the GPU count) and, with `seq`, global_batch (default_global_batch; without `seq`, one
    micro-batch per DP rank) when left at 0."""
    for key in ("tp", "pp", "cp", "ep", "vp", "micro_batch"):
        if getattr(par, key) < 1:
            raise FabricsimError(f"{key} must be at least 1 (got {getattr(par, key)})")
    if par.dp == 0:
        model_parallel = par.tp * par.pp * par.cp
        if n_gpus % model_parallel:
            raise FabricsimError(
                f"{n_gpus} GPUs cannot be split into tp*pp*cp = {model_parallel}-GPU replicas: use a GPU count that is a multiple of {model_parallel}")
        par = replace(par, dp=n_gpus // model_parallel)
    if par.global_batch == 0:
        par = replace(par, global_batch=default_global_batch(par, seq) if seq else par.micro_batch * par.dp)
    return par


def validate(model: ModelSpec, par: Parallelism, n_gpus: int, gpus_per_domain: int, hbm_bytes: float | None = None) -> None:
    """Raise FabricsimError naming the first rule the layout breaks (and how to fix it)."""
    for key in ("tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "global_batch"):
        if getattr(par, key) < 1:
            raise FabricsimError(f"{key} must be at least 1 (got {getattr(par, key)})")
    if par.zero not in (0, 1, 2, 3):
        raise FabricsimError(f"zero must be 0, 1, 2 or 3 (got {par.zero})")
    if par.precision not in PRECISIONS:
        raise FabricsimError(f"unknown precision '{par.precision}': use {' or '.join(PRECISIONS)}")
    if par.recompute not in RECOMPUTE:
        raise FabricsimError(f"unknown recompute '{par.recompute}': use one of {', '.join(RECOMPUTE)}")
    if par.n_gpus != n_gpus:
        raise FabricsimError(
            f"tp*pp*cp*dp = {par.tp}*{par.pp}*{par.cp}*{par.dp} = {par.n_gpus} but the job has {n_gpus} GPUs: make the product equal the GPU count")
    if model.layers < par.pp * par.vp:
        raise FabricsimError(f"{model.layers} layers cannot fill pp*vp = {par.pp * par.vp} pipeline stages: use pp*vp <= {model.layers}")
    if model.heads % par.tp or model.kv_heads % par.tp and par.tp % model.kv_heads:
        raise FabricsimError(f"{model.heads} attention heads ({model.kv_heads} KV heads) cannot be split over tp={par.tp}: use a tp that divides {model.heads}")
    if par.global_batch % (par.micro_batch * par.dp):
        raise FabricsimError(
            f"global batch {par.global_batch} is not a multiple of micro_batch*dp = {par.micro_batch}*{par.dp}: use a multiple of {par.micro_batch * par.dp}")
    if par.cp > 1 and model.seq % 2:
        raise FabricsimError(f"context parallelism splits the sequence into 2*cp chunks, so it needs an even sequence length "
                             f"(got {model.seq}): use an even --seq, or cp 1")
    if model.seq % par.cp or par.cp > 1 and (model.seq // par.cp) % 2:
        raise FabricsimError(f"sequence length {model.seq} cannot be split into 2*cp = {2 * par.cp} chunks (Megatron CP load balancing): use a cp that divides {model.seq // 2}")
    if par.ep > 1:
        if not model.is_moe:
            raise FabricsimError(f"ep={par.ep} needs a mixture-of-experts model; {model.name} is dense: use ep=1")
        if model.experts % par.ep:
            raise FabricsimError(f"ep={par.ep} does not divide the {model.experts} experts of {model.name}: use a divisor of {model.experts}")
        if (par.dp * par.cp) % par.ep:
            raise FabricsimError(f"ep={par.ep} must divide dp*cp = {par.dp * par.cp} (Megatron carves EP out of the data-parallel ranks): change ep or dp")
    if par.tp > 1 and not par.allow_tp_spill and (par.tp > gpus_per_domain or gpus_per_domain % par.tp):
        raise FabricsimError(
            f"tp={par.tp} does not fit in the {gpus_per_domain}-GPU NVLink domain, so TP traffic would cross the scale-out network: "
            f"use tp <= {gpus_per_domain} dividing it, or allow TP spill explicitly")
    if hbm_bytes is not None:
        need = memory_per_gpu(model, par)
        if need > hbm_bytes:
            raise FabricsimError(
                f"the layout needs about {need / 1e9:.1f} GB per GPU but the GPU has {hbm_bytes / 1e9:.1f} GB "
                f"({(need - hbm_bytes) / 1e9:.1f} GB over): raise tp/pp, use zero 3 or full recompute, or lower micro_batch")
    uneven = _uneven_group(par, gpus_per_domain)
    if uneven:
        raise FabricsimError(
            f"the {uneven} groups of {par.label()} do not all take the same number of GPUs from each {gpus_per_domain}-GPU "
            f"NVLink domain they span, so one collective timing cannot stand for all of them: {_ALIGN_FIX[uneven]}")


_ALIGN_FIX = {
    "tp": "use a tp that divides the NVLink domain",
    "cp": "use a cp whose groups (cp x tp GPUs) fit whole NVLink domains, or divide one",
    "dp": "choose pp so that each pipeline stage (tp x cp x dp GPUs) is a multiple or a divisor of the NVLink domain",
    "ep": "use an ep whose groups (ep x tp x cp GPUs) are a multiple or a divisor of the NVLink domain",
    "expert dp": "use an ep and pp whose expert data-parallel groups spread evenly over the NVLink domains",
}


def _uneven_group(par: Parallelism, gpus_per_domain: int) -> str | None:
    """The first communicating group kind (tp, cp, dp, ep, expert dp) whose groups are not all alike across NVLink
    domains (GPU rank r sits in domain r // gpus_per_domain): every group must take the same number of GPUs from each
    domain it spans, as the communication model times one group and applies it to all; None when all are alike."""
    if par.n_gpus <= gpus_per_domain:
        return None
    for name, groups in (("tp", tp_groups(par)), ("cp", cp_groups(par)), ("dp", dp_cp_groups(par)), ("ep", ep_groups(par)),
                         ("expert dp", expert_dp_groups(par))):
        if groups.shape[1] < 2:
            continue
        width = par.n_gpus // gpus_per_domain + 1
        key = np.arange(groups.shape[0])[:, None] * width + groups // gpus_per_domain
        _, counts = np.unique(key, return_counts=True)
        if counts.min() != counts.max():  # then every group spans size / count domains, count GPUs each
            return name
    return None


def stage_layers(model: ModelSpec, par: Parallelism) -> int:
    """Layers the busiest GPU runs per micro-batch, over its vp virtual stages. Layers that do not divide into
    pp*vp stages are spread as Megatron's uneven pipelines do (some stages one layer more); the busiest stage
    sets the pipeline's pace (Llama 3 405B: 126 layers on pp=16)."""
    return -(-model.layers // (par.pp * par.vp)) * par.vp


def params_per_gpu(model: ModelSpec, par: Parallelism) -> float:
    """Parameters held by the busiest GPU (the first stage, which also holds the embedding)."""
    layer_dense = (model.params - model.embedding_params - model.expert_params) / model.layers
    layer_expert = model.expert_params / model.layers
    per_stage = stage_layers(model, par)
    embedding = model.embedding_params if par.pp == 1 else model.vocab * model.hidden
    return (per_stage * layer_dense + embedding) / par.tp + per_stage * layer_expert / (par.tp * par.ep)


def memory_per_gpu(model: ModelSpec, par: Parallelism) -> float:
    """Bytes of HBM the first pipeline stage needs: weights, gradients, optimizer state, activations.

    Activations per layer follow Korthikanti et al. 2022 (arXiv:2205.05198) Table 2 with FlashAttention
    (no s x s scores stored, which is also what selective recompute saves): s*b*h*(34/t) with sequence
    parallelism, s*b*h*(10 + 24/t) without; full recompute keeps only each layer's input, 2*s*b*h (/t with SP).
    The first stage holds pp micro-batches of L/pp layers (= L layers) under 1F1B, times
    (1 + (pp-1)/(pp*vp)) when interleaved (same paper, sec. 4.2.3). Framework workspace is not counted.
    """
    shard = par.dp * par.cp
    states = params_per_gpu(model, par) * (
        WEIGHT_BYTES / (shard if par.zero >= 3 else 1)
        + GRAD_BYTES / (shard if par.zero >= 2 else 1)
        + OPTIMIZER_BYTES / (shard if par.zero >= 1 else 1)
    )
    sbh = model.seq / par.cp * par.micro_batch * model.hidden
    if par.recompute == "full":
        per_layer = 2 * sbh / (par.tp if par.sp else 1)
    else:
        per_layer = sbh * (34 / par.tp if par.sp else 10 + 24 / par.tp)
    in_flight_layers = stage_layers(model, par) * min(par.pp, par.micro_batches)  # 1F1B: up to pp micro-batches of a stage
    interleave = 1 + (par.pp - 1) / (par.pp * par.vp) if par.vp > 1 else 1
    return states + per_layer * in_flight_layers * interleave


def layout_candidates(model: ModelSpec, n_gpus: int, gpus_per_domain: int, **overrides) -> list[Parallelism]:
    """Megatron layouts of `n_gpus` GPUs to try, smallest PP first and for each the smallest TP inside the NVLink
    domain first (TP over NVLink is cheaper than a pipeline bubble, so TP grows first); for a mixture of experts,
    every such layout with EP 1 (Megatron's default) comes before those with larger expert-parallel sizes. A `tp`, `pp` or `ep` in
    `overrides` fixes that size; the other overrides (micro_batch, global_batch, precision, ...) are kept."""
    tp, pp, ep = overrides.pop("tp", None), overrides.pop("pp", None), overrides.pop("ep", None)
    tps = [tp] if tp else [t for t in (1, 2, 4, 8, 16, 32, 64, 72)
                           if t <= gpus_per_domain and gpus_per_domain % t == 0 and model.heads % t == 0]
    pps = [pp] if pp else [p for p in range(1, model.layers + 1) if n_gpus % p == 0]
    out = []
    for p in pps:
        for t in tps:
            if n_gpus % (t * p * overrides.get("cp", 1)):
                continue
            par = resolve(Parallelism(tp=t, pp=p, **overrides), n_gpus, model.seq)
            # a mixture of experts may also shard its experts over a power of two of the DP x CP ranks
            powers = (1 << k for k in range(12))
            eps = ([ep] if ep else [e for e in powers if not model.experts % e and not (par.dp * par.cp) % e]
                   if model.is_moe else [ep or 1])
            out += [replace(par, ep=e) for e in eps]
    return sorted(out, key=lambda par: par.ep)  # stable: EP 1 layouts first, as without experts


def fitting_layouts(model: ModelSpec, n_gpus: int, gpus_per_domain: int, hbm_bytes: float, *, first: bool = False,
                    **overrides) -> list[Parallelism]:
    """The `layout_candidates` that pass `validate` (fit in HBM, split the batch, spread evenly over NVLink domains,
    ...), in the same order (`first`: stop at the first); none fitting is a FabricsimError naming the rule the least
    memory-hungry candidate broke."""
    fits, failed = [], []
    candidates = layout_candidates(model, n_gpus, gpus_per_domain, **overrides)
    for par in candidates:
        try:
            validate(model, par, n_gpus, gpus_per_domain, hbm_bytes)
        except FabricsimError as err:
            failed.append((par, err))
            continue
        fits.append(par)
        if first:
            return fits
    if not fits:
        if not candidates:
            raise FabricsimError(
                f"no layout of {n_gpus} GPUs has the sizes given ({', '.join(f'{k}={v}' for k, v in overrides.items() if k in ('tp', 'pp', 'cp', 'ep'))}): "
                "tp*pp*cp must divide the GPU count, tp must divide the NVLink domain and the attention heads")
        par, err = min(failed, key=lambda f: memory_per_gpu(model, f[0]))
        raise FabricsimError(
            f"no Megatron layout of {model.name} fits {n_gpus} GPUs ({gpus_per_domain} per NVLink domain, "
            f"{hbm_bytes / 1e9:.0f} GB each) (closest, {par.label()}: {err}): add GPUs or give the layout explicitly")
    return fits


def default_parallelism(model: ModelSpec, n_gpus: int, gpus_per_domain: int, hbm_bytes: float, **overrides) -> Parallelism:
    """A Megatron-like layout: the first of `fitting_layouts` (the smallest PP, and for it the smallest TP, that fits
    in HBM); DP takes the rest. ZeRO-1 (distributed optimizer), sequence parallelism and selective recompute are on,
    as in Megatron-Core's recommended settings; `overrides` (e.g. micro_batch, global_batch, precision) are kept."""
    return fitting_layouts(model, n_gpus, gpus_per_domain, hbm_bytes, first=True, **overrides)[0]


def _grid(par: Parallelism) -> np.ndarray:
    """Megatron rank of every (pp, dp, cp, tp) coordinate."""
    return np.arange(par.n_gpus, dtype=np.int64).reshape(par.pp, par.dp, par.cp, par.tp)


def tp_groups(par: Parallelism) -> np.ndarray:
    return _grid(par).reshape(-1, par.tp)


def cp_groups(par: Parallelism) -> np.ndarray:
    return _grid(par).transpose(0, 1, 3, 2).reshape(-1, par.cp)


def dp_groups(par: Parallelism) -> np.ndarray:
    """Pure data-parallel groups (same tp, cp and pp coordinates)."""
    return _grid(par).transpose(0, 2, 3, 1).reshape(-1, par.dp)


def dp_cp_groups(par: Parallelism) -> np.ndarray:
    """The group Megatron reduces gradients (and shards ZeRO state) over: DP x CP."""
    return _grid(par).transpose(0, 3, 1, 2).reshape(-1, par.dp * par.cp)


def ep_groups(par: Parallelism) -> np.ndarray:
    """Expert-parallel groups: consecutive `ep` ranks of each DP x CP group (cp innermost)."""
    return dp_cp_groups(par).reshape(-1, par.ep)


def expert_dp_groups(par: Parallelism) -> np.ndarray:
    """Ranks holding the same expert shard, which reduce its gradients together: every ep-th rank of a DP x CP group."""
    g = dp_cp_groups(par)
    return g.reshape(g.shape[0], -1, par.ep).transpose(0, 2, 1).reshape(-1, g.shape[1] // par.ep)


def pp_pairs(par: Parallelism) -> np.ndarray:
    """(sender, receiver) of every stage boundary; interleaving adds the last -> first wrap."""
    g = _grid(par).reshape(par.pp, -1)
    nxt = np.roll(g, -1, axis=0)
    stages = par.pp if par.vp > 1 and par.pp > 1 else par.pp - 1
    return np.stack([g[:stages].ravel(), nxt[:stages].ravel()], axis=1)
