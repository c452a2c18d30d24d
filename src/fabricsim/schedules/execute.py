"""Reference executor: runs a Schedule on real numpy buffers, and the expected results
computed directly, so every algorithm is checked on real numbers."""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.schedules import layout
from fabricsim.schedules.model import Op, Schedule, Step, rotate_chunks
from fabricsim.schedules.replicate import unroll

REDUCTIONS = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum, "avg": np.add}


def _ufunc(op: str) -> np.ufunc:
    if op not in REDUCTIONS:
        raise FabricsimError(f"unknown reduction '{op}': use one of {', '.join(REDUCTIONS)}")
    return REDUCTIONS[op]


def average(x: np.ndarray, n: int) -> np.ndarray:
    """x / n as NCCL's ncclAvg: floats divide, integers divide after the sum truncating toward zero."""
    if np.issubdtype(x.dtype, np.integer):
        if np.issubdtype(x.dtype, np.unsignedinteger):
            return x // n
        return (np.abs(x) // n * np.sign(x)).astype(x.dtype)
    return (x / n).astype(x.dtype)


def _check_inputs(inputs: list, nranks: int) -> np.dtype:
    if nranks < 1:
        raise FabricsimError("a collective needs at least one rank: pass one input array per rank")
    if len(inputs) != nranks:
        raise FabricsimError(f"got {len(inputs)} input arrays for {nranks} ranks: pass exactly one per rank")
    dtypes = {np.asarray(x).dtype for x in inputs}
    if len(dtypes) != 1:
        raise FabricsimError(f"inputs mix dtypes {sorted(map(str, dtypes))}: give every rank the same dtype")
    return dtypes.pop()


def _check_root(root: int, nranks: int) -> None:
    if not 0 <= root < nranks:
        raise FabricsimError(f"root {root} is outside ranks 0..{nranks - 1}: pick a root among the ranks")


def reference(collective: str, inputs: list[np.ndarray], op: str = "sum", root: int = 0) -> list[np.ndarray]:
    """The collective's result computed directly (see `layout` for the input/output convention)."""
    if collective not in layout.COLLECTIVES:
        raise FabricsimError(f"unknown collective '{collective}': use one of {', '.join(layout.COLLECTIVES)}")
    n = len(inputs)
    _check_inputs(inputs, n)
    ufunc = _ufunc(op)
    xs = [np.asarray(x).ravel() for x in inputs]
    layout.count_of(collective, xs, n)
    if collective in ("broadcast", "reduce"):
        _check_root(root, n)
    if collective in layout.REDUCING:
        stacked = np.stack(xs)
        total = ufunc.reduce(stacked, axis=0, dtype=stacked.dtype)  # wrap like the buffers, no upcast
        if op == "avg":
            total = average(total, n)
        if collective == "all_reduce":
            return [total.copy() for _ in range(n)]
        if collective == "reduce":
            return [total.copy() if r == root else xs[r][:0].copy() for r in range(n)]
        return [part.copy() for part in np.array_split(total, n)]
    if collective == "broadcast":
        return [xs[root].copy() for _ in range(n)]
    if collective == "all_gather":
        return [np.concatenate(xs) for _ in range(n)]
    if collective == "alltoall":
        block = np.stack(xs).reshape(n, n, xs[0].size // n)  # [i, j]: rank i's block for j (count_of: equal blocks)
        return [block[:, r].flatten() for r in range(n)]
    return [xs[(r - 1) % n].copy() for r in range(n)]  # sendrecv: rank r receives from r-1


def _expand(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Concatenated ranges start..start+size-1."""
    total = int(sizes.sum())
    offs = np.arange(total) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return np.repeat(starts, sizes) + offs


_REDUCE = int(Op.REDUCE)  # a plain int: an int8 array compared with the IntEnum member costs a Python round trip
BATCH_ELEMENTS = 1 << 20  # elements a batch of a step's repetitions moves, at most (bounds the index arrays)


def _rotated(step: Step, chunks: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """`chunks` in each repetition of `ks` (one row per repetition): `Step.chunks_at` for many repetitions."""
    if step.repeat == 1:  # repetition 0 holds the chunks themselves (a turn by 0 is the identity)
        return chunks[None, :]
    if step.stride == 0:
        return np.broadcast_to(chunks, (ks.shape[0], chunks.shape[0]))
    return rotate_chunks(chunks[None, :], step.period, ks[:, None] * step.stride)


def _run_step(step: Step, buf: np.ndarray, start: np.ndarray, size: np.ndarray, ufunc: np.ufunc) -> None:
    """Every repetition of `step` on `buf` (one row per rank), one after another. In each, every transfer and
    in-network operation reads what the buffers held before it, so all of them read before any writes. The element
    indices of many repetitions are computed at once (the numpy calls per repetition are what costs)."""
    width = buf.shape[1]
    flat = buf.reshape(-1)  # a view: place_inputs makes buf C-contiguous
    src, dst, src_chunk, dst_chunk, op = step.src, step.dst, step.src_chunk, step.dst_chunk, step.op
    if step.span is not None:  # one entry per chunk a transfer moves
        tr = np.repeat(np.arange(step.n_transfers), step.span)
        src, dst, src_chunk, dst_chunk, op = src[tr], dst[tr], src_chunk[tr], dst_chunk[tr], op[tr]
    ks = np.arange(step.repeat)
    sc, dc = _rotated(step, src_chunk, ks), _rotated(step, dst_chunk, ks)  # (repetition, chunk transfer)
    if step.span is not None:
        inner = _expand(np.zeros(step.n_transfers, dtype=np.int64), step.span)
        sc, dc = sc + inner, dc + inner
    n_el = size[sc]
    if (n_el != size[dc]).any():
        raise FabricsimError("internal: a schedule moves chunks of different sizes; report this schedule as a bug")
    src_at = src.astype(np.int64) * width + start[sc]  # first element of each chunk transfer, flat
    dst_at = dst.astype(np.int64) * width + start[dc]
    reduce = op == _REDUCE
    any_reduce, any_copy = bool(reduce.any()), not bool(reduce.all())
    ops = list(step.innet) if len(step.innet) else []
    op_chunks = _rotated(step, step.innet.chunk, ks).tolist() if ops else []
    moved = np.cumsum(n_el.sum(axis=1)).tolist()  # elements moved by repetitions 0..k
    k0 = 0
    while k0 < step.repeat:
        before = moved[k0 - 1] if k0 else 0
        k1 = max(k0 + 1, bisect_right(moved, before + BATCH_ELEMENTS))
        n = n_el[k0:k1].ravel()
        at = np.repeat(np.arange(n.shape[0]), n)  # the chunk transfer of each element moved
        offs = np.arange(at.shape[0]) - (np.cumsum(n) - n)[at]  # its place inside its chunk
        src_el = src_at[k0:k1].ravel()[at] + offs
        dst_el = dst_at[k0:k1].ravel()[at] + offs
        if any_reduce and any_copy:
            reduce_el = np.tile(reduce, k1 - k0)[at]
            copy_el = ~reduce_el
        ends = [m - before for m in moved[k0:k1]]
        for k, a, b in zip(range(k0, k1), [0] + ends, ends):
            vals = flat[src_el[a:b]]
            innet: list = []
            if ops:
                pieces = [(o, start[c], start[c] + size[c]) for o, c in zip(ops, op_chunks[k])]
                innet = [(o, s, e, buf[o.inputs, s:e]) for o, s, e in pieces if e > s]  # fancy indexing: a copy
            to = dst_el[a:b]
            if not any_reduce:
                flat[to] = vals
            elif not any_copy:  # ufunc.at: repeated targets reduce in turn (numpy 2: as fast as flat[to] += vals)
                ufunc.at(flat, to, vals)
            else:
                red, cp = reduce_el[a:b], copy_el[a:b]
                flat[to[cp]] = vals[cp]
                ufunc.at(flat, to[red], vals[red])
            for o, s, e, data in innet:
                buf[o.outputs, s:e] = ufunc.reduce(data, axis=0, dtype=data.dtype) if o.op == Op.REDUCE else data[0]
        k0 = k1


def execute(schedule: Schedule, inputs: list[np.ndarray], op: str = "sum") -> list[np.ndarray]:
    """Run `schedule` on one input array per rank and return each rank's output."""
    schedule = unroll(schedule)
    dtype = _check_inputs(inputs, schedule.nranks)
    ufunc = _ufunc(op)
    xs = [np.asarray(x).ravel() for x in inputs]
    group = schedule.nranks // schedule.copies  # a replicated schedule runs copies of one group's collective
    count = layout.count_of(schedule.collective, xs[:group], group)
    buf = layout.place_inputs(schedule, xs, count, dtype)
    start, stop = layout.chunk_bounds(schedule, count)
    size = stop - start
    for step in schedule.steps:
        _run_step(step, buf, start, size, ufunc)
    outputs = layout.read_outputs(schedule, buf, count)
    if op == "avg" and schedule.collective in layout.REDUCING:
        outputs = [average(x, group) for x in outputs]
    return outputs
