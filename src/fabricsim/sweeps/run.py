"""Running a sweep: the points not yet finished handed to a runner, their rows journaled as they come, and the
results file written in point order (so the local pool and Ray give the same bytes).

The output streams: rows are written as soon as every earlier point is in, a Parquet row group at a time, to a
temporary file renamed over the output at the end.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricsim.reports.results import ResultsWriter, format_of
from fabricsim.sweeps import runners, store
from fabricsim.sweeps.plan import Plan

Progress = Callable[[int, int, int], None]  # progress(points done, points in all, points failed)


@dataclass(frozen=True)
class Outcome:
    """What a sweep run did: points in all, computed now, found finished, failed (now or before), the first
    failures (key, error), where the results are, how it ran, and how long it took (s)."""

    output: Path
    fmt: str
    total: int
    computed: int
    resumed: int
    failed: int
    failures: tuple[tuple[str, str], ...]
    backend: str
    workers: int
    seconds: float

    @property
    def points_per_s(self) -> float:
        return self.computed / self.seconds if self.seconds > 0 else 0.0


def use_ray(flag: bool | None) -> bool:
    """--ray given, or RAY_ADDRESS set (a Ray cluster to join)."""
    return bool(flag) or (flag is None and bool(os.environ.get("RAY_ADDRESS")))


def run(plan: Plan, output: str | Path, fmt: str | None = None, *, ray: bool | None = None,
        workers: int | None = None, retry_failed: bool = False, progress: Progress | None = None,
        task_points: int | None = None) -> Outcome:
    """Compute every point of `plan` not already in `output` (or its journal) and write all of them there."""
    runners.check_driver()
    start = time.perf_counter()
    out = Path(output)
    fmt = format_of(out, fmt)
    on_ray = use_ray(ray)
    n_workers = workers or runners.default_workers()
    if fmt == "parquet":
        from fabricsim.reports.results import arrow_schema

        arrow_schema(plan.columns)  # a missing pyarrow fails before any work
    done = store.finished(out, plan.columns)
    rows: dict[int, dict[str, Any]] = {}
    for p in plan.points:
        row = done.get(p["key"])
        if row is not None and (row["status"] == "ok" or not retry_failed):
            rows[p["index"]] = {**row, "point": p["index"]}
    resumed = len(rows)
    pending = [p["index"] for p in plan.points if p["index"] not in rows]
    tasks = plan.tasks(n_workers, pending, task_points)
    journal = store.Journal(out)
    partial = store.temporary_path(out)
    writer = ResultsWriter(partial, plan.columns, fmt)
    written, failed, computed = 0, sum(r["status"] != "ok" for r in rows.values()), 0
    failures = [(r["key"], r["error"]) for r in rows.values() if r["status"] != "ok"]
    total = len(plan.points)

    def flush() -> None:
        nonlocal written
        while written in rows:
            writer.write(rows.pop(written))
            written += 1

    try:
        flush()
        if progress is not None:
            progress(resumed, total, failed)
        results = (iter(()) if not tasks else runners.ray(tasks, workers) if on_ray else
                   runners.pool(tasks, n_workers))
        for _, task_rows in results:
            journal.append(task_rows)
            for row in task_rows:
                rows[row["point"]] = row
                computed += 1
                if row["status"] != "ok":
                    failed += 1
                    failures.append((row["key"], row["error"]))
            flush()
            if progress is not None:
                progress(resumed + computed, total, failed)
        writer.close()
    except BaseException:
        journal.close()
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, out)
    journal.remove()
    return Outcome(out, fmt, total, computed, resumed, failed, tuple(failures[:5]),
                   "ray" if on_ray else "pool", n_workers, time.perf_counter() - start)
