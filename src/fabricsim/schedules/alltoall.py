"""AllToAll (direct, pairwise, PXN) and SendRecv. Send blocks are chunks 0..n-1 (region 0),
receive blocks chunks n..2n-1 (region 1); PXN relays through scratch regions."""

from __future__ import annotations

import numpy as np

from fabricsim.schedules.layout import RECV, SCRATCH
from fabricsim.schedules.model import ChunkMap, Op, Schedule, make_step
from fabricsim.schedules.structure import Structure


def _two_regions(n: int) -> ChunkMap:
    q = np.arange(n, dtype=np.int64)
    return ChunkMap(split=(n,), nregions=2, region=np.repeat([0, RECV], n).astype(np.int16), piece=np.concatenate([q, q]))


def _pairs(n: int, senders: int) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) of every block ranks 0..senders-1 send, one per destination rank."""
    return np.repeat(np.arange(senders), n), np.tile(np.arange(n), senders)


def direct(n: int, width: int | None = None) -> Schedule:
    """Every rank sends block j to rank j at once (block r to itself is a local copy). With `width`, only
    ranks 0..width-1 are listed and the schedule is their n / width rotations (see Schedule.rotations)."""
    w = n if width is None else width
    i, j = _pairs(n, w)
    step = make_step(i, j, j, n + i, Op.COPY)
    return Schedule("alltoall", "direct", n, 2 * n, (step,), chunkmap=_two_regions(n), rotations=n // w)


def pairwise(n: int) -> Schedule:
    """n-1 steps; in step k rank r sends to r+k and receives from r-k (the local block is
    copied during the first step)."""
    r = np.arange(n)
    steps = []
    for k in range(1, n):
        src, dst = r, (r + k) % n
        if k == 1:  # the local block is copied during the first exchange
            src, dst = np.concatenate([r, r]), np.concatenate([dst, r])
        steps.append(make_step(src, dst, dst, n + src, Op.COPY))
    if n == 1:
        steps.append(make_step(r, r, r, n + r, Op.COPY))
    return Schedule("alltoall", "pairwise", n, 2 * n, tuple(steps), chunkmap=_two_regions(n))


def pxn(s: Structure, rotated: bool = False) -> Schedule:
    """Rail-aligned: a block for rank (b, j) on another node first moves over NVLink to the
    local rank on rail j (scratch region of its source's local index), which sends it across
    the network to (b, j); same-node blocks go straight over NVLink. `rotated`: list only the
    first node's blocks, the schedule being their rotation node by node (see Schedule.rotations)."""
    n, ppn = s.nranks, s.ranks_per_node
    src, dst = _pairs(n, ppn if rotated else n)
    a, i, b, j = src // ppn, src % ppn, dst // ppn, dst % ppn
    scratch = 2 * n + i * n + dst  # chunk in scratch region SCRATCH + i
    local = a == b
    relay = ~local & (i != j)
    hop = a * ppn + j
    step1 = make_step(
        np.concatenate([src[local], src[relay]]), np.concatenate([dst[local], hop[relay]]),
        np.concatenate([dst[local], dst[relay]]), np.concatenate([n + src[local], scratch[relay]]), Op.COPY,
    )
    remote = ~local
    step2 = make_step(
        hop[remote], dst[remote], np.where(relay, scratch, dst)[remote], (n + src)[remote], Op.COPY
    )
    q = np.arange(n, dtype=np.int64)
    region = np.concatenate([np.zeros(n), np.full(n, RECV), np.repeat(SCRATCH + np.arange(ppn), n)]).astype(np.int16)
    cm = ChunkMap(split=(n,), nregions=2 + ppn, region=region, piece=np.tile(q, 2 + ppn))
    steps = (step1, step2) if remote.any() else (step1,)
    return Schedule("alltoall", "pxn", n, (2 + ppn) * n, steps, meta={"ranks_per_node": ppn}, chunkmap=cm,
                    rotations=n // ppn if rotated else 1)


def sendrecv(n: int) -> Schedule:
    """nccl-tests sendrecv_perf: every rank sends to rank+1 and receives from rank-1 (mod n)."""
    r = np.arange(n)
    cm = ChunkMap(split=(1,), nregions=2, region=np.array([0, RECV], dtype=np.int16), piece=np.array([0, 0]))
    return Schedule("sendrecv", "direct", n, 2, (make_step(r, (r + 1) % n, 0, 1, Op.COPY),), chunkmap=cm)
