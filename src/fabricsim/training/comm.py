"""The CommModel the training layer uses in product: the tuner's pick, timed concurrently on the engine.

For one call (a collective run by every group of one type at once):
1. the tuner (`tuner.select.best`) times every algorithm and protocol NCCL would run for the collective on the
   first group, on the channels NCCL's search gives it, and keeps the fastest, as NCCL's tuner would;
2. if every group lies inside one NVLink domain, groups use disjoint GPU links (NVSwitch is non-blocking per
   port), so all groups take the solo time (symmetry: no need to simulate thousands of identical groups);
3. otherwise every group runs the picked schedule at once, as one schedule of disjoint copies
   (`schedules.replicate`), so groups that share NICs, leaves or spines slow each other down; the call takes
   as long as the slowest group.
Results are cached per (collective, groups, bytes); `last_detail` holds the pick and the bottleneck links.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabricsim.engine import simulate
from fabricsim.schedules.replicate import replicate
from fabricsim.topology.model import Topology
from fabricsim.tuner.select import best

ELEM_SIZE = 2  # bf16 activations and gradients


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
        choice = best(self.topo, collective, nbytes, ranks=groups[0], elem_size=ELEM_SIZE, level=self.level)
        result = choice.result
        domains = self.topo.gpu_domain[groups]
        if len(groups) > 1 and not (domains == domains[:, :1]).all():
            job = choice.job
            result = max((simulate(self.topo, replicate(job.schedule, len(layer)), nbytes, elem_size=ELEM_SIZE,
                                   protocol=job.protocol, channels=job.channels, level=self.level, ranks=layer.ravel(),
                                   net_peer_bw=job.net_peer_bw) for layer in disjoint_layers(groups)),
                         key=lambda r: r.time)
        detail = {"algorithm": choice.algorithm, "protocol": choice.protocol, "groups": len(groups),
                  "bound": result.bound, "bottlenecks": [b.name for b in result.bottlenecks]}
        return float(result.time), detail


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
