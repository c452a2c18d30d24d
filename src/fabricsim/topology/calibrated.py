"""A cluster file's `calibrated:` section: physical parameters fitted to the user's own nccl-tests logs.

Each parameter replaces or adds to one figure the model already has, so a calibrated cluster runs the same
mechanisms with measured values in place of catalog ones (the fitting itself is `fabricsim.fitting`):

- `net_efficiency`, `nvlink_efficiency`, `pcie_efficiency`: the achievable fraction of line rate of every link of
  that kind (catalog `hardware.links.LinkTech.efficiency`, which `engine.capacity.link_efficiency` multiplies
  into each link's capacity). Bounds (0, 1]: payload cannot exceed the wire's rate (a link at efficiency 1
  carries nothing but payload), and a link that carries nothing is a failed link (`topology.variants`).
- `net_step_latency`: seconds added to NCCL's per-step network hop latency (tuning.cc hwLatencies[NET], which
  `engine.protocols` reads), for every algorithm and protocol where NCCL's model charges it: the proxy thread,
  the net plugin and the NIC's per-message cost the table does not know for this transport. Bounds
  [0, MAX_LATENCY]: a cost is not negative.
- `launch_latency`: seconds added once per call (NCCL's baseLatencies): kernel launch and the benchmark's
  per-iteration overhead (enqueue.cc). Bounds [0, MAX_LATENCY].

Plain data, as the rest of ClusterSpec: values in SI units, provenance beside them (the logs by file name and
sha256, the rows used), no date, so a written file is the same bytes for the same logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from msgspec import Meta

from fabricsim import inputs
from fabricsim.errors import FabricsimError

# 10 ms: far above every per-step or launch cost seen on any transport (TCP floors are ~100 us per message,
# issue 13's cross-rack floors "hundreds of microseconds" per call); a fit that wants more has a missing mechanism.
MAX_LATENCY = 10e-3
MIN_EFFICIENCY = 0.01  # a link carrying 1% of its line rate is a fault, not a calibration


@dataclass(frozen=True)
class Parameter:
    """One calibratable parameter: what it is, the mechanism it sets, its bounds and why."""

    name: str
    unit: str  # 'fraction' or 's'
    lower: float
    upper: float
    mechanism: str
    bounds_source: str


PARAMETERS: tuple[Parameter, ...] = (
    Parameter("net_efficiency", "fraction", MIN_EFFICIENCY, 1.0,
              "achievable fraction of NIC line rate on scale-out links (infiniband, ethernet): replaces the catalog "
              "LinkTech.efficiency (hardware.links NET_EFFICIENCY 0.96)",
              "payload cannot exceed line rate (<= 1); below 1% the link is failed, not slow"),
    Parameter("nvlink_efficiency", "fraction", MIN_EFFICIENCY, 1.0,
              "achievable fraction of NVLink line rate: replaces the catalog LinkTech.efficiency of nvlink links "
              "(NCCL ncclTopoNVLinkBw / raw rate)",
              "payload cannot exceed line rate (<= 1); below 1% the link is failed, not slow"),
    Parameter("pcie_efficiency", "fraction", MIN_EFFICIENCY, 1.0,
              "achievable fraction of PCIe x16 rate: replaces the catalog LinkTech.efficiency of pcie links "
              "(NCCL ncclTopoGetPciBw / encoded rate)",
              "payload cannot exceed line rate (<= 1); below 1% the link is failed, not slow"),
    Parameter("net_step_latency", "s", 0.0, MAX_LATENCY,
              "added to NCCL's per-step network hop latency (tuning.cc hwLatencies[NET]) wherever NCCL charges it",
              "a cost is >= 0; <= 10 ms, above every per-message software floor documented for any transport"),
    Parameter("launch_latency", "s", 0.0, MAX_LATENCY,
              "added once per call to NCCL's base latency (tuning.cc baseLatencies): launch and per-iteration cost",
              "a cost is >= 0; <= 10 ms, above every kernel launch and proxy wake-up cost documented"),
)
BY_NAME = {p.name: p for p in PARAMETERS}
EFFICIENCY_KINDS = {"net_efficiency": ("infiniband", "ethernet"), "nvlink_efficiency": ("nvlink",),
                    "pcie_efficiency": ("pcie",)}


@dataclass(frozen=True)
class Fitted:
    """One fitted value and where it came from."""

    value: Annotated[float, Meta(ge=0, le=1.0, description="SI units: a fraction, or seconds")]
    catalog: Annotated[float, Meta(ge=0, description="what the model used before calibration, same units")]
    logs: Annotated[tuple[str, ...], Meta(min_length=1, description="log files (names in 'logs') it was fitted to")]
    rows: Annotated[int, Meta(ge=1, description="measured rows the fit used")]

    def __post_init__(self) -> None:
        inputs.check_fields(self, "calibrated value")


@dataclass(frozen=True)
class LogUsed:
    """A log a calibration was fitted to: enough to find it again and to see it is the same file."""

    file: Annotated[str, Meta(min_length=1, description="the log's file name")]
    sha256: Annotated[str, Meta(pattern="^[0-9a-f]{64}$", description="sha256 of the log's bytes")]
    collective: Annotated[str, Meta(min_length=1)]
    gpus: Annotated[int, Meta(ge=1, description="ranks the run used")]
    sizes: Annotated[str, Meta(description="the rows used, e.g. '25 rows, 8 B .. 8 GiB, out-of-place'")]

    def __post_init__(self) -> None:
        inputs.check_fields(self, "calibrated log")


@dataclass(frozen=True)
class Calibrated:
    """The `calibrated:` section of a cluster file. A parameter left out keeps its catalog value."""

    net_efficiency: Fitted | None = None
    nvlink_efficiency: Fitted | None = None
    pcie_efficiency: Fitted | None = None
    net_step_latency: Fitted | None = None
    launch_latency: Fitted | None = None
    logs: Annotated[tuple[LogUsed, ...], Meta(description="the logs fitted to")] = ()
    method: Annotated[str, Meta(description="how the values were fitted")] = ""

    def __post_init__(self) -> None:
        inputs.check_fields(self, "calibrated")
        names = {u.file for u in self.logs}
        for p in PARAMETERS:
            f = getattr(self, p.name)
            if f is None:
                continue
            if not p.lower <= f.value <= p.upper:
                raise FabricsimError(f"calibrated {p.name} is {f.value:g} {p.unit}: it must lie in [{p.lower:g}, "
                                     f"{p.upper:g}] ({p.bounds_source}); refit with `fabricsim calibrate`")
            missing = [n for n in f.logs if n not in names]
            if missing:
                raise FabricsimError(f"calibrated {p.name} names log {missing[0]} that 'calibrated.logs' does not "
                                     "list: keep the section as `fabricsim calibrate` wrote it")

    def value(self, name: str) -> float | None:
        """The fitted value of parameter `name`, None when it is not calibrated."""
        f = getattr(self, name)
        return None if f is None else f.value


def efficiency(cal: Calibrated | None, kind: str, catalog: float) -> float:
    """The achievable fraction of a link of technology kind `kind`: the calibrated one, else `catalog`."""
    if cal is not None:
        for name, kinds in EFFICIENCY_KINDS.items():
            if kind in kinds and (v := cal.value(name)) is not None:
                return v
    return catalog


def of(spec: object) -> Calibrated | None:
    """The calibration of a topology's spec (None: none, or a topology built without a spec)."""
    return getattr(spec, "calibrated", None)
