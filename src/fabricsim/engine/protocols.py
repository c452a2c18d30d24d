"""NCCL protocol and latency constants the engine uses, each with its source, in one place.

Everything here is read from NCCL v2.30.7 (`src/graph/tuning.cc`, `src/include/device.h`,
`src/include/collectives.h`, `src/init.cc`).
Nothing is fitted to measurements. Units are converted to SI (seconds, bytes/s) on definition.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from fabricsim import hardware
from fabricsim.engine import nccl_constants as K
from fabricsim.engine.chunking import DEFAULT_CAPS, ChannelCaps
from fabricsim.errors import FabricsimError
# Protocols in NCCL's [LL, LL128, Simple] column order; the NCCL algorithm each fabricsim algorithm is timed as
# (algorithms NCCL does not have use the Ring rows: NCCL's per-step cost of a send/recv step over that hop class).
from fabricsim.vocab import ALGO_FAMILY, PROTOCOLS
from fabricsim.topology.model import Topology

US = 1e-6  # NCCL's tables are in microseconds
GBPS = 1e9  # and GB/s (1e9 B/s)

HOP_CLASSES = ("nvlink", "pci", "net")  # NCCL_HW_NVLINK, NCCL_HW_PCI, NCCL_HW_NET
HOP_NVLINK, HOP_PCI, HOP_NET = K.HW_NVLINK, K.HW_PCI, K.HW_NET

ARCHS = ("Volta", "Ampere", "Hopper", "Blackwell")  # NCCL's compute-capability rows
_FAMILIES = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree")

# baseLatencies[algo][LL, LL128, Simple] and hwLatencies[hw][algo][...] in us (tuning.cc, v2.30.7; nccl_constants).
BASE_LATENCY_US = {a: K.BASE_LAT[a] for a in _FAMILIES}
HW_LATENCY_US = {hop: {a: K.HW_LAT[i][a] for a in _FAMILIES} for i, hop in enumerate(HOP_CLASSES)}

# Which hop classes (nvlink, pci, net) NCCL prices once per step (tree level, ring step) rather than once per
# collective (tuning.cc:384-437 latency formulas): Ring and Tree every step; NVLS `intraLat (+ interLat)`
# once; NVLSTree `intraLat + 2*log2(nNodes)*interLat`: NVLink once, the network per tree level; CollNetChain
# `2*(ppn-1)*intraLat + interLat` and CollNetDirect `2*intraLat + interLat`: every step (the SHARP operation is one step).
PER_STEP_LATENCY = {"Ring": (True, True, True), "Tree": (True, True, True), "NVLS": (False, False, False),
                    "NVLSTree": (False, False, True), "CollNetChain": (True, True, True),
                    "CollNetDirect": (True, True, True)}

# One rank per node: every step of the algorithm crosses the network and its latency is fully exposed
# ("With ppn=1 latencies are fully exposed, use the Tree network latency": src/graph/tuning.cc v2.23.4-1:235,
# v2.30.7-1:386): the network hop of every algorithm costs hwLat[NET][Tree] instead of its own row (a transport that
# documents its own per-step cost, `net_step_latency`, keeps it).
ONE_RANK_PER_NODE_NET_FAMILY = "Tree"

# Wire efficiency: payload fraction of what crosses the wire.
# LL: 16-byte line carries 8 B data + 8 B flags (device.h ncclLLFifoLine); Ring x0.5, Tree x1/3.8 (tuning.cc).
# LL128: 128-byte line carries 120 B data (device.h); tuning.cc uses 0.92 for Ring, 7/9 (1 node) or 120/128 for Tree.
# Simple: bulk copies, x1. Tree AllReduce (the only tree collective) first takes x0.92 for every protocol
# (tuning.cc: `if (a == NCCL_ALGO_TREE && coll == ncclFuncAllReduce) busBw = std::min(busBw*.92, ...)`).
TREE_ALLREDUCE = 0.92
WIRE_EFFICIENCY = {
    "Ring": {"ll": 0.5, "ll128": 0.92, "simple": 1.0},
    "Tree": {"ll": TREE_ALLREDUCE / 3.8, "ll128": TREE_ALLREDUCE * 120 / 128, "simple": TREE_ALLREDUCE},
}
# CollNetDirect AllReduce on sm_90+: busBw x0.85 (tuning.cc v2.30.7, `if (minCompCap >= 90) busBw *= .85`);
# applied to every byte the algorithm moves, so it scales whichever link bounds it.
COLLNET_DIRECT_SM90_ALLREDUCE = 0.85
TREE_LL128_ONE_NODE = TREE_ALLREDUCE * 7 / 9  # tuning.cc: Tree LL128 x7/9 instead of 120/128 when nNodes == 1

# nvlsEfficiency per architecture (tuning.cc, static; 0 = no NVLS before Hopper). It prices NVLS AllReduce,
# whose multimem.ld_reduce and multimem.st run at once in both directions of every NVLink ("AllReduce pipelines
# two operations", tuning.cc). NVLS AllGather / ReduceScatter run one multimem operation per chunk, at the
# NVLink rate: the maintainers state NVLS brings no bandwidth gain over Ring for AG/RS (nccl#1506), which
# only holds without the factor (measured 8x B200: NVLS AG/RS busbw = Ring's).
NVLS_EFFICIENCY = dict(zip(ARCHS, K.NVLS_EFFICIENCY))

# Per-channel bandwidth caps in GB/s [arch row][N1, N2, N4] and llMaxBws, the LL bus bandwidth cap [row][N1, N2,
# N4]: engine.chunking.ChannelCaps, a release's own through CommPlan.channel_caps (DEFAULT_CAPS: v2.30.7's). llMaxBws'
# row is the arch on one node (its N1 column); on several nodes row 0 for Intel (and Arm) hosts, row 1 for AMD or
# mixed vendors (tuning.cc:268-272).


@dataclass(frozen=True)
class ProtocolModel:
    """Everything the engine needs about one (algorithm family, protocol, arch, node count)."""

    family: str
    protocol: str
    wire_efficiency: float  # payload / wire bytes
    base_latency: float  # s, once per collective
    hop_latency: tuple[float, float, float]  # s per step for nvlink, pci, net hops
    per_step_latency: tuple[bool, bool, bool]  # per hop class: its latency counts per step; False: once per collective
    busbw_cap_per_channel: float  # bytes/s of NCCL bus bandwidth per channel (inf: none); tuning.cc caps busBw at nChannels x this
    busbw_cap_source: str  # the tuning.cc table the per-channel cap comes from ('' when none)
    bus_to_alg: float  # NCCL's busBw -> algBw ratio for the cap (tuning.cc: Tree/CollNet 0.5, Ring/NVLS nRanks/nSteps)
    nvls_efficiency: float
    n_nodes: int  # NVLink domains the call spans (NCCL's nNodes): its chunk sizes follow them (engine.chunking)
    net_peer_bw: float = math.inf  # bytes/s one point-to-point transfer gets across the network (NCCL p2p channels)

    @cached_property
    def step_hop_latency(self) -> np.ndarray:
        """s per step for an nvlink, pci, net hop: the hop classes priced once per collective count 0 here (made once
        per model, read-only)."""
        out = np.where(self.per_step_latency, np.array(self.hop_latency), 0.0)
        out.setflags(write=False)
        return out


def _column(n_nodes: int) -> int:
    """NCCL's N1/N2/N4 column: `nNodes <= 2 ? nNodes-1 : 2`."""
    return min(max(n_nodes, 1), 3) - 1


