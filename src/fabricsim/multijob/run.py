"""A jobs file run on its cluster: each job placed, turned into phases, run alone and then with all the others
(`engine.coflows`), and the figures a report needs: per job its time alone and shared, its slowdown and the links
that held it back; the links the jobs contended on; the fabric's utilisation over time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from fabricsim.engine import coflows
from fabricsim.engine.capacity import effective_capacity
from fabricsim.errors import FabricsimError
from fabricsim.multijob.placement import Request, parse_ranks, place
from fabricsim.multijob.spec import POLICIES, JobsFile
from fabricsim.multijob.workload import Communication, communication
from fabricsim.topology.model import DeviceKind, Topology
from fabricsim.topology.summary import oversubscription
from fabricsim.units import parse_duration

TIER = {1: "leaf", 2: "spine", 3: "core"}


@dataclass(frozen=True, eq=False)
class JobReport:
    """One job's figures (seconds): alone on the fabric and sharing it, and the links that held it back."""

    name: str
    placement: str  # its policy, or 'ranks' when given explicitly
    ranks: np.ndarray = field(repr=False)  # GPU ranks, ascending
    what: str
    start: float
    iterations: int
    alone: float  # its run with the fabric to itself
    shared: float  # its run sharing the fabric (start to end)
    comm_alone: float  # of `alone`, the phases that communicate
    held_back: tuple[tuple[int, float], ...]  # (link, seconds below its pace with that link saturated), most first

    @property
    def gpus(self) -> int:
        """How many GPUs it runs on."""
        return int(self.ranks.size)

    @property
    def slowdown(self) -> float:
        """Shared over alone (1: nothing lost to the other jobs)."""
        return self.shared / self.alone if self.alone > 0 else 1.0


@dataclass(frozen=True)
class ContendedLink:
    """A link two or more jobs crossed while it was saturated and held one of them back."""

    link: int
    name: str
    tier: str  # 'leaf -> spine', 'nic -> leaf', ... (or the link's technology inside a node)
    jobs: tuple[str, ...]  # every job whose traffic crosses it
    held: tuple[str, ...]  # the jobs it held back
    seconds: float  # how long it held one back


@dataclass(frozen=True, eq=False)
class Utilisation:
    """The fabric's load over time: per interval between events, each fabric tier's mean utilisation of its
    links' effective capacity, and each job's rate as a fraction of its own pace (0: not communicating)."""

    times: np.ndarray  # interval bounds, s
    tiers: tuple[str, ...]
    tier_util: np.ndarray  # (intervals, tiers)
    job_pace: np.ndarray  # (intervals, jobs)


@dataclass(frozen=True, eq=False)
class JobsRun:
    """Every job of a jobs file on its cluster, alone and together."""

    cluster: str
    gpus: int
    oversubscription: float  # the leaves' down:up bandwidth as built (1.0: not set, or no effect: one leaf)
    placement: str  # the default policy of the run (what --placement / --compare-placement set)
    level: str
    jobs: tuple[JobReport, ...]
    contended: tuple[ContendedLink, ...]  # most held first
    utilisation: Utilisation
    schedule: coflows.Schedule = field(repr=False)
    topology: Topology = field(repr=False)
    notes: tuple[str, ...] = ()

    @property
    def makespan(self) -> float:
        """When the last job finished (s)."""
        return self.schedule.end


def build_cluster(spec: JobsFile) -> Topology:
    """The jobs file's cluster, sized and routed as it says."""
    from fabricsim import topology

    cluster = topology.load_spec(spec.cluster, nodes=spec.nodes, gpus=spec.gpus)
    return topology.build(replace(cluster, routing=spec.routing) if spec.routing else cluster,
                          topology.cluster_file(spec.cluster))


def run_jobs(spec: JobsFile, placement: str | None = None, *, topo: Topology | None = None,
             progress: Callable[[int, int], None] | None = None) -> JobsRun:
    """Place every job (`placement` overrides every policy-placed job's policy), time its iteration, and run all
    jobs alone and together."""
    if placement is not None and placement not in POLICIES:
        raise FabricsimError(f"unknown placement '{placement}': use one of {', '.join(POLICIES)}")
    topo = build_cluster(spec) if topo is None else topo
    requests = []
    for job in spec.jobs:
        ranks = None if job.ranks is None else parse_ranks(job.ranks, topo.n_gpus, f"job '{job.name}'")
        policy = placement or job.placement or spec.placement
        requests.append(Request(job.name, job.gpus, policy, spec.seed if job.seed is None else job.seed, ranks))
    placed = place(topo, requests)
    comms: list[Communication] = []
    for i, (job, ranks) in enumerate(zip(spec.jobs, placed)):
        if progress is not None:
            progress(i, len(spec.jobs))
        comms.append(communication(topo, job, ranks, spec.level))
    if progress is not None:
        progress(len(spec.jobs), len(spec.jobs))
    work = [coflows.Workload(job.name, c.phases, job.iterations, parse_duration(job.start))
            for job, c in zip(spec.jobs, comms)]
    capacity = effective_capacity(topo)
    together = coflows.run(capacity, work)
    reports = []
    for j, (job, req, ranks, c, w) in enumerate(zip(spec.jobs, requests, placed, comms, work)):
        alone = coflows.run(capacity, [w])
        start, end = together.job_span(j)
        held = sorted(((lk, s) for (jj, lk), s in together.contention.items() if jj == j), key=lambda x: (-x[1], x[0]))
        comm_alone = w.iterations * sum(p.alone for p in w.phases if p.coflow is not None)
        reports.append(JobReport(job.name, "ranks" if req.ranks is not None else req.policy, ranks, c.what, w.start,
                                 w.iterations, alone.end - w.start, end - start, comm_alone, tuple(held)))
    return JobsRun(topo.name, topo.n_gpus, oversubscription(topo),
                   placement or spec.placement, spec.level, tuple(reports), _contended(topo, together),
                   utilisation(topo, together), together, topo, tuple(n for c in comms for n in c.notes))


