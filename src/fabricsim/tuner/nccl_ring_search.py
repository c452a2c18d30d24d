"""NCCL's ring search inside one node whose GPUs are joined directly by NVLinks (no NVSwitch): the DGX-1
hybrid cube-mesh. Which rings NCCL builds there decides which NVLinks carry the channels.

This follows the control flow of src/graph/search.cc (NCCL 2.30.7; an older release's speeds, per-link bw and
duplication rule from tuner.nccl_versions.graph_search) for an intra-node ring graph at path type
NVL (direct NVLinks only):
- ncclTopoCompute pass 1: from the fastest speed of the intra speed array that fits the best GPU-GPU path,
  search with sameChannels (every channel replays the first ring, budget NCCL_SEARCH_TIMEOUT_SAMECHANNELS
  = 1 << 8) then without (NCCL_SEARCH_TIMEOUT = 1 << 14), lowering the speed while the next one is more than
  0.49 x the best graph's; stop once channels x speed reach the GPU's total NVLink bandwidth;
  ncclTopoDupChannels; pass 2 raises the speed while the channel count holds.
- ncclTopoSearchRec: the first channel tries GPU index order first (FORCED_ORDER_PCI), later ones replay the
  previous ring first (FORCED_ORDER_REPLAY), then every start GPU is tried.
- ncclTopoSearchRecGpu / ncclTopoSearchTryGpu: depth-first, one step budget unit per call; each hop takes
  the channel's speed from the directed link's remaining bandwidth (followPath, SUB_ROUND to 1e-3); a
  complete ring is kept when channels x speed beats the best graph (ncclTopoCompareGraphs: rings over
  direct links all have the same hop count, so ties keep the first found).
- ncclTopoSearchNextGpuSort: next GPUs by path bandwidth (as an int), then hop count, then distance in
  index order from the current GPU. Pairs without a direct NVLink have only NVB or PCI paths, of a path
  type above NVL, which followPath rejects at this type: they are never taken.
Not modelled: the escalation to NVB / PCI path types when no ring of direct NVLinks exists (then this
returns no rings and the caller keeps its default orders).

Checked against NCCL's own output on an 8 x V100 SXM2 hybrid cube-mesh (NCCL 2.19.3, NCCL_DEBUG=INFO;
github:rapatel0/ds4 commit 722699f1, logs/from-cluster/sprint602/COMMANDS.md lines 22-24; the machine's
`nvidia-smi topo -m` in logs/from-cluster/sprint208-tp8/collective-doubling-128/nvlink-before.txt lines 167-175
is fabricsim's DGX-1 V100 mesh): channels {0,1,6,7} 0 3 2 1 5 6 7 4, {2,3,8,9} 0 4 7 6 5 1 2 3,
{4,10} 0 1 3 7 5 4 6 2, {5,11} 0 2 6 4 5 7 3 1, i.e. six search channels (duplicated to twelve by
ncclTopoPostset), which this search returns in that order.
"""

from __future__ import annotations

from functools import lru_cache

from fabricsim.engine import nccl_constants as K
from fabricsim.tuner.nccl_versions import GraphSearch, graph_search

SEARCH_TIMEOUT = 1 << 14  # NCCL_SEARCH_TIMEOUT (src/graph/search.cc)
SEARCH_TIMEOUT_SAMECHANNELS = 1 << 8  # NCCL_SEARCH_TIMEOUT_SAMECHANNELS
SPEED_STEP_RATIO = 0.49  # ncclTopoCompute lowers the speed while speed[i+1] / best bw > .49

Mesh = tuple[tuple[int, ...], ...]  # NVLinks between each pair of a node's GPUs (symmetric, 0 on the diagonal)
Rings = tuple[tuple[int, ...], ...]


