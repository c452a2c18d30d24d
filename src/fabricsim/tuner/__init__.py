"""fabricsim.tuner: pick the algorithm and protocol per call.

`select.best` times every applicable candidate with the engine (topology-aware); `nccl_model` is NCCL's own
tuning.cc cost model, for `--model nccl` and `--explain`.
"""

from fabricsim.tuner.select import Choice, best, candidates, plan_call

__all__ = ["Choice", "best", "candidates", "plan_call"]
