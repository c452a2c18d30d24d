"""Predict every calibration case and score the error, for fabricsim and for NCCL's own cost model.

Error is the absolute percentage error of busbw (or of time for latency rows):
|predicted - measured| / measured. A row reporting a peak is compared with the peak predicted
busbw over the same nccl-tests sweep.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from fabricsim.engine import nccl_constants as K
from fabricsim.errors import FabricsimError
from fabricsim.units import GB, US
from fabricsim.topology import Topology, build
from fabricsim.topology.spec import ClusterSpec
from fabricsim.tuner import nccl_model
from fabricsim.tuner.select import NCCL_ALGOS, best, candidates
from fabricsim.validation.calibration import Case, Skip, cases, load_rows, sweep_sizes

NCCL_COLLECTIVES = tuple(K.FUNCS)  # the collectives NCCL's cost model prices


@dataclass(frozen=True)
class Prediction:
    case: Case
    predicted: float  # GB/s busbw, or us for time rows
    algo: str
    proto: str
    nccl_predicted: float | None  # NCCL's own model, where it models the collective
    nccl_algo: str | None

    @property
    def error(self) -> float:
        return abs(self.predicted - self.case.measured) / self.case.measured * 100.0

    @property
    def nccl_error(self) -> float | None:
        if self.nccl_predicted is None:
            return None
        return abs(self.nccl_predicted - self.case.measured) / self.case.measured * 100.0


def _sizes(case: Case) -> np.ndarray:
    if case.size_bytes is not None:
        return np.asarray([case.size_bytes], dtype=np.int64)
    return sweep_sizes(*case.sweep)


def _algos(case: Case, topo, ranks) -> list[str] | None:
    """The algorithms the source allowed; where none of its forced ones applies, NCCL falls back to its default."""
    offered = {a for a, _ in candidates(topo, case.collective, ranks)}
    if case.algos:
        forced = [a for a in case.algos if a in offered]
        return forced or None
    if case.exclude:
        return sorted(offered - set(case.exclude))
    return None


def _as_timed(case: Case, time: float, busbw: float) -> tuple[float, float]:
    """(s, GB/s) of one call as the row's benchmark times it: the call's time plus what its harness adds around
    every call (`Case.host_overhead`), the bus bandwidth over that longer time."""
    if case.host_overhead <= 0 or time <= 0:
        return time, busbw
    timed = time + case.host_overhead
    return timed, busbw * (time / timed)  # a ratio <= 1 first: never above busbw by rounding


def predict(case: Case, level: str = "flow", topo: Topology | None = None) -> Prediction:
    """fabricsim's prediction (and NCCL's model's) for one case; `topo`: the case's cluster, built (default: built here)."""
    topo = build(case.spec) if topo is None else topo
    ranks = np.asarray(case.ranks, dtype=np.int32)
    algos = _algos(case, topo, ranks)
    best_bus, best_time, pick = -1.0, None, ("", "")
    for size in _sizes(case):
        choice = best(topo, case.collective, int(size), ranks=ranks, algos=algos, level=level,
                      nccl_version=case.nccl_version, chunk_env=case.chunk_env)
        time, bus = _as_timed(case, choice.result.time, choice.result.busbw / GB)
        if bus > best_bus:
            best_bus, best_time, pick = bus, time, (choice.algorithm, choice.protocol)
    predicted = best_time / US if case.metric == "time" else best_bus
    nccl_pred, nccl_algo = _nccl(case, topo, ranks)
    return Prediction(case, predicted, pick[0], pick[1], nccl_pred, nccl_algo)


def _nccl(case: Case, topo, ranks) -> tuple[float | None, str | None]:
    if case.collective not in NCCL_COLLECTIVES:
        return None, None
    try:
        system = nccl_model.system_from_topology(topo, ranks=ranks, version=case.nccl_version)
        if case.chunk_env is not None:  # the run's channel bounds: the channels NCCL's model counts
            system = dataclasses.replace(system, channel_env=case.chunk_env.channels)
        algos = [a for a in (case.algos or NCCL_ALGOS[case.collective]) if a not in case.exclude]
        best_bus, best_time, algo = -1.0, None, None
        for size in _sizes(case):
            ch = nccl_model.nccl_predict(system, case.collective, int(size), algo=algos)
            time, bus = _as_timed(case, ch.time_s, ch.busbw / GB)
            if bus > best_bus:
                best_bus, best_time, algo = bus, time, ch.algo
    except FabricsimError:
        return None, None
    return (best_time / US if case.metric == "time" else best_bus), algo


def run(path=None, level: str = "flow", progress=None) -> tuple[list[Prediction], list[Skip]]:
    """Every case of the calibration file predicted; the skipped rows with their reasons.
    `progress(done, total)`, if given, is called before the first case and after each."""
    all_cases, skipped = cases(load_rows(path))
    return run_cases(all_cases, skipped, level, progress)


def run_cases(all_cases: list[Case], skipped: list[Skip], level: str = "flow",
              progress=None) -> tuple[list[Prediction], list[Skip]]:
    """`all_cases` predicted (rows on one cluster share its built topology), with `skipped` passed through."""
    preds = []
    if progress is not None:
        progress(0, len(all_cases))
    built: dict[ClusterSpec, Topology] = {}  # rows on one cluster share its topology (and what it derives) for this run
    for i, c in enumerate(all_cases):
        try:
            if c.spec not in built:
                built[c.spec] = build(c.spec)
            preds.append(predict(c, level, built[c.spec]))
        except FabricsimError as err:
            raise FabricsimError(f"row '{c.id}': {err}") from None
        if progress is not None:
            progress(i + 1, len(all_cases))
    return preds, skipped


def stats(errors: list[float]) -> tuple[int, float, float]:
    """(count, median, p90) of absolute % errors."""
    if not errors:
        return 0, float("nan"), float("nan")
    a = np.asarray(errors, dtype=np.float64)
    return len(a), float(np.median(a)), float(np.percentile(a, 90))


def summary(preds: list[Prediction]) -> list[tuple[str, int, float, float, int, float, float]]:
    """Per hardware family, the high-trust rows (the calibration README asks to weigh medium / low trust rows
    accordingly) and overall: (group, n, median, p90, n_nccl, nccl median, nccl p90). 'all' comes last.
    Rows set aside as doubtful by their own source (validation.set_aside) are in no group."""
    preds = [p for p in preds if not p.case.set_aside]
    fams = sorted({p.case.family for p in preds})
    groups = [(fam, lambda p, f=fam: p.case.family == f) for fam in fams]
    groups += [("high-trust", lambda p: p.case.trust == "high"), ("all", lambda p: True)]
    out = []
    for fam, keep in groups:
        sel = [p for p in preds if keep(p)]
        n, med, p90 = stats([p.error for p in sel])
        nn, nmed, np90 = stats([p.nccl_error for p in sel if p.nccl_error is not None])
        out.append((fam, n, med, p90, nn, nmed, np90))
    return out


def set_aside_summary(preds: list[Prediction]) -> list[tuple[str, int, float, float]]:
    """The rows left out of `summary` because their own source doubts them: (reason, n, median, p90) per reason."""
    reasons = sorted({p.case.set_aside for p in preds if p.case.set_aside})
    return [(r, *stats([p.error for p in preds if p.case.set_aside == r])) for r in reasons]
