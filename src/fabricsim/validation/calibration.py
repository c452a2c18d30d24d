"""Calibration rows (real published measurements) turned into cases fabricsim can predict.

Each `collective` row of `measurements.jsonl` names its hardware in words; `case_for` maps it to a
cluster spec (a preset, resized, with the row's fabric / SHARP), the ranks it used, the collective,
the size (or the sweep whose peak it reports), the algorithm the source forced and the metric
(busbw, or time for latency rows). Rows fabricsim cannot model are returned as `Skip` with the reason.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import msgspec
import numpy as np
from msgspec import Meta, Struct

from fabricsim import hardware, inputs
from fabricsim.calibration_data import default_path
from fabricsim.engine.chunking import ChunkEnv
from fabricsim.errors import FabricsimError
from fabricsim.topology.presets import preset_spec
from fabricsim.topology.spec import ClusterSpec
from fabricsim.units import MAX_BYTES, parse_size
from fabricsim.validation.errata import corrected_busbw
from fabricsim.validation.set_aside import doubtful
from fabricsim.vocab import COLLECTIVES, parse_algorithms


# GPU (catalog name) -> the preset of the server it ships in.
SERVER_PRESET = {
    "H100": "dgx-h100", "H200": "hgx-h200", "H800": "hgx-h800", "A100-80GB": "dgx-a100", "A100-40GB": "dgx-a100",
    "B200": "dgx-b200", "B300": "dgx-b300", "GB200": "gb200-nvl72", "GB300": "gb300-nvl72",
}
@dataclass(frozen=True)
class Case:
    """One measurement to predict."""

    id: str
    family: str  # hardware family for the summary (Ampere, Hopper, Blackwell, PCIe)
    spec: ClusterSpec
    ranks: tuple[int, ...]  # GPU ranks of the built topology the run used
    collective: str
    size_bytes: int | None  # None: the row reports the peak over `sweep`
    sweep: tuple[int, int]
    algos: tuple[str, ...] | None  # forced algorithms (None: the tuner picks as NCCL would)
    exclude: tuple[str, ...]  # algorithms the source disabled
    metric: str  # 'busbw' (GB/s) or 'time' (us)
    measured: float
    trust: str
    nccl_version: tuple[int, ...] | None = None  # (major, minor[, patch]) of the NCCL the row ran, where stated
    host_overhead: float = 0.0  # s the benchmark's timed region adds to each call around NCCL's kernel (harness_overhead)
    set_aside: str = ""  # why the row's own source doubts it (validation.set_aside); '' for a row scored
    corrected: str = ""  # why `measured` is not the row's own figure (validation.errata); '' where it is
    chunk_env: ChunkEnv | None = None  # the channel bounds and sizes the run's NCCL environment set (reports.nccl_env)


# PyTorch's per-call host overhead of dist.all_reduce: "some 20-30us" (stas00/ml-engineering
# network/benchmarks/all_reduce_bench.py docstring, commit 0cc3de50, which since queues calls behind a busy-wait
# to hide it); the midpoint of that range. The version that measured the calibration's torch.distributed rows
# (the same file at commit c53741b, which added results/all-reduce-8xH200.md, measured 2026-08-04) times each
# trial as one dist.all_reduce between two CUDA events recorded on a stream left idle by dist.barrier(), so the
# start event fires before the host has launched the kernel and the overhead falls inside the timed region.
TORCH_DIST_CALL_OVERHEAD = 25e-6


def harness_overhead(row: dict) -> float:
    """Seconds a row's benchmark harness adds to every timed call beyond NCCL's own time: PyTorch's per-call host
    overhead for a torch.distributed benchmark that times one call on an idle device; 0 for nccl-tests, whose
    timer surrounds back-to-back launches (the host runs ahead of the GPU)."""
    return TORCH_DIST_CALL_OVERHEAD if "torch.distributed" in field(row, "measurement", "text", "") else 0.0


@dataclass(frozen=True)
class Skip:
    id: str
    reason: str


# The schema of calibration rows (the fields the calibration set's README documents): every field with its type
# and range, unknown keys refused. A field a row leaves out or sets to null is "not stated"; whoever needs it says so.
Count = Annotated[int, Meta(ge=1, le=(1 << 31) - 1)]
Bytes = Annotated[int, Meta(ge=1, le=MAX_BYTES)]
Measure = Annotated[float, Meta(ge=0, le=1e18)]  # GB/s, us, TFLOP/s, tokens/s: finite, >= 0 (0: not measured)
Text = str | None


class Hardware(Struct, forbid_unknown_fields=True, frozen=True):
    """A row's system as its source states it."""

    gpu: Text = None
    gpus_per_node: Count | None = None
    nodes: Count | None = None
    total_gpus: Count | None = None
    desc: Text = None
    scaleup: Text = None
    scaleout: Text = None
    nics: Text = None