def _bus_to_alg(family: str, collective: str, nranks: int) -> float:
    """tuning.cc's busBw -> algBw conversion: 0.5 for Tree and CollNet, nRanks/nSteps otherwise
    (nSteps = 2(n-1) for AllReduce, n-1 for AllGather/ReduceScatter, n for Broadcast/Reduce)."""
    if family in ("Tree", "CollNetDirect", "CollNetChain"):
        return 0.5
    steps = {"all_reduce": 2 * (nranks - 1), "all_gather": nranks - 1, "reduce_scatter": nranks - 1}.get(collective, nranks)
    return nranks / steps if steps > 0 else 1.0


def protocol_model(algorithm: str, protocol: str, arch: str, n_nodes: int, channels: int, collective: str,
                   nranks: int = 2, net_step: tuple[float, float, float] | None = None,
                   cpu_vendor: str = "intel", channel_caps: ChannelCaps | None = None) -> ProtocolModel:
    """The constants for timing `algorithm` with `protocol` on `arch` GPUs spread over `n_nodes` NVLink domains.

    `channels` are NCCL's search-graph channels: the per-channel caps of tuning.cc multiply them. `net_step`: the
    network transport's own cost per network step (s, LL / LL128 / Simple; `net_step_latency`), charged instead of
    NCCL's hwLat[NET] for every algorithm; None: NCCL's. `cpu_vendor` picks NCCL's multi-node llMaxBws row.
    `channel_caps`: the per-channel caps of the release NCCL ran (chunking.CommPlan.channel_caps), which pace a
    pipelined tree's levels as well as bound the call: NCCL retuned them between releases (Blackwell's Tree cap
    across 4+ nodes 72 GB/s in 2.27, 24 in 2.28+, tuner.nccl_versions); None: v2.30.7's."""
    if protocol not in PROTOCOLS:
        raise FabricsimError(f"unknown protocol '{protocol}': use one of {', '.join(PROTOCOLS)}")
    family = ALGO_FAMILY.get(algorithm, "Ring")
    p = PROTOCOLS.index(protocol)
    if family not in WIRE_EFFICIENCY and protocol != "simple":
        raise FabricsimError(
            f"NCCL implements {algorithm} only with the simple protocol (LL/LL128 exist for ring and tree): use protocol='simple'"
        )
    col = _column(n_nodes)
    wire = WIRE_EFFICIENCY.get(family, {"simple": 1.0})[protocol]
    if family == "Tree" and protocol == "ll128" and n_nodes == 1:
        wire = TREE_LL128_ONE_NODE
    if family == "CollNetDirect" and collective == "all_reduce" and arch in ("Hopper", "Blackwell"):
        wire = COLLNET_DIRECT_SM90_ALLREDUCE
    cap, source = math.inf, ""
    column = f"[{arch}][N{(1, 2, 4)[col]}]"
    caps, row = channel_caps or DEFAULT_CAPS, ARCHS.index(arch)
    if family == "Ring" and protocol == "ll128":
        cap, source = caps.ring_ll128[row][col] * GBPS, f"tuning.cc perChMaxRingLL128Bws{column}"
    elif family == "Tree" and protocol == "ll128":
        cap, source = caps.tree_ll128[row][col] * GBPS, f"tuning.cc perChMaxTreeLL128Bws{column}"
    elif family == "Tree" and collective == "all_reduce":
        cap, source = caps.tree[row][col] * GBPS, f"tuning.cc perChMaxTreeBws{column}"
    elif family == "NVLSTree" and n_nodes > 1:
        cap, source = caps.nvls_tree[row][col] * GBPS, f"tuning.cc perChMaxNVLSTreeBws{column}"
    if protocol == "ll":
        amd = cpu_vendor == "amd"
        ll_max = caps.ll_max[row][0] if n_nodes == 1 else caps.ll_max[int(amd)][col]
        if ll_max * GBPS / channels < cap:
            row = f"[{arch}][0]" if n_nodes == 1 else f"[{int(amd)}][N{(1, 2, 4)[col]}]"
            cap, source = ll_max * GBPS / channels, f"tuning.cc llMaxBws{row} / channels"
    hop = [HW_LATENCY_US[h][family][p] * US for h in HOP_CLASSES]
    if n_nodes > 1 and nranks == n_nodes:
        hop[HOP_NET] = HW_LATENCY_US["net"][ONE_RANK_PER_NODE_NET_FAMILY][p] * US
    if net_step is not None:
        hop[HOP_NET] = net_step[p]
    return ProtocolModel(
        family=family,
        protocol=protocol,
        wire_efficiency=wire,
        base_latency=BASE_LATENCY_US[family][p] * US,
        hop_latency=tuple(hop),
        per_step_latency=PER_STEP_LATENCY[family],
        busbw_cap_per_channel=cap,
        busbw_cap_source=source,
        bus_to_alg=_bus_to_alg(family, collective, nranks),
        nvls_efficiency=NVLS_EFFICIENCY[arch] if collective == "all_reduce" else float(NVLS_EFFICIENCY[arch] > 0),
        n_nodes=max(int(n_nodes), 1),
    )


