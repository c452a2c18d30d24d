"""The imported cluster, built, against what the inputs say: GPUs, NVLinks per GPU, NICs, NIC-to-GPU affinity.

Read from the built Topology (devices and links), not from the spec, so a builder that lays a field out
differently from what the input shows is caught.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.importers.machine import PATH_TYPES
from fabricsim.importers.mapping import Imported, links_per_gpu
from fabricsim.topology.model import DeviceKind, Topology
from fabricsim.units import Gbit


@dataclass(frozen=True)
class Check:
    """One fact: what the inputs say and what the built cluster has ('' where the inputs do not say)."""

    what: str
    inputs: str
    cluster: str

    @property
    def ok(self) -> bool | None:
        return None if not self.inputs else self.inputs == self.cluster


def _neighbours(topo: Topology, device: int, kind: DeviceKind) -> set[int]:
    links = topo.links_from(device)
    dst = topo.link_dst[links]
    return {int(d) for d in dst if topo.dev_kind[d] == kind}


def _gpu_links(topo: Topology, gpu: int) -> int:
    links = topo.links_from(int(topo.gpu_device[gpu]))
    nvlink = [i for i in links if topo.techs[topo.link_tech[i]].startswith("nvlink") and
              topo.techs[topo.link_tech[i]] != "nvlink-c2c"]
    return int(topo.link_count[nvlink].sum()) if nvlink else 0


def _nic_gbps(topo: Topology) -> float:
    nics = topo.devices_of(DeviceKind.NIC)
    if not len(nics):
        return 0.0
    out = [i for i in topo.links_from(int(nics[0])) if topo.dev_kind[topo.link_dst[i]] == DeviceKind.FABRIC_SWITCH]
    return float(topo.link_capacity[out[0]] / Gbit) if out else 0.0


def compare(imp: Imported, topo: Topology) -> list[Check]:
    """The checks of `imp` on its built topology (node 0)."""
    m, spec = imp.machine, imp.spec
    n = spec.gpus_per_node
    checks = [Check("GPUs per node", str(len(m.gpus)), str(int(np.sum(topo.gpu_node == 0))))]
    links = links_per_gpu(m)
    cluster_links = sorted({_gpu_links(topo, g) for g in range(n)})
    checks.append(Check("NVLinks per GPU", "/".join(map(str, sorted(set(links.values())))) if links else "",
                        "/".join(map(str, cluster_links))))
    if m.nvlinks:
        said = ", ".join(f"{a}-{b}:{c}" for a, b, c in m.nvlinks)
        built = []
        for a in range(n):
            for i in topo.links_from(int(topo.gpu_device[a])):
                b = int(topo.link_dst[i])
                if topo.dev_kind[b] == DeviceKind.GPU and a < int(np.flatnonzero(topo.gpu_device == b)[0]):
                    built.append(f"{a}-{int(np.flatnonzero(topo.gpu_device == b)[0])}:{int(topo.link_count[i])}")
        checks.append(Check("NVLinks per GPU pair", said, ", ".join(built)))
    nic_devices = [d for d in topo.devices_of(DeviceKind.NIC) if topo.dev_node[d] == 0]
    nics = imp.compute_nics
    total = sum(x.gbps for x in nics) if nics and all(x.gbps for x in nics) else 0.0
    checks.append(Check("NICs per node", str(len(nics)) if nics else "", str(len(nic_devices))))
    checks.append(Check("network Gb/s per node", f"{total:g}" if total else "",
                        f"{len(nic_devices) * _nic_gbps(topo):g}" if nic_devices else "0"))
    checks.append(_affinity(imp, topo))
    return checks


def _affinity(imp: Imported, topo: Topology) -> Check:
    """Which GPUs have a NIC on their own PCIe switch: in the inputs (PIX / PXB) and in the built cluster."""
    m = imp.machine
    n = imp.spec.gpus_per_node
    keys = {f"pci:{x.busid}" if not x.name else x.name for x in imp.compute_nics}
    said = []
    for g in range(n):
        kinds = [t for gg, k, t in m.affinity if gg == g and k in keys]
        if not kinds:
            said = []
            break
        said.append(PATH_TYPES.index(min(kinds, key=PATH_TYPES.index)) <= PATH_TYPES.index("PXB"))
    built = []
    for g in range(n):
        gpu, nic = int(topo.gpu_device[g]), int(topo.gpu_nic[g]) if topo.gpu_nic is not None else -1
        if nic < 0:
            built.append(False)
            continue
        up = _neighbours(topo, gpu, DeviceKind.PCIE_SWITCH)
        built.append(bool(up) and bool(up & _neighbours(topo, nic, DeviceKind.PCIE_SWITCH)))

    def fmt(flags):
        near = [str(g) for g, f in enumerate(flags) if f]
        return f"GPUs {','.join(near)}" if near else "none"
    return Check("GPUs with a NIC on their PCIe switch", fmt(said) if said else "", fmt(built))