class _Row(Struct, forbid_unknown_fields=True, frozen=True):
    id: Text = None  # rows are named by FILE:LINE too
    source: Text = None
    hardware: Hardware | None = None
    notes: Text = None
    trust: Literal["high", "medium", "low"] | None = None


class CollectiveRow(_Row, frozen=True):
    """An nccl-tests style result (kind 'collective')."""

    kind: Literal["collective"] = "collective"
    collective: Literal[COLLECTIVES] | None = None
    size_bytes: Bytes | None = None
    size_label: Text = None
    algbw_GBps: Measure | None = None
    busbw_GBps: Measure | None = None
    time_us: Measure | None = None
    placement: Text = None
    measurement: Text = None
    nccl_version: Text = None
    algo_env: Text = None


class P2pRow(_Row, frozen=True):
    """A point-to-point microbenchmark (kind 'p2p')."""

    kind: Literal["p2p"] = "p2p"
    test: Text = None
    metric: Text = None
    value: Measure | None = None
    value_range: Text = None
    unit: Text = None
    size_bytes: Bytes | None = None
    device_to_host: Measure | None = None
    latency_us: Measure | None = None


class TrainingRow(_Row, frozen=True):
    """A distributed-training throughput (kind 'training')."""

    kind: Literal["training"] = "training"
    model: Text = None
    framework: Text = None
    params: Count | Annotated[int, Meta(ge=1, le=1 << 62)] | None = None
    total_gpus: Count | None = None
    tp: Count | None = None
    pp: Count | None = None
    dp: Count | None = None
    cp: Count | None = None
    ep: Count | None = None
    vp: Count | None = None
    fsdp: Annotated[int, Meta(ge=0, le=(1 << 31) - 1)] | Text = None  # sharding degree or the scheme's name; 0: off
    seq: Count | None = None
    global_batch: Count | None = None
    micro_batch: Count | None = None
    precision: Text = None
    tflops_per_gpu: Measure | None = None
    mfu: Measure | None = None
    hfu: Measure | None = None
    mfu_reported: Text = None
    tokens_per_s_per_gpu: Measure | None = None
    step_time_s: Measure | None = None
    aggregate_pflops: Measure | None = None


class LogEntry(_Row, frozen=True):
    """One real nccl-tests log of the calibration set (a row of its logs/index.jsonl; fabricsim.calibration_data)."""

    log: Annotated[str, Meta(min_length=1)] = ""
    collective: Literal[COLLECTIVES] | None = None
    family: Text = None
    nccl_version: Text = None
    env: dict[str, str] | None = None


ROW_KINDS = {"collective": CollectiveRow, "p2p": P2pRow, "training": TrainingRow}


def _schema(row: dict, where: str, schemas: dict[str, type] | type) -> type:
    if isinstance(schemas, type):
        return schemas
    kind = row.get("kind")
    if kind not in schemas:
        raise FabricsimError(f"{where}: field 'kind' is {inputs.show(kind)}: it must be one of {', '.join(schemas)}")
    return schemas[kind]


def load_rows(path: str | Path | None = None, schemas: dict[str, type] | type = ROW_KINDS) -> list[dict]:
    """Rows of a calibration JSONL file, each checked against its kind's schema (`schemas`: kind -> Struct, or one
    Struct for every row, e.g. LogEntry) and returned as plain data with '_where' ('FILE:LINE') added; a malformed
    line is a FabricsimError naming the file, line, row id and field."""
    p = Path(path) if path else default_path()
    if not p.exists():
        raise FabricsimError(f"calibration data '{p}' not found: pass --data PATH to a measurements.jsonl file")
    try:
        text = p.read_bytes().decode("utf-8")
    except OSError as err:
        raise FabricsimError(f"cannot read calibration file {p}: {err.strerror}; check the path") from None
    except UnicodeDecodeError:
        raise FabricsimError(f"{p} is not UTF-8 text: give a JSONL file (one JSON object per line)") from None
    rows = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{p}:{i}"
        row = inputs.parse_json(line, f"{where}: line {i}")
        if not isinstance(row, dict):
            raise FabricsimError(f"{where}: line {i} is not a JSON object (it is {inputs.show(row)[:40]}): "
                                 "each line must be one {...} row")
        schema = _schema(row, f"{where}: row '{row.get('id', '?')}'", schemas)
        inputs.convert(row, schema, f"{where}: row '{row.get('id', '?')}'")
        rows.append({**row, "_where": where})
    if not rows:
        raise FabricsimError(f"{p} has no rows: give a measurements.jsonl file with one JSON object per line")
    return rows


