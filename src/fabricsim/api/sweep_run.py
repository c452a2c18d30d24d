"""`fs.sweep` and `fs.report`: a sweep file's design space run into a results file (`SweepResult`), and results
drawn as an HTML page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricsim.api.common import SweepProgress, dataframe
from fabricsim.errors import FabricsimError

if TYPE_CHECKING:
    import pandas


@dataclass(frozen=True, eq=False)
class SweepResult:
    """What `sweep` did: the results file and its format, points in all, computed in this call, found finished
    from an earlier run, failed (with the first few errors, (key, error)), where it ran and how long it took."""

    name: str
    output: Path
    format: str
    total: int
    computed: int
    resumed: int
    failed: int
    failures: tuple[tuple[str, str], ...]
    backend: str  # 'pool' or 'ray'
    workers: int
    seconds: float

    @property
    def points_per_s(self) -> float:
        """Points computed per second of this call."""
        return self.computed / self.seconds if self.seconds > 0 else 0.0

    def to_records(self) -> list[dict[str, Any]]:
        """The results file's rows, one dict per point in sweep order."""
        from fabricsim.sweeps.reporting import read

        return read([self.output])

    def to_pandas(self) -> pandas.DataFrame:
        """The results as a DataFrame (needs the `fabricsim[pandas]` extra; a Parquet file also pyarrow)."""
        return dataframe(self.to_records())

    def report(self, path: str | Path, point: str | None = None, title: str | None = None) -> Path:
        """Write the HTML report of the results to `path` (see `report`)."""
        return report(self.output, path, point=point, title=title)

    def __repr__(self) -> str:
        return (f"SweepResult({self.name!r}: {self.total:,} points, {self.computed:,} computed, {self.resumed:,} "
                f"resumed, {self.failed:,} failed, {self.seconds:.1f} s on {self.backend} -> {self.output})")


def sweep(file: str | Path, output: str | Path | None = None, *, format: str | None = None, ray: bool | None = None,
          workers: int | None = None, retry_failed: bool = False,
          progress: SweepProgress | None = None) -> SweepResult:
    """Run a sweep file: every point of its axes computed (on a local process pool of `workers` processes, or on
    Ray with `ray=True` or when RAY_ADDRESS is set) and written to `output` (default: the sweep file's name with
    .parquet, or .csv with format='csv'), one row per point. Points already in `output` (or in the journal a
    killed run left beside it) are not computed again; failed ones are, with `retry_failed`. A point that fails
    is a row with its error; the sweep goes on. `progress(done, total, failed)` is told as points finish."""
    from fabricsim import sweeps
    from fabricsim.reports.results import format_of
    from fabricsim.sweeps.run import run

    plan = sweeps.load(file)
    if output is None:
        output = Path(Path(file).stem + (".csv" if format == "csv" else ".parquet"))
    fmt = format_of(output, format)
    done = run(plan, output, fmt, ray=ray, workers=workers, retry_failed=retry_failed, progress=progress)
    return SweepResult(plan.name, done.output, done.fmt, done.total, done.computed, done.resumed, done.failed,
                       done.failures, done.backend, done.workers, done.seconds)


def report(results: str | Path | Sequence[str | Path], output: str | Path, *, point: str | None = None,
           title: str | None = None) -> Path:
    """Write the HTML report of one or more results files (`sweep` wrote them): busbw and the algorithm per size,
    the scaling wall, the cost of failures where the results have fault columns, the per-link utilisation of one
    collective point (`point`: the first characters of its key; default: the first at the largest size) and a table
    that sorts and filters. One self-contained file (needs the `fabricsim[report]` extra)."""
    from fabricsim.sweeps.reporting import report as write_report

    paths = [results] if isinstance(results, (str, Path)) else list(results)
    if not paths:
        raise FabricsimError("no results files given: pass the file `fabricsim sweep` wrote")
    return write_report(paths, output, point=point, title=title)
