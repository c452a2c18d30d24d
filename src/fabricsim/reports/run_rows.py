"""One perf, train or compare run as rows of the results table, so `--report` draws it with the sweep report's
charts: a row per size (perf), per variant and GPU count (train), or per size measured and predicted (compare,
`perf.source` telling them apart)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from fabricsim.reports.results import perf_row, train_row


def _cluster(label: str, spec: Any, n_gpus: int) -> dict[str, Any]:
    fields = asdict(spec) if spec is not None else {}
    return {"cluster": label, **{f"cluster.{k}": v for k, v in fields.items() if k != "calibrated"},  # as sweeps' rows
            "cluster.gpus": n_gpus}


def perf_rows(label: str, spec: Any, n_gpus: int, options: Mapping[str, Any],
              records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A row per size of a perf run (`records`: `PerfResult.to_records()`); `options` the perf options used."""
    base = _cluster(label, spec, n_gpus)
    return [{"key": f"size{i}", "point": i, "kind": "perf", "status": "ok", **base,
             **{f"perf.{k}": v for k, v in options.items()}, "perf.size": r["size_bytes"], **perf_row(r)}
            for i, r in enumerate(records)]


def train_rows(label: str, records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A row per (variant, GPU count) of a train run (`records`: `TrainResult.to_records()`)."""
    rows = []
    for i, r in enumerate(records):
        row: dict[str, Any] = {"key": f"{r['variant']}-{r['gpus']}", "point": i, "kind": "train", "cluster": label,
                               "train.variant": r["variant"], "cluster.gpus": r["gpus"]}
        if "error" in r:
            row.update(status="failed", error=r["error"])
        else:
            row.update(status="ok", **{"train.model": r["model"]}, **train_row(r))
        rows.append(row)
    return rows


def compare_rows(label: str, spec: Any, n_gpus: int, collective: str,
                 records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Two rows per size of a compare run (`records`: `CompareResult.to_records()`): what the log measured
    (`perf.source` 'measured') and what fabricsim predicted."""
    base = _cluster(label, spec, n_gpus)
    rows = []
    for i, r in enumerate(records):
        for source, prefix in (("measured", "measured"), ("predicted", "predicted")):
            picked = source == "predicted"
            rows.append({"key": f"{source}{i}", "point": len(rows), "kind": "perf", "status": "ok", **base,
                         "perf.collective": collective, "perf.source": source, "perf.size": r["size_bytes"],
                         "size_bytes": r["size_bytes"], "time_us": r[f"{prefix}_time_us"],
                         "busbw_GBps": r[f"{prefix}_busbw_GBps"], "algo": r["algo"] if picked else None,
                         "proto": r["proto"] if picked else None, "channels": r["channels"] if picked else None})
    return rows
