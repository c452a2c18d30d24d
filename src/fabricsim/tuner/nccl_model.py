"""NCCL 2.30.7's own cost model: the latency/bandwidth table and the per-call algorithm choice.

A line-by-line reimplementation of `ncclTopoTuneModel` / `ncclTopoGetAlgoTime` (src/graph/tuning.cc)
and the selection in src/enqueue.cc (`updateCollCostTable`, `topoGetAlgoInfo`). It tells what NCCL *would pick* and how fast NCCL *thinks*
it is, which is what `--model nccl` and `--explain` show next to fabricsim's own engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from fabricsim.errors import FabricsimError
from fabricsim.engine import nccl_constants as K
from fabricsim.engine import chunking
from fabricsim.tuner import nccl_versions
from fabricsim.tuner.nccl_graph import PATH_ORDER, NcclGraph, NcclSystem, comm_channels, comm_plan, search_graphs
from fabricsim.tuner.nccl_system import system_from_topology
from fabricsim.vocab import (NCCL_ALGO_NAMES, NCCL_PROTO_NAMES, NCCL_TUNED_ALGOS, REDUCING, parse_algorithms,
                             parse_protocols)

__all__ = ["NcclSystem", "NcclChoice", "nccl_table", "nccl_times", "nccl_predict", "system_from_topology", "ALGO_NAMES", "PROTO_NAMES"]

# fabricsim -> NCCL names of algorithms and protocols, and the algorithms the cost model prices per collective
# (tuning.cc:292-304 skip list, NCCL_ALGO_* order): all in vocab.
ALGO_NAMES, PROTO_NAMES, COLL_ALGOS = NCCL_ALGO_NAMES, NCCL_PROTO_NAMES, NCCL_TUNED_ALGOS
ALGO_KEYS = {nccl: name for name, nccl in NCCL_ALGO_NAMES.items()}  # NCCL name -> fabricsim name


@dataclass(frozen=True)
class NcclChoice:
    """NCCL's pick for one call: names as NCCL prints them, time in s, bandwidths in bytes/s."""

    algo: str
    proto: str
    time_s: float
    algbw: float
    busbw: float
    channels: int
    table: dict  # (algo, proto) -> (latency_us, algbw_GBps) or None, as nccl_table


def _collective(collective: str) -> str:
    if collective not in K.FUNCS:
        raise FabricsimError(f"unknown collective '{collective}': NCCL's tuner models {', '.join(K.FUNCS)}")
    return collective


def _nsteps(collective: str, n: int) -> int:
    return 2 * (n - 1) if collective == "all_reduce" else n - 1 if collective in ("all_gather", "reduce_scatter") else n


def _pat_enabled(s: NcclSystem) -> bool:
    """ncclPatEnable with NCCL_PAT_ENABLE=2: SM60+, one GPU per node, host network (no device offload)."""
    return s.compcap >= 60 and s.n_nodes == s.n_ranks


def ll128_enabled(s: NcclSystem, g: NcclGraph) -> bool:
    """LL128's default rule of the system's release (tuning.cc; tuner.nccl_versions 'll128 ...' rows), all ranks
    of one GPU type: the architectures it is on for, NVLink (NVL, or NVB through a peer GPU from 2.18.3) inside
    nodes, PCIe switches only (PXB; PXN on Hopper and newer from 2.17) to the NIC."""
    rel = s.release
    limit = rel.get("ll128 inter path sm90", "pxn") if s.compcap >= 90 else "pxb"
    return (PATH_ORDER[g.type_inter] <= PATH_ORDER[limit]
            and PATH_ORDER[g.type_intra] <= PATH_ORDER[rel.get("ll128 intra path", "nvb")] and rel.ll128_arch(s.compcap))


