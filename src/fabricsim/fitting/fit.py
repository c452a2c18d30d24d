"""Fitting a cluster's declared physical parameters (topology.calibrated.PARAMETERS) to nccl-tests logs.

What is fitted: only the parameters the logs exercise. Each parameter is moved once from its catalog value; one
no row's predicted time follows (by more than SENSITIVITY) is left at the catalog value and said so (a one-node
log says nothing of the network). What is minimised: the log-ratio of predicted to measured time of every
comparable out-of-place row (log time ratio = -log busbw ratio, so large sizes count as busbw, small ones as
time), each log weighted equally, under a soft-L1 loss so one anomalous row (a dip the source itself notes) does
not pull every parameter. How: `scipy.optimize.least_squares` (trust-region reflective, which keeps every
parameter inside its physical bounds; finite-difference steps large enough to see over the model's piecewise
choices of algorithm and slice count). scipy is the `fabricsim[calibrate]` extra, imported here only.

Every evaluation re-predicts every row through the tuner and engine on the topology of the calibrated spec: the
fit uses the mechanisms predictions use, nothing is decomposed or approximated. Each log's cluster is built once;
an evaluation's topology is its calibrated variant (`topology.with_calibration`), which shares the routes and
flows already derived, so only what the calibrated values change is timed again.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fabricsim import hardware
from fabricsim.errors import FabricsimError
from fabricsim.topology import Topology, build, with_calibration
from fabricsim.topology.calibrated import BY_NAME, EFFICIENCY_KINDS, PARAMETERS, Calibrated, Fitted, LogUsed
from fabricsim.topology.spec import ClusterSpec
from fabricsim.units import format_bytes
from fabricsim.reports.compare import CompareRow
from fabricsim.validation.logs import LogCase, score

SENSITIVITY = 0.005  # a parameter is exercised when moving it changes some row's predicted time by > 0.5%
PROBE = {"fraction": 0.8, "s": 20e-6}  # the probe move: efficiency x0.8, latency +20 us
SCALE = {"fraction": 1.0, "s": 10e-6}  # optimiser units: efficiencies as fractions, latencies in 10 us
DIFF_STEP = 0.03  # finite-difference step in those units: 0.03 of efficiency, 0.3 us of latency
LOSS, F_SCALE = "soft_l1", 0.1  # residuals beyond ~10% count linearly, not squared
MAX_EVALUATIONS = 40  # each re-predicts every row (~1 s for a 32-row 16-GPU log): a bound on the fit's time
METHOD = (f"scipy.optimize.least_squares (trf, bounds, {LOSS} loss, f_scale {F_SCALE}) on log(predicted/measured "
          "time) of every out-of-place row, each log weighted equally")


@dataclass(frozen=True)
class FitRow:
    """One measured row with the times predicted before and after calibration."""

    log: str
    size_bytes: int
    measured_time_s: float
    before_time_s: float
    after_time_s: float
    measured_busbw: float
    before_busbw: float
    after_busbw: float
    before_pick: str
    after_pick: str

    def error_pct(self, which: str) -> float:
        """% error of the predicted busbw (+: predicted faster) before or after."""
        t = self.before_time_s if which == "before" else self.after_time_s
        return (self.measured_time_s / t - 1.0) * 100.0


@dataclass(frozen=True)
class FitResult:
    """The fit: the calibrated cluster spec, each parameter before and after, the rows' residuals."""

    spec: ClusterSpec
    calibrated: Calibrated
    before: dict[str, float]  # parameter -> catalog value (latency additions: 0)
    after: dict[str, float]  # fitted parameters only
    not_fitted: dict[str, str]  # parameter -> why it was left at its catalog value
    rows: tuple[FitRow, ...]
    evaluations: int
    cost_before: float
    cost_after: float


