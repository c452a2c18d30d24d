"""fabricsim: an executable model of AI-cluster interconnects.

The public API (`fabricsim.api`) is re-exported here and loaded on first use, so `import fabricsim` stays light:

    import fabricsim as fs
    r = fs.perf(fs.cluster("dgx-h100"), "all_reduce", fs.sizes("8", "8G", factor=8))

Layers (data flows one way; a lower layer never imports a higher one):
hardware -> topology -> routing -> schedules -> engine -> tuner / training / multijob -> reports -> sweeps -> api -> cli
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_API = ("CalibrationResult", "Cluster", "CompareResult", "FabricsimError", "FailuresResult", "JobsResult",
        "PerfResult", "SweepResult", "TrainResult", "calibrate", "cluster", "compare", "degrade", "doctor", "fail",
        "failures", "jobs", "perf", "report", "sizes", "sweep", "train")
__all__ = ["__version__", *_API]

if TYPE_CHECKING:
    from fabricsim.api import (
        CalibrationResult, Cluster, CompareResult, FabricsimError, FailuresResult, JobsResult, PerfResult,
        SweepResult, TrainResult, calibrate, cluster, compare, degrade, doctor, fail, failures, jobs, perf, report,
        sizes, sweep, train,
    )


def __getattr__(name: str) -> Any:
    """PEP 562: the API's names, imported from `fabricsim.api` when first asked for."""
    if name in _API:
        from fabricsim import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fabricsim' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