def _algo_enabled(s: NcclSystem, algo: str) -> bool:
    """Per-algorithm disables of tuning.cc:490-500 and updateCollCostTable (enqueue.cc), and the algorithms the
    system's release has (tuner.nccl_versions)."""
    if not s.release.has_algorithm(ALGO_KEYS[algo]):
        return False
    if algo == "NVLSTree" and s.n_nodes == 1:
        return False
    if algo in ("CollNetDirect", "CollNetChain"):
        return s.collnet_support and s.ppn <= K.MAX_DIRECT_ARITY + 1 and (algo != "CollNetDirect" or s.has_nvswitch)
    if algo in ("NVLS", "NVLSTree") and not s.nvls_support:
        return False
    if algo == "NVLS" and s.n_nodes > 1 and not s.collnet_support:
        return False
    return True


def _entry(s: NcclSystem, graphs: dict[str, NcclGraph], coll: str, algo: str, p: int) -> tuple[float, float]:
    """(latency us, algorithm bandwidth GB/s) of ncclTopoTuneModel for one (coll, algo, proto)."""
    n, nodes = s.n_ranks, s.n_nodes
    T = nccl_versions.tuning(s.release)
    cc = K.compcap_index(s.compcap)
    index2 = nodes - 1 if nodes <= 2 else 2
    index1 = cc if nodes == 1 else (1 if s.cpu_vendor == "amd" else 0)
    ll_max_bw = T.ll_max_bw[index1][index2]
    ppn = n / nodes
    nsteps = _nsteps(coll, n)
    g = graphs[algo]
    collnet = algo in ("CollNetDirect", "CollNetChain")

    bw = g.bw_intra if (nodes <= 2 or collnet) else g.bw_inter
    old_nvls = s.release.get("nvls busBw formula") if algo in ("NVLS", "NVLSTree") else None
    if old_nvls is not None:
        bw = _nvls_before_2_28(old_nvls, g, coll, algo, nodes, ppn, bw)
    elif algo in ("NVLS", "NVLSTree"):
        if g.n_channels < 2:
            return 0.0, 0.0
        intra = g.bw_intra * K.NVLS_EFFICIENCY[cc] * (g.n_channels - 1) / g.n_channels
        intra *= 2.0 if coll == "all_reduce" else (ppn - 1) / ppn  # AllReduce pipelines two operations
        inter = g.bw_inter * (2 if (nodes <= 2 and algo == "NVLSTree") else 1)
        cap = T.per_ch_nvls_tree[cc][index2] if (algo == "NVLSTree" and T.per_ch_nvls_tree) else math.inf
        bw = min(intra, inter, cap)
    bus = g.n_channels * bw
    if algo == "Ring" and p == 0:
        bus = min(ll_max_bw, bus * 0.5)
    if algo == "Ring" and p == 1:
        bus = min(bus * 0.92, g.n_channels * T.per_ch_ring_ll128[cc][index2])
    if algo == "Tree" and coll == "all_reduce":
        bus = min(bus * 0.92, g.n_channels * T.per_ch_tree[cc][index2])
    if algo == "Tree" and p == 0:
        bus = min(bus / 3.8, ll_max_bw)
    if algo == "Tree" and p == 1:
        bus = min(bus * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0), g.n_channels * T.per_ch_tree_ll128[cc][index2])
    if algo == "Tree" and ppn == 1:  # one GPU per node: the search forces the TREE pattern
        bus *= s.release.get("tree pattern busBw factor", 1.0)
    if algo == "PAT":
        bus *= 0.75
    if collnet and p != 2:
        bus = 0.0
    if algo == "CollNetDirect" and p == 2:
        if coll in ("all_gather", "reduce_scatter"):
            bus = ppn * min(g.bw_intra, g.bw_inter * 0.9)
        else:
            factor = ppn / g.n_channels if g.n_channels else math.inf  # GPU/NIC ratio
            factor -= (factor - 1) / 2
            bus /= factor
            if s.compcap >= 90:
                bus *= s.release.get("collnet_direct sm90 busBw factor", 1.0)
    if algo == "CollNetChain" and p == 2:
        bus *= s.release.get("collnet_chain busBw factor", 1.0)
    if algo in ("NVLS", "CollNetDirect") and coll in ("all_gather", "reduce_scatter") and nodes > 1:
        # needs the CollNet plugin's iallgather/ireducescatter and at most one GPU per head
        if not (s.collnet_ag_rs and s.collnet_support and s.ppn <= graphs["CollNetDirect"].n_channels):
            bus = 0.0
    if old_nvls is not None and coll == "all_reduce":
        bus *= _NVLS_RATIO[old_nvls](algo, nodes)
    elif algo == "Ring" or not (coll in ("all_gather", "reduce_scatter")):
        bus *= n / nsteps if algo in ("Ring", "NVLS", "NVLSTree") else 0.5

    lat = T.base_lat[algo][p]
    intra_hw = K.HW_NVLINK if g.type_intra == "nvl" else K.HW_PCI
    hw = intra_hw if nodes == 1 else K.HW_NET
    intra_lat = T.hw_lat[intra_hw][algo][p]
    inter_lat = (T.hw_lat[K.HW_NET]["Tree"][p] if ppn == 1 else T.hw_lat[K.HW_NET][algo][p]) + g.latency_inter
    if p == 2:
        inter_lat += g.latency_inter  # flush extra latency
    ppn_i = n // nodes
    log_nodes = nodes.bit_length() - 1
    if algo == "Ring":
        step = T.hw_lat[hw]["Ring"][p]
        if coll in ("broadcast", "reduce"):
            if g.same_channels:
                lat += step
            else:
                lat += nsteps * (T.hw_lat[hw]["Tree"][p] if p == 2 else step)
        else:
            overhead = 0.0 if nodes == 1 else K.NET_OVERHEAD_US[s.cpu_vendor] * (3 if p == 2 else 1)
            intra_lat = max(intra_lat, overhead)
            n_inter = 0 if nodes == 1 else (2 * (nodes - 1) if coll == "all_reduce" else nodes - 1)
            lat += (nsteps - n_inter) * intra_lat + n_inter * inter_lat
    elif algo == "Tree":
        if coll == "all_reduce":
            lat += 2 * ((ppn_i - 1) * intra_lat + log_nodes * inter_lat)
    elif algo == "CollNetDirect":
        lat += 2 * (min(1, ppn_i - 1) * intra_lat + (ppn_i - 1) * 0.4) + inter_lat  # 0.4 us arity serialization
    elif algo == "CollNetChain":
        lat += 2 * (ppn_i - 1) * intra_lat + inter_lat
    elif algo == "NVLS":
        lat = intra_lat + (inter_lat if nodes > 1 else 0.0)
    elif algo == "NVLSTree":
        lat += intra_lat + 2 * log_nodes * inter_lat
    elif algo == "PAT":
        lat += log_nodes * (inter_lat / 3.5) + n * 2.8
    return lat, bus


