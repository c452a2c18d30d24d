"""fabricsim.schedules: collective algorithms as explicit, executable, compact schedules.

build_schedule(...) -> Schedule; execute(schedule, inputs, op) runs it on numpy buffers and
reference(...) computes the expected result; traffic / rank_traffic derive bytes from it. The executor is imported
when first asked for (PEP 562): timing a schedule never runs it.
"""

from typing import TYPE_CHECKING, Any

from fabricsim.schedules.layout import COLLECTIVES
from fabricsim.schedules.model import ChunkMap, InNetworkOp, Op, Schedule, Step, StepTraffic
from fabricsim.schedules.registry import ALGORITHMS, applicable, build_schedule, built_channels, check
from fabricsim.schedules.structure import Structure, structure_from_topology
from fabricsim.schedules.traffic import rank_traffic, traffic

if TYPE_CHECKING:
    from fabricsim.schedules.execute import REDUCTIONS, execute, reference

__all__ = [
    "ALGORITHMS", "COLLECTIVES", "REDUCTIONS", "ChunkMap", "InNetworkOp", "Op", "Schedule", "Step", "StepTraffic",
    "Structure", "applicable", "build_schedule", "built_channels", "check", "execute", "rank_traffic", "reference",
    "structure_from_topology", "traffic",
]


def __getattr__(name: str) -> Any:
    """PEP 562: the executor's names (`execute`, `reference`, `REDUCTIONS`), imported when first asked for."""
    if name not in ("REDUCTIONS", "execute", "reference"):
        raise AttributeError(f"module 'fabricsim.schedules' has no attribute '{name}'")
    from importlib import import_module

    module = import_module("fabricsim.schedules.execute")  # which sets this package's `execute` to the module:
    globals().update(REDUCTIONS=module.REDUCTIONS, execute=module.execute, reference=module.reference)  # the names win
    return globals()[name]
