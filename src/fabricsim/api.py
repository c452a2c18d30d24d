"""fabricsim's public Python API: `import fabricsim as fs`.

    c = fs.cluster("dgx-h100", gpus=4)                      # 4 ranks of one DGX H100
    r = fs.perf(c, "all_reduce", fs.sizes("8", "8G", factor=8))
    r.to_pandas()                                            # the nccl-tests figures, one row per size

`cluster` builds a cluster and says which GPU ranks a run uses, with its failed and degraded parts (`faults`, or
`fail` / `degrade` on a cluster: a new cluster); `perf` predicts an nccl-tests sweep;
`compare` scores a real nccl-tests log against the prediction; `doctor` finds where a real log falls short of its
hardware and ranks the likely causes; `train` times training steps; `sweep` runs a sweep file's design space into a
results file and `report` draws results as an HTML page. Each returns
plain data (records, or a pandas DataFrame with the `fabricsim[pandas]` extra) and prints nothing; a
`progress(done, total)` callback, where taken, is told how far a long run has got. Bad input raises
`FabricsimError` with a message naming the problem and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from numbers import Integral
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from fabricsim import __version__
from fabricsim.errors import FabricsimError, option

if TYPE_CHECKING:
    import numpy as np
    import pandas

    from fabricsim.diagnosis import Diagnosis
    from fabricsim.multijob.run import JobsRun
    from fabricsim.multijob.spec import JobsFile
    from fabricsim.fitting.fit import FitResult
    from fabricsim.reports.compare import CompareRow, CompareSummary
    from fabricsim.reports.ecmp import EcmpSpread
    from fabricsim.reports.nccl_env import EnvEffect, RunSetup
    from fabricsim.reports.failures import Row as FailuresRow
    from fabricsim.reports.nccltests_log import ParsedLog
    from fabricsim.reports.nccltests_table import PerfRow
    from fabricsim.topology.spec import Routing
    from fabricsim.reports.sweep import ExplainRow
    from fabricsim.topology import ClusterSpec, Faults, Topology
    from fabricsim.topology.faulted import FaultReport
    from fabricsim.training.models import ModelSpec
    from fabricsim.training.step import StepResult
    from fabricsim.training.stragglers import WhatIf
    from fabricsim.training.sweep import Exposure, Refused, Wall

__all__ = ["Cluster", "CompareResult", "FabricsimError", "FailuresResult", "JobsResult", "PerfResult", "SweepResult",
           "TrainResult", "cluster", "compare", "degrade", "doctor", "fail", "failures", "jobs", "perf", "report",
           "sizes", "sweep", "train"]

Progress = Callable[[int, int], None]  # progress(done, total)
SweepProgress = Callable[[int, int, int], None]  # progress(points done, points in all, points failed)
Sizes = int | str | Iterable[int | str]


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


def _unit(spec: ClusterSpec) -> int:
    """GPUs of the smallest whole size a preset builds: a node, or a rack where one NVLink domain spans nodes."""
    return max(int(spec.gpus_per_node), int(spec.domain_size))


def _sized_spec(source: str | ClusterSpec, nodes: int | None,
                gpus: int | None) -> tuple[ClusterSpec, int | None, int | None]:
    """(spec, ranks per node or None, first ranks or None) for a preset, a YAML file or a spec and --nodes / --gpus."""
    from fabricsim import topology

    if isinstance(source, str) and source in topology.PRESETS:
        unit = _unit(topology.load_spec(source))
        if nodes is not None and gpus is not None:
            return topology.load_spec(source, nodes=nodes), _per_node(nodes, gpus), None
        if gpus is not None and 0 < gpus < unit:
            return topology.load_spec(source, gpus=unit), None, gpus
        return topology.load_spec(source, nodes=nodes, gpus=gpus), None, None
    spec = topology.load_spec(source) if isinstance(source, str) else source
    where, resize = ((source, f"edit 'nodes' in {source}") if isinstance(source, str) else
                     (f"the spec of {spec.name}", "replace(spec, nodes=...)"))
    total, unit = int(spec.nodes) * int(spec.gpus_per_node), _unit(spec)
    if nodes is not None and nodes != spec.nodes:
        raise FabricsimError(f"{option('nodes', nodes)}: {where} has {spec.nodes} node{'s' * (spec.nodes != 1)}; "
                             f"{option('nodes')} sizes presets only: {resize} to resize it")
    if nodes is not None and gpus is not None:
        return spec, _per_node(nodes, gpus), None
    if gpus is None or gpus == total:
        return spec, None, None
    if 0 < gpus < unit:
        return spec, None, gpus
    raise FabricsimError(f"{option('gpus', gpus)}: {where} has {total} GPUs ({spec.nodes} node"
                         f"{'s' * (spec.nodes != 1)} of {spec.gpus_per_node}); it is sized by its 'nodes' field "
                         f"({resize}), and {option('gpus')} below {unit} runs on part of one node")


def _per_node(nodes: int, gpus: int) -> int:
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
    source = name_or_yaml if isinstance(name_or_yaml, ClusterSpec) else str(name_or_yaml)
    spec, per_node, first = _sized_spec(source, nodes, gpus)
    if per_node is not None and per_node > spec.gpus_per_node:
        raise FabricsimError(f"{option('nodes', nodes)} {option('gpus', gpus)} is {per_node} GPUs per node, but "
                             f"{spec.name} has {spec.gpus_per_node} per node: use {option('gpus')} up to "
                             f"{spec.nodes * spec.gpus_per_node}")
    if faults is not None:
        spec = replace(spec, faults=spec.faults.plus(_faults(faults)))
    topo = topology.build(replace(spec, routing=cast("Routing", routing)) if routing else spec)  # checked above
    if per_node is not None:
        ranks = np.flatnonzero(topo.dev_local[topo.gpu_device] < per_node)
    else:
        ranks = np.arange(first if first is not None else topo.n_gpus)
    ranks = ranks.astype(np.int32)
    ranks.flags.writeable = False
    return Cluster(topo.name, source if isinstance(source, str) else spec.name, topo, ranks)


def _as_cluster(c: Cluster | str | Path | ClusterSpec) -> Cluster:
    return c if isinstance(c, Cluster) else cluster(c)


def _faults(value: Faults | Mapping[str, Any]) -> Faults:
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

    return _with_faults(cluster, faults_of(fail=targets, seed=seed))


def degrade(cluster: Cluster, *targets: str, seed: int | None = None) -> Cluster:
    """`cluster` with each 'SPEC:FACTOR' target left at that share of its capacity (links, every link of a device) or
    compute speed (a GPU), on the same ranks: a new cluster, the given one unchanged."""
    from fabricsim.topology.faults import faults_of

    return _with_faults(cluster, faults_of(degrade=targets, seed=seed))


def _with_faults(c: Cluster, extra: Faults) -> Cluster:
    from fabricsim import topology

    topo = topology.build(replace(c.spec, faults=c.spec.faults.plus(extra)))
    return Cluster(topo.name, c.source, topo, c.ranks)


def sizes(minbytes: int | str, maxbytes: int | str | None = None, *, factor: float | None = None,
          step: int | str | None = None) -> list[int]:
    """nccl-tests' sweep `-b minbytes -e maxbytes -f factor` (or `-i step`), K/M/G/T suffixes allowed:
    `sizes("8", "8G", factor=8)` -> [8, 64, ..., 8589934592]."""
    from fabricsim.reports.sweep import sizes as sweep
    from fabricsim.units import parse_size

    lo = parse_size(minbytes)
    hi = lo if maxbytes is None else parse_size(maxbytes)
    return sweep(lo, hi, factor, parse_size(step) if step is not None else None)


def _size_list(value: Sizes) -> list[int]:
    from fabricsim.units import parse_size

    if isinstance(value, (int, str)):
        items: list = [value]
    elif isinstance(value, (list, tuple, range)) or type(value).__name__ == "ndarray":
        items = list(value)
    else:
        raise FabricsimError(f"sizes={value!r}: give a size ('1G', 1048576) or a list of sizes, e.g. "
                             "fs.sizes('8', '8G', factor=8)")
    if not items:
        raise FabricsimError("no sizes given: pass a size such as '1G', or a list such as fs.sizes('8', '8G', factor=8)")
    return [parse_size(s) for s in items]


def _names(value: str | Sequence[str] | None, kind: str, collective: str) -> list[str] | None:
    """An NCCL_ALGO / NCCL_PROTO list ('ring,tree', ['Ring', 'tree'], '^nvls', 'allreduce:tree;allgather:ring') read by
    vocab's parser -> canonical names, '^' on the first when they are excluded; None or '' -> None."""
    from fabricsim import vocab

    parse = vocab.parse_algorithms if kind == "algo" else vocab.parse_protocols
    selection = parse(value, collective)
    return selection.spec().split(",") if selection else None


