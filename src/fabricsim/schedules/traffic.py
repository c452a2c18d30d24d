"""Bytes on the wire, derived from the schedule itself (never from closed-form formulas).

`traffic` gives the engine one StepTraffic per Step (repeats kept compact): the per-transfer bytes
are the mean over the repetitions, so repeat x bytes is exactly what the transfer moves in total
(a pipelined tree's fill and drain repetitions, where an edge carries an empty chunk, count as zero).
`rank_traffic` sums exact bytes per rank over every repetition.
"""

from __future__ import annotations

from dataclasses import replace
from math import gcd

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.schedules import layout
from fabricsim.schedules.model import InNetworkTraffic, Schedule, Step, StepTraffic
from fabricsim.schedules.replicate import unroll

_LOOP_LIMIT = 1 << 22  # transfers x repetitions walked one repetition at a time; beyond, use window sums


def chunk_bytes(schedule: Schedule, nbytes: int, elem_size: int) -> np.ndarray:
    """Bytes of every chunk for a message of `nbytes` (nccl-tests size convention, see layout)."""
    if elem_size < 1 or nbytes < 0:
        raise FabricsimError(f"need nbytes >= 0 and elem_size >= 1, got nbytes={nbytes}, elem_size={elem_size}")
    if nbytes % elem_size:
        raise FabricsimError(f"{nbytes} bytes is not a whole number of {elem_size}-byte elements: round the size")
    start, stop = layout.chunk_bounds(schedule, nbytes // elem_size)
    return (stop - start).astype(np.float64) * elem_size


def _span_bytes(cs: np.ndarray, chunks: np.ndarray, span: np.ndarray | None) -> np.ndarray:
    """Bytes of chunks c .. c+span-1, from the prefix sum `cs` of chunk bytes."""
    end = chunks + (1 if span is None else span)
    return cs[np.minimum(end, cs.size - 1)] - cs[chunks]


def _windows(step: Step, cs: np.ndarray, chunks: np.ndarray, span: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(sum, max) over repetitions per transfer without walking them, when the repetitions visit
    a contiguous run of one residue class of the chunk's block (stride = +-gcd(stride, period))."""
    p, s, R = step.period, step.stride, step.repeat
    g = gcd(abs(s), p)
    if abs(s) != g or (span is not None and np.unique(span).size > 1):
        return None
    L = p // g
    nblocks = -(-int(cs.size - 1) // p)
    valid = np.arange(nblocks * p) < cs.size - 1
    w = np.zeros(nblocks * p)
    w[valid] = _span_bytes(cs, np.flatnonzero(valid), None if span is None else span[:1])
    w = w.reshape(nblocks, L, g).transpose(0, 2, 1)  # [block, residue, u]
    doubled = np.concatenate([w, w], axis=2)
    pre = np.concatenate([np.zeros((nblocks, g, 1)), np.cumsum(doubled, axis=2)], axis=2)
    b, q = chunks // p, chunks % p
    rho, u = q % g, q // g
    first = u if s > 0 else (u - (R - 1)) % L  # the window runs forward from `first`
    full, rest = divmod(R, L)
    total = pre[b, rho, L] * full + pre[b, rho, first + rest] - pre[b, rho, first]
    return total, w.max(axis=2)[b, rho]


def _per_transfer(step: Step, cs: np.ndarray, chunks: np.ndarray, span: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(bytes summed over repetitions, largest bytes in one repetition) per transfer."""
    if step.repeat == 1 or step.stride == 0:
        b = _span_bytes(cs, chunks, span)
        return b * step.repeat, b
    if step.repeat * chunks.size > _LOOP_LIMIT:
        fast = _windows(step, cs, chunks, span)
        if fast is not None:
            return fast
    total = np.zeros(chunks.size)
    peak = np.zeros(chunks.size)
    for k in range(step.repeat):
        b = _span_bytes(cs, step.chunks_at(chunks, k), span)
        total += b
        np.maximum(peak, b, out=peak)
    return total, peak


def _prefix(schedule: Schedule, nbytes: int, elem_size: int) -> np.ndarray:
    return np.concatenate([[0.0], np.cumsum(chunk_bytes(schedule, nbytes, elem_size))])


def _windowed(step: Step) -> bool:
    """Whether `traffic` gives the step pipeline windows (StepTraffic.active): a stride-1 pipeline of one-chunk
    transfers whose repetitions stay within one pass of the block (a tree's or chain's fill and drain)."""
    return not (step.repeat == 1 or step.stride != 1 or step.span is not None or step.repeat > step.period)


def _active_window(step: Step, cs: np.ndarray, chunks: np.ndarray, span: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(first, last) repetition in which each transfer moves a non-empty chunk, for a step `_windowed` says is a
    pipeline; None otherwise."""
    R, p = step.repeat, step.period
    if not _windowed(step):
        return None
    nblocks = -(-int(cs.size - 1) // p)
    full = np.zeros(nblocks * p, dtype=bool)
    full[: cs.size - 1] = np.diff(cs) > 0
    doubled = np.tile(full.reshape(nblocks, p), 2)
    pos = np.arange(2 * p)
    nxt = np.minimum.accumulate(np.where(doubled, pos, 2 * p)[:, ::-1], axis=1)[:, ::-1]
    prv = np.maximum.accumulate(np.where(doubled, pos, -1), axis=1)
    b, q = chunks // p, chunks % p
    return nxt[b, q] - q, prv[b, q + R - 1] - q


def _rotations_as_repeats(schedule: Schedule, step: Step) -> Step:
    """A rotated schedule's step seen as `rotations` repetitions whose chunks turn by the rotation width:
    the per-transfer byte sums over them are what its rotations move (`_per_transfer`)."""
    if schedule.rotations == 1:
        return step
    return replace(step, repeat=schedule.rotations, stride=schedule.rotation_width, period=schedule.nranks)


def traffic(schedule: Schedule, nbytes: int, elem_size: int) -> list[StepTraffic]:
    """One StepTraffic per Step for a message of `nbytes` bytes of `elem_size`-byte elements. A rotated
    schedule's transfers are those of its first rotation, carrying the mean bytes over the rotations."""
    cs = _prefix(schedule, nbytes, elem_size)
    out = []
    for step in schedule.steps:
        if schedule.rotations > 1:
            total, _ = _per_transfer(_rotations_as_repeats(schedule, step), cs, step.src_chunk, step.span)
            out.append(StepTraffic(src=step.src, dst=step.dst, nbytes=total / schedule.rotations))
            continue
        total, _ = _per_transfer(step, cs, step.src_chunk, step.span)
        ops = step.innet
        op_total = _per_transfer(step, cs, ops.chunk, None)[0] / step.repeat if len(ops) else np.zeros(0)
        innet = InNetworkTraffic(ops.kind, ops.ends, ops.n_inputs, ops.n_outputs, op_total)
        chunks = np.concatenate([step.src_chunk, ops.chunk])
        active = _active_window(step, cs, chunks, step.span)
        out.append(StepTraffic(src=step.src, dst=step.dst, nbytes=total / step.repeat, innet=innet,
                               repeat=step.repeat, active=active))
    return out


def step_facts(schedule: Schedule, nbytes: int, elem_size: int) -> list[tuple[int, bool, bool]] | None:
    """Per step, what `traffic` would say of it for this message without summing bytes over repetitions:
    (repeat, whether a transfer between two ranks or an in-network operation moves bytes, whether it has pipeline
    windows). None where a chunk is empty or the schedule is rotated: then only `traffic` tells which transfers
    move bytes. With every chunk holding bytes, a transfer of at least one chunk moves bytes in every repetition.
    (The tuner bounds a candidate's time by these before it times it: a ring's 2(n - 1) steps, without building
    their traffic.)"""
    if schedule.rotations > 1 or not (chunk_bytes(schedule, nbytes, elem_size) > 0).all():
        return None
    out = []
    for step in schedule.steps:
        moving = (step.src != step.dst) if step.span is None else (step.src != step.dst) & (step.span > 0)
        out.append((int(step.repeat), bool(moving.any()) or len(step.innet) > 0, _windowed(step)))
    return out


def rank_traffic(schedule: Schedule, nbytes: int, elem_size: int) -> dict:
    """Exact bytes per rank over the whole schedule: point-to-point `sent` / `received` (local
    copies excluded), in-network `innet_sent` / `innet_received` (into / out of switches), `steps`."""
    n = schedule.nranks
    if schedule.rotations > 1:
        if schedule.rotations * sum(st.n_transfers for st in schedule.steps) <= _LOOP_LIMIT:
            return rank_traffic(unroll(schedule), nbytes, elem_size)
        return _rotated_rank_traffic(schedule, nbytes, elem_size)
    cs = _prefix(schedule, nbytes, elem_size)
    sent, received = np.zeros(n), np.zeros(n)
    innet_sent, innet_received = np.zeros(n), np.zeros(n)
    for step in schedule.steps:
        total, _ = _per_transfer(step, cs, step.src_chunk, step.span)
        remote = step.src != step.dst
        sent += np.bincount(step.src[remote], weights=total[remote], minlength=n)
        received += np.bincount(step.dst[remote], weights=total[remote], minlength=n)
        if step.innet:
            ops = step.innet
            per_end = _per_transfer(step, cs, ops.chunk, None)[0][ops.owner]
            inputs = ops.is_input
            np.add.at(innet_sent, ops.ends[inputs], per_end[inputs])
            np.add.at(innet_received, ops.ends[~inputs], per_end[~inputs])
    return {
        "sent": sent,
        "received": received,
        "innet_sent": innet_sent,
        "innet_received": innet_received,
        "steps": schedule.n_steps,
    }


def _rotated_rank_traffic(schedule: Schedule, nbytes: int, elem_size: int) -> dict:
    """rank_traffic of a large rotated schedule: rank r runs each first-rotation transfer whose rank is r's
    residue modulo the rotation width once, carrying that transfer's mean bytes over the rotations. Exact when
    the count splits into equal blocks, as every all-to-all's does (nccl-tests sizes, `layout.count_of`);
    otherwise a rank's bytes are the mean over the ranks at its place in the other nodes."""
    n, w, rot = schedule.nranks, schedule.rotation_width, schedule.rotations
    sent, received = np.zeros(w), np.zeros(w)
    for st, tr in zip(schedule.steps, traffic(schedule, nbytes, elem_size)):
        remote = st.src != st.dst
        sent += np.bincount(st.src[remote] % w, weights=tr.nbytes[remote], minlength=w)
        received += np.bincount(st.dst[remote] % w, weights=tr.nbytes[remote], minlength=w)
    zeros = np.zeros(n)
    return {"sent": np.tile(sent, rot), "received": np.tile(received, rot), "innet_sent": zeros,
            "innet_received": zeros.copy(), "steps": schedule.n_steps}
