"""`fs.train`: training step time on growing GPU counts, and its interconnect variants (`TrainResult`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from numbers import Integral
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from fabricsim.api.clusters import Cluster, faults_from
from fabricsim.api.common import Progress, dataframe
from fabricsim.errors import FabricsimError, option

if TYPE_CHECKING:
    import pandas

    from fabricsim.topology import ClusterSpec, Faults
    from fabricsim.training.models import ModelSpec
    from fabricsim.training.step import StepResult
    from fabricsim.training.stragglers import WhatIf
    from fabricsim.training.sweep import Exposure, Refused, Wall


@dataclass(frozen=True, eq=False)
class TrainResult:
    """Training step time on growing GPU counts: `runs` label -> per count a step result, or a `Refused` (a count
    that cannot run, with the reason) ('baseline', then each interconnect variant asked for), `walls` label -> the
    scaling wall, `exposures` label -> what gets exposed first as GPUs are added, `failed` label -> why a variant
    could not run at all, `notes` -> warnings (e.g. a given layout over HBM)."""

    model: str
    cluster: str
    runs: Mapping[str, tuple[StepResult | Refused, ...]]
    walls: Mapping[str, Wall]
    exposures: Mapping[str, tuple[Exposure, ...]]
    failed: Mapping[str, str]
    notes: tuple[str, ...] = ()
    whatif: WhatIf | None = None  # per count what the faults and jitter cost (the 'what-if' runs)

    def ran(self, label: str = "baseline") -> list[StepResult]:
        """The step results of the counts that ran, for one variant."""
        from fabricsim.training.step import StepResult

        return [r for r in self.runs.get(label, ()) if isinstance(r, StepResult)]

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per (variant, GPU count): the step figures of `fabricsim train --format json` (SI units), or
        'gpus' and 'error' for a count that could not run."""
        return [{"variant": label, **(r.as_dict() if hasattr(r, "as_dict") else {"gpus": r.n_gpus, "error": r.reason})}
                for label, results in self.runs.items() for r in results]

    def to_pandas(self) -> pandas.DataFrame:
        """The records as a DataFrame (needs the `fabricsim[pandas]` extra)."""
        return dataframe(self.to_records())

    def title(self, label: str = "baseline") -> str:
        """'llama3-70b on superpod-h100', and the variant (or the faults) for another label."""
        from fabricsim.training.runs import variant_name

        return f"{self.model} on {self.cluster}" + ("" if label == "baseline" else f" with {variant_name(label, self.whatif)}")

    def report(self, path: str | Path, title: str | None = None) -> Path:
        """Write the HTML report of this run (tokens/s per GPU and MFU against GPUs per variant, the table) to `path`
        (needs the `fabricsim[report]` extra)."""
        from fabricsim.reports import html_report
        from fabricsim.reports.run_rows import train_rows

        html_report.check_available()
        rows = train_rows(self.cluster, self.to_records())
        html_report.write(path, html_report.build(rows, title or f"fabricsim train {self.title()}"))
        return Path(path)

    def figure(self) -> Any:
        """tokens/s and MFU against the counts run, per variant: a matplotlib Figure (needs `fabricsim[plot]`)."""
        from fabricsim.reports.training_plot import figure

        return figure(self.title(), self.runs, self.walls, self.failed)

    def __repr__(self) -> str:
        base = next(iter(self.runs.values()), ())
        counts = ",".join(str(r.n_gpus) for r in base)
        extra = f", variants {', '.join(list(self.runs)[1:])}" if len(self.runs) > 1 else ""
        failed = f", failed {', '.join(self.failed)}" if self.failed else ""
        refused = sum(not hasattr(r, "as_dict") for results in self.runs.values() for r in results)
        return (f"TrainResult({self.title()}, GPUs {counts}{extra}{failed}"
                + (f", {refused} count{'s' * (refused != 1)} refused" if refused else "") + ")")


