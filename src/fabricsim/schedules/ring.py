"""Ring algorithms (NCCL runRing, ncclPatternPipelineFrom/To).

AllReduce = reduce-scatter then all-gather around each channel's ring: 2(n-1) steps per
loop; ReduceScatter / AllGather: n-1. Chunks are numbered in ring order per channel (chunk
j of a channel is block perm[j], the block its position j owns at the end), so one Step
repeated n-1 times with stride -1 describes every channel, whatever its ring order.
`pipeline` cuts the data into that many loops run one after the other (NCCL's loop over
`nranks * chunkCount` slices). Broadcast / Reduce are pipelined chains from / to the root.
"""

from __future__ import annotations

import numpy as np

from fabricsim.schedules.model import ChunkMap, Op, Schedule, make_step
from fabricsim.schedules.pipeline import forest_pieces, pipelined_forest


def ring_order(n: int, channel: int, ranks_per_node: int = 1) -> np.ndarray:
    """Ring order (position -> rank) of a channel.

    One node: even channels ascend, odd channels descend. Several nodes of `ranks_per_node`
    ranks: channel c enters every node at local rank c and leaves from local rank c-1, so the
    channels cross between nodes on different GPUs and so on different NICs (rails), as NCCL's
    ring search spreads channels over the NICs (search.cc; with PXN the exit GPU hands its data
    over NVLink to the GPU on the entry rail).
    """
    if 1 < ranks_per_node < n and n % ranks_per_node == 0:
        local = (channel + np.arange(ranks_per_node, dtype=np.int64)) % ranks_per_node
        return (np.arange(n // ranks_per_node, dtype=np.int64)[:, None] * ranks_per_node + local).ravel()
    order = np.arange(n, dtype=np.int64)
    return order if channel % 2 == 0 else order[::-1].copy()


def ring(collective: str, n: int, channels: int, pipeline: int, ranks_per_node: int = 1) -> Schedule:
    """Ring all_reduce / reduce_scatter / all_gather."""
    perms = np.stack([ring_order(n, ch, ranks_per_node) for ch in range(channels)])  # (channels, n)
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
        meta={"pipeline": pipeline, "ring_orders": "one node: even channels ascending, odd descending; "
              "several nodes: channel c enters each node at local rank c"},
        chunkmap=ChunkMap(split=(n, pipeline, channels), piece=piece.astype(np.int64)),
    )


def chain(collective: str, n: int, root: int, channels: int, pipeline: int) -> Schedule:
    """Pipelined chain broadcast (root sends down) or reduce (partial sums flow to the root)."""
    pos = np.arange(1, n, dtype=np.int64)
    child, parent, depth, chan = [], [], [], []
    for ch in range(channels):
        order = (root + (1 if ch % 2 == 0 else -1) * np.arange(n)) % n  # odd channels run the other way
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
        meta={"pipeline": pipeline},
        chunkmap=ChunkMap(split=(channels, pipeline), piece=forest_pieces(channels, M, pipeline)),
    )
