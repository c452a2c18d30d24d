"""The cluster a log ran on: given (a preset, a cluster file, a spec) or inferred from the log itself.

Inference reuses `topo import`'s path: the log's NCCL INFO and nccl-tests device lines become a neutral
`Machine` (importers.nccl_log), merged with any accompanying dumps, and `importers.mapping.to_spec` maps it to the
nearest ClusterSpec, saying what it assumed and what the cluster file cannot express. A log that does not say
what ran it (no INFO lines, no device lines for every rank) is an error asking for `--cluster`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from fabricsim.diagnosis.facts import Facts
from fabricsim.errors import FabricsimError, option
from fabricsim.importers.machine import Machine, Nic, merge
from fabricsim.importers.mapping import matching_preset, to_spec
from fabricsim.importers.nccl_log import machine
from fabricsim.topology import PRESETS, ClusterSpec, load_spec
from fabricsim.topology.presets import preset_spec


@dataclass(frozen=True)
class Target:
    """The cluster a diagnosis predicts on and the GPU ranks the run used."""

    spec: ClusterSpec
    ranks: tuple[int, ...]
    source: str  # 'inferred from the log', 'preset dgx-h100', 'cluster file x.yaml', 'spec x'
    assumptions: tuple[str, ...] = ()
    gaps: tuple[str, ...] = ()


_ASK = "pass --cluster (a preset from `fabricsim topo list` or a cluster YAML file)"


def _job_nodes(facts: Facts) -> int:
    """NCCL nodes of the run where the log says (communicator line, else distinct hosts of the device lines)."""
    comm = facts.info.comms.get(facts.ranks)
    if comm and comm.get("nodes"):
        return int(comm["nodes"])
    devs = facts.info.devices
    if devs and len(devs) == facts.ranks:
        return len({host for host, _, _ in devs.values()})
    return 0


def _preset_nics(m: Machine, gpu: str | None) -> tuple[Machine, list[str]]:
    """A multi-node log that names no NIC: the NICs of the preset on the same GPU, as an assumption."""
    model = gpu or next((g.model for g in m.gpus if g.model), "")
    name = matching_preset(model) if model else ""
    if not name or m.nics or m.net_nic_count or m.nodes <= 1:
        return m, []
    p = preset_spec(name)
    if not p.nics_per_node:
        return m, []
    eth = p.fabric == "roce"
    nics = tuple(Nic(name=f"nic{k}", gbps=p.nic_gbps, link_layer="ethernet" if eth else "infiniband",
                     transport="roce" if eth else "ib") for k in range(p.nics_per_node))
    note = (f"NICs not in the log: {p.nics_per_node} x {p.nic_gbps:g} Gb/s {'RoCE' if eth else 'InfiniBand'} per node, "
            f"as preset {name}")
    return replace(m, nics=nics), [note]


def inferred(facts: Facts, gpu: str | None = None) -> Target:
    """The cluster the log's own lines describe (and the accompanying dumps)."""
    info = facts.info
    if not info.info_lines and not info.devices and not facts.machines:
        raise FabricsimError("the log has no NCCL INFO lines and no '#  Rank ... device' lines, so it does not "
                             f"say what hardware ran it: {_ASK}, or rerun with NCCL_DEBUG=INFO")
    n = facts.ranks
    if info.devices and not info.comms and len(info.devices) < n:
        raise FabricsimError(f"the log lists the devices of {len(info.devices)} of its {n} ranks (a trimmed "
                             f"header), so the nodes it ran on are unknown: {_ASK}")
    m = machine(info, facts.source)
    if facts.machines:
        m = merge([m, *facts.machines])
    if not m.gpus:
        raise FabricsimError(f"{facts.source} does not say how many GPUs each node ran (no 'comm ... nRanks ... "
                             f"localRanks' line, no device lines): {_ASK}")
    m, notes = _preset_nics(m, gpu)
    try:
        imp = to_spec(m, gpu=gpu, name=Path(facts.source).stem or "inferred")
    except FabricsimError as err:
        raise FabricsimError(f"cannot infer the cluster from the log: {err}; or {_ASK}") from None
    s = imp.spec
    total = s.nodes * s.gpus_per_node
    if n and n != total:
        raise FabricsimError(f"the cluster inferred from {facts.source} has {total} GPUs ({s.nodes} x {s.gpus_per_node}) "
                             f"but the run has {n} ranks: {_ASK}")
    return Target(s, tuple(range(total)), "inferred from the log", tuple(notes) + imp.assumptions, imp.gaps)


def given(cluster: str | Path | ClusterSpec, facts: Facts, nodes: int | None = None) -> Target:
    """A given cluster (preset name, YAML path or spec), presets sized to the log; the ranks the run used on it.
    `nodes`: the run's node count where the log does not say it (it must agree where the log does)."""
    notes: list[str] = []
    n = facts.ranks
    logged = _job_nodes(facts)
    if nodes is not None:
        if nodes < 1:
            raise FabricsimError(f"{option('nodes', nodes)}: give a positive node count")
        if n % nodes:
            raise FabricsimError(f"{option('nodes', nodes)}: the run's {n} ranks do not split evenly over "
                                 f"{nodes} nodes; give a node count that divides {n}")
        if logged and logged != nodes:
            raise FabricsimError(f"{option('nodes', nodes)}, but the log ran on {logged} nodes: drop "
                                 f"{option('nodes')}")
    nodes = nodes or logged
    if isinstance(cluster, ClusterSpec):
        spec, source = cluster, f"spec {cluster.name}"
    elif str(cluster) in PRESETS:
        base = preset_spec(str(cluster))
        unit = max(base.gpus_per_node, base.domain_size)
        if nodes and nodes * base.gpus_per_node >= n:
            spec = preset_spec(str(cluster), nodes=nodes)
        elif n > unit:
            spec = preset_spec(str(cluster), gpus=n)
        else:
            spec = base
        source = f"preset {cluster}"
    else:
        spec, source = load_spec(cluster), f"cluster file {Path(cluster).name}"
    total = spec.nodes * spec.gpus_per_node
    if not n:
        n = total
        notes.append(f"the log does not say its rank count: all {total} GPUs of {spec.name} assumed")
    if n > total:
        raise FabricsimError(f"the log ran {n} ranks but {spec.name} has {total} GPUs: give a cluster with the run's "
                             "nodes (edit 'nodes' in the cluster file)")
    return Target(spec, ranks_used(spec, n, nodes, notes), source, tuple(notes))


def ranks_used(spec: ClusterSpec, n: int, nodes: int, notes: list[str]) -> tuple[int, ...]:
    """The run's ranks on the cluster: all of them; the same count on each node the log names; else the first n."""
    per = spec.gpus_per_node
    total = spec.nodes * per
    if n == total:
        return tuple(range(total))
    if nodes and nodes <= spec.nodes and n % nodes == 0 and n // nodes <= per:
        k = n // nodes
        return tuple(node * per + g for node in range(nodes) for g in range(k))
    notes.append(f"the run's {n} ranks taken as the first {n} GPUs of {spec.name} ({total} GPUs)")
    return tuple(range(n))