@dataclass(frozen=True, eq=False)
class PerfResult:
    """An nccl-tests sweep predicted on a cluster: `rows` (one `PerfRow` per size: the nccl-tests figures, in SI
    units, with algorithm, protocol, channels, bound and bottleneck), `picks` (what the tuner or NCCL's model
    decided per size), `notes` (things a user should know: e.g. a forced algorithm NCCL would not run)."""

    cluster: Cluster
    collective: str
    cost_model: str
    level: str  # engine level of fabricsim's simulation; '' for NCCL's model
    library: str
    rows: tuple[PerfRow, ...]
    picks: tuple[Any, ...] = field(repr=False)
    notes: tuple[str, ...] = ()
    algo: tuple[str, ...] | None = None
    proto: tuple[str, ...] | None = None
    nccl: str = ""  # the NCCL release whose rules applied ('NCCL 2.30.7'; tuner.nccl_versions)
    nccl_version: Any = None  # as given (None: the newest modelled)
    ecmp: tuple[EcmpSpread, ...] = ()  # per size, busbw over ECMP hash seeds (perf(ecmp_seeds=N)); () for one
    env: tuple[EnvEffect, ...] = ()  # how each NCCL variable of perf(env=...) was honoured (reports.nccl_env)

    def meta(self) -> dict[str, Any]:
        """Where the figures come from: cluster, GPUs and ranks, collective, cost model, engine level, version."""
        c, topo = self.cluster, self.cluster.topology
        return {"fabricsim_version": __version__, "cluster": c.name, "gpus": c.n_gpus, "cluster_gpus": c.total_gpus,
                "ranks": rank_ranges(c.ranks), "collective": self.collective, "cost_model": self.cost_model,
                "level": self.level or None, "library": self.library, "nccl": self.nccl,
                "routing": topo.features.get("routing") if topo.features.get("fabric") else None,
                "algo": list(self.algo) if self.algo else None, "proto": list(self.proto) if self.proto else None,
                "faults": list(c.faults.lines) if c.faults is not None else None,
                **({"ecmp_seeds": list(self.ecmp[0].seeds)} if self.ecmp else {}),
                **({"env": [asdict(e) for e in self.env]} if self.env else {})}

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per size, as `fabricsim perf --format json` prints its rows (units in the key names)."""
        from fabricsim.reports.nccltests_table import record

        return [record(r) for r in self.rows]

    def to_pandas(self) -> pandas.DataFrame:
        """The records as a DataFrame (needs the `fabricsim[pandas]` extra)."""
        return _dataframe(self.to_records())

    def explain(self) -> list[ExplainRow]:
        """Per size, NCCL's own model's pick beside fabricsim's, and why they differ."""
        from fabricsim.reports.sweep import Point, explain

        if self.cost_model != "fabricsim":
            raise FabricsimError("explain compares fabricsim's simulation with NCCL's model: run perf with "
                                 "cost_model='fabricsim'")
        points = [Point(r, p) for r, p in zip(self.rows, self.picks)]
        return explain(self.cluster.topology, self.cluster.ranks, self.collective, points, self.algo, self.proto,
                       self.nccl_version)

    def report(self, path: str | Path, title: str | None = None) -> Path:
        """Write the HTML report of this run (busbw and the algorithm per size, the largest simulated size's link
        utilisation, the table) to `path` (needs the `fabricsim[report]` extra)."""
        from fabricsim.reports import html_report
        from fabricsim.reports.run_rows import perf_rows

        html_report.check_available()
        c, first = self.cluster, self.rows[0]
        options = {"collective": self.collective, "dtype": first.dtype, "op": first.redop, "root": first.root,
                   "algo": ",".join(self.algo) if self.algo else None,
                   "proto": ",".join(self.proto) if self.proto else None, "level": self.level or None,
                   "cost_model": self.cost_model, "library": self.library}
        rows = perf_rows(c.name, c.spec, c.n_gpus, options, self.to_records())
        simulated = [(r, p) for r, p in zip(self.rows, self.picks) if p is not None and hasattr(p, "result")]
        links = None
        if simulated:
            from fabricsim.units import format_bytes

            row, pick = simulated[-1]
            links = html_report.link_view(c.topology, pick.result.link_util,
                                          f"{self.collective} {format_bytes(row.size_bytes)} on {c.name}, "
                                          f"{c.n_gpus:,} GPUs ({pick.algorithm}/{pick.protocol})")
        page = html_report.build(rows, title or f"fabricsim perf {self.collective} on {c.name}", links=links)
        html_report.write(path, page)
        return Path(path)

    def __repr__(self) -> str:
        from fabricsim.units import format_bytes

        moved = [r for r in self.rows if r.size_bytes > 0]
        span = (f"{format_bytes(self.rows[0].size_bytes)}..{format_bytes(self.rows[-1].size_bytes)}"
                if len(self.rows) > 1 else format_bytes(self.rows[0].size_bytes))
        peak = max((r.busbw for r in moved), default=0.0) / 1e9
        return (f"PerfResult({self.collective} on {self.cluster.name}, {self.cluster.n_gpus:,} GPUs, "
                f"{len(self.rows)} size{'s' * (len(self.rows) != 1)} {span}, cost model {self.cost_model}, "
                f"peak busbw {peak:.1f} GB/s)")


