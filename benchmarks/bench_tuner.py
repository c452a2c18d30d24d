"""Tuner sweep speed: what `fabricsim perf all_reduce -b 8 -e 8G -f 8` costs on superpod-h100 (11 sizes, every
algorithm x protocol NCCL would try, flow level). Each call is timed once at its unit message and scaled to every
size that splits into equal pieces, so a sweep costs little more than its first size.

Prints wall time (topology build excluded) and peak RSS growth. Target on a 2-core machine: <= 60 s at 131,072 GPUs.
Usage: python3 benchmarks/bench_tuner.py [gpus ...]
"""

from __future__ import annotations

import resource
import sys
import time

import numpy as np

from fabricsim.reports.sweep import sizes
from fabricsim.topology import load_cluster
from fabricsim.tuner.select import best


def main(argv: list[str]) -> None:
    print(f"{'GPUs':>8} {'sizes':>6} {'wall s':>8} {'s/size':>7} {'peak RSS GiB':>13}  pick at 8 B / 8 GiB")
    for gpus in [int(a) for a in argv] or [1024, 16384, 131072]:
        topo = load_cluster("superpod-h100", gpus=gpus)
        size_list = sizes(8, 8 << 30, 8, None)
        ranks = np.arange(topo.n_gpus, dtype=np.int32)
        t0 = time.perf_counter()
        picks = [best(topo, "all_reduce", nb, ranks=ranks) for nb in size_list]
        wall = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        first, last = picks[0], picks[-1]
        print(f"{gpus:>8} {len(size_list):>6} {wall:>8.2f} {wall / len(size_list):>7.2f} {rss:>13.2f}  "
              f"{first.algorithm}/{first.protocol} / {last.algorithm}/{last.protocol}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
