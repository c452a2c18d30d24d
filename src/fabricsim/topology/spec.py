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
from fabricsim.topology.calibrated import Calibrated
from fabricsim.errors import FabricsimError
from fabricsim.topology.faults import NO_FAULTS, Faults

Scaleup = Literal["nvswitch", "nvlink-mesh", "nvlink-bridge", "nvl72", "pcie"]
Fabric = Literal["infiniband", "roce", "ethernet", "none"]
HostCpu = Literal["x86", "grace"]
Routing = Literal["ecmp", "adaptive"]
Transport = Literal["auto", "ib", "roce", "efa", "tcpx", "tcpxo", "socket"]
CpuVendor = Literal["auto", "intel", "amd"]
PcieGen = Literal[0, 3, 4, 5, 6]
Lanes = Literal[1, 2, 4, 8, 16]
SCALEUPS, FABRICS, HOST_CPUS, ROUTINGS, TRANSPORTS = (get_args(t) for t in (Scaleup, Fabric, HostCpu, Routing, Transport))

# Bounds: beyond every built or planned system, and what keeps a topology's arrays small and exact.
MAX_GPUS = 1 << 21  # 2,097,152: beyond every planned cluster; bounds memory (a 131k-GPU topology takes ~0.2 GiB)
MAX_PER_NODE = 1024  # GPUs, NICs, PCIe switches or CPUs in one server or tray (servers carry 8-16 GPUs and NICs)
MAX_NVSWITCH_CHIPS = 4096  # per NVLink domain (GB200 NVL72 has 18); the topology counts them in int16
MAX_NIC_GBPS = 10_000.0  # Gb/s per NIC port: over 10x the fastest port in the catalog (CX-8, 800 Gb/s)
MAX_OVERSUBSCRIPTION = 1000.0  # leaf down:up bandwidth ratio
MAX_NIC_PORTS = 8  # ports of one NIC card in use (dual-port cards: 2)
MAX_NVLINKS = 64  # NVLinks of one GPU (B200 has 18)

# Fields added after cluster files were first written: `to_yaml` writes them only where they differ from their
# default, so a file written before they existed reads and writes back byte for byte.
_WRITTEN_WHEN_SET = ("transport", "nic_ports", "pcie_gen", "pcie_lanes", "pcie_switch_lanes", "nvlinks", "cpu_vendor",
                     "rack_trays", "domain_racks", "ecmp_seed", "calibrated")


