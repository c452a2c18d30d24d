"""`fs.calibrate`: a cluster's physical parameters fitted to the user's own nccl-tests logs
(`CalibrationResult`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fabricsim.api.clusters import Cluster
from fabricsim.api.common import env_mapping
from fabricsim.errors import FabricsimError

if TYPE_CHECKING:
    from fabricsim.fitting.fit import FitResult
    from fabricsim.topology import ClusterSpec


def calibrate(logs: Sequence[str | Path], cluster: Cluster | str | Path | ClusterSpec, *,
              env: Mapping[str, str] | None = None, nccl_version: str | None = None, collective: str | None = None,
              gpus: int | None = None, nodes: int | None = None) -> CalibrationResult:
    """Fit the cluster's declared physical parameters (`fabricsim.topology.calibrated.PARAMETERS`: network, NVLink
    and PCIe achievable fractions of line rate, the network's per-step latency, the per-call launch latency) to the
    user's own nccl-tests `logs`, run on `cluster` (a preset, a cluster YAML, a spec, or a `Cluster`: its spec, and
    its GPU count where it is part of the spec's GPUs). Only parameters the logs
    exercise are fitted, inside their physical bounds; the cluster written is the one the first log ran on (a
    preset sized to it). `result.spec` is the calibrated cluster
    (`fabricsim.topology.save_cluster` writes it; `perf` on it uses the fitted values); `result.text()` prints
    the fit. `env`, `nccl_version`, `collective`, `gpus`: as for `doctor`, applied to every log; `nodes`: the runs'
    node count, where the logs do not print their hosts. Needs
    `fabricsim[calibrate]` (scipy)."""
    from fabricsim.fitting.fit import file_provenance, fit
    from fabricsim.fitting.user_logs import read_case

    if isinstance(logs, (str, Path)):
        logs = [logs]
    if not logs:
        raise FabricsimError("calibrate needs at least one nccl-tests log: give the log files the cluster ran")
    if isinstance(cluster, Cluster):
        gpus = gpus if gpus is not None or not cluster.partial else cluster.n_gpus
        cluster = cluster.spec
    cases, used, specs = [], [], []
    env = env_mapping(env)
    for log in logs:
        case, sha, spec = read_case(log, cluster, env=env, nccl_version=nccl_version, collective=collective, gpus=gpus,
                                    nodes=nodes)
        cases.append(case)
        specs.append(spec)
        used.append(file_provenance(case, Path(log).name, sha))
    if len({u.file for u in used}) != len(used):
        raise FabricsimError("two logs share a file name: calibrate records logs by name, rename one")
    return CalibrationResult(fit(cases, used, specs[0]), specs[0].name)


@dataclass(frozen=True, eq=False)
class CalibrationResult:
    """What `calibrate` fitted: `spec` the calibrated cluster, `fit` every figure (parameters before and after,
    per-row residuals)."""

    fit: FitResult
    cluster: str

    @property
    def spec(self) -> ClusterSpec:
        """The cluster with its `calibrated:` section."""
        return self.fit.spec

    @property
    def parameters(self) -> dict[str, float]:
        """Fitted parameter -> value (SI units)."""
        return dict(self.fit.after)

    def text(self) -> str:
        """The fit as `fabricsim calibrate` prints it."""
        from fabricsim.fitting.report import text

        return text(self.fit)

    def __repr__(self) -> str:
        fitted = ", ".join(f"{k}={v:.4g}" for k, v in self.fit.after.items())
        return f"CalibrationResult({self.cluster}: {fitted})"
