"""Vectorised construction of a Topology from a ClusterSpec.

Devices are laid out in blocks (all GPUs node-major so GPU rank r is device r, then CPUs,
PCIe switches, NICs, NVSwitch domains, fabric switches) and every block is made with numpy
arithmetic, so 131,072 GPUs build without per-device Python objects.

Conventions (routing relies on them): see docs/ARCHITECTURE.md. Link capacity is the
physical per-direction rate times the link count (no efficiency: the engine applies it), scaled
by the lanes in use for a PCIe link narrower than x16; link latency is the technology's latency
plus the hop latency of the device it enters (switch hop, or NIC adapter latency).

NICs: each port of a NIC card is one NIC device (its own fabric link; the card's PCIe link split
evenly over its ports), the ports of one node numbered card by card. GPU rank r's NICs are
`nics_per_gpu` consecutive NIC devices from `gpu_nic[r]` (features['nics_per_gpu']): its own cards'
ports, or those of the card it shares with its neighbours.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabricsim import hardware
from fabricsim.errors import FabricsimError
from fabricsim.topology.fat_tree import FatTree, plan_fat_tree
from fabricsim.topology.model import DeviceKind, Topology
from fabricsim.topology.spec import ClusterSpec

# DGX-1 hybrid cube-mesh GPU pairs and NVLink multiplicity, keyed by NVLinks per GPU.
# Source: NV-DGX1-WP (the DGX-1 V100 whitepaper) and a DGX-1V `nvidia-smi topo -m` dump in Microway's tech tip
# (Microway-topo, docs/SOURCES.md). P100 (4 links): every cube edge + 2 face diagonals, single.
_CUBE_MESH = {
    4: [(0, 1, 1), (0, 2, 1), (0, 3, 1), (0, 4, 1), (1, 2, 1), (1, 3, 1), (1, 5, 1), (2, 3, 1),
        (2, 6, 1), (3, 7, 1), (4, 5, 1), (4, 6, 1), (5, 7, 1), (4, 7, 1), (5, 6, 1), (6, 7, 1)],
    6: [(0, 1, 1), (0, 2, 1), (0, 3, 2), (0, 4, 2), (1, 2, 2), (1, 3, 1), (1, 5, 2), (2, 3, 2),
        (2, 6, 1), (3, 7, 1), (4, 5, 1), (4, 6, 1), (5, 7, 1), (4, 7, 2), (5, 6, 2), (6, 7, 2)],
}



@dataclass
class _Acc:
    """Device and link blocks collected before concatenation."""

    dev: dict[str, list[np.ndarray]] = field(default_factory=lambda: {k: [] for k in _DEV_FIELDS})
    link: dict[str, list[np.ndarray]] = field(default_factory=lambda: {k: [] for k in _LINK_FIELDS})
    parts: list[str] = field(default_factory=list)
    techs: list[str] = field(default_factory=list)
    n_dev: int = 0


_DEV_FIELDS = {"kind": np.int8, "node": np.int32, "domain": np.int32, "local": np.int32,
               "level": np.int8, "pod": np.int32, "part": np.int16, "units": np.int16}
_LINK_FIELDS = {"src": np.int32, "dst": np.int32, "capacity": np.float64, "latency": np.float64,
                "tech": np.int16, "count": np.int16}


def _index(names: list[str], name: str) -> int:
    if name not in names:
        names.append(name)
    return names.index(name)


def _add_devices(acc: _Acc, kind: DeviceKind, n: int, part: str, *, node=-1, domain=-1, local=0,
                 level=0, pod=-1, units=1) -> np.ndarray:
    """Append n devices (scalars broadcast); returns their indices."""
    ids = np.arange(acc.n_dev, acc.n_dev + n, dtype=np.int32)
    values = {"kind": int(kind), "node": node, "domain": domain, "local": local, "level": level,
              "pod": pod, "part": _index(acc.parts, part), "units": units}
    for k, dtype in _DEV_FIELDS.items():
        acc.dev[k].append(np.broadcast_to(np.asarray(values[k], dtype=dtype), (n,)))
    acc.n_dev += n
    return ids


def _add_pairs(acc: _Acc, a, b, tech: str, count=1, enter_b: float = 0.0, enter_a: float = 0.0,
               width: float = 1.0) -> None:
    """Links a->b and b->a as pairs (2k, 2k+1). enter_x: hop latency added on the link entering x; width: the
    fraction of the technology's rate in use (a PCIe link of fewer than 16 lanes, one port's share of a card)."""
    a, b = np.broadcast_arrays(np.asarray(a, np.int32), np.asarray(b, np.int32))
    count = np.broadcast_to(np.asarray(count, np.int16), a.shape)
    lt = hardware.get_link(tech)
    m = a.shape[0]
    acc.link["src"].append(np.column_stack([a, b]).ravel())
    acc.link["dst"].append(np.column_stack([b, a]).ravel())
    acc.link["capacity"].append(np.repeat(count * float(lt.bw) * width, 2))
    acc.link["latency"].append(np.tile([lt.latency + enter_b, lt.latency + enter_a], m))
    acc.link["tech"].append(np.full(2 * m, _index(acc.techs, tech), np.int16))
    acc.link["count"].append(np.repeat(count, 2))


def _slower(a: str, b: str) -> str:
    """The link technology a connection between ports of techs a and b runs at (the slower end)."""
    return a if hardware.get_link(a).bw <= hardware.get_link(b).bw else b


def _cpu_part(spec: ClusterSpec) -> str:
    """The CPU device's part: 'grace', or 'x86' (Intel) / 'x86-amd' (AMD EPYC), which NCCL's constants tell apart."""
    return {"arm": "grace", "amd": "x86-amd"}.get(spec.vendor, "x86")


def _gpu_pcie(spec: ClusterSpec, gpu) -> str:
    """The technology of the GPU's PCIe link: its own generation, or the one the cluster file says."""
    return f"pcie{spec.pcie_gen}" if spec.pcie_gen else gpu.pcie_link