def train(model: str | Path | ModelSpec, cluster: Cluster | str | Path | ClusterSpec, gpus: int | Iterable[int], *,
          tp: int | None = None, pp: int | None = None, dp: int | None = None, ep: int | None = None,
          cp: int | None = None, vp: int | None = None, zero: int | None = None, sp: bool | None = None,
          seq: int | None = None, global_batch: int | None = None, micro_batch: int | None = None,
          precision: str | None = None, recompute: str | None = None, efficiency: float | None = None,
          search: bool = False, compare: Iterable[str] = (), progress: Progress | None = None,
          faults: Faults | Mapping[str, Any] | None = None, jitter: float | None = None, steps: int | None = None,
          seed: int | None = None, **options: Any) -> TrainResult:
    """Step time, tokens/s, MFU, memory and exposed communication of `model` (a built-in name, a YAML file or a
    ModelSpec) on `cluster` at each GPU count, and the scaling wall; `compare` adds interconnect variants ('pcie',
    'xdr', 'nvl72', 'sharp', 'no-gpudirect', 'routing'); `search` considers every TP x PP (x EP) layout that fits
    and keeps the fastest. Layout sizes left None are chosen per count (Megatron's defaults); `options` are the
    other `fabricsim train` settings by name (etp, tp_overlap, dp_overlap, dispatcher, capacity_factor, ...).
    A count that cannot run is a `Refused` row with the reason; the others run. `faults` (as in `cluster`: slow GPUs
    'node5.gpu3:0.5', slow NICs or links, failed parts) and `jitter` (the lognormal sigma of every GPU's compute
    per step, over `steps` steps drawn with `seed`) add the 'what-if' runs and `TrainResult.whatif`: what one
    straggler costs on the step's critical path, and the step-time distribution."""
    from fabricsim.training.runs import train_sweep

    whole = (lambda g: isinstance(g, Integral) and not isinstance(g, bool))
    if whole(gpus):
        counts = [int(cast(int, gpus))]
    elif isinstance(gpus, (list, tuple, range)) and all(whole(g) for g in gpus):
        counts = [int(g) for g in gpus]
    else:
        raise FabricsimError(f"gpus={gpus!r}: give a GPU count or a list of counts, e.g. {option('gpus', [8, 64, 512])}")
    if not counts or min(counts) < 1:
        raise FabricsimError(f"give positive GPU counts, e.g. {option('gpus', [8, 64, 512])}")
    given = dict(tp=tp, pp=pp, dp=dp, ep=ep, cp=cp, vp=vp, zero=zero, sp=sp, global_batch=global_batch,
                 micro_batch=micro_batch, precision=precision, recompute=recompute, **options)
    extra = faults_from(faults) if faults is not None else None
    if isinstance(cluster, Cluster) and cluster.spec.faults:  # a faulted cluster: the baseline is it healthy
        extra = cluster.spec.faults.plus(extra) if extra is not None else cluster.spec.faults
    sweep = train_sweep(model, train_cluster(cluster), counts, search=search, compare=compare,
                        efficiency=efficiency, seq=seq, progress=progress, faults=extra, jitter=jitter, steps=steps,
                        seed=seed, **given)
    return TrainResult(sweep.model, sweep.cluster, {k: tuple(v) for k, v in sweep.runs.items()}, dict(sweep.walls),
                       {k: tuple(v) for k, v in sweep.exposures.items()}, dict(sweep.failed), tuple(sweep.warnings),
                       sweep.whatif)


def train_cluster(cluster: Cluster | str | Path | ClusterSpec) -> str | ClusterSpec:
    """What the training sweep sizes per GPU count: a preset name or YAML path, or a spec template (a cluster
    whose routing was overridden keeps the override); healthy (`train` runs a faulted cluster's faults as its
    what-if)."""
    from fabricsim import topology
    from fabricsim.topology.faults import NO_FAULTS

    if isinstance(cluster, Path):
        return str(cluster)
    if not isinstance(cluster, Cluster):
        return cluster
    if cluster.partial:
        raise FabricsimError(f"{cluster!r} runs on part of the cluster; train sizes the cluster for each GPU count "
                             f"itself: pass {cluster.source!r} and the counts")
    if cluster.spec.faults and cluster.source not in topology.PRESETS:
        return replace(cluster.spec, faults=NO_FAULTS)
    if cluster.source not in topology.PRESETS and not Path(cluster.source).is_file():
        return cluster.spec  # built from a ClusterSpec: the template itself
    default = topology.load_spec(cluster.source)
    return cluster.source if cluster.spec.routing == default.routing else replace(default, routing=cluster.spec.routing)