def file_provenance(case: LogCase, file: str, sha256: str) -> LogUsed:
    """What a fit records of one log: file name, sha256, the collective, ranks and rows used."""
    sizes = [r.size_bytes for r in case.rows]
    span = f"{format_bytes(min(sizes))} .. {format_bytes(max(sizes))}" if sizes else "none"
    return LogUsed(file, sha256, case.collective, len(case.ranks), f"{len(sizes)} rows, {span}, out-of-place")


def catalog_values(spec: ClusterSpec) -> dict[str, float]:
    """Each parameter's value without calibration: the catalog efficiency of the kind's most used link technology
    in the built cluster, 0 for the latency additions."""
    topo = build(dataclasses.replace(spec, calibrated=None))
    counts = np.bincount(topo.link_tech, minlength=len(topo.techs))
    out: dict[str, float] = {}
    for name, kinds in EFFICIENCY_KINDS.items():
        techs = [(int(counts[i]), hardware.get_link(t).efficiency) for i, t in enumerate(topo.techs)
                 if hardware.get_link(t).kind in kinds]
        out[name] = max(techs)[1] if techs else math.nan
    out.update({p.name: 0.0 for p in PARAMETERS if p.unit == "s"})
    return out


def _round(x: float) -> float:
    """`x` to the 4 significant digits the fit resolves (xtol 1e-3), so written files stay readable."""
    return float(f"{x:.4g}")


def _calibration(values: dict[str, float], catalog: dict[str, float], used: Sequence[LogUsed], rows: int) -> Calibrated:
    files = tuple(u.file for u in used)
    return Calibrated(**{n: Fitted(float(v), float(catalog[n]), files, rows) for n, v in values.items()},
                      logs=tuple(used), method=METHOD)


def _predict(cases: Sequence[LogCase], topos: Sequence[Topology], cal: Calibrated | None,
             level: str) -> list[CompareRow]:
    """Every row of every case against its prediction on its cluster (`topos`, built without calibration) with `cal`
    in its spec."""
    out: list[CompareRow] = []
    for case, topo in zip(cases, topos):
        out.extend(score(case, level, with_calibration(topo, cal)).rows)
    return out


def _times(cases: Sequence[LogCase], topos: Sequence[Topology], cal: Calibrated | None, level: str) -> np.ndarray:
    return np.array([r.predicted_time_s for r in _predict(cases, topos, cal, level)])


def _weights(cases: Sequence[LogCase], rows: Sequence[CompareRow]) -> np.ndarray:
    """Each row's weight, 1/sqrt(rows of its log): every log counts equally."""
    n = [len(score_rows) for score_rows in _split_rows(cases, rows)]
    return np.concatenate([np.full(k, 1.0 / math.sqrt(k)) for k in n if k]) if rows else np.zeros(0)


def _split_rows(cases: Sequence[LogCase], rows: Sequence[CompareRow]) -> list[list[CompareRow]]:
    out, i = [], 0
    for case in cases:
        out.append(list(rows[i:i + len(case.rows)]))
        i += len(case.rows)
    return out


def _robust(res: np.ndarray) -> float:
    """The soft-L1 cost least_squares minimises, for printing before and after."""
    z = (res / F_SCALE) ** 2
    return float(0.5 * F_SCALE ** 2 * np.sum(2 * (np.sqrt(1 + z) - 1)))


