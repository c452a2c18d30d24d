"""`fs.compare` and `fs.doctor`: a real nccl-tests log scored against the prediction (`CompareResult`), and
where it falls short of its hardware."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricsim import __version__
from fabricsim.api.clusters import Cluster, as_cluster, fault_notes, rank_ranges, unit_gpus
from fabricsim.api.common import Progress, dataframe, env_mapping, names
from fabricsim.api.perf_run import with_env
from fabricsim.errors import FabricsimError, option

if TYPE_CHECKING:
    import pandas

    from fabricsim.diagnosis import Diagnosis
    from fabricsim.reports.compare import CompareRow, CompareSummary
    from fabricsim.reports.nccl_env import EnvEffect, RunSetup
    from fabricsim.reports.nccltests_log import ParsedLog
    from fabricsim.reports.nccltests_table import PerfRow
    from fabricsim.topology import ClusterSpec


@dataclass(frozen=True, eq=False)
class CompareResult:
    """A real nccl-tests log against fabricsim's prediction of the same sizes: `rows` (measured and predicted
    time and busbw, signed % error, the pick), `summary` (median / p90 |error|, the worst size), `skipped`
    ((size, reason) of log rows with nothing to compare), `meta` (log, cluster, cost model, ...)."""

    rows: tuple[CompareRow, ...]
    summary: CompareSummary
    skipped: tuple[tuple[int, str], ...]
    meta: dict[str, Any]
    notes: tuple[str, ...] = ()

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per compared size (units in the key names), as `fabricsim compare --format json` prints."""
        from fabricsim.reports.compare import records

        return records(list(self.rows))

    def to_pandas(self) -> pandas.DataFrame:
        """The records as a DataFrame (needs the `fabricsim[pandas]` extra)."""
        return dataframe(self.to_records())

    def figure(self) -> Any:
        """Measured vs predicted busbw and time against size, a matplotlib Figure (needs `fabricsim[plot]`)."""
        from fabricsim.reports.compare import figure

        return figure(list(self.rows), self.title())

    def report(self, path: str | Path, title: str | None = None) -> Path:
        """Write the HTML report of this comparison (measured and predicted busbw per size, the table) to `path`
        (needs the `fabricsim[report]` extra)."""
        from fabricsim.reports import html_report
        from fabricsim.reports.run_rows import compare_rows

        html_report.check_available()
        m = self.meta
        rows = compare_rows(m["cluster"], None, m["gpus"], m["collective"], self.to_records())
        html_report.write(path, html_report.build(rows, title or self.title().replace("\n", ": ")))
        return Path(path)

    def title(self) -> str:
        """'all_reduce on dgx-h100 (80 GPUs): nccl-tests log vs prediction (cost model fabricsim, ...)'."""
        m = self.meta
        how = f"cost model {m['cost_model']}" + (f", engine level {m['level']}" if m.get("level") else "")
        return f"{m['collective']} on {m['cluster']} ({m['gpus']} GPUs)\nnccl-tests log vs prediction ({how})"

    def __repr__(self) -> str:
        s = self.summary
        return (f"CompareResult({self.meta['collective']} log vs {self.meta['cluster']} ({self.meta['gpus']} GPUs), "
                f"{s.rows} sizes, |busbw error| median {s.median_abs_pct:.1f}%, p90 {s.p90_abs_pct:.1f}%)")


