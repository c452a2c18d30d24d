"""Calibration rows (real published measurements) turned into cases fabricsim can predict.

Each `collective` row of `measurements.jsonl` names its hardware in words; `case_for` maps it to a
cluster spec (a preset, resized, with the row's fabric / SHARP), the ranks it used, the collective,
the size (or the sweep whose peak it reports), the algorithm the source forced and the metric
(busbw, or time for latency rows). Rows fabricsim cannot model are returned as `Skip` with the reason.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fabricsim import hardware
from fabricsim.calibration_data import default_path
from fabricsim.errors import FabricsimError
from fabricsim.topology.presets import preset_spec
from fabricsim.topology.spec import ClusterSpec
from fabricsim.units import parse_size


# GPU (catalog name) -> the preset of the server it ships in.
_SERVER_PRESET = {
    "H100": "dgx-h100", "H200": "hgx-h200", "H800": "hgx-h800", "A100-80GB": "dgx-a100", "A100-40GB": "dgx-a100",
    "B200": "dgx-b200", "B300": "dgx-b300", "GB200": "gb200-nvl72", "GB300": "gb300-nvl72",
}
# Algorithm names the sources forced (NCCL_ALGO) -> fabricsim algorithm lists.
_ALGO_ENV = {
    "ring": ["ring"], "tree": ["tree"], "nvls": ["nvls"], "nvls/nvlstree": ["nvls", "nvls_tree"],
    "collnetdirect (ib sharp)": ["collnet_direct"], "collnetchain (ib sharp)": ["collnet_chain"],
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
    nccl_version: tuple[int, int] | None = None  # (major, minor) of the NCCL the row ran, where stated


@dataclass(frozen=True)
class Skip:
    id: str
    reason: str


def load_rows(path: str | Path | None = None) -> list[dict]:
    """Rows of a measurements JSONL file; a malformed line is a FabricsimError naming it."""
    p = Path(path) if path else default_path()
    if not p.exists():
        raise FabricsimError(f"calibration data '{p}' not found: pass --data PATH to a measurements.jsonl file")
    rows = []
    for i, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise FabricsimError(f"{p}:{i}: not valid JSON ({err.msg}): each line must be one JSON object") from None
    return rows


def cases(rows: list[dict]) -> tuple[list[Case], list[Skip]]:
    """Every collective row as a Case, or a Skip with the reason."""
    out, skipped = [], []
    for row in rows:
        c = case_for(row)
        (out if isinstance(c, Case) else skipped).append(c)
    return out, skipped


def case_for(row: dict) -> Case | Skip:
    rid = row.get("id", "?")
    if row.get("kind") != "collective":
        what = {"p2p": "a point-to-point microbenchmark (p2pBandwidthLatencyTest / nvbandwidth / perftest), not a collective",
                "training": "a training-throughput row: `fabricsim train` validates those"}.get(row.get("kind"), "not a collective row")
        return Skip(rid, what)
    hw = row["hardware"]
    metric, measured = ("busbw", row.get("busbw_GBps"))
    if not measured:  # none, or printed as 0.00 (too small for nccl-tests' two decimals): score the time
        metric, measured = ("time", row.get("time_us"))
    if not measured:
        return Skip(rid, "the row has neither a busbw nor a time above zero")
    try:
        gpu = hardware.get_gpu(hw["gpu"]).name
    except FabricsimError:
        return Skip(rid, f"GPU '{hw['gpu']}' is not in the catalog")
    spec, family = _spec_for(gpu, hw, row)
    if spec is None:
        return Skip(rid, family)
    gpn, nodes = int(hw["gpus_per_node"]), int(hw["nodes"])
    per_node = spec.gpus_per_node
    if gpn > per_node:
        return Skip(rid, f"{gpn} GPUs per node do not fit the {per_node}-GPU {spec.name} server")
    ranks = tuple(n * per_node + g for n in range(nodes) for g in range(gpn))
    algos, exclude = _algos(row.get("algo_env"))
    size = row.get("size_bytes")
    return Case(rid, family, spec, ranks, row["collective"], int(size) if size is not None else None,
                _sweep(row), algos, exclude, metric, float(measured), row.get("trust", "high"),
                _nccl_version(row.get("nccl_version")))


def _nccl_version(text) -> tuple[int, int] | None:
    """'2.29.2' -> (2, 29); None where the row does not say."""
    m = re.match(r"\s*(\d+)\.(\d+)", str(text or ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def _spec_for(gpu: str, hw: dict, row: dict) -> tuple[ClusterSpec | None, str]:
    desc = (hw.get("desc", "") + " " + str(hw.get("scaleup", "")) + " " + str(hw.get("scaleout", "")) + " " + row.get("notes", "")).lower()
    nodes = int(hw["nodes"])
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
    preset = _SERVER_PRESET.get(gpu)
    if preset is None:
        return None, f"no built-in server preset carries the {gpu}"
    if gpu in ("GB200", "GB300"):
        spec = preset_spec(preset, gpus=72 * max(1, -(-int(hw["total_gpus"]) // 72)))  # whole racks
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


def _algos(env: str | None) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    if not env:
        return None, ()
    key = env.strip().lower()
    if key == "nvls disabled":
        return None, ("nvls", "nvls_tree")
    if key in _ALGO_ENV:
        return tuple(_ALGO_ENV[key]), ()
    raise FabricsimError(f"calibration algo_env '{env}' is not mapped: add it to _ALGO_ENV in {__name__}")


_SWEEP_RE = re.compile(r"(\d+[KMG]?)\s*-\s*(\d+[KMG]?)\b(?:\s*sweep)?", re.IGNORECASE)


def _sweep(row: dict) -> tuple[int, int]:
    """The size range a 'peak' row was taken over, from its notes (default 1M-8G, nccl-tests' common sweep)."""
    m = _SWEEP_RE.search(row.get("notes", "").replace("MiB", "M").replace("GiB", "G").replace("B ", " "))
    if m:
        try:
            lo, hi = parse_size(m.group(1)), parse_size(m.group(2))
            if 0 < lo < hi:
                return lo, hi
        except FabricsimError:
            pass
    return 1 << 20, 8 << 30


def sweep_sizes(lo: int, hi: int) -> np.ndarray:
    """Power-of-two sizes from lo to hi (nccl-tests -f 2)."""
    sizes = [lo]
    while sizes[-1] * 2 <= hi:
        sizes.append(sizes[-1] * 2)
    return np.asarray(sizes, dtype=np.int64)