def _nvls_before_2_28(formula: str, g: NcclGraph, coll: str, algo: str, nodes: int, ppn: float, bw: float) -> float:
    """Per-channel bandwidth of NVLS / NVLSTree in the releases before nvlsEfficiency (tuner.nccl_versions
    'nvls busBw formula'): 2.17-2.18 the graph's (`bw`), from 2.19.1 the smaller of intra and inter (NVLSTree: half
    the network beyond 2 nodes), from 2.27.3 NVLS AllGather/ReduceScatter min(bwIntra (ppn-1)/ppn, 0.9 bwInter)."""
    if formula in ("2.17", "2.18.3"):
        return bw
    if algo == "NVLSTree":
        return min(g.bw_intra, g.bw_inter if nodes <= 2 else g.bw_inter / 2)
    if formula == "2.27" and coll in ("all_gather", "reduce_scatter"):
        return min(g.bw_intra * (ppn - 1) / ppn, g.bw_inter * 0.9)
    return min(g.bw_intra, g.bw_inter)


def _nvlstree_ratio_2_17(nodes: int) -> float:
    """NVLSTree's busBw -> algBw ratio in 2.18.1-2.18.6: .70 x nNodes / (2 (nNodes - 1))."""
    return 0.70 * nodes / (2 * (nodes - 1)) if nodes > 1 else 0.0


