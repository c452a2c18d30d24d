"""Engine speed: flow-level AllReduce of 1 GiB (ring and hierarchical) on superpod-h100 (3-level NDR fat tree),
and flow-level PXN all-to-all of 1 GiB: every transfer listed up to MAX_ALLTOALL_RANKS ranks, beyond that one
node's transfers rotated node by node and timed by symmetry (sampled rotations, mean load per link class).

8 channels. Prints wall time (topology build excluded, schedule + routing + timing included) and peak traced memory.
Targets on a 2-core machine: <= 1 s / 5 s / 60 s at 1,024 / 16,384 / 131,072 GPUs, <= 8 GiB at 131,072;
all-to-all <= 2 s at 1,024 GPUs (n^2 transfers), <= 10 s at 131,072 (rotated).
Usage: python3 benchmarks/bench_engine.py [gpus ...]
"""

from __future__ import annotations

import dataclasses
import sys
import time
import tracemalloc

from fabricsim.engine import simulate
from fabricsim.schedules import build_schedule, structure_from_topology
from fabricsim.topology import build, load_spec

SIZE = 1 << 30
CHANNELS = 8  # one ring per NIC rail, as NCCL builds on 8-NIC nodes


def bench(gpus: int) -> list[tuple]:
    topo = build(dataclasses.replace(load_spec("superpod-h100", gpus=gpus), levels=3))
    rows = []
    runs = [("all_reduce", "ring"), ("all_reduce", "hierarchical"), ("alltoall", "pxn")]
    for collective, algorithm in runs:
        tracemalloc.start()
        t0 = time.perf_counter()
        sched = build_schedule(collective, algorithm, topo.n_gpus, structure=structure_from_topology(topo),
                               channels=CHANNELS)
        r = simulate(topo, sched, SIZE, level="flow", channels=CHANNELS if collective == "alltoall" else None)
        wall = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        name = algorithm if collective == "all_reduce" else f"{algorithm} {collective}" + (
            " (rotated)" if sched.rotations > 1 else "")
        rows.append((gpus, name, wall, peak / 2**30, r.time, r.busbw / 1e9, r.bottlenecks[0].tech if r.bottlenecks else "-"))
    return rows


def main(argv: list[str]) -> None:
    sizes = [int(a) for a in argv] or [1024, 16384, 131072]
    print(f"{'GPUs':>8} {'algorithm':>24} {'wall s':>8} {'peak GiB':>9} {'sim time ms':>12} {'busbw GB/s':>11} bottleneck")
    for g in sizes:
        for gpus, alg, wall, peak, t, busbw, tech in bench(g):
            print(f"{gpus:>8} {alg:>24} {wall:>8.2f} {peak:>9.2f} {t * 1e3:>12.3f} {busbw:>11.1f} {tech}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
