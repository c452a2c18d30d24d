"""Max-min fair link sharing by progressive filling, and event-driven draining of finite flows.

Flows are given as a COO incidence list (edge e: flow `edge_flow[e]` crosses link `edge_link[e]`,
carrying the fraction `edge_share[e]` of the flow's rate there; 1 unless the flow is sprayed over
several paths, as adaptive routing splits a transfer's packets over every equal-cost uplink: its
paths' rates stay in proportion, so the transfer is one flow at its endpoints, not one per path).
A flow of multiplicity m stands for m identical flows (same links, bytes and cap), e.g. NCCL
channels between the same two GPUs; it counts m times on every link and `rate` is per copy.
The loop iterates bottleneck levels, not flows: every pass saturates at least one link or cap,
so a symmetric collective over 131,072 GPUs takes a handful of vectorised passes. A pass costs the
links, not the edges: each link's load of unfrozen flows is kept up to date as flows freeze (their own
edges only), so a fabric whose hashed ECMP paths give hundreds of distinct bottleneck levels (an
all-to-all over several NVL72 racks) re-solves quickly at every one of its thousands of flow finishes.
Between re-solves a drain moves classes of flows (equal bytes left, equal rate), not flows: a 1,024-rank
all-to-all's 10^5-10^6 hashed-ECMP flows are a few thousand classes, and most finishes re-solve nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.engine import invariants

_REL_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class _Incidence:
    """Flows x links, indexed both ways (CSR): built once, re-solved for any subset of live flows."""

    edge_flow: np.ndarray  # flow of each edge
    edge_lk: np.ndarray  # link of each edge, numbered 0..n_links-1 over the links crossed
    edge_share: np.ndarray | None  # fraction of its flow's rate each edge puts on its link (None: 1)
    cap: np.ndarray  # capacity of each crossed link
    by_link: np.ndarray  # edges sorted by link; link l's are by_link[link_ptr[l]:link_ptr[l+1]]
    link_ptr: np.ndarray
    by_flow: np.ndarray  # edges sorted by flow
    flow_ptr: np.ndarray

    @staticmethod
    def of(edge_flow: np.ndarray, edge_link: np.ndarray, n_flows: int, capacity: np.ndarray,
           edge_share: np.ndarray | None = None) -> _Incidence:
        crossed = np.bincount(edge_link) > 0  # the links crossed, numbered 0.. in link order
        links = np.flatnonzero(crossed)
        edge_lk = (np.cumsum(crossed) - 1)[edge_link]
        # one stable sort groups the edges by link: a radix sort when the numbers fit 16 bits (a fabric's few
        # thousand links crossed), the same order as sorting the link numbers themselves
        by_link = np.argsort(edge_lk.astype(np.uint16) if links.shape[0] <= 1 << 16 else edge_lk, kind="stable")
        share = None if edge_share is None or (edge_share == 1).all() else np.asarray(edge_share, dtype=np.float64)
        # edges come flow by flow from the planner (a flow's paths, then the next flow's): then the stable sort by
        # flow is the edges' own order, found without sorting
        in_order = edge_flow.shape[0] < 2 or bool((edge_flow[1:] >= edge_flow[:-1]).all())
        by_flow = np.arange(edge_flow.shape[0]) if in_order else np.argsort(edge_flow, kind="stable")
        return _Incidence(edge_flow, edge_lk, share, capacity[links].astype(np.float64), by_link,
                          _ptr(edge_lk, links.shape[0]), by_flow, _ptr(edge_flow, n_flows))


def _ptr(keys: np.ndarray, n: int) -> np.ndarray:
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr


def _gather(order: np.ndarray, ptr: np.ndarray, items: np.ndarray) -> np.ndarray:
    """The edges of `items` (links or flows): order[ptr[i]:ptr[i+1]] for each, concatenated."""
    return _ranges(order, ptr[items], ptr[items + 1])


def _ranges(order: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """order[lo[i]:hi[i]] for each i, concatenated."""
    if lo.shape[0] <= 1:
        return order[int(lo[0]):int(hi[0])] if lo.shape[0] else np.zeros(0, dtype=np.int64)
    return order[_positions(lo, hi)]


def _positions(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """lo[i], lo[i] + 1, ..., hi[i] - 1 for each i, concatenated."""
    count = hi - lo
    total = int(count.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    return np.repeat(lo - np.cumsum(count) + count, count) + np.arange(total)


def _distinct(flows: np.ndarray, n_flows: int) -> np.ndarray:
    """The distinct flow indices among `flows`, ascending: by sorting when few, by marking when many."""
    if flows.shape[0] * 8 < n_flows:
        return np.unique(flows, return_counts=True)[0]  # with counts: plain np.unique imports numpy.ma
    mark = np.zeros(n_flows, dtype=bool)
    mark[flows] = True
    return np.flatnonzero(mark)


def maxmin_rates(edge_flow: np.ndarray, edge_link: np.ndarray, n_flows: int, capacity: np.ndarray,
                 mult: np.ndarray | None = None, rate_cap: np.ndarray | None = None,
                 edge_share: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rate (bytes/s) of each flow; `capacity` is indexed by `edge_link`'s values.

    Every flow must cross at least one link. `rate_cap` bounds a flow's own rate (inf: none);
    `edge_share` (default 1) is the fraction of its flow's rate each edge puts on its link.
    """
    mult = np.ones(n_flows) if mult is None else mult
    inc = _Incidence.of(edge_flow, edge_link, n_flows, capacity, edge_share)
    every = np.ones(n_flows, dtype=bool)
    load, crossing = _link_loads(inc, None, mult)
    rate = _fill(inc, every, load, crossing, inc.cap.copy(), 0.0, mult, rate_cap, _by_cap(rate_cap, every))
    if invariants.ON:
        _check(inc, every, rate, mult, rate_cap, "max-min rates")
    return rate


