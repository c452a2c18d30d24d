"""`fabricsim train --search` speed on a 16,384-GPU mixture of experts: DeepSeek-V3 in FP8 on superpod-h100 (and
optionally other counts). The search considers every TP x PP x EP layout that fits in HBM; it times each one without
its data-parallel collectives (a lower bound of its step), then times the DP collectives only while that bound can
still beat the best step found (`training.sweep.fastest_layout`).

Prints the layouts that fit, the wall time (the CPU time too: on a shared machine repeat and take the minimum) and
the layout picked. Target on a 2-core machine: < 60 s at 16,384 GPUs.
Usage: python3 benchmarks/bench_train_search.py [gpus ...]
"""

from __future__ import annotations

import sys
import time

from fabricsim.training import parallel as P
from fabricsim.training.models import MODELS
from fabricsim.training.sweep import cluster_topology, topology_gpu
from fabricsim.training.runs import train_sweep


def main(argv: list[str]) -> None:
    model = MODELS["deepseek-v3"]
    print(f"{'GPUs':>7} {'layouts':>8} {'wall s':>8} {'cpu s':>7}  picked")
    for gpus in [int(a) for a in argv] or [16384]:
        topo = cluster_topology("superpod-h100", gpus)
        layouts = len(P.fitting_layouts(model, gpus, 8, topology_gpu(topo).hbm_bytes, precision="fp8"))
        t0, c0 = time.perf_counter(), time.process_time()
        sweep = train_sweep(model, "superpod-h100", [gpus], search=True, precision="fp8")
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        r = sweep.runs["baseline"][0]
        picked = r.layout if hasattr(r, "layout") else f"refused: {r.reason}"
        print(f"{gpus:>7} {layouts:>8} {wall:>8.1f} {cpu:>7.1f}  {picked}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