@dataclass(frozen=True)
class ClusterSpec:
    """A cluster: nodes of identical servers (or NVL72 compute trays) joined by a fat tree.

    scaleup: 'nvswitch' (one NVLink domain per node), 'nvlink-mesh' (DGX-1 hybrid cube-mesh),
    'nvl72' (rack-scale domain of `domain_size` GPUs over several trays), 'pcie' (no NVLink).
    domain_size: required for nvl72; elsewhere the domain is one node, so it may be left out (0: gpus_per_node).
    nic_gbps: line rate used per NIC port (Gb/s). oversubscription: leaf down:up bandwidth ratio.
    su_nodes: nodes per scalable unit (rail-optimised fabrics cable rail k of one SU to leaf k).
    nvswitch_chips: NVSwitch chips per NVLink domain (0 when there is no NVSwitch).
    nvls: NVLink SHARP (NCCL's NVLS / NVLSTree) in use; left out, it follows the hardware: on where the NVLink
    domain's NVSwitch generation reduces in the switch (NVSwitch 3 with Hopper, 4 with Blackwell), off elsewhere, as
    NCCL does by default (src/transport/nvls.cc: NCCL_PARAM(NvlsEnable, "NVLS_ENABLE", 2), 2 = on where the GPU
    reports multicast support, i.e. an NVLS-capable NVSwitch). Set it to false for NCCL_NVLS_ENABLE=0.
    sharp: IB SHARP in-network reductions enabled for collectives (NCCL's CollNet plugin with
    NCCL_COLLNET_ENABLE=1); off by default, as in NCCL, even where the switches support it.
    pcie_switch: catalog PCIe switch part ('' when pcie_switches_per_node is 0).
    leaf_switch / spine_switch: catalog fabric switch parts (the core tier uses the spine part).
    routing: how the fat tree spreads flows over equal-cost paths: 'ecmp' (static, one hashed path per
    flow: Ethernet ECMP, InfiniBand's static forwarding tables) or 'adaptive' (every flow spread evenly
    over all paths: InfiniBand adaptive routing, Spectrum-X packet spraying, EFA's SRD).
    ecmp_seed: the switches' hash seed under 'ecmp' (which flows share an uplink is the hash's luck; `perf
    --ecmp-seeds N` reports the spread over N seeds from this one).

    What a user reads off `nvidia-smi topo -m`, `ibstat` and the instance page:
    transport: the software moving bytes over the fabric (hardware.TRANSPORTS): 'ib' (NCCL's IB verbs on
    InfiniBand), 'roce' (the same over RoCEv2), 'efa' (AWS EFA via aws-ofi-nccl), 'tcpx' / 'tcpxo' (GCP
    GPUDirect-TCPX / TCPXO), 'socket' (NCCL's TCP sockets); 'auto': ib on InfiniBand, roce on Ethernet.
    nics_per_node / nic_ports: NIC cards per server and the ports of each card in use (nic_gbps is per port).
    NICs sit evenly among the GPUs: with at least as many cards as GPUs each GPU owns nics_per_node /
    gpus_per_node cards (4 EFA devices per GPU on p5) and uses all their ports together; with fewer, each card
    is shared by gpus_per_node / nics_per_node neighbouring GPUs (4 NICs for 8 GPUs on DGX-1 and A3 High).
    pcie_gen / pcie_lanes: the generation (0: the GPU's own) and width of each GPU's PCIe link;
    pcie_switch_lanes: the width of each PCIe switch's uplink to its CPU.
    nvlinks: NVLinks per GPU (nvswitch / nvl72: to the NVSwitches; nvlink-bridge and the 2-GPU nvlink-mesh:
    between the two GPUs of a pair); 0: the catalog GPU's own count. scaleup 'nvlink-bridge': GPUs 2i and
    2i+1 joined by NVLink bridges, every other pair over PCIe (A100 / H100 PCIe cards, RTX A6000).
    cpu_vendor: the x86 hosts' vendor ('auto': Intel): AMD EPYC hosts join their sockets by Infinity Fabric and
    change NCCL's constants (tuning.cc llMaxBws, getNetOverhead). cpus_per_node is the CPU sockets per server.
    rack_trays / domain_racks (nvl72): compute trays a rack holds (0: as many as the NVLink domain uses) and the
    racks one NVLink domain spans; the domain's trays in use are domain_size / gpus_per_node.
    faults: parts that are down or degraded (`topology.faults`); `build` applies them to the healthy cluster.
    calibrated: physical parameters `fabricsim calibrate` fitted to the user's logs (topology.calibrated);
    None: the catalog's figures.
    """

    name: Annotated[str, Meta(min_length=1, description="cluster name, printed in every report")]
    gpu: Annotated[str, Meta(min_length=1, description="catalog GPU, e.g. H100, B200, GB200")]
    nodes: Annotated[int, Meta(ge=1, le=MAX_GPUS, description="servers, or compute trays for nvl72")]
    gpus_per_node: Annotated[int, Meta(ge=1, le=MAX_PER_NODE, description="GPUs per server or tray")]
    scaleup: Annotated[Scaleup, Meta(description="how GPUs of one NVLink domain connect")]
    domain_size: Annotated[int, Meta(ge=0, le=MAX_GPUS, description="GPUs per NVLink domain (nvl72: several trays, "
                                                                  "required); 0 or left out: one node's GPUs")] = 0
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
    nvls: Annotated[bool | None, Meta(description="NVLink SHARP reductions in the NVSwitch (NCCL's NVLS algorithms); "
                                                  "unset: on where the GPU's NVSwitch reduces (third-generation "
                                                  "NVSwitch and later), as NCCL_NVLS_ENABLE's default")] = None
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
    transport: Annotated[Transport, Meta(description="network transport: ib, roce, efa, tcpx, tcpxo, socket; "
                                                     "auto: ib on InfiniBand, roce on Ethernet")] = "auto"
    nic_ports: Annotated[int, Meta(ge=1, le=MAX_NIC_PORTS, description="ports in use per NIC card (dual-port: 2); "
                                                                        "nic_gbps is per port")] = 1
    pcie_gen: Annotated[PcieGen, Meta(description="PCIe generation of each GPU's link (0: the GPU's own)")] = 0
    pcie_lanes: Annotated[Lanes, Meta(description="PCIe lanes of each GPU's link")] = 16
    pcie_switch_lanes: Annotated[Lanes, Meta(description="PCIe lanes of each PCIe switch's uplink to its CPU")] = 16
    nvlinks: Annotated[int, Meta(ge=0, le=MAX_NVLINKS, description="NVLinks per GPU (bridge: per pair); 0: the "
                                                                   "catalog GPU's")] = 0
    cpu_vendor: Annotated[CpuVendor, Meta(description="x86 host CPU vendor (auto: intel)")] = "auto"
    rack_trays: Annotated[int, Meta(ge=0, le=MAX_PER_NODE, description="nvl72: compute trays per rack (0: those "
                                                                       "in use)")] = 0
    domain_racks: Annotated[int, Meta(ge=1, le=MAX_PER_NODE, description="nvl72: racks one NVLink domain "
                                                                         "spans")] = 1
    ecmp_seed: Annotated[int, Meta(ge=0, le=2**32 - 1, description="the switches' ECMP hash seed: which equal-cost "
                                                                   "path each flow takes (ecmp routing)")] = 0
    calibrated: Annotated[Calibrated | None, Meta(description="parameters fitted to the user's nccl-tests logs "
                                                               "(fabricsim calibrate), with their provenance")] = None
    faults: Annotated[Faults, Meta(description="failed and degraded parts (fail, degrade, seed)")] = NO_FAULTS

    def __post_init__(self) -> None:
        inputs.check_fields(self, "cluster")  # types and ranges, as a file is read; ints given for floats become floats
        if self.domain_size == 0:  # left out: the NVLink domain is one node, which every scale-up but nvl72 requires
            if self.scaleup == "nvl72":
                raise FabricsimError("scaleup 'nvl72' needs domain_size: the GPUs of one NVLink domain (72 for a "
                                     "GB200 NVL72 rack's 18 trays of 4)")
            object.__setattr__(self, "domain_size", self.gpus_per_node)
        if self.nvls is None:  # a spec holds the value in force, so a file written from it says which
            object.__setattr__(self, "nvls", nvls_supported(self))
        _check_values(self)

    def fields(self) -> dict:
        """The spec as plain data (JSON and YAML ready), as a cluster file writes it: fields added later only where set
        (so a file, or a sweep's key hashed from these, stays the same when a new field arrives); the faults as a
        mapping of lists, left out when there are none (a seed alone is kept, so the spec reads back equal)."""
        import msgspec

        values = dataclasses.asdict(self)
        del values["faults"]  # a msgspec Struct, which asdict copies as it is
        for name in _WRITTEN_WHEN_SET:
            if values[name] == _DEFAULTS[name]:
                del values[name]
        if self.faults != NO_FAULTS:  # a healthy cluster's file has no faults section
            values["faults"] = {k: list(v) if isinstance(v, tuple) else v
                                for k, v in msgspec.to_builtins(self.faults).items()}
        return values

    def to_yaml(self) -> str:
        """YAML text that `from_yaml` reads back into an equal spec."""
        import yaml  # here, not at module level: a preset run never loads the YAML parser

        values = self.fields()
        if values.get("calibrated") is not None:  # tuples as YAML lists
            cal = {k: v for k, v in values["calibrated"].items() if v is not None}
            cal["logs"] = list(cal.get("logs", ()))
            for entry in cal.values():
                if isinstance(entry, dict):
                    entry["logs"] = list(entry["logs"])
            values["calibrated"] = cal
        return yaml.safe_dump(values, sort_keys=False)

    @property
    def net_transport(self) -> str:
        """The transport the fabric runs ('' without a fabric): `transport`, or the fabric's own for 'auto'."""
        return hardware.DEFAULT_TRANSPORT[self.fabric] if self.transport == "auto" else self.transport

    @property
    def vendor(self) -> str:
        """The host CPU vendor as NCCL tells them apart: 'arm' (Grace), 'amd' or 'intel'."""
        return "arm" if self.host_cpu == "grace" else "amd" if self.cpu_vendor == "amd" else "intel"

    @property
    def net_devices(self) -> int:
        """NCCL's network devices per node: one per NIC card (its ports fused, NCCL_NET_MERGE_LEVEL's default), or one
        per GPU's NIC group where the transport's plugin groups a GPU's NICs (aws-ofi-nccl on EFA)."""
        t = hardware.TRANSPORTS.get(self.net_transport)
        if t is not None and t.fuses_local_nics and self.nics_per_node >= self.gpus_per_node:
            return self.gpus_per_node
        return self.nics_per_node

    @property
    def nics_per_gpu(self) -> int:
        """NIC ports each GPU sends on (its own cards' ports, or the ports of the card it shares); 0 without NICs."""
        if not self.nics_per_node:
            return 0
        return self.nic_ports * max(1, self.nics_per_node // self.gpus_per_node)

    @classmethod
    def from_yaml(cls, text_or_path: str | Path) -> ClusterSpec:
        """Parse YAML text or a .yaml/.yml file; every problem is one FabricsimError naming the file and field."""
        if isinstance(text_or_path, Path) or ("\n" not in text_or_path and text_or_path.endswith((".yaml", ".yml"))):
            where, text = str(text_or_path), inputs.read_text(text_or_path, "cluster file")
        else:
            where, text = "cluster YAML", str(text_or_path)
        return inputs.convert(inputs.parse_yaml(text, where), cls, where,
                              " (`fabricsim schema cluster` prints every field)")


_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ClusterSpec)}


