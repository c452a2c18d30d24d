"""fabricsim.engine: time collective schedules on a fabric (flow-level max-min sharing or analytical bottleneck).

Public API: `simulate`, `simulate_concurrent`, `time_traffic`, `Job`, `Result`, `Bottleneck`, `Timeline`,
`to_perfetto` (imported when first asked for, PEP 562: only a traced run writes one), and the solver
`maxmin_rates` / `drain`.
"""

from typing import TYPE_CHECKING, Any

from fabricsim.engine.maxmin import drain, maxmin_rates
from fabricsim.engine.result import Bottleneck, Result, Timeline
from fabricsim.engine.simulate import Job, simulate, simulate_concurrent, time_traffic

if TYPE_CHECKING:
    from fabricsim.engine.trace import to_perfetto

__all__ = ["Bottleneck", "Job", "Result", "Timeline", "drain", "maxmin_rates", "simulate", "simulate_concurrent",
           "time_traffic", "to_perfetto"]


def __getattr__(name: str) -> Any:
    """PEP 562: `to_perfetto`, imported from engine.trace when first asked for."""
    if name != "to_perfetto":
        raise AttributeError(f"module 'fabricsim.engine' has no attribute '{name}'")
    from fabricsim.engine.trace import to_perfetto as value

    globals()[name] = value
    return value
