"""Workload traces replayed on a cluster: MLCommons Chakra execution traces (one protobuf file per rank).

`run_chakra(prefix, topo)` reads PREFIX.<rank>.et, times compute from recorded durations or FLOPs and
communication with the tuner's picks on the communicators' ranks, respecting data and control
dependencies (`traces.replay`), and returns the step time, exposed communication and every event.
protobuf is the optional extra `fabricsim[chakra]`.
"""

from __future__ import annotations

from fabricsim.traces.chakra import read_trace
from fabricsim.traces.replay import Replay, replay

__all__ = ["Replay", "run_chakra"]


def run_chakra(prefix: str, topo, *, comm_groups: dict[str, list[int]] | None = None,
               efficiency: float | None = None) -> Replay:
    """Replay the Chakra ET files PREFIX.0.et .. on `topo`."""
    return replay(read_trace(prefix), topo, comm_groups=comm_groups, efficiency=efficiency)