def link_tier(topo: Topology, links: np.ndarray) -> np.ndarray:
    """Each link's tier as text: 'nic -> leaf', 'leaf -> spine', ... for the scale-out fabric, its technology for
    links inside a node or NVLink domain."""
    def side(d: np.ndarray) -> list[str]:
        kind, level = topo.dev_kind[d], topo.dev_level[d]
        return ["nic" if k == DeviceKind.NIC else TIER.get(int(lv), f"l{int(lv)}") if k == DeviceKind.FABRIC_SWITCH
                else "" for k, lv in zip(kind.tolist(), level.tolist())]

    src, dst = side(topo.link_src[links]), side(topo.link_dst[links])
    tech = [topo.techs[int(t)] for t in topo.link_tech[links].tolist()]
    return np.array([f"{a} -> {b}" if a and b else t for a, b, t in zip(src, dst, tech)], dtype=object)


def fabric_links(topo: Topology) -> np.ndarray:
    """Links of the scale-out fabric: those with a fabric switch at either end."""
    fs = topo.dev_kind == DeviceKind.FABRIC_SWITCH
    return np.flatnonzero(fs[topo.link_src] | fs[topo.link_dst])


def _contended(topo: Topology, s: coflows.Schedule) -> tuple[ContendedLink, ...]:
    """The links that held a job back, with every job crossing them, most held first."""
    held: dict[int, dict[int, float]] = {}
    for (j, lk), sec in s.contention.items():
        held.setdefault(lk, {})[j] = sec
    if not held:
        return ()
    links = np.array(sorted(held), dtype=np.int64)
    tiers = link_tier(topo, links)
    crossing: dict[int, set[int]] = {int(lk): set() for lk in links}
    for j, w in enumerate(s.workloads):
        for p in w.phases:
            if p.coflow is not None:
                for lk in np.intersect1d(p.coflow.links, links).tolist():
                    crossing[lk].add(j)
    names = [w.name for w in s.workloads]
    out = [ContendedLink(lk, topo.link_name(lk), str(tier), tuple(names[j] for j in sorted(crossing[lk])),
                         tuple(names[j] for j in sorted(held[lk])), max(held[lk].values()))
           for lk, tier in zip(links.tolist(), tiers.tolist())]
    return tuple(sorted(out, key=lambda c: (-c.seconds, c.link)))


def utilisation(topo: Topology, s: coflows.Schedule) -> Utilisation:
    """Per interval, each fabric tier's mean utilisation (its links' load over their effective capacity) and each
    job's fraction of its pace."""
    links = fabric_links(topo)
    tiers = link_tier(topo, links)
    names = tuple(dict.fromkeys(sorted(tiers.tolist(), key=_tier_order)))
    tier_of = np.full(topo.n_links, -1, dtype=np.int64)
    tier_of[links] = [names.index(t) for t in tiers.tolist()]
    cap = np.bincount(tier_of[links], weights=effective_capacity(topo)[links], minlength=len(names))
    n_int, n_jobs = s.phase_of.shape
    util = np.zeros((n_int, len(names)))
    pace = np.zeros((n_int, n_jobs))
    per_tier: dict[tuple[int, int], np.ndarray] = {}  # (job, phase) -> connection-equivalents on each tier
    for j, w in enumerate(s.workloads):
        for p, ph in enumerate(w.phases):
            if ph.coflow is not None:
                t = tier_of[ph.coflow.links]
                on = t >= 0
                per_tier[(j, p)] = np.bincount(t[on], weights=ph.coflow.weight[on], minlength=len(names))
    for k in range(n_int):
        for j in np.flatnonzero(s.phase_of[k] >= 0).tolist():
            p = int(s.phase_of[k, j])
            util[k] += s.rate[k, j] * per_tier[(j, p)]
            pace[k, j] = s.rate[k, j] / s.workloads[j].phases[p].coflow.pace
    util = np.divide(util, cap, out=np.zeros_like(util), where=cap > 0)
    return Utilisation(s.times, names, util, pace)


def _tier_order(name: str) -> tuple[int, str]:
    order = ["nic -> leaf", "leaf -> spine", "spine -> core", "core -> spine", "spine -> leaf", "leaf -> nic"]
    return (order.index(name) if name in order else len(order), name)
