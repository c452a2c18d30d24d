"""`fs.cluster`: a built cluster and the GPU ranks a run uses (`Cluster`), and its faulted variants (`fail`,
`degrade`)."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from fabricsim.errors import FabricsimError, option

if TYPE_CHECKING:
    import numpy as np

    from fabricsim.topology import ClusterSpec, Faults, Topology
    from fabricsim.topology.faulted import FaultReport
    from fabricsim.topology.spec import Routing


@dataclass(frozen=True, eq=False)
class Cluster:
    """A built cluster and the GPU ranks a run uses: all of them, or part of a node (the hardware stays whole,
    the communicator uses the chosen ranks, as nccl-tests' `-g 4` on an 8-GPU server does)."""

    name: str
    source: str  # the preset name or YAML path it was built from
    topology: Topology = field(repr=False)
    ranks: np.ndarray = field(repr=False)  # GPU ranks of the communicator, ascending, read-only

    @property
    def n_gpus(self) -> int:
        """GPUs the run uses."""
        return int(self.ranks.size)

    @property
    def total_gpus(self) -> int:
        """GPUs the cluster has."""
        return self.topology.n_gpus

    @property
    def partial(self) -> bool:
        """Whether the run leaves some of the cluster's GPUs idle."""
        return self.n_gpus != self.total_gpus

    @property
    def spec(self) -> ClusterSpec:
        """The cluster's spec (what `fabricsim topo save` writes), its faults included."""
        return self.topology.spec

    @property
    def faults(self) -> FaultReport | None:
        """What the cluster's faults are and what they resolved to (`lines`); None for a healthy cluster."""
        return self.topology.features.get("faults")

    def summary(self) -> dict[str, Any]:
        """The hardware summary of `fabricsim topo show` (SI units) and the ranks the run uses."""
        from fabricsim.topology.summary import summarize

        return {**summarize(self.topology), "ranks_used": self.n_gpus, "ranks": rank_ranges(self.ranks)}

    def __repr__(self) -> str:
        spec = self.spec
        nodes = int(spec.nodes) if spec is not None else 0
        gpu = spec.gpu if spec is not None else "GPU"
        used = f"ranks {rank_ranges(self.ranks)} of {self.total_gpus:,} {gpu}" if self.partial else f"{self.n_gpus:,} x {gpu}"
        faults = f", faults: {self.faults.faults.text()}" if self.faults is not None else ""
        return f"Cluster({self.name!r}: {used}, {nodes:,} node{'s' * (nodes != 1)}{faults})"


def rank_ranges(ranks: Sequence[int] | np.ndarray) -> str:
    """[0, 1, 2, 3, 8, 9] -> '0-3,8-9'."""
    from fabricsim.units import format_ranks

    return format_ranks(ranks)


def unit_gpus(spec: ClusterSpec) -> int:
    """GPUs of the smallest whole size a preset builds: a node, or a rack where one NVLink domain spans nodes."""
    return max(int(spec.gpus_per_node), int(spec.domain_size))


def sized_spec(source: str | ClusterSpec, nodes: int | None,
                gpus: int | None) -> tuple[ClusterSpec, int | None, int | None]:
    """(spec, ranks per node or None, first ranks or None) for a preset, a YAML file or a spec and --nodes / --gpus."""
    from fabricsim import topology

    if isinstance(source, str) and source in topology.PRESETS:
        unit = unit_gpus(topology.load_spec(source))
        if nodes is not None and gpus is not None:
            return topology.load_spec(source, nodes=nodes), per_node(nodes, gpus), None
        if gpus is not None and 0 < gpus < unit:
            return topology.load_spec(source, gpus=unit), None, gpus
        return topology.load_spec(source, nodes=nodes, gpus=gpus), None, None
    spec = topology.load_spec(source) if isinstance(source, str) else source
    where, resize = ((source, f"edit 'nodes' in {source}") if isinstance(source, str) else
                     (f"the spec of {spec.name}", "replace(spec, nodes=...)"))
    total, unit = int(spec.nodes) * int(spec.gpus_per_node), unit_gpus(spec)
    if nodes is not None and nodes != spec.nodes:
        raise FabricsimError(f"{option('nodes', nodes)}: {where} has {spec.nodes} node{'s' * (spec.nodes != 1)}; "
                             f"{option('nodes')} sizes presets only: {resize} to resize it")
    if nodes is not None and gpus is not None:
        return spec, per_node(nodes, gpus), None
    if gpus is None or gpus == total:
        return spec, None, None
    if 0 < gpus < unit:
        return spec, None, gpus
    raise FabricsimError(f"{option('gpus', gpus)}: {where} has {total} GPUs ({spec.nodes} node"
                         f"{'s' * (spec.nodes != 1)} of {spec.gpus_per_node}); it is sized by its 'nodes' field "
                         f"({resize}), and {option('gpus')} below {unit} runs on part of one node")


def per_node(nodes: int, gpus: int) -> int:
    if gpus < 1 or gpus % nodes:
        raise FabricsimError(f"{option('nodes', nodes)} {option('gpus', gpus)}: the run puts the same number of GPUs "
                             f"on every node, so {option('gpus')} must be a positive multiple of {nodes}")
    return gpus // nodes


def cluster(name_or_yaml: str | Path | ClusterSpec, nodes: int | None = None, gpus: int | None = None, *,
            routing: str | None = None, faults: Faults | Mapping[str, Any] | None = None) -> Cluster:
    """Build a preset (`fabricsim topo list`), a cluster YAML file or a `ClusterSpec`.

    `nodes` / `gpus` size a preset. `gpus` below one node (or one NVL72 rack) builds the whole node and runs on
    its first `gpus` ranks; `nodes` and `gpus` together run `gpus / nodes` ranks on each node (nccl-tests' `-g 4`
    on two 8-GPU servers). `routing` ('ecmp' | 'adaptive') replaces the cluster's fat-tree routing. `faults` (a
    `topology.Faults`, or a mapping as a cluster file's `faults:` section: {'fail': ['spine3'], 'degrade':
    ['node5.gpu3:0.5'], 'seed': 7}) adds to the file's own failed and degraded parts."""
    import numpy as np

    from fabricsim import topology
    from fabricsim.topology import ClusterSpec

    if routing is not None and routing not in ("ecmp", "adaptive"):
        raise FabricsimError(f"unknown routing '{routing}': use 'ecmp' or 'adaptive'")
    for name, value in (("nodes", nodes), ("gpus", gpus)):
        if value is not None and not isinstance(value, numbers.Integral):
            unit = "GPUs" if name == "gpus" else "nodes"
            raise FabricsimError(f"{option(name, value)}: give a whole number of {unit}, e.g. {option(name, 8)}")
    nodes, gpus = (int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v  # numpy ints too
                   for v in (nodes, gpus))
    if nodes is not None and nodes < 1:
        raise FabricsimError(f"{option('nodes', nodes)}: a cluster has at least one node: give {option('nodes', 1)} "
                             "or more")
    if gpus is not None and gpus < 1:
        raise FabricsimError(f"{option('gpus', gpus)}: a run needs at least one GPU: give {option('gpus', 1)} or more "
                             "(fewer than a node's GPUs run on part of one node)")
    source = name_or_yaml if isinstance(name_or_yaml, ClusterSpec) else str(name_or_yaml)
    spec, per_node, first = sized_spec(source, nodes, gpus)
    if per_node is not None and per_node > spec.gpus_per_node:
        raise FabricsimError(f"{option('nodes', nodes)} {option('gpus', gpus)} is {per_node} GPUs per node, but "
                             f"{spec.name} has {spec.gpus_per_node} per node: use {option('gpus')} up to "
                             f"{spec.nodes * spec.gpus_per_node}")
    if faults is not None:
        spec = replace(spec, faults=spec.faults.plus(faults_from(faults)))
    topo = topology.build(replace(spec, routing=cast("Routing", routing)) if routing else spec,  # checked above
                          topology.cluster_file(source))
    if per_node is not None:
        ranks = np.flatnonzero(topo.dev_local[topo.gpu_device] < per_node)
    else:
        ranks = np.arange(first if first is not None else topo.n_gpus)
    ranks = ranks.astype(np.int32)
    ranks.flags.writeable = False
    return Cluster(topo.name, source if isinstance(source, str) else spec.name, topo, ranks)


def as_cluster(c: Cluster | str | Path | ClusterSpec) -> Cluster:
    return c if isinstance(c, Cluster) else cluster(c)


def faults_from(value: Faults | Mapping[str, Any]) -> Faults:
    """A `Faults`, or one read from a mapping as a cluster file's faults section is (every problem one error)."""
    from fabricsim import inputs
    from fabricsim.topology import Faults

    if isinstance(value, Faults):
        return value
    return cast("Faults", inputs.convert(dict(value) if isinstance(value, Mapping) else value, Faults, "faults"))


def fail(cluster: Cluster, *targets: str, seed: int | None = None) -> Cluster:
    """`cluster` with `targets` down (device names, globs, links 'A -> B', counts 'random:2%:spine-links'; see
    `topology.faults`), on the same ranks: a new cluster, the given one unchanged."""
    from fabricsim.topology.faults import faults_of

    return with_faults(cluster, faults_of(fail=targets, seed=seed))


def degrade(cluster: Cluster, *targets: str, seed: int | None = None) -> Cluster:
    """`cluster` with each 'SPEC:FACTOR' target left at that share of its capacity (links, every link of a device) or
    compute speed (a GPU), on the same ranks: a new cluster, the given one unchanged."""
    from fabricsim.topology.faults import faults_of

    return with_faults(cluster, faults_of(degrade=targets, seed=seed))


def with_faults(c: Cluster, extra: Faults) -> Cluster:
    from fabricsim import topology

    topo = topology.build(replace(c.spec, faults=c.spec.faults.plus(extra)))
    return Cluster(topo.name, c.source, topo, c.ranks)


def fault_notes(c: Cluster, cost_model: str) -> list[str]:
    """What a collective on a faulted cluster does not show: how a target was modelled (`FaultReport.notes`), slow
    GPUs' compute, and faults under NCCL's own model."""
    report = c.faults
    if report is None:
        return []
    out = list(report.notes)
    slow = [r for r, _ in report.gpu_speed if r in set(c.ranks.tolist())]
    if slow:
        out.append(f"a slow GPU's compute ({len(slow)} GPU{'s' * (len(slow) != 1)} throttled) does not change a collective's time "
                   "here: fabricsim times collectives on links and NCCL's caps; `train` charges a slow GPU's compute")
    if cost_model == "nccl":
        out.append("NCCL's cost model sees only the NVLink and NIC counts of a degraded node, not the failed switches "
                   "and cables: use --cost-model fabricsim for their effect")
    return out
