"""Predicted vs measured training throughput for the `kind == 'training'` rows of a calibration file.

Each row is compared on the quantity it publishes, in its own convention: tokens/s per GPU when given
(independent of FLOP conventions), else model TFLOP/s per GPU (NeMo: megatron convention at the
run's precision), else MFU (MosaicML counts all parameters incl. embeddings plus attention, 'mosaic').
Layouts follow each framework's documented settings:
- NeMo / Megatron-Core rows: the row's tp/pp/cp/dp/vp, distributed optimizer (ZeRO-1), sequence parallel
  and TP comm overlap when tp > 1, no activation recompute (NeMo-Framework-Launcher training configs:
  `optim.name: distributed_fused_adam`, `sequence_parallel: true`, `ub_tp_comm_overlap: true`,
  `activations_checkpoint_granularity: null`).
- MosaicML rows: FSDP FULL_SHARD over all GPUs (ZeRO-3), full recompute when the row's notes say
  "Activation checkpointing=True".
The memory check is skipped: these runs are known to fit. Rows without a layout, batch or measurement are
skipped with the reason.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from fabricsim import hardware, topology
from fabricsim.errors import FabricsimError
from fabricsim.topology.model import Topology
from fabricsim.training import parallel as P
from fabricsim.training.models import MODELS
from fabricsim.training.step import CommModel, step_time
from fabricsim.training.sweep import cluster_topology
from fabricsim.validation.calibration import field, load_rows, row_error

# Catalog GPU -> the preset of its documented node (DGX H100: 8 x CX-7 NDR 400G; DGX A100: 8 x 200G, the same
# 1,600 Gb/s per node as MosaicML's RoCE A100 clusters), with the row's GPU variant swapped in.
PRESET_FOR_GPU = {"H100": "dgx-h100", "A100-80GB": "dgx-a100", "A100-40GB": "dgx-a100"}


@dataclass(frozen=True)
class CalibrationRow:
    id: str
    metric: str  # 'tokens/s/GPU' | 'TFLOP/s/GPU' | 'MFU' ('' when skipped)
    measured: float | None
    predicted: float | None
    skipped: str = ""  # reason, empty when compared

    @property
    def error_pct(self) -> float | None:
        """Absolute percentage error of the prediction."""
        if self.predicted is None or not self.measured:
            return None
        return abs(self.predicted - self.measured) / self.measured * 100


def _alnum(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_MODEL_KEYS = {_alnum(k): k for k in MODELS}


def _model_key(name: str) -> str:
    """Built-in model name for a row's model text ('GPT-3 175B' -> 'gpt3-175b'); '' if none matches."""
    return _MODEL_KEYS.get(_alnum(name), "")


