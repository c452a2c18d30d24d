"""`fabricsim validate`: predict every calibration measurement and print the error, row by row and per family."""

from __future__ import annotations

import json
import math

import click

from fabricsim.cli.progress import progress_bar
from fabricsim.errors import FabricsimError


def _pct(x: float) -> str:
    """'  12.3%', or '      -' where a group has no rows (nan)."""
    return f"{x:>7.1f}%" if math.isfinite(x) else f"{'-':>8}"


def _finite(x):
    """x, or None for nan (JSON has no NaN)."""
    return x if not isinstance(x, float) or math.isfinite(x) else None


def accuracy_table(preds, skipped, show_rows: bool = True) -> str:
    """Per-row and aggregate error table (text)."""
    from fabricsim.validation.accuracy import set_aside_summary, summary

    lines = []
    if show_rows:
        lines.append(f"{'id':<46} {'coll':<14} {'GPUs':>5} {'metric':<6} {'measured':>9} {'fabricsim':>9} {'err%':>6} "
                     f"{'pick':<20} {'nccl-model':>10} {'err%':>6}")
        for p in sorted(preds, key=lambda p: p.case.id):
            c = p.case
            nccl = f"{p.nccl_predicted:>10.1f} {p.nccl_error:>6.1f}" if p.nccl_predicted is not None else f"{'-':>10} {'-':>6}"
            lines.append(f"{c.id[:46]:<46} {c.collective:<14} {len(c.ranks):>5} {c.metric:<6} {c.measured:>9.2f} "
                         f"{p.predicted:>9.2f} {p.error:>6.1f} {p.algo + '/' + p.proto:<20} {nccl}"
                         + ("  set aside" if c.set_aside else "") + ("  corrected" if c.corrected else ""))
        lines.append("")
    lines.append("accuracy: absolute % error of busbw (time for latency rows)")
    lines.append(f"{'family':<10} {'rows':>5} {'median':>8} {'p90':>8}   {'nccl rows':>9} {'median':>8} {'p90':>8}")
    for fam, n, med, p90, nn, nmed, np90 in summary(preds):
        lines.append(f"{fam:<10} {n:>5} {_pct(med)} {_pct(p90)}   {nn:>9} {_pct(nmed)} {_pct(np90)}")
    for reason, n, med, p90 in set_aside_summary(preds):
        lines.append("")
        lines.append(f"set aside {n} row{'' if n == 1 else 's'} (in no group above; median {_pct(med).strip()}, p90 {_pct(p90).strip()}): "
                     f"their own source doubts them: {reason}")
    fixed = sorted((p.case.id, p.case.corrected) for p in preds if p.case.corrected)
    if fixed:
        lines.append("")
        lines.append(f"corrected {len(fixed)} row{'' if len(fixed) == 1 else 's'} (measured figure from the source's raw "
                     "output, not the calibration file's; validation.errata):")
        lines.extend(f"  {rid}: {why}" for rid, why in fixed)
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
@click.option("--data", default=None,
              help="measurements.jsonl (default: $FABRICSIM_CALIBRATION, else shared/calibration beside the checkout).")
@click.option("--level", default=None, type=click.Choice(["flow", "analytical"]),
              help="Engine fidelity for collective and training rows (default flow).")
@click.option("--format", "fmt", default="table", show_default=True, type=click.Choice(["table", "json"]))
@click.option("--summary-only", is_flag=True, help="Only the per-family table (JSON: only 'summary' and 'skipped').")
@click.option("--training", is_flag=True, help="Score the training-throughput rows (fabricsim train) instead.")
@click.option("--p2p", is_flag=True, help="Score the point-to-point microbenchmark rows against the hardware catalog instead.")
@click.option("--logs", is_flag=True, help="Score the real nccl-tests logs instead (logs/index.jsonl beside the "
              "calibration data; --data names another index.jsonl).")
@click.option("--added", is_flag=True, help="Score the added public measurements (nccl-tests rows from public sources "
              "outside the calibration set, each on its own cluster file) instead: a group apart from the calibration "
              "figures (--data names another file of such rows).")
@click.option("--calibrate-holdout", is_flag=True, help="With --logs: for each cluster with 2+ logs, fit `fabricsim "
              "calibrate` on one log and print the error on its others before and after.")
def validate(data, level, fmt, summary_only, training, p2p, logs, added, calibrate_holdout):
    """Predict every collective (or, with --training / --p2p / --logs, training, point-to-point or nccl-tests log)
    measurement in the calibration set and print the error; --added scores the added public measurements."""
    from fabricsim.calibration_data import require

    if calibrate_holdout and not logs:
        raise FabricsimError("--calibrate-holdout scores calibration on the nccl-tests logs: add --logs")
    if added:
        if training or p2p or logs:
            raise FabricsimError("--added scores the added public measurements alone: drop --training / --p2p / --logs")
        _added(data, fmt, level or "flow", summary_only)
        return
    if logs:
        if training or p2p:
            raise FabricsimError("--logs scores the nccl-tests logs alone: drop --training / --p2p")
        if calibrate_holdout:
            _holdout(data, fmt, level or "flow")
        else:
            _logs(data, fmt, level or "flow", summary_only)
        return
    if training and p2p:
        raise FabricsimError("--training and --p2p score different rows: give one of them (or neither, for the "
                             "collective rows)")
    if summary_only and (training or p2p):
        raise FabricsimError(f"--summary-only shortens the collective accuracy table; --{'training' if training else 'p2p'}"
                             " prints one table with its summary line: drop --summary-only")
    if p2p and level is not None:
        raise FabricsimError("--p2p checks the hardware catalog on the built topology, without the engine: drop --level")
    path = require(data)
    if p2p:
        _p2p(path, fmt)
    elif training:
        _training(path, fmt, level or "flow")
    else:
        _collectives(path, fmt, level or "flow", summary_only)


