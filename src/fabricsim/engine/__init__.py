"""fabricsim.engine: time collective schedules on a fabric (flow-level max-min sharing or analytical bottleneck).

Public API: `simulate`, `simulate_concurrent`, `time_traffic`, `Job`, `Result`, `Bottleneck`, `Timeline`,
`to_perfetto`, and the solver `maxmin_rates` / `drain`.
"""

from fabricsim.engine.maxmin import drain, maxmin_rates
from fabricsim.engine.result import Bottleneck, Result, Timeline
from fabricsim.engine.simulate import Job, simulate, simulate_concurrent, time_traffic
from fabricsim.engine.trace import to_perfetto

__all__ = ["Bottleneck", "Job", "Result", "Timeline", "drain", "maxmin_rates", "simulate", "simulate_concurrent",
           "time_traffic", "to_perfetto"]
