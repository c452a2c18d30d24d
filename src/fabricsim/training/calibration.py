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

import json
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
    if not row.get("micro_batch") or not row.get("global_batch"):
        return "micro or global batch size not published"
    precision = "fp8" if "fp8" in str(row.get("precision") or "").lower() else "bf16"
    common = dict(micro_batch=row["micro_batch"], global_batch=row["global_batch"], precision=precision)
    if row.get("fsdp"):
        full = "activation checkpointing=true" in str(row.get("notes", "")).lower()
        return P.Parallelism(dp=n, zero=3, recompute="full" if full else "none", **common)
    if row.get("tp") is None or row.get("pp") is None:
        return "parallel layout (tp/pp) not published"
    tp, pp, cp = int(row["tp"]), int(row["pp"]), int(row.get("cp") or 1)
    return P.Parallelism(tp=tp, pp=pp, cp=cp, dp=n // (tp * pp * cp), ep=int(row.get("ep") or 1), vp=int(row.get("vp") or 1),
                         zero=1, recompute="none", tp_overlap=tp > 1, **common)


def _compare(row: dict, comm_factory: Callable[[Topology], CommModel]) -> CalibrationRow:
    rid = row.get("id", "?")
    hw = row.get("hardware") or {}
    key = _model_key(str(row.get("model", "")))
    if key not in MODELS:
        return CalibrationRow(rid, "", None, None, f"model '{row.get('model')}' has no published architecture in fabricsim")
    try:
        gpu_name = hardware.get_gpu(str(hw.get("gpu", ""))).name
    except FabricsimError:
        return CalibrationRow(rid, "", None, None, f"GPU '{hw.get('gpu')}' is not in the hardware catalog")
    if gpu_name not in PRESET_FOR_GPU:
        return CalibrationRow(rid, "", None, None, f"no preset server for the {gpu_name} in the training calibration")
    n = int(hw.get("total_gpus") or row.get("total_gpus") or 0)
    par = _layout(row, n)
    if isinstance(par, str):
        return CalibrationRow(rid, "", None, None, par)
    if row.get("tokens_per_s_per_gpu"):
        metric, measured = "tokens/s/GPU", float(row["tokens_per_s_per_gpu"])
    elif row.get("tflops_per_gpu"):
        metric, measured = "TFLOP/s/GPU", float(row["tflops_per_gpu"])
    elif row.get("mfu"):
        metric, measured = "MFU", float(row["mfu"])
    else:
        return CalibrationRow(rid, "", None, None, "no throughput measurement in the row")
    model = replace(MODELS[key], seq=int(row.get("seq") or MODELS[key].seq))
    try:
        P.validate(model, par, n, int(hw.get("gpus_per_node") or 8))
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
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as err:
        raise FabricsimError(f"cannot read calibration file {path}: {err.strerror}; check the path") from None
    rows = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise FabricsimError(f"{path} line {i}: not valid JSON ({err.msg}); fix the line") from None
        if row.get("kind") == "training":
            rows.append(_compare(row, comm_factory))
    return rows


def median_error(rows: list[CalibrationRow]) -> float:
    """Median absolute % error over the compared rows."""
    errors = [r.error_pct for r in rows if r.error_pct is not None]
    if not errors:
        raise FabricsimError("no calibration row could be compared: check the file has training rows with layouts")
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