def _layout(row: dict, n: int) -> P.Parallelism | str:
    """The row's Parallelism, or the reason it cannot be built."""
    micro, batch = field(row, "micro_batch", "count", None), field(row, "global_batch", "count", None)
    if not micro or not batch:
        return "micro or global batch size not published"
    text = field(row, "precision", "text", "").lower()
    precision = "fp8" if "fp8" in text else "bf16" if "bf16" in text or not text else None
    if precision is None:
        return f"precision '{text}' is not modelled: fabricsim times bf16 and fp8"
    common = dict(micro_batch=micro, global_batch=batch, precision=precision)
    dp = field(row, "dp", "count", None)
    if row.get("fsdp"):
        if dp not in (None, n):
            return f"dp {dp} but FSDP shards over all {n} GPUs: fix dp or total_gpus"
        full = "activation checkpointing=true" in field(row, "notes", "text", "").lower()
        return P.Parallelism(dp=n, zero=3, recompute="full" if full else "none", **common)
    tp, pp = field(row, "tp", "count", None), field(row, "pp", "count", None)
    if tp is None or pp is None:
        return "parallel layout (tp/pp) not published"
    cp = field(row, "cp", "count", 1)
    if n % (tp * pp * cp) or dp not in (None, n // (tp * pp * cp)):
        return (f"tp*pp*cp*dp = {tp}*{pp}*{cp}*{dp or '?'} does not match the {n} GPUs: fix the layout or total_gpus")
    return P.Parallelism(tp=tp, pp=pp, cp=cp, dp=n // (tp * pp * cp), ep=field(row, "ep", "count", 1),
                         vp=field(row, "vp", "count", 1), zero=1, recompute="none", tp_overlap=tp > 1, **common)


def _compare(row: dict, comm_factory: Callable[[Topology], CommModel]) -> CalibrationRow:
    rid = str(row.get("id", "?"))
    hw = field(row, "hardware", "object", {})
    key = _model_key(field(row, "model", "text", ""))
    if key not in MODELS:
        return CalibrationRow(rid, "", None, None, f"model '{row.get('model')}' has no published architecture in fabricsim")
    try:
        gpu_name = hardware.get_gpu(field(row, "hardware.gpu", "text", "")).name
    except FabricsimError:
        return CalibrationRow(rid, "", None, None, f"GPU '{hw.get('gpu')}' is not in the hardware catalog")
    if gpu_name not in PRESET_FOR_GPU:
        return CalibrationRow(rid, "", None, None, f"no preset server for the {gpu_name} in the training calibration")
    n = field(row, "hardware.total_gpus" if hw.get("total_gpus") is not None else "total_gpus", "count")
    par = _layout(row, n)
    if isinstance(par, str):
        return CalibrationRow(rid, "", None, None, par)
    for name, metric in (("tokens_per_s_per_gpu", "tokens/s/GPU"), ("tflops_per_gpu", "TFLOP/s/GPU"), ("mfu", "MFU")):
        if measured := float(field(row, name, "measure", 0)):  # the first published quantity, in that order
            break
    else:
        return CalibrationRow(rid, "", None, None, "no throughput measurement above zero in the row")
    model = replace(MODELS[key], seq=field(row, "seq", "count", MODELS[key].seq))
    try:
        P.validate(model, par, n, field(row, "hardware.gpus_per_node", "count", 8))
        spec = topology.load_spec(PRESET_FOR_GPU[gpu_name], gpus=n)
        topo = cluster_topology(replace(spec, gpu=gpu_name), n)
        r = step_time(model, par, hardware.get_gpu(gpu_name), comm_factory(topo))
    except FabricsimError as err:
        return CalibrationRow(rid, metric, measured, None, f"cannot model: {err}")
    if metric == "tokens/s/GPU":
        predicted = r.tokens_per_s / n
    elif metric == "TFLOP/s/GPU":
        predicted = r.tflops_per_gpu
    else:
        convention = "mosaic" if row.get("fsdp") else "megatron"
        peak = hardware.get_gpu(gpu_name).bf16_flops
        predicted = model.flops_per_token(convention=convention) * r.tokens_per_s / n / peak
    return CalibrationRow(rid, metric, measured, predicted)


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
        why = "; ".join(f"{r.id}: {r.skipped}" for r in rows[:3]) + ("; ..." if len(rows) > 3 else "")
        raise FabricsimError(f"no calibration row could be compared ({f'skipped {why}' if rows else 'no training rows'}): "
                             "check the file has training rows with layouts")
    return statistics.median(errors)


def format_rows(rows: list[CalibrationRow]) -> str:
    """Per-row measured vs predicted and the median error, as a text table."""
    lines = [f"{'id':<52} {'metric':<13} {'measured':>10} {'predicted':>10} {'err%':>6}"]
    for r in rows:
        if r.error_pct is None:
            continue
        lines.append(f"{r.id[:52]:<52} {r.metric:<13} {r.measured:>10.4g} {r.predicted:>10.4g} {r.error_pct:>6.1f}")
    compared = [r.error_pct for r in rows if r.error_pct is not None]
    lines.append(f"compared {len(compared)} rows, median absolute error {median_error(rows):.1f}%, "
                 f"p90 {sorted(compared)[int(0.9 * (len(compared) - 1))]:.1f}%")
    for r in rows:
        if r.skipped:
            lines.append(f"skipped {r.id}: {r.skipped}")
    return "\n".join(lines)
