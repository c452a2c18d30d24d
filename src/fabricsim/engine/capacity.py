"""What each link delivers to collective data: the catalog's achievable fraction of its technology x its capacity."""

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