def nvls_supported(s: ClusterSpec) -> bool:
    """Whether the cluster's NVLink domain can run NVLS: NVSwitch scale-up whose switch generation (the one speaking
    the GPU's NVLink) reduces in the switch (hardware.switches: reduction 'nvls')."""
    if s.scaleup not in ("nvswitch", "nvl72"):
        return False
    link = hardware.get_gpu(s.gpu).scaleup_link
    sw = hardware.nvswitch_for(link)
    return sw is not None and sw.reduction == "nvls"


def _check_values(s: ClusterSpec) -> None:
    """Checks across fields and against the hardware catalog (each field's own type and range: the annotations)."""
    gpu = hardware.get_gpu(s.gpu)
    if s.scaleup != "pcie" and not (gpu.scaleup_link and gpu.scaleup_links):
        raise FabricsimError(f"GPU {gpu.name} has no NVLink, so scaleup '{s.scaleup}' has nothing to join its GPUs: "
                             "set scaleup: pcie" + (" and nvswitch_chips: 0" if s.nvswitch_chips else ""))
    if s.scaleup in ("nvswitch", "nvl72") and hardware.nvswitch_for(gpu.scaleup_link) is None:
        raise FabricsimError(f"no NVSwitch in the catalog has {gpu.scaleup_link} ports ({gpu.name}'s NVLink): use "
                             "scaleup 'nvlink-mesh' or 'pcie' for this GPU")
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
    if s.nvswitch_chips and s.scaleup not in ("nvswitch", "nvl72"):  # else silently built without them
        raise FabricsimError(f"nvswitch_chips {s.nvswitch_chips} needs scaleup 'nvswitch' or 'nvl72', but scaleup is "
                             f"'{s.scaleup}' (no NVSwitch): set nvswitch_chips: 0, or change scaleup")
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
        _check_parts_speak(s)
    elif s.nics_per_node:
        hardware.get_nic(s.nic)
    _check_layout(s, gpu)
    _check_transport(s)