def _check(inc: _Incidence, flows: np.ndarray, rate: np.ndarray, mult: np.ndarray, rate_cap: np.ndarray | None,
           what: str) -> None:
    """The invariants of a solve: no crossed link above its capacity, no flow above its cap (flows: a mask)."""
    invariants.check_link_loads(what, _usage(inc, np.flatnonzero(flows), rate, mult), inc.cap)
    invariants.check_rates(what, rate[flows], None if rate_cap is None else rate_cap[flows])


def _link_loads(inc: _Incidence, edges: np.ndarray | None, mult: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(multiplicity x share, number) of the flows of these edges (None: every edge) on every link."""
    lk, flow, share = (inc.edge_lk, inc.edge_flow, inc.edge_share) if edges is None else (
        inc.edge_lk[edges], inc.edge_flow[edges], None if inc.edge_share is None else inc.edge_share[edges])
    n_links = inc.cap.shape[0]
    weight = mult[flow] if share is None else mult[flow] * share
    return np.bincount(lk, weights=weight, minlength=n_links), np.bincount(lk, minlength=n_links)


def _usage(inc: _Incidence, flows: np.ndarray, rate: np.ndarray, mult: np.ndarray) -> np.ndarray:
    """Bytes/s the given flows (indices) at `rate` take from every link."""
    edges = _gather(inc.by_flow, inc.flow_ptr, flows)
    f = inc.edge_flow[edges]
    weight = rate[f] * mult[f] if inc.edge_share is None else rate[f] * mult[f] * inc.edge_share[edges]
    return np.bincount(inc.edge_lk[edges], weights=weight, minlength=inc.cap.shape[0])


def _by_cap(rate_cap: np.ndarray | None, flows: np.ndarray) -> np.ndarray:
    """The given flows (a mask) whose rate is capped, lowest cap first."""
    if rate_cap is None:
        return np.zeros(0, dtype=np.int64)
    capped = np.flatnonzero(flows & np.isfinite(rate_cap))
    return capped[np.argsort(rate_cap[capped], kind="stable")]


def _next_active(flows: np.ndarray, active: np.ndarray, i: int) -> int:
    """The first index from `i` on of an active flow among `flows` (len(flows): none), scanning blocks that
    double in size: the cost of what it skips, not of the list."""
    block = 64
    while i < flows.shape[0]:
        ahead = active[flows[i:i + block]]
        hit = int(np.argmax(ahead))
        if ahead[hit]:
            return i + hit
        i += block
        block *= 2
    return flows.shape[0]


def _fill(inc: _Incidence, active: np.ndarray, load: np.ndarray, crossing: np.ndarray, base: np.ndarray,
          start: float, mult: np.ndarray, rate_cap: np.ndarray | None, capped: np.ndarray) -> np.ndarray:
    """Progressive filling of the `active` flows from level `start`: every link offers `base` (its capacity less
    what flows frozen below `start` take) and carries `load` / `crossing` of the active flows (both consumed).
    Returns the active flows' rates (others 0)."""
    rate = np.zeros(active.shape[0])
    active = active.copy()
    capped = capped[active[capped]]
    capped_rate = None if rate_cap is None else rate_cap[capped]  # ascending: the flows a level reaches are a prefix
    level = start
    rem = np.maximum(base - level * load, 0.0)
    n_active = int(np.count_nonzero(active))
    next_cap = 0  # capped[next_cap:] holds the capped flows not yet frozen, lowest cap first
    while n_active:
        used = crossing > 0
        step = float(np.min(rem[used] / load[used]))
        next_cap = _next_active(capped, active, next_cap)
        if next_cap < capped.shape[0]:
            step = min(step, float(rate_cap[capped[next_cap]]) - level)
        step = max(step, 0.0)
        level += step
        rem = np.maximum(rem - step * load, 0.0)
        saturated = np.flatnonzero(used & (rem <= _REL_TOL * inc.cap))
        freeze = inc.edge_flow[_gather(inc.by_link, inc.link_ptr, saturated)]
        if next_cap < capped.shape[0]:
            reached = int(np.searchsorted(capped_rate[next_cap:], level * (1 + _REL_TOL), side="right"))
            freeze = np.concatenate([freeze, capped[next_cap:next_cap + reached]])
        freeze = _distinct(freeze[active[freeze]], active.shape[0])
        rate[freeze] = level
        active[freeze] = False
        n_active -= freeze.shape[0]
        if not n_active:  # the loads are not read again: skip taking the last frozen flows' edges off them
            break
        less_load, less_crossing = _link_loads(inc, _gather(inc.by_flow, inc.flow_ptr, freeze), mult)
        load -= less_load
        crossing -= less_crossing
        load[crossing == 0] = 0.0
    return rate


class _Classes:
    """The live flows of a drain in classes of identical state: the same bytes left and the same rate at the last
    solve, so they finish together. A class's flows are order[lo:hi]; its bytes left and rate are one number each,
    so an event costs the classes, not the flows (an all-to-all's 130,000 flows are a few thousand classes of
    equal rate). Classes only split (when a re-solve gives their flows different rates) and end (when they finish)."""

    def __init__(self, remaining: np.ndarray, alive: np.ndarray, persistent: np.ndarray):
        flows = np.flatnonzero(alive)
        bits = np.where(persistent[flows], 0, remaining[flows].view(np.int64))  # persistent flows' bytes: unread
        perm = np.lexsort((bits, persistent[flows]))
        flows, bits = flows[perm], bits[perm]
        pers = persistent[flows]
        new = np.concatenate([[True], (bits[1:] != bits[:-1]) | (pers[1:] != pers[:-1])]) if flows.size else \
            np.zeros(0, dtype=bool)
        self.order = flows
        self.lo = np.flatnonzero(new)
        self.hi = np.append(self.lo[1:], flows.shape[0])
        self.rem = remaining[flows[self.lo]].astype(np.float64)
        self.rate = np.zeros(self.lo.shape[0])
        self.persistent = pers[self.lo]
        self.kept = np.zeros(self.lo.shape[0], dtype=bool)
        self.live = np.arange(self.lo.shape[0])

    def members(self, classes: np.ndarray) -> np.ndarray:
        """The flows of these classes, ascending."""
        return np.sort(_ranges(self.order, self.lo[classes], self.hi[classes]))

    def finite(self) -> np.ndarray:
        """The live classes of flows that finish."""
        return self.live[~self.persistent[self.live]]

    def split(self, classes: np.ndarray, rate: np.ndarray) -> None:
        """Give these classes their flows' new rates, splitting a class whose flows now differ in rate."""
        pos = _positions(self.lo[classes], self.hi[classes])
        owner = np.repeat(classes, self.hi[classes] - self.lo[classes])
        flows = self.order[pos]
        bits = rate[flows].view(np.int64)
        perm = np.lexsort((bits, owner))
        flows, bits, owner = flows[perm], bits[perm], owner[perm]
        self.order[pos] = flows  # each class's flows stay in its own slots, grouped by rate
        first = np.concatenate([[True], (owner[1:] != owner[:-1]) | (bits[1:] != bits[:-1])])
        start = np.flatnonzero(first)
        lo = pos[start]
        hi = lo + np.diff(np.append(start, flows.shape[0]))
        parent = owner[start]
        keeps = np.concatenate([[True], parent[1:] != parent[:-1]])  # a class's first group keeps its number
        self.hi[parent[keeps]] = hi[keeps]
        self.rate[parent[keeps]] = rate[flows[start[keeps]]]
        more = ~keeps
        if more.any():
            new = np.arange(self.lo.shape[0], self.lo.shape[0] + int(more.sum()))
            self.lo = np.concatenate([self.lo, lo[more]])
            self.hi = np.concatenate([self.hi, hi[more]])
            self.rem = np.concatenate([self.rem, self.rem[parent[more]]])
            self.rate = np.concatenate([self.rate, rate[flows[start[more]]]])
            self.persistent = np.concatenate([self.persistent, self.persistent[parent[more]]])
            self.kept = np.concatenate([self.kept, self.kept[parent[more]]])
            self.live = np.concatenate([self.live, new])

    def end(self, classes: np.ndarray) -> None:
        gone = np.zeros(self.lo.shape[0], dtype=bool)
        gone[classes] = True
        self.live = self.live[~gone[self.live]]


def drain(edge_flow: np.ndarray, edge_link: np.ndarray, nbytes: np.ndarray, capacity: np.ndarray,
          mult: np.ndarray | None = None, rate_cap: np.ndarray | None = None,
          persistent: np.ndarray | None = None, edge_share: np.ndarray | None = None) -> np.ndarray:
    """Finish time (s) of each flow when all start at t = 0 and rates are re-solved whenever one finishes.

    `persistent` marks flows that never finish (background traffic); their finish time is inf.
    Flows with zero bytes finish at 0. `edge_share`: see `maxmin_rates`.

    Each re-solve starts warm: a flow frozen below the slowest just-finished flow's rate met its bottleneck
    before any finished flow did, on links no finished flow crosses (one that did would have frozen that flow
    too), so it keeps its rate, and progressive filling resumes from that level for the others. Flows finish
    fastest first, so most of a fabric's bottleneck levels are solved once, not at every finish. Flows of one
    rate and the same bytes left move as one class (`_Classes`): an event costs the classes and the flows it
    re-solves or finishes, not every flow.
    """
    n = nbytes.shape[0]
    mult = np.ones(n) if mult is None else mult
    persistent = np.zeros(n, dtype=bool) if persistent is None else persistent
    remaining = nbytes.astype(np.float64)
    finish = np.where(persistent, np.inf, 0.0)
    alive = persistent | (remaining > 0)
    inc = _Incidence.of(edge_flow, edge_link, n, capacity, edge_share)  # built once for every re-solve
    capped = _by_cap(rate_cap, alive)
    cls = _Classes(remaining, alive, persistent)
    rate = np.zeros(n)  # each live flow's rate at the last solve (a kept flow's carries over)
    base = inc.cap.copy()  # capacity less what the kept flows take
    # of the flows to solve: alive, not kept
    load, crossing = _link_loads(inc, None if alive.all() else np.flatnonzero(alive[inc.edge_flow]), mult)
    t, start = 0.0, 0.0  # start: the level the kept flows' rates are below
    ids = cls.finite()
    while ids.shape[0]:  # left by the break below once the last finite flow finishes
        solve = cls.live[~cls.kept[cls.live]]
        if solve.shape[0]:
            active = np.zeros(n, dtype=bool)
            active[_ranges(cls.order, cls.lo[solve], cls.hi[solve])] = True
            solved = _fill(inc, active, load.copy(), crossing.copy(), base, start, mult, rate_cap, capped)
            rate[active] = solved[active]
            cls.split(solve, rate)
            ids = cls.finite()
        if invariants.ON:
            _check(inc, alive, rate, mult, rate_cap, "draining flows")
        left = cls.rem[ids] / cls.rate[ids]
        dt = float(left.min())
        t += dt
        cls.rem[ids] -= cls.rate[ids] * dt  # (a persistent flow's bytes left are never read)
        done_cls = ids[left <= dt * (1 + _REL_TOL)]
        done = _ranges(cls.order, cls.lo[done_cls], cls.hi[done_cls])
        if invariants.ON:  # what a finished flow has not moved is what it injected but did not deliver
            left_bytes = np.zeros(n)
            left_bytes[done] = np.repeat(cls.rem[done_cls], cls.hi[done_cls] - cls.lo[done_cls])
            invariants.check_delivered("draining flows", nbytes[done] - left_bytes[done], nbytes[done])
        finish[done] = t
        alive[done] = False
        cls.end(done_cls)
        ids = cls.finite()
        if not ids.shape[0]:
            break
        start = float(cls.rate[done_cls].min()) * (1 - 1e-6)
        now_kept = cls.rate[cls.live] < start
        to_kept_cls = cls.live[now_kept & ~cls.kept[cls.live]]
        to_active_cls = cls.live[cls.kept[cls.live] & ~now_kept]
        gone_kept, gone_active = cls.members(done_cls[cls.kept[done_cls]]), cls.members(done_cls[~cls.kept[done_cls]])
        to_kept, to_active = cls.members(to_kept_cls), cls.members(to_active_cls)
        # (skipping an empty update is exact: no load or capacity left is ever -0.0, which adding +0.0 would change)
        if gone_kept.shape[0] or to_active.shape[0]:
            base += _usage(inc, gone_kept, rate, mult) + _usage(inc, to_active, rate, mult)
        if to_kept.shape[0]:
            base -= _usage(inc, to_kept, rate, mult)
        moved = False
        for flows, sign in ((gone_active, -1), (to_kept, -1), (to_active, 1)):
            if flows.shape[0]:
                more_load, more_crossing = _link_loads(inc, _gather(inc.by_flow, inc.flow_ptr, flows), mult)
                load += sign * more_load
                crossing += sign * more_crossing
                moved = True
        if moved:
            load[crossing == 0] = 0.0
        cls.kept[to_kept_cls] = True
        cls.kept[to_active_cls] = False
    return finish
