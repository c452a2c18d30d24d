"""Where a measurement falls short of (or beats) the prediction, size by size, grouped into ranges of sizes.

A size's ratio is measured busbw / predicted busbw (= predicted time / measured time, so sizes whose printed busbw
is 0.00 still count), on nccl-tests' out-of-place columns as validation.logs scores them. A size is short when the
ratio is below 1 - threshold in both placements nccl-tests ran; a size short in one placement only is a one-off dip
(the other run of the same size delivered), reported apart. Ranges are maximal runs of consecutive short sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fabricsim.reports.compare import CompareRow
from fabricsim.reports.nccltests_log import ParsedRow


@dataclass(frozen=True)
class SizeCheck:
    """One size of the log against the prediction (SI units)."""

    size_bytes: int
    measured_time_s: float
    predicted_time_s: float
    measured_busbw: float
    predicted_busbw: float
    in_place_time_s: float | None  # the log's in-place time of the same size (None: not printed)
    algo: str
    proto: str
    channels: int

    @property
    def ratio(self) -> float:
        """Measured / predicted busbw, out-of-place."""
        return self.predicted_time_s / self.measured_time_s

    @property
    def in_place_ratio(self) -> float | None:
        """Measured / predicted busbw of the in-place run (None: no in-place time)."""
        t = self.in_place_time_s
        return self.predicted_time_s / t if t else None


def checks(rows: tuple[CompareRow, ...], log_rows: tuple[ParsedRow, ...]) -> tuple[SizeCheck, ...]:
    """Compared rows (validation.logs.score) with the in-place time of the same log rows."""
    out = []
    for r, lr in zip(rows, log_rows):
        ip = lr.in_place.time_us * 1e-6 if lr.in_place is not None and lr.in_place.time_us > 0 else None
        out.append(SizeCheck(r.size_bytes, r.measured_time_s, r.predicted_time_s, r.measured_busbw, r.predicted_busbw,
                             ip if ip is not None and math.isfinite(ip) else None, r.algo, r.proto, r.channels))
    return tuple(out)


def is_short(c: SizeCheck, threshold: float) -> bool:
    """Short in every placement the log printed."""
    floor = 1.0 - threshold
    ip = c.in_place_ratio
    return c.ratio < floor and (ip is None or ip < floor)


def is_dip(c: SizeCheck, threshold: float) -> bool:
    """Short out-of-place but not in-place (or the other way round): run-to-run variation, not the hardware."""
    floor = 1.0 - threshold
    ip = c.in_place_ratio
    return ip is not None and (c.ratio < floor) != (ip < floor)


def is_above(c: SizeCheck, threshold: float) -> bool:
    """Faster than predicted by more than the threshold, out-of-place."""
    return c.ratio > 1.0 + threshold


@dataclass(frozen=True)
class Range:
    """Consecutive sizes of the log on one side of the prediction."""

    sizes: tuple[SizeCheck, ...]

    @property
    def lo(self) -> int:
        return self.sizes[0].size_bytes

    @property
    def hi(self) -> int:
        return self.sizes[-1].size_bytes

    @property
    def median_ratio(self) -> float:
        return float(np.median([c.ratio for c in self.sizes]))

    @property
    def worst(self) -> SizeCheck:
        """The size furthest from the prediction (lowest ratio below it, highest above)."""
        below = self.median_ratio < 1.0
        return min(self.sizes, key=lambda c: c.ratio if below else -c.ratio)


def ranges(sizes: tuple[SizeCheck, ...], keep) -> tuple[Range, ...]:
    """Maximal runs of consecutive sizes for which keep(check) holds, in the log's order."""
    out: list[list[SizeCheck]] = []
    run: list[SizeCheck] = []
    for c in sizes:
        if keep(c):
            run.append(c)
        elif run:
            out.append(run)
            run = []
    if run:
        out.append(run)
    return tuple(Range(tuple(r)) for r in out)
