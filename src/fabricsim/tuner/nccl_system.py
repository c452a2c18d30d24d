"""Build the NcclSystem NCCL's tuner would see from a fabricsim Topology.

Link bandwidths are re-expressed the way NCCL's topology code counts them (src/graph/topo.h, topo.cc):
NVLink = links x ncclTopoNVLinkBw(compcap) of the release (tuner.nccl_versions.graph_search), PCIe = width x code / 80 (x16: 12/24/48/96), NIC = speed_Mbps / 8000.

NCCL's net devices are what the network plugin reports: one per NIC card, its ports fused (NCCL_NET_MERGE_LEVEL
defaults to PORT, src/graph/topo.cc ncclTopoGetFusionEnv), or, for a plugin that groups the NICs local to a GPU
(aws-ofi-nccl on EFA, hardware.TRANSPORTS fuses_local_nics), one per group with their summed speed. The latency
the plugin reports (hardware.NIC.plugin_latency) is NCCL's graph latencyInter: a tuning input only.
"""

from __future__ import annotations

import re

import numpy as np

from fabricsim import hardware
from fabricsim.errors import FabricsimError
from fabricsim.routing import PathKind, route_pairs
from fabricsim.topology.model import DeviceKind, Topology
from fabricsim.tuner import nccl_versions
from fabricsim.tuner.nccl_graph import NcclSystem

# PCIe x16 GB/s as NCCL computes it: 16 lanes x code / 80, code 60/120/240/480 for 8/16/32/64 GT/s (topo.cc).
_PCIE_X16_GBPS = {3: 12.0, 4: 24.0, 5: 48.0, 6: 96.0}


def _out_links(topo: Topology, device: int, kinds: tuple[str, ...]) -> list[tuple[int, object]]:
    """(link index, LinkTech) of the links leaving `device` whose technology kind is in `kinds`."""
    result = []
    for link in topo.links_from(device):
        tech = hardware.get_link(topo.techs[int(topo.link_tech[link])])
        if tech.kind in kinds:
            result.append((int(link), tech))
    return result


def _inter_type(topo: Topology, gpu_dev: int, nic_dev: int, gpudirect: bool, version) -> str:
    """NCCL's GPU -> NIC path type: PHB without GPUDirect RDMA (staged through host memory); for a GPU on NVLink-C2C
    with no PCIe link of its own (Grace), whose NIC it reaches only through the CPU, the release's name for that path
    (PHB, P2C from 2.27.3: tuner.nccl_versions 'c2c gpu-nic path'); PXB (PCIe switches only) otherwise."""
    if not gpudirect:
        return "phb"
    if nic_dev >= 0 and _out_links(topo, gpu_dev, ("nvlink-c2c",)) and not _out_links(topo, gpu_dev, ("pcie",)):
        return str(nccl_versions.release(version).get("c2c gpu-nic path", "pxb"))
    return "pxb"


def _pcie_bw(tech_name: str, lanes: float = 16) -> float:
    """NCCL's GB/s of a PCIe link of this technology and width (ncclTopoGetPciBw: width x code / 80)."""
    m = re.search(r"(\d)$", tech_name)
    if not m or int(m.group(1)) not in _PCIE_X16_GBPS:
        raise FabricsimError(f"PCIe link '{tech_name}' has no NCCL bandwidth: use pcie3..pcie6")
    return _PCIE_X16_GBPS[int(m.group(1))] * lanes / 16


def _lanes(topo: Topology, link: int, tech) -> float:
    """Lanes of a built PCIe link: its capacity against the technology's x16 rate (builders scale by the width)."""
    return 16 * float(topo.link_capacity[link]) / (float(topo.link_count[link]) * tech.bw)


def _nccl_links(topo: Topology, links: np.ndarray) -> np.ndarray:
    """Physical links NCCL counts in each link: its capacity in whole links of its technology. A healthy link has
    its `link_count`; a degraded NVLink aggregate (some of a GPU's 18 links down) counts the links left, as NVML
    reports only active NVLinks to NCCL's topology detection (a fraction of a link rounds down)."""
    per_link = np.array([hardware.get_link(t).bw for t in topo.techs])[topo.link_tech[links]]
    return np.floor(topo.link_capacity[links] / per_link + 1e-6).astype(np.int64)


