"""What a simulation returns: time, nccl-tests bandwidths, per-link load, bottlenecks and a timeline."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from fabricsim.topology.model import Topology
from fabricsim.vocab import BUSBW_FACTOR  # noqa: F401  (nccl-tests bus factors; simulate and tests import it from here)



@dataclass(frozen=True)
class Bottleneck:
    """A link that limits the collective, and why."""

    link: int
    name: str
    tech: str
    capacity: float  # bytes/s physical
    efficiency: float  # achievable fraction (catalog)
    effective_capacity: float  # bytes/s: capacity x efficiency
    flows: int  # most flows (channel connections) sharing it in one step
    busy_time: float  # s: wire bytes / effective capacity
    utilisation: float  # wire bytes / (capacity x collective time)


@dataclass(frozen=True)
class Limiter:
    """What bounds a collective's bandwidth time: the busiest links, a per-peer rate cap on point-to-point
    transfers across the network, the rate at which a GPU's proxy thread posts network messages, or NCCL's
    per-channel bus bandwidth cap. Each is a lower bound on the
    bandwidth time; the limiter is the largest."""

    kind: str  # 'links' | 'peer cap' | 'proxy' | 'channel cap' | 'memory' (a one-rank copy, tuner.one_rank)
    rate: float  # bytes/s: the bottleneck link's effective capacity, the cap per network transfer, or the algbw cap
    time: float  # s: the bandwidth time this limiter alone imposes
    source: str  # where the figure comes from
    what: str  # one line naming it, for reports

    def __str__(self) -> str:
        return f"{self.what} ({self.source})"


@dataclass(frozen=True, eq=False)
class Timeline:
    """Steps laid out in time (repetitions expanded) and, for small cases, every flow.

    Steps: `step_start`, `step_end` (s), `step_pattern` (index of the distinct traffic pattern).
    Flows (None when there are too many to list): per flow `flow_step`, `flow_src`, `flow_dst` (GPU rank; -1 is a
    switch of an in-network operation), `flow_links` (its path's links), `flow_start`, `flow_end` (s).
    """

    step_start: np.ndarray
    step_end: np.ndarray
    step_pattern: np.ndarray
    flow_step: np.ndarray | None = None
    flow_src: np.ndarray | None = None
    flow_dst: np.ndarray | None = None
    flow_links: tuple[np.ndarray, ...] | None = None
    flow_start: np.ndarray | None = None
    flow_end: np.ndarray | None = None


@dataclass(frozen=True, eq=False, repr=False)
class Result:
    """One collective timed on one fabric.

    `time` splits into `latency_time` (NCCL base and per-step software latency, wire and switch hops) and
    `bandwidth_time` (data on the bottleneck links, pipelined over slices). `algbw`/`busbw` follow nccl-tests.
    `link_bytes`/`link_util` are per link of `topo` (wire bytes, fraction of physical capacity over `time`).
    `level` says which model produced the number ('flow' or 'analytical'). `limiter` says what bounds the
    bandwidth time: the busiest links (`bottlenecks`) or a rate cap, with its value and source. `timeline` is
    built when first read (traces and tests read it; a tuner's or validation's thousands of results never do), and
    so are `limiter` and `bottlenecks` (reports read the pick's; the tuner's other candidates are never asked).
    """

    collective: str
    algorithm: str
    protocol: str
    nranks: int
    nbytes: int
    level: str
    time: float
    latency_time: float
    bandwidth_time: float
    algbw: float
    busbw: float
    bound: str  # 'latency-bound' | 'bandwidth-bound'
    necks_of: Callable[[], tuple[Limiter, tuple[Bottleneck, ...], int]] = field(compare=False)  # builds `limiter`,
    # `bottlenecks` and `bottleneck_count` on first use
    link_bytes: np.ndarray
    link_util: np.ndarray
    timeline_of: Callable[[], Timeline] = field(compare=False)  # builds `timeline` on first use
    slices: int  # pipeline slices per channel (NCCL slice size)
    slowdown: float  # bandwidth-time factor from sharing the fabric with other jobs (1: alone)
    topo: Topology
    connection_bytes: float = 0.0  # wire bytes one connection moves over the whole collective (mean over connections)

    @cached_property
    def _necks(self) -> tuple[Limiter, tuple[Bottleneck, ...], int]:
        return self.necks_of()

    @property
    def limiter(self) -> Limiter:
        """What bounds the bandwidth time (links, a per-peer network cap, NCCL's per-channel cap)."""
        return self._necks[0]

    @property
    def bottlenecks(self) -> tuple[Bottleneck, ...]:
        """The first few of the tied bottleneck links."""
        return self._necks[1]

    @property
    def bottleneck_count(self) -> int:
        """How many links tie as the bottleneck."""
        return self._necks[2]

    @cached_property
    def timeline(self) -> Timeline:
        """Steps (and, for small runs, flows) with their start and end times."""
        return self.timeline_of()

    def __repr__(self) -> str:  # the arrays and the topology would print hundreds of KB at scale
        neck = f", bottleneck {self.bottlenecks[0].name}" if self.bottlenecks else ""
        return (f"Result({self.collective} {self.algorithm}/{self.protocol} on {self.nranks:,} ranks, {self.nbytes:,} B: "
                f"{self.time * 1e6:.2f} us, busbw {self.busbw / 1e9:.2f} GB/s, {self.bound}{neck}, level {self.level})")

    def summary(self) -> dict:
        """Plain numbers for reports."""
        return {
            "collective": self.collective, "algorithm": self.algorithm, "protocol": self.protocol,
            "nranks": self.nranks, "nbytes": self.nbytes, "level": self.level, "time_s": self.time,
            "algbw_Bps": self.algbw, "busbw_Bps": self.busbw, "bound": self.bound,
            "bottleneck": self.bottlenecks[0].name if self.bottlenecks else None,
            "limiter": self.limiter.kind, "limiter_rate_Bps": self.limiter.rate, "limiter_source": self.limiter.source,
        }
