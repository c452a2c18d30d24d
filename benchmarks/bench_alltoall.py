"""All-to-all speed across NVLink domains: what `fabricsim perf alltoall -b 1G -e 1G` costs (the tuner's full search,
flow level) on DGX H100 nodes and on NVL72 racks at about the same rank count, with hashed ECMP and adaptive routing.

Few, large flows per NIC (72 GPUs' blocks relayed per rack by PXN) make hashed ECMP collide on the spine uplinks:
hundreds of distinct max-min bottleneck levels and thousands of flow finishes to re-solve (issue 12 item 14: 47 s on
superpod-gb200 at 576 GPUs against 0.42 s on superpod-h100 at 512; gb200-nvl72 at 1,008 with ECMP 11 min 51 s).
Prints wall time (topology build excluded), the pick and its bus bandwidth.
Usage: python3 benchmarks/bench_alltoall.py [cluster:gpus[:routing] ...]
"""

from __future__ import annotations

import dataclasses
import sys
import time

from fabricsim.topology import build, load_spec
from fabricsim.tuner.select import best

CASES = ["superpod-h100:512", "superpod-gb200:576", "gb200-nvl72:1008:ecmp", "gb200-nvl72:1008:adaptive"]


def main(argv: list[str]) -> None:
    print(f"{'cluster':<16} {'GPUs':>6} {'routing':<9} {'wall s':>8}  {'pick':<12} {'busbw GB/s':>10}")
    for case in argv or CASES:
        name, gpus, *routing = case.split(":")
        spec = load_spec(name, gpus=int(gpus))
        topo = build(dataclasses.replace(spec, routing=routing[0]) if routing else spec)
        t0 = time.perf_counter()
        choice = best(topo, "alltoall", 1 << 30)
        wall = time.perf_counter() - t0
        print(f"{name:<16} {int(gpus):>6} {topo.features['routing']:<9} {wall:>8.2f}  "
              f"{choice.algorithm + '/' + choice.protocol:<12} {choice.result.busbw / 1e9:>10.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