def row_error(row: dict, err: FabricsimError) -> FabricsimError:
    """`err` prefixed with the row's 'FILE:LINE' (where load_rows read it) and id."""
    where = f"{row['_where']}: " if row.get("_where") else ""
    return FabricsimError(f"{where}row '{row.get('id', '?')}': {err}")


# Field kind -> the type its value must have (the row schema's own types).
_KINDS = {"count": Count, "bytes": Bytes, "measure": Measure, "text": str, "object": dict}
_REQUIRED = object()


def field(row: dict, path: str, kind: str, default=_REQUIRED):
    """row['a']['b'] for path 'a.b', checked to be `kind` (see _KINDS); missing or null gives `default`,
    or a FabricsimError naming the field where there is none."""
    value, parent = row, None
    for key in path.split("."):
        parent, value = value, value.get(key) if isinstance(value, dict) else None
    typ = _KINDS[kind]
    if value is None:
        if default is not _REQUIRED:
            return default
        missing = "null" if isinstance(parent, dict) and path.split(".")[-1] in parent else "missing"
        raise FabricsimError(f"field '{path}' is {missing}: it must be {inputs.describe(typ)}")
    try:
        return msgspec.convert(value, typ)
    except msgspec.ValidationError:
        raise FabricsimError(f"field '{path}' is {inputs.show(value)}: it must be "
                             f"{inputs.describe(typ)}") from None


def partition(rows: list[dict], convert) -> tuple[list, list[Skip]]:
    """`convert(row)` of every row, split into results and Skips; a FabricsimError names the row it came from."""
    out, skipped = [], []
    for row in rows:
        try:
            c = convert(row)
        except FabricsimError as err:
            raise row_error(row, err) from None
        (skipped if isinstance(c, Skip) else out).append(c)
    return out, skipped


def cases(rows: list[dict]) -> tuple[list[Case], list[Skip]]:
    """Every collective row as a Case, or a Skip with the reason."""
    return partition(rows, case_for)


def case_for(row: dict) -> Case | Skip:
    rid, kind = str(row.get("id", "?")), str(row.get("kind"))
    if kind != "collective":
        what = {"p2p": "a point-to-point microbenchmark (p2pBandwidthLatencyTest / nvbandwidth / perftest): `fabricsim validate --p2p` scores those",
                "training": "a training-throughput row: `fabricsim validate --training` scores those"}.get(kind, "not a collective row")
        return Skip(rid, what)
    field(row, "hardware", "object")
    collective = field(row, "collective", "text")
    if collective not in COLLECTIVES:
        raise FabricsimError(f"field 'collective' is {collective!r}: it must be one of {', '.join(COLLECTIVES)}")
    size = field(row, "size_bytes", "bytes", None)
    metric, measured = ("busbw", field(row, "busbw_GBps", "measure", 0))
    fix = corrected_busbw(rid)
    if fix is not None:
        measured = fix[0]
    if not measured:  # none, or printed as 0.00 (too small for nccl-tests' two decimals): score the time
        metric, measured = ("time", field(row, "time_us", "measure", 0))
    if not measured:
        return Skip(rid, "the row has neither a busbw nor a time above zero")
    name = field(row, "hardware.gpu", "text")
    gpn, nodes = field(row, "hardware.gpus_per_node", "count"), field(row, "hardware.nodes", "count")
    try:
        gpu = hardware.get_gpu(name).name
    except FabricsimError:
        return Skip(rid, f"GPU '{name}' is not in the catalog")
    spec, family = _spec_for(gpu, row)
    if spec is None:
        return Skip(rid, family)
    per_node = spec.gpus_per_node
    if gpn > per_node:
        return Skip(rid, f"{gpn} GPUs per node do not fit the {per_node}-GPU {spec.name} server")
    ranks = tuple(n * per_node + g for n in range(nodes) for g in range(gpn))
    algos, exclude = _algos(field(row, "algo_env", "text", ""))
    return Case(rid, family, spec, ranks, collective, size, _sweep(row), algos, exclude, metric, float(measured),
                row.get("trust", "high"), _nccl_version(field(row, "nccl_version", "text", "")), harness_overhead(row),
                doubtful(field(row, "source", "text", "")), fix[1] if fix else "")


