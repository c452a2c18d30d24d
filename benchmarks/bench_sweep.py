"""Sweep throughput: a 10,000-point collective sweep on 1,024-GPU SuperPODs, on the local process pool and on a local
Ray cluster of the same CPUs, in points per second.

16 clusters (H100 / B200 x 200G / 400G NICs x 1:1 / 2:1 oversubscription x ECMP / adaptive routing) x 5 collectives
x 125 message sizes (8 MiB to 1000 MiB in 8 MiB steps). Points that differ only in size run on one worker with one
topology, so every size after the first is scaled from the engine's unit-message timing; each run writes a Parquet
file, and the two files must be the same bytes.

Usage: python3 benchmarks/bench_sweep.py [sizes per group (default 125)] [workers (default: the CPUs)]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

SWEEP = """
name: bench-10k
cluster: superpod-h100
perf:
  sizes: {{min: 8M, max: {top}M, step: 8M}}
axes:
  cluster.gpus: [1024]
  cluster.gpu: [H100, B200]
  cluster.nvswitch_chips: [4, 2]
  cluster.nic_gbps: [200, 400]
  cluster.oversubscription: [1, 2]
  cluster.routing: [ecmp, adaptive]
  perf.collective: [all_reduce, all_gather, reduce_scatter, broadcast, reduce]
zip: [[cluster.gpu, cluster.nvswitch_chips]]
"""


def main(argv: list[str]) -> None:
    from fabricsim import sweeps
    from fabricsim.sweeps import run, runners

    per_group = int(argv[0]) if argv else 125
    workers = int(argv[1]) if len(argv) > 1 else runners.default_workers()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.yaml"
        path.write_text(SWEEP.format(top=8 * per_group))
        plan = sweeps.load(path)
        print(f"{len(plan.points):,} points on 1,024-GPU clusters, {workers} workers")
        print(f"{'runner':>8} {'points':>8} {'failed':>7} {'wall s':>8} {'points/s':>9}")
        files = {}
        backends = ["pool"] + (["ray"] if runners.ray_available() else [])
        for backend in backends:
            out = Path(d) / f"{backend}.parquet"
            t0 = time.perf_counter()
            done = run.run(plan, out, ray=backend == "ray", workers=workers)
            wall = time.perf_counter() - t0  # Ray's start-up included
            files[backend] = out.read_bytes()
            print(f"{backend:>8} {done.computed:>8,} {done.failed:>7,} {wall:>8.1f} {done.computed / wall:>9.1f}",
                  flush=True)
        if len(files) == 2:
            print("pool and Ray files identical:", files["pool"] == files["ray"])
        else:
            print("Ray not installed (pip install 'fabricsim[ray]'): pool only")


if __name__ == "__main__":
    main(sys.argv[1:])
