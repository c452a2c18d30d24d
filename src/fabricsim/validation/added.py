"""Added public measurements: nccl-tests rows from public sources outside the calibration set (EFA p4d/p4de/p5,
GCP A3 Mega over TCPXO, CoreWeave GB200 racks, NCCL issue threads), scored apart from the calibration figures.

The rows live in this package (`added_measurements.jsonl`), each with its source, its hardware as the source states
it, its trust and notes, and the one field fabricsim adds: `cluster`, the cluster file written for it
(`added_clusters/<name>.yaml`, from the hardware the source states, never from the figures; null where the source
does not say enough to write one, and the row is skipped with why). A row that states its node count runs on that
many nodes of its cluster file; one that does not (the 2-rack CoreWeave rows) runs on the file's own.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

from msgspec import Meta

from fabricsim import hardware
from fabricsim.errors import FabricsimError
from fabricsim.reports.nccl_env import CHANNEL_VARS, RunSetup, environment
from fabricsim.topology import load_spec
from fabricsim.validation.calibration import (Case, CollectiveRow, Skip, _algos, _nccl_version, _sweep, field,
                                              load_rows, partition)

ROWS = Path(__file__).parent / "added_measurements.jsonl"
CLUSTER_DIR = Path(__file__).parent / "added_clusters"

_FAMILY = {"A100-40GB": "Ampere", "A100-80GB": "Ampere", "H100": "Hopper", "H200": "Hopper", "H800": "Hopper",
           "B200": "Blackwell", "B300": "Blackwell", "GB200": "Blackwell", "GB300": "Blackwell"}


class AddedRow(CollectiveRow, frozen=True):
    """A collective row of the added measurements: the calibration schema, the run's NCCL environment as its source
    states it, and the cluster file fabricsim wrote for it."""

    env: dict[str, str] | None = None
    cluster: Annotated[str, Meta(pattern=r"^[A-Za-z0-9._-]+$")] | None = None


def cluster_file(name: str) -> Path:
    """An added row's cluster file: `added_clusters/<name>.yaml`."""
    return CLUSTER_DIR / f"{name}.yaml"


def case_for(row: dict) -> Case | Skip:
    """One added row as a Case on its cluster file, or a Skip saying why it cannot be predicted."""
    rid = field(row, "id", "text")
    env = field(row, "env", "object", {})
    name = row.get("cluster")
    if name is None:
        return Skip(rid, "the source does not state enough of the hardware to write a cluster file (see its notes)")
    path = cluster_file(name)
    if not path.is_file():
        raise FabricsimError(f"no cluster file {path.name} for field 'cluster': write {path} from the row's hardware")
    spec = load_spec(path)
    per_node = field(row, "hardware.gpus_per_node", "count")
    nodes = field(row, "hardware.nodes", "count", None)
    if nodes is None:
        total = field(row, "hardware.total_gpus", "count", None)
        nodes = spec.nodes if total is None else -(-total // per_node)
    if nodes != spec.nodes:
        spec = dataclasses.replace(spec, nodes=nodes)
    if per_node > spec.gpus_per_node:
        raise FabricsimError(f"cluster file {path.name} has {spec.gpus_per_node} GPUs per node but the row ran "
                             f"{per_node}: describe the nodes the run used")
    gpu = field(row, "hardware.gpu", "text")
    try:
        stated = hardware.get_gpu(gpu).name
    except FabricsimError:
        stated = None  # the source does not name the variant (e.g. 'A100 (DGX A100; model variant not stated)')
    if stated is not None and stated != hardware.get_gpu(spec.gpu).name:
        raise FabricsimError(f"cluster file {path.name} has GPU {spec.gpu} but the row says {gpu}")
    collective = field(row, "collective", "text")
    metric, measured = "busbw", field(row, "busbw_GBps", "measure", 0)
    if not measured:  # printed as 0.00: score the time
        metric, measured = "time", field(row, "time_us", "measure", 0)
    if not measured:
        return Skip(rid, "the row has neither a busbw nor a time above zero")
    ranks = tuple(n * spec.gpus_per_node + g for n in range(nodes) for g in range(per_node))
    algos, exclude = _algos(field(row, "algo_env", "text", ""))
    # the run's channel bounds, honoured as `perf --env` honours them (its NVLS, CollNet and algorithm settings are
    # the cluster file's and `algo_env`'s)
    version = _nccl_version(field(row, "nccl_version", "text", ""))
    run = RunSetup(spec, collective, "", nccl_version=version)
    try:
        environment(run, {k: v for k, v in env.items() if k in CHANNEL_VARS})
    except FabricsimError as err:
        raise FabricsimError(f"field 'env': {err}") from None
    return Case(rid, _FAMILY.get(hardware.get_gpu(spec.gpu).name, "PCIe"), spec, ranks, collective,
                field(row, "size_bytes", "bytes", None), _sweep(row, "size_label"), algos, exclude, metric,
                float(measured), field(row, "trust", "text", "high"),
                version, chunk_env=run.chunk_env)


def cases(path: str | Path | None = None) -> tuple[list[Case], list[Skip]]:
    """Every added row as a Case, or a Skip with the reason (`path`: another file of such rows)."""
    return partition(load_rows(path or ROWS, AddedRow), case_for)
