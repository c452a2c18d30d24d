"""Two-level AllReduce: ring reduce-scatter inside each NVLink domain, ring all-reduce across
domains per rail (among ranks with the same local index), ring all-gather inside the domain.

Chunks are (local block b, node slot x), split (ranks_per_node, nnodes). The intra-domain
rings move a whole block (a span of nnodes chunks), so every phase is one repeated Step and
the schedule holds O(nranks) numbers."""

from __future__ import annotations

import numpy as np

from fabricsim.schedules.model import Op, Schedule, make_step
from fabricsim.schedules.structure import Structure


def hierarchical(s: Structure) -> Schedule:
    ppn, nn = s.ranks_per_node, s.nnodes
    r = np.arange(s.nranks, dtype=np.int64)
    node, local = r // ppn, r % ppn
    steps = []
    intra_dst = node * ppn + (local + 1) % ppn
    inter_dst = ((node + 1) % nn) * ppn + local
    if ppn > 1:
        c = ((local - 1) % ppn) * nn
        steps.append(make_step(r, intra_dst, c, c, Op.REDUCE, span=nn, repeat=ppn - 1, stride=-nn, period=ppn * nn))
    c = local * nn + (node - 1) % nn
    steps.append(make_step(r, inter_dst, c, c, Op.REDUCE, repeat=nn - 1, stride=-1, period=nn))
    c = local * nn + node
    steps.append(make_step(r, inter_dst, c, c, Op.COPY, repeat=nn - 1, stride=-1, period=nn))
    if ppn > 1:
        c = local * nn
        steps.append(make_step(r, intra_dst, c, c, Op.COPY, span=nn, repeat=ppn - 1, stride=-nn, period=ppn * nn))
    return Schedule(
        "all_reduce", "hierarchical", s.nranks, ppn * nn, tuple(steps), meta={"ranks_per_node": ppn, "nodes": nn}
    )