def perf(cluster: Cluster | str | Path | ClusterSpec, collective: str, sizes: Sizes, *,
         algo: str | Sequence[str] | None = None, proto: str | Sequence[str] | None = None, dtype: str = "float",
         op: str = "sum", root: int = 0, level: str | None = None, cost_model: str = "fabricsim", library: str = "nccl",
         progress: Progress | None = None, nccl_version: str | tuple[int, ...] | None = None,
         ecmp_seeds: int = 1, env: Mapping[str, str] | None = None) -> PerfResult:
    """What nccl-tests' `<collective>_perf` would print on `cluster`, per size.

    `algo` / `proto` restrict the candidates as NCCL_ALGO / NCCL_PROTO do ('ring,tree', '^nvls'); `dtype` and
    `op` are nccl-tests' `-d` / `-o`, `root` its `-r`. `cost_model` 'fabricsim' simulates every candidate on the
    topology at engine `level` ('flow', the default, or 'analytical'); 'nccl' is NCCL's own tuning model.
    `library` 'all' adds fabricsim's schedules NCCL does not run (Rabenseifner, Bruck, ...). `nccl_version`
    ('2.18', '2.26.5', (2, 28)) is the NCCL release whose rules apply (its algorithms, LL128 rule, channels,
    chunks; fabricsim.tuner.nccl_versions); None: the newest modelled. `ecmp_seeds` N > 1 times the sweep under N
    ECMP hash seeds (from the cluster's `ecmp_seed`): each row is its size's median seed, `ecmp` the spread.
    `env` ({'NCCL_BUFFSIZE': '4194304', 'NCCL_P2P_DISABLE': '1', ...}) is the run's NCCL environment, honoured as
    `fabricsim.reports.nccl_env.ENV` says (`result.env` lists how each variable was)."""
    from fabricsim.reports import ecmp
    from fabricsim.reports.sweep import check_options, forced_notes, predict
    from fabricsim.tuner.nccl_versions import release

    c = _as_cluster(cluster)
    level_run = check_options(collective, c.n_gpus, dtype=dtype, redop=op, root=root, level=level,
                              cost_model=cost_model, library=library)
    size_list = _size_list(sizes)
    algos, protos = _names(algo, "algo", collective), _names(proto, "proto", collective)
    c, run_env, effects = _with_env(c, collective, env or {})
    algos = _one_choice(algos, run_env.algos, "algo", "NCCL_ALGO", "algorithms")
    protos = _one_choice(protos, run_env.protos, "proto", "NCCL_PROTO", "protocols")
    notes = forced_notes(c.topology, c.ranks, collective, algos) + _fault_notes(c, cost_model)
    rel = release(nccl_version)
    seeds = ecmp.check_seeds(ecmp_seeds)
    if seeds > 1 and cost_model != "fabricsim":
        raise FabricsimError(f"{option('ecmp_seeds')} re-routes fabricsim's simulated fabric; NCCL's cost model does "
                             f"not route: drop {option('ecmp_seeds')} or use {option('cost_model', 'fabricsim')}")
    why = ecmp.not_hashed(c.topology) if seeds > 1 else ""
    if why:
        notes.append(f"{option('ecmp_seeds', seeds)}: no effect ({why}); timed once")
        seeds = 1

    def run(topo: Topology, k: int = 0) -> list:
        tick = None if progress is None else (lambda done, total: progress(k * total + done, seeds * total))
        return predict(topo, c.ranks, collective, size_list, dtype=dtype, redop=op, root=root, algos=algos,
                       protos=protos, level=level_run or "flow", library=library, cost_model=cost_model,
                       progress=tick, nccl_version=nccl_version, chunk_env=run_env.chunk_env)

    points, spread = ecmp.over_seeds(c.topology, seeds, run) if seeds > 1 else (run(c.topology), [])
    return PerfResult(c, collective, cost_model, level_run, library, tuple(p.row for p in points),
                      tuple(p.pick for p in points), tuple(notes), tuple(algos) if algos else None,
                      tuple(protos) if protos else None, rel.label, nccl_version, tuple(spread), effects)


