"""Pipelined trees (chains are trees too) stored as ONE repeated Step.

NCCL pipelines tree and chain collectives chunk by chunk (ncclPatternTreeUpDown,
ncclPatternPipelineFrom/To). We schedule level-synchronously: a rank at depth d sends
chunk c up at step c + D - d (D = deepest rank), the roots optionally reduce it in the
network at step c + D, and a rank at depth d sends it down at step c + base + d. Every
transfer then moves chunk (t - offset) at step t, which is one Step repeated T times with
stride 1 when each channel's block of M chunks is padded with empty chunks (piece -1):
steps where an edge is idle move an empty chunk. Memory is O(edges), not O(edges * T).
"""

from __future__ import annotations

import numpy as np

from fabricsim.schedules.model import InNetworkOp, Op, Step, make_step


def pipelined_forest(
    child: np.ndarray,
    parent: np.ndarray,
    depth: np.ndarray,
    chan: np.ndarray,
    nchunks_real: int,
    *,
    up: bool,
    down: bool,
    innet: list[tuple[int, np.ndarray]] = (),
    kind: str = "sharp",
) -> tuple[tuple[Step, ...], int]:
    """Steps and the padded block length M for trees given as edges (child, parent, depth of
    child >= 1, channel). Channel ch owns chunks ch*M .. ch*M+M-1; chunks j < nchunks_real of a
    block are real, the rest empty. `innet`: (channel, root ranks) groups reduced in-network
    and returned to the same roots between the up and down phases."""
    P = nchunks_real
    D = int(depth.max()) if depth.size else 0
    delay = 1 if innet else 0
    base = (D if up else 0) + delay
    ends = [0]
    if up and D:
        ends.append(P + D - 1)
    if innet:
        ends.append(P + D)
    if down and D:
        ends.append(P + base + D - 1)
    T = max(ends)
    if T == 0:
        return (), 1
    offsets, parts = [], []
    if up:
        offsets.append(D - depth)
        parts.append((child, parent, Op.REDUCE))
    if down:
        offsets.append(base + depth - 1)
        parts.append((parent, child, Op.COPY))
    O = max([D] + [int(o.max()) for o in offsets if o.size])
    M = T + O
    src = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0)
    dst = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
    op = np.concatenate([np.full(p[0].shape, p[2], dtype=np.int8) for p in parts]) if parts else np.zeros(0)
    chans = np.concatenate([chan] * len(parts)) if parts else np.zeros(0, dtype=np.int64)
    off = np.concatenate(offsets) if offsets else np.zeros(0, dtype=np.int64)
    chunk = chans.astype(np.int64) * M + (-off.astype(np.int64)) % M
    ops = tuple(InNetworkOp(kind=kind, inputs=roots, outputs=roots, chunk=int(ch * M + (-D) % M)) for ch, roots in innet)
    step = make_step(src, dst, chunk, chunk, op, innet=ops, repeat=T, stride=1, period=M)
    return (step,), M


def forest_pieces(nch: int, M: int, P: int) -> np.ndarray:
    """Piece of each chunk for split (nch, P): block ch's chunk j < P is piece ch*P + j, others empty."""
    j = np.tile(np.arange(M), nch)
    ch = np.repeat(np.arange(nch), M)
    return np.where(j < P, ch * P + j, -1).astype(np.int64)
