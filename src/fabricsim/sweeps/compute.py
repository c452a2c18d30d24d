"""What a worker does with a task: each point's cluster resolved and built (once per worker for points on the same
cluster), the point computed, and its row returned; a point that fails is a row with its error, and the task goes
on. This runs in pool worker processes and Ray workers alike, so it holds plain data in and out.

Workers keep the last `TOPOLOGY_CACHE` topologies they built, keyed by the cluster spec's content: the points of a
task, and later tasks on the same cluster, reuse one topology and with it everything the topology stores (routes,
NCCL graphs, the engine's unit-message timings, so points that differ only in message size are scaled from one
timing). The cache is a plain bounded mapping from spec text to topology, so it holds no topology alive longer than
its place in the last few.
"""

from __future__ import annotations

import importlib
import json
from collections import OrderedDict
from dataclasses import asdict, replace
from typing import Any

from fabricsim.errors import FabricsimError
from fabricsim.reports.results import typed_row
from fabricsim.sweeps import kinds

TOPOLOGY_CACHE = 4  # topologies a worker keeps: a 1,024-GPU one with its derived data is tens of MiB
_TOPOLOGIES: OrderedDict[str, Any] = OrderedDict()


def run_task(task: dict) -> list[dict]:
    """The typed rows of a task's points, in order."""
    columns = kinds.columns(task["compute"])
    return [typed_row(point_row(task, p), columns) for p in task["points"]]


def point_row(task: dict, point: dict) -> dict[str, Any]:
    """One point's row: its key and place, its configuration (the resolved cluster's every field), its results or
    its error."""
    compute = task["compute"]
    row: dict[str, Any] = {"key": point["key"], "point": point["index"], "kind": compute, "cluster": task["label"]}
    row.update({f"cluster.{k}": v for k, v in point["cluster"].items()})
    row.update({f"{compute}.{k}": v for k, v in point["options"].items()})
    try:
        spec, first = resolve(task["base"], point["cluster"])
        row.update({f"cluster.{k}": v for k, v in asdict(spec).items() if k != "calibrated"})
        row["cluster.gpus"] = first or spec.nodes * spec.gpus_per_node
        module, _, name = kinds.KINDS[compute].compute.partition(":")
        row.update(getattr(importlib.import_module(module), name)(spec, first, point["options"]))
        row["status"] = "ok"
    except FabricsimError as err:
        row.update(status="failed", error=str(err))
    except Exception as err:  # a defect: recorded with the point, reported by the driver, the sweep goes on
        row.update(status="failed", error=f"internal error: {type(err).__name__}: {err}")
    return row


def lost_rows(task: dict, reason: str) -> list[dict]:
    """Rows for a task no worker could finish (its workers died): each point failed with `reason`."""
    columns = kinds.columns(task["compute"])
    rows = []
    for p in task["points"]:
        row = {"key": p["key"], "point": p["index"], "kind": task["compute"], "cluster": task["label"],
               "status": "failed", "error": reason, **{f"cluster.{k}": v for k, v in p["cluster"].items()},
               **{f"{task['compute']}.{k}": v for k, v in p["options"].items()}}
        rows.append(typed_row(row, columns))
    return rows


def resolve(base: dict, settings: dict) -> tuple[Any, int | None]:
    """(ClusterSpec, first ranks or None) of the base cluster with the point's cluster settings: fields replaced,
    then sized by `nodes` or `gpus` (a preset sized by its own rules, e.g. a SuperPOD's tiers, then the fields
    replaced again); `gpus` below one node or rack builds it whole and runs on its first GPUs."""
    from fabricsim import topology
    from fabricsim.topology import ClusterSpec

    fields = {k: v for k, v in settings.items() if k not in ("nodes", "gpus")}
    preset = base.get("preset")
    spec = topology.load_spec(preset) if preset else ClusterSpec(**base["spec"])
    if fields:
        spec = replace(spec, **fields)
    nodes, gpus, first = settings.get("nodes"), settings.get("gpus"), None
    if gpus is not None:
        unit = max(spec.gpus_per_node, spec.domain_size)
        if gpus < unit:
            nodes, first = unit // spec.gpus_per_node, gpus
        elif gpus % unit:
            whole = "racks" if unit > spec.gpus_per_node else "nodes"
            raise FabricsimError(f"cluster.gpus {gpus} is not whole {whole} "
                                 f"of {unit} GPUs (and fewer than {unit} run on part of one): use a multiple of {unit}")
        else:
            nodes = gpus // spec.gpus_per_node
    if nodes is not None and nodes != spec.nodes:
        spec = replace(topology.load_spec(preset, nodes=nodes), **fields) if preset else replace(spec, nodes=nodes)
    return spec, first


def topology_of(spec: Any) -> Any:
    """The built topology of `spec`, from this worker's cache when it built the same spec lately."""
    from fabricsim import topology

    key = json.dumps(spec.fields(), sort_keys=True)  # plain data, the faults a mapping
    topo = _TOPOLOGIES.pop(key, None)
    if topo is None:
        topo = topology.build(spec)
    _TOPOLOGIES[key] = topo  # most recently used last
    while len(_TOPOLOGIES) > TOPOLOGY_CACHE:
        _TOPOLOGIES.popitem(last=False)
    return topo


def perf_point(spec: Any, first: int | None, options: dict) -> dict[str, Any]:
    """The nccl-tests figures of one collective at one size, as `fabricsim perf` predicts them."""
    from fabricsim.reports.nccltests_table import record
    from fabricsim.reports.results import perf_row

    _, point = predict_point(spec, first, options)
    return perf_row(record(point.row))


def predict_point(spec: Any, first: int | None, options: dict) -> tuple[Any, Any]:
    """(topology, `reports.sweep.Point`) of a perf point: the row and the pick behind it (its simulation result)."""
    import numpy as np

    from fabricsim import vocab
    from fabricsim.reports.sweep import check_options, forced_notes, predict

    topo = topology_of(spec)
    ranks = np.arange(first if first is not None else topo.n_gpus, dtype=np.int32)
    coll = options["collective"]
    level = check_options(coll, int(ranks.size), dtype=options["dtype"], redop=options["op"], root=options["root"],
                          level=options["level"], cost_model=options["cost_model"], library=options["library"])
    algos, protos = (sel.spec().split(",") if sel else None for sel in
                     (vocab.parse_algorithms(options["algo"], coll), vocab.parse_protocols(options["proto"], coll)))
    forced_notes(topo, ranks, coll, algos)  # raises where a forced algorithm needs hardware the cluster lacks
    [point] = predict(topo, ranks, coll, [options["size"]], dtype=options["dtype"], redop=options["op"],
                      root=options["root"], algos=algos, protos=protos, level=level or "flow",
                      library=options["library"], cost_model=options["cost_model"])
    return topo, point


def train_point(spec: Any, first: int | None, options: dict) -> dict[str, Any]:
    """The step figures of one training job on the point's GPUs, as `fabricsim train` times them (its own layout
    choice, or the fastest with `search`)."""
    from fabricsim.reports.results import train_row
    from fabricsim.training.runs import train_sweep
    from fabricsim.training.sweep import Refused

    gpus = first if first is not None else spec.nodes * spec.gpus_per_node
    given = {k: v for k, v in options.items() if v is not None and k not in ("model", "search", "seq", "efficiency")}
    sweep = train_sweep(options["model"], spec, [gpus], search=bool(options["search"]), seq=options["seq"],
                        efficiency=options["efficiency"], **given)
    [step] = sweep.runs["baseline"]
    if isinstance(step, Refused):
        raise FabricsimError(step.reason)
    return train_row(step.as_dict())
