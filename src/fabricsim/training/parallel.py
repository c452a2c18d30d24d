"""Parallel layout of a training job: validation, memory estimate, Megatron rank groups, a default layout.

Rank order follows Megatron-Core's RankGenerator ('tp-cp-ep-dp-pp'): TP is innermost (consecutive
ranks, so a TP group sits inside one NVLink domain), then CP, then DP (EP is carved out of the
DP x CP ranks, innermost first), PP outermost. GPU rank r of the topology runs Megatron rank r.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.training.compute import RECOMPUTE_MODULES, stage_plan
from fabricsim.training.models import ModelSpec
from fabricsim.training.precision import PRECISIONS as _PRECISIONS

PRECISIONS = tuple(_PRECISIONS)
RECOMPUTE = ("none", "selective", "full")  # or a comma-separated list of RECOMPUTE_MODULES (Megatron recompute_modules)
DISPATCHERS = ("alltoall", "deepep", "hybridep")  # Megatron-Core moe_token_dispatcher_type / flex backends

WEIGHT_BYTES = 2  # BF16 weights: what a ZeRO-3 / FSDP gather moves when parameters are not gathered in FP8
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
    tp_overlap: bool = False  # TP comm overlapped with GEMMs (Transformer Engine userbuffers, --tp-comm-overlap)
    allow_tp_spill: bool = False
    etp: int = 1  # expert tensor parallel size (Megatron-Bridge's MoE recipes: 1; MoE parallel folding)
    capacity_factor: float = 0.0  # 0: dropless; else each expert computes capacity_factor x its balanced share
    moe_imbalance: float = 1.0  # routed rows on the busiest EP rank over the mean (1: force-balanced, as benchmarks)
    ep_overlap: bool = False  # EP all-to-all overlapped with another micro-batch (--overlap-moe-expert-parallel-comm)
    dp_overlap: bool = True  # --overlap-grad-reduce and --overlap-param-gather (on in Megatron-Bridge recipes)
    grad_fp32: bool = True  # gradients accumulated and reduced in FP32 (Megatron-LM BF16 default)
    fp8_param_gather: bool | None = None  # gather parameters in FP8 (None: the precision's Megatron-Bridge default)
    pp_overlap: bool = True  # interleaved 1F1B sends overlap compute (Megatron overlap_p2p_comm, set when vp > 1)
    dispatcher: str = "alltoall"  # MoE token dispatcher: alltoall | deepep | hybridep (Megatron's flex backends)
    offload_layers: int = 0  # layers whose activations live in host memory (Megatron cpu_offloading_num_layers)

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
        parts += [f"cp{self.cp}"] * (self.cp > 1) + [f"ep{self.ep}"] * (self.ep > 1) + [f"etp{self.etp}"] * (self.etp > 1)
        parts += [f"z{self.zero}"] * (self.zero > 0)
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
        raise FabricsimError(f"unknown precision '{par.precision}': use one of {', '.join(PRECISIONS)}")
    check_recompute(par.recompute)
    if par.dispatcher not in DISPATCHERS:
        raise FabricsimError(f"unknown dispatcher '{par.dispatcher}': use one of {', '.join(DISPATCHERS)}")
    if par.capacity_factor < 0 or par.moe_imbalance < 1:
        raise FabricsimError(f"capacity_factor must be >= 0 (0: dropless) and moe_imbalance >= 1 (got "
                             f"{par.capacity_factor}, {par.moe_imbalance})")
    if par.n_gpus != n_gpus:
        raise FabricsimError(
            f"tp*pp*cp*dp = {par.tp}*{par.pp}*{par.cp}*{par.dp} = {par.n_gpus} but the job has {n_gpus} GPUs: make the product equal the GPU count")
    if par.vp > 1 and par.pp < 2:  # Megatron-Core parallel_state.initialize_model_parallel refuses it
        raise FabricsimError(f"vp={par.vp} interleaves virtual stages over a pipeline, and pp=1 has none ('pipeline-"
                             "model-parallel size should be greater than 1 with interleaved schedule', Megatron-Core): "
                             "give pp 2 or more, or drop vp")
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
    if par.offload_layers < 0:
        raise FabricsimError(f"offload_layers must be >= 0 (got {par.offload_layers})")
    if par.etp < 1:
        raise FabricsimError(f"etp must be at least 1 (got {par.etp})")
    if par.ep > 1 or par.etp > 1:
        if not model.is_moe:
            raise FabricsimError(f"ep={par.ep} / etp={par.etp} need a mixture-of-experts model; {model.name} is dense: use ep=1")
        if model.experts % par.ep:
            raise FabricsimError(f"ep={par.ep} does not divide the {model.experts} experts of {model.name}: use a divisor of {model.experts}")
        stage = par.tp * par.cp * par.dp
        if stage % (par.ep * par.etp):
            raise FabricsimError(
                f"ep*etp = {par.ep}*{par.etp} must divide tp*cp*dp = {stage}, the GPUs of a pipeline stage (Megatron's MoE "
                "parallel folding lays expert groups over them): change ep, etp or dp")
        if model.moe_ffn % par.etp:
            raise FabricsimError(f"etp={par.etp} does not divide the expert width {model.moe_ffn}: use a divisor of it")
    if par.tp > 1 and not par.allow_tp_spill and (par.tp > gpus_per_domain or gpus_per_domain % par.tp):
        raise FabricsimError(
            f"tp={par.tp} does not fit in the {gpus_per_domain}-GPU NVLink domain, so TP traffic would cross the scale-out network: "
            f"use a tp that divides {gpus_per_domain} ({_or(d for d in range(1, gpus_per_domain + 1) if gpus_per_domain % d == 0)}) "
            "and spread the other GPUs over pp and dp")
    if hbm_bytes is not None:
        need = memory_breakdown(model, par)
        if need.total > hbm_bytes:
            raise FabricsimError(over_hbm(need, hbm_bytes, par))



def check_recompute(spec: str) -> None:
    """Raise FabricsimError unless `spec` is none, selective, full or a comma-separated list of recompute modules."""
    if spec in RECOMPUTE:
        return
    bad = [m for m in spec.split(",") if m not in RECOMPUTE_MODULES]
    if bad or not spec:
        raise FabricsimError(f"unknown recompute '{spec}': use none, selective (core attention), full, or a comma-separated "
                             f"list of Megatron recompute modules ({', '.join(RECOMPUTE_MODULES)})")


def over_hbm(need, hbm_bytes: float, par: Parallelism | None = None) -> str:
    """The message for a layout whose memory estimate exceeds the GPU's HBM, with the fixes that apply to `par`:
    ZeRO shards over the data-parallel ranks (dp x cp), so it helps only where there are several; full recompute
    and a smaller micro-batch only where the layout does not have them already."""
    fixes = ["raise tp/pp"]
    if par is None or (par.dp * par.cp > 1 and par.zero < 3):
        fixes.append("use zero 3")
    if par is None or par.recompute != "full":
        fixes.append("use more recompute (--recompute full or a module list)")
    if par is None or par.micro_batch > 1:
        fixes.append("lower micro_batch")
    said = fixes[0] if len(fixes) == 1 else f"{', '.join(fixes[:-1])} or {fixes[-1]}"
    return (f"the layout needs about {need.total / 1e9:.1f} GB per GPU but the GPU has {hbm_bytes / 1e9:.1f} GB "
            f"({(need.total - hbm_bytes) / 1e9:.1f} GB over; {need.text()}): {said}")


def stage_layers(model: ModelSpec, par: Parallelism) -> int:
    """Layers the busiest pipeline rank runs per micro-batch, over its vp virtual stages (`compute.stage_plan`:
    Megatron's even split, embedding and loss counted as layers when that makes 126 layers fill pp x vp = 128, else
    the leading stages one layer more)."""
    plan = stage_plan(model, par.pp, par.vp)
    return max(d + m for d, m in zip(plan.dense, plan.moe))


def params_per_gpu(model: ModelSpec, par: Parallelism) -> float:
    """Parameters held by the first pipeline stage's GPU (which also holds the embedding)."""
    from fabricsim.training.memory import shard_params

    return sum(shard_params(model, par))