def build_topology(spec: ClusterSpec) -> Topology:
    """Devices and links for `spec` (not validated; `fabricsim.topology.build` validates)."""
    gpu = hardware.get_gpu(spec.gpu)
    acc = _Acc()
    N, G, C, S = spec.nodes, spec.gpus_per_node, spec.cpus_per_node, spec.pcie_switches_per_node
    P = spec.nic_ports
    R = spec.nics_per_node * P  # NIC devices (ports) per node
    nodes = np.arange(N, dtype=np.int32)
    node_domain = nodes * G // spec.domain_size
    node_pod = nodes // spec.su_nodes

    def per_node(k: int) -> dict:
        return {"node": np.repeat(nodes, k), "domain": np.repeat(node_domain, k),
                "local": np.tile(np.arange(k, dtype=np.int32), N), "pod": np.repeat(node_pod, k)}

    gpus = _add_devices(acc, DeviceKind.GPU, N * G, gpu.name, **per_node(G))
    cpus = _add_devices(acc, DeviceKind.CPU, N * C, _cpu_part(spec), **per_node(C))
    g_local = np.tile(np.arange(G), N)
    g_node = np.repeat(nodes, G)
    gpu_cpu = cpus[g_node * C + g_local * C // G]
    gpu_pcie = _gpu_pcie(spec, gpu)
    lanes = spec.pcie_lanes / 16
    grace = spec.host_cpu == "grace"

    # Host side: GPU <-> PCIe switch <-> CPU (or GPU <-> CPU directly), CPU <-> CPU.
    if S:
        sw = hardware.get_switch(spec.pcie_switch)
        psw = _add_devices(acc, DeviceKind.PCIE_SWITCH, N * S, sw.name, **per_node(S))
        gpu_psw = psw[g_node * S + g_local * S // G]
        _add_pairs(acc, gpus, gpu_psw, _slower(gpu_pcie, sw.port_link), enter_b=sw.hop_latency, width=lanes)
        s_local = np.tile(np.arange(S), N)
        s_node = np.repeat(nodes, S)
        _add_pairs(acc, psw, cpus[s_node * C + s_local * C // S], sw.port_link, enter_a=sw.hop_latency,
                   width=spec.pcie_switch_lanes / 16)
    elif grace:
        _add_pairs(acc, gpus, gpu_cpu, "nvlink-c2c")
    else:
        _add_pairs(acc, gpus, gpu_cpu, gpu_pcie, width=lanes)
    if C > 1:
        # socket interconnect: Intel UPI, AMD EPYC's Infinity Fabric or the tray's two Graces (NCCL topo.h SRP_QPI_BW,
        # AMD_BW, ARM_BW): host-staged traffic between GPUs of different sockets crosses it
        i, j = np.triu_indices(C, 1)
        base = (nodes * C)[:, None]
        socket = "grace-sys" if grace else "amd-if" if spec.vendor == "amd" else "upi"
        _add_pairs(acc, cpus[(base + i).ravel()], cpus[(base + j).ravel()], socket)

    # NICs: NIC port r sits on the PCIe switch (or CPU) of GPU r*G//R, the GPUDirect RDMA path; a card's ports
    # share its PCIe link (each port's link carries 1/P of it). GPU g's first NIC is port (g*cards//G)*P.
    gpu_nic = np.full(N * G, -1, np.int32)
    if R:
        nic = hardware.get_nic(spec.nic)
        nics = _add_devices(acc, DeviceKind.NIC, N * R, nic.name, **per_node(R))
        r_local = np.tile(np.arange(R), N)
        r_node = np.repeat(nodes, R)
        if S:
            nic_up = gpu_psw[r_node * G + r_local * G // R]
            _add_pairs(acc, nics, nic_up, _slower(nic.pcie_link, sw.port_link), enter_a=nic.latency, enter_b=sw.hop_latency,
                       width=1 / P)
        else:
            _add_pairs(acc, nics, cpus[r_node * C + r_local * C // R], nic.pcie_link, enter_a=nic.latency, width=1 / P)
        gpu_nic = nics[g_node * R + g_local * spec.nics_per_node // G * P]

    _add_scaleup(acc, spec, gpu, gpus)
    tree = None
    if spec.fabric != "none":
        tree = _add_fabric(acc, spec, nics, nic.latency)

    dev = {k: np.concatenate(v).astype(_DEV_FIELDS[k]) for k, v in acc.dev.items()}
    link = {k: np.concatenate(v).astype(_LINK_FIELDS[k]) for k, v in acc.link.items()}
    return Topology(
        name=spec.name,
        dev_kind=dev["kind"], dev_node=dev["node"], dev_domain=dev["domain"], dev_local=dev["local"],
        dev_level=dev["level"], dev_pod=dev["pod"], dev_part=dev["part"], dev_units=dev["units"],
        parts=acc.parts,
        link_src=link["src"], link_dst=link["dst"], link_capacity=link["capacity"],
        link_latency=link["latency"], link_tech=link["tech"], link_count=link["count"], techs=acc.techs,
        gpu_device=gpus, gpu_nic=gpu_nic, gpu_cpu=gpu_cpu.astype(np.int32), spec=spec,
        features={
            "fabric": None if spec.fabric == "none" else spec.fabric,
            "transport": spec.net_transport or None, "nics_per_gpu": spec.nics_per_gpu, "nic_ports": P,
            "cpu_vendor": spec.vendor,
            "sharp": spec.sharp, "gpudirect": spec.gpudirect, "nvls": spec.nvls, "p2p": spec.p2p, "routing": spec.routing,
            "ecmp_seed": spec.ecmp_seed,
            "rail_optimized": spec.rail_optimized, "gpus_per_node": G, "gpus_per_domain": spec.domain_size,
            "nodes": N, "nics_per_node": spec.nics_per_node, "fabric_levels": tree.levels if tree else 0,
            "fabric_planes": tree.planes if tree else 0,
        },
    )


def _add_scaleup(acc: _Acc, spec: ClusterSpec, gpu, gpus) -> None:
    """NVLink: GPU <-> domain NVSWITCH (count = links per GPU), the DGX-1 cube-mesh, or bridged GPU pairs."""
    if spec.scaleup == "pcie":
        return
    links = spec.nvlinks or gpu.scaleup_links
    if spec.scaleup == "nvlink-bridge" or (spec.scaleup == "nvlink-mesh" and spec.gpus_per_node == 2):
        # NVLink bridges (H100 / A100 PCIe, RTX 2080 Ti): GPUs 2i and 2i+1 joined by `links` NVLinks.
        first = gpus[0::2]
        _add_pairs(acc, first, first + 1, gpu.scaleup_link, links)
        return
    if spec.scaleup == "nvlink-mesh":
        table = _CUBE_MESH.get(gpu.scaleup_links)
        if table is None or spec.gpus_per_node != 8:
            raise FabricsimError(
                f"scaleup 'nvlink-mesh' is the DGX-1 cube-mesh (8 GPUs with 4 or 6 NVLinks) or a 2-GPU NVLink bridge; "
                f"{spec.gpu} has {gpu.scaleup_links} links and the spec {spec.gpus_per_node} GPUs per node: "
                "use scaleup 'nvswitch', 'nvlink-bridge' or 'pcie'"
            )
        a, b, c = (np.array(col) for col in zip(*table))
        base = (np.arange(spec.nodes) * spec.gpus_per_node)[:, None]
        _add_pairs(acc, (base + a).ravel(), (base + b).ravel(), gpu.scaleup_link, np.tile(c, spec.nodes))
        return
    sw = hardware.nvswitch_for(gpu.scaleup_link)  # there is one: the spec checked it (topology.spec._check_values)
    part = sw.name
    n_dom = spec.nodes * spec.gpus_per_node // spec.domain_size
    doms = np.arange(n_dom, dtype=np.int32)
    trays = spec.domain_size // spec.gpus_per_node
    nvs = _add_devices(acc, DeviceKind.NVSWITCH, n_dom, part, node=doms if trays == 1 else -1,
                       domain=doms, local=0, pod=doms * trays // spec.su_nodes, units=spec.nvswitch_chips)
    _add_pairs(acc, gpus, nvs[gpus // spec.domain_size], gpu.scaleup_link, links, enter_b=sw.hop_latency)


def _nic_speed_error(spec: ClusterSpec, nic: hardware.NIC) -> str:
    """nic_gbps that the NIC does not run: the speeds it runs, and a catalog NIC that runs the asked one."""
    asked, kind = spec.nic_gbps, "infiniband" if spec.fabric == "infiniband" else "ethernet"
    runs = hardware.nic_speeds(nic)
    head = (f"nic_gbps {asked:g}: NIC {nic.name} runs {', '.join(f'{r:g}' for r in runs[:-1])}"
            f"{' or ' if len(runs) > 1 else ''}{runs[-1]:g} Gb/s per port")
    try:
        other = hardware.nic_for_speed(asked, kind)
    except FabricsimError:  # no catalog NIC of this network runs the speed
        rates = sorted({r for n in hardware.NICS.values() if hardware.get_link(n.port_link).kind == kind
                        for r in hardware.nic_speeds(n)})
        return (f"{head}, and no catalog {kind} NIC runs {asked:g} Gb/s (their rates: "
                f"{', '.join(f'{r:g}' for r in rates)}): set a nic_gbps {nic.name} runs")
    if asked in hardware.nic_speeds(other):
        return f"{head}: set nic: {other.name} (runs {asked:g} Gb/s), or a nic_gbps {nic.name} runs"
    port = hardware.nic_speeds(other)[-1]  # a multi-port card gives the speed over its ports (CX-8 Ethernet: 2 x 400)
    card = "" if other.name == nic.name else f"nic: {other.name}, "
    return (f"{head} (nic_gbps is per port): {other.name} gives {asked:g} Gb/s as {other.ports} ports of {port:g}: "
            f"set {card}nic_gbps: {port:g}, nic_ports: {other.ports}")


def _add_fabric(acc: _Acc, spec: ClusterSpec, nics: np.ndarray, nic_latency: float) -> FatTree:
    """NIC <-> leaf <-> spine <-> core, planned by `fat_tree.plan_fat_tree`."""
    nic = hardware.get_nic(spec.nic)
    if spec.nic_gbps not in hardware.nic_speeds(nic):
        raise FabricsimError(_nic_speed_error(spec, nic))
    by_speed = hardware.ib_link_for_speed if spec.fabric == "infiniband" else hardware.eth_link_for_speed
    tech = by_speed(spec.nic_gbps)
    leaf, spine = hardware.get_switch(spec.leaf_switch), hardware.get_switch(spec.spine_switch)
    if hardware.get_link(leaf.port_link).bw < hardware.get_link(tech).bw:
        raise FabricsimError(f"leaf_switch {spec.leaf_switch} ports ({leaf.port_link}) are slower than nic_gbps "
                             f"{spec.nic_gbps:g}: lower nic_gbps or pick a faster switch")
    up = _slower(leaf.port_link, spine.port_link)
    # oversubscription is a bandwidth ratio: the plan sizes the uplinks by the NIC and uplink rates, not port counts
    t = plan_fat_tree(spec, leaf.ports, spine.ports, hardware.get_link(tech).bw / hardware.get_link(up).bw)
    leaves = _add_devices(acc, DeviceKind.FABRIC_SWITCH, t.n_leaf, leaf.name, level=1,
                          pod=t.leaf_pod, local=t.leaf_local)
    _add_pairs(acc, nics, leaves[t.nic_leaf], tech, enter_b=leaf.hop_latency, enter_a=nic_latency)
    if t.levels >= 2:
        spines = _add_devices(acc, DeviceKind.FABRIC_SWITCH, t.n_spine, spine.name, level=2,
                              pod=t.spine_pod, local=t.spine_local)
        _add_pairs(acc, leaves[t.ls_leaf], spines[t.ls_spine], up, t.ls_count,
                   enter_b=spine.hop_latency, enter_a=leaf.hop_latency)
    if t.levels == 3:
        cores = _add_devices(acc, DeviceKind.FABRIC_SWITCH, t.n_core, spine.name, level=3,
                             pod=-1, local=t.core_local)
        _add_pairs(acc, spines[t.sc_spine], cores[t.sc_core], spine.port_link, t.sc_count,
                   enter_b=spine.hop_latency, enter_a=spine.hop_latency)
    return t
