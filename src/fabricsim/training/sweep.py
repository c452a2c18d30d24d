"""Scaling sweeps: the same job on growing GPU counts, and where adding GPUs stops paying.

Batch policy: the global batch is fixed across the counts of a sweep (strong scaling: the same work spread
thinner). Given (`global_batch`) it is that; else it is the default layout's default at the smallest count that
can run (`parallel.default_global_batch`: about 4M tokens, and at least 4 micro-batches per pipeline stage), and
every larger count runs that same batch, choosing a layout whose micro-batch x DP divides it.

A count that cannot run (no layout fits, the batch does not split, a variant the cluster cannot build) is a
`Refused` entry with the reason; the other counts still run.

The scaling wall: the GPU count past which the tokens/s gained per ADDED GPU falls below `threshold`
(default 50%) of the tokens/s per GPU of the smallest run, i.e. the marginal parallel efficiency
(T_i - T_{i-1}) / (N_i - N_{i-1}) / (T_0 / N_0) < threshold. Past it, new GPUs mostly wait on the fabric.
`explain_wall` names what becomes exposed first as GPUs are added, and at what count.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from fabricsim import hardware, topology
from fabricsim.errors import FabricsimError, option
from fabricsim.topology.model import Topology
from fabricsim.training import parallel as P
from fabricsim.training.models import ModelSpec
from fabricsim.training.step import GROUPS, CommModel, StepResult, step_time

WALL_THRESHOLD = 0.5
EXPOSED_SHARE = 0.05  # a communication "becomes exposed" at the first count where it takes this share of the step


@dataclass(frozen=True)
class Refused:
    """A GPU count of a sweep that could not run, and why."""

    n_gpus: int
    reason: str


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


def cluster_topology(cluster, n_gpus: int, variant: str | None = None, faults=None) -> Topology:
    """A topology with room for `n_gpus` GPUs from a preset name, a YAML path or a ClusterSpec: the template whose
    node count the sweep sets, in whole nodes, and on NVL72 in whole 72-GPU domains holding the job's segments
    (`nvl72_segment`): 64 GPUs use 16 trays of one rack, 256 GPUs 16 trays of each of 4 racks (`job_placement`).
    `variant` (a `training.variants` name) changes one part of the fabric of the sized cluster; `faults` (a
    `topology.Faults`) fail or slow parts of it, resolved against the sized cluster."""
    from fabricsim.training.variants import variant as apply_variant

    name = cluster if isinstance(cluster, str) and cluster in topology.PRESETS else None
    base = topology.load_spec(cluster) if isinstance(cluster, str) else cluster
    nodes = _nodes_for(base, n_gpus)
    spec = topology.load_spec(name, nodes=nodes) if name else replace(base, nodes=nodes)  # presets size their tiers
    if variant:
        spec = apply_variant(spec, variant)
        spec = replace(spec, nodes=_nodes_for(spec, n_gpus))
    if faults:
        spec = replace(spec, faults=spec.faults.plus(faults))
    return topology.build(spec, topology.cluster_file(cluster))


def check_whole_nodes(cluster, n_gpus: int) -> None:
    """Refuse a GPU count that is neither part of one node nor whole nodes: the sweep sizes the cluster in whole
    nodes, so 12 GPUs on 8-GPU nodes would run as 8 + 4 on two nodes, a layout no one runs, without a word."""
    spec = topology.load_spec(cluster) if isinstance(cluster, str) else cluster
    per = int(spec.gpus_per_node)
    if n_gpus > per and n_gpus % per:
        raise FabricsimError(f"{option('gpus', n_gpus)}: {spec.name} has nodes of {per} GPUs and a training job "
                             f"takes whole nodes: use a multiple of {per} ({n_gpus // per * per} or "
                             f"{-(-n_gpus // per) * per}), or fewer than {per} GPUs for part of one node")


def _nodes_for(spec, n_gpus: int) -> int:
    """Nodes of `spec` a job of `n_gpus` needs: whole nodes, on NVL72 whole domains of its segments."""
    nodes = math.ceil(n_gpus / spec.gpus_per_node)
    if spec.scaleup == "nvl72":
        per_domain = spec.domain_size // spec.gpus_per_node
        nodes = math.ceil(nodes / nvl72_segment(nodes, per_domain)) * per_domain
    return nodes


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
    return hardware.get_gpu(topo.gpu_part())


def layout_for(model: ModelSpec, template: P.Parallelism | None, n_gpus: int, topo: Topology, *,
               allow_over_hbm: bool = False, **defaults) -> P.Parallelism:
    """The template with dp filled in (validated; over HBM only with `allow_over_hbm`, the step then says so), or
    the default Megatron layout when there is no template."""
    gpu = topology_gpu(topo)
    per_domain = int(topo.features.get("gpus_per_domain", topo.features.get("gpus_per_node", 1)))
    if template is None:
        return P.default_parallelism(model, n_gpus, per_domain, gpu.hbm_bytes, **defaults)
    par = P.resolve(template, n_gpus, model.seq)
    P.validate(model, par, n_gpus, per_domain, None if allow_over_hbm else gpu.hbm_bytes)
    return par


def fastest_layout(model: ModelSpec, n_gpus: int, topo: Topology, comm: CommModel, efficiency: float | None = None,
                   **overrides) -> StepResult:
    """The step result of the layout with the most tokens/s among every Megatron layout that fits
    (`parallel.fitting_layouts`, interleaved pipelines included; ties: the first, i.e. the smaller PP and TP). Every layout runs the same global
    batch: the one given, else the default layout's (rounded up to each layout's micro-batch x DP), so a deep
    pipeline pays its bubble as it would in the same training recipe. Layouts are timed in order of their step time
    without data-parallel collectives (a lower bound; DP collectives over thousands of GPUs are the costliest to
    time), and the search stops once that bound exceeds the best step found: the result is the same as timing all
    of them. A layout the step model cannot time is skipped."""
    gpu = topology_gpu(topo)
    per_domain = int(topo.features.get("gpus_per_domain", topo.features.get("gpus_per_node", 1)))
    fits = P.fitting_layouts(model, n_gpus, per_domain, gpu.hbm_bytes, interleaved=True, **overrides)
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
    def per_sequence(r: StepResult) -> float:
        return r.step_time / r.parallelism.global_batch

    bounds, errors = [], []
    for i, par in enumerate(fits):
        try:
            bounds.append((per_sequence(step_time(model, par, gpu, comm, efficiency, free=("dp",))), i, par))
        except FabricsimError as err:
            errors.append(err)
    bounds.sort(key=lambda b: (b[0], b[1]))
    best = None
    for bound, _, par in bounds:
        if best is not None and bound >= per_sequence(best):
            break  # no later layout can beat the best: its step without DP collectives alone takes longer
        try:
            r = step_time(model, par, gpu, comm, efficiency)
        except FabricsimError as err:
            errors.append(err)
            continue
        if best is None or per_sequence(r) < per_sequence(best):
            best = r
    if best is None:
        raise errors[0]
    return best


def default_batch(model: ModelSpec, cluster, counts: Sequence[int], template: P.Parallelism | None, **defaults) -> int:
    """The sweep's fixed global batch when none is given: the default at the smallest count that can lay the job out
    (see the module docstring)."""
    batch = _first_batch(model, cluster, counts, template, **defaults)
    if isinstance(batch, int):
        return batch
    raise next(iter(batch.values()))


def _first_batch(model: ModelSpec, cluster, counts: Sequence[int], template: P.Parallelism | None,
                 **defaults) -> int | dict[int, FabricsimError]:
    """`default_batch`, or where no count can lay the job out, each count's reason."""
    errors: dict[int, FabricsimError] = {}
    for n in counts:
        try:
            topo = cluster_topology(cluster, n)
            if template is not None:
                return P.resolve(replace(template, global_batch=0), n, model.seq).global_batch
            return layout_for(model, None, n, topo, **defaults).global_batch
        except FabricsimError as err:
            errors[n] = err
    return errors