def _with_env(c: Cluster, collective: str, env: Mapping[str, str],
              log_text: str = "") -> tuple[Cluster, RunSetup, tuple[EnvEffect, ...]]:
    """`c` as the NCCL environment `env` leaves it (NCCL_P2P_DISABLE rebuilds it, on the same ranks), what the
    environment chose, and how each variable was honoured (`log_text`: the run's log, where it says more, e.g. that
    a tuner plugin did not load)."""
    from fabricsim import topology
    from fabricsim.reports.nccl_env import RunSetup, environment

    run = RunSetup(c.spec, collective, log_text)
    effects = environment(run, env)
    if run.spec is not c.spec:
        topo = topology.build(run.spec)
        c = Cluster(topo.name, c.source, topo, c.ranks)
    return c, run, effects


def _one_choice(given: list[str] | None, from_env: tuple[str, ...] | None, name: str, var: str,
                what: str) -> list[str] | None:
    """The algorithms (protocols) a call may use: as given, or as the environment's NCCL_ALGO (NCCL_PROTO) says."""
    if given and from_env:
        raise FabricsimError(f"{option(name)} and {var} both choose the {what}: give one of them")
    return given or (list(from_env) if from_env else None)


def _fault_notes(c: Cluster, cost_model: str) -> list[str]:
    """What a collective on a faulted cluster does not show: slow GPUs' compute, and faults under NCCL's own model."""
    report = c.faults
    if report is None:
        return []
    out = []
    slow = [r for r, _ in report.gpu_speed if r in set(c.ranks.tolist())]
    if slow:
        out.append(f"a slow GPU's compute ({len(slow)} GPU{'s' * (len(slow) != 1)} throttled) does not change a collective's time "
                   "here: fabricsim times collectives on links and NCCL's caps; `train` charges a slow GPU's compute")
    if cost_model == "nccl":
        out.append("NCCL's cost model sees only the NVLink and NIC counts of a degraded node, not the failed switches "
                   "and cables: use --cost-model fabricsim for their effect")
    return out


