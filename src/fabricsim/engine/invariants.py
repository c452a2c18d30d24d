"""Physical invariants the engine checks on its own answers when asked (tests ask for every run).

Off by default: each check site tests the module flag `ON` first, which costs nothing when it is off. It is on
when the environment sets FABRICSIM_CHECK_INVARIANTS=1 (the test suite's conftest does, for every test), or
inside `checking()`. A violation is an `InvariantViolation`, a bug in fabricsim, never bad input:
- no link carries more than its capacity at any instant (max-min rates, the analytical level's average rates,
  concurrent jobs' coflows, a Result's link bytes over its bandwidth time), and a link of no capacity nothing:
  a degraded link (`topology.variants.with_link_capacity`) is held to its degraded capacity;
- no flow runs above its own rate cap;
- every flow delivers the bytes it injected: a routed transfer's paths carry all of it out of its source and
  into its destination and lose none on the way (flow conservation at every device), and a drained flow has
  moved exactly its bytes when it finishes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

REL_TOL = 1e-6  # relative slack for floating-point sums (rates are solved to 1e-9)
ON = os.environ.get("FABRICSIM_CHECK_INVARIANTS", "") not in ("", "0")


class InvariantViolation(AssertionError):
    """The engine broke a physical invariant: a bug to report, not a problem with the input."""


@contextmanager
def checking(on: bool = True) -> Iterator[None]:
    """Check the invariants (or not) inside the block."""
    global ON
    before, ON = ON, on
    try:
        yield
    finally:
        ON = before


def check_link_loads(what: str, load: np.ndarray, capacity: np.ndarray) -> None:
    """`load` (bytes/s on each link) within `capacity`."""
    over = load > capacity * (1 + REL_TOL) + 1e-300
    if over.any():
        lk = int(np.argmax(np.where(over, load / np.maximum(capacity, 1e-300), -np.inf)))
        raise InvariantViolation(f"{what}: link {lk} carries {load[lk]:.6g} B/s over its capacity {capacity[lk]:.6g} B/s")


def check_rates(what: str, rate: np.ndarray, rate_cap: np.ndarray | None) -> None:
    """No flow above its own cap (inf: none); no negative rate."""
    if (rate < 0).any():
        raise InvariantViolation(f"{what}: flow {int(np.argmin(rate))} has a negative rate {float(rate.min()):.6g} B/s")
    if rate_cap is not None:
        over = rate > rate_cap * (1 + REL_TOL)
        if over.any():
            f = int(np.flatnonzero(over)[0])
            raise InvariantViolation(f"{what}: flow {f} runs at {rate[f]:.6g} B/s over its cap {rate_cap[f]:.6g} B/s")


def check_delivered(what: str, delivered, expected) -> None:
    """Bytes delivered equal the bytes injected (per flow)."""
    delivered, expected = np.asarray(delivered, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    off = np.abs(delivered - expected) > REL_TOL * np.abs(expected) + 1e-9
    if off.any():
        f = int(np.flatnonzero(np.atleast_1d(off))[0])
        d, e = np.atleast_1d(delivered)[f], np.atleast_1d(expected)[f]
        raise InvariantViolation(f"{what}: flow {f} delivered {d:.9g} bytes of the {e:.9g} it injected")


def check_conservation(what: str, link_src: np.ndarray, link_dst: np.ndarray, n_devices: int, edge_flow: np.ndarray,
                       edge_link: np.ndarray, edge_share: np.ndarray, src_dev: np.ndarray, dst_dev: np.ndarray) -> None:
    """Each flow's share of its rate leaves its source device whole, reaches its destination device whole and is
    conserved at every device between (`edge_share`: the fraction of the flow crossing each edge's link)."""
    n = src_dev.shape[0]
    if n == 0:
        return
    flows = np.arange(n, dtype=np.int64)
    e_flow = edge_flow.astype(np.int64)
    keys = np.concatenate([e_flow * n_devices + link_src[edge_link], e_flow * n_devices + link_dst[edge_link],
                           flows * n_devices + src_dev, flows * n_devices + dst_dev])
    values = np.concatenate([edge_share, -edge_share, -np.ones(n), np.ones(n)])
    where, which = np.unique(keys, return_inverse=True)
    net = np.bincount(which.ravel(), weights=values, minlength=where.shape[0])  # out - in - (source) + (sink): 0
    bad = np.abs(net) > REL_TOL
    if bad.any():
        f, dev = divmod(int(where[np.flatnonzero(bad)[0]]), n_devices)
        raise InvariantViolation(f"{what}: flow {f} (device {int(src_dev[f])} -> {int(dst_dev[f])}) is not conserved at "
                                 f"device {dev}: {float(net[np.flatnonzero(bad)[0]]):+.9g} of its rate unaccounted for")