def _p2p(path, fmt: str) -> None:
    from fabricsim.validation.calibration import load_rows
    from fabricsim.validation.p2p import p2p_table, run_p2p

    preds, skipped = run_p2p(load_rows(path))
    if fmt == "json":
        click.echo(json.dumps({"rows": [{"id": p.id, "what": p.what, "measured": p.measured, "predicted": p.predicted,
                                         "error_pct": p.error} for p in preds],
                               "skipped": [{"id": s.id, "reason": s.reason} for s in skipped]}, indent=1))
    else:
        click.echo(p2p_table(preds, skipped))


def _training(path, fmt: str, level: str) -> None:
    from fabricsim.training.comm import engine_comm_model
    from fabricsim.validation.calibration import load_rows
    from fabricsim.validation.training import calibration_rows, format_rows

    total = sum(1 for r in load_rows(path) if r.get("kind") == "training")
    with progress_bar("validate --training") as progress:
        done = [0]

        def comm(topo):  # one call per row that is timed: the progress tick
            done[0] += 1
            if progress is not None:
                progress(min(done[0], total), total)
            return engine_comm_model(topo, level=level)

        rows = calibration_rows(path, comm)
    if fmt == "json":
        click.echo(json.dumps([{"id": r.id, "group": r.group, "metric": r.metric, "measured": r.measured,
                                "predicted": r.predicted, "error_pct": r.error_pct, "layout": r.layout,
                                "memory_gb": r.memory_gb, "hbm_gb": r.hbm_gb, "skipped": r.skipped, "note": r.note,
                                "unmeasured": r.unmeasured} for r in rows], indent=1))
    else:
        click.echo(format_rows(rows))


def _collectives(path, fmt: str, level: str, summary_only: bool) -> None:
    from fabricsim.validation.accuracy import run

    with progress_bar("validate") as progress:
        preds, skipped = run(path, level=level, progress=progress)
    _print_accuracy(preds, skipped, fmt, summary_only)


def _added(path, fmt: str, level: str, summary_only: bool) -> None:
    """--added: the added public measurements (validation.added), scored apart from the calibration set."""
    from fabricsim.validation.accuracy import run_cases
    from fabricsim.validation.added import cases

    with progress_bar("validate --added") as progress:
        preds, skipped = run_cases(*cases(path), level=level, progress=progress)
    if fmt != "json":
        click.echo("added public measurements (public nccl-tests rows outside the calibration set, each on the cluster "
                   "file written from its source's hardware; not part of the calibration figures)\n")
    _print_accuracy(preds, skipped, fmt, summary_only)


def _print_accuracy(preds, skipped, fmt: str, summary_only: bool) -> None:
    from fabricsim.validation.accuracy import set_aside_summary, summary

    if fmt == "json":
        doc = {
            "rows": [{"id": p.case.id, "measured": p.case.measured, "predicted": p.predicted, "error_pct": p.error,
                      "metric": p.case.metric, "algo": p.algo, "proto": p.proto, "nccl_predicted": p.nccl_predicted,
                      "nccl_error_pct": p.nccl_error, "set_aside": p.case.set_aside or None,
                      "corrected": p.case.corrected or None}
                     for p in sorted(preds, key=lambda p: p.case.id)],
            "summary": [dict(zip(("family", "rows", "median", "p90", "nccl_rows", "nccl_median", "nccl_p90"),
                                 map(_finite, s))) for s in summary(preds)],
            "set_aside": [dict(zip(("reason", "rows", "median", "p90"), map(_finite, s)))
                          for s in set_aside_summary(preds)],
            "skipped": [{"id": s.id, "reason": s.reason} for s in skipped],
        }
        if summary_only:
            del doc["rows"]
        click.echo(json.dumps(doc, indent=1))
        return
    click.echo(accuracy_table(preds, skipped, show_rows=not summary_only))


def _logs(index, fmt: str, level: str, summary_only: bool) -> None:
    """--logs: the calibration set's real nccl-tests logs, each on its own cluster file (validation.logs)."""
    from fabricsim.calibration_data import require
    from fabricsim.validation.logs import logs_json, logs_table, run_logs

    if not index:
        require()  # the logs sit beside the calibration data: none found says how to point fabricsim at it
    scores = run_logs(index, level=level)
    click.echo(logs_json(scores) if fmt == "json" else logs_table(scores, show_rows=not summary_only,
                                                                     show_notes=not summary_only))


def _holdout(index, fmt: str, level: str) -> None:
    """--logs --calibrate-holdout: calibration fitted on one log of a cluster, scored on its others (fitting.holdout)."""
    from fabricsim.calibration_data import require
    from fabricsim.fitting import holdout

    if fmt == "json":
        raise FabricsimError("--calibrate-holdout prints a table only: drop --format json")
    if not index:
        require()
    held, skipped = holdout.run(index, level=level)
    click.echo(holdout.table(held, skipped))
