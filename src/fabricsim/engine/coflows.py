"""Several jobs on one fabric over time: an event-driven max-min fair sharing of their collectives' links.

Each job runs phases one after another, in a loop: a compute phase (a duration), or a communication phase whose
traffic is one `Coflow`: a collective's connections, moving in lockstep. NCCL's ring and tree steps wait for the
transfer feeding them, and each connection's FIFO holds NCCL_STEPS = 8 slots (`#define NCCL_STEPS 8`,
src/include/device.h; a sender waits while head - tail reaches it), so no connection of a collective runs far ahead of the others: one job's transfers progress
at one pace. A coflow is held as what it puts on each link per connection (`weight`: connection-equivalents, the
link's wire bytes over the mean bytes of one connection) and its `pace`: the bytes/s per connection that makes it
last its own bandwidth time alone (the engine's pipelined time, NCCL's latencies and per-channel caps included).
Alone on the fabric it never needs more than a link gives (its bandwidth time is at least its busiest link's busy
time), so it runs at its pace; where the jobs' coflows together ask a link for more than it has, they share it
max-min fairly per connection (`maxmin.maxmin_rates`, with each coflow one flow whose edges carry its
connection-equivalents), as InfiniBand and RoCE share a link between flows.

Between two events (a job starting, a coflow draining, a phase ending) rates are constant. The solver sees only
the links two or more active coflows cross: a link one coflow has to itself bounds only that coflow, so it becomes
a cap on its rate. Solutions are kept per set of active coflows: jobs looping the same collectives meet the same
sets again and re-solve nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from fabricsim.engine import invariants
from fabricsim.engine.maxmin import maxmin_rates
from fabricsim.errors import FabricsimError

_REL_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class Coflow:
    """One collective's traffic as a unit: what one connection-equivalent puts on each link, and its pace alone."""

    links: np.ndarray  # int64 links crossed (distinct)
    weight: np.ndarray  # float64 connection-equivalents on each of `links` (its wire bytes there / `size`)
    size: float  # wire bytes one connection moves (the coflow is done when each has moved this)
    pace: float  # bytes/s per connection alone (size / bandwidth time alone); inf: none of its own

    @staticmethod
    def of(link_bytes: np.ndarray, connection_bytes: float, bandwidth_time: float) -> Coflow | None:
        """The coflow of a collective that puts `link_bytes` on the links (wire bytes of every connection), each
        connection moving `connection_bytes`, in `bandwidth_time` alone; None when it moves nothing (or takes no
        time doing it: nothing to share)."""
        links = np.flatnonzero(link_bytes > 0)
        if links.size == 0 or connection_bytes <= 0 or bandwidth_time <= 0:
            return None
        pace = connection_bytes / bandwidth_time
        return Coflow(links.astype(np.int64), link_bytes[links] / connection_bytes, float(connection_bytes), pace)


@dataclass(frozen=True, eq=False)
class Phase:
    """One part of a job's iteration. It ends when its coflow has drained and `latency` has passed since, and not
    before `floor` seconds from its start (compute the communication overlaps with, or a compute phase alone)."""

    name: str
    coflow: Coflow | None = None
    latency: float = 0.0  # s after the coflow drains (the collective's latency part: NCCL base and per-step latencies)
    floor: float = 0.0  # s the phase lasts at least

    @property
    def alone(self) -> float:
        """Its duration with the fabric to itself."""
        comm = 0.0 if self.coflow is None else self.coflow.size / self.coflow.pace
        return max(self.floor, comm + self.latency)


@dataclass(frozen=True, eq=False)
class Workload:
    """A job on the fabric: its phases, run `iterations` times from `start` (s)."""

    name: str
    phases: tuple[Phase, ...]
    iterations: int = 1
    start: float = 0.0

    @property
    def alone(self) -> float:
        """Its run time with the fabric to itself."""
        return self.iterations * sum(p.alone for p in self.phases)


@dataclass(frozen=True, eq=False)
class Solution:
    """Max-min rates of one set of active coflows, and the links that held them back."""

    rate: np.ndarray  # bytes/s per connection of each active coflow
    slowed: np.ndarray  # bool, below its own pace
    bound_job: np.ndarray  # (job position in the active set, link) of each saturated shared link a slowed coflow crosses
    bound_link: np.ndarray


@dataclass(frozen=True, eq=False)
class Spans:
    """When each job's phases ran: one row per phase run (job, iteration, phase, start, coflow end, end in s)."""

    job: np.ndarray
    iteration: np.ndarray
    phase: np.ndarray
    start: np.ndarray
    drained: np.ndarray  # when the phase's coflow drained (its start when it has none)
    end: np.ndarray


