"""Max-min fair link sharing by progressive filling, and event-driven draining of finite flows.

Flows are given as a COO incidence list (edge e: flow `edge_flow[e]` crosses link `edge_link[e]`,
carrying the fraction `edge_share[e]` of the flow's rate there; 1 unless the flow is sprayed over
several paths, as adaptive routing splits a transfer's packets over every equal-cost uplink: its
paths' rates stay in proportion, so the transfer is one flow at its endpoints, not one per path).
A flow of multiplicity m stands for m identical flows (same links, bytes and cap), e.g. NCCL
channels between the same two GPUs; it counts m times on every link and `rate` is per copy.
The loop iterates bottleneck levels, not flows: every pass saturates at least one link or cap,
so a symmetric collective over 131,072 GPUs takes a handful of vectorised passes.
"""

from __future__ import annotations

import numpy as np

_REL_TOL = 1e-9


def maxmin_rates(edge_flow: np.ndarray, edge_link: np.ndarray, n_flows: int, capacity: np.ndarray,
                 mult: np.ndarray | None = None, rate_cap: np.ndarray | None = None,
                 edge_share: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rate (bytes/s) of each flow; `capacity` is indexed by `edge_link`'s values.

    Every flow must cross at least one link. `rate_cap` bounds a flow's own rate (inf: none);
    `edge_share` (default 1) is the fraction of its flow's rate each edge puts on its link.
    """
    share = None if edge_share is None or (edge_share == 1).all() else np.asarray(edge_share, dtype=np.float64)
    links, e_link = np.unique(edge_link, return_inverse=True)
    return _rates(edge_flow, e_link.ravel(), n_flows, capacity[links].astype(np.float64),
                  np.ones(n_flows) if mult is None else mult, rate_cap, share)


def _rates(e_flow: np.ndarray, e_lk: np.ndarray, n_flows: int, cap: np.ndarray, mult: np.ndarray,
           rate_cap: np.ndarray | None, e_sh: np.ndarray | None) -> np.ndarray:
    """maxmin_rates on links numbered 0..len(cap)-1 (`e_lk`), every one of them crossed by some edge or not;
    `e_sh`: each edge's share of its flow's rate (None: 1)."""
    rem = cap.copy()
    rate = np.zeros(n_flows)
    active = np.ones(n_flows, dtype=bool)
    capped = rate_cap is not None and bool(np.isfinite(rate_cap).any())
    level = 0.0
    while True:
        e_act = active[e_flow]
        if 2 * np.count_nonzero(e_act) < e_act.shape[0]:  # drop frozen flows' edges: later passes touch fewer
            e_flow, e_lk = e_flow[e_act], e_lk[e_act]
            e_sh = None if e_sh is None else e_sh[e_act]
            e_act = np.ones(e_flow.shape[0], dtype=bool)
        weight = mult[e_flow[e_act]] if e_sh is None else mult[e_flow[e_act]] * e_sh[e_act]
        load = np.bincount(e_lk[e_act], weights=weight, minlength=cap.shape[0])
        used = load > 0
        step = float(np.min(rem[used] / load[used]))
        if capped:
            step = min(step, float(np.min(rate_cap[active])) - level)
        step = max(step, 0.0)
        level += step
        rem = np.maximum(rem - step * load, 0.0)
        saturated = used & (rem <= _REL_TOL * cap)
        freeze = np.zeros(n_flows, dtype=bool)
        freeze[e_flow[e_act & saturated[e_lk]]] = True
        if capped:
            freeze |= active & (rate_cap <= level * (1 + _REL_TOL))
        freeze &= active
        rate[freeze] = level
        active &= ~freeze
        if not active.any():
            return rate


def drain(edge_flow: np.ndarray, edge_link: np.ndarray, nbytes: np.ndarray, capacity: np.ndarray,
          mult: np.ndarray | None = None, rate_cap: np.ndarray | None = None,
          persistent: np.ndarray | None = None, edge_share: np.ndarray | None = None) -> np.ndarray:
    """Finish time (s) of each flow when all start at t = 0 and rates are re-solved whenever one finishes.

    `persistent` marks flows that never finish (background traffic); their finish time is inf.
    Flows with zero bytes finish at 0. `edge_share`: see `maxmin_rates`.
    """
    n = nbytes.shape[0]
    mult = np.ones(n) if mult is None else mult
    if edge_share is not None and (edge_share == 1).all():  # every flow on one path: plain incidence
        edge_share = None
    cap_f = np.full(n, np.inf) if rate_cap is None else rate_cap
    persistent = np.zeros(n, dtype=bool) if persistent is None else persistent
    remaining = nbytes.astype(np.float64).copy()
    finish = np.where(persistent, np.inf, 0.0)
    alive = persistent | (remaining > 0)
    links, edge_lk = np.unique(edge_link, return_inverse=True)  # the links crossed, numbered once for every re-solve
    edge_lk = edge_lk.ravel()
    cap = capacity[links].astype(np.float64)
    t = 0.0
    while (alive & ~persistent).any():
        ids = np.flatnonzero(alive)
        remap = np.full(n, -1, dtype=np.int64)
        remap[ids] = np.arange(ids.shape[0])
        e_keep = alive[edge_flow]
        rates = _rates(remap[edge_flow[e_keep]], edge_lk[e_keep], ids.shape[0], cap, mult[ids], cap_f[ids],
                       None if edge_share is None else edge_share[e_keep])
        finite = ~persistent[ids]
        left = remaining[ids[finite]] / rates[finite]
        dt = float(left.min())
        t += dt
        remaining[ids] -= rates * dt
        done = ids[finite][left <= dt * (1 + _REL_TOL)]
        remaining[done] = 0.0
        finish[done] = t
        alive[done] = False
    return finish
