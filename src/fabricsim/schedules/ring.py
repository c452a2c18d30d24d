"""Ring algorithms (NCCL runRing, ncclPatternPipelineFrom/To).

AllReduce = reduce-scatter then all-gather around each channel's ring: 2(n-1) steps per
loop; ReduceScatter / AllGather: n-1. Chunks are numbered in ring order per channel (chunk
j of a channel is block perm[j], the block its position j owns at the end), so one Step
repeated n-1 times with stride -1 describes every channel, whatever its ring order.
`pipeline` cuts the data into that many loops run one after the other (NCCL's loop over
`nranks * chunkCount` slices). Broadcast / Reduce run on the same rings: each channel is a
pipelined chain along its ring from the root (NCCL's broadcast and reduce kernels send to
ring->next from the root and stop at the rank before it, ncclPatternPipelineFrom/To), so
their channels enter and leave nodes on the same GPUs, and NICs, as the ring collectives'.
"""

from __future__ import annotations

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.schedules.model import ChunkMap, Op, Schedule, make_step
from fabricsim.schedules.pipeline import forest_pieces, pipelined_forest

Rings = tuple[tuple[int, ...], ...]  # ring orders of one node's local ranks, one per channel (cycled)


def check_rings(rings: Rings, ranks_per_node: int) -> None:
    """Raise FabricsimError unless every ring orders all of a node's local ranks once."""
    for ring in rings:
        if sorted(ring) != list(range(ranks_per_node)):
            raise FabricsimError(f"ring {list(ring)} must order the node's local ranks 0..{ranks_per_node - 1} once each: "
                                 "give one permutation of them per channel")


def ring_order(n: int, channel: int, ranks_per_node: int = 1, rings: Rings = ()) -> np.ndarray:
    """Ring order (position -> rank) of a channel.

    `rings`: the order inside a node of each channel's ring (local ranks, channel c uses
    rings[c % len(rings)]), as NCCL's ring search finds it on a direct NVLink mesh; across nodes a
    channel enters each node at its ring's first rank and leaves from its last. Without rings one
    node's even channels ascend and odd channels descend, and across nodes of `ranks_per_node`
    ranks channel c enters every node at local rank c mod ranks_per_node and leaves from the rank
    before it, so the channels cross between nodes on different GPUs and so on different NICs
    (rails), as NCCL's ring search spreads channels over the NICs (search.cc; with PXN the exit
    GPU hands its data over NVLink to the GPU on the entry rail).
    """
    if 1 < ranks_per_node < n and n % ranks_per_node == 0:
        local = (np.array(rings[channel % len(rings)], dtype=np.int64) if rings
                 else (channel + np.arange(ranks_per_node, dtype=np.int64)) % ranks_per_node)
        return (np.arange(n // ranks_per_node, dtype=np.int64)[:, None] * ranks_per_node + local).ravel()
    if rings and ranks_per_node == n:
        return np.array(rings[channel % len(rings)], dtype=np.int64)
    order = np.arange(n, dtype=np.int64)
    return order if channel % 2 == 0 else order[::-1].copy()


def _orders_text(ranks_per_node: int, rings: Rings) -> str:
    inside = ("node rings " + "; ".join(" ".join(map(str, r)) for r in dict.fromkeys(rings)) if rings
              else "one node: even channels ascending, odd descending")
    across = "at its ring's first rank" if rings else f"at local rank c mod {ranks_per_node}"
    return inside + (f"; several nodes: channel c enters each node {across}" if ranks_per_node > 1 else "")


def ring(collective: str, n: int, channels: int, pipeline: int, ranks_per_node: int = 1, rings: Rings = ()) -> Schedule:
    """Ring all_reduce / reduce_scatter / all_gather."""
    perms = np.stack([ring_order(n, ch, ranks_per_node, rings) for ch in range(channels)])  # (channels, n)
    pos = np.arange(n)
    src = perms.ravel()
    dst = perms[:, (pos + 1) % n].ravel()
    steps = []
    for loop in range(pipeline):
        block = (loop * channels + np.repeat(np.arange(channels), n)) * n
        if n > 1 and collective in ("all_reduce", "reduce_scatter"):
            c = block + np.tile((pos - 1) % n, channels)
            steps.append(make_step(src, dst, c, c, Op.REDUCE, repeat=n - 1, stride=-1, period=n))
        if n > 1 and collective in ("all_reduce", "all_gather"):
            c = block + np.tile(pos, channels)
            steps.append(make_step(src, dst, c, c, Op.COPY, repeat=n - 1, stride=-1, period=n))
    # chunk (loop, ch, j) is piece (perm[ch, j], loop, ch) of split (n, pipeline, channels)
    loop = np.repeat(np.arange(pipeline), channels * n)
    ch = np.tile(np.repeat(np.arange(channels), n), pipeline)
    piece = (np.tile(perms.ravel(), pipeline) * pipeline + loop) * channels + ch
    return Schedule(
        collective=collective,
        algorithm="ring",
        nranks=n,
        nchunks=pipeline * channels * n,
        steps=tuple(steps),
        channels=channels,
        meta={"pipeline": pipeline, "ring_orders": _orders_text(ranks_per_node, rings)},
        chunkmap=ChunkMap(split=(n, pipeline, channels), piece=piece.astype(np.int64)),
    )


def chain(collective: str, n: int, root: int, channels: int, pipeline: int, ranks_per_node: int = 1,
          rings: Rings = ()) -> Schedule:
    """Pipelined chain broadcast (root sends down) or reduce (partial sums flow to the root), one per
    channel along that channel's ring (`ring_order`) from the root to the rank before it."""
    pos = np.arange(1, n, dtype=np.int64)
    child, parent, depth, chan = [], [], [], []
    for ch in range(channels):
        order = ring_order(n, ch, ranks_per_node, rings)
        order = np.roll(order, -int(np.flatnonzero(order == root)[0]))
        child.append(order[pos])
        parent.append(order[pos - 1])
        depth.append(pos)
        chan.append(np.full(n - 1, ch))
    steps, M = pipelined_forest(
        *(np.concatenate(x) for x in (child, parent, depth, chan)), pipeline,
        up=collective == "reduce", down=collective == "broadcast",
    )
    return Schedule(
        collective=collective,
        algorithm="ring",
        nranks=n,
        nchunks=channels * M,
        steps=steps,
        root=root,
        channels=channels,
        meta={"pipeline": pipeline, "ring_orders": _orders_text(ranks_per_node, rings)},
        chunkmap=ChunkMap(split=(channels, pipeline), piece=forest_pieces(channels, M, pipeline)),
    )