def scaling_runs(model: ModelSpec, cluster, gpu_counts: Sequence[int], template: P.Parallelism | None = None, *,
                 efficiency: float | None = None, comm_factory: Callable[[Topology], CommModel] | None = None,
                 search: bool = False, variant: str | None = None, allow_over_hbm: bool = False, faults=None,
                 adjust: Callable[[StepResult, Topology, CommModel], StepResult] | None = None,
                 **defaults) -> list[StepResult | Refused]:
    """A step result, or a `Refused` with the reason, for each GPU count (sorted ascending), all with one global
    batch (see the module docstring). `defaults` go to `default_parallelism`, or with `search` to `fastest_layout`
    (every fitting layout considered, the fastest kept; a `tp`, `pp` or `ep` in `defaults` fixes that size);
    `variant` changes the cluster's fabric (`training.variants`), `faults` fail or slow parts of it; `adjust(result,
    topology, comm)` replaces each step result (`training.stragglers` charges slow GPUs there); a template layout
    estimated over HBM is timed (and flagged) only with `allow_over_hbm`."""
    if comm_factory is None:
        from fabricsim.training.comm import engine_comm_model as comm_factory
    counts = sorted(set(int(n) for n in gpu_counts))
    if not counts or counts[0] < 1:
        raise FabricsimError(f"give at least one GPU count >= 1, e.g. {option('gpus', [8, 64, 512])}")
    if search and template is not None:
        raise FabricsimError("a layout search needs no template: give tp / pp as defaults to fix them")
    batch = (template.global_batch if template is not None else defaults.get("global_batch", 0)) or 0
    if not batch:
        found = _first_batch(model, cluster, counts, template,
                             **{k: v for k, v in defaults.items() if k != "global_batch"})
        if not isinstance(found, int):  # no count lays the job out: each count's own reason
            return [Refused(n, str(found[n])) for n in counts]
        batch = found
    if template is not None:
        template = replace(template, global_batch=batch)
    else:
        defaults = dict(defaults, global_batch=batch)
    results: list[StepResult | Refused] = []
    for n in counts:
        try:
            check_whole_nodes(cluster, n)
            topo = cluster_topology(cluster, n, variant, faults)
            comm = comm_for(comm_factory, topo, n)
            if search:
                result = fastest_layout(model, n, topo, comm, efficiency, **defaults)
            else:
                par = layout_for(model, template, n, topo, allow_over_hbm=allow_over_hbm, **defaults)
                result = step_time(model, par, topology_gpu(topo), comm, efficiency)
            results.append(result if adjust is None else adjust(result, topo, comm))
        except FabricsimError as err:
            results.append(Refused(n, str(err)))
    return results


