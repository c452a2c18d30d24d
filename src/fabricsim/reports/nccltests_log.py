"""Parse nccl-tests output of any version (v2.9 .. 2.19, text or `-J` JSON) into plain rows.

Header-driven: the `#  size  count  type ...` title line says which columns exist (no root/redop in
v2.9, `cputime`, `-I 1` per-iteration columns, fabricsim's extra algo/proto/channels), so layouts
are never guessed from column counts when a header is there. MPI / srun prefixes (mpirun
`--tag-output` tags also inside a row), interleaved NCCL INFO lines, comments whose `#` a log viewer
stripped, blocks without their title row and several runs in one file are read as the calibration
logs carry them (nccl-tests src/util.cu; tests/reports/fixtures/README.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from fabricsim.errors import FabricsimError
from fabricsim.units import MAX_BYTES

_JSON_START = re.compile(r"^\s*(?:\{|\[\s*[{\]])")  # an object, or a list of objects ('[0] ' is an MPI prefix)
_PREFIX = re.compile(r"^(?:\[\d+(?:,\d+)*\](?:<std(?:out|err)>)?:?\s?|\s*\d+:\s)")
_TAG = re.compile(r"\[\d+(?:,\d+)*\]<std(?:out|err)>:")  # mpirun --tag-output, anywhere in a line
_RANK = re.compile(r"^Rank\s+(\d+)\s+(?:Group|Pid)")
_BINARY = re.compile(r"\b([a-z_]+?)_perf(?:_mpi)?\b")
_STARTING = re.compile(r"Collective test starting:\s*(\S+)")
_CONCLUDED = re.compile(r"Collective test concluded:\s*(\S+)")
_NTHREAD = re.compile(r"nThread\s+\d+\s+nGpus\s+\d+")
_TESTS_VERSION = re.compile(r"nccl-tests version\s+(\S+)(?:.*?nccl-library=(\d+))?")
_NCCL_VERSION = re.compile(r"NCCL version\s+(\d+\.\d+\.\d+)")
_NRANKS = re.compile(r"\bn[Rr]anks\s+(\d+)")
_AVG = re.compile(r"Avg bus bandwidth\s*:\s*(\S+)")
_PRE = ("size", "count", "type", "redop", "root")
# Positional fallback layouts (no header line): token count -> leading columns.
_FALLBACK = {13: _PRE, 12: ("size", "count", "type", "redop"), 11: ("size", "count", "type")}


@dataclass(frozen=True)
class Placement:
    """One out-of-place or in-place measurement: us and GB/s as printed; wrong None for 'N/A'."""

    time_us: float
    algbw: float
    busbw: float
    wrong: float | None


@dataclass(frozen=True)
class ParsedRow:
    """One data line. redop/root None when the layout has no such column."""

    size_bytes: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    out_of_place: Placement | None
    in_place: Placement | None
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ParsedLog:
    """A whole log: collective without the `_perf` suffix, nranks if the log says (or its rows imply), rows in
    order."""

    collective: str | None
    nranks: int | None
    rows: list[ParsedRow]
    avg_busbw: float | None
    nccl_version: str | None
    nccl_tests_version: str | None
    fmt: str  # 'text' | 'json'
    nranks_inferred: bool = False  # nranks is what the rows' busbw / algbw implies (bus_factor_ranks), not printed


def _version_code(code: int) -> str:
    """NCCL_VERSION_CODE -> 'major.minor.patch' (X*10000+Y*100+Z since 2.9, X*1000+Y*100+Z before)."""
    if code >= 10000:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


def _num(token: str) -> float | None:
    if token.upper() == "N/A":
        return None
    try:
        return float(token)
    except ValueError:
        raise FabricsimError(f"'{token}' is not a number where the header expects one: fix or delete the line") from None


def _columns(titles: list[str]) -> list[str]:
    """Map title tokens to qualified names: size..root, then oop.* and ip.* per placement, extra.*."""
    cols, place = [], None
    for t in titles:
        if t in ("time", "cputime"):
            place = "oop" if place is None else "ip"
            cols.append(f"{place}.time")
        elif place is None:
            cols.append(t)
        elif t in ("algbw", "busbw"):
            cols.append(f"{place}.{t}")
        elif t in ("#wrong", "error", "wrong"):
            cols.append(f"{place}.wrong")
        elif t.startswith("i_"):  # -I 1 per-iteration statistics
            cols.append(f"{place}.{t}")
        else:  # fabricsim's algo / proto / channels, -S 1 timestamp
            cols.append(f"extra.{t}")
    return cols


def _row(cols: list[str], tokens: list[str]) -> ParsedRow | None:
    values = dict(zip(cols, tokens))
    if not values.get("size", "").isdecimal() or not values.get("count", "").isdecimal():
        return None

    def place(p: str) -> Placement | None:
        if f"{p}.time" not in values or f"{p}.busbw" not in values:
            return None
        t = _num(values[f"{p}.time"])
        if t is None:
            return None
        # a header may lack algbw (found by fuzzing: a KeyError before); it is recomputed from size and time anyway
        return Placement(t, _num(values.get(f"{p}.algbw", "N/A")) or 0.0, _num(values[f"{p}.busbw"]) or 0.0,
                         _num(values[f"{p}.wrong"]) if f"{p}.wrong" in values else None)

    root = values.get("root")
    if root is not None and not re.fullmatch(r"-?\d+", root):
        raise FabricsimError(f"root '{root}' is not a rank number: fix or delete the line")
    extra = {k[6:]: v for k, v in values.items() if k.startswith("extra.")}
    return ParsedRow(int(values["size"]), int(values["count"]), values.get("type", ""), values.get("redop"),
                     int(root) if root is not None else None, place("oop"), place("ip"), extra)


def _parse_json(text: str) -> ParsedLog:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise FabricsimError(f"nccl-tests JSON output is not valid JSON ({err.msg} at line {err.lineno}): "
                             "pass the complete file written by -J") from None
    try:
        return _json_log(doc)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as err:  # OverflowError: int(Infinity)
        what = f"a result lacks the key {err}" if isinstance(err, KeyError) else str(err)
        raise FabricsimError(f"nccl-tests JSON output has an unexpected layout ({what}): pass the complete file "
                             "written by -J (or by fabricsim perf --format json)") from None


def _json_log(doc) -> ParsedLog:
    own = isinstance(doc, dict) and "rows" in doc and "results" not in doc  # fabricsim perf --format json
    if isinstance(doc, list) or own:  # (a bare list: fabricsim's earlier perf JSON)
        listed = doc["rows"] if own else doc
        rows = [ParsedRow(int(r["size_bytes"]), int(r["count"]), r["type"], r["redop"], int(r["root"]),
                          Placement(float(r["time_us"]), float(r["algbw_GBps"]), float(r["busbw_GBps"]), None),
                          Placement(float(r["ip_time_us"]), float(r["ip_algbw_GBps"]), float(r["ip_busbw_GBps"]), None),
                          {k: str(r[k]) for k in ("algo", "proto", "channels") if k in r}) for r in listed]
        coll, nranks = (doc.get("collective"), doc.get("gpus")) if own else (None, None)
        return _finish(coll, int(nranks) if nranks is not None else None, rows, None, None, None, "json")
    results = doc.get("results") or []

    def place(p: dict | None) -> Placement | None:
        if not p:
            return None
        return Placement(float(p.get("time", p.get("cpu_time", 0.0))), float(p["alg_bw"]), float(p["bus_bw"]),
                         None if p.get("nwrong") is None else float(p["nwrong"]))

    rows = [ParsedRow(int(r["size"]), int(r["count"]), r.get("type", ""), r.get("redop"),
                      int(r["root"]) if r.get("root") not in (None, "") else None,
                      place(r.get("out_of_place")), place(r.get("in_place"))) for r in results]
    args = " ".join(doc.get("args") or [])
    m = _BINARY.search(args)
    avg = (doc.get("average_bus_bandwidth") or {}).get("bandwidth")
    code = doc.get("nccl_version")
    devices = doc.get("devices") or (doc.get("config") or {}).get("devices")  # nccl-tests nests them in "config"
    return _finish(m.group(1) if m else None, len(devices) if devices else None, rows,
                   float(avg) if avg is not None else None, _version_code(int(code)) if code else None, None, "json")


def _finish(coll, nranks, rows, avg, nccl, tests, fmt) -> ParsedLog:
    if nranks is not None and nranks < 1:
        raise FabricsimError(f"the log says nranks {nranks}: a run has at least one rank, so the log is malformed; "
                             "pass the complete, unedited nccl-tests output")
    if (bad := next((r.size_bytes for r in rows if not 0 <= r.size_bytes <= MAX_BYTES), None)) is not None:
        raise FabricsimError(f"the log has a row of size {bad} B, beyond any buffer fabricsim compares (0 to {MAX_BYTES} B, "
                             "256 TiB): fix or delete that row")
    if not rows:
        raise FabricsimError(
            "no nccl-tests data rows found: expected a '#  size  count  type ...' header followed by lines like "
            "'     1048576        262144     float     sum      -1   ...' (or a -J JSON file with 'results')")
    inferred = nranks is None and (nranks := bus_factor_ranks(rows, coll)) is not None
    return ParsedLog(coll, nranks, rows, avg, nccl, tests, fmt, inferred)


def ranks_of(log: ParsedLog, collective: str | None) -> int | None:
    """The log's rank count: as printed, else as its rows imply for `collective` (a log that does not name its
    own), else None."""
    return log.nranks if log.nranks is not None else bus_factor_ranks(log.rows, collective)


def _located(line: int, fn, *args):
    """fn(*args), its FabricsimError prefixed with the log line number."""
    try:
        return fn(*args)
    except FabricsimError as err:
        raise FabricsimError(f"nccl-tests log line {line}: {err}") from None


@dataclass
class _Run:
    """What one run has said so far (mutable while its lines are read)."""

    coll: str | None = None
    nccl: str | None = None
    tests: str | None = None
    avg: float | None = None
    nranks_hint: int | None = None
    ranks: set[int] = field(default_factory=set)
    cols: list[str] | None = None
    rows: list[ParsedRow] = field(default_factory=list)
    closed: bool = False  # its 'Avg bus bandwidth' line was read: what follows belongs to the next run

    def finish(self) -> ParsedLog:
        nranks = max(self.ranks) + 1 if self.ranks else self.nranks_hint
        return _finish(self.coll, nranks, self.rows, self.avg, self.nccl, self.tests, "text")


def _clean(raw: str) -> str:
    """The line without mpirun / srun prefixes; `--tag-output` tags are removed wherever they sit (mpirun tags
    every chunk rank 0 writes, so one table row can carry several '[1,0]<stdout>:')."""
    return _TAG.sub("", _PREFIX.sub("", raw, count=1)).rstrip()


def _starts_run(body: str) -> bool:
    """A line nccl-tests prints once at the start of a run: the column titles or the lines above them."""
    return bool(_STARTING.search(body) or _TESTS_VERSION.search(body) or _NCCL_VERSION.search(body)
                or _NTHREAD.match(body) or body.startswith("Using devices") or _RANK.match(body)
                or body.split()[:2] == ["size", "count"])


def parse_runs(text: str) -> list[ParsedLog]:
    """Every nccl-tests run in `text`, in order (one for a -J JSON document).

    A run ends at its 'Avg bus bandwidth' line, or where a new run's opening lines (versions, 'Collective test
    starting', the nThread line, '#  Rank' lines, the column titles) follow data rows; 'Collective test
    concluded' after the Avg line names the run it closes. Lines may lack the '#' nccl-tests puts before its
    comments (some log viewers strip it) and may carry NCCL_DEBUG=INFO output; a block without its title
    row is read by its column count."""
    if _JSON_START.match(text):
        return [_parse_json(text)]
    runs: list[_Run] = []
    run = _Run()
    for i, raw in enumerate(text.splitlines(), 1):
        line = _clean(raw)
        if not line.strip():
            continue
        if "NCCL" in line and ("INFO" in line or "WARN" in line):
            if run.closed and _NCCL_VERSION.search(line):
                runs.append(run)
                run = _Run()
            m = _NCCL_VERSION.search(line)
            run.nccl = m.group(1) if m else run.nccl
            m = _NRANKS.search(line)
            run.nranks_hint = run.nranks_hint or (int(m.group(1)) if m else None)
            continue
        body = line.lstrip()
        body = body[1:].lstrip() if body.startswith("#") else body
        tokens = body.split()
        is_row = bool(tokens) and tokens[0].isdecimal()
        if (m := _CONCLUDED.search(body)):  # printed after the Avg line: it names the run that just ended
            target = run if run.rows or not runs else runs[-1]
            target.coll = target.coll or _collective_name(m.group(1))
            continue
        opens = not is_row and _starts_run(body)
        if (run.closed and (is_row or opens or _BINARY.search(body))) or (run.rows and opens):
            runs.append(run)
            run = _Run()
        if is_row:
            layout = run.cols
            if layout is None and len(tokens) in _FALLBACK:
                lead = list(_FALLBACK[len(tokens)])
                layout = _columns(lead + ["time", "algbw", "busbw", "#wrong"] * 2)
            if layout is not None and (row := _located(i, _row, layout, tokens)) is not None:
                run.rows.append(row)
            continue
        if (m := _STARTING.search(body)):
            run.coll = _collective_name(m.group(1))
        elif (m := _TESTS_VERSION.search(body)):
            run.tests = m.group(1)
            run.nccl = run.nccl or (_version_code(int(m.group(2))) if m.group(2) else None)
        elif (m := _NCCL_VERSION.search(body)):  # NCCL_DEBUG=VERSION prints it bare
            run.nccl = m.group(1)
        elif (m := _RANK.match(body)):
            run.ranks.add(int(m.group(1)))
        elif (m := _AVG.search(body)):
            run.avg = _located(i, _num, m.group(1))
            run.closed = True
        elif tokens[:2] == ["size", "count"]:
            run.cols = _columns(tokens)
        elif (m := _NRANKS.search(body)):
            run.nranks_hint = int(m.group(1))
        elif run.coll is None and (m := _BINARY.search(body)):
            run.coll = m.group(1)
    runs.append(run)
    with_rows = [r.finish() for r in runs if r.rows]
    return with_rows or [run.finish()]  # no rows anywhere: _finish says so


def _collective_name(binary: str) -> str:
    return re.sub(r"_perf(_mpi)?$", "", binary)


def parse_nccl_tests(text: str) -> ParsedLog:
    """Parse one nccl-tests run (stdout text, possibly MPI-prefixed, or the -J JSON document).

    A file holding several runs is an error naming them: comparing rows of different runs as one sweep
    would give a wrong number silently."""
    runs = parse_runs(text)
    if len(runs) > 1:
        what = ", ".join(f"{r.collective or 'unnamed'} {r.rows[0].size_bytes}-{r.rows[-1].size_bytes} B" for r in runs)
        raise FabricsimError(f"the log holds {len(runs)} nccl-tests runs ({what}): split it into one file per run "
                             "(or read them with fabricsim.reports.nccltests_log.parse_runs)")
    return runs[0]


PRINTED_GBPS = 0.005  # half the last digit of nccl-tests' algbw and busbw columns (%7.2f, src/common.cu)


def bus_factor_ranks(rows: list[ParsedRow], collective: str | None) -> int | None:
    """The rank count a log's rows imply where the log does not print it: nccl-tests prints busbw = algbw x
    2(n-1)/n for all_reduce and (n-1)/n for the gathers, scatters and all-to-all (vocab.bus_factor), so busbw / algbw
    gives n. None where the collective's factor is 1 (broadcast, reduce, sendrecv), no row moved data, or the
    printed digits do not tell n from n +/- 1 (several hundred ranks at small bandwidths)."""
    from fabricsim.vocab import COLLECTIVE_TABLE, bus_factor

    if collective not in COLLECTIVE_TABLE or bus_factor(collective, 2) == bus_factor(collective, 3):
        return None
    points = [(p.algbw, p.busbw) for r in rows for p in (r.out_of_place, r.in_place)
              if p is not None and p.algbw > 0 and p.busbw > 0]
    if not points:
        return None
    algbw, busbw = max(points)
    share = busbw / algbw / bus_factor(collective, 2) / 2  # (n-1)/n
    if not 0 < share < 1:
        return None
    n = round(1 / (1 - share))

    def fits(k: int) -> bool:
        return k >= 2 and all(abs(b - a * bus_factor(collective, k)) <= PRINTED_GBPS * (1 + bus_factor(collective, k))
                              for a, b in points)

    return n if fits(n) and not fits(n - 1) and not fits(n + 1) else None