class _Search:
    """One ncclTopoSearchRec call tree at one speed: depth-first over rings, keeping the best graph."""

    def __init__(self, bw: list[list[float]], speed: float, same: bool, min_ch: int, max_ch: int,
                 best: Rings, best_bw: float):
        self.n = len(bw)
        self.rem = [row[:] for row in bw]
        self.speed = speed
        self.same = same
        self.min_ch, self.max_ch = min_ch, max_ch
        self.time = SEARCH_TIMEOUT_SAMECHANNELS if same else SEARCH_TIMEOUT
        self.best, self.best_bw = best, best_bw
        self.rings: list[list[int]] = []  # complete rings of the graph being built
        self.ring: list[int] = [0] * self.n  # the ring being built
        self.used: set[int] = set()
        # next-GPU order per GPU (ncclTopoSearchNextGpuSort): direct neighbours by int(bw) desc, then index distance
        self.order = [sorted((g for g in range(self.n) if g != a and bw[a][g] > 0),
                             key=lambda g, a=a: (-int(bw[a][g]), (g - a) % self.n)) for a in range(self.n)]

    def run(self) -> None:
        """ncclTopoSearchRec, intra-node ring."""
        if not self.rings:
            self._try(0, "pci", -1, 0)
        else:
            self._try(0, "replay", -1, self.rings[-1][0])
        if not self.same or not self.rings:
            for g in range(self.n):
                self._try(0, None, -1, g)

    def _take(self, a: int, b: int, sign: float) -> bool:
        """followPath over the direct link a -> b: take (sign 1) or give back (-1) the channel's speed."""
        if sign > 0 and self.rem[a][b] < self.speed:
            return False
        self.rem[a][b] = round((self.rem[a][b] - sign * self.speed) * 1000) / 1000  # SUB_ROUND
        return True

    def _try(self, step: int, forced: str | None, prev: int, g: int) -> None:
        """ncclTopoSearchTryGpu: reach GPU g from `prev` (-1: start) and go on from it."""
        if prev >= 0 and (g not in self.order[prev] or not self._take(prev, g, 1)):
            return  # no direct NVLink (only NVB / PCI paths, above type NVL), or not enough bandwidth left
        self.used.add(g)
        self._rec(g, step, forced)
        self.used.discard(g)
        if prev >= 0:
            self._take(prev, g, -1)

    def _rec(self, g: int, step: int, forced: str | None) -> None:
        """ncclTopoSearchRecGpu for a ring inside one node."""
        if self.time <= 0:
            return
        self.time -= 1
        if step == self.n:
            self.rings.append(self.ring[:])
            n_ch = len(self.rings)
            if n_ch >= self.min_ch and n_ch * self.speed > len(self.best) * self.best_bw:
                self.best, self.best_bw = tuple(tuple(r) for r in self.rings), self.speed
                if n_ch == self.max_ch:
                    self.time = -1
            if n_ch < self.max_ch:
                saved, self.used, self.ring = self.used, set(), [0] * self.n
                self.run()
                self.used, self.ring = saved, self.rings[-1][:]
            self.rings.pop()
            return
        self.ring[step] = g
        if step < self.n - 1:
            if forced == "pci":
                nexts = [step + 1]
            elif forced == "replay":
                nexts = [self.rings[-1][step + 1]]
            else:
                nexts = [h for h in self.order[g] if h not in self.used]
            for h in nexts:
                if h not in self.used:
                    self._try(step + 1, forced, g, h)
        else:  # back to the ring's first GPU
            first = self.ring[0]
            if first in self.order[g] and self._take(g, first, 1):
                self._rec(first, step + 1, forced)
                self._take(g, first, -1)


def _search(bw, speed, same, min_ch, max_ch, best, best_bw) -> tuple[Rings, float, int, bool]:
    """(best rings, their speed, budget left: -1 perfect / 0 timed out, whether this search found them)."""
    s = _Search(bw, speed, same, min_ch, max_ch, best, best_bw)
    s.run()
    return s.best, s.best_bw, s.time, s.best is not best


@lru_cache(maxsize=32)
def mesh_rings(mesh: Mesh, compcap: int, pcie_bw: float, max_channels: int = K.MAXCHANNELS // 2,
               rules: GraphSearch | None = None) -> tuple[Rings, float, bool]:
    """(rings, GB/s per channel, sameChannels of the graph) NCCL's ring search finds on one node of GPUs joined by
    direct NVLinks, `mesh[a][b]` links between GPUs a and b (local indices in NCCL's GPU order); ((), 0.0, True)
    when no ring of direct NVLinks exists. `pcie_bw`: a GPU's PCIe link as NCCL counts it (totalBw is the larger
    of it and the GPU's NVLinks). `rules`: the NCCL release's graph-search rules (None: the newest release's); before
    2.19.3 duplication came last, with no pass 2 for rings (tuner.nccl_versions 'dup before pass 2, ring pass 2')."""
    rules = rules or graph_search(None, compcap)
    per_link = rules.nvlink_bw
    bw = [[links * per_link for links in row] for row in mesh]
    n = len(bw)
    if n < 2 or any(len(row) != n for row in bw):
        return (), 0.0, True
    speeds = rules.speeds_intra
    max_bw = max(max(row) for row in bw)
    total_bw = max(pcie_bw, max(sum(row) for row in bw))
    last = len(speeds) - 1
    idx = 0
    while (speeds[idx] > max_bw or (rules.start_within_total and speeds[idx] > total_bw)) and idx < last:
        idx += 1
    best, best_bw, best_same = (), 0.0, False
    # pass 1
    while True:
        for same in (True, False):
            best, best_bw, time, found = _search(bw, speeds[idx], same, 1, max_channels, best, best_bw)
            best_same = same if found else best_same
            if time == -1 or len(best) * best_bw >= total_bw:
                break
        else:
            if idx < last and (not best or speeds[idx + 1] / best_bw > SPEED_STEP_RATIO):
                idx += 1
                continue
        break
    if not best:
        return (), 0.0, True
    dup, div = rules.duplicated(len(best), best_bw, compcap, max_channels)  # ncclTopoDupChannels
    best, best_bw = (best * div)[:dup], best_bw / div
    if not rules.dup_first:  # duplication came last, and pass 2 raised no ring's speed
        return best, best_bw, best_same
    # pass 2: raise the speed while the channel count holds
    idx = 0
    while speeds[idx] > best_bw and idx < last:
        idx += 1
    time = -1
    while time != 0 and idx > 0:
        idx -= 1
        if len(best) * speeds[idx] > total_bw:  # no ring set can draw more than a GPU's NVLinks: nothing to find
            continue
        best, best_bw, time, found = _search(bw, speeds[idx], best_same, len(best), max_channels, best, best_bw)
        best_same = best_same and not found
    return best, best_bw, best_same