def scaling(model: ModelSpec, cluster, gpu_counts: Sequence[int], template: P.Parallelism | None = None, *,
            efficiency: float | None = None, comm_factory: Callable[[Topology], CommModel] | None = None,
            search: bool = False, **defaults) -> list[StepResult]:
    """Step results for each GPU count (sorted ascending), with one global batch (`scaling_runs`); the first count
    that cannot run is a FabricsimError."""
    runs = scaling_runs(model, cluster, gpu_counts, template, efficiency=efficiency, comm_factory=comm_factory,
                        search=search, **defaults)
    for r in runs:
        if isinstance(r, Refused):
            raise FabricsimError(r.reason if len(runs) == 1 else f"{r.n_gpus} GPUs: {r.reason}")
    return runs


def scaling_wall(results: Sequence[StepResult | Refused], threshold: float = WALL_THRESHOLD) -> Wall:
    """Where adding GPUs stops paying (see the module docstring); counts that could not run are left out."""
    results = [r for r in results if isinstance(r, StepResult)]
    if not results:
        return Wall(gpus=None, marginal=[], efficiency=[], threshold=threshold)
    base = results[0].tokens_per_s / results[0].n_gpus
    eff = [r.tokens_per_s / r.n_gpus / base for r in results]
    marginal = [
        (cur.tokens_per_s - prev.tokens_per_s) / (cur.n_gpus - prev.n_gpus) / base for prev, cur in zip(results, results[1:])
    ]
    wall = next((results[i].n_gpus for i, mg in enumerate(marginal) if mg < threshold), None)
    return Wall(gpus=wall, marginal=marginal, efficiency=eff, threshold=threshold)


WHAT = {"tp": "tensor-parallel activations", "cp": "context-parallel K/V", "ep": "expert-parallel all-to-all",
        "pp": "pipeline sends", "dp": "data-parallel gradient / parameter collectives", "bubble": "pipeline bubble"}


@dataclass(frozen=True)
class Exposure:
    """The first communication (or the bubble) to take EXPOSED_SHARE of the step as GPUs are added."""

    group: str  # tp | cp | ep | pp | dp | bubble
    gpus: int  # the first count where it takes EXPOSED_SHARE of the step
    shares: tuple[float, ...]  # its share of the step at every count that ran
    counts: tuple[int, ...]
    collective: str  # the comm model's call behind it ('dp:reduce_scatter', ...), '' for the bubble
    limiter: str  # what bounds that call (the comm model's bottleneck links), '' when unknown

    def text(self, first_count: int) -> str:
        share = ", ".join(f"{s:.0%}" for s in self.shares)
        via = f" ({self.collective}" + (f", bound by {self.limiter}" if self.limiter else "") + ")" if self.collective else ""
        when = f"already at {self.gpus} GPUs" if self.gpus == first_count else f"from {self.gpus} GPUs"
        return f"{WHAT[self.group]}{via}: {when} (share of the step at {', '.join(map(str, self.counts))} GPUs: {share})"


def explain_wall(results: Sequence[StepResult | Refused]) -> list[Exposure]:
    """What becomes exposed as GPUs are added, in the order it crosses EXPOSED_SHARE of the step."""
    runs = [r for r in results if isinstance(r, StepResult)]
    out = []
    for group in (*GROUPS, "bubble"):
        shares = tuple((r.bubble if group == "bubble" else r.exposed.get(group, 0.0)) / r.step_time for r in runs)
        first = next((i for i, sh in enumerate(shares) if sh >= EXPOSED_SHARE), None)
        if first is None:
            continue
        r = runs[first]
        calls = {k: v for k, v in r.call_time.items() if k.split(":")[0].startswith(group)} if group != "bubble" else {}
        key = max(calls, key=calls.get) if calls else ""
        detail = r.detail.get(key) or {}
        limiter = ", ".join(detail.get("bottlenecks", [])[:2]) if isinstance(detail, dict) else ""
        out.append(Exposure(group, r.n_gpus, shares, tuple(x.n_gpus for x in runs), key, limiter))
    return sorted(out, key=lambda e: (e.gpus, -(e.shares[-1] - e.shares[0])))
