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

In-network operations (NVLS inside an NVSwitch, SHARP inside InfiniBand switches):
  kind      'nvls' | 'sharp'
  inputs    ranks whose chunk is reduced inside the switch (one rank: plain multicast)
  outputs   ranks that receive the result (multicast)
  chunk     chunk index (repetition 0), same index read and written
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

    def chunks_at(self, chunks: np.ndarray, k: int) -> np.ndarray:
        """Chunk indices of repetition k."""
        if k == 0 or self.stride == 0:
            return chunks
        p = self.period
        return (chunks // p) * p + (chunks % p + k * self.stride) % p

    @property
    def n_transfers(self) -> int:
        return int(self.src.shape[0])


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

    @property
    def n_steps(self) -> int:
        """Steps counted with their repetitions."""
        return sum(s.repeat for s in self.steps)


@dataclass(frozen=True, eq=False)
class StepTraffic:
    """What the engine times: one step's traffic in bytes, repeated `repeat` times.

    src/dst/nbytes: point-to-point transfers (src == dst are local copies, free on the fabric).
    innet: (kind, inputs, outputs, nbytes) per in-network operation.
    When `repeat > 1` every repetition moves the same bytes between the same ranks, so
    the engine may time it once (uneven chunk sizes are folded in as the largest chunk).
    """

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray  # float64 bytes per transfer
    innet: tuple[tuple[str, np.ndarray, np.ndarray, float], ...] = ()
    repeat: int = 1
