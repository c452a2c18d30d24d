"""NCCL's topology XML: what `NCCL_TOPO_DUMP_FILE` writes and the files vendors ship for `NCCL_TOPO_FILE`.

Elements and attributes as NCCL's src/graph/xml.cc reads and writes them (ncclTopoGetSystem in src/graph/topo.cc):
`<system>` > `<cpu numaid arch vendor>` > `<pci busid class link_speed link_width>` (nested for PCIe
switches) > `<gpu dev sm gdr>` (> `<nvlink target count tclass>`) or `<nic>` > `<net name speed port gdr>`.
PCI classes (PCI-SIG class codes, as NCCL's xml.cc matches them): 0x0604 PCI bridge, 0x03xx display /
3D controller (GPU), 0x0207 InfiniBand controller, 0x0200 Ethernet controller, 0x0680 "other bridge"
(an NVSwitch, as the target class of an `<nvlink>`). Vendor files (Azure's ndv*-topo.xml, AWS's
p*-topo.xml) often hold only the PCI tree; NCCL fills GPUs and NICs in at run time, and so do the
other inputs or the catalog here.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from fabricsim.errors import FabricsimError
from fabricsim.importers.machine import Gpu, Machine, Nic, nic_key
from fabricsim.importers.parts import MELLANOX_NICS, NVIDIA_GPUS

_GTS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*GT/s")
# PCI vendor ids (pci.ids, pciutils/pciids@c1c1254: 1d0f Amazon.com; efa0-efa4 "Elastic Fabric Adapter (EFA)").
_AMAZON, _NVIDIA, _MELLANOX = "0x1d0f", "0x10de", "0x15b3"


def _device(el: ET.Element, vendor: str) -> int | None:
    """The PCI device id of a `<pci vendor=... device=...>` from that vendor, else None."""
    if el.get("vendor", "").lower() != vendor:
        return None
    try:
        return int(el.get("device", ""), 16)
    except ValueError:
        return None


def _nic_model(el: ET.Element) -> str:
    if el.get("vendor", "").lower() == _AMAZON:
        return "efa"
    dev = _device(el, _MELLANOX)
    return MELLANOX_NICS.get(dev, "") if dev is not None else ""


def _class(el: ET.Element, attr: str = "class") -> int:
    """A hex PCI class attribute ('0x030200' -> 0x0302); -1 when absent."""
    text = el.get(attr, "")
    try:
        return int(text, 16) >> 8 if text else -1
    except ValueError:
        raise FabricsimError(f"{el.tag} {el.get('busid', el.get('target', '?'))} has {attr} '{text}', not a hex PCI "
                             "class like 0x030200: fix the attribute") from None


def _gts(text: str | None) -> float:
    m = _GTS.match(text or "")
    return float(m.group(1)) if m else 0.0


def _int(el: ET.Element, attr: str, default: int = 0) -> int:
    text = el.get(attr)
    if text is None or text == "":
        return default
    try:
        return int(text, 0)
    except ValueError:
        raise FabricsimError(f"<{el.tag}> has {attr}=\"{text}\", not a number: fix the attribute") from None


def _busid(text: str) -> str:
    """NCCL writes 16-bit domains ('0000:a4:00.0'); normalise case."""
    return text.strip().lower()


class _Walk:
    """Collected while walking the tree of one host."""

    def __init__(self) -> None:
        self.gpus: list[dict] = []
        self.nics: list[Nic] = []
        self.nvlinks: list[tuple[str, str, int, int]] = []  # (gpu busid, target busid, count, target class)
        self.parent: dict[str, str] = {}  # device key -> the bridge right above it


def _walk_pci(el: ET.Element, numa: int | None, top: str, parent: str, acc: _Walk) -> None:
    busid = _busid(el.get("busid", ""))
    cls = _class(el)
    speed, width = _gts(el.get("link_speed")), _int(el, "link_width")
    if cls == 0x0604:  # a bridge: a PCIe switch port; the topmost bridge under the CPU names the switch complex
        for child in el:
            if child.tag == "pci":
                _walk_pci(child, numa, top or busid, busid, acc)
            elif child.tag == "nic":
                _add_nets(child, numa, top or busid, "", el, acc, busid)
        return
    gpu_el = el.find("gpu")
    if gpu_el is not None or cls in (0x0300, 0x0302):
        gpu = {"busid": busid, "numa": numa, "switch": top, "gts": speed, "width": width,
               "model": NVIDIA_GPUS.get(_device(el, _NVIDIA), ""),
               "dev": _int(gpu_el, "dev", -1) if gpu_el is not None else -1,
               "sm": _int(gpu_el, "sm") if gpu_el is not None else 0}
        acc.gpus.append(gpu)
        acc.parent[busid] = parent
        for link in (gpu_el.findall("nvlink") if gpu_el is not None else []):
            acc.nvlinks.append((busid, _busid(link.get("target", "")), _int(link, "count", 1),
                                _class(link, "tclass")))
        return
    nic_el = el.find("nic")
    if nic_el is not None:
        _add_nets(nic_el, numa, top, busid, el, acc, parent)
    elif cls in (0x0200, 0x0207):
        acc.nics.append(Nic(busid=busid, link_layer="infiniband" if cls == 0x0207 else "ethernet", numa=numa,
                            switch=top, model=_nic_model(el)))
        acc.parent[nic_key(acc.nics[-1])] = parent


def _add_nets(nic_el: ET.Element, numa: int | None, top: str, busid: str, pci: ET.Element, acc: _Walk,
              parent: str = "") -> None:
    cls = _class(pci) if pci.tag == "pci" and busid else -1
    layer = {0x0207: "infiniband", 0x0200: "ethernet"}.get(cls, "")
    model = _nic_model(pci) if pci.tag == "pci" else ""
    for net in nic_el.findall("net"):
        name = net.get("name", "")
        speed = _int(net, "speed")  # Mb/s (NCCL's ncclNetProperties speed)
        acc.nics.append(Nic(name=name, busid=busid, gbps=speed / 1000 if speed > 0 else 0.0, link_layer=layer,
                            numa=numa, switch=top, model=model, transport="efa" if model == "efa" else "",
                            gdr=None if net.get("gdr") is None else net.get("gdr") == "1"))
        acc.parent[nic_key(acc.nics[-1])] = parent


def _located(text: str, err: ET.ParseError) -> FabricsimError:
    line, col = err.position
    lines = text.splitlines()
    shown = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    return FabricsimError(f"line {line}, column {col + 1}: malformed XML ({str(err).split(':')[0]}): '{shown[:80]}'; "
                          "fix the file or dump it again with NCCL_TOPO_DUMP_FILE")


def parse(text: str, source: str) -> Machine:
    """The node an NCCL topology XML describes (its first host where NCCL fused several)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise _located(text, err) from None
    if root.tag == "topology":
        raise FabricsimError("this is hwloc (lstopo) XML, not NCCL's topology XML: dump NCCL's with "
                             "NCCL_TOPO_DUMP_FILE=system.xml, or give nvidia-smi topo -m output")
    if root.tag != "system":
        raise FabricsimError(f"the root element is <{root.tag}>, not NCCL's <system>: give an NCCL topology XML "
                             "(NCCL_TOPO_DUMP_FILE output or a vendor NCCL_TOPO_FILE)")
    cpus = root.findall("cpu")
    if not cpus:
        raise FabricsimError("<system> has no <cpu> element: an NCCL topology lists CPUs (NUMA nodes) and the PCI "
                             "devices under them")
    hosts = list(dict.fromkeys(c.get("host_hash", "") for c in cpus))
    acc = _Walk()
    arch = vendor = ""
    numas = 0
    for cpu in cpus:
        if cpu.get("host_hash", "") != hosts[0]:
            continue
        numas += 1
        numa = _int(cpu, "numaid", -1)
        numa = None if numa < 0 else numa
        arch, vendor = arch or cpu.get("arch", ""), vendor or cpu.get("vendor", "")
        for child in cpu:
            if child.tag == "pci":
                _walk_pci(child, numa, "", "", acc)
            elif child.tag == "nic":
                _add_nets(child, numa, "", "", cpu, acc)
    return _machine(acc, source, numas, arch, vendor, len(hosts))