@dataclass(frozen=True, eq=False)
class Schedule:
    """What happened: each job's run, the intervals between events with every job's rate, and the contention.

    Intervals k: `times[k]` to `times[k + 1]`; `phase_of[k, j]` the phase job j drained a coflow of then (-1:
    none) and `rate[k, j]` its bytes/s per connection (0: none). `contention[(j, link)]`: seconds job j ran below
    its pace with `link` saturated under it and shared with another job."""

    workloads: tuple[Workload, ...]
    spans: Spans
    times: np.ndarray
    phase_of: np.ndarray
    rate: np.ndarray
    contention: dict[tuple[int, int], float] = field(repr=False)

    def job_span(self, j: int) -> tuple[float, float]:
        """(start, end) s of job j's run."""
        mine, start = self.spans.job == j, self.workloads[j].start
        return float(self.spans.start[mine].min(initial=start)), float(self.spans.end[mine].max(initial=start))

    @property
    def end(self) -> float:
        """When the last job finished (s)."""
        return float(self.spans.end.max(initial=0.0))

    def progress(self, k: int, j: int) -> float:
        """Fraction of its own pace job j moved at in interval k (0: not communicating)."""
        p = int(self.phase_of[k, j])
        return 0.0 if p < 0 else float(self.rate[k, j] / self.workloads[j].phases[p].coflow.pace)


def run(capacity: np.ndarray, workloads: Sequence[Workload], persistent: Sequence[Coflow] = ()) -> Schedule:
    """Run the workloads together on links of `capacity` (bytes/s each; what they deliver to collective data),
    with `persistent` coflows (background traffic, never done) competing throughout."""
    return _Run(np.asarray(capacity, dtype=np.float64), tuple(workloads), tuple(persistent)).go()