def memory_breakdown(model: ModelSpec, par: Parallelism):
    """`training.memory.memory`: HBM of the most loaded GPU as Megatron counts it, by what holds it."""
    from fabricsim.training.memory import memory

    return memory(model, par)


def memory_per_gpu(model: ModelSpec, par: Parallelism) -> float:
    """Bytes of HBM the first pipeline stage needs (`memory_breakdown(...).total`)."""
    return memory_breakdown(model, par).total


def layout_candidates(model: ModelSpec, n_gpus: int, gpus_per_domain: int, *, interleaved: bool = False,
                      **overrides) -> list[Parallelism]:
    """Megatron layouts of `n_gpus` GPUs to try, smallest PP first and for each the smallest TP inside the NVLink
    domain first (TP over NVLink is cheaper than a pipeline bubble, so TP grows first); for a mixture of experts,
    every such layout with EP 1 (Megatron's default) comes before those with larger expert-parallel sizes (a power of
    two dividing the experts, folded over the stage's TP x CP x DP GPUs). With `interleaved`, pipelines also try every
    virtual-stage count vp that splits the layers evenly (or with the embedding and loss as layers). A `tp`, `pp`,
    `ep` or `vp` in `overrides` fixes that size; the other overrides (micro_batch, global_batch, precision, ...) are
    kept."""
    tp, pp, ep, vp = (overrides.pop(k, None) for k in ("tp", "pp", "ep", "vp"))
    tps = [tp] if tp else [t for t in (1, 2, 4, 8, 16, 32, 64, 72)
                           if t <= gpus_per_domain and gpus_per_domain % t == 0 and model.heads % t == 0]
    pps = [pp] if pp else [p for p in range(1, model.layers + 1) if n_gpus % p == 0]
    etp = overrides.get("etp", 1)
    out = []
    for p in pps:
        if vp:
            vps = [vp]
        elif interleaved and p > 1:
            vps = [v for v in range(1, model.layers // p + 1)
                   if v == 1 or model.layers % (p * v) == 0 or (model.layers + 2) % (p * v) == 0]
        else:
            vps = [1]
        for t in tps:
            if n_gpus % (t * p * overrides.get("cp", 1)):
                continue
            for v in vps:
                par = resolve(Parallelism(tp=t, pp=p, vp=v, **overrides), n_gpus, model.seq)
                stage = par.tp * par.cp * par.dp
                powers = (1 << k for k in range(16))
                eps = ([ep] if ep else [e for e in powers if e <= model.experts and not model.experts % e
                                        and not stage % (e * etp)]
                       if model.is_moe else [ep or 1])
                out += [replace(par, ep=e) for e in eps]
    return sorted(out, key=lambda par: par.ep)  # stable: EP 1 layouts first, as without experts


def fitting_layouts(model: ModelSpec, n_gpus: int, gpus_per_domain: int, hbm_bytes: float, *, first: bool = False,
                    interleaved: bool = False, **overrides) -> list[Parallelism]:
    """The `layout_candidates` that pass `validate` (fit in HBM, split the batch, spread evenly over NVLink domains,
    ...), in the same order (`first`: stop at the first); none fitting is a FabricsimError naming the rule the least
    memory-hungry candidate broke."""
    fits, failed = [], []
    candidates = layout_candidates(model, n_gpus, gpus_per_domain, interleaved=interleaved, **overrides)
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


def _expert_grid(par: Parallelism) -> np.ndarray:
    """Megatron rank of every (pp, edp, ep, etp) coordinate: Megatron-Core's expert RankGenerator ('tp-ep-dp-pp' with
    etp in tp's place) lays the expert groups over each pipeline stage's tp x cp x dp ranks (MoE parallel folding)."""
    stage = par.tp * par.cp * par.dp
    return np.arange(par.n_gpus, dtype=np.int64).reshape(par.pp, stage // (par.ep * par.etp), par.ep, par.etp)


def ep_groups(par: Parallelism) -> np.ndarray:
    """Expert-parallel groups: ranks at stride etp inside each pipeline stage (consecutive when etp = 1)."""
    return _expert_grid(par).transpose(0, 1, 3, 2).reshape(-1, par.ep)


def expert_dp_groups(par: Parallelism) -> np.ndarray:
    """Ranks holding the same expert shard, which reduce its gradients together."""
    g = _expert_grid(par)
    return g.transpose(0, 2, 3, 1).reshape(-1, g.shape[1])


def pp_pairs(par: Parallelism) -> np.ndarray:
    """(sender, receiver) of every stage boundary; interleaving adds the last -> first wrap."""
    g = _grid(par).reshape(par.pp, -1)
    nxt = np.roll(g, -1, axis=0)
    stages = par.pp if par.vp > 1 and par.pp > 1 else par.pp - 1
    return np.stack([g[:stages].ravel(), nxt[:stages].ravel()], axis=1)


def _or(values) -> str:
    """'1, 2, 4 or 8'."""
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
