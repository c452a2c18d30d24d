"""fabricsim against real nccl-tests logs: the calibration set's `logs/` (index.jsonl and the logs, verbatim).

Each log is predicted at every size it printed, on its own cluster file (`log_clusters/<id>.yaml`, written from
the index's `hardware` and `notes`, never fitted to the figures), over the ranks the run used, with the NCCL
version it ran and its NCCL environment honoured where fabricsim can follow it (`reports.nccl_env`). Errors are absolute %,
on the out-of-place columns: busbw at sizes >= 1 MiB (exact, from size / time as `reports.compare` computes it)
and time at sizes <= 64 KiB. Each log gets the median of each; pooled medians and p90 run over every size of
every log, overall and by family and collective.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fabricsim import hardware
from fabricsim.calibration_data import default_path
from fabricsim.engine.chunking import ChunkEnv
from fabricsim.errors import FabricsimError
from fabricsim.importers.nccl_log import scan
from fabricsim.reports.compare import CompareRow, comparable, compare_rows
from fabricsim.reports.nccl_env import EnvEffect, RunSetup, environment
from fabricsim.reports.nccltests_log import ParsedLog, ParsedRow, parse_nccl_tests
from fabricsim.reports.nccltests_table import DTYPE_SIZES, PerfRow
from fabricsim.schedules.layout import COLLECTIVES
from fabricsim.topology import build, load_spec
from fabricsim.topology.model import Topology
from fabricsim.topology.spec import ClusterSpec
from fabricsim.tuner.select import best
from fabricsim.validation.calibration import LogEntry, field, load_rows, row_error

CLUSTER_DIR = Path(__file__).parent / "log_clusters"
BUSBW_MIN_BYTES = 1 << 20  # busbw is scored from 1 MiB up (issue 13)
TIME_MAX_BYTES = 64 << 10  # time is scored up to 64 KiB (issue 13)
PLACEMENT = "out"  # nccl-tests' out-of-place columns


def default_index() -> Path:
    """The logs' index.jsonl beside the calibration measurements (`fabricsim.calibration_data`)."""
    return default_path().parent / "logs" / "index.jsonl"


@dataclass(frozen=True)
class LogCase:
    """One log ready to predict."""

    id: str
    family: str
    collective: str
    trust: str
    spec: ClusterSpec  # the cluster file with the environment's changes applied
    ranks: tuple[int, ...]
    nccl_version: tuple[int, ...] | None  # (major, minor[, patch]) the log ran
    algos: tuple[str, ...] | None  # NCCL_ALGO, in fabricsim names
    protos: tuple[str, ...] | None  # NCCL_PROTO
    env: tuple[EnvEffect, ...]
    gaps: tuple[str, ...]  # what the cluster file says it cannot describe ('# gap:' comments)
    rows: tuple[ParsedRow, ...]  # rows with an out-of-place measurement
    skipped: tuple[tuple[int, str], ...]  # (size, reason) of the rows left out
    chunk_env: ChunkEnv = ChunkEnv()  # the buffer and chunk sizes the environment set (NCCL_BUFFSIZE, ...)


@dataclass(frozen=True)
class LogScore:
    """A log's rows compared with the predictions of the same sizes."""

    case: LogCase
    rows: tuple[CompareRow, ...]

    def busbw_errors(self, signed: bool = False) -> list[float]:
        """% busbw error (+: predicted faster) of the sizes >= 1 MiB, absolute unless `signed`."""
        return [r.error_pct if signed else abs(r.error_pct) for r in self.rows if r.size_bytes >= BUSBW_MIN_BYTES]

    def time_errors(self, signed: bool = False) -> list[float]:
        """% time error (+: predicted slower) of the sizes <= 64 KiB, absolute unless `signed`."""
        errs = [(r.predicted_time_s / r.measured_time_s - 1.0) * 100.0 for r in self.rows
                if r.size_bytes <= TIME_MAX_BYTES]
        return errs if signed else [abs(e) for e in errs]


# --- cases ----------------------------------------------------------------------------------------------------

def cluster_file(log_id: str) -> Path:
    """The cluster file of a log: `log_clusters/<id>.yaml`."""
    return CLUSTER_DIR / f"{log_id}.yaml"