def _machine(acc: _Walk, source: str, numas: int, arch: str, vendor: str, hosts: int) -> Machine:
    if any(g["dev"] >= 0 for g in acc.gpus):
        order = sorted(acc.gpus, key=lambda g: (g["dev"] < 0, g["dev"], g["busid"]))
        notes = []
    else:  # vendor file: CUDA enumerates identical GPUs in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID)
        order = sorted(acc.gpus, key=lambda g: g["busid"])  # fixed-width hex: string order is bus order
        notes = [f"{source}: GPU indices follow PCI bus-id order (the file has no <gpu dev=...>)"] if order else []
    gpus = tuple(Gpu(index=i, busid=g["busid"], model=g["model"], sm=g["sm"], numa=g["numa"], switch=g["switch"], pcie_gts=g["gts"],
                     pcie_width=g["width"]) for i, g in enumerate(order))
    by_bus = {g.busid: g.index for g in gpus}
    direct: dict[tuple[int, int], int] = {}
    to_switch: list[tuple[int, str, int]] = []
    for gbus, target, count, tclass in acc.nvlinks:
        a = by_bus[gbus]
        if target in by_bus and target != gbus:
            key = (min(a, by_bus[target]), max(a, by_bus[target]))
            direct[key] = max(direct.get(key, 0), count)
        elif target == gbus:
            notes.append(f"{source}: GPU{a} lists an NVLink to itself (count {count}), ignored")
        else:  # an NVSwitch (tclass 0x0680) or a target outside the file (a VM hides the switches)
            to_switch.append((a, target, count))
    return Machine(
        sources=(source,), gpus=gpus, nics=tuple(acc.nics),
        nvlinks=tuple((a, b, c) for (a, b), c in sorted(direct.items())),
        nvswitch_links=tuple(to_switch),
        affinity=_affinity(gpus, acc.nics, acc.parent),
        numa_nodes=numas, cpu_arch=arch, cpu_vendor=vendor,
        nodes=hosts if hosts > 1 else 0,
        notes=tuple(notes),
    )


def _affinity(gpus: tuple[Gpu, ...], nics: list[Nic], parent: dict[str, str]) -> tuple[tuple[int, str, str], ...]:
    """GPU-NIC path type from the PCI tree: under the same bridge PIX, the same switch complex PXB, the same
    CPU PHB (the XML does not say whether two root ports share a host bridge), another CPU SYS."""
    out = []
    for g in gpus:
        for n in nics:
            if g.switch and g.switch == n.switch:
                kind = "PIX" if parent.get(g.busid) == parent.get(nic_key(n)) else "PXB"
            elif g.numa == n.numa:
                kind = "PHB"
            else:
                kind = "SYS"
            out.append((g.index, nic_key(n), kind))
    return tuple(out)