def _nvlinks_per_gpu(topo: Topology, ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(NVLinks NCCL counts, whether one reaches an NVSwitch) per rank of `ranks`."""
    nvlink = np.array([hardware.get_link(t).kind == "nvlink" for t in topo.techs])
    gpu_of = np.full(topo.n_devices, -1, dtype=np.int64)
    gpu_of[topo.gpu_device[ranks]] = np.arange(ranks.size)
    out = np.flatnonzero(nvlink[topo.link_tech] & (gpu_of[topo.link_src] >= 0))
    owner = gpu_of[topo.link_src[out]]
    counts = np.bincount(owner, weights=_nccl_links(topo, out), minlength=ranks.size).astype(np.int64)
    to_switch = (topo.dev_kind[topo.link_dst[out]] == DeviceKind.NVSWITCH) & (_nccl_links(topo, out) > 0)
    switch = np.bincount(owner[to_switch], minlength=ranks.size) > 0
    return counts, switch


def _nvlink_mesh(topo: Topology, ranks: np.ndarray) -> tuple[tuple[int, ...], ...]:
    """NVLinks between each pair of the first NVLink domain's ranks when they are joined directly (no NVSwitch)
    and more than two (with two, every ring is the same ring); () otherwise. Ranks in order: NCCL's GPU order."""
    local = ranks[topo.gpu_domain[ranks] == topo.gpu_domain[ranks[0]]]
    if local.size <= 2:
        return ()
    dev = topo.gpu_device[local].astype(np.int64)
    index = np.full(topo.n_devices, -1, dtype=np.int64)
    index[dev] = np.arange(local.size)
    a, b = index[topo.link_src], index[topo.link_dst]
    direct = np.flatnonzero((a >= 0) & (b >= 0))
    if direct.size == 0:
        return ()
    mesh = np.zeros((local.size, local.size), dtype=np.int64)
    np.add.at(mesh, (a[direct], b[direct]), _nccl_links(topo, direct))
    return tuple(tuple(int(x) for x in row) for row in mesh)


def _host_ring_cap(topo: Topology, ranks: np.ndarray) -> float:
    """NCCL's per-channel capacity of one node's ring (GB/s as NCCL counts PCIe) where its hops climb to the CPU.

    Without P2P NCCL diverts a GPU pair's path through the CPU (v2.19.3-1 src/graph/paths.cc:548-559,
    addInterStep), and GPUs on separate root ports reach each other through it anyway; followPath then takes the
    channel's bandwidth from every link of every hop (src/graph/search.cc:67-103), so a PCIe switch uplink that k
    of the ring's hops climb carries k times it. The ring is the GPUs in PCI order (the search's first try,
    FORCED_ORDER_PCI, search.cc:517). 0 where a hop stays below a PCIe switch (P2P there) or crosses sockets
    (PATH_SYS, whose CPU link NCCL counts otherwise: not modelled here), or the node has one GPU."""
    node = ranks[topo.gpu_domain[ranks] == topo.gpu_domain[ranks[0]]]
    if node.size < 2:
        return 0.0
    routes = route_pairs(topo, node, np.roll(node, -1))
    if not np.isin(routes.path_kind, (PathKind.HOST, PathKind.PCIE)).all():
        return 0.0
    uses: dict[int, int] = {}
    for p in range(routes.n_paths):
        links = routes.path_links(p)
        if not (topo.dev_kind[topo.link_dst[links]] == DeviceKind.CPU).any():
            return 0.0  # P2P below a switch
        for link in links.tolist():
            uses[link] = uses.get(link, 0) + 1
    caps = []
    for link, n in uses.items():
        tech = hardware.get_link(topo.techs[int(topo.link_tech[link])])
        if tech.kind != "pcie":
            return 0.0  # a CPU <-> CPU link: PATH_SYS
        caps.append(_pcie_bw(tech.name, _lanes(topo, link, tech)) / n)
    return min(caps)


def system_from_topology(topo: Topology, ranks: np.ndarray | None = None, version=None) -> NcclSystem:
    """The NcclSystem of a communicator over `ranks` (default: every GPU) of `topo`, for NCCL `version`
    (tuner.nccl_versions.parse_version; None: the newest release modelled).

    NCCL's nNodes counts network-separated groups, so one NVLink domain (an NVL72 rack) is one node."""
    ranks = np.arange(topo.n_gpus) if ranks is None else np.asarray(ranks)
    if ranks.size < 1:
        raise FabricsimError("system_from_topology: the communicator has no ranks; pass at least one GPU rank")
    domains, per_domain = np.unique(topo.gpu_domain[ranks], return_counts=True)
    if per_domain.min() != per_domain.max():
        raise FabricsimError("NCCL's tuning model needs the same number of ranks in every NVLink domain: "
                             "choose ranks evenly across domains")
    gpu_dev = int(topo.gpu_device[ranks[0]])
    gpu = hardware.get_gpu(topo.parts[int(topo.dev_part[gpu_dev])])
    if gpu.compute_capability <= 0:
        raise FabricsimError(f"{gpu.name} is not an NVIDIA GPU: NCCL's tuning model does not apply (RCCL differs)")
    compcap = int(round(gpu.compute_capability * 10))
    per_link = nccl_versions.graph_search(version, compcap).nvlink_bw  # ncclTopoNVLinkBw of the release

    # NCCL's search needs every GPU's links to carry a channel (search.cc followPath): the GPU with the fewest
    # working NVLinks sets the count, and NVLS needs every GPU on the NVSwitch
    counts, switched = _nvlinks_per_gpu(topo, ranks)
    n_links = int(counts.min())
    has_nvswitch = bool(switched.all())
    nvlinks = _out_links(topo, gpu_dev, ("nvlink",))
    peer = None
    if nvlinks and not switched.any():
        peer = int(max(_nccl_links(topo, np.array([l for l, _ in nvlinks])))) * per_link

    pcie = _out_links(topo, gpu_dev, ("pcie",))
    pcie_bw = _pcie_bw(pcie[0][1].name, _lanes(topo, *pcie[0])) if pcie else _pcie_bw(gpu.pcie_link)

    features = topo.features
    transport = hardware.TRANSPORTS.get(features.get("transport") or "ib", hardware.TRANSPORTS["ib"])
    nic_bw, nics, gpu_nics, plugin_latency = 0.0, 0, 1, 0.0
    nic_dev = int(topo.gpu_nic[ranks[0]]) if topo.gpu_nic is not None else -1
    if nic_dev >= 0:
        ports = int(features.get("nic_ports", 1) or 1)  # a card's ports: one NCCL device
        per_gpu = int(features.get("nics_per_gpu", 1) or 1)  # ports a GPU sends on
        group = max(per_gpu if transport.fuses_local_nics else ports, 1)  # ports behind one NCCL device
        # NICs of one NCCL node = one NVLink domain (a whole NVL72 rack): the NCCL devices with a working fabric port
        # (NCCL lists only ACTIVE ports, net_ib/init.cc; a fused device keeps the ports that are up)
        domain = topo.gpu_domain[ranks[0]]
        ports_here = np.flatnonzero((topo.dev_kind == DeviceKind.NIC) & (topo.dev_domain == domain))
        port_links = [_out_links(topo, int(d), ("infiniband", "ethernet"))[:1] for d in ports_here]
        nics = len({i // group for i, links in enumerate(port_links) if links})
        net = _out_links(topo, nic_dev, ("infiniband", "ethernet")) or next((l for l in port_links if l), [])
        if net and net[0][1].line_rate_gbps:
            nic_bw = group * net[0][1].line_rate_gbps / 8.0  # speed (Mbps) / 8000
        gpu_nics = max(per_gpu // group, 1)
        plugin_latency = hardware.get_nic(topo.parts[int(topo.dev_part[nic_dev])]).plugin_latency

    cpu_links = _out_links(topo, int(topo.gpu_cpu[ranks[0]]), ("cpu",)) if topo.gpu_cpu is not None else []
    cpu_part = topo.parts[int(topo.dev_part[int(topo.gpu_cpu[ranks[0]])])] if topo.gpu_cpu is not None else "x86"
    vendor = "arm" if "grace" in cpu_part.lower() else "amd" if (
        cpu_part == "x86-amd" or any(t.name == "amd-if" for _, t in cpu_links)) else "intel"

    n_nodes = int(domains.size)
    return NcclSystem(
        n_ranks=int(ranks.size), n_nodes=n_nodes, ppn=int(per_domain[0]), compcap=compcap,
        nvlink_bw_per_gpu=n_links * per_link, pcie_bw=pcie_bw, nic_bw=nic_bw, nics_per_node=nics,
        has_nvswitch=has_nvswitch, nvls_support=bool(features.get("nvls")) and has_nvswitch and compcap >= 90,
        collnet_support=bool(features.get("sharp")), cpu_vendor=vendor,
        intra_type="nvl" if n_links else "pci",
        inter_type=_inter_type(topo, gpu_dev, nic_dev, bool(features.get("gpudirect", True)), version),
        nvlink_peer_bw=peer, nvlink_mesh=_nvlink_mesh(topo, ranks) if peer is not None else (),
        latency_inter_us=plugin_latency * 1e6, gpu_nics=gpu_nics, net_unpack=transport.unpack,
        host_ring_cap=_host_ring_cap(topo, ranks) if not n_links and n_nodes == 1 else 0.0,
        source=f"topology {topo.name}", version=nccl_versions.release(version).version,
    )
