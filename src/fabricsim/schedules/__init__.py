"""fabricsim.schedules: collective algorithms as explicit, executable, compact schedules.

build_schedule(...) -> Schedule; execute(schedule, inputs, op) runs it on numpy buffers and
reference(...) computes the expected result; traffic / rank_traffic derive bytes from it.
"""

from fabricsim.schedules.execute import REDUCTIONS, execute, reference
from fabricsim.schedules.layout import COLLECTIVES
from fabricsim.schedules.model import ChunkMap, InNetworkOp, Op, Schedule, Step, StepTraffic
from fabricsim.schedules.registry import ALGORITHMS, applicable, build_schedule, check
from fabricsim.schedules.structure import Structure, structure_from_topology
from fabricsim.schedules.traffic import rank_traffic, traffic

__all__ = [
    "ALGORITHMS", "COLLECTIVES", "REDUCTIONS", "ChunkMap", "InNetworkOp", "Op", "Schedule", "Step", "StepTraffic",
    "Structure", "applicable", "build_schedule", "check", "execute", "rank_traffic", "reference",
    "structure_from_topology", "traffic",
]
