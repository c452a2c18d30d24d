"""CLI speed: `fabricsim perf all_reduce --cluster superpod-h100 --gpus 4096 -b 1G -e 1G` end to end (a fresh
process: interpreter start-up, imports, topology build, the tuner's search, printing), with the full search over
every candidate NCCL would run and with `--algo ring`, and the search alone timed inside one process.

Prints the minimum wall time over several runs (other users share the machine: the minimum is the least
disturbed), after one run that writes the bytecode cache (an installed package has its .pyc files; a checkout run
with PYTHONDONTWRITEBYTECODE set compiles every module at every start). Target (issue 11): <= 0.35 s with the full
search, the same pick and figures as `--algo` forced.
Usage: python3 benchmarks/bench_cli.py [runs]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

COMMAND = ["perf", "all_reduce", "--cluster", "superpod-h100", "--gpus", "4096", "-b", "1G", "-e", "1G"]
SEARCH = """
import time
import numpy as np
from fabricsim.reports.sweep import predict
from fabricsim.topology import load_cluster
topo = load_cluster("superpod-h100", gpus=4096)
t = time.perf_counter()
row = predict(topo, np.arange(topo.n_gpus), "all_reduce", [1 << 30], algos={algos})[0].row
print(time.perf_counter() - t, row.algo, row.proto, row.busbw)
"""


def _fabricsim() -> list[str]:
    """The installed `fabricsim` command beside this interpreter, else the CLI module."""
    script = Path(sys.executable).with_name("fabricsim")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "fabricsim.cli.main"]


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _wall(args: list[str]) -> float:
    """Seconds one fresh `fabricsim` process takes."""
    t = time.perf_counter()
    subprocess.run([*_fabricsim(), *args], capture_output=True, text=True, check=True, env=ENV)
    return time.perf_counter() - t


def _search(algos: str) -> tuple[float, str]:
    out = subprocess.run([sys.executable, "-c", SEARCH.format(algos=algos)], capture_output=True, text=True, check=True,
                         env=ENV)
    seconds, *pick = out.stdout.split()
    return float(seconds), " ".join(pick[:2]) + f" {float(pick[2]) / 1e9:.2f} GB/s"


def main(argv: list[str]) -> None:
    runs = int(argv[0]) if argv else 7
    _wall(COMMAND)  # writes the bytecode cache
    print(f"{'case':<26} {'wall s (min)':>12} {'search s (min)':>15}  pick")
    for label, extra, algos in (("full search", [], "None"), ("--algo ring", ["--algo", "ring"], "['ring']")):
        walls = [_wall(COMMAND + extra) for _ in range(runs)]
        searches = [_search(algos) for _ in range(runs)]
        wall, search = min(walls), min(s for s, _ in searches)
        print(f"{label:<26} {wall:>12.3f} {search:>15.3f}  {searches[0][1]}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