def net_step_latency(topo: Topology, gpu_ranks: np.ndarray) -> tuple[float, float, float] | None:
    """The network transport's documented cost per network step (s, LL / LL128 / Simple) for these ranks' NICs:
    the NIC part's `step_latency` (EFA: aws-ofi-nccl's own cost model, hardware.nics); None where no transport
    documents one (NCCL's hwLat[NET] is charged: NCCL's IB transport, and the plugins that publish none)."""
    if topo.gpu_nic is None or not topo.features.get("fabric"):
        return None
    nic = int(topo.gpu_nic[gpu_ranks[0]])
    return hardware.get_nic(topo.parts[int(topo.dev_part[nic])]).step_latency if nic >= 0 else None


def nccl_arch(topo: Topology, gpu_ranks: np.ndarray) -> str:
    """NCCL's compute-capability row for these GPUs: from the lowest compute capability, as NCCL's `minCompCap`
    (>= 10 Blackwell, >= 9 Hopper, >= 8 Ampere, else Volta; tuning.cc)."""
    cc = float(_compute_capability(topo)[gpu_ranks].min())
    if cc >= 10:
        return "Blackwell"
    if cc >= 9:
        return "Hopper"
    if cc >= 8:
        return "Ampere"
    return "Volta"


def _compute_capability(topo: Topology) -> np.ndarray:
    """Each GPU rank's compute capability (catalog), kept in the topology's store of structural data."""
    def compute() -> np.ndarray:
        per_part = np.array([hardware.get_gpu(p).compute_capability if k else math.nan
                             for p, k in zip(topo.parts, np.bincount(topo.dev_part[topo.gpu_device],
                                                                     minlength=len(topo.parts)).tolist())])
        return per_part[topo.dev_part[topo.gpu_device]]

    return topo.derive_structure(("gpu_compute_capability",), compute)
