"""NCCL's system description and an approximation of its channel search (src/graph/search.cc).

NCCL searches paths GPU by GPU and subtracts each channel's bandwidth from every link it crosses.
Here the same control flow (speed arrays, pass 1 / dup / pass 2, best-graph comparison) runs
against a closed-form capacity oracle per pattern: how many channels of a given per-channel
bandwidth fit on a GPU's NVLink/PCIe and on the node's NICs (src/graph/search.cc ncclTopoCompute).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache

from fabricsim.errors import FabricsimError, option
from fabricsim.engine import chunking, nccl_constants as K
from fabricsim.tuner import nccl_versions
from fabricsim.tuner.nccl_ring_search import mesh_rings

CPU_VENDORS = ("intel", "amd", "arm")
PATH_ORDER = {name: i for i, name in enumerate(K.PATH_TYPES)}


@dataclass(frozen=True)
class NcclSystem:
    """What NCCL's tuner sees of a communicator, in NCCL's own units (GB/s as NCCL counts links).

    nvlink_bw_per_gpu: NVLinks x the release's per-link bw (2.30.7: 18/20/20.6/40.1; `search`); 0 if none.
    nvlink_peer_bw: best single GPU->GPU NVLink path without NVSwitch (DGX-1 mesh); None = nvlink_bw_per_gpu.
    nvlink_mesh: NVLinks between each pair of one node's GPUs when more than two are joined directly, without an
    NVSwitch (the DGX-1 cube-mesh), in NCCL's GPU order; () otherwise. NCCL's ring search runs on it (`ring_orders`).
    pcie_bw: GPU's PCIe link, width x code / 80 (x16: Gen3 12, Gen4 24, Gen5 48).
    nic_bw: per NCCL net device, speed_Mbps / 8000 (400G -> 50). latency_inter_us: net plugin latency (IB reports 0;
    aws-ofi-nccl 75 us on p5). gpu_nics: net devices local to each GPU (2 on an 8-NIC GB200 tray).
    net_unpack: the plugin's netDeviceType is UNPACK (GPUDirect-TCPX): NCCL doubles its collective channels.
    intra_type: 'nvl' if GPUs reach each other over NVLink, else 'pci'. inter_type: GPU->NIC path type
    ('pix', 'pxb', 'pxn', 'phb', ...), which gates LL128.
    host_ring_cap: on one node whose ring hops all climb to one CPU (PCIe P2P off, or GPUs on separate root ports),
    the most per-channel bandwidth their links carry (each link's bw over the hops of one ring crossing it, as
    followPath takes it), before the Intel charge; 0 where the hops do not go through the CPU.
    """

    n_ranks: int
    n_nodes: int
    ppn: int
    compcap: int
    nvlink_bw_per_gpu: float = 0.0
    pcie_bw: float = 24.0  # Gen4 x16 as NCCL counts it: width 16 x code 120 / 80 (topo.cc)
    nic_bw: float = 0.0
    nics_per_node: int = 0
    has_nvswitch: bool = False
    nvls_support: bool = False
    collnet_support: bool = False
    cpu_vendor: str = "intel"
    intra_type: str = "nvl"
    inter_type: str = "pxb"
    latency_inter_us: float = 0.0
    nvlink_peer_bw: float | None = None
    collnet_ag_rs: bool = False  # the CollNet plugin implements iallgather / ireducescatter
    nvlink_mesh: tuple[tuple[int, ...], ...] = ()
    gpu_nics: int = 1
    net_unpack: bool = False
    host_ring_cap: float = 0.0
    source: str = ""
    version: tuple[int, int, int] = nccl_versions.NEWEST  # the NCCL release whose rules apply (tuner.nccl_versions)
    channel_env: chunking.ChannelEnv = chunking.ChannelEnv()  # the run's channel bounds (NCCL_MAX_NCHANNELS, ...)

    def __post_init__(self) -> None:
        if self.n_nodes < 1 or self.ppn < 1 or self.n_ranks != self.n_nodes * self.ppn:
            raise FabricsimError(
                f"NcclSystem: n_ranks {self.n_ranks} must equal n_nodes {self.n_nodes} x ppn {self.ppn} (both >= 1)")
        if self.cpu_vendor not in CPU_VENDORS:
            raise FabricsimError(f"NcclSystem: unknown cpu_vendor '{self.cpu_vendor}': use one of {', '.join(CPU_VENDORS)}")
        if self.intra_type not in ("nvl", "pci"):
            raise FabricsimError(f"NcclSystem: intra_type '{self.intra_type}' must be 'nvl' or 'pci'")
        if self.inter_type not in K.PATH_TYPES:
            raise FabricsimError(f"NcclSystem: inter_type '{self.inter_type}' must be one of {', '.join(K.PATH_TYPES)}")
        if self.intra_type == "nvl" and self.ppn > 1 and self.nvlink_bw_per_gpu <= 0:
            raise FabricsimError("NcclSystem: intra_type 'nvl' needs nvlink_bw_per_gpu > 0 (links x per-link GB/s)")
        if self.n_nodes > 1 and (self.nics_per_node < 1 or self.nic_bw <= 0):
            raise FabricsimError("NcclSystem: a multi-node communicator needs nics_per_node >= 1 and nic_bw > 0 (GB/s per NIC)")
        if self.pcie_bw <= 0:
            raise FabricsimError("NcclSystem: pcie_bw must be > 0 (x16: Gen3 12, Gen4 24, Gen5 48 GB/s)")
        if not self.release.supports(self.compcap):
            raise FabricsimError(f"{self.release.label} does not know GPUs of compute capability {self.compcap / 10:.1f} "
                                 f"(Hopper arrived in NCCL 2.15.5, Blackwell in 2.25.1): give a newer {option('nccl_version')}")

    @property
    def release(self) -> nccl_versions.Release:
        """The rules of the system's NCCL release."""
        return nccl_versions.release(self.version)

    @property
    def search(self) -> nccl_versions.GraphSearch:
        """The release's graph-search rules for the system's GPUs (per-link bw, speed arrays, duplication)."""
        return nccl_versions.graph_search(self.version, self.compcap)

    @property
    def max_channels(self) -> int:
        """MAXCHANNELS of the release: what ncclTopoPostset clamps to; the ring search gets half (src/init.cc)."""
        return int(self.release.get("max channels"))

    @property
    def intra_cap(self) -> float:
        """Per-GPU, per-direction bandwidth a channel's intra-node hop draws from."""
        return self.nvlink_bw_per_gpu if self.intra_type == "nvl" else self.pcie_bw

    @property
    def net_cap(self) -> float:
        """Per-NIC bandwidth of the GPU -> PCIe -> NIC path."""
        return min(self.nic_bw, self.pcie_bw)


