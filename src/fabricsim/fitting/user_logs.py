"""A user's nccl-tests log on a given cluster, ready to fit: parsed, its ranks placed, its NCCL environment applied.

The log is read as `fabricsim doctor` reads one (diagnosis.facts: the NCCL version and environment lines it
prints; diagnosis.infer.given: the ranks the run used on the cluster), then made a `validation.logs.LogCase`,
the form every prediction of a real log takes.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from pathlib import Path

from fabricsim.diagnosis import infer
from fabricsim.diagnosis.facts import log_collective, read_facts, with_implied_ranks
from fabricsim.errors import FabricsimError
from fabricsim.importers.nccl_log import device_names
from fabricsim.reports.compare import gpu_mismatch, rank_mismatch
from fabricsim.topology.spec import ClusterSpec
from fabricsim.reports.nccl_env import honoured
from fabricsim.validation.logs import LogCase, make_case, _version


def read_case(path: str | Path, cluster: str | Path | ClusterSpec, *, env: Mapping[str, str] | None = None,
              nccl_version: str | None = None, collective: str | None = None,
              gpus: int | None = None, nodes: int | None = None) -> tuple[LogCase, str, ClusterSpec]:
    """The log at `path` as a case on `cluster`, the sha256 of its bytes, and the cluster it ran on (a preset sized
    to the log; `gpus` / `nodes`: the run's ranks and nodes where the log does not print them). A calibrated
    cluster file's calibration is dropped from both: a fit starts from the catalog."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise FabricsimError(f"cannot read nccl-tests log {path}: {err.strerror}; check the path") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise FabricsimError(f"nccl-tests log {path} is not UTF-8 text (byte {err.start}): give the log as "
                             "nccl-tests printed it") from None
    try:
        facts = read_facts(text, path.name, env=env, nccl_version=nccl_version, ranks=gpus)
        coll = log_collective(facts, collective)
        facts = with_implied_ranks(facts, coll)
        target = infer.given(cluster, facts, nodes)
        spec = dataclasses.replace(target.spec, calibrated=None)
        _check_hardware(text, spec, target.ranks, str(cluster) if not isinstance(cluster, ClusterSpec) else spec.name,
                        gpus)
        known, _ = honoured(facts.env)
        case = make_case(path.stem, facts.log, spec, target.ranks, coll, known, _version(facts.version),
                         text=text, gaps=target.gaps)
    except FabricsimError as err:
        raise FabricsimError(f"{path.name}: {err}") from None
    if not case.rows:
        raise FabricsimError(f"{path.name}: nothing to fit: no data row with an out-of-place time (nccl-tests prints "
                             "them as '  size count type redop root time algbw busbw #wrong ...'); give the whole log")
    return case, hashlib.sha256(data).hexdigest(), spec


def _check_hardware(text: str, spec: ClusterSpec, ranks: tuple[int, ...], cluster: str, gpus: int | None) -> None:
    """Refuse a log the cluster did not run, as `compare` does: other GPUs than the cluster's (a fit would write
    parameters measured on another GPU), or fewer ranks than the cluster has GPUs unless --gpus says so."""
    total = spec.nodes * spec.gpus_per_node
    if gpus is None and len(ranks) != total:
        raise FabricsimError(rank_mismatch(len(ranks), cluster, "", total, spec.gpus_per_node,
                                           max(spec.gpus_per_node, spec.domain_size)))
    other = gpu_mismatch(device_names(text), spec.gpu, cluster, same_links_ok=True)
    if other is not None:
        raise FabricsimError(f"{other}: a fit would write {spec.gpu} parameters measured on other GPUs; give the "
                             "cluster the log ran on (a preset or a cluster YAML with its 'gpu')")
