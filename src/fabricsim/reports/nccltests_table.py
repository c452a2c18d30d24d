"""nccl-tests-compatible output: the exact text table (nccl-tests 2.19 `src/util.cu`), JSON and CSV.

Predictions print like a measurement so they can be diffed against real logs; `#wrong` shows `N/A`
(nccl-tests' `-c 0` spelling) because nothing was validated. Size/count conventions follow
nccl-tests' `*GetBw` / `*GetCollByteCount` (src/<coll>.cu).
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.errors import FabricsimError
# nccl-tests' collectives, type names (DTYPE_SIZES), rooted tests, and the bus factors and size conventions
# (src/<coll>.cu GetBw / GetCollByteCount) live in the vocabulary.
from fabricsim.vocab import DTYPE_SIZES, NCCL_TESTS_COLLECTIVES as COLLECTIVES, ROOTED, SIZE_IS_TOTAL, bus_factor  # noqa: F401


@dataclass(frozen=True)
class PerfRow:
    """One size of a performance table. Bandwidths bytes/s, times s; in-place None = same as out-of-place."""

    size_bytes: int
    count: int
    dtype: str
    redop: str
    root: int
    time_s: float
    algbw: float
    busbw: float
    algo: str = ""
    proto: str = ""
    channels: int = 0
    level: str = ""
    ip_time_s: float | None = None
    ip_algbw: float | None = None
    ip_busbw: float | None = None
    bound: str | None = None  # 'latency-bound' | 'bandwidth-bound' (fabricsim's simulation; None: not known)
    bottleneck: str | None = None  # the first bottleneck link's name (None: not known, or no shared link)

    @property
    def in_place(self) -> tuple[float, float, float]:
        """(time_s, algbw, busbw) of the in-place run."""
        return (self.time_s if self.ip_time_s is None else self.ip_time_s,
                self.algbw if self.ip_algbw is None else self.ip_algbw,
                self.busbw if self.ip_busbw is None else self.ip_busbw)


def _check(collective: str) -> str:
    if collective not in COLLECTIVES:
        raise FabricsimError(f"unknown nccl-tests collective '{collective}': use one of {', '.join(COLLECTIVES)}")
    return collective


def count_for(collective: str, size_bytes: int, nranks: int, elem_size: int) -> int:
    """nccl-tests' per-rank `count` column for a `size` column: the size is the whole buffer for
    all_gather / reduce_scatter (and per peer x n for alltoall / gather / scatter)."""
    _check(collective)
    if elem_size < 1 or nranks < 1:
        raise FabricsimError("count_for: elem_size and nranks must be >= 1")
    per = elem_size * (nranks if collective in SIZE_IS_TOTAL else 1)
    return size_bytes // per


def float_str(value: float, width: int) -> str:
    """nccl-tests getFloatStr: %.2f, else %.1f, else %.0f, else exponent (%.1e if width >= 7)."""
    for fmt in ("%*.2f", "%*.1f", "%*.0f"):
        text = fmt % (width, value)
        if len(text) <= width:
            return text
    return ("%*.1e" if width >= 7 else "%*.0e") % (width, value)


_HEAD = "# %10s  %12s  %8s  %6s  %6s"
_PLACE_HEAD = "  %7s  %6s  %6s  %6s"
_EXTRA = "  %13s  %6s  %8s"


def _line(row: PerfRow, extra_cols: bool) -> str:
    text = "%12li  %12li  %8s  %6s  %6s" % (row.size_bytes, row.count, row.dtype, row.redop, "%6i" % row.root)
    for t, alg, bus in ((row.time_s, row.algbw, row.busbw), row.in_place):
        text += "  %7s  %6s  %6s    N/A" % (float_str(t * 1e6, 7), float_str(alg / 1e9, 6), float_str(bus / 1e9, 6))
    if extra_cols:
        text += _EXTRA % (row.algo, row.proto, row.channels)
    return text


def format_table(rows: list[PerfRow], collective: str, nranks: int, extra_cols: bool = True) -> str:
    """The nccl-tests stdout table for `rows`, with algo / proto / channels appended when `extra_cols`."""
    _check(collective)
    if not rows:
        raise FabricsimError("format_table: no rows to print; give at least one message size")
    extra_t = _EXTRA % ("algo", "proto", "channels") if extra_cols else ""
    extra_u = _EXTRA % ("", "", "") if extra_cols else ""
    lines = [
        f"# Collective test starting: {collective}_perf",
        f"# fabricsim prediction: nranks {nranks}",
        "#",
        (_HEAD % ("", "", "", "", "")) + "           out-of-place                       in-place          ",
        (_HEAD % ("size", "count", "type", "redop", "root")) + (_PLACE_HEAD % ("time", "algbw", "busbw", "#wrong")) * 2
        + extra_t + " ",
        (_HEAD % ("(B)", "(elements)", "", "", "")) + (_PLACE_HEAD % ("(us)", "(GB/s)", "(GB/s)", "")) * 2 + extra_u + " ",
    ]
    lines += [_line(r, extra_cols) for r in rows]
    avg = sum(r.busbw + r.in_place[2] for r in rows) / (2 * len(rows)) / 1e9
    lines += ["# %-20s : %g " % ("Avg bus bandwidth", avg), "#", ""]
    return "\n".join(lines)


def record(row: PerfRow) -> dict:
    """One row as plain JSON-able values, units in the key names (us, GB/s)."""
    ip_t, ip_alg, ip_bus = row.in_place
    return {
        "size_bytes": row.size_bytes, "count": row.count, "type": row.dtype, "redop": row.redop, "root": row.root,
        "time_us": row.time_s * 1e6, "algbw_GBps": row.algbw / 1e9, "busbw_GBps": row.busbw / 1e9,
        "ip_time_us": ip_t * 1e6, "ip_algbw_GBps": ip_alg / 1e9, "ip_busbw_GBps": ip_bus / 1e9,
        "algo": row.algo, "proto": row.proto, "channels": row.channels, "level": row.level,
        "bound": row.bound, "bottleneck": row.bottleneck,
    }


def format_json(rows: list[PerfRow], meta: dict | None = None, **extra) -> str:
    """A JSON document: the `meta` fields (cluster, ranks, collective, cost model, ...), then 'rows', one
    object per size (units in the key names), then any `extra` lists (e.g. 'explain')."""
    import json  # here, not at the top: the table a plain `perf` prints needs neither json nor csv

    return json.dumps({**(meta or {}), "rows": [record(r) for r in rows], **extra}, indent=2) + "\n"


def format_csv(rows: list[PerfRow]) -> str:
    """The same records as CSV with a header line."""
    import csv
    import io

    out = io.StringIO()
    records = [record(r) for r in rows]
    fields = list(record(rows[0])) if rows else list(record(PerfRow(0, 0, "", "", -1, 1.0, 0.0, 0.0)))
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return out.getvalue()
