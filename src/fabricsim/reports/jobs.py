"""Reports of jobs sharing a fabric (`fabricsim.multijob.run.JobsRun`): the table, JSON records and the figure.

One run prints a row per job (its time alone and shared, the slowdown, the link that held it back most), the
contended links and each fabric tier's utilisation; several runs of the same jobs (a placement comparison) print
their figures side by side, then each run's links.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fabricsim.units import format_duration, format_ranks

SHOWN_LINKS = 6  # contended links listed by name per run (all are counted)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f}"


def _ranks(ranks: np.ndarray) -> str:
    text = format_ranks(ranks)
    return text if len(text) <= 24 else text[:21] + "..."


def header(run) -> str:
    """'# fabricsim jobs on CLUSTER: N GPUs, leaves 2:1 oversubscribed, engine level flow, ecmp routing'."""
    topo = run.topology
    over = f", leaves {run.oversubscription:g}:1 oversubscribed" if run.oversubscription != 1 else ""
    routing = f", {topo.features.get('routing')} routing" if topo.features.get("fabric") else ""
    return f"# fabricsim jobs on {run.cluster}: {run.gpus:,} GPUs{over}, engine level {run.level}{routing}"


def _held(run, job) -> str:
    if not job.held_back:
        return "-"
    link, seconds = job.held_back[0]
    more = f" +{len(job.held_back) - 1}" if len(job.held_back) > 1 else ""
    return f"{run.topology.link_name(link)} {_ms(seconds)} ms{more}"


def table(runs: Sequence[Any]) -> str:
    """The jobs table of one run, or several runs of the same jobs side by side (placement comparison)."""
    first = runs[0]
    lines = [header(first)]
    head = ["job", "GPUs", "communication per iteration", "iters", "start ms"]
    if len(runs) == 1:
        head += ["placement", "ranks", "alone ms", "shared ms", "slowdown", "held back most by (time)"]
    else:
        for r in runs:
            head += [f"{r.placement} alone ms", "shared ms", "slowdown"]
    rows = []
    for j, job in enumerate(first.jobs):
        row = [job.name, str(job.gpus), job.what, str(job.iterations), _ms(job.start)]
        if len(runs) == 1:
            row += [job.placement, _ranks(job.ranks), _ms(job.alone), _ms(job.shared), f"{job.slowdown:.3f}",
                    _held(first, job)]
        else:
            for r in runs:
                jr = r.jobs[j]
                row += [_ms(jr.alone), _ms(jr.shared), f"{jr.slowdown:.3f}"]
        rows.append(row)
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    left = {0, 2, 5, 6, 10} if len(runs) == 1 else {0, 2}
    fmt = (lambda line: "  ".join(x.ljust(w) if i in left else x.rjust(w) for i, (x, w) in enumerate(zip(line, widths))))
    lines += [fmt(head).rstrip(), *(fmt(r).rstrip() for r in rows)]
    lines.append("alone: the job's run with the fabric to itself; shared: start to end with every job; slowdown: "
                 "shared / alone")
    for r in runs:
        lines += _links(r, len(runs) > 1)
        lines.append(_utilisation(r, len(runs) > 1))
    return "\n".join(lines)


def _links(run, label: bool) -> list[str]:
    tag = f"{run.placement}: " if label else ""
    if not run.contended:
        return [f"{tag}no link held a job back: every link the jobs share had room for all of them"]
    shown = run.contended[:SHOWN_LINKS]
    out = [f"{tag}{len(run.contended)} contended link{'s' * (len(run.contended) != 1)} (saturated, crossed by two or "
           "more jobs, holding one back), longest first:"]
    for c in shown:
        out.append(f"  {c.name}  [{c.tier}]  crossed by {', '.join(c.jobs)}; held back {', '.join(c.held)} for "
                   f"{_ms(c.seconds)} ms")
    if len(run.contended) > len(shown):
        out.append(f"  ... and {len(run.contended) - len(shown)} more")
    return out


def tier_means(run) -> list[tuple[str, float, float]]:
    """(tier, mean utilisation over the run, peak over its intervals) of each fabric tier."""
    u = run.utilisation
    dt = np.diff(u.times)
    span = float(dt.sum())
    return [(t, float(u.tier_util[:, i] @ dt / span) if span > 0 else 0.0, float(u.tier_util[:, i].max(initial=0.0)))
            for i, t in enumerate(u.tiers)]


def _utilisation(run, label: bool) -> str:
    tag = f"{run.placement}: " if label else ""
    parts = [f"{t} {mean:.0%} (peak {peak:.0%})" for t, mean, peak in tier_means(run)]
    if not parts:
        return f"{tag}no scale-out fabric: the jobs run inside their NVLink domains"
    return (f"{tag}fabric utilisation over the {format_duration(run.makespan)} run (mean of each tier's links' "
            f"effective capacity): " + ", ".join(parts))


def records(run) -> dict[str, Any]:
    """One run as plain data (SI units in the key names), as `fabricsim jobs --format json` prints it."""
    from fabricsim import __version__

    return {
        "fabricsim_version": __version__, "cluster": run.cluster, "gpus": run.gpus,
        "oversubscription": run.oversubscription, "placement": run.placement, "level": run.level,
        "makespan_s": run.makespan,
        "jobs": [{"name": j.name, "gpus": j.gpus, "placement": j.placement, "ranks": format_ranks(j.ranks),
                  "communication": j.what, "iterations": j.iterations, "start_s": j.start, "alone_s": j.alone,
                  "shared_s": j.shared, "slowdown": j.slowdown, "communication_alone_s": j.comm_alone,
                  "held_back": [{"link": run.topology.link_name(lk), "seconds": s} for lk, s in j.held_back]}
                 for j in run.jobs],
        "contended_links": [{"link": c.name, "tier": c.tier, "crossed_by": list(c.jobs), "held_back": list(c.held),
                             "seconds": c.seconds} for c in run.contended],
        "fabric_utilisation": [{"tier": t, "mean": m, "peak": p} for t, m, p in tier_means(run)],
        "notes": list(run.notes),
    }


PLOT_BINS = 200  # time bins each curve is averaged over (a loop's iterations are far shorter than its run)


def _binned(times: np.ndarray, values: np.ndarray, weight: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bin, the mean of a piecewise-constant `values` (one per interval between `times`) weighted by `weight`
    (the time it counts for); NaN where a bin has no weight."""
    dt = np.diff(times)
    top = np.interp(edges, times, np.concatenate([[0.0], np.cumsum(values * weight * dt)]))
    bottom = np.interp(edges, times, np.concatenate([[0.0], np.cumsum(weight * dt)]))
    den = np.diff(bottom)
    return np.divide(np.diff(top), den, out=np.full(den.shape, np.nan), where=den > 1e-12 * (edges[1] - edges[0]))