def compare(log: str | Path | ParsedLog, cluster: Cluster | str | Path | ClusterSpec, *, collective: str | None = None,
            placement: str = "out", algo: str | Sequence[str] | None = None, proto: str | Sequence[str] | None = None,
            level: str | None = None, cost_model: str = "fabricsim", progress: Progress | None = None,
            nccl_version: str | tuple[int, ...] | None = None, env: Mapping[str, str] | None = None) -> CompareResult:
    """Score a real nccl-tests log (a path, or a parsed log) against fabricsim's prediction of its sizes on
    `cluster`, whose GPUs used must equal the log's ranks. `placement` 'out' or 'in': which columns of the log;
    `collective` only for a log that does not name its own; `nccl_version` the NCCL release whose rules apply
    (default: the one the log prints, else the newest modelled). The run's NCCL environment is the log's own
    'NCCL_X set by environment to V' lines, then `env`, honoured as in `perf` (a variable of the log fabricsim
    does not know is a note; `algo` / `proto` given here win over the log's NCCL_ALGO / NCCL_PROTO); the rest as
    in `perf`."""
    from fabricsim.tuner.nccl_versions import release
    from fabricsim.reports import compare as report
    from fabricsim.reports.nccltests_log import ParsedLog
    from fabricsim.reports.sweep import check_options, forced_notes, predict
    from fabricsim.schedules import COLLECTIVES

    if placement not in ("out", "in"):
        raise FabricsimError(f"unknown placement '{placement}': use 'out' (out-of-place columns) or 'in' (in-place)")
    from fabricsim.reports.nccltests_log import ranks_of

    if isinstance(log, ParsedLog):
        text, parsed = None, log
    else:
        text, parsed = report.read_log(log)
    coll = report.log_collective(parsed, collective, tuple(COLLECTIVES))
    version = nccl_version if nccl_version is not None else parsed.nccl_version
    rel = release(version)
    c = as_cluster(cluster)
    nranks = ranks_of(parsed, coll)
    if nranks is not None and nranks != c.n_gpus:
        raise FabricsimError(report.rank_mismatch(nranks, c.source, "", c.n_gpus, int(c.spec.gpus_per_node),
                                                  unit_gpus(c.spec)))
    level_run = check_options(coll, c.n_gpus, dtype="float", redop="sum", root=0, level=level, cost_model=cost_model,
                              library="nccl")
    algos, protos = names(algo, "algo", coll), names(proto, "proto", coll)
    c, run_env, effects, env_notes = _log_env(text, env_mapping(env), coll, c, version)
    algos = algos or (list(run_env.algos) if run_env.algos else None)
    protos = protos or (list(run_env.protos) if run_env.protos else None)
    notes = forced_notes(c.topology, c.ranks, coll, algos) + fault_notes(c, cost_model) + env_notes
    notes += gpu_notes(text, c.spec.gpu, c.name) if text is not None else []
    kept, skipped = report.comparable(parsed.rows, placement)
    notes += report.wrong_results(kept, placement)
    done = [0]

    def tick(i: int, _n: int) -> None:  # sizes done in one group of the log's rows -> rows done in all
        done[0] += i > 0
        if progress is not None:
            progress(done[0], len(kept))

    def rows_for(size_list: list[int], *, dtype: str, redop: str, root: int) -> list[PerfRow]:
        points = predict(c.topology, c.ranks, coll, size_list, dtype=dtype, redop=redop, root=root, algos=algos,
                         protos=protos, level=level_run or "flow", library="nccl", cost_model=cost_model,
                         progress=tick, nccl_version=version, chunk_env=run_env.chunk_env)
        return [p.row for p in points]

    predicted = report.predict_like_log(rows_for, kept)
    rows = report.compare_rows(kept, predicted, coll, c.n_gpus, placement)
    meta = {"fabricsim_version": __version__, "log": str(log) if not isinstance(log, ParsedLog) else None,
            "collective": coll, "log_nranks": nranks, "nccl_version": parsed.nccl_version, "cluster": c.name,
            "gpus": c.n_gpus, "ranks": rank_ranges(c.ranks), "placement": placement, "cost_model": cost_model,
            "level": level_run or None, "nccl": rel.label,
            "faults": list(c.faults.lines) if c.faults is not None else None,
            **({"env": [asdict(e) for e in effects]} if effects else {})}
    return CompareResult(tuple(rows), report.summarize(rows), tuple(skipped), meta, tuple(notes))


