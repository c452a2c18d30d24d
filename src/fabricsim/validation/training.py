"""Predicted vs measured training throughput for the `kind == 'training'` rows of a calibration file.

Each row is compared on the quantity it publishes, in its own convention: tokens/s per GPU when given
(independent of FLOP conventions), else model TFLOP/s per GPU, else MFU, each counted as its source counts it
(NeMo and Megatron: 'megatron'; Megatron-Bridge: 'megatron-bridge'; Narayanan et al. 2021: 'narayanan', which
includes the recomputed forward; MosaicML: 'mosaic', all parameters plus attention).
Layouts follow each framework's documented settings:
- NeMo 24.07 rows: the row's tp/pp/cp/dp/vp, distributed optimizer (ZeRO-1), sequence parallel and TP comm overlap
  when tp > 1, no activation recompute (NeMo-Framework-Launcher training configs: `optim.name:
  distributed_fused_adam`, `sequence_parallel: true`, `ub_tp_comm_overlap: true`, `activations_checkpoint_granularity:
  null`).
- Megatron-Bridge rows (scripts/performance of NVIDIA-NeMo/Megatron-Bridge): the row's layout, the distributed
  optimizer with overlapped gradient reduce and parameter gather, BF16 gradient reduction (`grad_reduce_in_fp32 =
  False`), sequence parallel and TP comm overlap when tp > 1 (off for NVFP4, as `llama3_llm_pretrain.py` sets),
  Megatron-FSDP (ZeRO-3) when the row's FSDP column is set, the recompute each recipe and performance config sets
  (`BRIDGE_RECOMPUTE`: none where the recipe's `recompute_granularity` is None, else exactly the configs'
  `recompute_modules`, which replace Megatron-Core's default ['core_attn']), MoE: expert tensor parallel 1, the token
  dispatcher the configs set (`BRIDGE_DISPATCHER`), CPU activation offloading with Megatron-FSDP as those configs set
  it (`BRIDGE_OFFLOAD`), dropless and force-balanced routing (the performance summary's footnote), the all-to-all not
  overlapped (`moe_a2a_overlap = False`), FP8 parameter gather for FP8 and MXFP8.
- Megatron-LM README rows: no layout is published (a figure only), so fabricsim's layout search picks one as a user
  would (`--search`), micro-batch 1 (Megatron-Bridge's and Megatron-LM's example default), the README's overlaps
  (`--overlap-grad-reduce --overlap-param-gather --tp-comm-overlap`) and the distributed optimizer.
- Narayanan et al. 2021 rows: the run scripts of that paper (Megatron-LM examples/academic_paper_scripts/sc21):
  `--activations-checkpoint-method uniform` (full recompute), no distributed optimizer, no overlapped reduction, TP
  all-reduces (sequence parallelism came a year later, Korthikanti et al. 2022),
  micro-batch 1 for the largest models; the 1T run's layout and batch from run_table_1.sh.
- MosaicML rows: FSDP FULL_SHARD over all GPUs (ZeRO-3) gathering BF16 weights, full recompute when the row's notes
  say "Activation checkpointing=True".
The memory check is skipped: these runs are known to fit (the estimate is printed beside each row). Rows without a
layout the sources publish, a batch or a measurement are skipped with the reason.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from fabricsim import hardware
from fabricsim.errors import FabricsimError
from fabricsim.topology.model import Topology
from fabricsim.training import parallel as P
from fabricsim.training.efficiency import family
from fabricsim.training.models import MODELS
from fabricsim.training.step import CommModel, step_time
from fabricsim.training.sweep import cluster_topology, comm_for, fastest_layout
from fabricsim.validation.calibration import field, load_rows, row_error

# Catalog GPU -> the preset of its documented system (DGX H100: 8 x CX-7 NDR 400G; DGX A100: 8 x 200G, the same
# 1,600 Gb/s per node as MosaicML's RoCE A100 clusters; DGX B200 / B300; GB200 / GB300 NVL72 racks, of which a
# 64-GPU job uses 16 trays of one rack), with the row's GPU variant swapped in.
PRESET_FOR_GPU = {"H100": "dgx-h100", "A100-80GB": "dgx-a100", "A100-40GB": "dgx-a100", "B200": "dgx-b200",
                  "B300": "dgx-b300", "GB200": "gb200-nvl72", "GB300": "gb300-nvl72"}

# Model names in the rows that are not the built-in name spelled differently.
MODEL_ALIASES = {
    "gpt3175bslightly175bvocab131072": "gpt3-175b-v131k",  # Megatron-LM README strong-scaling model
    "gpt1t1008b": "gpt-1t",  # Narayanan et al. 2021 Table 1
    "deepseekv3dropless": "deepseek-v3",  # the same architecture, trained without token dropping
}

# Megatron-Bridge's MoE token dispatcher: (model, GPU prefix) -> dispatcher, '' matching any GPU. DeepSeek-V3:
# recipes/deepseek/deepseek_v3.py moe_flex_dispatcher_backend = "hybridep", kept by the performance configs. GPT-OSS:
# the provider's moe_token_dispatcher_type = "alltoall"; on B300 and B200 the V2 configs that set the EP 8 of the
# 26.02.01 table also set moe_flex_dispatcher_backend = "hybridep" (scripts/performance/configs/gpt_oss/
# gpt_oss_workload_base_configs.py, commit 7260d6214 'perf optimizations- GPT-OSS 120B'; the table's own commit still
# has EP 64 there).
BRIDGE_DISPATCHER = {("deepseek-v3", ""): "hybridep", ("gpt-oss-120b", "B300"): "hybridep",
                     ("gpt-oss-120b", "B200"): "hybridep"}
# CPU activation offloading of Megatron-Bridge's Llama 3 70B FSDP configs (llama3_workload_base_configs.py:
# cpu_offloading_num_layers): (model, GPU, precision) -> layers.
BRIDGE_OFFLOAD = {("llama3-70b", "GB300", "fp8"): 20, ("llama3-70b", "GB200", "fp8"): 40, ("llama3-70b", "B200", "fp8"): 5,
                  ("llama3-70b", "GB300", "bf16"): 30, ("llama3-70b", "GB200", "bf16"): 20}
# Recompute of Megatron-Bridge's runs: (model, GPU prefix) -> fabricsim recompute, '' matching any GPU. The recipes
# (src/megatron/bridge/recipes/llama/llama3.py, gpt_oss/gpt_oss.py) set recompute_granularity = None: no recompute;
# DeepSeek-V3's recipe sets "selective". The performance configs (scripts/performance/configs/*/
# *_workload_base_configs.py) that give recompute_modules switch to "selective" with exactly those modules
# (utils/overrides.py _set_recompute_overrides), replacing Megatron-Core's default ['core_attn']
# (TransformerConfig.__post_init__): GPT-OSS ["layernorm", "moe_act"] on GB200, B200 and H100 (none on GB300 and
# B300), DeepSeek-V3 ["mla_up_proj"] on Blackwell and ["mla_up_proj", "mlp"] on H100.
BRIDGE_RECOMPUTE = {("llama3-70b", ""): "none",
                    ("deepseek-v3", "H100"): "mla_up_proj,mlp", ("deepseek-v3", ""): "mla_up_proj",
                    ("gpt-oss-120b", "GB200"): "layernorm,moe_act", ("gpt-oss-120b", "B200"): "layernorm,moe_act",
                    ("gpt-oss-120b", "H100"): "layernorm,moe_act", ("gpt-oss-120b", ""): "none"}

# Megatron-Bridge rows whose table columns disagree with the performance config that produced them (the summary:
# "These results were obtained using performance recipes available [in scripts/performance]"): the config's layout is
# modelled and the row says what the table records. Llama 3 70B on GB300 in MXFP8 and NVFP4:
# LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_MX_V2 and _NVFP4_V2 (scripts/performance/configs/llama/
# llama3_workload_base_configs.py) set pp 4, vp 5 and WorkloadBaseConfig's default micro-batch 1, without FSDP, at the
# commit that published the 26.02.01 table (cfeddcd94) as at v0.3.0 and v0.3.1; the table's micro-batch 2 without
# interleaving (NVFP4: pp 1 without FSDP) needs more HBM than a GB300 has by Megatron's own count.
# (model, GPU, precision) -> (layout fields, source).
BRIDGE_CONFIG_LAYOUT = {
    (model, "GB300", prec): (dict(tp=1, pp=4, vp=5, micro_batch=1, fsdp=0, dp=None),
                             f"LLAMA3_70B_PRETRAIN_CONFIG_GB300_{cfg}_V2 (Megatron-Bridge cfeddcd94)")
    for model, prec, cfg in (("llama3-70b", "mxfp8", "FP8_MX"), ("llama3-70b", "nvfp4", "NVFP4"))
}

# Runs whose layout and batch their paper's scripts publish but the row does not carry: model -> settings.
PUBLISHED_RUNS = {
    "gpt-1t": (dict(tp=8, pp=64, micro_batch=1, global_batch=3072),
               "Megatron-LM examples/academic_paper_scripts/sc21/run_table_1.sh, MODEL_SIZE=1T"),
}


@dataclass(frozen=True)
class CalibrationRow:
    id: str
    metric: str  # 'tokens/s/GPU' | 'TFLOP/s/GPU' | 'MFU' ('' when skipped)
    measured: float | None
    predicted: float | None
    skipped: str = ""  # reason, empty when compared
    group: str = ""  # 'dense|moe family precision'
    layout: str = ""
    memory_gb: float = 0.0
    hbm_gb: float = 0.0
    note: str = ""  # how the modelled run differs from the row's columns, and why
    unmeasured: str = ""  # why the row has nothing to compare (not a refusal)

    @property
    def error_pct(self) -> float | None:
        """Absolute percentage error of the prediction."""
        if self.predicted is None or not self.measured:
            return None
        return abs(self.predicted - self.measured) / self.measured * 100


def _alnum(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_MODEL_KEYS = {_alnum(k): k for k in MODELS} | MODEL_ALIASES


def _model_key(name: str) -> str:
    """Built-in model name for a row's model text ('GPT-3 175B' -> 'gpt3-175b'); '' if none matches."""
    return _MODEL_KEYS.get(_alnum(name), "")