def figure(runs: Sequence[Any]):
    """Per run (side by side): each job's rate while it communicates as a fraction of its pace alone, and each
    fabric tier's utilisation, over time (averaged over short bins): a matplotlib Figure (the `plot` extra)."""
    from fabricsim.reports.plotting import new_figure

    fig, axes = new_figure(6.5 * len(runs), 7.0, ncols=len(runs), nrows=2)
    end = max(run.makespan for run in runs)
    edges = np.linspace(0.0, max(end, 1e-12), PLOT_BINS + 1)
    mid = (edges[:-1] + edges[1:]) / 2 * 1e3
    for col, run in enumerate(runs):
        pace_ax, util_ax = axes[0, col], axes[1, col]
        u = run.utilisation
        if u.times.size < 2:
            continue
        for j, job in enumerate(run.jobs):
            comm = (run.schedule.phase_of[:, j] >= 0).astype(np.float64)
            pace_ax.plot(mid, _binned(u.times, u.job_pace[:, j], comm, edges) * 100, linewidth=1.4,
                         label=f"{job.name} (x{job.slowdown:.2f})")
        for i, tier in enumerate(u.tiers):
            down = tier.startswith(("spine -> leaf", "core", "leaf -> nic"))
            util_ax.plot(mid, _binned(u.times, u.tier_util[:, i], np.ones(u.times.size - 1), edges) * 100,
                         linestyle="--" if down else "-", linewidth=1.2, label=tier)
        pace_ax.set_title(f"{run.placement}: {len(run.jobs)} jobs on {run.gpus:,} GPUs", fontsize=10)
        pace_ax.set_ylabel("rate while communicating, % of its pace alone")
        util_ax.set_ylabel("tier utilisation, % of effective capacity")
        for ax in (pace_ax, util_ax):
            ax.set_xlim(0, end * 1e3)
            ax.set_ylim(0, 105)
            ax.set_xlabel("time (ms)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="lower left")
    fig.suptitle(f"{runs[0].cluster}: jobs sharing the fabric ({PLOT_BINS} time bins; gaps: the job computing or done)",
                 fontsize=11)
    fig.tight_layout()
    return fig