def _check_parts_speak(s: ClusterSpec) -> None:
    """The NIC's ports and the leaf and spine switches speak the fabric's network: InfiniBand parts on an
    'infiniband' fabric, Ethernet parts on 'roce' / 'ethernet' (the catalog has a part per mode, e.g. cx7, cx7-eth)."""
    want = "infiniband" if s.fabric == "infiniband" else "ethernet"
    nic = hardware.get_nic(s.nic)
    parts = [("nic", s.nic, hardware.get_link(nic.port_link).kind, "NIC",
              [n.name for n in hardware.NICS.values() if hardware.get_link(n.port_link).kind == want])]
    for role in ("leaf_switch", "spine_switch"):
        name = getattr(s, role)
        parts.append((role, name, hardware.get_switch(name).kind, "switch",
                      [w.name for w in hardware.SWITCHES.values() if w.kind == want]))
    for role, name, kind, what, fits in parts:
        if kind != want:
            raise FabricsimError(f"{role} {name} is {'a' if kind == 'pcie' else 'an'} {kind!r} {what} but the fabric is "
                                 f"{s.fabric!r}: pick an {want!r} {what} ({', '.join(fits)})")


def _nic_counts_near(nics: int, gpus: int) -> list[int]:
    """The NIC counts next to `nics` that divide or are a multiple of `gpus` (the nearest below and above, and one
    per GPU), as the fix a layout error offers."""
    valid = [d for d in range(1, gpus + 1) if gpus % d == 0]
    below = max((d for d in valid if d < nics), default=None)
    above = min((d for d in valid if d > nics), default=-(-nics // gpus) * gpus)
    return sorted({n for n in (below, above, gpus) if n is not None})


def _check_layout(s: ClusterSpec, gpu) -> None:
    """NICs among GPUs, NVLinks, PCIe, hosts and racks: the combinations a server can have."""
    R, G = s.nics_per_node, s.gpus_per_node
    if R and R % G and G % R:
        near = _nic_counts_near(R, G)
        raise FabricsimError(f"nics_per_node {R} neither divides nor is a multiple of gpus_per_node {G}: a cluster file "
                             "spreads NIC cards evenly among the GPUs; give the cards the GPUs use (e.g. the compute "
                             f"NICs, {', '.join(map(str, near[:-1]))} or {near[-1]})")
    if s.nic_ports > 1:
        if not R:
            raise FabricsimError(f"nic_ports {s.nic_ports} needs NICs: set nics_per_node and nic, or nic_ports: 1")
        nic = hardware.get_nic(s.nic)
        if s.nic_ports > nic.ports:
            raise FabricsimError(f"nic_ports {s.nic_ports}: NIC {nic.name} has {nic.ports} port"
                                 f"{'s' * (nic.ports != 1)}: pick a {s.nic_ports}-port card (e.g. cx6dx-eth, cx8-eth) "
                                 "or count each port's card")
    if s.nvlinks and s.scaleup == "pcie":
        raise FabricsimError(f"nvlinks {s.nvlinks} with scaleup 'pcie': GPUs on PCIe only have no NVLinks; set nvlinks: 0 "
                             "or scaleup nvswitch / nvlink-bridge")
    if s.nvlinks > gpu.scaleup_links:
        raise FabricsimError(f"nvlinks {s.nvlinks}: a {gpu.name} has {gpu.scaleup_links} NVLinks: use at most that")
    if s.scaleup == "nvlink-bridge" and G % 2:
        raise FabricsimError(f"scaleup 'nvlink-bridge' joins GPUs in pairs, but gpus_per_node is {G}: use an even count")
    if s.scaleup == "nvlink-mesh" and s.nvlinks and G != 2 and s.nvlinks != gpu.scaleup_links:
        raise FabricsimError(f"nvlinks {s.nvlinks} with the DGX-1 cube-mesh: the mesh uses all {gpu.scaleup_links} "
                             "links of each GPU; set nvlinks: 0, or use scaleup 'nvlink-bridge' for bridged pairs")
    if s.pcie_gen and s.host_cpu == "grace" and not s.pcie_switches_per_node:
        raise FabricsimError(f"pcie_gen {s.pcie_gen}: the GPUs of a Grace host reach it over NVLink-C2C, not PCIe; "
                             "set pcie_gen: 0")
    if s.pcie_switch_lanes != 16 and not s.pcie_switches_per_node:
        raise FabricsimError(f"pcie_switch_lanes {s.pcie_switch_lanes} needs PCIe switches: set pcie_switches_per_node "
                             "or pcie_switch_lanes: 16")
    if s.cpu_vendor != "auto" and s.host_cpu == "grace":
        raise FabricsimError(f"cpu_vendor '{s.cpu_vendor}' with host_cpu grace: Grace is an Arm CPU; set cpu_vendor: auto")
    if s.scaleup != "nvl72" and (s.rack_trays or s.domain_racks != 1):
        raise FabricsimError("rack_trays and domain_racks describe NVL72-style racks: set scaleup nvl72, or leave them "
                             "out (rack_trays: 0, domain_racks: 1)")
    trays = s.domain_size // G
    if trays % s.domain_racks:
        raise FabricsimError(f"domain_racks {s.domain_racks} does not divide the NVLink domain's {trays} trays: each "
                             "rack of a domain holds the same trays")
    if s.rack_trays and trays // s.domain_racks > s.rack_trays:
        raise FabricsimError(f"the NVLink domain uses {trays // s.domain_racks} trays per rack but rack_trays is "
                             f"{s.rack_trays}: a rack cannot use more trays than it holds")


def _check_transport(s: ClusterSpec) -> None:
    """The transport against the fabric, the NIC part and GPUDirect."""
    if s.fabric == "none":
        if s.transport != "auto":
            raise FabricsimError(f"transport '{s.transport}' without a fabric: set fabric, or transport: auto")
        return
    if s.fabric == "ethernet" and s.transport == "ib":
        raise FabricsimError("transport 'ib' needs fabric infiniband (RoCE on Ethernet is transport roce)")
    t = hardware.TRANSPORTS[s.net_transport]
    if s.fabric not in t.fabrics:
        raise FabricsimError(f"transport '{t.name}' does not run on fabric '{s.fabric}' (it runs on "
                             f"{', '.join(t.fabrics)}): fix fabric or transport")
    nic = hardware.get_nic(s.nic)
    if t.name not in nic.transports:
        raise FabricsimError(f"NIC {nic.name} does not run transport '{t.name}' (it runs {', '.join(nic.transports)}): "
                             f"pick a NIC for {t.name}" + (" (efa-p4d, efa-p5, efa-p5en)" if t.name == "efa" else
                                                           " (gvnic-200)" if t.name in ("tcpx", "tcpxo") else ""))
    if s.gpudirect and not t.gpudirect:
        raise FabricsimError(f"transport '{t.name}' moves host memory only (no GPUDirect RDMA): set gpudirect: false")
