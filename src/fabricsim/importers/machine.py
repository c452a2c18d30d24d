"""The neutral description every importer produces: what one input file says about one server.

Plain data, no interpretation: each parser fills what its format states and leaves the rest empty
(`""`, `0`, `None`); `merge` combines several files about the same machine, and `mapping` turns the
result into a ClusterSpec. Keeping the formats apart from the cluster file means a format never needs
to know the spec, and a spec change touches one mapper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from fabricsim.errors import FabricsimError

# nvidia-smi topo -m path types between two PCIe devices, closest first (its legend; NCCL's PATH_PIX ..
# PATH_SYS in src/include/graph.h use the same names and order).
PATH_TYPES = ("PIX", "PXB", "PHB", "NODE", "SYS")


@dataclass(frozen=True)
class Gpu:
    """One GPU of the node, by its CUDA device index."""

    index: int
    busid: str = ""
    model: str = ""  # catalog GPU name where the input names the part
    sm: int = 0  # compute capability x 10, as NCCL's XML writes it (90 = Hopper)
    numa: int | None = None
    switch: str = ""  # the PCIe switch complex it hangs off ('' when on a CPU root port or not stated)
    pcie_gts: float = 0.0  # PCIe link speed, GT/s per lane
    pcie_width: int = 0


@dataclass(frozen=True)
class Nic:
    """One network port. `name` is the RDMA device (mlx5_0, rdmap79s0); '' where the input has only a PCI device."""

    name: str = ""
    busid: str = ""
    gbps: float = 0.0  # port rate
    link_layer: str = ""  # 'infiniband' | 'ethernet'
    transport: str = ""  # 'ib' | 'roce' | 'efa' | 'socket'
    model: str = ""  # catalog NIC family ('cx7', 'bf3') or 'efa' / 'vf' where the input says so
    numa: int | None = None
    switch: str = ""
    active: bool | None = None
    gdr: bool | None = None  # the input says GPUDirect RDMA is supported / used on this NIC


@dataclass(frozen=True)
class Machine:
    """What one input (or several, merged) says about a node and the job around it."""

    sources: tuple[str, ...]
    gpus: tuple[Gpu, ...] = ()
    nics: tuple[Nic, ...] = ()
    nvlinks: tuple[tuple[int, int, int], ...] = ()  # (gpu a, gpu b, links), a < b: direct GPU-GPU NVLinks
    nvswitch_links: tuple[tuple[int, str, int], ...] = ()  # (gpu, NVSwitch id, links)
    nvlink_fabric: tuple[tuple[int, int], ...] = ()  # (gpu, links) into an NVSwitch fabric the input does not list
    affinity: tuple[tuple[int, str, str], ...] = ()  # (gpu, nic key, PATH_TYPES entry)
    numa_nodes: int = 0
    cpu_arch: str = ""  # 'x86_64' | 'aarch64'
    cpu_vendor: str = ""
    nodes: int = 0  # nodes the job spanned (NCCL log nNodes, distinct hosts)
    ranks: int = 0
    local_ranks: int = 0  # ranks per node in the log
    nvls: bool | None = None
    mnnvl: bool | None = None
    gdr: bool | None = None  # network transfers used GPUDirect RDMA
    p2p: bool | None = None  # GPU-GPU transfers inside a node used P2P (True) or only host memory (False)
    net: str = ""  # NCCL network: 'IB', 'Socket', 'OFI'
    net_nics: tuple[str, ...] = ()  # the NICs NCCL says it uses (NET/IB : Using ...), in its order
    net_provider: str = ""  # libfabric provider of NCCL's OFI plugin ('efa')
    net_nic_count: int = 0  # NICs the network plugin found, where it does not name them
    sharp: bool | None = None  # CollNet / SHARP channels in use
    channels: int = 0  # NCCL coll channels
    nccl_version: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)  # facts read, for the report


def nic_key(nic: Nic) -> str:
    """How NICs are matched across inputs: the RDMA device name, else the PCI bus id."""
    return nic.name or f"pci:{nic.busid}"


def nic_order(nic: Nic) -> tuple:
    """Named NICs in natural name order (mlx5_2 before mlx5_10), then unnamed ones in bus order."""
    return (0, natural_key(nic.name), "") if nic.name else (1, (), nic.busid)


def natural_key(text: str) -> tuple:
    """'mlx5_10' after 'mlx5_9': digits compare as numbers."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


def _pick(field_name: str, what: str, a, b, src_a: str, src_b: str):
    """The value of a field known to one side; both sides set and different is a contradiction."""
    empty = (None, "", 0, 0.0)
    if a in empty:
        return b
    if b in empty or a == b:
        return a
    raise FabricsimError(f"{src_a} and {src_b} disagree on {what} {field_name} ({a!r} vs {b!r}): give files from "
                         "the same machine, or drop one")


def _merge_record(a, b, what: str, src_a: str, src_b: str):
    values = {f: _pick(f, what, getattr(a, f), getattr(b, f), src_a, src_b) for f in a.__dataclass_fields__}
    return replace(a, **values)