def _nccl_version(text: str) -> tuple[int, ...] | None:
    """'2.29.2' -> (2, 29, 2), '2.29' -> (2, 29); None where the row does not say."""
    m = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(g) for g in m.groups() if g is not None) if m else None


def _spec_for(gpu: str, row: dict) -> tuple[ClusterSpec | None, str]:
    texts = ("hardware.desc", "hardware.scaleup", "hardware.scaleout", "notes")
    desc = " ".join(field(row, k, "text", "") for k in texts).lower()
    nodes = field(row, "hardware.nodes", "count")
    if gpu == "RTX2080Ti":
        spec = ClusterSpec(name="pcie-rtx2080ti-2", gpu="RTX2080Ti", nodes=1, gpus_per_node=2, scaleup="pcie",
                           domain_size=2, pcie_switches_per_node=1, pcie_switch="pcie-switch3", p2p="p2p not" not in desc,
                           cpus_per_node=1)
        return spec, "PCIe"
    if gpu == "H100-PCIe":
        if "nvlink bridge" not in desc:
            return None, "H100 PCIe without an NVLink bridge is not described by the row"
        spec = ClusterSpec(name="pcie-h100-nvbridge-2", gpu="H100-PCIe", nodes=1, gpus_per_node=2, scaleup="nvlink-mesh",
                           domain_size=2, pcie_switches_per_node=1, pcie_switch="pcie-switch5", cpus_per_node=1)
        return spec, "PCIe"
    preset = SERVER_PRESET.get(gpu)
    if preset is None:
        return None, f"no built-in server preset carries the {gpu}"
    if gpu in ("GB200", "GB300"):
        spec = preset_spec(preset, gpus=72 * -(-field(row, "hardware.total_gpus", "count") // 72))  # whole racks
    else:
        spec = preset_spec(preset, nodes=nodes)
    # IB SHARP (CollNet) runs only where the source says it was active: NCCL_COLLNET_ENABLE defaults to off.
    changes = {"sharp": "sharp active" in desc}
    if re.search(r"\broce", desc):
        changes.update(fabric="roce", nic=hardware.nic_for_speed(spec.nic_gbps, "roce").name,
                       leaf_switch="sn5600", spine_switch="sn5600")
    spec = dataclasses.replace(spec, **changes)
    family = {"A100-80GB": "Ampere", "A100-40GB": "Ampere", "H100": "Hopper", "H200": "Hopper", "H800": "Hopper"}.get(gpu, "Blackwell")
    return spec, family


def _algos(env: str) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """(forced algorithms, disabled ones) from a row's `algo_env`: NCCL_ALGO names ('Ring', 'NVLS/NVLSTree',
    'CollnetDirect (IB SHARP)': a parenthesised note is dropped, '/' separates names) or 'NVLS disabled'."""
    if not env:
        return None, ()
    key = env.strip().lower()
    if key == "nvls disabled":
        return None, ("nvls", "nvls_tree")
    try:
        selection = parse_algorithms(re.sub(r"\(.*?\)", "", env).replace("/", ","))
    except FabricsimError as err:
        raise FabricsimError(f"field 'algo_env' is {env!r}: {err}, or 'nvls disabled'") from None
    if selection is None:
        return None, ()
    return (None, selection.names) if selection.exclude else (selection.names, ())


_SWEEP_RE = re.compile(r"(\d+[KMG]?)\s*-\s*(\d+[KMG]?)\b(?:\s*sweep)?", re.IGNORECASE)


def _sweep(row: dict, key: str = "notes") -> tuple[int, int]:
    """The size range a 'peak' row was taken over, from its notes (or another text field `key`; default 1M-8G,
    nccl-tests' common sweep)."""
    m = _SWEEP_RE.search(field(row, key, "text", "").replace("MiB", "M").replace("GiB", "G").replace("B ", " "))
    if m:
        try:
            lo, hi = parse_size(m.group(1)), parse_size(m.group(2))
            if 0 < lo < hi <= MAX_BYTES:
                return lo, hi
        except FabricsimError:
            pass
    return 1 << 20, 8 << 30


def sweep_sizes(lo: int, hi: int) -> np.ndarray:
    """Power-of-two sizes from lo to hi (nccl-tests -f 2: reports.sweep.sizes, the one sweep rule)."""
    from fabricsim.reports.sweep import sizes

    return np.asarray(sizes(lo, hi, 2.0), dtype=np.int64)
