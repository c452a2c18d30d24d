"""Held-out validation of calibration on the calibration set's real logs (`validation.logs`).

For each cluster with two or more logs, fit on one log (the smallest run) and predict the others, each on its own cluster file and
environment, before and after: the error of a log the fit never saw is the honest measure of whether the fitted
parameters are the cluster's or the log's. Logs count as one cluster when their sources describe the same
machines (GROUPS, from the logs' index: source and hardware). Clusters with one log are not scored here: the only
held-out data a single log offers is its own other sizes, which share every mechanism the fit absorbs, so that
score would flatter the fit (README: "Calibrate from your own logs").
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.fitting.fit import FitResult, file_provenance, fit
from fabricsim.topology import build, with_calibration
from fabricsim.validation.calibration import LogEntry, load_rows
from fabricsim.validation.logs import LogCase, LogScore, case_for, default_index, score

# Logs of one cluster (index ids), and why they are one: each from the index's source and hardware fields.
GROUPS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("DGX A100, 4 GPUs", ("dgxa100-4gpu-ar", "dgxa100-4gpu-ar-p2p-off"),
     "one DGX A100, the same container; the second run with NCCL_P2P_DISABLE=1 (through host memory)"),
    ("DGX H100, 4 GPUs", ("dgxh100-4gpu-ar", "dgxh100-4gpu-ar-p2p-off"),
     "one DGX H100, the same container; the second run with NCCL_P2P_DISABLE=1 (through host memory)"),
    ("RTX 4090 PCIe (Kalavai)", ("kalavai-rtx4090-2gpu-ar", "kalavai-rtx4090-4gpu-ar"),
     "the same RTX 4090 machine and container, 2 and 4 GPUs"),
    ("AWS p5 (H100, EFA)", ("aws-p5-16gpu-ar-a", "aws-p5-16gpu-ar-b"),
     "the same two p5.48xlarge nodes, NCCL 2.20 and 2.22 (one source repository)"),
    ("OCI GB200 NVL72", ("oke-gb200-8gpu-ar", "oke-gb200-128gpu-ar"),
     "GB200 trays of OCI NVL72 racks: 2 trays in one NVLink domain, and 32 trays over 2 racks (other shapes' NICs)"),
)


@dataclass(frozen=True)
class Held:
    """One held-out log's errors before and after the fit on another log of its cluster."""

    cluster: str
    fitted_on: str
    log: str
    before: LogScore
    after: LogScore
    fit: FitResult


@dataclass(frozen=True)
class Skipped:
    """A cluster or pair that could not be scored, and why."""

    cluster: str
    why: str


def _median(xs: list[float]) -> float:
    return float(np.median(xs)) if xs else math.nan


def _case(entry: dict, logs_dir: Path) -> tuple[LogCase, str]:
    data = (logs_dir / entry["log"]).read_bytes()
    return case_for(entry, logs_dir), hashlib.sha256(data).hexdigest()


def run(index: str | Path | None = None, level: str = "flow") -> tuple[list[Held], list[Skipped]]:
    """Every group of the index's logs: fit on each of its smallest runs in turn (a user measures a small job to
    predict a large one; the fit on 32 GB200 trays alone would cost minutes), predict the group's others before and
    after."""
    path = Path(index) if index else default_index()
    if not path.is_file():
        raise FabricsimError(f"nccl-tests log index '{path}' not found: pass --data PATH to the logs' index.jsonl")
    entries = {str(e.get("id")): e for e in load_rows(path, LogEntry)}
    held: list[Held] = []
    skipped: list[Skipped] = []
    for name, ids, _why in GROUPS:
        have = [i for i in ids if i in entries]
        if len(have) < 2:
            skipped.append(Skipped(name, f"{len(have)} of its logs in this index; held-out needs 2"))
            continue
        cases = {i: _case(entries[i], path.parent) for i in have}
        topos = {i: build(cases[i][0].spec) for i in have}
        base = {i: score(cases[i][0], level, topos[i]) for i in have}
        fewest = min(len(cases[i][0].ranks) for i in have)
        for on in (i for i in have if len(cases[i][0].ranks) == fewest):  # fit small, predict large
            case, sha = cases[on]
            try:
                result = fit([case], [file_provenance(case, entries[on]["log"], sha)], case.spec, level)
            except FabricsimError as err:
                skipped.append(Skipped(name, f"fit on {on}: {err}"))
                continue
            for other in have:
                if other == on:
                    continue
                target = cases[other][0]  # its cluster calibrated: shares the routes its base score derived
                topo = with_calibration(topos[other], result.calibrated)
                held.append(Held(name, on, other, base[other], score(target, level, topo), result))
    return held, skipped


def _pct(x: float) -> str:
    return f"{x:6.1f}%" if math.isfinite(x) else f"{'-':>7}"


def table(held: list[Held], skipped: list[Skipped]) -> str:
    """Held-out errors per pair (median absolute %: busbw at >= 1 MiB, time at <= 64 KiB), pooled, and what each
    fit set."""
    lines = ["calibrate, held out: fit on one log of a cluster, predict its other logs (median absolute % error; "
             "busbw at >= 1 MiB, time at <= 64 KiB)",
             f"{'cluster':<24} {'fitted on':<26} {'predicted':<26} {'n':>3} {'busbw before':>12} {'after':>7}  "
             f"{'n':>3} {'time before':>11} {'after':>7}"]
    for h in held:
        lines.append(f"{h.cluster[:24]:<24} {h.fitted_on[:26]:<26} {h.log[:26]:<26} {len(h.before.busbw_errors()):>3} "
                     f"{_pct(_median(h.before.busbw_errors())):>12} {_pct(_median(h.after.busbw_errors()))}  "
                     f"{len(h.before.time_errors()):>3} {_pct(_median(h.before.time_errors())):>11} "
                     f"{_pct(_median(h.after.time_errors()))}")
    pooled = pooled_errors(held)
    lines.append(f"{'pooled, every held-out size':<78} {pooled['busbw_n']:>3} {_pct(pooled['busbw_before']):>12} "
                 f"{_pct(pooled['busbw_after'])}  {pooled['time_n']:>3} {_pct(pooled['time_before']):>11} "
                 f"{_pct(pooled['time_after'])}")
    lines += ["", "what each fit set (catalog -> fitted; parameters the log does not exercise stay at the catalog):"]
    seen = set()
    for h in held:
        if h.fitted_on in seen:
            continue
        seen.add(h.fitted_on)
        parts = [f"{n} {_value(n, h.fit.before[n])} -> {_value(n, v)}" for n, v in h.fit.after.items()]
        lines.append(f"  {h.fitted_on:<26} {'; '.join(parts)}")
    for s in skipped:
        lines.append(f"  not scored: {s.cluster}: {s.why}")
    return "\n".join(line.rstrip() for line in lines)


def pooled_errors(held: list[Held]) -> dict:
    """Median absolute % error over every held-out size of every pair, before and after."""
    def pool(which: str, kind: str) -> list[float]:
        return [e for h in held for e in getattr(getattr(h, which), f"{kind}_errors")()]
    return {"busbw_n": len(pool("before", "busbw")), "time_n": len(pool("before", "time")),
            "busbw_before": _median(pool("before", "busbw")), "busbw_after": _median(pool("after", "busbw")),
            "time_before": _median(pool("before", "time")), "time_after": _median(pool("after", "time"))}


def _value(name: str, v: float) -> str:
    return f"{v * 1e6:.2f} us" if name.endswith("latency") else f"{v:.3f}"
