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


def cluster_topology(cluster, n_gpus: int) -> Topology:
    """A topology with at least `n_gpus` GPUs from a preset name, a YAML path or a ClusterSpec; a YAML
    cluster, like a spec, is the template whose node count the sweep sets (whole NVLink domains)."""
    if isinstance(cluster, str):
        if cluster in topology.PRESETS:
            return topology.load_cluster(cluster, gpus=n_gpus)
        cluster = topology.load_spec(cluster)
    per_domain_nodes = cluster.domain_size // cluster.gpus_per_node if cluster.scaleup == "nvl72" else 1
    nodes = math.ceil(n_gpus / cluster.gpus_per_node / per_domain_nodes) * per_domain_nodes
    return topology.build(replace(cluster, nodes=nodes))


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
            results.append(fastest_layout(model, n, topo, comm_factory(topo), efficiency, **defaults))
            continue
        par = layout_for(model, template, n, topo, **defaults)
        results.append(step_time(model, par, topology_gpu(topo), comm_factory(topo), efficiency))
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
