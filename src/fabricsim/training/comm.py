"""The CommModel the training layer uses in product: the tuner's pick, timed concurrently on the engine.

For one call (a collective run by every group of one type at once):
1. every algorithm NCCL would run for the collective (`tuner.select.NCCL_ALGOS`) that applies to the group's
   structure (`schedules.applicable`) is timed on the first group with `engine.simulate`, Simple protocol
   (training messages are MBs: LL/LL128 only win below ~1 MB, nccl-model.md s3.6), and the fastest is kept, as
   NCCL's tuner would. (The tuner's own `best` is not used yet: its call into `schedules.structure_from_topology`
   does not match the schedules package in this tree.)
2. if every group lies inside one NVLink domain, groups use disjoint GPU links (NVSwitch is non-blocking per
   port), so all groups take the solo time (symmetry: no need to simulate thousands of identical groups);
3. otherwise every group runs that schedule together in `engine.simulate_concurrent`, so groups that share
   NICs, leaves or spines slow each other down; the call takes as long as the slowest group.
Results are cached per (collective, groups, bytes); `last_detail` holds the pick and the bottleneck links.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabricsim import schedules
from fabricsim.engine import Job, simulate, simulate_concurrent
from fabricsim.errors import FabricsimError
from fabricsim.schedules.structure import Structure
from fabricsim.topology.model import Topology
from fabricsim.tuner.select import NCCL_ALGOS

ELEM_SIZE = 2  # bf16 activations and gradients
# Ring/tree channels: NCCL doubles ring channels below 16 on SM90 multi-node (nccl-model.md s3.5), 24 on one
# H100 node (s3.6); 16 saturates every fabric in the catalog per the engine's per-channel caps.
CHANNELS = 16


def _structure(topo: Topology, ranks: np.ndarray) -> Structure:
    """The schedules' view of one group: ranks per NVLink domain (1 if the group is not laid out domain by domain)."""
    _, first, inverse = np.unique(topo.gpu_domain[ranks], return_index=True, return_inverse=True)
    label = np.argsort(np.argsort(first))[inverse]
    per = int(np.count_nonzero(label == 0))
    if not np.array_equal(label, np.arange(len(ranks)) // per):
        per = 1
    features = topo.features or {}
    return Structure(nranks=len(ranks), ranks_per_node=per, has_nvswitch=bool(features.get("nvls")),
                     has_sharp=bool(features.get("sharp")))


@dataclass
class EngineCommModel:
    topo: Topology
    level: str = "analytical"
    last_detail: dict | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    def time(self, collective: str, groups: np.ndarray, nbytes: float) -> float:
        groups = np.ascontiguousarray(groups, dtype=np.int32)
        nbytes = max(ELEM_SIZE * groups.shape[1], int(round(nbytes / ELEM_SIZE / groups.shape[1])) * ELEM_SIZE * groups.shape[1])
        key = (collective, groups.shape, groups.tobytes(), nbytes)
        if key not in self._cache:
            self._cache[key] = self._time(collective, groups, nbytes)
        t, self.last_detail = self._cache[key]
        return t

    def _time(self, collective: str, groups: np.ndarray, nbytes: int) -> tuple[float, dict]:
        structure = _structure(self.topo, groups[0])
        timed = []
        for algorithm in schedules.applicable(collective, structure):
            if algorithm not in NCCL_ALGOS[collective]:
                continue
            try:
                schedule = schedules.build_schedule(collective, algorithm, structure.nranks, structure=structure, channels=CHANNELS)
                result = simulate(self.topo, schedule, nbytes, elem_size=ELEM_SIZE, level=self.level, ranks=groups[0])
            except FabricsimError:  # e.g. SHARP on ranks of one node: the algorithm does not apply here
                continue
            timed.append((result.time, algorithm, schedule, result))
        if not timed:
            raise FabricsimError(f"no NCCL algorithm applies to {collective} over {structure.nranks} ranks on {self.topo.name}")
        _, algorithm, schedule, result = min(timed, key=lambda x: x[0])
        domains = self.topo.gpu_domain[groups]
        if len(groups) > 1 and not (domains == domains[:, :1]).all():
            jobs = [Job(schedule, nbytes, ranks=g, elem_size=ELEM_SIZE) for g in groups]
            result = max(simulate_concurrent(self.topo, jobs, level=self.level), key=lambda r: r.time)
        detail = {"algorithm": algorithm, "groups": len(groups), "bound": result.bound,
                  "bottlenecks": [b.name for b in result.bottlenecks]}
        return float(result.time), detail


def engine_comm_model(topo: Topology, level: str = "analytical") -> EngineCommModel:
    """The engine-backed CommModel for `topo` ('analytical' level: fast enough for sweeps to 100k GPUs' groups)."""
    return EngineCommModel(topo, level)
