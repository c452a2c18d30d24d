"""A failures sweep: one collective at one size on a cluster with 0, 1, ... N elements of a class failed (spines,
leaves, NICs, cables), each count drawn with several seeds, as `fabricsim whatif failures` prints and plots it.

Every draw is `random:K:CLASS` with its seed (`topology.faults`), so the K failed of a seed are among its K + 1:
a seed's curve only loses elements. Each draw is timed as `perf` times the size (fabricsim's tuner on the faulted
topology, NCCL's algorithm choice included). A draw that cuts a GPU off moves nothing: it counts as busbw 0 and
is reported as cut. Per count: the median and the worst busbw over the seeds, the change of the median against
the healthy cluster, what bounds the worst draw (its bottleneck links, which name the links that survived), and the
load of the layer that fails (the links of the failed class that are left, busiest and mean, as a share of their
effective capacity over the collective's time): a failure costs nothing while that layer has headroom.

The plot's reference line for a layer whose capacity failures cut (spines, cores, switch cables) is that layer's own
limit: the healthy busbw over the layer's mean load, times the share of the layer left. Where routing spreads flows
evenly over what is left (adaptive routing) busbw follows the lower of it and the healthy bound; hashed ECMP piles
flows on some links and falls below it.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fabricsim.engine.capacity import effective_capacity
from fabricsim.errors import FabricsimError, option
from fabricsim.topology import names as N
from fabricsim.topology.faulted import Cut, apply_faults, report_of
from fabricsim.topology.faults import Faults
from fabricsim.topology.model import Topology
from fabricsim.units import GB, format_bytes

WHAT = tuple(c for c in N.CLASSES if c != "gpus")  # a failed GPU leaves the job: there is nothing to time
CAPACITY_CLASSES = ("spines", "cores", "links", "spine-links", "core-links")  # a layer whose capacity a failure cuts
MAX_DRAWS = 10_000


@dataclass(frozen=True)
class Draw:
    """One seed at one count: its busbw (0 when the failures cut a GPU off), the pick and what bounds it."""

    seed: int
    busbw: float  # bytes/s
    time: float  # s (inf when cut)
    algorithm: str
    bottleneck: str  # the busiest surviving link, or the limiter where a rate cap binds
    failed: str  # what the draw failed, as the fault report says it
    layer_max: float = 0.0  # busiest link left of the failed class's layer: bytes / (effective capacity x time)
    layer_mean: float = 0.0  # the layer's mean load, likewise
    cut: str = ""  # why nothing ran, when the failures cut the cluster


@dataclass(frozen=True)
class Row:
    """One count of failed elements over every seed."""

    failed: int
    draws: tuple[Draw, ...]

    @property
    def median(self) -> float:
        return float(statistics.median(d.busbw for d in self.draws))

    @property
    def worst(self) -> Draw:
        return min(self.draws, key=lambda d: (d.busbw, d.seed))

    @property
    def cuts(self) -> int:
        return sum(bool(d.cut) for d in self.draws)


def parse_counts(text: str) -> list[int]:
    """'0..8' -> [0, 1, ..., 8]; '0,1,2,4' -> those; sorted and distinct."""
    raw = str(text).strip()
    try:
        if ".." in raw:
            lo, _, hi = raw.partition("..")
            counts = list(range(int(lo), int(hi) + 1))
        else:
            counts = [int(x) for x in raw.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 0:
        raise FabricsimError(f"{option('fail_counts', text, flag='--fail-count')} must be a range such as 0..8 or a list such as 0,1,2,4 of "
                             "counts from 0")
    return sorted(set(counts))


def sweep(topo: Topology, ranks: np.ndarray, collective: str, nbytes: int, counts: Sequence[int], what: str,
          seeds: int, timer: Callable[[Topology], tuple[float, str, Any]],
          progress: Callable[[int, int], None] | None = None) -> list[Row]:
    """The rows of a failures sweep; `timer(topology)` -> (busbw, algorithm, engine Result) of the collective."""
    if what not in WHAT:
        raise FabricsimError(f"{option('what', what)}: fail one of {', '.join(WHAT)}")
    if seeds < 1:
        raise FabricsimError(f"{option('seeds', seeds)}: draw each count with at least 1 seed")
    size = class_size(topo, what)
    if not size:
        has = [w for w in WHAT if class_size(topo, w)]
        raise FabricsimError(f"{topo.name} has no {what} to fail: choose {option('what')} among the classes it has "
                             f"({', '.join(has)})")
    if max(counts) > size:
        raise FabricsimError(f"{option('fail_counts', flag='--fail-count')} up to {max(counts)}, but {topo.name} has {_counted(size, what)}: sweep at most "
                             f"{size}")
    todo = sum(1 if k == 0 else seeds for k in counts)
    if todo > MAX_DRAWS:
        raise FabricsimError(f"{todo:,} draws is more than a sweep runs ({MAX_DRAWS:,}): use fewer counts or seeds")
    rows, done = [], 0
    for k in counts:
        draws = []
        for seed in range(1 if k == 0 else seeds):
            draws.append(_draw(topo, k, what, seed, timer))
            done += 1
            if progress is not None:
                progress(done, todo)
        rows.append(Row(k, tuple(draws)))
    return rows


def _draw(topo: Topology, k: int, what: str, seed: int, timer) -> Draw:
    faults = Faults(fail=(f"random:{k}:{what}",), seed=seed) if k else Faults()
    try:
        faulted = apply_faults(topo, faults)
        busbw, algo, res = timer(faulted)
    except Cut as err:
        return Draw(seed, 0.0, float("inf"), "-", "-", faults.text(), cut=str(err))
    report = report_of(faulted)
    neck = res.bottlenecks[0].name if res.limiter.kind == "links" and res.bottlenecks else str(res.limiter)
    load = res.link_bytes[layer_links(faulted, what)] / (effective_capacity(faulted) * res.time)[layer_links(faulted, what)]
    return Draw(seed, busbw, res.time, algo, neck, report.lines[0] if report is not None else "nothing",
                float(load.max(initial=0.0)), float(load.mean()) if load.size else 0.0)


def layer_links(topo: Topology, what: str) -> np.ndarray:
    """The links (both directions) of a class: its cables, or every link of its devices."""
    if what in N.LINK_CLASSES:
        cables = N.class_cables(topo, what)
        return np.concatenate([cables, cables + 1])
    hit = np.zeros(topo.n_devices, dtype=bool)
    hit[N.class_devices(topo, what)] = True
    return np.flatnonzero(hit[topo.link_src] | hit[topo.link_dst])


def class_size(topo: Topology, what: str) -> int:
    """Elements a count of `what` draws from (physical cables for a link class)."""
    if what in N.LINK_CLASSES:
        return int(topo.link_count[N.class_cables(topo, what)].sum())
    return int(N.class_devices(topo, what).size)


def records(rows: Sequence[Row], healthy: float) -> list[dict]:
    """One dict per count (SI units), every draw listed."""
    return [{"failed": r.failed, "busbw_median_Bps": r.median, "busbw_worst_Bps": r.worst.busbw,
             "change_median_pct": (r.median / healthy - 1) * 100 if healthy else 0.0, "cut_draws": r.cuts,
             "worst_bottleneck": r.worst.bottleneck, "worst_layer_load_max": r.worst.layer_max,
             "draws": [{"seed": d.seed, "busbw_Bps": d.busbw, "time_s": d.time if np.isfinite(d.time) else None,
                        "algorithm": d.algorithm, "bottleneck": d.bottleneck, "failed": d.failed,
                        "layer_load_max": d.layer_max, "layer_load_mean": d.layer_mean,
                        **({"cut": d.cut} if d.cut else {})} for d in r.draws]} for r in rows]


def _counted(n: int, what: str) -> str:
    """'2 spines', '1 spine', '1 leaf', '1 nvswitch': a count of a failure class (WHAT names them in the plural)."""
    if n != 1:
        return f"{n:,} {what}"
    return f"1 {what[:-3] + 'f' if what.endswith('leaves') else what[:-2] if what.endswith('switches') else what[:-1]}"


def format_table(rows: Sequence[Row], title: str, what: str) -> str:
    """The sweep as an aligned table: per count the median and worst busbw, the change, the load of the layer that
    fails and the worst draw's bottleneck."""
    healthy = rows[0].median if rows and rows[0].failed == 0 else None
    head = ["failed", "draws", "busbw median", "busbw worst", "change", "layer load", "algorithm",
            "worst draw: bottleneck"]
    lines = []
    for r in rows:
        change = f"{(r.median / healthy - 1) * 100:+.1f}%" if healthy else "-"
        cut = f" ({r.cuts} cut)" if r.cuts else ""
        algos = sorted({d.algorithm for d in r.draws if not d.cut}) or ["-"]
        w = r.worst
        load = f"{w.layer_max:.0%} / {w.layer_mean:.0%}" if not w.cut else "-"
        lines.append([str(r.failed), f"{len(r.draws)}{cut}", f"{r.median / GB:.2f}", f"{w.busbw / GB:.2f}",
                      change, load, ",".join(algos), w.cut or w.bottleneck])
    widths = [max(len(x) for x in col) for col in zip(head, *lines)]
    out = [title, "  ".join(h.rjust(w) if i < 6 else h.ljust(w) for i, (h, w) in enumerate(zip(head, widths))).rstrip()]
    out += ["  ".join(x.rjust(w) if i < 6 else x.ljust(w) for i, (x, w) in enumerate(zip(line, widths))).rstrip()
            for line in lines]
    out.append("busbw in GB/s (nccl-tests' bus bandwidth); median and worst over the draws of each count; change: the "
               f"median against no failure; layer load: the {what}' links left in the worst draw, busiest / mean, as a "
               "share of their effective capacity over the collective's time")
    worst = [f"  {r.failed}: seed {r.worst.seed}: {r.worst.failed}" for r in rows if r.failed]
    if worst:
        out.append("worst draw of each count:")
        out += worst
    return "\n".join(out)


