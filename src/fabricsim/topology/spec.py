"""`ClusterSpec`: the YAML-able description of a cluster that `build()` turns into a Topology.

Plain data: every field is a scalar so a spec round-trips through YAML exactly. Each field's type carries its
range (the schema `fabricsim schema cluster` prints); checks run on construction, so a spec that exists is
well-formed (types, ranges, cross-field rules, known catalog parts), whether read from a file or built in code.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, get_args

from msgspec import Meta

from fabricsim import hardware, inputs
from fabricsim.errors import FabricsimError
from fabricsim.topology.faults import NO_FAULTS, Faults

Scaleup = Literal["nvswitch", "nvlink-mesh", "nvl72", "pcie"]
Fabric = Literal["infiniband", "roce", "none"]
HostCpu = Literal["x86", "grace"]
Routing = Literal["ecmp", "adaptive"]
SCALEUPS, FABRICS, HOST_CPUS, ROUTINGS = (get_args(t) for t in (Scaleup, Fabric, HostCpu, Routing))

# Bounds: beyond every built or planned system, and what keeps a topology's arrays small and exact.
MAX_GPUS = 1 << 21  # 2,097,152: beyond every planned cluster; bounds memory (a 131k-GPU topology takes ~0.2 GiB)
MAX_PER_NODE = 1024  # GPUs, NICs, PCIe switches or CPUs in one server or tray (servers carry 8-16 GPUs and NICs)
MAX_NVSWITCH_CHIPS = 4096  # per NVLink domain (GB200 NVL72 has 18); the topology counts them in int16
MAX_NIC_GBPS = 10_000.0  # Gb/s per NIC port: over 10x the fastest port in the catalog (CX-8, 800 Gb/s)
MAX_OVERSUBSCRIPTION = 1000.0  # leaf down:up bandwidth ratio


@dataclass(frozen=True)
class ClusterSpec:
    """A cluster: nodes of identical servers (or NVL72 compute trays) joined by a fat tree.

    scaleup: 'nvswitch' (one NVLink domain per node), 'nvlink-mesh' (DGX-1 hybrid cube-mesh),
    'nvl72' (rack-scale domain of `domain_size` GPUs over several trays), 'pcie' (no NVLink).
    nic_gbps: line rate used per NIC port (Gb/s). oversubscription: leaf down:up bandwidth ratio.
    su_nodes: nodes per scalable unit (rail-optimised fabrics cable rail k of one SU to leaf k).
    nvswitch_chips: NVSwitch chips per NVLink domain (0 when there is no NVSwitch).
    sharp: IB SHARP in-network reductions enabled for collectives (NCCL's CollNet plugin with
    NCCL_COLLNET_ENABLE=1); off by default, as in NCCL, even where the switches support it.
    pcie_switch: catalog PCIe switch part ('' when pcie_switches_per_node is 0).
    leaf_switch / spine_switch: catalog fabric switch parts (the core tier uses the spine part).
    routing: how the fat tree spreads flows over equal-cost paths: 'ecmp' (static, one hashed path per
    flow: Ethernet ECMP, InfiniBand's static forwarding tables) or 'adaptive' (every flow spread evenly
    over all paths: InfiniBand adaptive routing, Spectrum-X packet spraying).
    faults: parts that are down or degraded (`topology.faults`); `build` applies them to the healthy cluster.
    """

    name: Annotated[str, Meta(min_length=1, description="cluster name, printed in every report")]
    gpu: Annotated[str, Meta(min_length=1, description="catalog GPU, e.g. H100, B200, GB200")]
    nodes: Annotated[int, Meta(ge=1, le=MAX_GPUS, description="servers, or compute trays for nvl72")]
    gpus_per_node: Annotated[int, Meta(ge=1, le=MAX_PER_NODE, description="GPUs per server or tray")]
    scaleup: Annotated[Scaleup, Meta(description="how GPUs of one NVLink domain connect")]
    domain_size: Annotated[int, Meta(ge=1, le=MAX_GPUS, description="GPUs per NVLink domain (nvl72: several trays)")]
    nics_per_node: Annotated[int, Meta(ge=0, le=MAX_PER_NODE, description="scale-out NICs per server or tray")] = 0
    nic: Annotated[str, Meta(description="catalog NIC, e.g. cx7 ('' without NICs)")] = ""
    nic_gbps: Annotated[float, Meta(ge=0, le=MAX_NIC_GBPS, description="line rate used per NIC port, Gb/s")] = 0.0
    fabric: Annotated[Fabric, Meta(description="scale-out network")] = "none"
    levels: Annotated[Literal[1, 2, 3, "auto"], Meta(description="fat-tree tiers, or auto")] = "auto"
    oversubscription: Annotated[float, Meta(gt=0, le=MAX_OVERSUBSCRIPTION,
                                            description="leaf down:up bandwidth ratio")] = 1.0
    rail_optimized: Annotated[bool, Meta(description="rail k of a scalable unit on leaf k")] = False
    sharp: Annotated[bool, Meta(description="IB SHARP reductions for collectives (NCCL CollNet)")] = False
    gpudirect: Annotated[bool, Meta(description="GPUDirect RDMA between GPU and NIC")] = True
    nvls: Annotated[bool, Meta(description="NVLink SHARP reductions in the NVSwitch")] = False
    pcie_switches_per_node: Annotated[int, Meta(ge=0, le=MAX_PER_NODE,
                                                description="PCIe switches per server (0: GPUs on root ports)")] = 0
    pcie_switch: Annotated[str, Meta(description="catalog PCIe switch, e.g. pcie-switch5")] = ""
    p2p: Annotated[bool, Meta(description="GPU peer-to-peer over PCIe allowed")] = True
    su_nodes: Annotated[int, Meta(ge=1, le=MAX_GPUS, description="nodes per scalable unit")] = 32
    leaf_switch: Annotated[str, Meta(description="catalog leaf switch, e.g. qm9700")] = ""
    spine_switch: Annotated[str, Meta(description="catalog spine (and core) switch")] = ""
    nvswitch_chips: Annotated[int, Meta(ge=0, le=MAX_NVSWITCH_CHIPS,
                                        description="NVSwitch chips per NVLink domain (0: none)")] = 0
    cpus_per_node: Annotated[int, Meta(ge=1, le=MAX_PER_NODE, description="CPU sockets per server or tray")] = 2
    host_cpu: Annotated[HostCpu, Meta(description="host CPU kind")] = "x86"
    routing: Annotated[Routing, Meta(description="fat-tree routing: ecmp (one hashed path) or adaptive")] = "ecmp"
    faults: Annotated[Faults, Meta(description="failed and degraded parts (fail, degrade, seed)")] = NO_FAULTS

    def __post_init__(self) -> None:
        inputs.check_fields(self, "cluster")  # types and ranges, as a file is read; ints given for floats become floats
        _check_values(self)

    def plain(self) -> dict:
        """The fields as plain data (JSON and YAML ready): the faults as a mapping of lists, left out when there are
        none (a seed alone is kept, so the spec reads back equal)."""
        import msgspec

        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if self.faults != NO_FAULTS:
            data["faults"] = {k: list(v) if isinstance(v, tuple) else v
                              for k, v in msgspec.to_builtins(self.faults).items()}
        else:
            del data["faults"]  # a healthy cluster's file has no faults section
        return data

    def to_yaml(self) -> str:
        """YAML text that `from_yaml` reads back into an equal spec."""
        import yaml  # here, not at module level: a preset run never loads the YAML parser

        return yaml.safe_dump(self.plain(), sort_keys=False)

    @classmethod
    def from_yaml(cls, text_or_path: str | Path) -> ClusterSpec:
        """Parse YAML text or a .yaml/.yml file; every problem is one FabricsimError naming the file and field."""
        if isinstance(text_or_path, Path) or ("\n" not in text_or_path and text_or_path.endswith((".yaml", ".yml"))):
            where, text = str(text_or_path), inputs.read_text(text_or_path, "cluster file")
        else:
            where, text = "cluster YAML", str(text_or_path)
        return inputs.convert(inputs.parse_yaml(text, where), cls, where,
                              " (`fabricsim schema cluster` prints every field)")


def _check_values(s: ClusterSpec) -> None:
    """Checks across fields and against the hardware catalog (each field's own type and range: the annotations)."""
    hardware.get_gpu(s.gpu)
    if s.scaleup == "nvl72":
        if s.domain_size % s.gpus_per_node:
            raise FabricsimError(
                f"domain_size {s.domain_size} is not a multiple of gpus_per_node {s.gpus_per_node}: an NVLink domain holds whole trays"
            )
        if s.nodes % (s.domain_size // s.gpus_per_node):
            per = s.domain_size // s.gpus_per_node
            raise FabricsimError(f"nodes {s.nodes} is not a multiple of {per} trays per NVLink domain: use whole racks")
    elif s.domain_size != s.gpus_per_node:
        raise FabricsimError(
            f"domain_size {s.domain_size} differs from gpus_per_node {s.gpus_per_node}: with scaleup '{s.scaleup}' the NVLink domain is one node"
        )
    if s.scaleup in ("nvswitch", "nvl72") and s.nvswitch_chips == 0:
        raise FabricsimError(f"scaleup '{s.scaleup}' needs nvswitch_chips > 0 (NVSwitch chips per NVLink domain)")
    if s.pcie_switches_per_node:
        if not s.pcie_switch:
            raise FabricsimError("pcie_switches_per_node > 0 needs pcie_switch (a catalog PCIe switch, e.g. pcie-switch5)")
        hardware.get_switch(s.pcie_switch)
    if s.nodes * s.gpus_per_node > MAX_GPUS:
        raise FabricsimError(f"{s.nodes * s.gpus_per_node:,} GPUs is more than fabricsim builds ({MAX_GPUS:,}): use fewer nodes")
    if s.nvls and s.scaleup not in ("nvswitch", "nvl72"):
        raise FabricsimError(f"nvls: true needs NVSwitch, but scaleup is '{s.scaleup}': set nvls: false or scaleup: nvswitch")
    if s.fabric != "none":
        if s.nics_per_node == 0 or s.nic_gbps == 0:
            raise FabricsimError(f"fabric '{s.fabric}' needs nics_per_node > 0 and nic_gbps > 0; or set fabric: none")
        missing = [k for k in ("nic", "leaf_switch", "spine_switch") if not getattr(s, k)]
        if missing:
            raise FabricsimError(f"fabric '{s.fabric}' needs {', '.join(missing)} (catalog part names, see `fabricsim topo "
                                 "show` of a preset); or set fabric: none")
        hardware.get_nic(s.nic)
        hardware.get_switch(s.leaf_switch)
        hardware.get_switch(s.spine_switch)
    elif s.nics_per_node:
        hardware.get_nic(s.nic)