def fit(cases: Sequence[LogCase], used: Sequence[LogUsed], spec: ClusterSpec, level: str = "flow") -> FitResult:
    """Fit the exercised parameters of `spec` to `cases` (logs on that cluster, their environment applied;
    `used`: their provenance, in the same order) and return the calibrated spec with the fit's figures (`level`: the
    engine fidelity the predictions use, 'flow' or 'analytical')."""
    try:
        from scipy.optimize import least_squares
    except ImportError:
        raise FabricsimError("fabricsim calibrate needs scipy: pip install 'fabricsim[calibrate]'") from None
    topos = [build(dataclasses.replace(case.spec, calibrated=None)) for case in cases]
    base_rows = _predict(cases, topos, None, level)
    if not base_rows:
        raise FabricsimError("nothing to fit: the logs have no out-of-place rows with a time (give nccl-tests logs "
                             "with their data rows, e.g. all_reduce_perf -b 8 -e 8G -f 2)")
    measured = np.array([r.measured_time_s for r in base_rows])
    if not (np.isfinite(measured).all() and (measured > 0).all()):
        raise FabricsimError("nothing to fit: a row's measured time is not a positive number; check the log's rows")
    weight = _weights(cases, base_rows)
    catalog = catalog_values(spec)
    rowsn = len(base_rows)
    before = np.array([r.predicted_time_s for r in base_rows])
    base_res = np.log(before / measured) * weight

    not_fitted: dict[str, str] = {}
    free: list[str] = []
    evaluations = 1
    for p in PARAMETERS:
        if not math.isfinite(catalog[p.name]):
            not_fitted[p.name] = f"the cluster has no {'/'.join(EFFICIENCY_KINDS[p.name])} links"
            continue
        probe = catalog[p.name] * PROBE["fraction"] if p.unit == "fraction" else PROBE["s"]
        moved = _times(cases, topos, _calibration({p.name: probe}, catalog, used, rowsn), level)
        evaluations += 1
        if np.max(np.abs(moved / before - 1.0)) <= SENSITIVITY:
            not_fitted[p.name] = "no row of these logs depends on it (moved, no predicted time changed by > 0.5%)"
        else:
            free.append(p.name)
    if not free:
        raise FabricsimError("nothing to fit: no declared parameter changes any prediction of these logs "
                             f"({', '.join(p.name for p in PARAMETERS)}); give logs that run the cluster's links")

    scale = np.array([SCALE[BY_NAME[n].unit] for n in free])
    lower = np.array([BY_NAME[n].lower for n in free]) / scale
    upper = np.array([BY_NAME[n].upper for n in free]) / scale
    x0 = np.clip(np.array([catalog[n] for n in free]) / scale, lower, upper)
    count = [0]

    def residuals(z: np.ndarray) -> np.ndarray:
        count[0] += 1
        t = _times(cases, topos, _calibration(dict(zip(free, z * scale)), catalog, used, rowsn), level)
        return np.log(t / measured) * weight

    try:
        sol = least_squares(residuals, x0, bounds=(lower, upper), method="trf", loss=LOSS, f_scale=F_SCALE,
                            diff_step=DIFF_STEP, max_nfev=MAX_EVALUATIONS, xtol=1e-3, ftol=1e-4)
    except (ValueError, FloatingPointError) as err:
        raise FabricsimError(f"the fit failed ({err}): check the logs ran on this cluster (--cluster), or fit fewer "
                             "logs at once") from None
    values = {n: _round(float(v)) for n, v in zip(free, sol.x * scale)}
    cal = _calibration(values, {n: _round(v) for n, v in catalog.items()}, used, rowsn)
    after_rows = _predict(cases, topos, cal, level)
    after = np.array([r.predicted_time_s for r in after_rows])
    after_res = np.log(after / measured) * weight
    if not np.isfinite(after_res).all():
        raise FabricsimError("the fit failed: a calibrated prediction is not finite; check the logs and the cluster")
    names = [c.id for c in cases for _ in c.rows]
    fit_rows = [FitRow(name, b.size_bytes, b.measured_time_s, b.predicted_time_s, a.predicted_time_s, b.measured_busbw,
                       b.predicted_busbw, a.predicted_busbw, f"{b.algo}/{b.proto}", f"{a.algo}/{a.proto}")
                for name, b, a in zip(names, base_rows, after_rows)]
    return FitResult(dataclasses.replace(spec, calibrated=cal), cal, {n: _round(catalog[n]) for n in BY_NAME}, values,
                     not_fitted, tuple(fit_rows), evaluations + count[0] + 1, _robust(base_res), _robust(after_res))