def figure(rows: Sequence[Row], title: str, what: str, size: int):
    """busbw (median, worst, every draw) against the number failed, and for a layer whose capacity failures cut,
    that layer's limit (see the module docstring): a matplotlib Figure."""
    from fabricsim.reports.plotting import new_figure

    fig, ax = new_figure(7.5, 4.5)
    counts = [r.failed for r in rows]
    for r in rows:
        ax.scatter([r.failed] * len(r.draws), [d.busbw / GB for d in r.draws], s=12, color="0.6", zorder=2,
                   label="each draw" if r is rows[0] else None)
    ax.plot(counts, [r.median / GB for r in rows], "o-", label="median", zorder=3)
    ax.plot(counts, [r.worst.busbw / GB for r in rows], "s--", label="worst", zorder=3)
    first = rows[0].draws[0] if rows and rows[0].failed == 0 else None
    if first is not None and what in CAPACITY_CLASSES and first.layer_mean > 0:
        limit = first.busbw / GB / first.layer_mean
        ax.plot(counts, [limit * (size - k) / size for k in counts], ":", color="0.3",
                label=f"the {what}' own limit: healthy busbw / their mean load x share of the {size} left")
    ax.set_xlabel(f"{what} failed")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_xticks(counts)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def title(cluster: str, gpus: int, collective: str, nbytes: int, what: str, seeds: int, routing: str | None) -> str:
    how = f", {routing} routing" if routing else ""
    return (f"{collective} {format_bytes(nbytes)} on {cluster} ({gpus:,} GPUs{how}): {what} failed, "
            f"{seeds} seed{'s' * (seeds != 1)} per count")
