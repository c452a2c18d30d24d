"""Small hand-assembled topologies for routing tests, following docs/ARCHITECTURE.md conventions.

Figures (per direction): NVLink 4 = 25e9 B/s per link, 18 links per H100; NVLink 2 = 25e9 per link
(V100 DGX-1 cube-mesh adjacency from NV-DGX1-WP / Microway-topo); PCIe Gen5 x16 = 63e9 (PCI-SIG);
NDR 400 Gb/s = 50e9 (IBTA); keys in docs/SOURCES.md. Latencies are round test values.
"""

from __future__ import annotations

import numpy as np

from fabricsim.topology.model import DeviceKind as K
from fabricsim.topology.model import Topology

NVL4 = 25e9  # NVLink 4 per link per direction (Klockwood-NVLink)
PCIE5 = 63e9  # PCIe Gen5 x16 per direction (PCI-SIG)
NDR = 50e9  # 400 Gb/s InfiniBand NDR (IBTA)
UPI = 40e9  # test value for the socket interconnect

# DGX-1 V100 NVLink adjacency: (a, b, links), NV-DGX1-WP / Microway-topo
CUBE_MESH = [(0, 1, 1), (0, 2, 1), (0, 3, 2), (0, 4, 2), (1, 2, 2), (1, 3, 1), (1, 5, 2), (2, 3, 2), (2, 6, 1),
             (3, 7, 1), (4, 5, 1), (4, 6, 1), (5, 7, 1), (4, 7, 2), (5, 6, 2), (6, 7, 2)]


class Builder:
    def __init__(self) -> None:
        self.dev: list[tuple] = []
        self.links: list[tuple] = []
        self.techs: list[str] = []

    def add(self, kind, node=-1, domain=-1, local=0, level=0, pod=-1) -> int:
        self.dev.append((int(kind), node, domain, local, level, pod))
        return len(self.dev) - 1

    def join(self, a: int, b: int, cap: float, tech: str, lat: float = 1e-7, count: int = 1) -> None:
        if tech not in self.techs:
            self.techs.append(tech)
        self.links.append((a, b, cap, lat, self.techs.index(tech), count))
        self.links.append((b, a, cap, lat, self.techs.index(tech), count))

    def build(self, gpus, gpu_nic, gpu_cpu, **features) -> Topology:
        d = np.array(self.dev, dtype=np.int64).reshape(-1, 6)
        ln = np.array(self.links, dtype=np.float64).reshape(-1, 6)
        return Topology(
            name="handmade",
            dev_kind=d[:, 0].astype(np.int8), dev_node=d[:, 1].astype(np.int32), dev_domain=d[:, 2].astype(np.int32),
            dev_local=d[:, 3].astype(np.int32), dev_level=d[:, 4].astype(np.int8), dev_pod=d[:, 5].astype(np.int32),
            dev_part=np.zeros(len(d), np.int16), dev_units=np.ones(len(d), np.int16), parts=["test"],
            link_src=ln[:, 0].astype(np.int32), link_dst=ln[:, 1].astype(np.int32), link_capacity=ln[:, 2],
            link_latency=ln[:, 3], link_tech=ln[:, 4].astype(np.int16), link_count=ln[:, 5].astype(np.int16),
            techs=self.techs, gpu_device=np.array(gpus, np.int32), gpu_nic=np.array(gpu_nic, np.int32),
            gpu_cpu=np.array(gpu_cpu, np.int32), features=features,
        )


