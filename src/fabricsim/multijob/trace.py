"""Jobs sharing a fabric as a Chrome / Perfetto trace (open in ui.perfetto.dev): one process per job, its phases
as slices on one track (name, iteration, when its traffic drained) and its rate as a fraction of its own pace as a
counter; one 'fabric' process with each scale-out tier's utilisation as a counter. Several runs of the same jobs
(a placement comparison) sit side by side, their processes named by placement. Times in us."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fabricsim.engine.trace import write_trace

_US = 1e6


def trace_events(runs: Sequence) -> list[dict]:
    """The trace events of one or more runs (`multijob.run.JobsRun`), in a deterministic order."""
    ev: list[dict] = []
    for r, run in enumerate(runs):
        tag = f"{run.placement}: " if len(runs) > 1 else ""
        base = 1 + r * (len(run.jobs) + 1)
        s, u = run.schedule, run.utilisation
        for j, job in enumerate(run.jobs):
            pid = base + j
            ev.append({"ph": "M", "pid": pid, "name": "process_name",
                       "args": {"name": f"{tag}job {job.name} ({job.gpus} GPUs)"}})
            ev.append({"ph": "M", "pid": pid, "tid": 0, "name": "thread_name", "args": {"name": job.what}})
            mine = s.spans.job == j
            for it, ph, start, drained, end in zip(s.spans.iteration[mine].tolist(), s.spans.phase[mine].tolist(),
                                                  s.spans.start[mine].tolist(), s.spans.drained[mine].tolist(),
                                                  s.spans.end[mine].tolist()):
                phase = s.workloads[j].phases[ph]
                ev.append({"ph": "X", "pid": pid, "tid": 0, "name": phase.name, "ts": start * _US,
                           "dur": (end - start) * _US,
                           "args": {"iteration": it, "traffic_drained_us": drained * _US if phase.coflow else None}})
            for t, value in _counter(u.times, u.job_pace[:, j]):
                ev.append({"ph": "C", "pid": pid, "name": "rate, % of its pace", "ts": t * _US, "args": {"pace": value}})
        fabric = base + len(run.jobs)
        ev.append({"ph": "M", "pid": fabric, "name": "process_name", "args": {"name": f"{tag}fabric utilisation"}})
        for i, tier in enumerate(u.tiers):
            for t, value in _counter(u.times, u.tier_util[:, i]):
                ev.append({"ph": "C", "pid": fabric, "name": tier, "ts": t * _US, "args": {"%": value}})
    return ev


def _counter(times, values) -> list[tuple[float, float]]:
    """(time, percent) where a counter changes, and back to 0 at the end of the run."""
    out: list[tuple[float, float]] = []
    for t, v in zip(times[:-1].tolist(), (values * 100).round(3).tolist()):
        if not out or out[-1][1] != v:
            out.append((t, v))
    if times.size:
        out.append((float(times[-1]), 0.0))
    return out


def to_perfetto(runs: Sequence, path: str | Path) -> Path:
    """Write the trace of the runs to `path` and return it."""
    return write_trace(trace_events(runs), path)
