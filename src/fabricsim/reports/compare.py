"""Measured nccl-tests rows against predictions: per-size % error, a summary, text/JSON and a plot.

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

from fabricsim.errors import FabricsimError, option
from fabricsim.reports.nccltests_log import ParsedLog, ParsedRow, parse_nccl_tests
from fabricsim.reports.nccltests_table import DTYPE_SIZES, PerfRow, bus_factor, float_str
from fabricsim.units import GB, US, format_bytes


def read_log(path: str | Path) -> tuple[str, ParsedLog]:
    """The text of an nccl-tests log file (text or -J JSON) and the log parsed; a log it cannot parse is one
    FabricsimError naming the file, as `doctor` and `calibrate` name it."""
    text = log_text(path)
    try:
        return text, parse_nccl_tests(text)
    except FabricsimError as err:
        raise FabricsimError(f"{Path(path).name}: {err}") from None


def log_text(path: str | Path) -> str:
    """The text of an nccl-tests log file; unreadable or binary files are one FabricsimError."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as err:
        raise FabricsimError(f"cannot read nccl-tests log {path}: {err.strerror}; give the path of a saved "
                             "nccl-tests stdout or -J JSON file") from None
    except UnicodeDecodeError as err:
        raise FabricsimError(f"nccl-tests log {path} is not UTF-8 text (byte {err.start}): give a saved nccl-tests "
                             "stdout or -J JSON file") from None
    return text


def log_collective(log: ParsedLog, override: str | None, known: tuple[str, ...]) -> str:
    """The log's collective, or `override` (--collective) where the log does not name one."""
    coll = log.collective
    if coll is None:
        if override is None:
            reduces = any(r.redop not in (None, "none") for r in log.rows)  # nccl-tests prints 'none' unless it reduces
            like = "all_reduce" if reduces else "all_gather"
            raise FabricsimError("the log does not say which collective it ran (no '<name>_perf' line): "
                                 f"pass {option('collective')}, e.g. {option('collective', like)}"
                                 + (" (its rows reduce)" if reduces else ""))
        return override
    if override is not None and override != coll:
        raise FabricsimError(f"the log ran {coll} but {option('collective')} says {override}: drop "
                             f"{option('collective')}")
    if coll not in known:
        raise FabricsimError(f"the log ran {coll}, which fabricsim does not predict: "
                             f"use a log of one of {', '.join(known)}")
    return coll


