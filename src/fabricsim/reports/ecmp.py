"""Hashed ECMP over several hash seeds: the expected effect of collisions, not one seed's luck.

Under static ECMP each flow's uplink is a hash of its endpoints (routing.scaleout.flow_hash), so whether two
busy flows land on one uplink is chance: the same job measured at one node count can see half a NIC where the
next sees all of it. One seed gives one draw; timing the sweep under N seeds (topology.with_ecmp_seed, each a
topology with its own routes) gives the distribution. Each size's row is its median seed's (a real simulated
row, so time, busbw and bottleneck agree), beside the minimum, mean and maximum busbw over the seeds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fabricsim.errors import FabricsimError, option
from fabricsim.topology import Topology

MAX_SEEDS = 64  # each seed re-routes and re-times the whole sweep: a bound that keeps a run in minutes


@dataclass(frozen=True)
class EcmpSpread:
    """One size's busbw (B/s) under each ECMP hash seed; `row_seed` is the median seed whose row is shown."""

    size_bytes: int
    seeds: tuple[int, ...]
    busbw: tuple[float, ...]
    row_seed: int

    @property
    def low(self) -> float:
        return min(self.busbw)

    @property
    def mean(self) -> float:
        return float(np.mean(self.busbw))

    @property
    def high(self) -> float:
        return max(self.busbw)

    @property
    def low_seed(self) -> int:
        return self.seeds[int(np.argmin(self.busbw))]

    def record(self) -> dict:
        """As `perf --format json` prints it under 'ecmp' (GB/s, as nccl-tests prints busbw)."""
        return {"size_bytes": self.size_bytes, "seeds": list(self.seeds), "row_seed": self.row_seed,
                "busbw_GBps": [round(b / 1e9, 6) for b in self.busbw], "min_GBps": round(self.low / 1e9, 6),
                "mean_GBps": round(self.mean / 1e9, 6), "max_GBps": round(self.high / 1e9, 6)}


def not_hashed(topo: Topology) -> str:
    """Why no flow is hashed onto one of several paths here ('' when they are: a fabric of two or more tiers under
    'ecmp' routing), so that seeds change nothing."""
    if not topo.features.get("fabric"):
        return "the cluster has no scale-out fabric"
    if topo.features.get("routing") == "adaptive":
        return "adaptive routing spreads every flow over all paths"
    if int(topo.features.get("fabric_levels", 0) or 0) < 2:
        return "one leaf tier: no equal-cost paths to hash over"
    return ""


def check_seeds(count) -> int:
    if not isinstance(count, (int, np.integer)) or isinstance(count, bool) or not 1 <= count <= MAX_SEEDS:
        raise FabricsimError(f"{option('ecmp_seeds', count)}: give a whole number of hash seeds from 1 to {MAX_SEEDS}")
    return int(count)


def over_seeds(topo: Topology, count: int, run: Callable[[Topology, int], list]) -> tuple[list, list[EcmpSpread]]:
    """(points, spreads): `run(variant, k)` -> the sweep's points (each with `.row`) on the seed-k variant, for the
    `count` seeds from the topology's own; per size the median seed's point and the spread over all seeds."""
    from fabricsim.topology import with_ecmp_seed

    base = int(topo.features.get("ecmp_seed", 0))
    seeds = [(base + k) % 2**32 for k in range(count)]
    runs = [run(topo if s == base else with_ecmp_seed(topo, s), k) for k, s in enumerate(seeds)]
    points, spreads = [], []
    for i in range(len(runs[0])):
        bw = [float(r[i].row.busbw) for r in runs]
        median = bw.index(sorted(bw)[(count - 1) // 2])  # the first seed at the (lower) median: ties keep the base
        points.append(runs[median][i])
        spreads.append(EcmpSpread(int(runs[0][i].row.size_bytes), tuple(seeds), tuple(bw), seeds[median]))
    return points, spreads


def format_spread(spreads: list[EcmpSpread]) -> str:
    """The spread table printed under the nccl-tests table (busbw GB/s)."""
    seeds = spreads[0].seeds
    span = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
    lines = [f"# busbw (GB/s) over {len(seeds)} ECMP hash seed{'s' * (len(seeds) != 1)} ({span}); the table above "
             "shows each size at its median seed",
             f"# {'size':>12} {'min':>9} {'mean':>9} {'max':>9} {'min/max':>8} {'min at seed':>11} "
             f"{'median seed':>11}"]
    for s in spreads:
        ratio = s.low / s.high if s.high > 0 else 1.0
        lines.append(f"# {s.size_bytes:>12} {s.low / 1e9:>9.2f} {s.mean / 1e9:>9.2f} {s.high / 1e9:>9.2f} "
                     f"{ratio:>8.3f} {s.low_seed:>11} {s.row_seed:>11}")
    return "\n".join(lines)
