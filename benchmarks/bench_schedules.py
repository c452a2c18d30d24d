"""Build time and memory held by AllReduce schedules at scale (ring / hierarchical / tree).

Run: python3 benchmarks/bench_schedules.py   (8 ranks per node, NVSwitch, no SHARP)
Compactness target: bytes grow linearly with ranks (ring steps stored once with repeat)."""

from __future__ import annotations

import time

from fabricsim.schedules import Structure, build_schedule

RANKS = (1024, 16384, 131072)
ALGOS = ("ring", "hierarchical", "tree")


def measure(algorithm: str, nranks: int) -> tuple[float, int, int]:
    """(build seconds, bytes held by the schedule's arrays, steps with repeats)."""
    s = Structure(nranks=nranks, ranks_per_node=8, has_nvswitch=True)
    build_schedule.cache_clear()
    t0 = time.perf_counter()
    sched = build_schedule("all_reduce", algorithm, nranks, structure=s)
    return time.perf_counter() - t0, sched.nbytes_held, sched.n_steps


def main() -> None:
    print(f"{'algorithm':<13}{'ranks':>8}{'build s':>10}{'MiB held':>10}{'B/rank':>8}{'steps':>8}")
    for algorithm in ALGOS:
        for n in RANKS:
            seconds, nbytes, steps = measure(algorithm, n)
            print(f"{algorithm:<13}{n:>8}{seconds:>10.3f}{nbytes / 2**20:>10.2f}{nbytes / n:>8.1f}{steps:>8}")


if __name__ == "__main__":
    main()