@dataclass(frozen=True, eq=False)
class FailuresResult:
    """A failures sweep (`failures`): per count of failed elements, every seed's draw (`rows`: median and worst busbw,
    the worst draw's bottleneck and what it failed)."""

    cluster: Cluster
    collective: str
    nbytes: int
    what: str
    seeds: int
    size: int  # elements of `what` the cluster has (physical cables for a link class)
    rows: tuple[FailuresRow, ...]

    def title(self) -> str:
        from fabricsim.reports.failures import title

        topo = self.cluster.topology
        return title(self.cluster.name, self.cluster.n_gpus, self.collective, self.nbytes, self.what, self.seeds,
                     topo.features.get("routing") if topo.features.get("fabric") else None)

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per count (SI units), with every draw."""
        from fabricsim.reports.failures import records

        return records(self.rows, self.rows[0].median if self.rows[0].failed == 0 else 0.0)

    def to_pandas(self) -> pandas.DataFrame:
        """The records as a DataFrame, without the per-draw lists (needs the `fabricsim[pandas]` extra)."""
        return _dataframe([{k: v for k, v in r.items() if k != "draws"} for r in self.to_records()])

    def table(self) -> str:
        """The sweep as `fabricsim whatif failures` prints it."""
        from fabricsim.reports.failures import format_table

        return format_table(self.rows, self.title(), self.what)

    def figure(self) -> Any:
        """busbw against the number failed: a matplotlib Figure (needs `fabricsim[plot]`)."""
        from fabricsim.reports.failures import figure

        return figure(self.rows, self.title(), self.what, self.size)

    def __repr__(self) -> str:
        counts = [r.failed for r in self.rows]
        return (f"FailuresResult({self.collective} on {self.cluster.name}, {self.what} failed {counts[0]}..{counts[-1]}, "
                f"median busbw {self.rows[0].median / 1e9:.1f} -> {self.rows[-1].median / 1e9:.1f} GB/s)")


def failures(cluster: Cluster | str | Path | ClusterSpec, collective: str, size: int | str, *,
             fail_counts: str | Iterable[int] = "0..4", what: str = "spines", seeds: int = 5,
             algo: str | Sequence[str] | None = None, proto: str | Sequence[str] | None = None, level: str | None = None,
             progress: Progress | None = None) -> FailuresResult:
    """`collective` at `size` on `cluster` with each count of `fail_counts` ('0..8', or a list) of `what` (spines,
    leaves, cores, nics, nvswitches, or cables: nic-links, spine-links, core-links, links, nvlinks) failed, each count
    drawn with `seeds` seeds (`random:K:what`), timed as `perf` times it."""
    import numpy as np

    from fabricsim.reports import failures as F
    from fabricsim.reports.sweep import check_options, predict
    from fabricsim.units import parse_size

    c = _as_cluster(cluster)
    level_run = check_options(collective, c.n_gpus, dtype="float", redop="sum", root=0, level=level,
                              cost_model="fabricsim", library="nccl")
    nbytes = parse_size(size)
    counts = F.parse_counts(fail_counts if isinstance(fail_counts, str) else ",".join(str(k) for k in fail_counts))
    algos, protos = _names(algo, "algo", collective), _names(proto, "proto", collective)

    def timer(topo: Topology) -> tuple[float, str, Any]:
        point = predict(topo, c.ranks, collective, [nbytes], algos=algos, protos=protos, level=level_run or "flow")[0]
        return point.row.busbw, f"{point.row.algo}/{point.row.proto}", point.pick.result

    rows = F.sweep(c.topology, np.asarray(c.ranks), collective, nbytes, counts, what, seeds, timer, progress)
    return FailuresResult(c, collective, nbytes, what, seeds, F.class_size(c.topology, what), tuple(rows))


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
        return _dataframe(self.to_records())

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
    from fabricsim.reports.nccltests_log import parse_nccl_tests, ranks_of

    if isinstance(log, ParsedLog):
        text, parsed = None, log
    else:
        text = report.log_text(log)
        parsed = parse_nccl_tests(text)
    coll = report.log_collective(parsed, collective, tuple(COLLECTIVES))
    version = nccl_version if nccl_version is not None else parsed.nccl_version
    rel = release(version)
    c = _as_cluster(cluster)
    nranks = ranks_of(parsed, coll)
    if nranks is not None and nranks != c.n_gpus:
        raise FabricsimError(report.rank_mismatch(nranks, c.source, "", c.n_gpus, int(c.spec.gpus_per_node),
                                                  _unit(c.spec)))
    level_run = check_options(coll, c.n_gpus, dtype="float", redop="sum", root=0, level=level, cost_model=cost_model,
                              library="nccl")
    algos, protos = _names(algo, "algo", coll), _names(proto, "proto", coll)
    c, run_env, effects, env_notes = _log_env(text, env or {}, coll, c)
    algos = algos or (list(run_env.algos) if run_env.algos else None)
    protos = protos or (list(run_env.protos) if run_env.protos else None)
    notes = forced_notes(c.topology, c.ranks, coll, algos) + _fault_notes(c, cost_model) + env_notes
    notes += gpu_notes(text, c.spec.gpu, c.name) if text is not None else []
    kept, skipped = report.comparable(parsed.rows, placement)
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


def _log_env(text: str | None, env: Mapping[str, str], collective: str,
             c: Cluster) -> tuple[Cluster, RunSetup, tuple[EnvEffect, ...], list[str]]:
    """The log's NCCL environment ('set by environment' lines, then `env`) applied to `c`: the cluster as it leaves
    it, what it chose, how each variable was honoured, and a note per variable of the log fabricsim does not know."""
    from fabricsim.importers.nccl_log import scan
    from fabricsim.reports.nccl_env import ENV

    logged = scan(text).env if text is not None else {}
    unknown = sorted(v for v in logged if v not in ENV and v not in env)
    known = {**{k: v for k, v in logged.items() if k in ENV}, **env}
    c, run, effects = _with_env(c, collective, known, text or "")
    notes = [f"the log sets {v}={logged[v]}, which fabricsim does not know how to honour: predicted without it"
             for v in unknown]
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
        return diagnose(text, path.name, cluster=target, ranks=ranks, env=env, collective=collective,
                        nccl_version=nccl_version, machines=machines, gpu=gpu, nranks=gpus,
                        threshold=threshold / 100.0, level=level)
    except FabricsimError as err:
        raise FabricsimError(f"{path.name}: {err}") from None


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
        return _dataframe(self.to_records())

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
    extra = _faults(faults) if faults is not None else None
    if isinstance(cluster, Cluster) and cluster.spec.faults:  # a faulted cluster: the baseline is it healthy
        extra = cluster.spec.faults.plus(extra) if extra is not None else cluster.spec.faults
    sweep = train_sweep(model, _train_cluster(cluster), counts, search=search, compare=compare,
                        efficiency=efficiency, seq=seq, progress=progress, faults=extra, jitter=jitter, steps=steps,
                        seed=seed, **given)
    return TrainResult(sweep.model, sweep.cluster, {k: tuple(v) for k, v in sweep.runs.items()}, dict(sweep.walls),
                       {k: tuple(v) for k, v in sweep.exposures.items()}, dict(sweep.failed), tuple(sweep.warnings),
                       sweep.whatif)


@dataclass(frozen=True, eq=False)
class SweepResult:
    """What `sweep` did: the results file and its format, points in all, computed in this call, found finished
    from an earlier run, failed (with the first few errors, (key, error)), where it ran and how long it took."""

    name: str
    output: Path
    format: str
    total: int
    computed: int
    resumed: int
    failed: int
    failures: tuple[tuple[str, str], ...]
    backend: str  # 'pool' or 'ray'
    workers: int
    seconds: float

    @property
    def points_per_s(self) -> float:
        """Points computed per second of this call."""
        return self.computed / self.seconds if self.seconds > 0 else 0.0

    def to_records(self) -> list[dict[str, Any]]:
        """The results file's rows, one dict per point in sweep order."""
        from fabricsim.sweeps.reporting import read

        return read([self.output])

    def to_pandas(self) -> pandas.DataFrame:
        """The results as a DataFrame (needs the `fabricsim[pandas]` extra; a Parquet file also pyarrow)."""
        return _dataframe(self.to_records())

    def report(self, path: str | Path, point: str | None = None, title: str | None = None) -> Path:
        """Write the HTML report of the results to `path` (see `report`)."""
        return report(self.output, path, point=point, title=title)

    def __repr__(self) -> str:
        return (f"SweepResult({self.name!r}: {self.total:,} points, {self.computed:,} computed, {self.resumed:,} "
                f"resumed, {self.failed:,} failed, {self.seconds:.1f} s on {self.backend} -> {self.output})")


