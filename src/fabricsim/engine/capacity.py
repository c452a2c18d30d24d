"""What the engine reads from the hardware catalog about a topology: achievable link capacity and GPU generation."""

from __future__ import annotations

import numpy as np

from fabricsim import hardware
from fabricsim.topology.model import Topology


def link_efficiency(topo: Topology) -> np.ndarray:
    """Achievable fraction of each link's capacity for bulk data (catalog `LinkTech.efficiency` of its technology)."""
    per_tech = np.array([hardware.get_link(t).efficiency for t in topo.techs], dtype=np.float64)
    return per_tech[topo.link_tech]


def effective_capacity(topo: Topology) -> np.ndarray:
    """Bytes/s each link delivers to collective data: physical capacity x technology efficiency (kept in the
    topology's derived store)."""
    return topo.derive(("effective_capacity",), lambda: topo.link_capacity * link_efficiency(topo))


def nccl_arch(topo: Topology, gpu_ranks: np.ndarray) -> str:
    """NCCL's compute-capability row for these GPUs: from the lowest compute capability, as NCCL's `minCompCap`
    (>= 10 Blackwell, >= 9 Hopper, >= 8 Ampere, else Volta; tuning.cc)."""
    parts = np.unique(topo.dev_part[topo.gpu_device[gpu_ranks]])
    cc = min(hardware.get_gpu(topo.parts[int(p)]).compute_capability for p in parts)
    if cc >= 10:
        return "Blackwell"
    if cc >= 9:
        return "Hopper"
    if cc >= 8:
        return "Ampere"
    return "Volta"
