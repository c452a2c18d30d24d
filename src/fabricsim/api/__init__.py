"""fabricsim's public Python API: `import fabricsim as fs`.

    c = fs.cluster("dgx-h100", gpus=4)                      # 4 ranks of one DGX H100
    r = fs.perf(c, "all_reduce", fs.sizes("8", "8G", factor=8))
    r.to_pandas()                                            # the nccl-tests figures, one row per size

`cluster` builds a cluster and says which GPU ranks a run uses, with its failed and degraded parts (`faults`, or
`fail` / `degrade` on a cluster: a new cluster); `perf` predicts an nccl-tests sweep;
`compare` scores a real nccl-tests log against the prediction; `doctor` finds where a real log falls short of its
hardware and ranks the likely causes; `train` times training steps; `sweep` runs a sweep file's design space into a
results file and `report` draws results as an HTML page. Each returns
plain data (records, or a pandas DataFrame with the `fabricsim[pandas]` extra) and prints nothing; a
`progress(done, total)` callback, where taken, is told how far a long run has got. Bad input raises
`FabricsimError` with a message naming the problem and the fix.

Each function and its result class live in one module of this package, imported when first asked for (PEP 562),
so a `fabricsim perf` run creates no other command's result classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fabricsim.errors import FabricsimError

if TYPE_CHECKING:
    from fabricsim.api.calibrate_run import CalibrationResult, calibrate
    from fabricsim.api.clusters import Cluster, cluster, degrade, fail, rank_ranges
    from fabricsim.api.compare_run import CompareResult, compare, doctor, gpu_notes
    from fabricsim.api.failures_run import FailuresResult, failures
    from fabricsim.api.jobs_run import JobsResult, jobs
    from fabricsim.api.perf_run import PerfResult, perf, sizes
    from fabricsim.api.sweep_run import SweepResult, report, sweep
    from fabricsim.api.train_run import TrainResult, train

__all__ = ["CalibrationResult", "Cluster", "CompareResult", "FabricsimError", "FailuresResult", "JobsResult",
           "PerfResult", "SweepResult", "TrainResult", "calibrate", "cluster", "compare", "degrade", "doctor", "fail",
           "failures", "jobs", "perf", "report", "sizes", "sweep", "train"]

# name -> the module of this package that holds it
_HOME = {
    "CalibrationResult": "calibrate_run", "calibrate": "calibrate_run",
    "Cluster": "clusters", "cluster": "clusters", "degrade": "clusters", "fail": "clusters", "rank_ranges": "clusters",
    "CompareResult": "compare_run", "compare": "compare_run", "doctor": "compare_run", "gpu_notes": "compare_run",
    "FailuresResult": "failures_run", "failures": "failures_run",
    "JobsResult": "jobs_run", "jobs": "jobs_run",
    "PerfResult": "perf_run", "perf": "perf_run", "sizes": "perf_run",
    "SweepResult": "sweep_run", "report": "sweep_run", "sweep": "sweep_run",
    "TrainResult": "train_run", "train": "train_run",
}


def __getattr__(name: str) -> Any:
    """PEP 562: an API name, imported from its module when first asked for."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'fabricsim.api' has no attribute '{name}'")
    from importlib import import_module

    value = getattr(import_module(f"fabricsim.api.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})
