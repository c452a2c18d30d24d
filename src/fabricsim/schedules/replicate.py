"""Many groups running the same collective at once, as one schedule; a rank-symmetric schedule unrolled.

Training runs a collective in every tensor-, data- or pipeline-parallel group at the same time; timing them as
one schedule of disjoint copies (copy k's rank r is rank k * n + r) lets the engine share the fabric between
them in one pass, with memory that grows with the total number of transfers, not with groups x links.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.schedules.model import InNetworkOps, Schedule, Step, rotate_chunks, rotate_ranks


def _spread(ranks: np.ndarray, n: int, copies: int) -> np.ndarray:
    """Every copy's version of a rank array, copy after copy."""
    return (np.arange(copies, dtype=np.int64)[:, None] * n + np.asarray(ranks, dtype=np.int64)[None, :]).ravel().astype(np.int32)


def _tile(a: np.ndarray | None, copies: int) -> np.ndarray | None:
    return None if a is None else np.tile(a, copies)


def replicate(schedule: Schedule, copies: int) -> Schedule:
    """`copies` disjoint copies of `schedule` as one schedule over copies x nranks ranks."""
    if copies < 1:
        raise FabricsimError(f"copies must be at least 1, got {copies}")
    if copies == 1:
        return schedule
    if schedule.rotations > 1:
        raise FabricsimError("a rotated all-to-all (more than 1,024 ranks) cannot be replicated: use smaller groups")
    n = schedule.nranks
    steps = []
    for st in schedule.steps:
        ops = st.innet
        innet = InNetworkOps(np.tile(ops.kind, copies), _spread(ops.ends, n, copies), np.tile(ops.n_inputs, copies),
                             np.tile(ops.n_outputs, copies), np.tile(ops.chunk, copies), np.tile(ops.op, copies))
        steps.append(Step(src=_spread(st.src, n, copies), dst=_spread(st.dst, n, copies),
                          src_chunk=_tile(st.src_chunk, copies), dst_chunk=_tile(st.dst_chunk, copies),
                          op=_tile(st.op, copies), innet=innet, repeat=st.repeat, stride=st.stride, period=st.period,
                          span=_tile(st.span, copies)))
    return replace(schedule, nranks=n * copies, steps=tuple(steps), copies=schedule.copies * copies)


def unroll(schedule: Schedule) -> Schedule:
    """A rank-symmetric schedule (`rotations` > 1) written out in full: every rotation's transfers listed."""
    if schedule.rotations == 1:
        return schedule
    n, rot = schedule.nranks, schedule.rotations
    shift = np.arange(rot, dtype=np.int64)[:, None] * schedule.rotation_width
    steps = []
    for st in schedule.steps:
        if st.repeat != 1 or st.innet:
            raise FabricsimError("a rotated schedule's steps must run once and hold no in-network operations")
        steps.append(Step(src=rotate_ranks(st.src, n, shift), dst=rotate_ranks(st.dst, n, shift),
                          src_chunk=rotate_chunks(st.src_chunk[None, :], n, shift).ravel(),
                          dst_chunk=rotate_chunks(st.dst_chunk[None, :], n, shift).ravel(), op=_tile(st.op, rot),
                          span=_tile(st.span, rot)))
    return replace(schedule, steps=tuple(steps), rotations=1)