@dataclass(frozen=True)
class NcclGraph:
    """The search result NCCL's tuner reads (struct ncclTopoGraph): per-channel GB/s, channel count."""

    n_channels: int
    bw_intra: float
    bw_inter: float
    type_intra: str  # path types of nccl_constants.PATH_TYPES
    type_inter: str
    latency_inter: float
    same_channels: bool
    max_channels: int


_EMPTY = NcclGraph(0, 0.0, 0.0, "nvl", "pxb", 0.0, True, 0)


def _fit(cap: float, per_channel: float) -> int:
    """How many channels of `per_channel` GB/s fit into `cap` (NCCL rounds link bw to 1e-3)."""
    return int(math.floor(cap / per_channel + 1e-6)) if per_channel > 0 else 0


def _count(system: NcclSystem, pattern: str, bw_intra: float, bw_inter: float, max_ch: int) -> int:
    """Most channels (<= max_ch) whose paths fit the links at the given per-channel bandwidths."""
    ppn, inter = system.ppn, system.n_nodes > 1
    best = max_ch
    if inter:
        # every channel leaves and enters each node through one of the communicator's GPUs' own PCIe links
        # (NCCL's topology holds only the communicator's GPUs, so no PXN through other GPUs)
        best = min(best, system.nics_per_node * _fit(system.net_cap, bw_inter), ppn * _fit(system.pcie_bw, bw_inter))
    if ppn == 1:
        return best
    cap = system.intra_cap
    if pattern == "nvls":
        # every GPU<->NVSwitch link carries bw per channel, the channel's head 2*bw (ncclTopoSearchTryNvls)
        n = best
        while n > 0 and (n + math.ceil(n / ppn)) * bw_intra > cap + 1e-6:
            n -= 1
        return n
    if pattern == "collnet_direct":  # bw/(ppn-1) to every peer = bw per GPU per channel
        return min(best, _fit(cap, bw_intra))
    if not inter:  # ring / chain inside a node: one NVLink (or PCIe) out and one in per GPU per channel
        peer = system.nvlink_peer_bw if (system.intra_type == "nvl" and system.nvlink_peer_bw) else None
        if system.host_ring_cap:  # PATH_PHB hops through the CPU: Intel root complexes cost 6/5 (followPath)
            charge = K.INTEL_P2P_OVERHEAD if system.cpu_vendor == "intel" else 1.0
            return min(best, _fit(system.host_ring_cap, bw_intra * charge))
        n = _fit(cap, bw_intra)
        return min(best, n if peer is None or bw_intra <= peer else 0)
    # multi-node ring/tree: each channel crosses ppn-1 intra hops, spread evenly over the node's GPUs
    n = best
    while n > 0 and math.ceil(n * (ppn - 1) / ppn) * bw_intra > cap + 1e-6:
        n -= 1
    return n