def _host(b: Builder, node: int, domain: int, gpus_per_node: int, nics: str):
    """2 CPUs, 4 PCIe switches (2 per CPU), GPUs spread 2 per switch; nics 'per_gpu' or 'per_switch'."""
    cpu = [b.add(K.CPU, node, -1, i) for i in range(2)]
    b.join(cpu[0], cpu[1], UPI, "upi")
    sw = [b.add(K.PCIE_SWITCH, node, -1, i) for i in range(4)]
    for i, s in enumerate(sw):
        b.join(s, cpu[i // 2], PCIE5, "pcie5")
    per_sw = gpus_per_node // 4
    gpu = [b.add(K.GPU, node, domain, i) for i in range(gpus_per_node)]
    for i, g in enumerate(gpu):
        b.join(g, sw[i // per_sw], PCIE5, "pcie5")
    if nics == "per_gpu":
        nic = [b.add(K.NIC, node, -1, i) for i in range(gpus_per_node)]
        for i, n in enumerate(nic):
            b.join(n, sw[i // per_sw], PCIE5, "pcie5")
    elif nics == "per_switch":
        nic = [b.add(K.NIC, node, -1, i) for i in range(4)]
        for i, n in enumerate(nic):
            b.join(n, sw[i], PCIE5, "pcie5")
        nic = [nic[i // per_sw] for i in range(gpus_per_node)]
    else:
        nic = [-1] * gpus_per_node
    return gpu, nic, [cpu[i // (gpus_per_node // 2)] for i in range(gpus_per_node)]


def _fabric(b: Builder, nic_lists, rail_optimized: bool, nodes_per_pod: int, spines: int, cores: int):
    """Leaves per (pod, rail) (or one per pod), `spines` per pod joined to every leaf of the pod,
    `cores` joined to every spine when there is more than one pod."""
    n_nodes = len(nic_lists)
    pods = (n_nodes + nodes_per_pod - 1) // nodes_per_pod
    rails = len(set(nic_lists[0])) if rail_optimized else 1
    leaves = {(p, r): b.add(K.FABRIC_SWITCH, -1, -1, r, 1, p) for p in range(pods) for r in range(rails)}
    for node, nics in enumerate(nic_lists):
        for n in dict.fromkeys(nics):
            rail = b.dev[n][3] if rail_optimized else 0
            b.join(n, leaves[(node // nodes_per_pod, rail)], NDR, "ib-ndr", lat=3e-7)
    spine = {(p, j): b.add(K.FABRIC_SWITCH, -1, -1, j, 2, p) for p in range(pods) for j in range(spines)}
    for (p, r), leaf in leaves.items():
        for j in range(spines):
            b.join(leaf, spine[(p, j)], NDR, "ib-ndr", lat=3e-7)
    if pods > 1:
        core = [b.add(K.FABRIC_SWITCH, -1, -1, c, 3, -1) for c in range(cores)]
        for s in spine.values():
            for c in core:
                b.join(s, c, NDR, "ib-ndr", lat=3e-7)


def nvswitch_cluster(nodes=2, gpus_per_node=8, rail_optimized=True, gpudirect=True, nodes_per_pod=2,
                     spines=4, cores=4, domain_nodes=1) -> Topology:
    """DGX-H100-like nodes (1 logical NVSwitch per domain of `domain_nodes` nodes) on an NDR fat tree."""
    b = Builder()
    gpus, nics, cpus, nic_lists = [], [], [], []
    nvsw = {}
    for node in range(nodes):
        dom = node // domain_nodes
        g, n, c = _host(b, node, dom, gpus_per_node, "per_gpu")
        if dom not in nvsw:
            nvsw[dom] = b.add(K.NVSWITCH, node, dom, 0)
        for gg in g:
            b.join(gg, nvsw[dom], 18 * NVL4, "nvlink4", count=18)
        gpus += g
        nics += n
        cpus += c
        nic_lists.append(n)
    _fabric(b, nic_lists, rail_optimized, nodes_per_pod, spines, cores)
    return b.build(gpus, nics, cpus, gpudirect=gpudirect, rail_optimized=rail_optimized, p2p=True,
                   fabric="infiniband", gpus_per_node=gpus_per_node)


def cube_mesh_node(nodes=1) -> Topology:
    """DGX-1 V100: cube-mesh NVLink, one NIC per PCIe switch (per 2 GPUs)."""
    b = Builder()
    gpus, nics, cpus, nic_lists = [], [], [], []
    for node in range(nodes):
        g, n, c = _host(b, node, node, 8, "per_switch")
        for x, y, k in CUBE_MESH:
            b.join(g[x], g[y], k * NVL4, "nvlink2", count=k)
        gpus += g
        nics += n
        cpus += c
        nic_lists.append(n)
    _fabric(b, nic_lists, False, 4, 2, 2)
    return b.build(gpus, nics, cpus, gpudirect=True, rail_optimized=False, p2p=True)


def pcie_node(p2p=True, nvlink_pairs=()) -> Topology:
    """8 PCIe GPUs (2 per switch, 2 switches per CPU), no NIC; optional GPU<->GPU NVLink bridges."""
    b = Builder()
    g, n, c = _host(b, 0, 0, 8, "none")
    for x, y in nvlink_pairs:
        b.join(g[x], g[y], 4 * 14e9, "nvlink3", count=4)
    return b.build(g, n, c, p2p=p2p, gpudirect=False)


def leaf_spine(leaves=2, nics_per_leaf=64, spines=8) -> Topology:
    """Single-GPU nodes, one pod: `leaves` leaves with `nics_per_leaf` NICs each, `spines` spines."""
    b = Builder()
    gpus, nics, cpus = [], [], []
    for node in range(leaves * nics_per_leaf):
        cpu = b.add(K.CPU, node, -1, 0)
        sw = b.add(K.PCIE_SWITCH, node, -1, 0)
        b.join(sw, cpu, PCIE5, "pcie5")
        g, n = b.add(K.GPU, node, node, 0), b.add(K.NIC, node, -1, 0)
        b.join(g, sw, PCIE5, "pcie5")
        b.join(n, sw, PCIE5, "pcie5")
        gpus.append(g)
        nics.append(n)
        cpus.append(cpu)
    leaf = [b.add(K.FABRIC_SWITCH, -1, -1, i, 1, 0) for i in range(leaves)]
    spine = [b.add(K.FABRIC_SWITCH, -1, -1, j, 2, 0) for j in range(spines)]
    for i, n in enumerate(nics):
        b.join(n, leaf[i // nics_per_leaf], NDR, "ib-ndr", lat=3e-7)
    for lf in leaf:
        for sp in spine:
            b.join(lf, sp, NDR, "ib-ndr", lat=3e-7)
    return b.build(gpus, nics, cpus, gpudirect=True, rail_optimized=False)
