"""The schedule representation: an explicit, executable, compact list of steps.

A collective over `nranks` ranks works on a per-rank buffer split into `nchunks`
chunks (see `fabricsim.schedules.layout` for which chunks are input and output for each
collective). A schedule is a sequence of `Step`s; every transfer and in-network
operation inside one step reads the state from before the step and they all happen
concurrently. A step may repeat: in repetition k every chunk index c becomes
`shift(c, k)` (see `Step.chunks_at`), which stores a ring's 2(n-1) identical steps once.
Memory therefore grows with ranks, not ranks squared, for ring-like algorithms.

Transfer arrays (length m, one entry per point-to-point transfer):
  src, dst           int32  ranks
  src_chunk          int64  chunk read on `src` (repetition 0)
  dst_chunk          int64  chunk written on `dst` (repetition 0)
  op                 int8   Op.COPY (dst = src) or Op.REDUCE (dst = dst (+) src)
  span               int64  optional: the transfer moves chunks chunk .. chunk+span-1 (None: 1)

In-network operations (NVLS inside an NVSwitch, SHARP inside InfiniBand switches):
  kind      'nvls' | 'sharp'
  inputs    ranks whose chunk is reduced inside the switch (one rank: plain multicast)
  outputs   ranks that receive the result (multicast)
  chunk     chunk index (repetition 0), same index read and written

Where a chunk lives in a rank's buffer is a `ChunkMap` (see `fabricsim.schedules.layout`):
chunk numbers are logical (a ring channel's chunks are numbered in ring order), the map
turns them into element ranges; a piece of -1 is an empty placeholder chunk that lets a
pipeline's fill and drain steps share one repeated `Step`.

A rank-symmetric schedule (an all-to-all over thousands of ranks, whose n^2 transfers cannot be stored)
keeps only the transfers of one rotation, `rotations` > 1: the whole schedule is those transfers with
every rank shifted by k * rotation_width and every chunk turned by the same amount (`rotate_chunks`),
for k = 0 .. rotations-1, all at once. Such steps repeat once and hold no in-network operations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np


class Op(IntEnum):
    COPY = 0
    REDUCE = 1


@dataclass(frozen=True, eq=False)
class InNetworkOp:
    kind: str  # 'nvls' or 'sharp'
    inputs: np.ndarray  # int32 ranks
    outputs: np.ndarray  # int32 ranks
    chunk: int
    op: Op = Op.REDUCE


@dataclass(frozen=True, eq=False)
class Step:
    """Concurrent transfers and in-network ops, repeated `repeat` times.

    In repetition k a chunk index c maps to `period * (c // period) + (c % period + k * stride) % period`:
    the chunk moves by `stride` inside its block of `period` chunks (a ring channel's block).
    A transfer with a span moves chunks chunks_at(c, k) .. chunks_at(c, k) + span - 1.
    """

    src: np.ndarray
    dst: np.ndarray
    src_chunk: np.ndarray
    dst_chunk: np.ndarray
    op: np.ndarray
    innet: tuple[InNetworkOp, ...] = ()
    repeat: int = 1
    stride: int = 0
    period: int = 1
    span: np.ndarray | None = None  # int64 chunks moved per transfer (None: one each)

    def chunks_at(self, chunks: np.ndarray, k: int) -> np.ndarray:
        """Chunk indices of repetition k."""
        if k == 0 or self.stride == 0:
            return chunks
        return rotate_chunks(chunks, self.period, k * self.stride)

    @property
    def n_transfers(self) -> int:
        return int(self.src.shape[0])


@dataclass(frozen=True, eq=False)
class ChunkMap:
    """Chunk -> buffer piece. A rank's buffer is `nregions` regions of `count` elements each
    (0: data or send, 1: receive, 2..: scratch), every region cut by nested `np.array_split`
    into `prod(split)` pieces (row-major). Chunk c is piece `piece[c]` of region `region[c]`;
    piece -1 is empty. None arrays mean region 0 and piece c."""

    split: tuple[int, ...]
    nregions: int = 1
    region: np.ndarray | None = None  # int16 per chunk
    piece: np.ndarray | None = None  # int64 per chunk


@dataclass(frozen=True, eq=False)
class Schedule:
    """A collective algorithm's complete schedule for `nranks` ranks."""

    collective: str  # all_reduce, reduce_scatter, all_gather, broadcast, reduce, alltoall, sendrecv
    algorithm: str  # ring, tree, rabenseifner, recursive_doubling, bruck, hierarchical, nvls, nvls_tree, collnet_direct, collnet_chain, direct, pairwise, pxn
    nranks: int
    nchunks: int
    steps: tuple[Step, ...]
    root: int | None = None
    channels: int = 1
    meta: dict = field(default_factory=dict)
    chunkmap: ChunkMap | None = None  # None: one region split into nchunks pieces
    copies: int = 1  # independent copies of an (nranks // copies)-rank collective run at once, one per group
    rotations: int = 1  # the steps hold one rotation of a rank-symmetric schedule (see `rotate_chunks`)

    def __repr__(self) -> str:  # the steps' arrays would print hundreds of KB at scale
        return (f"Schedule({self.collective} {self.algorithm}, {self.nranks:,} ranks, {self.n_steps:,} steps, "
                f"{self.nchunks:,} chunks, {self.channels} channel{'s' * (self.channels != 1)})")

    @property
    def rotation_width(self) -> int:
        """Ranks one rotation shifts by: rotation k of a transfer runs on ranks + k * width (mod nranks)."""
        return self.nranks // self.rotations

    @property
    def n_steps(self) -> int:
        """Steps counted with their repetitions."""
        return sum(s.repeat for s in self.steps)

    @property
    def nbytes_held(self) -> int:
        """Bytes held by the schedule's numpy arrays (what compactness is measured by)."""
        arrays = [a for s in self.steps for a in (s.src, s.dst, s.src_chunk, s.dst_chunk, s.op, s.span) if a is not None]
        seen = {id(a): a for s in self.steps for o in s.innet for a in (o.inputs, o.outputs)}
        arrays += list(seen.values())
        if self.chunkmap is not None:
            arrays += [a for a in (self.chunkmap.region, self.chunkmap.piece) if a is not None]
        return int(sum(a.nbytes for a in arrays))


def rotate_chunks(chunks: np.ndarray, period: int, shift) -> np.ndarray:
    """Chunk indices turned by `shift` inside their block of `period` chunks: a repeated step's chunks
    (`Step.chunks_at`), or a rotated all-to-all's send, receive and scratch blocks (period = nranks)."""
    return (chunks // period) * period + (chunks % period + shift) % period


def rotate_ranks(ranks: np.ndarray, nranks: int, shifts: np.ndarray) -> np.ndarray:
    """`ranks` shifted by each of `shifts` (mod nranks), one rotation after another: a rotated schedule's
    transfers (`Schedule.rotations`) in the rotations `shifts` name."""
    shifts = np.asarray(shifts, dtype=np.int64).reshape(-1, 1)
    return ((np.asarray(ranks, dtype=np.int64)[None, :] + shifts) % nranks).ravel().astype(np.int32)


def make_step(src, dst, src_chunk, dst_chunk, op, *, span=None, innet=(), repeat=1, stride=0, period=1) -> Step:
    """A Step from array-likes with the model's dtypes; scalars broadcast to every transfer."""
    src = np.asarray(src, dtype=np.int32).ravel()
    m = src.shape[0]

    def col(x, dtype):
        return np.broadcast_to(np.asarray(x, dtype=dtype).ravel() if np.ndim(x) else np.asarray(x, dtype=dtype), (m,)).copy()

    return Step(
        src=src,
        dst=col(dst, np.int32),
        src_chunk=col(src_chunk, np.int64),
        dst_chunk=col(dst_chunk, np.int64),
        op=col(op, np.int8),
        innet=tuple(innet),
        repeat=int(repeat),
        stride=int(stride),
        period=int(period),
        span=None if span is None else col(span, np.int64),
    )


@dataclass(frozen=True, eq=False)
class StepTraffic:
    """What the engine times: one step's traffic in bytes, repeated `repeat` times.

    src/dst/nbytes: point-to-point transfers (src == dst are local copies, free on the fabric).
    innet: (kind, inputs, outputs, nbytes) per in-network operation.
    When `repeat > 1` every repetition moves the same bytes between the same ranks, so
    the engine may time it once (uneven chunk sizes are folded in as the largest chunk).
    active: (first, last) repetition in which each transfer, then each in-network operation, moves
    bytes (first > last: never), for a pipeline whose repetitions each engage only some transfers
    (a tree's levels); None: every transfer works in every repetition.
    """

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray  # float64 bytes per transfer
    innet: tuple[tuple[str, np.ndarray, np.ndarray, float], ...] = ()
    repeat: int = 1
    active: tuple[np.ndarray, np.ndarray] | None = None
