"""`fabricsim validate`: predict every calibration measurement and print the error, row by row and per family."""

from __future__ import annotations

import json
import math

import click

from fabricsim.calibration_data import default_path
from fabricsim.errors import FabricsimError
from fabricsim.validation.training import calibration_rows, format_rows
from fabricsim.training.comm import engine_comm_model
from fabricsim.validation.accuracy import run, summary
from fabricsim.validation.calibration import load_rows
from fabricsim.validation.p2p import p2p_table, run_p2p


def _pct(x: float) -> str:
    """'  12.3%', or '      -' where a group has no rows (nan)."""
    return f"{x:>7.1f}%" if math.isfinite(x) else f"{'-':>8}"


def _finite(x):
    """x, or None for nan (JSON has no NaN)."""
    return x if not isinstance(x, float) or math.isfinite(x) else None


def accuracy_table(preds, skipped, show_rows: bool = True) -> str:
    """Per-row and aggregate error table (text)."""
    lines = []
    if show_rows:
        lines.append(f"{'id':<46} {'coll':<14} {'GPUs':>5} {'metric':<6} {'measured':>9} {'fabricsim':>9} {'err%':>6} "
                     f"{'pick':<20} {'nccl-model':>10} {'err%':>6}")
        for p in sorted(preds, key=lambda p: p.case.id):
            c = p.case
            nccl = f"{p.nccl_predicted:>10.1f} {p.nccl_error:>6.1f}" if p.nccl_predicted is not None else f"{'-':>10} {'-':>6}"
            lines.append(f"{c.id[:46]:<46} {c.collective:<14} {len(c.ranks):>5} {c.metric:<6} {c.measured:>9.2f} "
                         f"{p.predicted:>9.2f} {p.error:>6.1f} {p.algo + '/' + p.proto:<20} {nccl}")
        lines.append("")
    lines.append("accuracy: absolute % error of busbw (time for latency rows)")
    lines.append(f"{'family':<10} {'rows':>5} {'median':>8} {'p90':>8}   {'nccl rows':>9} {'median':>8} {'p90':>8}")
    for fam, n, med, p90, nn, nmed, np90 in summary(preds):
        lines.append(f"{fam:<10} {n:>5} {_pct(med)} {_pct(p90)}   {nn:>9} {_pct(nmed)} {_pct(np90)}")
    if skipped:
        lines.append("")
        lines.append(f"skipped {len(skipped)} rows:")
        reasons: dict[str, int] = {}
        for s in skipped:
            reasons[s.reason] = reasons.get(s.reason, 0) + 1
        for reason, k in sorted(reasons.items()):
            lines.append(f"  {k:>3} x {reason}")
    return "\n".join(lines)


@click.command("validate")
@click.option("--data", default=None, help="measurements.jsonl (default: ../shared/calibration beside the checkout).")
@click.option("--level", default="flow", show_default=True, type=click.Choice(["flow", "analytical"]))
@click.option("--format", "fmt", default="table", show_default=True, type=click.Choice(["table", "json"]))
@click.option("--summary-only", is_flag=True, help="Only the per-family table.")
@click.option("--training", is_flag=True, help="Score the training-throughput rows (fabricsim train) instead.")
@click.option("--p2p", is_flag=True, help="Score the point-to-point microbenchmark rows against the hardware catalog instead.")
@click.option("--logs", is_flag=True, help="Score the real nccl-tests logs instead (logs/index.jsonl beside the "
              "calibration data; --data names another index.jsonl).")
def validate(data, level, fmt, summary_only, training, p2p, logs):
    """Predict every collective (or, with --training / --p2p / --logs, training, point-to-point or nccl-tests log)
    measurement in the calibration set and print the error."""
    if logs:
        if training or p2p:
            raise FabricsimError("--logs scores the nccl-tests logs alone: drop --training / --p2p")
        _logs(data, fmt, level, summary_only)
        return
    if p2p:
        preds, skipped = run_p2p(load_rows(data))
        if fmt == "json":
            click.echo(json.dumps({"rows": [{"id": p.id, "what": p.what, "measured": p.measured, "predicted": p.predicted,
                                             "error_pct": p.error} for p in preds],
                                   "skipped": [{"id": s.id, "reason": s.reason} for s in skipped]}, indent=1))
        else:
            click.echo(p2p_table(preds, skipped))
        return
    if training:
        rows = calibration_rows(data or default_path(), lambda topo: engine_comm_model(topo, level=level))
        if fmt == "json":
            click.echo(json.dumps([{"id": r.id, "metric": r.metric, "measured": r.measured, "predicted": r.predicted,
                                    "error_pct": r.error_pct, "skipped": r.skipped} for r in rows], indent=1))
        else:
            click.echo(format_rows(rows))
        return
    preds, skipped = run(data, level=level)
    if fmt == "json":
        click.echo(json.dumps({
            "rows": [{"id": p.case.id, "measured": p.case.measured, "predicted": p.predicted, "error_pct": p.error,
                      "metric": p.case.metric, "algo": p.algo, "proto": p.proto, "nccl_predicted": p.nccl_predicted,
                      "nccl_error_pct": p.nccl_error} for p in sorted(preds, key=lambda p: p.case.id)],
            "summary": [dict(zip(("family", "rows", "median", "p90", "nccl_rows", "nccl_median", "nccl_p90"),
                                 map(_finite, s))) for s in summary(preds)],
            "skipped": [{"id": s.id, "reason": s.reason} for s in skipped],
        }, indent=1))
        return
    click.echo(accuracy_table(preds, skipped, show_rows=not summary_only))


def _logs(index, fmt: str, level: str, summary_only: bool) -> None:
    """--logs: the calibration set's real nccl-tests logs, each on its own cluster file (validation.logs)."""
    from fabricsim.validation.logs import logs_json, logs_table, run_logs

    scores = run_logs(index, level=level)
    click.echo(logs_json(scores) if fmt == "json" else logs_table(scores, show_rows=not summary_only,
                                                                     show_notes=not summary_only))
