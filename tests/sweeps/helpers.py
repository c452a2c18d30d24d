"""Shared by the sweep tests: small sweep files, and finding a sweep's worker processes to kill (Linux /proc)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

# 16 points on one- and two-node DGX H100s: enough tasks in flight that a kill lands mid-sweep, quick at the
# analytical level (each point well under a second).
PERF_SWEEP = """
cluster: dgx-h100
perf: {level: analytical, sizes: [64K, 1M, 16M, 256M]}
axes:
  cluster.nodes: [1, 2]
  perf.collective: [all_reduce, all_gather]
"""


def write_sweep(directory: Path, text: str = PERF_SWEEP, name: str = "sweep.yaml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def descendants(root: int) -> list[int]:
    """Every live process below `root`, parents before children."""
    parents = {int(p): _parent(int(p)) for p in os.listdir("/proc") if p.isdigit()}
    out, frontier = [], [root]
    while frontier:
        kids = sorted(p for p, parent in parents.items() if parent in frontier)
        out += kids
        frontier = kids
    return out


def pool_workers(root: int) -> list[int]:
    """The pool's worker processes below `root`: children of its forkserver (whose own parent is `root`)."""
    servers = [p for p in descendants(root) if _parent(p) == root and "forkserver" in cmdline(p)]
    return [p for p in descendants(root) if _parent(p) in servers]
