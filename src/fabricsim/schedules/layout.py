"""Buffer layout: which element ranges each chunk covers, and where each collective's
inputs start and its outputs end up.

A rank's buffer is `nregions` regions of `count` elements (`count` follows the nccl-tests
size convention, see `count_of`):
  region 0  'data' (all_reduce, reduce_scatter, all_gather, broadcast, reduce) or 'send'
  region 1  'recv' (alltoall, sendrecv)
  region 2+ 'scratch' (relay space, e.g. PXN)
Inputs and outputs per collective (n ranks, block r = np.array_split(region, n)[r]):
  all_reduce       in: data            out: data
  reduce_scatter   in: data (total)    out: data block r
  all_gather       in: data block r    out: data (total)
  broadcast        in: data of root    out: data
  reduce           in: data            out: data on root (other ranks: empty)
  alltoall         in: send (block j goes to rank j)   out: recv (block i came from rank i)
  sendrecv         in: send            out: recv (what rank r-1 sent; nccl-tests sendrecv_perf)
"""

from __future__ import annotations

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.schedules.model import Schedule
from fabricsim.vocab import COLLECTIVES, REDUCING  # noqa: F401  (importers of layout use them)

DATA, RECV, SCRATCH = 0, 1, 2


def piece_bounds(split: tuple[int, ...], count: int) -> tuple[np.ndarray, np.ndarray]:
    """Start/stop of each piece of a region of `count` elements cut by nested np.array_split."""
    start = np.zeros(1, dtype=np.int64)
    length = np.full(1, count, dtype=np.int64)
    for s in split:
        idx = np.arange(s)
        sizes = (length // s)[:, None] + (idx[None, :] < (length % s)[:, None])
        start = (start[:, None] + np.cumsum(sizes, axis=1) - sizes).ravel()
        length = sizes.ravel()
    return start, start + length


def chunk_bounds(schedule: Schedule, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Start/stop of every chunk in the flat per-rank buffer (length nregions * count)."""
    cm = schedule.chunkmap
    split = cm.split if cm is not None else (schedule.nchunks,)
    ps, pe = piece_bounds(split, count)
    piece = cm.piece if cm is not None and cm.piece is not None else np.arange(schedule.nchunks)
    region = cm.region if cm is not None and cm.region is not None else np.zeros(schedule.nchunks, dtype=np.int64)
    empty = piece < 0
    base = region.astype(np.int64) * count
    start = np.where(empty, 0, base + ps[piece])
    stop = np.where(empty, 0, base + pe[piece])
    return start, stop


def nregions(schedule: Schedule) -> int:
    return schedule.chunkmap.nregions if schedule.chunkmap is not None else 1


def blocks(count: int, nranks: int) -> tuple[np.ndarray, np.ndarray]:
    """Start/stop of the n per-rank blocks of a region."""
    return piece_bounds((nranks,), count)


def count_of(collective: str, inputs: list[np.ndarray], nranks: int) -> int:
    """Elements per region implied by the inputs, after checking their sizes agree."""
    sizes = [int(np.asarray(x).size) for x in inputs]
    if collective == "all_gather":
        total = sum(sizes)
        start, stop = blocks(total, nranks)
        if sizes != list(stop - start):
            raise FabricsimError(
                f"all_gather inputs have sizes {sizes}: rank r must hold block r of np.array_split(total, {nranks})"
            )
        return total
    if len(set(sizes)) > 1:
        raise FabricsimError(f"{collective} needs the same element count on every rank, got {sizes}")
    if collective == "alltoall" and sizes[0] % nranks:
        raise FabricsimError(
            f"alltoall sends equal blocks to every rank: {sizes[0]} elements do not split into {nranks}; "
            f"use a multiple of {nranks} (nccl-tests: count per peer x ranks)"
        )
    return sizes[0]


def place_inputs(schedule: Schedule, inputs: list[np.ndarray], count: int, dtype) -> np.ndarray:
    """The initial buffers (one row per rank) holding `inputs` where the collective reads them."""
    n, group = schedule.nranks, schedule.nranks // schedule.copies
    buf = np.zeros((n, nregions(schedule) * count), dtype=dtype)
    if schedule.collective == "all_gather":
        start, stop = blocks(count, group)
        for r in range(n):
            buf[r, start[r % group] : stop[r % group]] = inputs[r]
    else:
        buf[:, :count] = np.stack([np.asarray(x).ravel() for x in inputs]) if count else buf[:, :0]
    return buf


def read_outputs(schedule: Schedule, buf: np.ndarray, count: int) -> list[np.ndarray]:
    """Each rank's output, read from its final buffer."""
    n, coll, group = schedule.nranks, schedule.collective, schedule.nranks // schedule.copies
    if coll == "reduce_scatter":
        start, stop = blocks(count, group)
        return [buf[r, start[r % group] : stop[r % group]].copy() for r in range(n)]
    if coll == "reduce":
        return [buf[r, :count].copy() if r % group == schedule.root else buf[r, :0].copy() for r in range(n)]
    if coll in ("alltoall", "sendrecv"):
        return [buf[r, RECV * count : (RECV + 1) * count].copy() for r in range(n)]
    return [buf[r, :count].copy() for r in range(n)]
