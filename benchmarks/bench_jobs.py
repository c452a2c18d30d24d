"""Many jobs on one fabric: what `fabricsim jobs` costs with 16 jobs of 1,024 GPUs on a 16,384-GPU H100 SuperPOD
(3-level fat tree, 2:1 oversubscribed leaves), per placement policy (target: seconds, not minutes; issue 16).

The jobs loop all-reduces, all-gathers and all-to-alls of their own sizes and iteration counts, with staggered
starts, and two are training steps (Llama 3 8B, TP 8). Prints, per engine level and placement, the wall time of each
stage (placing and timing every job's iteration with the tuner or the step model; the event-driven run of all of
them together; the runs alone), the CPU time of the whole row (the best run's), the events and the distinct sets of active jobs the max-min solver met, and the
slowdowns. At flow level the first stage is the tuner's flow-level drain of each job's collective alone (a
1,024-rank all-to-all with hashed ECMP re-solves thousands of times); the run together is the same at both levels.
Usage: python3 benchmarks/bench_jobs.py [GPUS [JOBS [LEVEL ...]]]
"""

from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np

from fabricsim.engine import coflows
from fabricsim.engine.capacity import effective_capacity
from fabricsim.multijob.placement import Request, place
from fabricsim.multijob.spec import jobs_from
from fabricsim.multijob.workload import communication
from fabricsim.topology import build, load_spec
from fabricsim.units import parse_duration

REPEATS = 2  # runs per row; each stage is reported at its fastest (others share the machine)
KINDS = [("all_reduce", "1G", 20), ("all_gather", "512M", 30), ("alltoall", "128M", 40), ("reduce_scatter", "512M", 30)]


def jobs_file(n_jobs: int, per_job: int) -> dict:
    """The jobs file: collective loops of the four kinds in turn, every eighth job a training step."""
    jobs = []
    for i in range(n_jobs):
        if i % 8 == 7:
            jobs.append({"name": f"train{i}", "gpus": per_job, "start": f"{i}ms",
                         "train": {"model": "llama3-8b", "tp": 8, "global_batch": 256}})
            continue
        coll, size, iters = KINDS[i % len(KINDS)]
        jobs.append({"name": f"{coll}{i}", "gpus": per_job, "collective": coll, "size": size, "iterations": iters,
                     "start": f"{2 * i}ms", "gap": "1ms" if i % 2 else 0})
    return {"cluster": "superpod-h100", "jobs": jobs}


def _run_once(spec_c, spec, level: str, policy: str) -> tuple[float, float, float, float, coflows.Schedule, np.ndarray]:
    """(time the jobs, run together, runs alone, CPU time of the three) in seconds on a fresh topology (no warm
    caches), the run together and each job's slowdown."""
    topo = build(dataclasses.replace(spec_c, oversubscription=2.0))
    cpu0, t0 = time.process_time(), time.perf_counter()
    placed = place(topo, [Request(j.name, j.gpus, policy, i) for i, j in enumerate(spec.jobs)])
    comms = [communication(topo, j, r, level) for j, r in zip(spec.jobs, placed)]
    work = [coflows.Workload(j.name, c.phases, j.iterations, parse_duration(j.start)) for j, c in zip(spec.jobs, comms)]
    t1 = time.perf_counter()
    cap = effective_capacity(topo)
    together = coflows.run(cap, work)
    t2 = time.perf_counter()
    alone = [coflows.run(cap, [w]).end - w.start for w in work]
    t3, cpu = time.perf_counter(), time.process_time() - cpu0
    slow = np.array([(together.job_span(i)[1] - w.start) / a for i, (w, a) in enumerate(zip(work, alone))])
    return t1 - t0, t2 - t1, t3 - t2, cpu, together, slow


def main(argv: list[str]) -> None:
    gpus = int(argv[0]) if argv else 16384
    n_jobs = int(argv[1]) if len(argv) > 1 else 16
    levels = argv[2:] or ["analytical", "flow"]
    spec_c = load_spec("superpod-h100", gpus=gpus)
    spec = jobs_from(jobs_file(n_jobs, gpus // n_jobs))
    n_links = build(dataclasses.replace(spec_c, oversubscription=2.0)).n_links
    print(f"{n_jobs} jobs of {gpus // n_jobs:,} GPUs on superpod-h100 {gpus:,} GPUs, 2:1 oversubscribed, "
          f"{n_links:,} links; each stage the best of {REPEATS} runs on a fresh topology (the machine is shared)")
    print(f"{'level':<11} {'placement':<10} {'time jobs s':>11} {'run together s':>14} {'runs alone s':>12} "
          f"{'total s':>8} {'CPU s':>6} {'events':>7} {'solves':>7}  slowdown min / median / max")
    for level, policy in ((lv, p) for lv in levels for p in ("packed", "scattered", "random")):
        runs = [_run_once(spec_c, spec, level, policy) for _ in range(REPEATS)]
        stages, cpu = np.min([r[:3] for r in runs], axis=0), min(r[3] for r in runs)
        together, slow = runs[0][4], runs[0][5]
        solves = len({tuple(np.flatnonzero(row >= 0)) + tuple(row[row >= 0]) for row in together.phase_of})
        print(f"{level:<11} {policy:<10} {stages[0]:>11.2f} {stages[1]:>14.2f} {stages[2]:>12.2f} {stages.sum():>8.2f} "
              f"{cpu:>6.2f} {together.times.size - 1:>7} {solves:>7}  {slow.min():.3f} / {np.median(slow):.3f} / {slow.max():.3f}",
              flush=True)

if __name__ == "__main__":
    main(sys.argv[1:])
