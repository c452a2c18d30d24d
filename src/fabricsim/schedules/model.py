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

In-network operations (NVLS inside an NVSwitch, SHARP inside InfiniBand switches), a step's held as arrays
(`InNetworkOps`: an NVLSTree step has one per head, pipeline chunk and domain, tens of thousands), each:
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
class InNetworkEnds:
    """Operations' GPU ends as arrays, operation after operation: each one's inputs, then its outputs."""

    kind: np.ndarray  # str per operation: 'nvls' or 'sharp'
    ends: np.ndarray  # int32 ranks
    n_inputs: np.ndarray  # int64 per operation
    n_outputs: np.ndarray  # int64 per operation

    def __len__(self) -> int:
        return int(self.n_inputs.shape[0])

    @property
    def is_input(self) -> np.ndarray:
        """Per end, whether it is an input (else an output)."""
        n = len(self)
        lengths = np.column_stack([self.n_inputs, self.n_outputs]).ravel()
        return np.repeat(np.tile([True, False], n), lengths)

    @property
    def owner(self) -> np.ndarray:
        """Per end, the operation it belongs to."""
        return np.repeat(np.arange(len(self)), self.n_inputs + self.n_outputs)

    def _split(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """(inputs, outputs) of each operation, as views."""
        start = np.concatenate([[0], np.cumsum(self.n_inputs + self.n_outputs)]).tolist()
        cut = (start[i] + k for i, k in enumerate(self.n_inputs.tolist()))
        return [(self.ends[a:c], self.ends[c:b]) for a, c, b in zip(start, cut, start[1:])]


def _ends_of(kinds, inputs, outputs) -> dict:
    """The InNetworkEnds fields of operations given one by one."""
    inputs = [np.asarray(a, dtype=np.int32).ravel() for a in inputs]
    outputs = [np.asarray(a, dtype=np.int32).ravel() for a in outputs]
    n = len(inputs)
    ends = [a for pair in zip(inputs, outputs) for a in pair]
    return {"kind": np.array(list(kinds), dtype=str).reshape(n),
            "ends": np.concatenate(ends).astype(np.int32) if ends else np.zeros(0, np.int32),
            "n_inputs": np.fromiter(map(len, inputs), np.int64, n), "n_outputs": np.fromiter(map(len, outputs), np.int64, n)}


@dataclass(frozen=True, eq=False)
class InNetworkOps(InNetworkEnds):
    """A step's in-network operations; iterating gives each as an `InNetworkOp`."""

    chunk: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # int64 per operation (repetition 0)
    op: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))  # int8 Op per operation

    @staticmethod
    def of(ops) -> InNetworkOps:
        """The batch of `ops` (InNetworkOp), in order."""
        ops = list(ops)
        return InNetworkOps(**_ends_of((o.kind for o in ops), (o.inputs for o in ops), (o.outputs for o in ops)),
                            chunk=np.fromiter((o.chunk for o in ops), np.int64, len(ops)),
                            op=np.fromiter((o.op for o in ops), np.int8, len(ops)))

    def __iter__(self):
        for k, (i, o), c, op in zip(self.kind.tolist(), self._split(), self.chunk.tolist(), self.op.tolist()):
            yield InNetworkOp(k, i, o, c, Op(op))


@dataclass(frozen=True, eq=False)
class InNetworkTraffic(InNetworkEnds):
    """A step's in-network operations as the engine times them; iterating gives (kind, inputs, outputs, nbytes)."""

    nbytes: np.ndarray = field(default_factory=lambda: np.zeros(0))  # float64 bytes per operation

    @staticmethod
    def of(ops) -> InNetworkTraffic:
        """The batch of (kind, inputs, outputs, nbytes) operations, in order."""
        ops = list(ops)
        return InNetworkTraffic(**_ends_of((o[0] for o in ops), (o[1] for o in ops), (o[2] for o in ops)),
                                nbytes=np.fromiter((o[3] for o in ops), np.float64, len(ops)))

    def __iter__(self):
        for k, (i, o), b in zip(self.kind.tolist(), self._split(), self.nbytes.tolist()):
            yield k, i, o, b

    def take(self, keep: np.ndarray) -> InNetworkTraffic:
        """The operations where `keep` is true, in order."""
        per_end = np.repeat(keep, self.n_inputs + self.n_outputs)
        return InNetworkTraffic(self.kind[keep], self.ends[per_end], self.n_inputs[keep], self.n_outputs[keep],
                                self.nbytes[keep])


NO_OPS = InNetworkOps(np.zeros(0, "<U5"), np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int64))
NO_TRAFFIC = InNetworkTraffic(NO_OPS.kind, NO_OPS.ends, NO_OPS.n_inputs, NO_OPS.n_outputs)


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
    innet: InNetworkOps = NO_OPS  # a sequence of InNetworkOp is turned into one
    repeat: int = 1
    stride: int = 0
    period: int = 1
    span: np.ndarray | None = None  # int64 chunks moved per transfer (None: one each)

    def __post_init__(self):
        if not isinstance(self.innet, InNetworkOps):
            object.__setattr__(self, "innet", InNetworkOps.of(self.innet))

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
        arrays += [a for s in self.steps if s.innet for a in (s.innet.ends, s.innet.n_inputs, s.innet.n_outputs,
                                                               s.innet.chunk, s.innet.op)]
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
        innet=innet if isinstance(innet, InNetworkOps) else InNetworkOps.of(innet),
        repeat=int(repeat),
        stride=int(stride),
        period=int(period),
        span=None if span is None else col(span, np.int64),
    )


@dataclass(frozen=True, eq=False)
class StepTraffic:
    """What the engine times: one step's traffic in bytes, repeated `repeat` times.

    src/dst/nbytes: point-to-point transfers (src == dst are local copies, free on the fabric).
    innet: the in-network operations (a sequence of (kind, inputs, outputs, nbytes) is turned into them).
    When `repeat > 1` every repetition moves the same bytes between the same ranks, so
    the engine may time it once (uneven chunk sizes are folded in as the largest chunk).
    active: (first, last) repetition in which each transfer, then each in-network operation, moves
    bytes (first > last: never), for a pipeline whose repetitions each engage only some transfers
    (a tree's levels); None: every transfer works in every repetition.
    """

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray  # float64 bytes per transfer
    innet: InNetworkTraffic = NO_TRAFFIC
    repeat: int = 1
    active: tuple[np.ndarray, np.ndarray] | None = None

    def __post_init__(self):
        if not isinstance(self.innet, InNetworkTraffic):
            object.__setattr__(self, "innet", InNetworkTraffic.of(self.innet))
