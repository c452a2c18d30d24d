"""Benchmark bulk routing: wall time and peak memory of route_pairs on superpod-h100.

Patterns: a full ring (rank i -> i+1) with ECMP and with adaptive routing, and every ordered pair of
distinct GPUs inside each node. Time is the best of a few runs (tables warm: they are built once per
topology, and the first, cold, run is reported separately); peak memory is tracemalloc's peak
(numpy allocations included) during one routing call.

    python3 benchmarks/bench_routing.py [--gpus 1024,16384,131072]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from fabricsim.routing import route_pairs
from fabricsim.topology import load_cluster


def ring(n: int, gpn: int) -> tuple[np.ndarray, np.ndarray]:
    s = np.arange(n)
    return s, (s + 1) % n


def node_all_pairs(n: int, gpn: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.meshgrid(np.arange(gpn), np.arange(gpn), indexing="ij")
    keep = a != b
    base = np.arange(0, n, gpn)[:, None]
    return (base + a[keep]).ravel(), (base + b[keep]).ravel()


def measure(topo, s, d, adaptive: bool, repeats: int = 3):
    t0 = time.perf_counter()
    routes = route_pairs(topo, s, d, adaptive=adaptive)
    first = time.perf_counter() - t0
    best = first
    for _ in range(repeats - 1):
        t0 = time.perf_counter()
        route_pairs(topo, s, d, adaptive=adaptive)
        best = min(best, time.perf_counter() - t0)
    tracemalloc.start()
    route_pairs(topo, s, d, adaptive=adaptive)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return routes, first, best, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", default="1024,16384,131072")
    args = ap.parse_args()
    head = f"{'GPUs':>7} {'pattern':<16} {'pairs':>9} {'paths':>9} {'links':>10} {'cold s':>8} {'warm s':>8} {'peak MiB':>9}"
    print(head)
    print("-" * len(head))
    for n in (int(x) for x in args.gpus.split(",")):
        topo = load_cluster("superpod-h100", gpus=n)
        gpn = int(topo.features["gpus_per_node"])
        for label, pattern, adaptive in (("ring", ring, False), ("ring adaptive", ring, True),
                                         ("node all-pairs", node_all_pairs, False)):
            s, d = pattern(topo.n_gpus, gpn)
            routes, cold, warm, peak = measure(topo, s, d, adaptive)
            print(f"{topo.n_gpus:>7} {label:<16} {s.size:>9} {routes.n_paths:>9} {routes.links.size:>10} "
                  f"{cold:>8.3f} {warm:>8.3f} {peak / 2**20:>9.1f}")


if __name__ == "__main__":
    main()
