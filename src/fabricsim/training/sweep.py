"""Scaling sweeps: the same job on growing GPU counts, and where adding GPUs stops paying.

Batch policy: a fixed `global_batch` in the layout template means strong scaling (the same work
spread thinner); `global_batch = 0` keeps the work per replica fixed (weak scaling: the number of
micro-batches per step found at the smallest count is kept, so the global batch grows with DP).

The scaling wall: the GPU count past which the tokens/s gained per ADDED GPU falls below `threshold`
(default 50%) of the tokens/s per GPU of the smallest run, i.e. the marginal parallel efficiency
(T_i - T_{i-1}) / (N_i - N_{i-1}) / (T_0 / N_0) < threshold. Past it, new GPUs mostly wait on the fabric.
"""

from __future__ import annotations

import math

import numpy as np
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from fabricsim import hardware, topology
from fabricsim.errors import FabricsimError
from fabricsim.topology.model import Topology
from fabricsim.training import parallel as P
from fabricsim.training.models import ModelSpec
from fabricsim.training.step import CommModel, StepResult, step_time

WALL_THRESHOLD = 0.5


@dataclass(frozen=True)
class Wall:
    gpus: int | None  # last count worth having; None: no wall inside the sweep
    marginal: list[float]  # marginal efficiency of each step up (len = runs - 1)
    efficiency: list[float]  # parallel efficiency of each run vs the smallest (tokens/s per GPU ratio)
    threshold: float


def nvl72_segment(trays: int, trays_per_domain: int) -> int:
    """Trays a job takes from each NVLink domain: all of them when the job fits one domain, else the largest divisor
    of its tray count that fits a domain (Megatron-Bridge scripts/performance/utils/executors.py asks SLURM for
    `--segment` so on 4-GPU GB200 / GB300 nodes: 64 trays = 4 racks of 16 trays)."""
    if trays <= trays_per_domain:
        return trays
    return next(s for s in range(trays_per_domain, 0, -1) if trays % s == 0)


def cluster_topology(cluster, n_gpus: int) -> Topology:
    """A topology with room for `n_gpus` GPUs from a preset name, a YAML path or a ClusterSpec: the template whose
    node count the sweep sets, in whole nodes, and on NVL72 in whole 72-GPU domains holding the job's segments
    (`nvl72_segment`): 64 GPUs use 16 trays of one rack, 256 GPUs 16 trays of each of 4 racks (`job_placement`)."""
    name = cluster if isinstance(cluster, str) and cluster in topology.PRESETS else None
    if isinstance(cluster, str):
        cluster = topology.load_spec(cluster)
    nodes = math.ceil(n_gpus / cluster.gpus_per_node)
    if cluster.scaleup == "nvl72":
        per_domain = cluster.domain_size // cluster.gpus_per_node
        nodes = nodes // nvl72_segment(nodes, per_domain) * per_domain
    if name:  # a preset sizes its fabric (tiers, spines) for the node count
        return topology.build(topology.load_spec(name, nodes=nodes))
    return topology.build(replace(cluster, nodes=nodes))


