"""A lower bound on a collective's simulated time, found without routing or draining anything.

A Result's time is its latency (NCCL's base latency, plus hop latencies that are never negative) plus its
bandwidth time, which is at least the message over NCCL's per-channel cap (engine.assemble). Both terms come
from NCCL's protocol constants and the channels alone, so the tuner can rule out a candidate whose bound
exceeds a time it has already found before timing it (NCCL's own tuner ranks by such a model first).
"""

from __future__ import annotations

from fabricsim.engine.call import Job, job_call
from fabricsim.engine.plan import algbw_cap, call_chunks, call_model
from fabricsim.topology.model import Topology


def least_time(topo: Topology, job: Job) -> float:
    """Seconds `simulate` takes at least for `job` (at any engine level, with no background traffic): NCCL's
    base latency + the message over NCCL's per-channel cap, as engine.assemble adds them up."""
    call = job_call(topo, job)
    model = call_model(topo, call)
    return model.base_latency + call.nbytes / algbw_cap(model, call.channels, call_chunks(call, model))