def sweep(file: str | Path, output: str | Path | None = None, *, format: str | None = None, ray: bool | None = None,
          workers: int | None = None, retry_failed: bool = False,
          progress: SweepProgress | None = None) -> SweepResult:
    """Run a sweep file: every point of its axes computed (on a local process pool of `workers` processes, or on
    Ray with `ray=True` or when RAY_ADDRESS is set) and written to `output` (default: the sweep file's name with
    .parquet, or .csv with format='csv'), one row per point. Points already in `output` (or in the journal a
    killed run left beside it) are not computed again; failed ones are, with `retry_failed`. A point that fails
    is a row with its error; the sweep goes on. `progress(done, total, failed)` is told as points finish."""
    from fabricsim import sweeps
    from fabricsim.reports.results import format_of
    from fabricsim.sweeps.run import run

    plan = sweeps.load(file)
    if output is None:
        output = Path(Path(file).stem + (".csv" if format == "csv" else ".parquet"))
    fmt = format_of(output, format)
    done = run(plan, output, fmt, ray=ray, workers=workers, retry_failed=retry_failed, progress=progress)
    return SweepResult(plan.name, done.output, done.fmt, done.total, done.computed, done.resumed, done.failed,
                       done.failures, done.backend, done.workers, done.seconds)


def report(results: str | Path | Sequence[str | Path], output: str | Path, *, point: str | None = None,
           title: str | None = None) -> Path:
    """Write the HTML report of one or more results files (`sweep` wrote them): busbw and the algorithm per size,
    the scaling wall, the cost of failures where the results have fault columns, the per-link utilisation of one
    collective point (`point`: the first characters of its key; default: the first at the largest size) and a table
    that sorts and filters. One self-contained file (needs the `fabricsim[report]` extra)."""
    from fabricsim.sweeps.reporting import report as write_report

    paths = [results] if isinstance(results, (str, Path)) else list(results)
    if not paths:
        raise FabricsimError("no results files given: pass the file `fabricsim sweep` wrote")
    return write_report(paths, output, point=point, title=title)


