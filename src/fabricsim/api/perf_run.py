"""`fs.perf`: an nccl-tests sweep predicted on a cluster (`PerfResult`), and `fs.sizes`, the sweep's sizes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricsim import __version__
from fabricsim.api.clusters import Cluster, as_cluster, fault_notes, rank_ranges
from fabricsim.api.common import Progress, Sizes, dataframe, env_mapping, names, parse_sizes
from fabricsim.errors import FabricsimError, option

if TYPE_CHECKING:
    import pandas

    from fabricsim.reports.ecmp import EcmpSpread
    from fabricsim.reports.nccl_env import EnvEffect, RunSetup
    from fabricsim.reports.nccltests_table import PerfRow
    from fabricsim.reports.sweep import ExplainRow
    from fabricsim.topology import ClusterSpec, Topology


def sizes(minbytes: int | str, maxbytes: int | str | None = None, *, factor: float | None = None,
          step: int | str | None = None) -> list[int]:
    """nccl-tests' sweep `-b minbytes -e maxbytes -f factor` (or `-i step`), K/M/G/T suffixes allowed:
    `sizes("8", "8G", factor=8)` -> [8, 64, ..., 8589934592]."""
    from fabricsim.reports.sweep import sizes as sweep
    from fabricsim.units import parse_size

    lo = parse_size(minbytes)
    hi = lo if maxbytes is None else parse_size(maxbytes)
    return sweep(lo, hi, factor, parse_size(step) if step is not None else None)


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
        return dataframe(self.to_records())

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


def _applies(collective: str, op: str, root: int) -> None:
    """Refuse a reduction op (-o) for a collective that does not reduce and a root (-r) for one without a root,
    which the sweep would ignore without a word (the nccl-tests emulator, as nccl-tests, still ignores them)."""
    from fabricsim.vocab import COLLECTIVES, REDUCING, ROOTED

    if op != "sum" and collective in COLLECTIVES and collective not in REDUCING:
        raise FabricsimError(f"{option('op', op, flag='-o')}: {collective} does not reduce, so no reduction op "
                             f"applies: drop {option('op', flag='-o')} (it applies to {', '.join(REDUCING)})")
    if root != 0 and collective in COLLECTIVES and collective not in ROOTED:
        rooted = ", ".join(c for c in COLLECTIVES if c in ROOTED)
        raise FabricsimError(f"{option('root', root, flag='-r')}: {collective} has no root: drop "
                             f"{option('root', flag='-r')} (it applies to {rooted})")


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
    from fabricsim import hardware
    from fabricsim.engine.chunking import ChunkEnv
    from fabricsim.hardware.memory import over_hbm_note
    from fabricsim.reports import ecmp
    from fabricsim.reports.sweep import check_options, empty_rows_note, forced_notes, predict
    from fabricsim.tuner.nccl_versions import release

    _applies(collective, op, root)
    c = as_cluster(cluster)
    level_run = check_options(collective, c.n_gpus, dtype=dtype, redop=op, root=root, level=level,
                              cost_model=cost_model, library=library)
    size_list = parse_sizes(sizes)
    algos, protos = names(algo, "algo", collective), names(proto, "proto", collective)
    effects: tuple[EnvEffect, ...] = ()
    chunk_env = ChunkEnv()  # NCCL's own buffer and chunk sizes
    env = env_mapping(env)
    if env:  # (without one, nothing of reports.nccl_env is needed: perf's start-up does not load it)
        c, run_env, effects = with_env(c, collective, env, nccl_version=nccl_version)
        algos = _one_choice(algos, run_env.algos, "algo", "NCCL_ALGO", "algorithms")
        protos = _one_choice(protos, run_env.protos, "proto", "NCCL_PROTO", "protocols")
        chunk_env = run_env.chunk_env
    notes = forced_notes(c.topology, c.ranks, collective, algos) + fault_notes(c, cost_model)
    over = over_hbm_note(hardware.get_gpu(c.topology.gpu_part()), size_list)  # perf's CLI stops its sweep there
    if over:
        notes.append(over)
    empty = empty_rows_note(collective, size_list, dtype, c.n_gpus)
    if empty:
        notes.append(empty)
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
                       progress=tick, nccl_version=nccl_version, chunk_env=chunk_env)

    points, spread = ecmp.over_seeds(c.topology, seeds, run) if seeds > 1 else (run(c.topology), [])
    return PerfResult(c, collective, cost_model, level_run, library, tuple(p.row for p in points),
                      tuple(p.pick for p in points), tuple(notes), tuple(algos) if algos else None,
                      tuple(protos) if protos else None, rel.label, nccl_version, tuple(spread), effects)


def with_env(c: Cluster, collective: str, env: Mapping[str, str], log_text: str = "",
             nccl_version: str | tuple[int, ...] | None = None) -> tuple[Cluster, RunSetup, tuple[EnvEffect, ...]]:
    """`c` as the NCCL environment `env` leaves it (NCCL_P2P_DISABLE rebuilds it, on the same ranks), what the
    environment chose, and how each variable was honoured (`log_text`: the run's log, where it says more, e.g. that
    a tuner plugin did not load; `nccl_version`: the release it ran, whose variables these are)."""
    from fabricsim import topology
    from fabricsim.reports.nccl_env import RunSetup, environment

    run = RunSetup(c.spec, collective, log_text, nccl_version=nccl_version)
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
