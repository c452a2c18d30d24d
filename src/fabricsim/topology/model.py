"""The topology data model: devices and directed links held in numpy arrays.

Array-backed (struct of arrays) so a 131,072-GPU cluster fits in memory and every bulk
query is vectorised. Devices and links are addressed by integer index.

Invariants (checked by `fabricsim.topology.validate`):
- links are created in opposite pairs: link 2k and 2k+1 join the same two devices in
  opposite directions (so `reverse(l) == l ^ 1`);
- capacities are bytes/s per direction, latencies seconds, both > 0 (latency >= 0);
- GPU ranks are `0..n_gpus-1`; `gpu_device[rank]` is the GPU's device index.

Logical aggregation, as NCCL's own topology does: all NVSwitch chips of one NVLink
domain may be one NVSWITCH device whose `units` says how many chips it stands for, and
parallel physical links between two devices are one link whose `count` says how many.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, fields
from enum import IntEnum
from types import MappingProxyType
from typing import Any, TypeVar

import numpy as np

from fabricsim.topology.derived import DerivedStore

# Plans of calls timed at their own size (not by their unit message), one entry per size: kept apart from the rest of
# the structural data, so a sweep over sizes never pushes out routes or routing tables, and bounded on their own: a
# calibration fit's logs (16 GPUs, ~30 sizes, a few candidates each) hold ~1 MiB; a plan over 32 MiB (a large
# fabric's) is not kept at all, so a sweep on it holds no more memory than before.
SIZED_ENTRIES = 1024
SIZED_BYTES = 32 << 20

T = TypeVar("T")


class DeviceKind(IntEnum):
    """What a device is. Values are stored in `Topology.dev_kind` (int8)."""

    GPU = 0
    CPU = 1  # a CPU socket with its host memory (the bounce buffer when GPUDirect is off)
    PCIE_SWITCH = 2
    NIC = 3
    NVSWITCH = 4  # NVSwitch chip(s) of one NVLink domain
    FABRIC_SWITCH = 5  # InfiniBand or Ethernet switch of the scale-out fabric


def _read_only(a) -> np.ndarray:
    """`a` as an array no one can write: shared as it is when neither it nor any array it views is writable (a
    variant shares its parent's arrays), frozen in place when it owns its data (its owner's reference freezes
    too), copied and frozen when it views a writable array."""
    arr = np.asarray(a)
    base = arr
    while isinstance(base, np.ndarray):
        if base.flags.writeable:
            break
        base = base.base
    else:
        return arr
    if arr.base is not None:
        arr = arr.copy()
    arr.setflags(write=False)
    return arr


_ARRAYS = ("dev_kind", "dev_node", "dev_domain", "dev_local", "dev_level", "dev_pod", "dev_part", "dev_units",
           "link_src", "link_dst", "link_capacity", "link_latency", "link_tech", "link_count", "gpu_device",
           "gpu_nic", "gpu_cpu", "link_origin")


@dataclass(frozen=True, eq=False, repr=False)
class Topology:
    """A cluster as devices and directed links: an immutable value.

    Every array is read-only, `parts`/`techs` are tuples and `features` a read-only mapping, so nothing derived
    from a topology (routes, link classes, NCCL systems, unit timings, kept in its own bounded store, see
    `derive`) can go stale. A what-if change is a new topology made by `fabricsim.topology.variants`. What is
    derived from the devices and links alone (`derive_structure`) lives in a second store, which a calibrated
    variant (`variants.with_calibration`: the same devices and links, other fitted efficiencies and latencies)
    shares with the topology it came from.

    Device arrays (length n_devices):
      dev_kind   int8   DeviceKind
      dev_node   int32  host (server / compute tray) index; -1 for fabric switches
      dev_domain int32  NVLink domain index (server, or rack for NVL72); -1 for fabric switches
      dev_local  int32  index inside its host for GPU/NIC/PCIe switch/CPU (a NIC's rail);
                        index inside its (pod, level) for fabric switches
      dev_level  int8   fabric tier for FABRIC_SWITCH (1 leaf, 2 spine, 3 core); 0 otherwise
      dev_pod    int32  scalable unit / pod of a fabric switch or host; -1 if none
      dev_part   int16  index into `parts` (catalog part name)
      dev_units  int16  physical chips this device stands for (NVSwitch aggregation); 1 otherwise

    Link arrays (length n_links, directed, created in opposite pairs):
      link_src, link_dst  int32   device indices
      link_capacity       float64 bytes/s in this direction
      link_latency        float64 seconds (wire + the receiving port's hop latency)
      link_tech           int16   index into `techs` (link technology name)
      link_count          int16   physical links aggregated into this one

    GPU ranks:
      gpu_device int32  device index of GPU rank r
      gpu_nic    int32  device index of GPU rank r's own NIC (-1: none)
      gpu_cpu    int32  device index of GPU rank r's CPU socket

    link_origin (int64, or None): a variant without some links (`variants.without_links`) numbers its links
    anew; its link l is link `link_origin[l]` of the topology that was built (None: the built numbering).
    """

    name: str
    dev_kind: np.ndarray
    dev_node: np.ndarray
    dev_domain: np.ndarray
    dev_local: np.ndarray
    dev_level: np.ndarray
    dev_pod: np.ndarray
    dev_part: np.ndarray
    dev_units: np.ndarray
    parts: tuple[str, ...]
    link_src: np.ndarray
    link_dst: np.ndarray
    link_capacity: np.ndarray
    link_latency: np.ndarray
    link_tech: np.ndarray
    link_count: np.ndarray
    techs: tuple[str, ...]
    gpu_device: np.ndarray
    gpu_nic: np.ndarray | None = None  # NIC device each GPU rank uses by default (its PCIe-closest NIC), -1 if none
    gpu_cpu: np.ndarray | None = None  # CPU device whose memory a GPU rank's host bounce uses
    spec: Any = None  # the ClusterSpec this topology was built from (for save / round trip)
    features: Mapping[str, Any] = field(default_factory=dict)  # e.g. sharp, gpudirect, nvls, fabric (read-only)
    link_origin: np.ndarray | None = None  # link index in the built topology (variants without links), None: same
    _derived: DerivedStore = field(init=False, repr=False, compare=False)
    _structure: DerivedStore = field(init=False, repr=False, compare=False)
    _sized: DerivedStore = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in _ARRAYS:
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _read_only(value))
        object.__setattr__(self, "parts", tuple(self.parts))
        object.__setattr__(self, "techs", tuple(self.techs))
        object.__setattr__(self, "features", MappingProxyType(dict(self.features)))
        object.__setattr__(self, "_derived", DerivedStore())
        object.__setattr__(self, "_structure", DerivedStore())
        object.__setattr__(self, "_sized", DerivedStore(SIZED_ENTRIES, SIZED_BYTES, keep_oversized=False))

    def __reduce__(self):
        """Pickled as its fields (features as a plain dict); the derived stores start empty on the other side."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        values["features"] = dict(self.features)
        return (_rebuild, (values,))

    def __repr__(self) -> str:
        return f"Topology({self.name!r}: {self.n_gpus} GPUs, {self.n_devices} devices, {self.n_links} links)"

    def derive(self, key: Hashable, compute: Callable[[], T]) -> T:
        """Data derived from this topology, computed once by `compute()` and kept in its bounded store
        (`fabricsim.topology.derived`) under `key`, a tuple naming the kind first: ('routes', ...), ('tables',)."""
        return self._derived.get(key, compute)

    def derive_structure(self, key: Hashable, compute: Callable[[], T], per_size: bool = False) -> T:
        """As `derive`, for data that follows from the devices, links and features alone and reads nothing of the
        spec's `calibrated:` section, neither directly nor through effective capacities or NCCL's latencies
        (routing tables, routes, unit traffic and its flows, link classes, NCCL's system): kept in a store this
        topology shares with its calibrated variants, so a calibration fit routes each pattern once. `per_size`:
        an entry per message size (a call's plan at its own size), kept in a store of its own bound."""
        return (self._sized if per_size else self._structure).get(key, compute)

    @property
    def n_devices(self) -> int:
        return int(self.dev_kind.shape[0])

    @property
    def n_links(self) -> int:
        return int(self.link_src.shape[0])

    @property
    def n_gpus(self) -> int:
        return int(self.gpu_device.shape[0])

    @property
    def gpu_node(self) -> np.ndarray:
        """Host index of each GPU rank."""
        return self.derive(("gpu_node",), lambda: self.dev_node[self.gpu_device])

    @property
    def gpu_domain(self) -> np.ndarray:
        """NVLink domain index of each GPU rank."""
        return self.derive(("gpu_domain",), lambda: self.dev_domain[self.gpu_device])

    @property
    def out_ptr(self) -> np.ndarray:
        """CSR row pointers of outgoing links per device: links of device d are
        `out_links[out_ptr[d]:out_ptr[d+1]]`."""
        return self.derive(("out_ptr",), self._out_ptr)

    def _out_ptr(self) -> np.ndarray:
        counts = np.bincount(self.link_src, minlength=self.n_devices)
        ptr = np.zeros(self.n_devices + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        return ptr

    @property
    def out_links(self) -> np.ndarray:
        """Outgoing link indices grouped by source device (stable order)."""
        return self.derive(("out_links",), lambda: np.argsort(self.link_src, kind="stable").astype(np.int32))

    def links_from(self, device: int) -> np.ndarray:
        """Indices of the links leaving `device`."""
        return self.out_links[self.out_ptr[device] : self.out_ptr[device + 1]]

    def devices_of(self, kind: DeviceKind) -> np.ndarray:
        """Indices of every device of `kind`."""
        return np.flatnonzero(self.dev_kind == kind).astype(np.int32)

    def gpu_part(self, rank: int = 0) -> str:
        """The catalog part name of GPU `rank` (`hardware.get_gpu` looks it up; clusters are homogeneous, so rank 0
        names every GPU's)."""
        return self.parts[int(self.dev_part[int(self.gpu_device[rank])])]

    def device_name(self, d: int) -> str:
        """A readable name, made on demand (names are not stored: 131k GPUs)."""
        kind = DeviceKind(int(self.dev_kind[d]))
        if kind == DeviceKind.FABRIC_SWITCH:
            tier = {1: "leaf", 2: "spine", 3: "core"}.get(int(self.dev_level[d]), f"l{int(self.dev_level[d])}")
            pod = int(self.dev_pod[d])
            where = f"su{pod}." if pod >= 0 else ""
            return f"{where}{tier}{int(self.dev_local[d])}"
        label = {
            DeviceKind.GPU: "gpu",
            DeviceKind.CPU: "cpu",
            DeviceKind.PCIE_SWITCH: "pcisw",
            DeviceKind.NIC: "nic",
            DeviceKind.NVSWITCH: "nvswitch",
        }[kind]
        if kind == DeviceKind.NVSWITCH:
            return f"domain{int(self.dev_domain[d])}.{label}{int(self.dev_local[d])}"
        return f"node{int(self.dev_node[d])}.{label}{int(self.dev_local[d])}"

    def link_name(self, link: int) -> str:
        """`src -> dst (tech)` for reports."""
        s, t = int(self.link_src[link]), int(self.link_dst[link])
        return f"{self.device_name(s)} -> {self.device_name(t)} ({self.techs[int(self.link_tech[link])]})"


def _rebuild(values: dict) -> Topology:
    return Topology(**values)


def share_structure(variant: Topology, parent: Topology) -> Topology:
    """`variant`, made to share `parent`'s store of structural data (`Topology.derive_structure`): only for a
    variant with the same devices, links and features whose spec differs in its `calibrated:` section alone
    (`variants.with_calibration`)."""
    object.__setattr__(variant, "_structure", parent._structure)
    object.__setattr__(variant, "_sized", parent._sized)
    return variant