class _Run:
    """The event loop of `run` (state of one simulation)."""

    def __init__(self, capacity: np.ndarray, workloads: tuple[Workload, ...], persistent: tuple[Coflow, ...]):
        for w in workloads:
            if w.iterations < 1 or not w.phases or not np.isfinite(w.start) or w.start < 0:
                raise FabricsimError(f"job '{w.name}' needs phases, at least one iteration and a start time >= 0")
        self.workloads = workloads
        self.solutions: dict[tuple, Solution] = {}
        self.solved_for: dict[tuple, float] = {}  # seconds each set of active coflows ran
        n = len(workloads)
        self.iteration = np.zeros(n, dtype=np.int64)
        self.phase = np.full(n, -1, dtype=np.int64)  # -1: not started; len(phases): finished
        self.phase_start = np.zeros(n)
        self.left = np.zeros(n)  # bytes per connection the current phase's coflow still has to move
        self.drained = np.zeros(n)  # when the current phase's coflow drained
        self.delivered = np.zeros(n)  # bytes per connection moved in the current phase (invariant: = size at the end)
        self.finished = np.zeros(n, dtype=bool)
        self.spans: list[tuple[int, int, int, float, float, float]] = []
        self.times, self.phase_rows, self.rate_rows = [0.0], [], []
        # Every coflow (each job's phases, then the persistent ones) numbered once, their edges in one array over
        # the links any of them crosses, numbered compactly: a solve gathers the active coflows' slices.
        every = [(j, p, ph.coflow) for j, w in enumerate(workloads) for p, ph in enumerate(w.phases) if ph.coflow]
        self.number = {(j, p): c for c, (j, p, _) in enumerate(every)}
        flows = [cf for _, _, cf in every] + list(persistent)
        self.first_persistent = len(every)
        links = np.concatenate([cf.links for cf in flows]) if flows else np.zeros(0, dtype=np.int64)
        self.used, self.edge_link = np.unique(links, return_inverse=True)
        self.edge_link = self.edge_link.ravel()
        self.edge_weight = np.concatenate([cf.weight for cf in flows]) if flows else np.zeros(0)
        self.edge_ptr = np.concatenate([[0], np.cumsum([cf.links.shape[0] for cf in flows])]).astype(np.int64)
        self.pace = np.array([cf.pace for cf in flows], dtype=np.float64)
        self.cap_used = capacity[self.used]
        self.edge_owner = np.repeat(np.arange(len(flows)), np.diff(self.edge_ptr))
        self.by_link = np.argsort(self.edge_link, kind="stable")  # edges grouped by link, to gather a few links' edges
        self.link_ptr = np.concatenate([[0], np.cumsum(np.bincount(self.edge_link, minlength=self.used.shape[0]))])
        # What the active coflows ask of each link at their paces, kept up to date as they start and stop.
        self.on = np.zeros(len(flows), dtype=bool)
        self.demand = np.zeros(self.used.shape[0])  # bytes/s, of the coflows with a pace of their own
        self.bounded = np.zeros(self.used.shape[0], dtype=np.int64)  # how many of those cross each link
        self.unbounded = np.zeros(self.used.shape[0], dtype=np.int64)  # coflows without one (background) crossing
        for c in range(self.first_persistent, len(flows)):
            self._switch(c, True)

    def go(self) -> Schedule:
        t = 0.0
        self._advance(t)
        while not self.finished.all():
            active = np.flatnonzero(self.left > 0)
            key = tuple(zip(active.tolist(), self.phase[active].tolist()))
            sol = self._solution(key)
            rate = np.zeros(len(self.workloads))
            rate[active] = sol.rate
            cand = [w.start for j, w in enumerate(self.workloads) if self.phase[j] < 0]
            with np.errstate(divide="ignore"):
                drain_at = t + self.left[active] / sol.rate
            cand += drain_at.tolist()
            cand += [self._phase_end(j) for j in np.flatnonzero((self.left == 0) & (self.phase >= 0) & ~self.finished)]
            t_next = min(cand)
            if not np.isfinite(t_next):
                raise FabricsimError("a job's traffic crosses a link with no capacity left: it can never finish; "
                                     "give that link capacity or move the job")
            dt = t_next - t
            if dt > 0:
                self.times.append(t_next)
                row = np.full(len(self.workloads), -1, dtype=np.int64)
                row[active] = self.phase[active]
                self.phase_rows.append(row)
                self.rate_rows.append(rate)
                self.solved_for[key] = self.solved_for.get(key, 0.0) + dt
            moved = sol.rate * dt
            self.left[active] -= moved
            self.delivered[active] += moved
            done = active[drain_at <= t_next * (1 + _REL_TOL) + 1e-300]
            for j in done.tolist():
                self._drained(j, t_next)
            t = t_next
            self._advance(t)
        return self._schedule()

    def _coflow(self, j: int) -> Coflow | None:
        return self.workloads[j].phases[self.phase[j]].coflow

    def _phase_end(self, j: int) -> float:
        ph = self.workloads[j].phases[self.phase[j]]
        return max(self.phase_start[j] + ph.floor, self.drained[j] + ph.latency)

    def _drained(self, j: int, t: float) -> None:
        cf = self._coflow(j)
        if invariants.ON:
            invariants.check_delivered(self.workloads[j].name, self.delivered[j], cf.size)
        self.left[j] = 0.0
        self.drained[j] = t
        self._switch(self.number[(j, int(self.phase[j]))], False)

    def _advance(self, t: float) -> None:
        """Start the jobs due at `t` and move every job whose phase has ended at `t` on to its next phase (phases
        of no length pass at once)."""
        changed = True
        while changed:
            changed = False
            for j, w in enumerate(self.workloads):
                if self.finished[j]:
                    continue
                if self.phase[j] < 0:
                    if w.start <= t:
                        self._begin(j, 0, t)
                        changed = True
                    continue
                if self.left[j] == 0 and self._phase_end(j) <= t * (1 + _REL_TOL):
                    self.spans.append((j, int(self.iteration[j]), int(self.phase[j]), float(self.phase_start[j]),
                                       float(self.drained[j]), t))
                    nxt = self.phase[j] + 1
                    if nxt == len(w.phases):
                        self.iteration[j] += 1
                        nxt = 0
                    if self.iteration[j] == w.iterations:
                        self.finished[j] = True
                        self.phase[j] = len(w.phases)
                    else:
                        self._begin(j, nxt, t)
                    changed = True

    def _begin(self, j: int, p: int, t: float) -> None:
        self.phase[j] = p
        self.phase_start[j] = t
        cf = self._coflow(j)
        self.left[j] = 0.0 if cf is None else cf.size
        self.drained[j] = t
        self.delivered[j] = 0.0
        if cf is not None:
            self._switch(self.number[(j, p)], True)

    def _switch(self, c: int, on: bool) -> None:
        """Coflow c starts (on) or stops asking its links for its pace."""
        if self.on[c] == on:
            return
        self.on[c] = on
        e = slice(self.edge_ptr[c], self.edge_ptr[c + 1])
        if np.isfinite(self.pace[c]):
            links = self.edge_link[e]
            self.demand[links] += (1.0 if on else -1.0) * self.pace[c] * self.edge_weight[e]
            self.bounded[links] += 1 if on else -1
            self.demand[links[self.bounded[links] == 0]] = 0.0  # no rounding left behind on a link no one asks of
        else:
            self.unbounded[self.edge_link[e]] += 1 if on else -1

    def _solution(self, key: tuple) -> Solution:
        """The rates of one set of active (job, phase) coflows, solved once."""
        if key not in self.solutions:
            self.solutions[key] = self._solve(np.array([self.number[k] for k in key], dtype=np.int64))
        return self.solutions[key]

    def _solve(self, mine: np.ndarray) -> Solution:
        """Max-min rates of the active coflows (`mine`, the jobs', in order; the persistent ones too) on the links
        they ask more of, at their paces, than the links have: a link with room for every coflow crossing it at
        its pace never binds one, so only those links enter the solver (one a coflow has to itself included: it
        binds that coflow alone)."""
        flows = np.concatenate([mine, np.arange(self.first_persistent, self.pace.shape[0])])
        n = flows.shape[0]
        if n == 0:
            return Solution(np.zeros(0), np.zeros(0, bool), np.zeros(0, np.int64), np.zeros(0, np.int64))
        position = np.full(self.pace.shape[0], -1, dtype=np.int64)
        position[flows] = np.arange(n)
        pace = self.pace[flows]
        hot_links = np.flatnonzero((self.demand > self.cap_used * (1 + 1e-9)) | (self.unbounded > 0))
        start, count = self.link_ptr[hot_links], self.link_ptr[hot_links + 1] - self.link_ptr[hot_links]
        edges = self.by_link[np.repeat(start - np.cumsum(count) + count, count) + np.arange(int(count.sum()))]
        edges = edges[position[self.edge_owner[edges]] >= 0]  # the active coflows' edges on those links
        owner, lk, w = position[self.edge_owner[edges]], self.edge_link[edges], self.edge_weight[edges]
        rate = pace.copy()
        crossing = np.unique(owner)
        if crossing.size:
            index = np.full(n, -1, dtype=np.int64)
            index[crossing] = np.arange(crossing.size)
            rate[crossing] = maxmin_rates(index[owner], lk, crossing.size, self.cap_used, rate_cap=pace[crossing],
                                          edge_share=w)
        if invariants.ON:
            self._check(flows, rate)
        n_used = self.used.shape[0]
        load = np.bincount(lk, weights=rate[owner] * w, minlength=n_used)
        sharing = np.bincount(lk, minlength=n_used)
        slowed = rate < pace * (1 - 1e-7)
        keep = (load[lk] >= self.cap_used[lk] * (1 - 1e-7)) & (sharing[lk] > 1) & slowed[owner] & (owner < mine.shape[0])
        return Solution(rate[: mine.shape[0]], slowed[: mine.shape[0]], owner[keep], self.used[lk[keep]])

    def _check(self, flows: np.ndarray, rate: np.ndarray) -> None:
        """Every link's load (all active coflows at their rates) within its capacity, and the demand kept up to date
        equal to the active coflows' paces."""
        edges = np.concatenate([np.arange(self.edge_ptr[c], self.edge_ptr[c + 1]) for c in flows.tolist()])
        position = np.full(self.pace.shape[0], -1, dtype=np.int64)
        position[flows] = np.arange(flows.shape[0])
        owner, lk, w = position[self.edge_owner[edges]], self.edge_link[edges], self.edge_weight[edges]
        n_used = self.used.shape[0]
        invariants.check_link_loads("concurrent jobs", np.bincount(lk, weights=rate[owner] * w, minlength=n_used),
                                    self.cap_used)
        finite = np.isfinite(self.pace[flows])[owner]
        demand = np.bincount(lk[finite], weights=self.pace[flows][owner[finite]] * w[finite], minlength=n_used)
        if (np.abs(self.demand - demand) > invariants.REL_TOL * (demand + self.cap_used)).any():
            raise invariants.InvariantViolation("concurrent jobs: the demand kept per link differs from the active "
                                                "coflows' paces")

    def _contention(self) -> dict[tuple[int, int], float]:
        """Seconds each (job, link) pair was held back: a slowed job on a saturated shared link."""
        out: dict[tuple[int, int], float] = {}
        for key, dt in self.solved_for.items():
            sol = self.solutions[key]
            for pos, link in zip(sol.bound_job.tolist(), sol.bound_link.tolist()):
                pair = (key[pos][0], link)
                out[pair] = out.get(pair, 0.0) + dt
        return out

    def _schedule(self) -> Schedule:
        rows = sorted(self.spans)
        cols = list(zip(*rows)) if rows else [()] * 6
        spans = Spans(*(np.array(c, dtype=np.int64) for c in cols[:3]), *(np.array(c, dtype=np.float64) for c in cols[3:]))
        n = len(self.workloads)
        phase_of = np.array(self.phase_rows, dtype=np.int64).reshape(-1, n)
        rate = np.array(self.rate_rows, dtype=np.float64).reshape(-1, n)
        return Schedule(self.workloads, spans, np.array(self.times), phase_of, rate, self._contention())