def _max_total_bw(system: NcclSystem) -> tuple[float, float]:
    """system->maxBw (best GPU->GPU path on one node, GPU->NET otherwise) and totalBw (per GPU)."""
    if system.n_nodes == 1 and system.ppn == 1:
        return 5000.0, 5000.0  # LOC_BW
    total = max(system.nvlink_bw_per_gpu, system.pcie_bw)
    if system.n_nodes > 1:
        return system.net_cap, total
    if system.intra_type == "nvl":
        peer = system.nvlink_bw_per_gpu if system.has_nvswitch else (system.nvlink_peer_bw or system.nvlink_bw_per_gpu)
        return peer, total
    return system.pcie_bw, total


def _better(pattern: str, n: int, bw_intra: float, bw_inter: float, ref: NcclGraph | None, gpus: int) -> bool:
    """ncclTopoCompareGraphs: NVLS wants more channels, then n x bwInter; others n x bwIntra (strictly)."""
    if ref is None:
        return True
    if pattern == "nvls":
        return (ref.n_channels < n <= gpus) or n * bw_inter > ref.n_channels * ref.bw_inter
    return n * bw_intra > ref.n_channels * ref.bw_intra


def _dup(graph: NcclGraph, pattern: str, system: NcclSystem) -> NcclGraph:
    """ncclTopoDupChannels: double the channels and halve their bandwidth when the release's rule allows it."""
    rules = system.search
    if pattern == "nvls" and rules.dup_skips_nvls:
        return graph
    dup, div = rules.duplicated(graph.n_channels, graph.bw_intra, system.compcap, graph.max_channels)
    if div == 1 and dup == graph.n_channels:
        return graph
    return NcclGraph(dup, graph.bw_intra / div, graph.bw_inter / div, graph.type_intra, graph.type_inter,
                     graph.latency_inter, graph.same_channels, graph.max_channels)


