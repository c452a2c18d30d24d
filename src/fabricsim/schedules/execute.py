"""Reference executor: runs a Schedule on real numpy buffers, and the expected results
computed directly, so every algorithm is checked on real numbers."""

from __future__ import annotations

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.schedules import layout
from fabricsim.schedules.model import Op, Schedule, Step
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
        parts = [np.array_split(x, n) for x in xs]
        return [np.concatenate([parts[i][r] for i in range(n)]) for r in range(n)]
    return [xs[(r - 1) % n].copy() for r in range(n)]  # sendrecv: rank r receives from r-1


def _expand(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Concatenated ranges start..start+size-1."""
    total = int(sizes.sum())
    offs = np.arange(total) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return np.repeat(starts, sizes) + offs


def _run_step(step: Step, k: int, buf: np.ndarray, start: np.ndarray, size: np.ndarray, ufunc: np.ufunc,
              ops: list, op_chunks: np.ndarray) -> None:
    """Repetition k of `step` on `buf`; `ops`: the step's in-network operations (listed once per step, not per
    repetition), `op_chunks` their chunks."""
    old = buf.copy()  # every transfer of a step reads the pre-step state
    sc = step.chunks_at(step.src_chunk, k)
    dc = step.chunks_at(step.dst_chunk, k)
    tr = np.arange(step.n_transfers)
    if step.span is not None:
        tr = np.repeat(tr, step.span)
        inner = _expand(np.zeros(step.n_transfers, dtype=np.int64), step.span)
        sc, dc = sc[tr] + inner, dc[tr] + inner
    if np.any(size[sc] != size[dc]):
        raise FabricsimError("internal: a schedule moves chunks of different sizes; report this schedule as a bug")
    n_el = size[sc]
    at = np.repeat(np.arange(n_el.shape[0]), n_el)  # the (chunk) transfer of each element moved
    offs = np.arange(at.shape[0]) - (np.cumsum(n_el) - n_el)[at]  # its place inside its chunk
    src_col = start[sc][at] + offs
    dst_col = start[dc][at] + offs
    el_tr = tr[at]
    src_row, dst_row = step.src[el_tr], step.dst[el_tr]
    vals = old[src_row, src_col]
    reduce = step.op[el_tr] == Op.REDUCE
    copy = ~reduce
    buf[dst_row[copy], dst_col[copy]] = vals[copy]
    ufunc.at(buf, (dst_row[reduce], dst_col[reduce]), vals[reduce])
    for o, c in zip(ops, step.chunks_at(op_chunks, k).tolist()):
        s, e = start[c], start[c] + size[c]
        if e == s:
            continue
        data = old[o.inputs, s:e]
        buf[o.outputs, s:e] = ufunc.reduce(data, axis=0, dtype=data.dtype) if o.op == Op.REDUCE else data[0]


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
        ops = list(step.innet)
        op_chunks = np.array([o.chunk for o in ops], dtype=np.int64)
        for k in range(step.repeat):
            _run_step(step, k, buf, start, size, ufunc, ops, op_chunks)
    outputs = layout.read_outputs(schedule, buf, count)
    if op == "avg" and schedule.collective in layout.REDUCING:
        outputs = [average(x, group) for x in outputs]
    return outputs