def _train_cluster(cluster: Cluster | str | Path | ClusterSpec) -> str | ClusterSpec:
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


@dataclass(frozen=True, eq=False)
class JobsResult:
    """Jobs sharing one fabric: `runs`, one per placement asked for (`multijob.run.JobsRun`: per job its time alone
    and shared, slowdown and the links that held it back; the contended links; the fabric's utilisation over
    time). Several runs are the same jobs placed by each policy, for comparison."""

    runs: tuple[JobsRun, ...]

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per (placement, job): times in seconds, slowdown, the link that held it back most."""
        return [{"placement": run.placement, "job": j.name, "gpus": j.gpus, "communication": j.what,
                 "iterations": j.iterations, "start_s": j.start, "alone_s": j.alone, "shared_s": j.shared,
                 "slowdown": j.slowdown,
                 "held_back_by": run.topology.link_name(j.held_back[0][0]) if j.held_back else None}
                for run in self.runs for j in run.jobs]

    def to_pandas(self) -> pandas.DataFrame:
        """The records as a DataFrame (needs the `fabricsim[pandas]` extra)."""
        return _dataframe(self.to_records())

    def figure(self) -> Any:
        """Each job's rate and each fabric tier's utilisation over time, per run: a matplotlib Figure (needs
        `fabricsim[plot]`)."""
        from fabricsim.reports.jobs import figure

        return figure(self.runs)

    def to_perfetto(self, path: str | Path) -> Path:
        """Write a Perfetto trace (one track per job, the fabric's utilisation as counters) and return its path."""
        from fabricsim.multijob.trace import to_perfetto

        return to_perfetto(self.runs, path)

    def __repr__(self) -> str:
        parts = [f"{run.placement}: " + ", ".join(f"{j.name} x{j.slowdown:.2f}" for j in run.jobs) for run in self.runs]
        first = self.runs[0]
        return f"JobsResult({len(first.jobs)} jobs on {first.cluster}, {first.gpus:,} GPUs; {'; '.join(parts)})"


def jobs(source: str | Path | Mapping[str, Any] | JobsFile, *, placement: str | Sequence[str] | None = None,
         level: str | None = None, routing: str | None = None, progress: Progress | None = None) -> JobsResult:
    """Run several jobs on one fabric, alone and together: `source` is a jobs file (YAML: cluster, jobs with their
    GPUs, communication and start times; `fabricsim schema jobs`), its contents as a mapping, or a `JobsFile`.
    `placement` ('packed', 'scattered', 'random') places every job given a GPU count by that policy; a list runs
    the same jobs once per policy, to compare them. `level` / `routing` replace the file's."""
    import msgspec

    from fabricsim.multijob.run import build_cluster, run_jobs
    from fabricsim.multijob.spec import JobsFile, jobs_from, load_jobs

    if isinstance(source, JobsFile):
        spec = source
    elif isinstance(source, Mapping):
        spec = jobs_from(dict(source))
    else:
        spec = load_jobs(source)
    if level is not None or routing is not None:
        if level not in (None, "flow", "analytical"):
            raise FabricsimError(f"unknown level '{level}': use 'flow' or 'analytical'")
        if routing not in (None, "ecmp", "adaptive"):
            raise FabricsimError(f"unknown routing '{routing}': use 'ecmp' or 'adaptive'")
        spec = msgspec.structs.replace(spec, level=level or spec.level, routing=routing or spec.routing)
    policies: list[str | None] = [placement] if placement is None or isinstance(placement, str) else list(placement)
    if not policies:
        raise FabricsimError("placement lists no policy: give one or more of packed, scattered, random")
    topo = build_cluster(spec)
    total = len(policies) * len(spec.jobs)

    def tick(i: int) -> Callable[[int, int], None]:
        return lambda done, _n: progress(i * len(spec.jobs) + done, total) if progress is not None else None

    return JobsResult(tuple(run_jobs(spec, p, topo=topo, progress=tick(i)) for i, p in enumerate(policies)))


def _dataframe(records: list[dict[str, Any]]) -> pandas.DataFrame:
    try:
        import pandas
    except ImportError:
        raise FabricsimError("to_pandas needs pandas: pip install 'fabricsim[pandas]' (or use to_records())") from None
    return pandas.DataFrame.from_records(records)