def ring_orders(system: NcclSystem) -> tuple[tuple[int, ...], ...]:
    """The rings NCCL's search finds inside one node of a direct NVLink mesh (local GPU orders, one per search
    channel, `nccl_ring_search.mesh_rings`); () when the node has an NVSwitch, PCIe only, or two GPUs."""
    if not system.nvlink_mesh:
        return ()
    return mesh_rings(system.nvlink_mesh, system.compcap, system.pcie_bw, system.max_channels // 2, system.search)[0]


def _compute(system: NcclSystem, pattern: str, min_ch: int, max_ch: int) -> NcclGraph:
    """ncclTopoCompute's control flow over the capacity oracle `_count`; on one node of a direct NVLink mesh the
    ring graph is the real search's (`ring_orders`). The release's rules (`NcclSystem.search`) give the speed arrays,
    the duplication rule and where it runs: between the passes from 2.19.3 (src/graph/search.cc), after pass 2 before,
    when pass 2 raised only trees' bwIntra (and NVLS's, before 2.19.1 gave NVLS its bwInter step)."""
    inter = system.n_nodes > 1
    if pattern == "ring" and system.nvlink_mesh and not inter:
        rings, bw, same = mesh_rings(system.nvlink_mesh, system.compcap, system.pcie_bw, max_ch, system.search)
        if rings:
            return NcclGraph(len(rings), bw, bw, "nvl", system.inter_type, system.latency_inter_us, same, max_ch)
    rules = system.search
    speeds = rules.speeds_inter if inter else rules.speeds_intra
    max_bw, total_bw = _max_total_bw(system)
    ndevs = system.ppn
    if ndevs > 1 and pattern != "ring" and rules.start_within_total:
        total_bw *= ndevs / (ndevs - 1)
    last = len(speeds) - 1
    gpus = system.ppn

    def make(n: int, bi: float, be: float) -> NcclGraph:
        type_intra = "nvl" if system.intra_type == "nvl" else "pxb"
        return NcclGraph(n, bi, be, type_intra, system.inter_type, system.latency_inter_us,
                         pattern != "nvls", max_ch)

    def search(bi: float, be: float, lo: int, hi: int, ref: NcclGraph | None) -> NcclGraph | None:
        n = _count(system, pattern, bi, be, hi)
        return make(n, bi, be) if n >= max(lo, 1) and _better(pattern, n, bi, be, ref, gpus) else None

    # pass 1: highest speed that fits, then lower speeds while they are within ~2x of the best
    idx = 0
    while (speeds[idx] > max_bw or (rules.start_within_total and speeds[idx] * min_ch > total_bw)) and idx < last:
        idx += 1
    graph: NcclGraph | None = None
    while True:
        found = search(speeds[idx], speeds[idx], min_ch, max_ch, graph)
        graph = found or graph
        if graph is not None and (graph.n_channels == max_ch or graph.n_channels * graph.bw_inter >= total_bw):
            break
        if idx < last and (graph is None or speeds[idx + 1] / graph.bw_inter > 0.49):
            idx += 1
            continue
        break
    if graph is None:
        return make(0, 0.0, 0.0)
    # pass 2: duplicate channels (2.19.3+), then try to raise the per-channel bandwidth
    if rules.dup_first:
        graph = _dup(graph, pattern, system)
    idx = 0
    while speeds[idx] > graph.bw_inter and idx < last:
        idx += 1
    tmp_intra = tmp_inter = speeds[idx]
    lo = graph.n_channels
    hi = graph.n_channels if pattern == "nvls" else max_ch
    while idx > 0:
        if pattern == "ring" and rules.dup_first:
            idx -= 1
            tmp_intra = tmp_inter = speeds[idx]
        elif pattern == "ring":
            break
        elif pattern == "nvls" and rules.nvls_raise and tmp_inter == graph.bw_inter and tmp_inter < tmp_intra * 2:
            idx -= 1
            tmp_intra, tmp_inter = graph.bw_intra, speeds[idx]
        elif tmp_intra == graph.bw_intra and tmp_intra < tmp_inter * 2:
            idx -= 1
            tmp_intra = speeds[idx]
        else:
            break
        graph = search(tmp_intra, tmp_inter, lo, hi, graph) or graph
    return graph if rules.dup_first else _dup(graph, pattern, system)


@lru_cache(maxsize=256)
def search_graphs(system: NcclSystem) -> dict[str, NcclGraph]:
    """The graph each NCCL algorithm reads (src/init.cc: NVLS and NVLSTree share one, PAT reads Tree's)."""
    ring = _compute(system, "ring", 1, system.max_channels // 2)
    tree = _compute(system, "tree", ring.n_channels, ring.n_channels)
    # init.cc aligns Tree and Ring to the smaller channel count
    n = min(ring.n_channels, tree.n_channels)
    ring = NcclGraph(n, ring.bw_intra, ring.bw_inter, *_tail(ring))
    tree = NcclGraph(n, tree.bw_intra, tree.bw_inter, *_tail(tree))
    graphs = {"Ring": ring, "Tree": tree, "PAT": tree}
    nvls = _EMPTY
    if system.nvls_support and system.has_nvswitch and system.compcap >= 90 and system.ppn > 1:
        nvls_max = min(K.MAX_NVLS_ARITY, system.ppn)
        nvls = _compute(system, "nvls", nvls_max if system.n_nodes == 1 else 1, nvls_max)
    graphs["NVLS"] = graphs["NVLSTree"] = nvls
    chain = direct = _EMPTY
    if system.collnet_support and system.n_nodes > 1:
        chain = _compute(system, "tree", ring.n_channels, ring.n_channels)
        direct = _compute(system, "collnet_direct", 1, min(K.MAX_DIRECT_ARITY + 1, system.ppn))
    graphs["CollNetChain"], graphs["CollNetDirect"] = chain, direct
    return graphs


def _tail(g: NcclGraph) -> tuple:
    return g.type_intra, g.type_inter, g.latency_inter, g.same_channels, g.max_channels


def comm_channels(system: NcclSystem, graphs: dict[str, NcclGraph]) -> int:
    """Execution channels `comm->nChannels` after ncclTopoPostset (src/graph/connect.cc), under the run's channel
    bounds (`bounded_channels`)."""
    ring = graphs["Ring"]
    n = min(system.max_channels, 2 * ring.n_channels)
    chain = graphs["CollNetChain"]
    if chain.n_channels and chain.bw_intra > chain.bw_inter and system.n_ranks > system.n_nodes:
        n = min(system.max_channels, n + n // 2)
    if system.compcap >= 90 and system.n_nodes > 1 and ring.bw_intra > 45.0 and n < 16:
        n = min(system.max_channels, 2 * n)
    if system.net_unpack and system.n_nodes > 1 and n < 16:  # unpack networks (src/graph/connect.cc:485-490)
        n = min(system.max_channels, 2 * n)
    n = bounded_channels(system, n)[1]
    if system.release.get("ring/tree channels raised to nvls channels") and graphs["NVLS"].n_channels:
        n = max(n, nvls_channels(system))  # connect.cc copyChannels up to comm->nvlsChannels (NCCL 2.22-2.27)
    return max(n, 1)


def _bounds(system: NcclSystem) -> tuple[int, int, int, int]:
    """(minimum, maximum) channels of NCCL_MIN/MAX_NCHANNELS, then of the config's minCTAs / maxCTAs, as the system's
    release resolves the run's values (engine.chunking.ChannelEnv): ncclMinNchannels 0 unset, at most MAXCHANNELS;
    ncclMaxNchannels MAXCHANNELS unset, at most MAXCHANNELS (v2.30.7-1 src/graph/connect.cc:334-362); minCTAs 1 and
    maxCTAs MAXCHANNELS unset (src/init.cc:2412-2413), both at most MAXCHANNELS, minCTAs at most maxCTAs
    (init.cc:2178-2194). A release without the variables (tuner.nccl_versions 'nchannels env', 'cta config') leaves
    its bounds open."""
    env, top, rel = system.channel_env, system.max_channels, system.release
    open_ = rel.get("nchannels env") is None
    lo = 0 if open_ or env.min_nchannels is None else min(env.min_nchannels, top)
    hi = top if open_ or env.max_nchannels is None else min(env.max_nchannels, top)
    no_ctas = rel.get("cta config") is None
    max_ctas = top if no_ctas or env.max_ctas is None else min(env.max_ctas, top)
    min_ctas = 1 if no_ctas or env.min_ctas is None else min(env.min_ctas, max_ctas)
    return lo, hi, min_ctas, max_ctas


def bounded_channels(system: NcclSystem, n: int) -> tuple[int, int]:
    """(channels kept, channels run) of a communicator whose ncclTopoPostset reached `n` channels, under the run's
    bounds: `comm->nChannels = min(maxNchannels, n, maxCTAs)`, then copyChannels up to max(minNchannels, minCTAs),
    copies of those first channels (v2.30.7-1 src/graph/connect.cc:492-506, 'We permit combining max, then min, to
    only use the first channels, then duplicate them'; copyChannels :361-370 adds none when the count is reached)."""
    lo, hi, min_ctas, max_ctas = _bounds(system)
    kept = min(hi, n, max_ctas)
    return kept, max(kept, lo, min_ctas)


def nvls_channels(system: NcclSystem) -> int:
    """comm->nvlsChannels (src/transport/nvls.cc) of the system's release: Hopper 16, Blackwell by release
    (tuner.nccl_versions) before the multi-node tuning of `comm_plan`, within the run's CTA bounds (`nvls_bounded`)."""
    rel = system.release
    if system.compcap >= 100:
        one, several = rel.get("nvls channels sm100 (one domain, several)", (K.NVLS_NCHANNELS_SM100_NVL, K.NVLS_NCHANNELS_SM100))
        return nvls_bounded(system, several if system.n_nodes > 1 else one)
    return nvls_bounded(system, rel.get("nvls channels sm90", K.NVLS_NCHANNELS_SM90))


def nvls_bounded(system: NcclSystem, n: int) -> int:
    """NVLS channels `n` within the config's [minCTAs, maxCTAs] (v2.30.7-1 src/transport/nvls.cc:234-235, after
    the tuning; v2.17.1-1 nvls.cc:246): NCCL_MIN/MAX_NCHANNELS do not bound them."""
    _, _, min_ctas, max_ctas = _bounds(system)
    return max(min_ctas, min(max_ctas, n))


def _channel_caps(system: NcclSystem) -> chunking.ChannelCaps:
    """The per-channel and LL caps of the system's release (tuning.cc perChMax*Bws, llMaxBws: tuner.nccl_versions.
    tuning), v2.30.7's NVLSTree table where the release has none (before 2.28.3): a channel's rate did not wait for
    NCCL's model to cap it."""
    t = nccl_versions.tuning(system.release)
    nvls_tree = t.per_ch_nvls_tree if t.per_ch_nvls_tree is not None else chunking.DEFAULT_CAPS.nvls_tree
    return chunking.ChannelCaps(t.per_ch_ring_ll128, t.per_ch_tree_ll128, t.per_ch_tree, nvls_tree, t.ll_max_bw)


def comm_plan(system: NcclSystem, graphs: dict[str, NcclGraph]) -> chunking.CommPlan:
    """What the communicator gives every call (engine.chunking.CommPlan): execution channels (`comm_channels`),
    NVLS channels and heads (the NVLS graph's channels, src/graph/connect.cc connectNvls), NVLS chunk sizes with
    Blackwell's multi-node tuning (src/transport/nvls.cc:164-240), CollNetDirect heads, the ring's Simple
    threads (256 when its bwIntra x channels <= PCI_BW, src/graph/tuning.cc:244-247), the network post overhead
    of the host's CPU (tuning.cc getNetOverhead) and the point-to-point network chunk (src/init.cc:829-834: twice
    128 KiB on Grace-Blackwell across nodes)."""
    rel = system.release
    nvls, chunk, tree_max = nvls_channels(system), chunking.NVLS_CHUNK, 0
    if system.compcap >= 100 and system.n_nodes > 1 and rel.get("nvls sm100 multi-node tuning"):
        tuned = chunking.nvls_tuning(system.n_nodes, system.ppn, system.nic_bw,
                                     PATH_ORDER[system.inter_type] <= PATH_ORDER["pxb"])
        if tuned is not None:
            nvls, chunk, tree_max = tuned
            nvls = nvls_bounded(system, nvls)
    ring = graphs["Ring"]
    from_step = bool(rel.get("nvls_tree chunk from the simple step"))
    if not tree_max:
        tree_max = (chunking.nvls_tree_max_chunk(0 if from_step else chunk, system.n_nodes)
                    if rel.get("nvls_tree 64 KiB chunk from 4 nodes") else (0 if from_step else chunk))
    # the communicator without the run's channel bounds, whose channels NCCL's per-channel caps price
    natural = comm_plan(dataclasses.replace(system, channel_env=chunking.ChannelEnv()), graphs) \
        if system.channel_env else None
    return chunking.CommPlan(
        channels=comm_channels(system, graphs), nvls_channels=nvls,
        natural_channels=natural.channels if natural else 0,
        natural_nvls_channels=natural.nvls_channels if natural else 0,
        nvls_heads=max(graphs["NVLS"].n_channels, 1), nvls_tree_max_chunk=tree_max, nvls_tree_from_step=from_step,
        nvls_chunk=chunk, collnet_heads=max(graphs["CollNetDirect"].n_channels, 1),
        ring_simple_threads=256 if ring.bw_intra * ring.n_channels <= K.PCI_BW else K.SIMPLE_MAX_NTHREADS,
        net_overhead=K.NET_OVERHEAD_US[system.cpu_vendor] * 1e-6,
        p2p_net_chunk=chunking.P2P_NET_CHUNK * (2 if system.cpu_vendor == "arm" and system.compcap >= 100
                                                 and system.n_nodes > 1 else 1),
        channel_caps=_channel_caps(system))
