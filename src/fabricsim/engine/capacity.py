"""What each link delivers to collective data: the achievable fraction of its technology x its capacity (the
catalog's fraction, or the one the cluster file's `calibrated:` section fitted for that kind of link)."""

from __future__ import annotations

import numpy as np

from fabricsim import hardware
from fabricsim.topology import calibrated
from fabricsim.topology.model import Topology


def link_efficiency(topo: Topology) -> np.ndarray:
    """Achievable fraction of each link's capacity for bulk data (catalog `LinkTech.efficiency` of its technology,
    or the calibrated one of its kind), kept in the topology's derived store: every Result names its bottlenecks'."""
    return topo.derive(("link_efficiency",), lambda: _link_efficiency(topo))


def _link_efficiency(topo: Topology) -> np.ndarray:
    cal = calibrated.of(topo.spec)
    techs = [hardware.get_link(t) for t in topo.techs]
    per_tech = np.array([calibrated.efficiency(cal, lt.kind, lt.efficiency) for lt in techs], dtype=np.float64)
    return per_tech[topo.link_tech]


def effective_capacity(topo: Topology) -> np.ndarray:
    """Bytes/s each link delivers to collective data: physical capacity x technology efficiency (kept in the
    topology's derived store)."""
    return topo.derive(("effective_capacity",), lambda: topo.link_capacity * link_efficiency(topo))
