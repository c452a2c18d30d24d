"""`fs.jobs`: several jobs sharing one fabric, alone and together (`JobsResult`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricsim.api.common import Progress, dataframe
from fabricsim.errors import FabricsimError

if TYPE_CHECKING:
    import pandas

    from fabricsim.multijob.run import JobsRun
    from fabricsim.multijob.spec import JobsFile


@dataclass(frozen=True, eq=False)
class JobsResult:
    """Jobs sharing one fabric: `runs`, one per placement asked for (`multijob.run.JobsRun`: per job its time alone
    and shared, slowdown and the links that held it back; the contended links; the fabric's utilisation over
    time). Several runs are the same jobs placed by each policy, for comparison."""

    runs: tuple[JobsRun, ...]

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per (placement, job): times in seconds, slowdown, the link that held it back most."""
        return [{"placement": run.placement, "job": j.name, "gpus": j.gpus, "communication": j.what,
                 "iterations": j.iterations, "start_s": j.start, "alone_s": j.alone, "shared_s": j.shared,
                 "slowdown": j.slowdown,
                 "held_back_by": run.topology.link_name(j.held_back[0][0]) if j.held_back else None}
                for run in self.runs for j in run.jobs]

    def to_pandas(self) -> pandas.DataFrame:
        """The records as a DataFrame (needs the `fabricsim[pandas]` extra)."""
        return dataframe(self.to_records())

    def figure(self) -> Any:
        """Each job's rate and each fabric tier's utilisation over time, per run: a matplotlib Figure (needs
        `fabricsim[plot]`)."""
        from fabricsim.reports.jobs import figure

        return figure(self.runs)

    def to_perfetto(self, path: str | Path) -> Path:
        """Write a Perfetto trace (one track per job, the fabric's utilisation as counters) and return its path."""
        from fabricsim.multijob.trace import to_perfetto

        return to_perfetto(self.runs, path)

    def __repr__(self) -> str:
        parts = [f"{run.placement}: " + ", ".join(f"{j.name} x{j.slowdown:.2f}" for j in run.jobs) for run in self.runs]
        first = self.runs[0]
        return f"JobsResult({len(first.jobs)} jobs on {first.cluster}, {first.gpus:,} GPUs; {'; '.join(parts)})"


def jobs(source: str | Path | Mapping[str, Any] | JobsFile, *, placement: str | Sequence[str] | None = None,
         level: str | None = None, routing: str | None = None, progress: Progress | None = None) -> JobsResult:
    """Run several jobs on one fabric, alone and together: `source` is a jobs file (YAML: cluster, jobs with their
    GPUs, communication and start times; `fabricsim schema jobs`), its contents as a mapping, or a `JobsFile`.
    `placement` ('packed', 'scattered', 'random') places every job given a GPU count by that policy; a list runs
    the same jobs once per policy, to compare them. `level` / `routing` replace the file's."""
    import msgspec

    from fabricsim.multijob.run import build_cluster, run_jobs
    from fabricsim.multijob.spec import JobsFile, jobs_from, load_jobs

    if isinstance(source, JobsFile):
        spec = source
    elif isinstance(source, Mapping):
        spec = jobs_from(dict(source))
    else:
        spec = load_jobs(source)
    if level is not None or routing is not None:
        if level not in (None, "flow", "analytical"):
            raise FabricsimError(f"unknown level '{level}': use 'flow' or 'analytical'")
        if routing not in (None, "ecmp", "adaptive"):
            raise FabricsimError(f"unknown routing '{routing}': use 'ecmp' or 'adaptive'")
        spec = msgspec.structs.replace(spec, level=level or spec.level, routing=routing or spec.routing)
    policies: list[str | None] = [placement] if placement is None or isinstance(placement, str) else list(placement)
    if not policies:
        raise FabricsimError("placement lists no policy: give one or more of packed, scattered, random")
    topo = build_cluster(spec)
    total = len(policies) * len(spec.jobs)

    def tick(i: int) -> Callable[[int, int], None]:
        return lambda done, _n: progress(i * len(spec.jobs) + done, total) if progress is not None else None

    return JobsResult(tuple(run_jobs(spec, p, topo=topo, progress=tick(i)) for i, p in enumerate(policies)))
