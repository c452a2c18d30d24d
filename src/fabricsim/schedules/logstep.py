"""Logarithmic-step algorithms: Rabenseifner and recursive doubling (MPICH, with the extra
ranks of a non-power-of-two count folded in first), Bruck, and PAT-style AG/RS."""

from __future__ import annotations

import numpy as np

from fabricsim.schedules.model import ChunkMap, Op, Schedule, make_step


def _fold(n: int) -> tuple[int, int, np.ndarray]:
    """MPICH fold: (core size p' = largest power of two <= n, rem = n - p', core -> rank).
    Ranks 2v+1 (v < rem) and v + rem (v >= rem) are the core; even ranks below 2*rem sit out."""
    pp = 1 << (n.bit_length() - 1)
    rem = n - pp
    v = np.arange(pp)
    return pp, rem, np.where(v < rem, 2 * v + 1, v + rem)


def _pairs(core: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(core index, its rank, partner's rank) for the exchange at distance d."""
    v = np.arange(core.size)
    return v, core, core[v ^ d]


def _distances(pp: int, descending: bool) -> list[int]:
    ds = [1 << j for j in range(pp.bit_length() - 1)]
    return ds[::-1] if descending else ds


def rabenseifner(n: int) -> Schedule:
    """AllReduce = recursive-halving reduce-scatter + recursive-doubling all-gather over p' blocks."""
    pp, rem, core = _fold(n)
    extra = np.arange(0, 2 * rem, 2)
    steps = []
    if rem:
        steps.append(make_step(extra, extra + 1, 0, 0, Op.REDUCE, span=pp))
    for d in _distances(pp, descending=True):  # halving: keep my half, send the partner's
        v, me, peer = _pairs(core, d)
        c = (v ^ d) & ~(d - 1)
        steps.append(make_step(me, peer, c, c, Op.REDUCE, span=d))
    for d in _distances(pp, descending=False):  # doubling: send everything I hold
        v, me, peer = _pairs(core, d)
        c = v & ~(d - 1)
        steps.append(make_step(me, peer, c, c, Op.COPY, span=d))
    if rem:
        steps.append(make_step(extra + 1, extra, 0, 0, Op.COPY, span=pp))
    return Schedule("all_reduce", "rabenseifner", n, pp, tuple(steps), meta={"core": pp, "folded": rem})


def recursive_doubling(collective: str, n: int) -> Schedule:
    """AllReduce: exchange-and-reduce the whole buffer at distances 1, 2, 4...; AllGather:
    exchange everything held. Core rank v holds two chunk slots (its block and the block of
    the folded-in rank, empty when there is none) so every exchange is one contiguous span."""
    pp, rem, core = _fold(n)
    extra = np.arange(0, 2 * rem, 2)
    steps = []
    if collective == "all_reduce":
        if rem:
            steps.append(make_step(extra, extra + 1, 0, 0, Op.REDUCE))
        for d in _distances(pp, descending=False):
            _, me, peer = _pairs(core, d)
            steps.append(make_step(me, peer, 0, 0, Op.REDUCE))
        if rem:
            steps.append(make_step(extra + 1, extra, 0, 0, Op.COPY))
        return Schedule("all_reduce", "recursive_doubling", n, 1, tuple(steps), meta={"core": pp, "folded": rem})
    v = np.arange(pp)
    piece = np.stack([core, np.where(v < rem, 2 * v, -1)], axis=1).ravel()
    if rem:
        slot = 2 * (extra // 2) + 1
        steps.append(make_step(extra, extra + 1, slot, slot, Op.COPY))
    for d in _distances(pp, descending=False):
        vv, me, peer = _pairs(core, d)
        c = 2 * (vv & ~(d - 1))
        steps.append(make_step(me, peer, c, c, Op.COPY, span=2 * d))
    if rem:
        steps.append(make_step(extra + 1, extra, 0, 0, Op.COPY, span=2 * pp))
    return Schedule(
        "all_gather", "recursive_doubling", n, 2 * pp, tuple(steps),
        meta={"core": pp, "folded": rem}, chunkmap=ChunkMap(split=(n,), piece=piece.astype(np.int64)),
    )


def bruck(collective: str, n: int) -> Schedule:
    """Bruck AllGather: at distance d = 1, 2, 4... rank r sends the min(d, n-d) blocks it holds,
    r .. r+cnt-1 (cyclic), to rank r-d. ReduceScatter runs the same exchanges reversed in
    order and direction, reducing partial sums (the transpose of the all-gather)."""
    r = np.arange(n)
    rounds = []
    d = 1
    while d < n:
        cnt = min(d, n - d)
        first = np.minimum(cnt, n - r)  # blocks r .. n-1, then 0 .. wrap-1
        wrap = cnt - first
        w = wrap > 0
        src = np.concatenate([r, r[w]])
        dst = (src - d) % n
        chunk = np.concatenate([r, np.zeros(int(w.sum()), dtype=np.int64)])
        span = np.concatenate([first, wrap[w]])
        rounds.append((src, dst, chunk, span))
        d *= 2
    if collective == "all_gather":
        steps = [make_step(s, t, c, c, Op.COPY, span=sp) for s, t, c, sp in rounds]
    else:
        steps = [make_step(t, s, c, c, Op.REDUCE, span=sp) for s, t, c, sp in reversed(rounds)]
    return Schedule(collective, "bruck", n, n, tuple(steps))


def pat(collective: str, n: int) -> Schedule:
    """PAT-style AllGather: distances from the largest power of two below n down to 1, each
    rank forwarding to r+d every block it holds that r+d lacks, so the first, longest hops
    carry one block and the aggregate doubles each step. ReduceScatter is its transpose."""
    held = np.zeros(1, dtype=np.int64)  # offsets s: rank r holds block r - s
    r = np.arange(n)
    rounds = []
    for d in _distances(1 << max(n - 1, 0).bit_length(), descending=True):
        if d >= n:
            continue
        s = held[held + d < n]
        src = np.repeat(r, s.size)
        chunk = (src - np.tile(s, n)) % n
        rounds.append((src, (src + d) % n, chunk))
        held = np.concatenate([held, s + d])
    if collective == "all_gather":
        steps = [make_step(a, b, c, c, Op.COPY) for a, b, c in rounds]
    else:
        steps = [make_step(b, a, c, c, Op.REDUCE) for a, b, c in reversed(rounds)]
    return Schedule(collective, "pat", n, n, tuple(steps))