# AllReduce busBw -> algBw ratio of NVLS / NVLSTree per pre-2.28.3 formula (the sources of 'nvls busBw formula').
_NVLS_RATIO = {
    "2.17": lambda algo, nodes: 0.75 if algo == "NVLS" else _nvlstree_ratio_2_17(nodes),
    "2.18.3": lambda algo, nodes: 5.0 / 6.0 if algo == "NVLS" else _nvlstree_ratio_2_17(nodes),
    "2.19": lambda algo, nodes: 5.0 / 6.0,
    "2.27": lambda algo, nodes: 5.0 / 6.0,
}


@lru_cache(maxsize=1024)
def _table(system: NcclSystem, collective: str, ll128_forced: bool = False) -> tuple:
    """Rows of the table; setting NCCL_PROTO enables LL128 outright, bypassing its default rule."""
    if system.n_ranks < 2:
        raise FabricsimError("NCCL's tuning model needs at least 2 ranks: a 1-rank collective is a local copy")
    graphs = search_graphs(system)
    rows = []
    for algo in COLL_ALGOS[collective]:
        for p, proto in enumerate(K.PROTOS):
            if algo in ("NVLS", "NVLSTree", "PAT", "CollNetDirect", "CollNetChain") and p != 2:
                continue
            value = None
            if not (algo == "PAT" and not _pat_enabled(system)) and _algo_enabled(system, algo):
                if p != 1 or ll128_forced or ll128_enabled(system, graphs[algo]):
                    lat, bw = _entry(system, graphs, collective, algo, p)
                    value = (lat, bw) if bw > 0 else None
            rows.append(((algo, proto), value))
    return tuple(rows)


def nccl_table(system: NcclSystem, collective: str) -> dict[tuple[str, str], tuple[float, float] | None]:
    """NCCL's tuning table for one collective, keyed by NCCL names ('Ring', 'LL'):
    (latency us, algorithm bandwidth GB/s) as NCCL_DEBUG_SUBSYS=TUNING prints it, None where disabled."""
    return dict(_table(system, _collective(collective)))


def nccl_times(system: NcclSystem, collective: str, nbytes: int) -> dict[tuple[str, str], float]:
    """NCCL's model's time (s) of one call of `nbytes` under every (algorithm, protocol) its default rules enable,
    keyed by NCCL names ('Ring', 'LL'): the order NCCL's own tuner ranks them in."""
    coll = _collective(collective)
    n_channels = comm_channels(system, search_graphs(system))
    return {k: _time_us(system, coll, k[0], k[1], v[0], v[1], nbytes, n_channels, 1) * 1e-6
            for k, v in _table(system, coll) if v is not None}


def _allowed(selection, names: dict[str, str], kind: str) -> set[str] | None:
    """The NCCL names an NCCL_ALGO / NCCL_PROTO-style selection (vocab's parser) allows; None: no restriction."""
    if selection is None:
        return None
    foreign = [n for n in selection.names if n not in names]
    if foreign and not selection.exclude:
        raise FabricsimError(f"{', '.join(foreign)} is not an NCCL {kind}: NCCL's model knows {', '.join(names)}")
    return {names[n] for n in selection.apply(names)}