def _precision(text: str) -> str | None:
    """fabricsim precision of a row's precision text ('MXFP8', 'FP8 (... blockwise)', 'amp_bf16', ...)."""
    t = text.lower()
    if "nvfp4" in t:
        return "nvfp4"
    if "mxfp8" in t:
        return "mxfp8"
    if "fp8" in t:
        return "fp8-block" if "block" in t else "fp8"
    if "bf16" in t or "fp16" in t or not t:
        return "bf16"
    return None


def _framework(row: dict) -> str:
    rid, source = str(row.get("id", "")), str(row.get("source", ""))
    framework = str(row.get("framework") or "")
    if "Megatron-Bridge" in framework or "Megatron-Bridge" in source:
        return "megatron-bridge"
    if row.get("fsdp") == "FULL_SHARD" or "mosaicml" in source:
        return "mosaic"
    if "2104.04473" in source or "narayanan" in rid:
        return "narayanan"
    if "NeMo" in source:
        return "nemo"
    return "megatron"


CONVENTION = {"megatron-bridge": "megatron-bridge", "mosaic": "mosaic", "narayanan": "narayanan", "nemo": "megatron",
              "megatron": "megatron"}


def _bridge_setting(table: dict[tuple[str, str], str], key: str, gpu: str, default: str) -> str:
    """A per-(model, GPU) Megatron-Bridge setting, the model's any-GPU entry, or `default`."""
    return table.get((key, gpu), table.get((key, ""), default))