def job_placement(topo: Topology, n_gpus: int) -> np.ndarray | None:
    """GPU of every Megatron rank 0..n_gpus-1 (None: rank r on GPU r). On NVL72 a job that does not fill whole
    domains takes the same block of trays from each (`nvl72_segment`), rank after rank."""
    per_domain = int(topo.features.get("gpus_per_domain", 1))
    per_node = int(topo.features.get("gpus_per_node", 1))
    if per_domain <= per_node or n_gpus % per_domain == 0 and n_gpus <= topo.n_gpus:
        return None
    trays = math.ceil(n_gpus / per_node)
    block = nvl72_segment(trays, per_domain // per_node) * per_node
    ranks = np.arange(n_gpus)
    return (ranks // block * per_domain + ranks % block).astype(np.int32)


def comm_for(comm_factory, topo: Topology, n_gpus: int) -> CommModel:
    """The comm model of a job of `n_gpus` on `topo`, with the job's rank placement when the model takes one."""
    comm = comm_factory(topo)
    if hasattr(comm, "placement"):
        comm.placement = job_placement(topo, n_gpus)
    return comm


def topology_gpu(topo: Topology) -> hardware.GPU:
    """The catalog GPU of rank 0 (fabricsim clusters are homogeneous)."""
    return hardware.get_gpu(topo.parts[int(topo.dev_part[int(topo.gpu_device[0])])])


def layout_for(model: ModelSpec, template: P.Parallelism | None, n_gpus: int, topo: Topology, **defaults) -> P.Parallelism:
    """The template with dp filled in (validated), or the default Megatron layout when there is no template."""
    gpu = topology_gpu(topo)
    per_domain = int(topo.features.get("gpus_per_domain", topo.features.get("gpus_per_node", 1)))
    if template is None:
        return P.default_parallelism(model, n_gpus, per_domain, gpu.hbm_bytes, **defaults)
    par = P.resolve(template, n_gpus, model.seq)
    P.validate(model, par, n_gpus, per_domain, gpu.hbm_bytes)
    return par


def fastest_layout(model: ModelSpec, n_gpus: int, topo: Topology, comm: CommModel, efficiency: float | None = None,
                   **overrides) -> StepResult:
    """The step result of the layout with the most tokens/s among every Megatron layout that fits
    (`parallel.fitting_layouts`; ties: the first, i.e. the smaller PP and TP). Every layout runs the same global
    batch: the one given, else the default layout's (rounded up to each layout's micro-batch x DP), so a deep
    pipeline pays its bubble as it would in the same training recipe. A layout the step model cannot time is skipped."""
    gpu = topology_gpu(topo)
    per_domain = int(topo.features.get("gpus_per_domain", topo.features.get("gpus_per_node", 1)))
    fits = P.fitting_layouts(model, n_gpus, per_domain, gpu.hbm_bytes, **overrides)
    if not overrides.get("global_batch"):
        batch, same = fits[0].global_batch, []
        for par in fits:
            per_step = par.micro_batch * par.dp
            par = replace(par, global_batch=-(-batch // per_step) * per_step)
            try:
                P.validate(model, par, n_gpus, per_domain, gpu.hbm_bytes)
            except FabricsimError:
                continue
            same.append(par)
        fits = same
    runs, errors = [], []
    for par in fits:
        try:
            runs.append(step_time(model, par, gpu, comm, efficiency))
        except FabricsimError as err:
            errors.append(err)
    if not runs:
        raise errors[0]
    return max(runs, key=lambda r: r.tokens_per_s)


def scaling(model: ModelSpec, cluster, gpu_counts: Sequence[int], template: P.Parallelism | None = None, *,
            efficiency: float | None = None, comm_factory: Callable[[Topology], CommModel] | None = None,
            search: bool = False, **defaults) -> list[StepResult]:
    """Step results for each GPU count (sorted ascending). `defaults` go to `default_parallelism`, or with
    `search` to `fastest_layout` (every fitting layout timed, the fastest kept; a `tp` or `pp` in `defaults`
    fixes that size)."""
    if comm_factory is None:
        from fabricsim.training.comm import engine_comm_model as comm_factory
    counts = sorted(set(int(n) for n in gpu_counts))
    if not counts or counts[0] < 1:
        raise FabricsimError("give at least one GPU count >= 1, e.g. --gpus 8,64,512")
    if search and template is not None:
        raise FabricsimError("a layout search needs no template: give tp / pp as defaults to fix them")
    results: list[StepResult] = []
    for n in counts:
        topo = cluster_topology(cluster, n)
        if search:
            results.append(fastest_layout(model, n, topo, comm_for(comm_factory, topo, n), efficiency, **defaults))
            continue
        par = layout_for(model, template, n, topo, **defaults)
        results.append(step_time(model, par, topology_gpu(topo), comm_for(comm_factory, topo, n), efficiency))
    return results


def scaling_wall(results: Sequence[StepResult], threshold: float = WALL_THRESHOLD) -> Wall:
    """Where adding GPUs stops paying (see the module docstring)."""
    base = results[0].tokens_per_s / results[0].n_gpus
    eff = [r.tokens_per_s / r.n_gpus / base for r in results]
    marginal = [
        (cur.tokens_per_s - prev.tokens_per_s) / (cur.n_gpus - prev.n_gpus) / base for prev, cur in zip(results, results[1:])
    ]
    wall = next((results[i].n_gpus for i, mg in enumerate(marginal) if mg < threshold), None)
    return Wall(gpus=wall, marginal=marginal, efficiency=eff, threshold=threshold)
