"""`ClusterSpec`: the YAML-able description of a cluster that `build()` turns into a Topology.

Plain data: every field is a scalar so a spec round-trips through YAML exactly. Checks run on
construction, so a spec that exists is well-formed (types, positive numbers, known catalog parts).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from pathlib import Path

from fabricsim import hardware
from fabricsim.errors import FabricsimError

SCALEUPS = ("nvswitch", "nvlink-mesh", "nvl72", "pcie")
FABRICS = ("infiniband", "roce", "none")
HOST_CPUS = ("x86", "grace")
ROUTINGS = ("ecmp", "adaptive")
MAX_GPUS = 1 << 21  # 2,097,152: beyond every planned cluster; bounds memory (a 131k-GPU topology takes ~0.2 GiB)
# Fields where 0 is meaningful: no NICs (and so no NIC speed), GPUs on CPU root ports, no NVSwitch.
_ZERO_OK = {"nics_per_node", "nic_gbps", "pcie_switches_per_node", "nvswitch_chips"}


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
    """

    name: str
    gpu: str
    nodes: int
    gpus_per_node: int
    scaleup: str
    domain_size: int
    nics_per_node: int = 0
    nic: str = ""
    nic_gbps: float = 0.0
    fabric: str = "none"
    levels: int | str = "auto"
    oversubscription: float = 1.0
    rail_optimized: bool = False
    sharp: bool = False
    gpudirect: bool = True
    nvls: bool = False
    pcie_switches_per_node: int = 0
    pcie_switch: str = ""
    p2p: bool = True
    su_nodes: int = 32
    leaf_switch: str = ""
    spine_switch: str = ""
    nvswitch_chips: int = 0
    cpus_per_node: int = 2
    host_cpu: str = "x86"
    routing: str = "ecmp"

    def __post_init__(self) -> None:
        for f in fields(self):
            _check_type(f.name, getattr(self, f.name), f.type)
            if f.type == "float":  # store ints given for float fields as floats (exact YAML round trip)
                object.__setattr__(self, f.name, float(getattr(self, f.name)))
        _check_values(self)

    def to_yaml(self) -> str:
        """YAML text that `from_yaml` reads back into an equal spec."""
        import yaml  # here, not at module level: a preset run never loads the YAML parser

        return yaml.safe_dump(dataclasses.asdict(self), sort_keys=False)

    @classmethod
    def from_yaml(cls, text_or_path: str | Path) -> ClusterSpec:
        """Parse YAML text or a .yaml/.yml file; every problem is one FabricsimError."""
        import yaml

        where, text = _read(text_or_path)
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
            line = f" line {mark.line + 1}" if mark is not None else ""
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            raise FabricsimError(f"{where}{line}: malformed YAML ({problem}): fix the syntax there") from None
        if not isinstance(data, dict):
            raise FabricsimError(f"{where}: expected a mapping of cluster fields (name: ..., gpu: ..., nodes: ...)")
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise FabricsimError(f"{where}: unknown key(s) {', '.join(unknown)}: valid keys are {', '.join(sorted(known))}")
        required = [f.name for f in fields(cls) if f.default is dataclasses.MISSING and f.name not in data]
        if required:
            raise FabricsimError(f"{where}: missing key(s) {', '.join(required)}: add them to the cluster file")
        try:
            return cls(**data)
        except FabricsimError as err:
            raise FabricsimError(f"{where}: {err}") from None


def _read(text_or_path: str | Path) -> tuple[str, str]:
    """(label for messages, YAML text) from a path or literal YAML text."""
    if isinstance(text_or_path, Path) or (
        "\n" not in text_or_path and str(text_or_path).endswith((".yaml", ".yml"))
    ):
        path = Path(text_or_path)
        try:
            return str(path), path.read_text()
        except OSError as err:
            raise FabricsimError(f"cannot read cluster file {path}: {err.strerror}; check the path") from None
        except UnicodeDecodeError:
            raise FabricsimError(f"cluster file {path} is not UTF-8 text: give a YAML cluster file") from None
    return "cluster YAML", str(text_or_path)


def _check_type(name: str, value: object, typ: str) -> None:
    ok = {
        "str": isinstance(value, str),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, (int, float)) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
        "int | str": (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str),
    }[typ]
    if not ok:
        want = {"int | str": "1, 2, 3 or 'auto'", "float": "a number"}.get(typ, f"a {typ}")
        raise FabricsimError(f"cluster field '{name}' is {value!r} ({type(value).__name__}): it must be {want}")


def _one_of(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise FabricsimError(f"cluster field '{name}' is '{value}': use one of {', '.join(allowed)}")


def _check_values(s: ClusterSpec) -> None:
    for f in fields(s):
        v = getattr(s, f.name)
        if f.type in ("int", "float") and (v < 0 or (v == 0 and f.name not in _ZERO_OK)):
            raise FabricsimError(f"cluster field '{f.name}' is {v}: it must be {'>= 0' if f.name in _ZERO_OK else '> 0'}")
    if not s.name:
        raise FabricsimError("cluster field 'name' is empty: give the cluster a name")
    _one_of("scaleup", s.scaleup, SCALEUPS)
    _one_of("fabric", s.fabric, FABRICS)
    _one_of("host_cpu", s.host_cpu, HOST_CPUS)
    _one_of("routing", s.routing, ROUTINGS)
    if s.levels not in (1, 2, 3, "auto"):
        raise FabricsimError(f"cluster field 'levels' is {s.levels!r}: use 1, 2, 3 or 'auto'")
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