def _merge_gpus(a: Machine, b: Machine) -> tuple[Gpu, ...]:
    if not a.gpus or not b.gpus:
        return a.gpus or b.gpus
    if len(a.gpus) != len(b.gpus):
        raise FabricsimError(f"{', '.join(a.sources)} list {len(a.gpus)} GPUs per node but {', '.join(b.sources)} "
                             f"{len(b.gpus)}: give files from the same machine")
    src_a, src_b = ", ".join(a.sources), ", ".join(b.sources)
    return tuple(_merge_record(x, y, f"GPU{x.index}", src_a, src_b) for x, y in zip(a.gpus, b.gpus))


def _merge_nics(a: Machine, b: Machine) -> tuple[tuple[Nic, ...], tuple[str, ...], dict[str, str]]:
    """NICs of both sides matched by name (or bus id); NICs one side lists only by PCI address are paired
    with the other side's named NICs in order when the counts match. Returns (nics, notes, renamed keys)."""
    src_a, src_b = ", ".join(a.sources), ", ".join(b.sources)
    notes: list[str] = []
    renamed: dict[str, str] = {}
    left, right = list(a.nics), list(b.nics)
    unnamed_l = [n for n in left if not n.name]
    named_r = [n for n in right if n.name]
    unnamed_r = [n for n in right if not n.name]
    named_l = [n for n in left if n.name]
    for unnamed, named, side in ((unnamed_l, named_r, src_a), (unnamed_r, named_l, src_b)):
        if unnamed and named and not any(u.busid and u.busid in {n.busid for n in named} for u in unnamed):
            if len(unnamed) != len(named):
                continue
            pairs = zip(sorted(unnamed, key=lambda n: n.busid), sorted(named, key=lambda n: natural_key(n.name)))
            for u, n in pairs:
                renamed[nic_key(u)] = n.name
            notes.append(f"the {len(unnamed)} NICs {side} lists by PCI address are taken to be "
                         f"{', '.join(sorted((n.name for n in named), key=natural_key))} in bus order")
    by_key: dict[str, Nic] = {}
    order: list[str] = []
    for side, nics in ((src_a, left), (src_b, right)):
        for nic in nics:
            if nic_key(nic) in renamed:
                nic = replace(nic, name=renamed[nic_key(nic)])
            key = nic_key(nic)
            by_bus = next((k for k, v in by_key.items() if nic.busid and v.busid == nic.busid), None)
            key = by_bus or key
            if key in by_key:
                by_key[key] = _merge_record(by_key[key], nic, f"NIC {key}", src_a, src_b)
            else:
                by_key[key] = nic
                order.append(key)
    return tuple(by_key[k] for k in order), tuple(notes), renamed


def merge(machines: list[Machine]) -> Machine:
    """One description of the node from several inputs; contradictions are errors naming both files."""
    if not machines:
        raise FabricsimError("no input files: give at least one (NCCL topology XML, nvidia-smi topo -m output, "
                             "ibstat / ibv_devinfo output or an NCCL_DEBUG=INFO log)")
    out = machines[0]
    for m in machines[1:]:
        out = _merge_two(out, m)
    return out


def _without_switches(m: Machine) -> Machine:
    return replace(m, gpus=tuple(replace(g, switch="") for g in m.gpus),
                   nics=tuple(replace(n, switch="") for n in m.nics))


def _merge_two(a: Machine, b: Machine) -> Machine:
    src_a, src_b = ", ".join(a.sources), ", ".join(b.sources)
    # PCIe switch labels only mean something inside one input: keep the first input's that has any.
    if any(g.switch for g in a.gpus) or any(n.switch for n in a.nics):
        b = _without_switches(b)
    else:
        a = _without_switches(a)
    nics, notes, renamed = _merge_nics(a, b)

    def aff(m: Machine):
        return tuple((g, renamed.get(k, k), t) for g, k, t in m.affinity)

    merged_aff = {(g, k): t for g, k, t in aff(a)}
    for g, k, t in aff(b):
        merged_aff.setdefault((g, k), t)
    links = {(x, y): c for x, y, c in a.nvlinks}
    for x, y, c in b.nvlinks:
        _pick("NVLinks", f"GPU{x}-GPU{y}", links.get((x, y), 0), c, src_a, src_b)
        links[(x, y)] = c
    scalars = {}
    for name in ("numa_nodes", "cpu_arch", "cpu_vendor", "nodes", "ranks", "local_ranks", "nvls", "mnnvl", "gdr",
                 "p2p", "net", "net_provider", "net_nic_count", "sharp", "channels", "nccl_version"):
        scalars[name] = _pick(name.replace("_", " "), "the job's", getattr(a, name), getattr(b, name), src_a, src_b)
    return Machine(
        sources=a.sources + b.sources,
        gpus=_merge_gpus(a, b),
        nics=nics,
        nvlinks=tuple((x, y, c) for (x, y), c in sorted(links.items())),
        nvswitch_links=a.nvswitch_links or b.nvswitch_links,
        nvlink_fabric=a.nvlink_fabric or b.nvlink_fabric,
        affinity=tuple((g, k, t) for (g, k), t in merged_aff.items()),
        net_nics=a.net_nics or b.net_nics,
        notes=a.notes + b.notes + notes,
        **scalars,
    )
