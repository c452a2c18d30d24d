"""A job's communication as the engine's phases (`engine.coflows`): a collective loop, or a training step.

Collective loop: each iteration is the tuner's pick for the collective on the job's GPUs (`tuner.select.best`,
or the algorithms and protocols the job forces), its traffic one coflow at the pace of its bandwidth time and its
latency after it, then `gap` seconds of compute.

Training step (`training.step.step_time` on the job's GPUs, Megatron rank r on the job's r-th GPU): one phase
per group type that communicates (tp, cp, ep, pp, dp), carrying every call of that type in the step (its calls
per step x each call's traffic on all its groups at once, as the step's comm model timed them) and lasting at
least the compute it overlaps with (the type's communication less what the step leaves exposed), so alone it
takes its communication time and shared it is exposed only beyond that compute; then the rest of the step's
compute (compute, pipeline bubble and offload, less what the phases overlap). Alone the phases add up to the step
time `fabricsim train` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fabricsim.engine.coflows import Coflow, Phase
from fabricsim.errors import FabricsimError
from fabricsim.multijob.spec import JobSpec, TrainJob
from fabricsim.topology.model import Topology
from fabricsim.units import format_bytes, parse_duration, parse_size

KINDS = ("tp", "cp", "ep", "pp", "dp")  # training.step.GROUPS: the order the phases run in


@dataclass(frozen=True, eq=False)
class Communication:
    """What a job does each iteration, as phases, and how to describe it."""

    phases: tuple[Phase, ...]
    what: str  # 'all_reduce 1 GiB ring/simple', 'llama3-8b tp8 pp1 dp32 step'
    notes: tuple[str, ...] = ()


def collective_loop(topo: Topology, job: JobSpec, ranks: np.ndarray, level: str) -> Communication:
    """One iteration of a collective loop: the tuner's pick on the job's GPUs, then `gap` of compute."""
    from fabricsim.tuner.select import best

    nbytes = parse_size(job.size)
    try:
        choice = best(topo, job.collective, nbytes, ranks=ranks, algos=job.algo, protos=job.proto, level=level)
    except FabricsimError as err:
        raise FabricsimError(f"job '{job.name}': {err}") from None
    r = choice.result
    phases = [Phase(f"{job.collective} {format_bytes(nbytes)}", Coflow.of(r.link_bytes, r.connection_bytes,
                                                                           r.bandwidth_time), r.latency_time)]
    gap = parse_duration(job.gap)
    if gap > 0:
        phases.append(Phase("compute", floor=gap))
    return Communication(tuple(phases), f"{job.collective} {format_bytes(nbytes)} {choice.algorithm}/{choice.protocol}")


def training_step(topo: Topology, job: JobSpec, ranks: np.ndarray, level: str) -> Communication:
    """One training step of the job's model and layout on its GPUs, as phases."""
    from fabricsim.training.comm import EngineCommModel
    from fabricsim.training.models import load_model
    from fabricsim.training.runs import layout_request
    from fabricsim.training.step import step_time
    from fabricsim.training.sweep import layout_for, topology_gpu

    spec: TrainJob = job.train
    try:
        model = load_model(spec.model)
        if spec.seq is not None:
            model = replace(model, seq=spec.seq)
        options = {k: getattr(spec, k) for k in spec.__struct_fields__ if k not in ("model", "seq", "efficiency")}
        template, defaults = layout_request(options)
        par = layout_for(model, template, int(ranks.size), topo, allow_over_hbm=template is not None, **defaults)
        comm = EngineCommModel(topo, level, placement=ranks, keep_results=True)
        step = step_time(model, par, topology_gpu(topo), comm, spec.efficiency)
    except FabricsimError as err:
        raise FabricsimError(f"job '{job.name}': {err}") from None
    phases, hidden = [], 0.0
    for kind in KINDS:
        total = step.comm_total.get(kind, 0.0)
        if total <= 0:
            continue
        coflow, latency = _kind_traffic(topo, job, step, kind, total)
        overlap = total - step.exposed.get(kind, 0.0)
        hidden += overlap
        phases.append(Phase(kind, coflow, latency, overlap))
    rest = step.step_time - sum(step.comm_total.values())
    notes = ()
    if rest < 0:  # more communication hidden than the step computes: the types' overlaps overlap each other
        scale = (step.step_time - sum(step.exposed.values())) / hidden
        phases = [replace(p, floor=p.floor * scale) for p in phases]
        notes = (f"job '{job.name}': the step hides more communication than it computes (the group types overlap "
                 "the same compute); each type's overlap is shortened in proportion, so alone the step takes "
                 "longer here than `fabricsim train` prints",)
        rest = 0.0
    phases.insert(0, Phase("compute", floor=rest))
    return Communication(tuple(phases), f"{model.name} {par.label()} step", notes)


def _kind_traffic(topo: Topology, job: JobSpec, step, kind: str, total: float) -> tuple[Coflow | None, float]:
    """(coflow, latency) of every call of one group type in one step: its calls' traffic x calls per step."""
    keys = [k for k in step.call_time if k.split(":")[0].split("-")[0] == kind]
    per_round = sum(step.call_time[k] for k in keys)
    if not keys or per_round <= 0:
        return None, total
    calls = total / per_round  # each of the type's calls runs this many times a step (their counts are alike)
    link_bytes = np.zeros(topo.n_links)
    size = bandwidth = latency = 0.0
    for key in keys:
        results = step.detail.get(key, {}).get("results")
        if not results:
            raise FabricsimError(f"job '{job.name}': its {kind} groups take unequal shares of their NVLink domains, "
                                 "which the step times on an even stand-in elsewhere on the fabric: give the job whole "
                                 "NVLink domains (a GPU count that is a multiple of the domain size)")
        slowest = max(results, key=lambda r: r.time)
        for r in results:
            link_bytes += r.link_bytes
        size += slowest.connection_bytes
        bandwidth += slowest.bandwidth_time
        latency += slowest.latency_time
    return Coflow.of(calls * link_bytes, calls * size, calls * bandwidth), calls * latency


def communication(topo: Topology, job: JobSpec, ranks: np.ndarray, level: str) -> Communication:
    """The job's iteration as phases."""
    if job.collective is not None:
        return collective_loop(topo, job, ranks, level)
    return training_step(topo, job, ranks, level)
