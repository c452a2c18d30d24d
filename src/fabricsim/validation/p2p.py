"""Point-to-point microbenchmarks (p2pBandwidthLatencyTest, nvbandwidth, ib_write_bw) against the hardware catalog.

These rows check the catalog's link figures directly: a 1 GiB copy between two GPUs, a host-to-device copy or
one NIC's RDMA write, timed on the built topology with each link's effective capacity. Rows whose metric does
not say what was measured (nvbandwidth's "Device to Device read" exceeds one direction's NVLink line rate, so it
is not a single-direction copy) or that stage through host memory in an unstated way are skipped with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim import hardware
from fabricsim.engine import time_traffic
from fabricsim.engine.capacity import effective_capacity
from fabricsim.errors import FabricsimError
from fabricsim.schedules import StepTraffic
from fabricsim.topology import build
from fabricsim.topology.model import DeviceKind, Topology
from fabricsim.topology.presets import preset_spec
from fabricsim.validation.calibration import SERVER_PRESET, Skip, field, partition

COPY_BYTES = 1 << 30  # large enough that latency is noise, as the benchmarks' defaults


@dataclass(frozen=True)
class P2pPrediction:
    id: str
    what: str  # 'gpu-gpu', 'gpu-gpu bidir', 'host-to-device', 'nic'
    measured: float  # GB/s
    predicted: float  # GB/s

    @property
    def error(self) -> float:
        return abs(self.predicted - self.measured) / self.measured * 100


def _topology(gpu_name: str) -> Topology | None:
    gpu = hardware.get_gpu(gpu_name).name
    preset = SERVER_PRESET.get(gpu)
    return build(preset_spec(preset)) if preset else None


def _copy_bw(topo: Topology, pairs: list[tuple[int, int]]) -> float:
    """GB/s of `pairs` GPU -> GPU copies of COPY_BYTES each running at once, summed."""
    src, dst = (np.array(x, dtype=np.int32) for x in zip(*pairs))
    st = StepTraffic(src, dst, np.full(len(pairs), float(COPY_BYTES)))
    r = time_traffic(topo, [st], collective="sendrecv", algorithm="direct", nranks=topo.n_gpus, nbytes=COPY_BYTES,
                     level="analytical")
    return len(pairs) * COPY_BYTES / r.bandwidth_time / 1e9


def _uplink_bw(topo: Topology, kind: DeviceKind, techs: tuple[str, ...]) -> float:
    """GB/s of the effective capacity into GPU 0 from its host (kind CPU / PCIe switch) or out of its NIC."""
    cap = effective_capacity(topo)
    if kind == DeviceKind.NIC:
        nic = int(topo.gpu_nic[0])
        links = np.flatnonzero(topo.link_src == nic)
    else:
        links = np.flatnonzero(topo.link_dst == int(topo.gpu_device[0]))
    links = [lk for lk in links.tolist() if topo.techs[int(topo.link_tech[lk])].startswith(techs)]
    if not links:
        raise FabricsimError(f"topology {topo.name} has no {'/'.join(techs)} link there")
    return float(max(cap[lk] for lk in links)) / 1e9


def predict_row(row: dict) -> P2pPrediction | Skip:
    """The catalog's prediction for one p2p row, or a Skip with the reason."""
    rid = str(row.get("id", "?"))
    metric, test = str(row.get("metric") or ""), str(row.get("test") or "")
    value = field(row, "value", "measure", None)
    if not value:
        return Skip(rid, "the row gives a range or no single value")
    gpu = field(row, "hardware.gpu", "text")
    try:
        topo = _topology(gpu)
    except FabricsimError:
        return Skip(rid, f"GPU '{gpu}' is not in the catalog")
    if topo is None:
        return Skip(rid, f"no built-in server preset carries the {gpu}")
    gpn = field(row, "hardware.gpus_per_node", "count", topo.spec.gpus_per_node)
    if gpn != topo.spec.gpus_per_node:
        return Skip(rid, f"a {gpn}-GPU {gpu} board: the built-in {topo.spec.name} has {topo.spec.gpus_per_node} GPUs "
                         "per node and another NVLink layout")
    low = metric.lower()
    if "disabled" in low or "not supported" in low:
        return Skip(rid, "a copy staged through host memory by the benchmark (how it pipelines is not stated)")
    if "device to device" in low or "direction not specified" in low:
        return Skip(rid, "the metric does not say which directions or peers it sums")
    if test.startswith("ib_write_bw"):
        gbps = _uplink_bw(topo, DeviceKind.NIC, ("ib-", "eth-")) * 8
        return P2pPrediction(rid, "nic", float(value), gbps)  # both in Gb/s
    if "host to device" in low:
        return P2pPrediction(rid, "host-to-device", float(value), _uplink_bw(topo, DeviceKind.CPU, ("pcie", "nvlink-c2c")))
    if "bidirectional" in low:
        return P2pPrediction(rid, "gpu-gpu bidir", float(value), _copy_bw(topo, [(0, 1), (1, 0)]))
    if "unidirectional" in low:
        return P2pPrediction(rid, "gpu-gpu", float(value), _copy_bw(topo, [(0, 1)]))
    return Skip(rid, f"metric '{metric}' is not one fabricsim maps to a copy")


def run_p2p(rows: list[dict]) -> tuple[list[P2pPrediction], list[Skip]]:
    """Every p2p row predicted or skipped with the reason."""
    return partition([r for r in rows if r.get("kind") == "p2p"], predict_row)


def p2p_table(preds: list[P2pPrediction], skipped: list[Skip]) -> str:
    """Per-row measured vs catalog prediction, and the skipped rows' reasons."""
    lines = [f"{'id':<40} {'what':<16} {'measured':>9} {'fabricsim':>9} {'err%':>6}"]
    lines += [f"{p.id[:40]:<40} {p.what:<16} {p.measured:>9.1f} {p.predicted:>9.1f} {p.error:>6.1f}" for p in preds]
    if preds:
        errs = np.array([p.error for p in preds])
        lines.append(f"point-to-point: {len(preds)} rows, median abs error {np.median(errs):.1f}%, max {errs.max():.1f}%"
                     " (GB/s; Gb/s for NIC rows)")
    lines += [f"skipped {s.id}: {s.reason}" for s in skipped]
    return "\n".join(lines)
