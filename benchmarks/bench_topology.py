"""Build + validate superpod-h100 at 1,024 / 16,384 / 131,072 GPUs: wall time and peak memory.

Run: python3 benchmarks/bench_topology.py. Each size runs in a fresh process so peak RSS is its own.
Target: 131,072 GPUs in <= 10 s and <= 4 GiB. The `route ring` column times
`fabricsim.routing.route_pairs` on a ring over every GPU once the routing layer provides it.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
import tracemalloc

SIZES = (1024, 16384, 131072)


def measure(gpus: int) -> dict:
    """Time and peak memory of build + validate (and a ring route, when routing exists) at `gpus` GPUs."""
    import numpy as np

    from fabricsim import routing
    from fabricsim.topology import build, preset_spec

    spec = preset_spec("superpod-h100", gpus=gpus)
    tracemalloc.start()
    t0 = time.perf_counter()
    topo = build(spec)  # build_topology + validate
    build_s = time.perf_counter() - t0
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    row = {"gpus": gpus, "devices": topo.n_devices, "links": topo.n_links, "build_validate_s": build_s,
           "traced_peak_bytes": traced, "route_ring_s": None}
    if hasattr(routing, "route_pairs"):
        ranks = np.arange(topo.n_gpus)
        t0 = time.perf_counter()
        routing.route_pairs(topo, ranks, (ranks + 1) % topo.n_gpus)
        row["route_ring_s"] = time.perf_counter() - t0
    row["maxrss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
    return row


def main() -> None:
    print(f"{'GPUs':>8} {'devices':>9} {'links':>10} {'build+validate':>15} {'traced peak':>12} {'max RSS':>9} {'route ring':>11}")
    for gpus in SIZES:
        out = subprocess.run([sys.executable, __file__, "--one", str(gpus)], check=True, capture_output=True, text=True)
        r = json.loads(out.stdout)
        route = f"{r['route_ring_s']:.2f} s" if r["route_ring_s"] is not None else "n/a"
        print(f"{r['gpus']:>8,} {r['devices']:>9,} {r['links']:>10,} {r['build_validate_s']:>13.2f} s"
              f" {r['traced_peak_bytes'] / 2**20:>8.0f} MiB {r['maxrss_bytes'] / 2**20:>5.0f} MiB {route:>11}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(measure(int(sys.argv[2]))))
    else:
        main()