def _time_us(system: NcclSystem, coll: str, algo: str, proto: str, lat: float, bw: float, nbytes: int,
             n_channels: int, pipe_ops: int) -> float:
    """ncclTopoGetAlgoTime: per-size corrections, then lat x latCount + bytes / bw."""
    p = K.PROTOS.index(proto)
    log_size = (nbytes >> 6).bit_length() - 1 if nbytes >> 6 else -1
    if algo == "Tree" and coll == "all_reduce" and 0 <= log_size < 23:
        bw *= K.TREE_CORRECTION[p][log_size]
    if (algo == "NVLSTree" and coll == "all_reduce" and 0 <= log_size < 24 and system.compcap >= 100
            and system.cpu_vendor in ("intel", "amd")):
        bw *= K.TREE_CORRECTION[p][log_size]
    if (algo == "Ring" and p == 2 and system.n_nodes > 1 and coll == "all_reduce"
            and nbytes // (n_channels * system.n_ranks) >= 64):
        lat *= 1.9 if system.compcap < 80 else 1.4  # plateau effect of ring
    lat_count = pipe_ops if algo == "Ring" else -(-pipe_ops // K.MAX_DEV_WORK_BATCH_COLLS)
    return lat * lat_count + nbytes / (1000.0 * bw)


def _exec_channels(system: NcclSystem, algo: str, proto: str, nbytes: int) -> int:
    """topoGetAlgoInfo's channel count for one call (src/enqueue.cc; engine.chunking.exec_channels)."""
    comm = comm_plan(system, search_graphs(system))
    return chunking.exec_channels(comm, algo, proto.lower(), nbytes, system.n_ranks, system.n_nodes)


# NVLS reduces in the NVSwitch only Sum / Min / Max on 32- and 64-bit integers, half and bfloat16, and Sum on float
# and double (src/device/generate.py, which must match ncclNvlsSupported()). Other reductions
# (prod, avg) and types (8-bit integers, FP8) fall back to the other algorithms. Names are nccl-tests' -d / -o names.
NVLS_REDUCE_TYPES = {"sum": {"int32", "uint32", "int64", "uint64", "half", "bfloat16", "float", "double"},
                     "min": {"int32", "uint32", "int64", "uint64", "half", "bfloat16"},
                     "max": {"int32", "uint32", "int64", "uint64", "half", "bfloat16"}}


def nvls_reduces(collective: str, redop: str = "sum", dtype: str = "float") -> bool:
    """Whether NCCL's NVLS / NVLSTree can run this call: any call that does not reduce, or a supported (op, type)."""
    return collective not in REDUCING or dtype in NVLS_REDUCE_TYPES.get(redop, ())


def nccl_predict(system: NcclSystem, collective: str, nbytes: int, algo=None, proto=None,
                 pipe_ops: int = 1, redop: str = "sum", dtype: str = "float") -> NcclChoice:
    """NCCL's choice for one call of `nbytes` (the nccl-tests size: the total buffer for all_gather /
    reduce_scatter). `algo` / `proto` restrict the choice like NCCL_ALGO / NCCL_PROTO ('ring',
    'ring,tree', '^nvls', or a list); a restriction that leaves nothing raises FabricsimError.
    `redop` / `dtype` (nccl-tests names) rule out NVLS where the NVSwitch cannot reduce them."""
    coll = _collective(collective)
    if nbytes <= 0:
        raise FabricsimError(f"message size {nbytes} B is not positive: give a size of at least 1 byte")
    algos = _allowed(parse_algorithms(algo, coll), ALGO_NAMES, "algorithm")
    protos = _allowed(parse_protocols(proto, coll), PROTO_NAMES, "protocol")
    table = dict(_table(system, coll, protos is not None and "LL128" in protos))
    if not nvls_reduces(coll, redop, dtype):
        table.update({k: None for k in table if k[0] in ("NVLS", "NVLSTree")})
    n_channels = comm_channels(system, search_graphs(system))
    best = None
    for (a, p), value in table.items():
        if value is None or (algos is not None and a not in algos) or (protos is not None and p not in protos):
            continue
        t = _time_us(system, coll, a, p, value[0], value[1], nbytes, n_channels, pipe_ops)
        if best is None or t < best[0]:
            best = (t, a, p)
    if best is None:
        usable = ", ".join(f"{a}/{p}" for (a, p), v in table.items() if v is not None)
        raise FabricsimError(
            f"no NCCL algorithm/protocol for {coll} matches algo={algo!r} proto={proto!r} on this system: "
            f"choose among {usable}")
    t_us, a, p = best
    time_s = t_us * 1e-6
    algbw = nbytes / time_s
    busbw = algbw * _nsteps(coll, system.n_ranks) / system.n_ranks  # nccl-tests bus factor
    channels = _exec_channels(system, a, p, nbytes)
    return NcclChoice(a, p, time_s, algbw, busbw, channels, table)