def rank_mismatch(log_nranks: int, cluster: str, sized: str, n_gpus: int, gpus_per_node: int, unit: int) -> str:
    """The log ran another rank count than the cluster has GPUs: say so, and which size would match (a partial
    node, whole units, or the same GPUs on each of several nodes). `unit`: GPUs of the smallest whole size
    (a node, or an NVL72 rack)."""
    where = f"the log ran on {log_nranks} ranks but {cluster}{sized} has {n_gpus} GPUs"
    if Path(cluster).is_file():
        if log_nranks < unit:
            return f"{where}: add {option('gpus', log_nranks)} (the first {log_nranks} GPUs of one node)"
        if log_nranks % gpus_per_node == 0 and log_nranks % unit and unit > gpus_per_node:
            # an NVLink domain spans trays and holds whole trays: the nodes must fill whole domains
            domain = max(d for d in range(gpus_per_node, unit + 1, gpus_per_node) if log_nranks % d == 0)
            return (f"{where}: set nodes: {log_nranks // gpus_per_node} and domain_size: {domain} in {cluster} "
                    f"({log_nranks // domain} NVLink domain(s) of {domain // gpus_per_node} trays; nodes alone must be "
                    f"whole domains of {unit // gpus_per_node} trays)")
        if log_nranks % gpus_per_node == 0:
            return f"{where}: set nodes: {log_nranks // gpus_per_node} in {cluster}"
        return f"{where}: set nodes and gpus_per_node in {cluster} so that they multiply to {log_nranks}"
    if log_nranks < unit or log_nranks % unit == 0:
        return f"{where}: use {option('gpus', log_nranks)}"
    if unit == gpus_per_node:
        nodes = next(k for k in range(-(-log_nranks // gpus_per_node), log_nranks + 1) if log_nranks % k == 0)
        return (f"{where}: use {option('nodes', nodes)} {option('gpus', log_nranks)} ({log_nranks // nodes} GPUs on each of {nodes} "
                "nodes)")
    return (f"{where}; {cluster} comes in whole units of {unit} GPUs, so no size runs {log_nranks} ranks: use a "
            f"cluster whose GPU count equals the log's ranks (a YAML cluster with {log_nranks} GPUs)")


def gpu_mismatch(names: tuple[str, ...], gpu: str, cluster: str, same_links_ok: bool = False) -> str | None:
    """Where the log's device lines (importers.nccl_log.device_names) name a catalog GPU other than the cluster's
    `gpu`: one sentence saying so; None where they agree or name no catalog GPU (nothing to go on). With
    `same_links_ok`, a GPU of the same architecture and the same NVLink and PCIe links (A100 40 GB against 80 GB)
    agrees: what `calibrate` fits (link efficiencies and latencies) does not depend on its memory."""
    from fabricsim import hardware

    want = hardware.get_gpu(gpu)
    for name in names:
        try:
            got = hardware.get_gpu(name)
        except FabricsimError:
            continue
        links = (got.arch, got.scaleup_link, got.scaleup_links, got.pcie_link)
        if got.name != want.name and not (same_links_ok and links == (want.arch, want.scaleup_link,
                                                                       want.scaleup_links, want.pcie_link)):
            return f"the log's devices are '{name}' ({got.name}) but {cluster} has {want.name} GPUs"
    return None


def predict_like_log(predict, log_rows: list[ParsedRow]) -> list[PerfRow]:
    """Predictions for every log row, in log order, with each row's own type / op / root:
    `predict(sizes, dtype=, redop=, root=)` returns one PerfRow per size."""
    groups: dict[tuple[str, str, int], list[int]] = {}
    for i, row in enumerate(log_rows):
        if row.dtype not in DTYPE_SIZES:
            raise FabricsimError(f"size {row.size_bytes}: the log's type '{row.dtype}' is not an nccl-tests type "
                                 f"fabricsim knows ({', '.join(sorted(DTYPE_SIZES))}); check the log's type column")
        root = row.root if row.root is not None and row.root >= 0 else 0
        groups.setdefault((row.dtype, row.redop or "sum", root), []).append(i)
    out: list[PerfRow | None] = [None] * len(log_rows)
    for (dtype, redop, root), idx in groups.items():
        preds = predict([log_rows[i].size_bytes for i in idx], dtype=dtype, redop=redop, root=root)
        for i, row in zip(idx, preds):
            out[i] = row
    return [r for r in out if r is not None]

# A measured time beyond this is no measurement (nccl-tests times one call of a size): the row is skipped, as an
# inf time is, rather than let a time like 1e308 us overflow the error.
MAX_TIME_US = 1e12


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


def wrong_results(rows: list[ParsedRow], placement: str) -> list[str]:
    """A note where the log's #wrong column counts wrong elements in the placement compared: nccl-tests checked
    those results and found them wrong, so the run timed there did not compute correctly (the rows are still scored)."""
    wrong = [r.size_bytes for r in rows if (p := measured_placement(r, placement)) is not None and p.wrong]
    if not wrong:
        return []
    name = "out-of-place" if placement == "out" else "in-place"
    sizes = ", ".join(format_bytes(s) for s in wrong[:3]) + (", ..." if len(wrong) > 3 else "")
    return [f"the log's {name} #wrong column is not 0 at {len(wrong)} size{'s' * (len(wrong) != 1)} ({sizes}): "
            "nccl-tests found wrong results there, so those times are of a run that did not compute correctly"]


def comparable(rows: list[ParsedRow], placement: str) -> tuple[list[ParsedRow], list[tuple[int, str]]]:
    """Split log rows into those with something to compare and (size, reason) for the rest: a row with
    count 0 moved no data (its time is launch overhead only), a row without a time has no measurement, and a
    row with an inf / nan / negative time or bandwidth, or a time over MAX_TIME_US, is malformed."""
    name = "out-of-place" if placement == "out" else "in-place"
    kept, skipped = [], []
    for row in rows:
        place = measured_placement(row, placement)
        if row.count == 0 or row.size_bytes == 0:
            skipped.append((row.size_bytes, f"{'count' if row.count == 0 else 'size'} 0: no data moved"))
        elif place is not None and not all(math.isfinite(v) and v >= 0 for v in (place.time_us, place.algbw, place.busbw)):
            skipped.append((row.size_bytes, "non-finite or negative time/bandwidth"))
        elif place is not None and place.time_us > MAX_TIME_US:
            skipped.append((row.size_bytes, f"time {place.time_us:g} us is longer than any benchmark run "
                                            f"({MAX_TIME_US:g} us, 11.6 days)"))
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


def records(rows: list[CompareRow]) -> list[dict]:
    """One JSON-able dict per size (us and GB/s in the key names)."""
    return [{"size_bytes": r.size_bytes, "measured_time_us": r.measured_time_s * 1e6,
             "measured_busbw_GBps": r.measured_busbw / GB, "predicted_time_us": r.predicted_time_s * 1e6,
             "predicted_busbw_GBps": r.predicted_busbw / GB, "error_pct": r.error_pct, "algo": r.algo,
             "proto": r.proto, "channels": r.channels} for r in rows]


def format_json(rows: list[CompareRow], summary: CompareSummary, meta: dict, skipped: list[tuple[int, str]]) -> str:
    """JSON document: meta fields, 'rows' (`records`), 'summary' and 'skipped'."""
    return json.dumps({**meta, "rows": records(rows), "summary": asdict(summary),
                       "skipped": [{"size_bytes": size, "reason": reason} for size, reason in skipped]},
                      indent=2) + "\n"


def figure(rows: list[CompareRow], title: str):
    """Measured and predicted busbw (log y) and time (log-log) against size: a matplotlib Figure."""
    from fabricsim.reports.plotting import new_figure, plain_log_y, size_ticks

    size = [float(r.size_bytes) for r in rows]
    fig, (bw, tm) = new_figure(12, 4.5, ncols=2)
    bw.plot(size, [r.measured_busbw / GB for r in rows], "o-", label="measured (nccl-tests)")
    bw.plot(size, [r.predicted_busbw / GB for r in rows], "s--", label="predicted")
    tm.plot(size, [r.measured_time_s / US for r in rows], "o-", label="measured (nccl-tests)")
    tm.plot(size, [r.predicted_time_s / US for r in rows], "s--", label="predicted")
    for ax, ylabel in ((bw, "busbw (GB/s)"), (tm, "time (us)")):
        size_ticks(ax, size, format_bytes)
        plain_log_y(ax, [y for line in ax.get_lines() for y in line.get_ydata()])
        ax.set_xlabel("message size")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot(rows: list[CompareRow], title: str, path: str | Path) -> None:
    """`figure(rows, title)` saved to `path` (PNG, PDF or SVG by its suffix)."""
    from fabricsim.reports.plotting import save_figure

    save_figure(figure(rows, title), path)