def _config_layout(row: dict, key: str, precision: str) -> tuple[dict, str]:
    """(the layout fields the row's Megatron-Bridge config ran, a note saying so), or ({}, '') when the row's columns
    are what ran (`BRIDGE_CONFIG_LAYOUT`)."""
    gpu = str(field(row, "hardware.gpu", "text", "")).split("-")[0].upper()
    fields_, source = BRIDGE_CONFIG_LAYOUT.get((key, gpu, precision), ({}, ""))
    if not fields_:
        return {}, ""
    recorded = ", ".join(f"{k} {row.get(k) if row.get(k) is not None else 'n/a'}" for k, v in fields_.items() if v is not None)
    return fields_, f"modelled as its config ran ({source}); the table records {recorded}"


def _layout(row: dict, n: int, key: str, fw: str) -> P.Parallelism | dict | str:
    """The row's Parallelism; the settings of a layout search (a dict) when no layout is published; or the reason it
    cannot be built."""
    text = field(row, "precision", "text", "")
    precision = _precision(text)
    if precision is None:
        return f"precision '{text.lower()}' is not modelled: fabricsim times {', '.join(P.PRECISIONS)}"
    row = dict(row, **_config_layout(row, key, precision)[0]) if fw == "megatron-bridge" else row
    micro, batch = field(row, "micro_batch", "count", None), field(row, "global_batch", "count", None)
    tp, pp = field(row, "tp", "count", None), field(row, "pp", "count", None)
    published = PUBLISHED_RUNS.get(key, ({}, ""))[0] if fw == "narayanan" else {}
    tp, pp = tp or published.get("tp"), pp or published.get("pp")
    batch = batch or published.get("global_batch")
    if fw in ("megatron", "narayanan"):
        micro = micro or published.get("micro_batch", 1)
    if not micro or not batch:
        return "micro or global batch size not published"
    common = dict(micro_batch=micro, global_batch=batch, precision=precision)
    dp = field(row, "dp", "count", None)
    if fw == "mosaic":
        if dp not in (None, n):
            return f"dp {dp} but FSDP shards over all {n} GPUs: fix dp or total_gpus"
        full = "activation checkpointing=true" in field(row, "notes", "text", "").lower()
        return P.Parallelism(dp=n, zero=3, recompute="full" if full else "none", fp8_param_gather=False, **common)
    settings = dict(**common, zero=1, dp_overlap=True)
    if fw == "megatron-bridge":
        fsdp = row.get("fsdp")
        gpu = str(field(row, "hardware.gpu", "text", "")).split("-")[0].upper()
        settings.update(grad_fp32=False, recompute=_bridge_setting(BRIDGE_RECOMPUTE, key, gpu, "selective"), etp=1,
                        offload_layers=BRIDGE_OFFLOAD.get((key, gpu, precision), 0) if fsdp else 0,
                        zero=3 if isinstance(fsdp, int) and fsdp > 0 else 1,
                        dispatcher=_bridge_setting(BRIDGE_DISPATCHER, key, gpu, "alltoall"))
    elif fw == "nemo":
        settings.update(recompute="none")
    elif fw == "narayanan":  # before sequence parallelism (Korthikanti et al. 2022): TP all-reduces
        settings.update(recompute="full", zero=0, dp_overlap=False, sequence_parallel=False)
    else:  # Megatron-LM README
        settings.update(recompute="selective")
    if tp is None or pp is None:
        if fw == "megatron":
            return dict(settings, tp_overlap=True)
        return "parallel layout (tp/pp) not published"
    cp = field(row, "cp", "count", 1)
    if n % (tp * pp * cp) or dp not in (None, n // (tp * pp * cp)):
        return f"tp*pp*cp*dp = {tp}*{pp}*{cp}*{dp or '?'} does not match the {n} GPUs: fix the layout or total_gpus"
    overlap = tp > 1 and fw != "narayanan" and not (fw == "megatron-bridge" and precision == "nvfp4")
    return P.Parallelism(tp=tp, pp=pp, cp=cp, dp=n // (tp * pp * cp), ep=field(row, "ep", "count", 1),
                         vp=field(row, "vp", "count", 1), tp_overlap=overlap, **settings)


def _measured(row: dict) -> tuple[str, float]:
    """The first published quantity above zero: (metric, value), or ('', 0)."""
    for name, metric in (("tokens_per_s_per_gpu", "tokens/s/GPU"), ("tflops_per_gpu", "TFLOP/s/GPU"), ("mfu", "MFU")):
        if value := float(field(row, name, "measure", 0)):
            return metric, value
    return "", 0.0


def _compare(row: dict, comm_factory: Callable[[Topology], CommModel]) -> CalibrationRow:
    rid = str(row.get("id", "?"))
    hw = field(row, "hardware", "object", {})
    key = _model_key(field(row, "model", "text", ""))
    if not _measured(row)[0]:  # nothing to compare: not a refusal
        reported = field(row, "mfu_reported", "text", "")
        what = f" (its MFU is given only as '{reported}')" if reported else ""
        arch = "" if key in MODELS else f"; model '{row.get('model')}' has no published architecture in fabricsim either"
        return CalibrationRow(rid, "", None, None, unmeasured=f"the row publishes no throughput number{what}{arch}")
    if key not in MODELS:
        return CalibrationRow(rid, "", None, None, f"model '{row.get('model')}' has no published architecture in fabricsim")
    try:
        gpu = hardware.get_gpu(field(row, "hardware.gpu", "text", ""))
    except FabricsimError:
        return CalibrationRow(rid, "", None, None, f"GPU '{hw.get('gpu')}' is not in the hardware catalog")
    if gpu.name not in PRESET_FOR_GPU:
        return CalibrationRow(rid, "", None, None, f"no preset server for the {gpu.name} in the training calibration")
    n = field(row, "hardware.total_gpus" if hw.get("total_gpus") is not None else "total_gpus", "count")
    fw = _framework(row)
    par = _layout(row, n, key, fw)
    if isinstance(par, str):
        return CalibrationRow(rid, "", None, None, par)
    metric, measured = _measured(row)
    model = replace(MODELS[key], seq=field(row, "seq", "count", MODELS[key].seq))
    group = f"{'moe' if model.is_moe else 'dense'} {family(gpu)} {par.precision if isinstance(par, P.Parallelism) else par['precision']}"
    try:
        from fabricsim import topology

        spec = topology.load_spec(PRESET_FOR_GPU[gpu.name])
        topo = cluster_topology(replace(spec, gpu=gpu.name), n)
        comm = comm_for(comm_factory, topo, n)
        if isinstance(par, dict):  # no published layout: the fastest one that fits, as `train --search` would pick
            r = fastest_layout(model, n, topo, comm, **par)
        else:
            P.validate(model, par, n, int(topo.features.get("gpus_per_domain", 8)))
            r = step_time(model, par, gpu, comm)
    except FabricsimError as err:
        return CalibrationRow(rid, metric, measured, None, f"cannot model: {err}", group)
    convention = CONVENTION[fw]
    if metric == "tokens/s/GPU":
        predicted = r.tokens_per_s / n
    else:
        tflops = model.flops_per_token(convention=convention) * r.tokens_per_s / n
        predicted = tflops / 1e12 if metric == "TFLOP/s/GPU" else tflops / gpu.bf16_flops
    note = _config_layout(row, key, r.parallelism.precision)[1] if fw == "megatron-bridge" else ""
    return CalibrationRow(rid, metric, measured, predicted, "", group, r.layout, r.memory.total / 1e9 if r.memory else 0.0,
                          gpu.hbm_bytes / 1e9, note)


def calibration_rows(path: str | Path, comm_factory: Callable[[Topology], CommModel] | None = None) -> list[CalibrationRow]:
    """Measured vs predicted for every training row of a measurements.jsonl file (skipped rows say why)."""
    if comm_factory is None:
        from fabricsim.training.comm import engine_comm_model as comm_factory
    rows = []
    for row in load_rows(path):
        if row.get("kind") == "training":
            try:
                rows.append(_compare(row, comm_factory))
            except FabricsimError as err:
                raise row_error(row, err) from None
    return rows


def median_error(rows: list[CalibrationRow]) -> float:
    """Median absolute % error over the compared rows."""
    errors = [r.error_pct for r in rows if r.error_pct is not None]
    if not errors:
        why = "; ".join(f"{r.id}: {r.skipped or r.unmeasured}" for r in rows[:3]) + ("; ..." if len(rows) > 3 else "")
        raise FabricsimError(f"no calibration row could be compared ({f'skipped {why}' if rows else 'no training rows'}): "
                             "check the file has training rows with layouts")
    return statistics.median(errors)


def p90_error(rows: list[CalibrationRow]) -> float:
    """90th-percentile absolute % error over the compared rows, as the collective and log tables compute it
    (numpy's linear interpolation; the nearest rank below put a 2-row group's p90 under its median)."""
    errors = [r.error_pct for r in rows if r.error_pct is not None]
    return float(np.percentile(errors, 90)) if errors else float("nan")


def group_summary(rows: list[CalibrationRow]) -> list[tuple[str, int, float, float]]:
    """(group, rows, median %, p90 %) per dense/MoE x GPU family x precision, then over all rows."""
    groups: dict[str, list[CalibrationRow]] = {}
    for r in rows:
        if r.error_pct is not None:
            groups.setdefault(r.group, []).append(r)
    out = [(g, len(rs), median_error(rs), p90_error(rs)) for g, rs in sorted(groups.items())]
    compared = [r for r in rows if r.error_pct is not None]
    if compared:
        out.append(("all", len(compared), median_error(compared), p90_error(compared)))
    return out


def format_rows(rows: list[CalibrationRow]) -> str:
    """Per-row measured vs predicted, the per-group summary and the skipped rows, as text."""
    lines = [f"{'id':<52} {'metric':<13} {'measured':>10} {'predicted':>10} {'err%':>6}  {'memory/HBM GB':>13}  layout"]
    for r in rows:
        if r.error_pct is None:
            continue
        mem = f"{r.memory_gb:.0f}/{r.hbm_gb:.0f}" + ("!" if r.memory_gb > r.hbm_gb else "")
        lines.append(f"{r.id[:52]:<52} {r.metric:<13} {r.measured:>10.4g} {r.predicted:>10.4g} {r.error_pct:>6.1f}  "
                     f"{mem:>13}  {r.layout}")
    compared = [r.error_pct for r in rows if r.error_pct is not None]
    skipped = [r for r in rows if r.skipped]
    unmeasured = [r for r in rows if r.unmeasured]
    lines.append(f"compared {len(compared)} rows, median absolute error {median_error(rows):.1f}%, "
                 f"p90 {p90_error(rows):.1f}%; {len(unmeasured)} without a measurement; skipped {len(skipped)}")
    lines.append(f"{'group (model, GPU family, precision)':<40} {'rows':>4} {'median%':>8} {'p90%':>6}")
    for g, count, med, p90 in group_summary(rows):
        lines.append(f"{g:<40} {count:>4} {med:>8.1f} {p90:>6.1f}")
    for r in rows:
        if r.note:
            lines.append(f"note {r.id}: {r.note}")
    for r in unmeasured:
        lines.append(f"no measurement {r.id}: {r.unmeasured}")
    for r in skipped:
        lines.append(f"skipped {r.id}: {r.skipped}")
    return "\n".join(lines)
