"""The CommModel the training layer uses in product: the tuner's pick, timed concurrently on the engine.

For one call (a collective run by every group of one type at once):
1. the tuner (`tuner.select.best`) times every algorithm and protocol NCCL would run for the collective on the
   first group, on the channels NCCL's search gives it, and keeps the fastest, as NCCL's tuner would;
2. if every group lies inside one NVLink domain, groups use disjoint GPU links (NVSwitch is non-blocking per
   port), so all groups take the solo time (symmetry: no need to simulate thousands of identical groups);
3. otherwise every group runs the picked schedule at once, as one schedule of disjoint copies
   (`schedules.replicate`), so groups that share NICs, leaves or spines slow each other down; the call takes
   as long as the slowest group;
4. groups that take unequal shares of the NVLink domains they span (a job filling part of its last NVL72 rack:
   256 GPUs on 72-GPU racks) are timed as one even group of the same size over the same number of domains (or
   the fewest more that split it evenly), alone: NCCL's rings and trees pass every GPU either way, and the
   even proxy sends the same bytes over the same number of domains' NICs;
5. on a topology with faults inside some NVLink domains (a degraded NVLink, a slow PCIe or NIC cable:
   `topology.faulted`), the groups in those domains are timed too and the call takes the slowest: the collective
   runs at the pace of its slowest group.
Results are cached per (collective, groups, bytes); `last_detail` holds the pick and the bottleneck links.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabricsim.engine import simulate
from fabricsim.errors import FabricsimError
from fabricsim.schedules.replicate import replicate
from fabricsim.topology.model import Topology
from fabricsim.tuner.select import best

ELEM_SIZE = 2  # bf16 activations and gradients


@dataclass
class EngineCommModel:
    topo: Topology
    level: str = "analytical"
    last_detail: dict | None = None
    placement: np.ndarray | None = None  # GPU of each Megatron rank (None: rank r runs on GPU r)
    keep_results: bool = False  # put the engine Results of each call in its detail ('results'), for its traffic
    _cache: dict = field(default_factory=dict, repr=False)

    def time(self, collective: str, groups: np.ndarray, nbytes: float) -> float:
        groups = np.ascontiguousarray(groups if self.placement is None else self.placement[groups], dtype=np.int32)
        nbytes = max(ELEM_SIZE * groups.shape[1], int(round(nbytes / ELEM_SIZE / groups.shape[1])) * ELEM_SIZE * groups.shape[1])
        key = (collective, groups.shape, groups.tobytes(), nbytes)
        if key not in self._cache:
            self._cache[key] = self._time(collective, groups, nbytes)
        t, self.last_detail = self._cache[key]
        return t

    def _time(self, collective: str, groups: np.ndarray, nbytes: int) -> tuple[float, dict]:
        domains = self.topo.gpu_domain[groups]
        proxy = even_proxy(self.topo, groups) if collective != "sendrecv" else None
        if proxy is not None:
            choice = best(self.topo, collective, nbytes, ranks=proxy, elem_size=ELEM_SIZE, level=self.level)
            detail = {"algorithm": choice.algorithm, "protocol": choice.protocol, "groups": len(groups),
                      "bound": choice.result.bound, "bottlenecks": [b.name for b in choice.result.bottlenecks],
                      "proxy": "uneven NVLink-domain shares timed as an even group"}
            if self.keep_results:
                detail["results"] = ()  # the proxy's traffic is not on the job's GPUs
            return float(choice.result.time), detail
        spread = int(np.argmax(distinct_per_row(domains))) if len(groups) > 1 else 0
        choice = best(self.topo, collective, nbytes, ranks=groups[spread], elem_size=ELEM_SIZE, level=self.level)
        for g in faulted_groups(self.topo, domains, spread):
            other = best(self.topo, collective, nbytes, ranks=groups[g], elem_size=ELEM_SIZE, level=self.level)
            choice = max(choice, other, key=lambda c: c.result.time)
        result, results = choice.result, (choice.result,)
        if len(groups) > 1 and not (domains == domains[:, :1]).all():
            job = choice.job
            results = tuple(simulate(self.topo, replicate(job.schedule, len(layer)), nbytes, elem_size=ELEM_SIZE,
                                     protocol=job.protocol, channels=job.channels, level=self.level, ranks=layer.ravel(),
                                     net_peer_bw=job.net_peer_bw) for layer in disjoint_layers(groups))
            result = max(results, key=lambda r: r.time)
        detail = {"algorithm": choice.algorithm, "protocol": choice.protocol, "groups": len(groups),
                  "bound": result.bound, "bottlenecks": [b.name for b in result.bottlenecks]}
        if self.keep_results:  # groups inside one NVLink domain each: the slowest group's (healthy groups are alike)
            detail["results"] = results
        return float(result.time), detail


def faulted_groups(topo: Topology, domains: np.ndarray, skip: int) -> list[int]:
    """Groups (by index, one per distinct set of domains) lying in NVLink domains whose inner links a fault changed,
    besides group `skip`: the ones a symmetric shortcut would not see."""
    report = topo.features.get("faults")
    if report is None or not report.domains:
        return []
    hit = np.isin(domains, np.asarray(report.domains)).any(axis=1)
    out, seen = [], set()
    for g in np.flatnonzero(hit).tolist():
        key = tuple(np.unique(domains[g]).tolist())
        if g != skip and key not in seen:
            seen.add(key)
            out.append(g)
    return out


def distinct_per_row(a: np.ndarray) -> np.ndarray:
    """How many distinct values each row of the 2-D array `a` holds (len(np.unique(row)) for every row at once)."""
    if a.shape[1] == 0:
        return np.zeros(a.shape[0], dtype=np.int64)
    return 1 + (np.diff(np.sort(a, axis=1), axis=1) != 0).sum(axis=1)


def even_proxy(topo: Topology, groups: np.ndarray) -> np.ndarray | None:
    """An even stand-in for groups that take unequal shares of their NVLink domains (see the module docstring), or None
    when every group is even (equal GPUs from each domain it spans, domain by domain)."""
    dom = np.asarray(topo.gpu_domain)
    size = groups.shape[1]
    d = dom[groups]  # every group's domains at once: one row per group
    change = np.diff(d, axis=1) != 0  # where a group's run of GPUs in one domain ends
    runs = 1 + change.sum(axis=1)
    run = np.maximum(size // runs, 1)  # the length every run has in an even group
    even_ends = (np.arange(1, size)[None, :] % run[:, None]) == 0
    even = (distinct_per_row(d) == runs) & (size % runs == 0) & (change == even_ends).all(axis=1)
    if even.all():
        return None
    uneven = d[int(np.argmin(even))]  # the first uneven group
    per_domain = np.bincount(dom)
    k = len(np.unique(uneven))
    while k <= len(per_domain) and (size % k or size // k > per_domain.min()):
        k += 1
    if k > len(per_domain):
        raise FabricsimError(f"a {size}-GPU group cannot be laid evenly over the NVLink domains of {topo.name}: "
                             "choose a layout whose groups fill whole domains or fit in one")
    first = np.concatenate([[0], np.cumsum(per_domain)[:-1]])
    return np.concatenate([first[i] + np.arange(size // k) for i in range(k)]).astype(np.int32)


def disjoint_layers(groups: np.ndarray) -> list[np.ndarray]:
    """Split groups into layers whose groups share no rank (pipeline send/recv pairs overlap: stage i sends to
    i+1 while receiving from i-1); each layer runs as one replicated schedule, layers side by side in time."""
    layers: list[list[np.ndarray]] = []
    used: list[set] = []
    for g in groups:
        members = set(g.tolist())
        for layer, seen in zip(layers, used):
            if not members & seen:
                layer.append(g)
                seen |= members
                break
        else:
            layers.append([g])
            used.append(members)
    return [np.stack(layer) for layer in layers]


def engine_comm_model(topo: Topology, level: str = "analytical") -> EngineCommModel:
    """The engine-backed CommModel for `topo` ('analytical' level: fast enough for sweeps to 100k GPUs' groups)."""
    return EngineCommModel(topo, level)
