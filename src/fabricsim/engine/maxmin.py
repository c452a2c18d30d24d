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
        by_link = np.argsort(edge_link, kind="stable")  # one sort numbers the links crossed and groups their edges
        ordered = edge_link[by_link]
        first = np.concatenate([[True], ordered[1:] != ordered[:-1]]) if ordered.size else np.zeros(0, dtype=bool)
        edge_lk = np.empty(edge_link.shape[0], dtype=np.int64)
        edge_lk[by_link] = np.cumsum(first) - 1
        links = ordered[first]
        share = None if edge_share is None or (edge_share == 1).all() else np.asarray(edge_share, dtype=np.float64)
        return _Incidence(edge_flow, edge_lk, share, capacity[links].astype(np.float64), by_link,
                          _ptr(edge_lk, links.shape[0]),
                          np.argsort(edge_flow, kind="stable"), _ptr(edge_flow, n_flows))


def _ptr(keys: np.ndarray, n: int) -> np.ndarray:
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr


def _gather(order: np.ndarray, ptr: np.ndarray, items: np.ndarray) -> np.ndarray:
    """The edges of `items` (links or flows): order[ptr[i]:ptr[i+1]] for each, concatenated."""
    start, count = ptr[items], ptr[items + 1] - ptr[items]
    total = int(count.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offset = np.repeat(start - np.cumsum(count) + count, count)
    return order[offset + np.arange(total)]


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


def _fill(inc: _Incidence, active: np.ndarray, load: np.ndarray, crossing: np.ndarray, base: np.ndarray,
          start: float, mult: np.ndarray, rate_cap: np.ndarray | None, capped: np.ndarray) -> np.ndarray:
    """Progressive filling of the `active` flows from level `start`: every link offers `base` (its capacity less
    what flows frozen below `start` take) and carries `load` / `crossing` of the active flows (both consumed).
    Returns the active flows' rates (others 0)."""
    rate = np.zeros(active.shape[0])
    active = active.copy()
    capped = capped[active[capped]]
    level = start
    rem = np.maximum(base - level * load, 0.0)
    n_active = int(np.count_nonzero(active))
    next_cap = 0  # capped[next_cap:] holds the capped flows not yet frozen, lowest cap first
    while n_active:
        used = crossing > 0
        step = float(np.min(rem[used] / load[used]))
        while next_cap < capped.shape[0] and not active[capped[next_cap]]:
            next_cap += 1
        if next_cap < capped.shape[0]:
            step = min(step, float(rate_cap[capped[next_cap]]) - level)
        step = max(step, 0.0)
        level += step
        rem = np.maximum(rem - step * load, 0.0)
        saturated = np.flatnonzero(used & (rem <= _REL_TOL * inc.cap))
        freeze = inc.edge_flow[_gather(inc.by_link, inc.link_ptr, saturated)]
        if next_cap < capped.shape[0]:
            later = capped[next_cap:]
            freeze = np.concatenate([freeze, later[rate_cap[later] <= level * (1 + _REL_TOL)]])
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


def drain(edge_flow: np.ndarray, edge_link: np.ndarray, nbytes: np.ndarray, capacity: np.ndarray,
          mult: np.ndarray | None = None, rate_cap: np.ndarray | None = None,
          persistent: np.ndarray | None = None, edge_share: np.ndarray | None = None) -> np.ndarray:
    """Finish time (s) of each flow when all start at t = 0 and rates are re-solved whenever one finishes.

    `persistent` marks flows that never finish (background traffic); their finish time is inf.
    Flows with zero bytes finish at 0. `edge_share`: see `maxmin_rates`.

    Each re-solve starts warm: a flow frozen below the slowest just-finished flow's rate met its bottleneck
    before any finished flow did, on links no finished flow crosses (one that did would have frozen that flow
    too), so it keeps its rate, and progressive filling resumes from that level for the others. Flows finish
    fastest first, so most of a fabric's bottleneck levels are solved once, not at every finish.
    """
    n = nbytes.shape[0]
    mult = np.ones(n) if mult is None else mult
    persistent = np.zeros(n, dtype=bool) if persistent is None else persistent
    remaining = nbytes.astype(np.float64).copy()
    finish = np.where(persistent, np.inf, 0.0)
    alive = persistent | (remaining > 0)
    inc = _Incidence.of(edge_flow, edge_link, n, capacity, edge_share)  # built once for every re-solve
    capped = _by_cap(rate_cap, alive)
    kept = np.zeros(n, dtype=bool)  # flows whose rate carries over from the last solve
    kept_rate = np.zeros(n)
    base = inc.cap.copy()  # capacity less what the kept flows take
    # of the flows to solve: alive, not kept
    load, crossing = _link_loads(inc, None if alive.all() else np.flatnonzero(alive[inc.edge_flow]), mult)
    t, start = 0.0, 0.0  # start: the level the kept flows' rates are below
    while (alive & ~persistent).any():  # left by the break below once the last finite flow finishes
        rates = _fill(inc, alive & ~kept, load.copy(), crossing.copy(), base, start, mult, rate_cap, capped)
        rates[kept] = kept_rate[kept]
        if invariants.ON:
            _check(inc, alive, rates, mult, rate_cap, "draining flows")
        ids = np.flatnonzero(alive & ~persistent)
        left = remaining[ids] / rates[ids]
        dt = float(left.min())
        t += dt
        run = np.flatnonzero(alive)
        remaining[run] -= rates[run] * dt
        done = ids[left <= dt * (1 + _REL_TOL)]
        if invariants.ON:  # what a finished flow has not moved is what it injected but did not deliver
            invariants.check_delivered("draining flows", nbytes[done] - remaining[done], nbytes[done])
        remaining[done] = 0.0
        finish[done] = t
        alive[done] = False
        if not (alive & ~persistent).any():
            break
        start = float(rates[done].min()) * (1 - 1e-6)
        now_kept = alive & (rates < start)
        gone_kept, gone_active = done[kept[done]], done[~kept[done]]
        to_kept, to_active = np.flatnonzero(now_kept & ~kept), np.flatnonzero(kept & alive & ~now_kept)
        base += _usage(inc, gone_kept, kept_rate, mult) + _usage(inc, to_active, kept_rate, mult)
        base -= _usage(inc, to_kept, rates, mult)
        for flows, sign in ((gone_active, -1), (to_kept, -1), (to_active, 1)):
            more_load, more_crossing = _link_loads(inc, _gather(inc.by_flow, inc.flow_ptr, flows), mult)
            load += sign * more_load
            crossing += sign * more_crossing
        load[crossing == 0] = 0.0
        kept_rate[to_kept] = rates[to_kept]
        kept = now_kept
    return finish