def _log_env(text: str | None, env: Mapping[str, str], collective: str, c: Cluster,
             nccl_version: str | tuple[int, ...] | None = None
             ) -> tuple[Cluster, RunSetup, tuple[EnvEffect, ...], list[str]]:
    """The log's NCCL environment ('set by environment' lines, then `env`) applied to `c`: the cluster as it leaves
    it, what it chose, how each variable was honoured, and a note per variable of the log fabricsim does not know."""
    from fabricsim.importers.nccl_log import scan
    from fabricsim.reports.nccl_env import honoured

    known, unknown = honoured(scan(text).env if text is not None else {})
    c, run, effects = with_env(c, collective, {**known, **env}, text or "", nccl_version)
    notes = [f"the log sets {v}={value}, which fabricsim does not know how to honour: predicted without it"
             for v, value in unknown if v not in env]
    return c, run, effects, notes


def gpu_notes(text: str, gpu: str, cluster: str) -> list[str]:
    """A note where the log's device lines name another GPU than the cluster's `gpu` (compare and doctor go on;
    calibrate stops: it would write parameters fitted to another GPU)."""
    from fabricsim.importers.nccl_log import device_names
    from fabricsim.reports.compare import gpu_mismatch

    other = gpu_mismatch(device_names(text), gpu, cluster)
    return [] if other is None else [f"{other}: the prediction is for {cluster}'s GPUs; give the cluster the log ran on"]


def doctor(log: str | Path, cluster: Cluster | str | Path | ClusterSpec | None = None, *,
           env: Mapping[str, str] | None = None, nccl_version: str | None = None, collective: str | None = None,
           topo: Sequence[str | Path] = (), gpu: str | None = None, gpus: int | None = None,
           threshold: float = 25.0, level: str = "flow") -> Diagnosis:
    """Diagnose a real nccl-tests log: predict what its cluster should deliver (the log's NCCL version and the NCCL
    environment fabricsim honours), find the size ranges that fall more than `threshold` % below, and rank the
    likely causes with the log's lines as evidence.

    `cluster` None infers the cluster from the log's NCCL INFO and device lines (and the `topo` dumps: NCCL topology
    XML, nvidia-smi topo -m, ibstat, ibv_devinfo); a `Cluster` keeps its ranks. `env` adds NCCL variables the log
    does not print (NCCL_P2P_DISABLE=1, ...); `nccl_version` where the log does not say; `gpu` (a catalog name)
    where the log does not name it; `gpus` the run's rank count where the log does not print it (nccl-tests' -g 4
    on an 8-GPU preset runs on its first 4). `fabricsim.diagnosis.report.text` / `json_doc` print the result."""
    from fabricsim.diagnosis import diagnose
    from fabricsim.importers import read_machine
    from fabricsim.inputs import read_text

    if level not in ("flow", "analytical"):
        raise FabricsimError(f"unknown level '{level}': use 'flow' or 'analytical'")
    if gpu is not None and cluster is not None:
        raise FabricsimError(f"{option('gpu', gpu)} names the GPU for inferring the cluster, but the cluster is given "
                             f"(its GPU is the one predicted): drop {option('gpu')}, or drop {option('cluster')} to "
                             "infer the cluster")
    path = Path(log)
    text = read_text(path, "nccl-tests log")
    machines = [read_machine(p) for p in topo]
    ranks = None
    target: str | Path | ClusterSpec | None
    if isinstance(cluster, Cluster):
        target, ranks = cluster.spec, [int(r) for r in cluster.ranks]
    else:
        target = cluster
    try:
        return diagnose(text, path.name, cluster=target, ranks=ranks, env=env_mapping(env), collective=collective,
                        nccl_version=nccl_version, machines=machines, gpu=gpu, nranks=gpus,
                        threshold=threshold / 100.0, level=level)
    except FabricsimError as err:
        raise FabricsimError(f"{path.name}: {err}") from None
