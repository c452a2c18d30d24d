"""Measured nccl-tests rows against predictions: per-size % error, a summary, text/JSON and a busbw plot.

The error is the signed % error of busbw, (predicted - measured) / measured. Both busbw figures are
nccl-tests' factor(collective, nranks) * size / time with the same factor, so the error is computed as the
ratio of size / time: exact (no 2-decimal rounding of the printed GB/s), and still defined where a small
size prints busbw as 0.00 or one rank makes the factor 0.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.reports.nccltests_log import ParsedRow
from fabricsim.reports.nccltests_table import PerfRow, bus_factor, float_str
from fabricsim.units import GB, format_bytes


@dataclass(frozen=True)
class CompareRow:
    """One size: measured and predicted time (s) and busbw (bytes/s), signed % error, the pick."""

    size_bytes: int
    measured_time_s: float
    measured_busbw: float
    predicted_time_s: float
    predicted_busbw: float
    error_pct: float
    algo: str
    proto: str
    channels: int


@dataclass(frozen=True)
class CompareSummary:
    """Rows compared, median / p90 absolute % error, mean signed % error, the worst size and its error."""

    rows: int
    median_abs_pct: float
    p90_abs_pct: float
    mean_signed_pct: float
    worst_size_bytes: int
    worst_error_pct: float


def measured_placement(row: ParsedRow, placement: str):
    """The out-of-place ('out') or in-place ('in') measurement of a log row; None where the log has none."""
    return row.out_of_place if placement == "out" else row.in_place


def comparable(rows: list[ParsedRow], placement: str) -> tuple[list[ParsedRow], list[tuple[int, str]]]:
    """Split log rows into those with something to compare and (size, reason) for the rest: a row with
    count 0 moved no data (its time is launch overhead only), a row without a time has no measurement, and a
    row with an inf / nan / negative time or bandwidth is malformed."""
    name = "out-of-place" if placement == "out" else "in-place"
    kept, skipped = [], []
    for row in rows:
        place = measured_placement(row, placement)
        if row.count == 0 or row.size_bytes == 0:
            skipped.append((row.size_bytes, f"{'count' if row.count == 0 else 'size'} 0: no data moved"))
        elif place is not None and not all(math.isfinite(v) and v >= 0 for v in (place.time_us, place.algbw, place.busbw)):
            skipped.append((row.size_bytes, "non-finite or negative time/bandwidth"))
        elif place is None or place.time_us == 0:
            skipped.append((row.size_bytes, f"no {name} time in the log"))
        else:
            kept.append(row)
    if not kept:
        raise FabricsimError(f"no row of the log has data and an {name} time to compare: "
                             "check the log, or try the other --placement")
    return kept, skipped


def compare_rows(measured: list[ParsedRow], predicted: list[PerfRow], collective: str, nranks: int,
                 placement: str) -> list[CompareRow]:
    """Pair comparable log rows with predictions of the same sizes (same order). Measured busbw is
    recomputed from the measured time as nccl-tests does, so a printed 0.00 does not hide the measurement."""
    if len(measured) != len(predicted):
        raise FabricsimError(f"compare: {len(measured)} measured rows but {len(predicted)} predictions; "
                             "predict exactly the sizes of the log")
    factor = bus_factor(collective, nranks)
    out = []
    for m, p in zip(measured, predicted):
        if p.time_s <= 0 or p.size_bytes <= 0:
            raise FabricsimError(f"size {m.size_bytes}: the prediction moved {p.size_bytes} B in {p.time_s} s, "
                                 "nothing to compare; drop this size from the log")
        t = measured_placement(m, placement).time_us * 1e-6
        error = ((p.size_bytes / p.time_s) * t / m.size_bytes - 1.0) * 100.0
        bus = factor * m.size_bytes / t if t > 0 else math.inf
        if not (math.isfinite(error) and math.isfinite(bus)):
            raise FabricsimError(f"size {m.size_bytes}: the log's time {t * 1e6:g} us gives no finite busbw to compare: "
                                 "check the log's time column")
        out.append(CompareRow(m.size_bytes, t, bus, p.time_s, p.busbw, error, p.algo, p.proto, p.channels))
    return out


def summarize(rows: list[CompareRow]) -> CompareSummary:
    """Median and p90 of |error|, mean signed error, and the size with the largest |error|."""
    if not rows:
        raise FabricsimError("compare: no rows to summarise; the log needs at least one size with a time")
    err = np.array([r.error_pct for r in rows], dtype=np.float64)
    worst = int(np.argmax(np.abs(err)))
    return CompareSummary(len(rows), float(np.median(np.abs(err))), float(np.percentile(np.abs(err), 90)),
                          float(err.mean()), rows[worst].size_bytes, float(err[worst]))


def format_table(rows: list[CompareRow], summary: CompareSummary, title: str,
                 skipped: list[tuple[int, str]]) -> str:
    """Text table, one line per size, then the summary lines and the sizes left out."""
    lines = [f"# {title}",
             f"# {'size':>12}  {'measured':^19}  {'predicted':^19}  {'busbw':>7}  {'pick':<24}",
             f"# {'(B)':>12}  {'time us':>10} {'busbw':>8}  {'time us':>10} {'busbw':>8}  {'err %':>7}  "
             f"{'algo/proto/channels':<24}"]
    for r in rows:
        lines.append(f"  {r.size_bytes:>12}  {float_str(r.measured_time_s * 1e6, 10)} "
                     f"{float_str(r.measured_busbw / GB, 8)}  {float_str(r.predicted_time_s * 1e6, 10)} "
                     f"{float_str(r.predicted_busbw / GB, 8)}  {r.error_pct:>+7.1f}  {r.algo}/{r.proto}/{r.channels}")
    s = summary
    lines += ["#",
              f"# rows {s.rows}: |busbw error| median {s.median_abs_pct:.1f}%, p90 {s.p90_abs_pct:.1f}%; "
              f"mean signed {s.mean_signed_pct:+.1f}% (+ = prediction faster)",
              f"# worst size {s.worst_size_bytes} B ({format_bytes(s.worst_size_bytes)}): {s.worst_error_pct:+.1f}%"]
    lines += [f"# skipped size {size} B: {reason}" for size, reason in skipped]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def format_json(rows: list[CompareRow], summary: CompareSummary, meta: dict, skipped: list[tuple[int, str]]) -> str:
    """JSON document: meta fields, 'rows' (us and GB/s in the key names), 'summary' and 'skipped'."""
    records = [{"size_bytes": r.size_bytes, "measured_time_us": r.measured_time_s * 1e6,
                "measured_busbw_GBps": r.measured_busbw / GB, "predicted_time_us": r.predicted_time_s * 1e6,
                "predicted_busbw_GBps": r.predicted_busbw / GB, "error_pct": r.error_pct, "algo": r.algo,
                "proto": r.proto, "channels": r.channels} for r in rows]
    return json.dumps({**meta, "rows": records, "summary": asdict(summary),
                       "skipped": [{"size_bytes": size, "reason": reason} for size, reason in skipped]},
                      indent=2) + "\n"


def plot_busbw(rows: list[CompareRow], title: str, path: str | Path) -> None:
    """Measured and predicted busbw (GB/s) vs size on a log2 axis, saved as PNG (Agg: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    size = np.array([r.size_bytes for r in rows], dtype=np.float64)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    try:
        ax.plot(size, [r.measured_busbw / GB for r in rows], "o-", label="measured (nccl-tests)")
        ax.plot(size, [r.predicted_busbw / GB for r in rows], "s--", label="predicted")
        ax.set_xscale("log", base=2)
        ticks = size[::max(1, len(size) // 12)]  # at most ~12 labels, on measured sizes
        ax.set_xticks(ticks)
        ax.set_xticklabels([format_bytes(s) for s in ticks], rotation=45, ha="right", fontsize=8)
        ax.minorticks_off()
        ax.set_xlabel("message size")
        ax.set_ylabel("busbw (GB/s)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        try:
            fig.savefig(path, format="png", dpi=120, metadata={"Software": None})
        except OSError as err:
            raise FabricsimError(f"cannot write plot {path}: {err.strerror}; check the directory exists and is "
                                 "writable") from None
    finally:
        plt.close(fig)