def spec_gaps(text: str) -> tuple[str, ...]:
    """The '# gap: ...' comments of a cluster file, continuation lines ('#   ...') joined."""
    gaps: list[str] = []
    in_gap = False
    for line in text.splitlines():
        if line.startswith("# gap:"):
            gaps.append(line[len("# gap:"):].strip())
            in_gap = True
        elif in_gap and line.startswith("#   "):
            gaps[-1] += " " + line[1:].strip()
        else:
            in_gap = False
    return tuple(gaps)


def _version(text: str | None) -> tuple[int, ...] | None:
    """'2.26.2 (nccl-library=22602)' -> (2, 26, 2); None where nothing says."""
    m = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    return tuple(int(g) for g in m.groups() if g is not None) if m else None


def _gpu_name(text: str) -> str:
    """The catalog GPU of the index's 'hardware.gpu' text ('H100 80GB (DGX H100)' -> 'H100')."""
    return hardware.get_gpu(re.sub(r"\s*\(.*\)\s*$", "", text)).name


def _read_log(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as err:
        raise FabricsimError(f"cannot read log {path}: {err.strerror}; check the index's 'log' field") from None
    except UnicodeDecodeError as err:
        raise FabricsimError(f"log {path} is not UTF-8 text (byte {err.start}): give the log as its source printed it") from None


def case_for(entry: dict, logs_dir: Path) -> LogCase:
    """One index entry as a case: its log parsed, its cluster file loaded, its environment applied."""
    log_id = field(entry, "id", "text")
    if not re.fullmatch(r"[A-Za-z0-9._-]+", log_id):
        raise FabricsimError(f"field 'id' is {log_id!r}: use letters, digits, '.', '_' and '-' (it names the cluster file)")
    text = _read_log(logs_dir / field(entry, "log", "text"))
    log = parse_nccl_tests(text)
    collective = log.collective or field(entry, "collective", "text")
    if collective not in COLLECTIVES:
        raise FabricsimError(f"collective {collective!r} is not one fabricsim predicts ({', '.join(COLLECTIVES)})")
    if log.collective and entry.get("collective") and entry["collective"] != log.collective:
        raise FabricsimError(f"the log ran {log.collective} but field 'collective' says {entry['collective']}: fix the index")
    path = cluster_file(log_id)
    if not path.is_file():
        raise FabricsimError(f"no cluster file for log {log_id}: write {path} from the index's hardware and notes")
    spec = load_spec(path)
    nodes, per_node = field(entry, "hardware.nodes", "count"), field(entry, "hardware.gpus_per_node", "count")
    where = f"cluster file {path.name}"
    if spec.nodes != nodes or spec.gpus_per_node < per_node:
        raise FabricsimError(f"{where} has {spec.nodes} nodes of {spec.gpus_per_node} GPUs but the log ran {nodes} of "
                             f"{per_node}: describe the nodes the run used")
    if _gpu_name(field(entry, "hardware.gpu", "text")) != hardware.get_gpu(spec.gpu).name:
        raise FabricsimError(f"{where} has GPU {spec.gpu} but the index says {entry['hardware']['gpu']}")
    ranks = tuple(n * spec.gpus_per_node + g for n in range(nodes) for g in range(per_node))
    for what, count in (("the log", log.nranks), ("field 'hardware.total_gpus'", entry["hardware"].get("total_gpus"))):
        if count is not None and count != len(ranks):
            raise FabricsimError(f"{what} says {count} ranks but nodes x gpus_per_node is {len(ranks)}: fix the index")
    env = {**field(entry, "env", "object", {}), **scan(text).env}  # the log's own lines say what NCCL read
    return make_case(log_id, log, spec, ranks, collective, env,
                     _version(log.nccl_version) or _version(entry.get("nccl_version")), text=text,
                     family=field(entry, "family", "text"), trust=field(entry, "trust", "text", "high"),
                     gaps=spec_gaps(path.read_text()))


def make_case(log_id: str, log: ParsedLog, spec: ClusterSpec, ranks: tuple[int, ...], collective: str, env: dict,
              nccl_version: tuple[int, int] | None, *, text: str = "", family: str = "", trust: str = "high",
              gaps: tuple[str, ...] = ()) -> LogCase:
    """A parsed log ready to predict on `spec` over `ranks`, its NCCL environment applied as `reports.nccl_env.ENV`
    says (`text`: the log's text, which some variables' effect depends on, e.g. a tuner plugin that did not load)."""
    run = RunSetup(spec, collective, text, nccl_version=nccl_version)
    applied = environment(run, env)
    kept, skipped = comparable(log.rows, PLACEMENT)
    return LogCase(log_id, family, collective, trust, run.spec, ranks, nccl_version, run.algos, run.protos, applied,
                   gaps, tuple(kept), tuple(skipped), run.chunk_env)


def _predict(case: LogCase, topo: Topology, row: ParsedRow, level: str) -> PerfRow:
    """fabricsim's prediction of one log row: the row's size (nccl-tests' buffer size), type and operation."""
    if row.dtype not in DTYPE_SIZES:
        raise FabricsimError(f"size {row.size_bytes}: type '{row.dtype}' is not an nccl-tests type fabricsim knows")
    redop = row.redop if row.redop and row.redop != "none" else "sum"
    root = row.root if row.root is not None and row.root >= 0 else 0
    choice = best(topo, case.collective, row.size_bytes, ranks=np.asarray(case.ranks, dtype=np.int32),
                  elem_size=DTYPE_SIZES[row.dtype], algos=list(case.algos) if case.algos else None,
                  protos=list(case.protos) if case.protos else None, level=level, root=root,
                  nccl_version=case.nccl_version, redop=redop, dtype=row.dtype, chunk_env=case.chunk_env)
    res = choice.result
    return PerfRow(row.size_bytes, row.count, row.dtype, row.redop or "none", row.root if row.root is not None else -1,
                   res.time, res.algbw, res.busbw, choice.algorithm, choice.protocol, choice.channels, res.level)


def score(case: LogCase, level: str = "flow", topo: Topology | None = None) -> LogScore:
    """Every comparable row of the log against fabricsim's prediction of the same size (on `topo`, a variant of
    the case's cluster, where given; else on the cluster built from the case's spec)."""
    topo = build(case.spec) if topo is None else topo
    predicted = [_predict(case, topo, r, level) for r in case.rows]
    return LogScore(case, tuple(compare_rows(list(case.rows), predicted, case.collective, len(case.ranks), PLACEMENT)))


def run_logs(path: str | Path | None = None, level: str = "flow") -> list[LogScore]:
    """Every log of the index (default: beside the calibration data) scored, in id order."""
    index = Path(path) if path else default_index()
    if not index.is_file():
        raise FabricsimError(f"nccl-tests log index '{index}' not found: pass --data PATH to the logs' index.jsonl")
    entries = load_rows(index, LogEntry)
    out = []
    for entry in sorted(entries, key=lambda e: str(e.get("id", ""))):
        try:
            out.append(score(case_for(entry, index.parent), level))
        except FabricsimError as err:
            raise row_error(entry, err) from None
    return out


# --- summaries and tables -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GroupStats:
    """Pooled errors of a group of logs: every size of every log in it."""

    group: str
    logs: int
    busbw_points: int
    busbw_median: float
    busbw_p90: float
    time_points: int
    time_median: float
    time_p90: float


def _median(xs: list[float]) -> float:
    return float(np.median(xs)) if xs else math.nan


def _p90(xs: list[float]) -> float:
    return float(np.percentile(xs, 90)) if xs else math.nan


def _group(name: str, scores: list[LogScore]) -> GroupStats:
    bus = [e for s in scores for e in s.busbw_errors()]
    time = [e for s in scores for e in s.time_errors()]
    return GroupStats(name, len(scores), len(bus), _median(bus), _p90(bus), len(time), _median(time), _p90(time))


def summary(scores: list[LogScore]) -> list[GroupStats]:
    """Per family, per collective, high-trust logs, and 'all' last."""
    groups = []
    for label, key in (("family", lambda s: s.case.family), ("collective", lambda s: s.case.collective)):
        for value in sorted({key(s) for s in scores}):
            groups.append(_group(f"{label} {value}", [s for s in scores if key(s) == value]))
    groups.append(_group("high-trust", [s for s in scores if s.case.trust == "high"]))
    groups.append(_group("all", scores))
    return groups


def _pct(x: float, width: int = 7) -> str:
    return f"{x:>{width - 1}.1f}%" if math.isfinite(x) else f"{'-':>{width}}"


def _signed(x: float) -> str:
    return f"{x:>+7.1f}%" if math.isfinite(x) else f"{'-':>8}"


def _nccl(v: tuple[int, ...] | None) -> str:
    return f"{v[0]}.{v[1]}" if v else "-"


def _pick(s: LogScore) -> str:
    r = max(s.rows, key=lambda r: r.size_bytes)
    return f"{r.algo}/{r.proto}"


def _unfollowed(case: LogCase) -> str:
    return ",".join(e.var.removeprefix("NCCL_") for e in case.env if e.status == "not modelled") or "-"


def logs_table(scores: list[LogScore], show_rows: bool = True, show_notes: bool = True) -> str:
    """Per-log medians, the pooled groups, and (show_notes) each log's environment and cluster-file gaps."""
    lines = []
    if show_rows:
        lines.append(f"{'log':<30} {'family':<9} {'coll':<10} {'GPUs':>4} {'NCCL':>5}  {'>=1MiB':>6} {'busbw':>7} "
                     f"{'signed':>8}  {'<=64KiB':>7} {'time':>7} {'signed':>8}  {'pick at max size':<18} env not modelled")
        for s in scores:
            c = s.case
            lines.append(f"{c.id[:30]:<30} {c.family:<9} {c.collective:<10} {len(c.ranks):>4} {_nccl(c.nccl_version):>5}  "
                         f"{len(s.busbw_errors()):>6} {_pct(_median(s.busbw_errors()))} {_signed(_median(s.busbw_errors(True)))}"
                         f"  {len(s.time_errors()):>7} {_pct(_median(s.time_errors()))} {_signed(_median(s.time_errors(True)))}"
                         f"  {_pick(s):<18} {_unfollowed(c)}")
        lines.append("")
    lines.append("nccl-tests logs: absolute % error, out-of-place; busbw at sizes >= 1 MiB, time at sizes <= 64 KiB "
                 "(signed: + = predicted faster busbw / slower time)")
    lines.append(f"{'group':<22} {'logs':>4}  {'busbw n':>7} {'median':>7} {'p90':>7}  {'time n':>6} {'median':>7} {'p90':>7}")
    for g in summary(scores):
        lines.append(f"{g.group:<22} {g.logs:>4}  {g.busbw_points:>7} {_pct(g.busbw_median)} {_pct(g.busbw_p90)}  "
                     f"{g.time_points:>6} {_pct(g.time_median)} {_pct(g.time_p90)}")
    if show_notes:
        lines += ["", "NCCL environment of each log (how the prediction honours it):"]
        for s in scores:
            for e in s.case.env:
                lines.append(f"  {s.case.id:<30} {e.var}={e.value}: {e.status} ({e.why})")
        lines += ["", "what each log's cluster file cannot say (log_clusters/<id>.yaml '# gap:' lines):"]
        for s in scores:
            for gap in s.case.gaps:
                lines.append(f"  {s.case.id:<30} {gap}")
    return "\n".join(line.rstrip() for line in lines)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def logs_json(scores: list[LogScore]) -> str:
    """The same as logs_table, as a JSON document (per-size rows included)."""
    doc = {
        "busbw_min_bytes": BUSBW_MIN_BYTES, "time_max_bytes": TIME_MAX_BYTES, "placement": "out-of-place",
        "logs": [{
            "id": s.case.id, "family": s.case.family, "collective": s.case.collective, "gpus": len(s.case.ranks),
            "cluster": s.case.spec.name, "nccl_version": _nccl(s.case.nccl_version) if s.case.nccl_version else None,
            "busbw_points": len(s.busbw_errors()), "busbw_median_pct": _finite(_median(s.busbw_errors())),
            "busbw_signed_median_pct": _finite(_median(s.busbw_errors(True))),
            "time_points": len(s.time_errors()), "time_median_pct": _finite(_median(s.time_errors())),
            "time_signed_median_pct": _finite(_median(s.time_errors(True))),
            "env": [dataclasses.asdict(e) for e in s.case.env], "gaps": list(s.case.gaps),
            "skipped": [{"size_bytes": size, "reason": why} for size, why in s.case.skipped],
            "rows": [{"size_bytes": r.size_bytes, "measured_time_us": r.measured_time_s * 1e6,
                      "predicted_time_us": r.predicted_time_s * 1e6, "measured_busbw_GBps": r.measured_busbw / 1e9,
                      "predicted_busbw_GBps": r.predicted_busbw / 1e9, "busbw_error_pct": r.error_pct,
                      "algo": r.algo, "proto": r.proto, "channels": r.channels} for r in s.rows],
        } for s in scores],
        "summary": [{k: (_finite(v) if isinstance(v, float) else v) for k, v in dataclasses.asdict(g).items()}
                    for g in summary(scores)],
    }
    return json.dumps(doc, indent=1)
