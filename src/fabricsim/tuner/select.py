"""The tuner: pick the (algorithm, protocol) NCCL would, by NCCL's own cost model, and time it with the engine.

Where NCCL's model prices none of the candidates (`library='all'`, fabricsim-only schedules) the engine times
every candidate and the fastest is the pick (`best`).

What NCCL would run is the default candidate set (`library='nccl'`): NCCL's algorithms (Ring, Tree, NVLS,
NVLSTree, CollNetDirect, CollNetChain, PAT) under NCCL's own applicability rules (src/device/generate.py, tuning.cc:292-304, enqueue.cc):
LL and LL128 exist only for Ring and Tree; NVLS/NVLSTree/CollNet/PAT run Simple only; NVLSTree needs
more than one NVLink domain; PAT needs one GPU per node. `library='all'` adds fabricsim's other schedules
(Rabenseifner, recursive doubling, Bruck, hierarchical, pairwise, ...). `algos` / `protos` force a choice
as NCCL_ALGO / NCCL_PROTO do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from fabricsim import schedules
from fabricsim.engine import Job, simulate
from fabricsim.engine.bound import least_time, least_time_planned
from fabricsim.engine.chunking import ChannelEnv, ChunkEnv, CommPlan
from fabricsim.engine.result import Result
from fabricsim.errors import FabricsimError, option
from fabricsim.topology.derived import memo
from fabricsim.topology.model import Topology
from fabricsim.engine import nccl_constants as K
from fabricsim.tuner import nccl_graph, nccl_model, nccl_versions, one_rank
from fabricsim.vocab import (ALGORITHMS, NCCL_ALGO_NAMES, NCCL_ALGORITHMS_BY_COLLECTIVE, NCCL_PROTO_NAMES,
                             P2P_COLLECTIVES, PROTOCOLS, Selection, parse_algorithms, parse_protocols)

# NCCL's algorithms per collective (src/device/generate.py algos_of_coll). AllToAll and SendRecv are NCCL
# point-to-point operations: all pairs at once, through PXN on rail-optimised fabrics. Protocols other than
# Simple exist only for Ring and Tree (vocab.ALGORITHMS[..].protocols).
NCCL_ALGOS = NCCL_ALGORITHMS_BY_COLLECTIVE


@dataclass(frozen=True, eq=False)
class Choice:
    """The tuner's pick for one call and every candidate it timed."""

    algorithm: str
    protocol: str
    result: Result
    table: tuple[tuple[str, str, float], ...]  # (algorithm, protocol, time_s) of every candidate timed, fastest first
    job: Job  # what the engine ran for the pick: schedule, channels, network p2p cap

    @property
    def channels(self) -> int:
        """NCCL channels the engine ran the pick on: its search channels, at most those the run's channel bounds
        leave the communicator (NCCL_MAX_NCHANNELS, NCCL_MAX_CTAS: engine.chunking.CommPlan.natural_channels)."""
        comm, n = self.job.comm, int(self.job.channels)
        if comm is None or not comm.natural_channels:
            return n
        return min(n, comm.nvls_channels if self.algorithm in ("nvls", "nvls_tree") else comm.channels)


def candidates(topo: Topology, collective: str, ranks: np.ndarray, library: str = "nccl",
               structure: schedules.Structure | None = None, nccl_version=None,
               ll128_rule: bool = True) -> list[tuple[str, str]]:
    """Every (algorithm, protocol) that applies to `collective` on these ranks of `topo` (`structure`: theirs,
    when the caller has it) under NCCL `nccl_version` (tuner.nccl_versions; None: the newest modelled): the
    NCCL algorithms that release has, and LL128 only where its default rule turns it on (`ll128_rule`; setting
    NCCL_PROTO turns it on outright, tuning.cc)."""
    structure = schedules.structure_from_topology(topo, ranks) if structure is None else structure
    rel = nccl_versions.release(nccl_version)
    applicable = schedules.applicable(collective, structure)
    if library == "nccl":
        algos = [a for a in NCCL_ALGOS[collective] if a in applicable]
        if "pat" in algos and structure.ranks_per_node > 1:  # ncclPatEnable (tuning.cc): nNodes == nRanks
            algos.remove("pat")
        if collective == "alltoall" and "pxn" in algos and not topo.features.get("rail_optimized"):
            algos.remove("pxn")
        if collective == "alltoall" and "pxn" in algos:
            algos = ["pxn"]
    elif library == "all":
        algos = list(applicable)
    else:
        raise FabricsimError(f"unknown library '{library}': use 'nccl' (what NCCL runs) or 'all' (every fabricsim schedule)")
    pairs = [(a, p) for a in algos if rel.has_algorithm(a) for p in ALGORITHMS[a].protocols]
    if ll128_rule and any(p == "ll128" for _, p in pairs):
        system = _nccl_system(topo, np.asarray(ranks, dtype=np.int32).tobytes(), nccl_version)
        graphs = nccl_graph.search_graphs(system)
        pairs = [(a, p) for a, p in pairs if p != "ll128" or nccl_model.ll128_enabled(system, graphs[ALGORITHMS[a].graph])]
    return pairs


def _filter(pairs: list[tuple[str, str]], algos: Selection | None, protos: Selection | None,
            collective: str) -> list[tuple[str, str]]:
    """The pairs NCCL_ALGO / NCCL_PROTO-style selections allow; an error only when none is left."""
    if algos:
        offered = sorted({p[0] for p in pairs})
        kept = [p for p in pairs if algos.keeps(p[0])]
        if not kept and algos.exclude:
            raise FabricsimError(f"{option('algo', algos.spec())} excludes every algorithm that applies to {collective} here "
                                 f"({', '.join(offered)}): leave at least one")
        if not kept:
            raise FabricsimError(f"algorithm {', '.join(algos.names)} does not apply to {collective} on this cluster; "
                                 f"applicable: {', '.join(offered)}")
        pairs = kept
    if protos:
        if not protos.apply(PROTOCOLS):
            raise FabricsimError(f"{option('proto', protos.spec())} excludes every protocol: exclude some, not all, of "
                                 f"{', '.join(PROTOCOLS)}")
        kept = [p for p in pairs if protos.keeps(p[1])]
        if not kept:
            raise FabricsimError(
                f"protocol {option('proto', protos.spec())} leaves none that applies to algorithm(s) "
                f"{', '.join(sorted({p[0] for p in pairs}))}: LL and LL128 exist only for ring and tree")
        pairs = kept
    return pairs


def best(topo: Topology, collective: str, nbytes: int, *, ranks: np.ndarray | None = None, elem_size: int = 4,
         algos: str | list[str] | Selection | None = None, protos: str | list[str] | Selection | None = None,
         level: str = "flow",
         library: str = "nccl", root: int = 0, nccl_version=None,
         redop: str = "sum", dtype: str = "float", chunk_env: ChunkEnv | None = None,
         prune: bool = True) -> Choice:
    """Pick the algorithm and protocol as NCCL does and time the pick with the engine.

    NCCL picks each call's algorithm and protocol by its own cost model: the enabled (algorithm, protocol) whose
    modelled time is least (v2.30.7-1 src/enqueue.cc topoGetAlgoInfo, src/graph/tuning.cc ncclTopoGetAlgoTime),
    with the release's own formulas and graph (tuner.nccl_model, tuner.nccl_versions). So with `library='nccl'`
    the pick is NCCL's model's favourite among the candidates, and the engine gives its time. Where the model
    prices none of them (fabricsim-only schedules, `library='all'`, collectives it does not model) the pick is the
    engine's fastest candidate (ties: candidate order).

    With `prune` only the pick is timed when NCCL's model names it; otherwise candidates are timed in the order
    NCCL's model ranks them, and one whose lower bound (engine.bound.least_time: NCCL's base and per-step
    latencies, its per-channel cap) exceeds the fastest time found is not timed: it cannot be the fastest, nor tie
    with it. The pick and its figures are those of timing every candidate (`prune=False`, whose `Choice.table`
    lists them all, fastest first, so that it shows what the engine finds faster than NCCL's pick).

    `nccl_version` ('2.18.5', (2, 18), ...: tuner.nccl_versions.parse_version) selects the NCCL release whose
    rules apply (its algorithms, LL128 rule, channel counts, chunk sizes, point-to-point channels per network
    peer); None: the newest release modelled (nccl_versions.NEWEST). `redop` / `dtype` (nccl-tests names) rule
    out NVLS where the NVSwitch cannot reduce them (nccl_model.nvls_reduces). `chunk_env`: the NCCL_BUFFSIZE /
    NCCL_NVLS_CHUNKSIZE / NCCL_NVLSTREE_MAX_CHUNKSIZE / NCCL_P2P_NET_CHUNKSIZE the run set (None: NCCL's sizes)."""
    ranks = np.arange(topo.n_gpus, dtype=np.int32) if ranks is None else np.asarray(ranks, dtype=np.int32)
    algos, protos = parse_algorithms(algos, collective), parse_protocols(protos, collective)
    if ranks.size == 1:  # NCCL copies the buffer before choosing an algorithm, whatever NCCL_ALGO says (one_rank)
        return _one_rank(topo, collective, nbytes, ranks, elem_size, level)
    structure = schedules.structure_from_topology(topo, ranks)
    # A forced list may name any fabricsim schedule; an exclusion ('^nvls') narrows the library's own candidates.
    forced = algos is not None and not algos.exclude
    rel = nccl_versions.release(nccl_version)
    pairs = list(_known(topo, ("candidates", collective, ranks.tobytes(), "all" if forced else library, rel.asked,
                               protos is None),
                        lambda: tuple(candidates(topo, collective, ranks, "all" if forced else library, structure,
                                                 nccl_version, ll128_rule=protos is None))))
    if forced and not any(rel.has_algorithm(a) for a in algos.names):
        raise FabricsimError(f"{rel.label} has no {', '.join(algos.names)}: give a newer {option('nccl_version')} "
                             "(tuner.nccl_versions lists when each algorithm arrived)")
    if not nccl_model.nvls_reduces(collective, redop, dtype):
        pairs = [p for p in pairs if p[0] not in ("nvls", "nvls_tree")]
        if not pairs or (forced and not any(algos.keeps(p[0]) for p in pairs)):
            raise FabricsimError(f"NVLS cannot reduce {redop} on {dtype} (the NVSwitch reduces sum/min/max on 32/64-bit "
                                 "integers, half and bfloat16, and sum on float and double): choose another algorithm, "
                                 "operation or type")
    pairs = _filter(pairs, algos, protos, collective)
    if not pairs:
        raise FabricsimError(f"no algorithm applies to {collective} on these {len(ranks)} ranks of {topo.name}: "
                             "use more ranks or another collective")
    # one channel plan, communicator and network cap per algorithm, for all its protocols; its schedule is built
    # when a candidate of it is first bounded by its steps or timed (a ring's or tree's runs on the channels planned,
    # which is all the first bound reads: one the time found rules out is never built)
    parts: dict[str, _CallParts] = {}
    jobs: dict[str, Job] = {}
    pair_jobs: dict[tuple[str, str], Job] = {}

    def job_of(algo: str, proto: str) -> Job:
        if (algo, proto) not in pair_jobs:
            if algo not in jobs:
                jobs[algo] = _job(collective, algo, proto, nbytes, ranks, elem_size, root, structure, parts[algo])
            pair_jobs[algo, proto] = replace(jobs[algo], protocol=proto)
        return pair_jobs[algo, proto]

    guess = _nccl_guess(topo, collective, nbytes, ranks, nccl_version, chunk_env.channels if chunk_env else ChannelEnv())
    guesses = [guess.get((NCCL_ALGO_NAMES.get(a, ""), NCCL_PROTO_NAMES[p]), math.inf) for a, p in pairs]
    least = min(guesses)
    named = library == "nccl" and math.isfinite(least)
    # pruned, with a pick NCCL's model names: only the candidates it ranks first need a bound (it breaks their tie)
    queue = []
    for i in (k for k, g in enumerate(guesses) if g == least or not (prune and named)):
        algo, proto = pairs[i]
        if algo not in parts:
            parts[algo] = _known(topo, ("call_parts", collective, algo, ranks.tobytes(), rel.asked, chunk_env),
                                 lambda: _call_parts(topo, collective, algo, ranks, structure, nccl_version, chunk_env))
        bound = 0.0
        if prune:
            channels = _built_channels(algo, parts[algo])
            bound = (least_time(topo, job_of(algo, proto)) if channels is None else
                     least_time_planned(topo, collective, algo, ranks, nbytes, proto, channels, parts[algo].comm,
                                        parts[algo].net_peer_bw))
        queue.append((guesses[i], bound, i, algo, proto))
    queue.sort(key=lambda q: q[:3])  # NCCL's model's favourite first: the likely pick, whose time rules out the rest
    nccl_pick = queue[0][2] if named else None
    if prune and nccl_pick is not None:
        queue = queue[:1]
    timed: list[tuple[float, int, Result, Job]] = []
    for _, bound, i, algo, proto in queue:
        if prune and timed and bound > timed[0][0]:
            continue  # slower than a time found, whatever the engine finds
        job = job_of(algo, proto)
        if prune and timed and least_time(topo, job, steps=True) > timed[0][0]:
            continue
        res = simulate(topo, job.schedule, nbytes, elem_size=elem_size, protocol=job.protocol, level=level,
                       ranks=job.ranks, channels=job.channels, net_peer_bw=job.net_peer_bw, comm=job.comm)
        timed.append((res.time, i, res, job))
        timed.sort(key=lambda t: t[:2])  # ties: candidate order
    _, i, res, job = timed[0] if nccl_pick is None else next(t for t in timed if t[1] == nccl_pick)
    table = tuple((*pairs[k], t) for t, k, _, _ in timed)
    return Choice(pairs[i][0], pairs[i][1], res, table, job)


def _known(topo: Topology, key: tuple, compute):
    """What the tuner derives of the topology's structure alone for one call shape (its candidates, each
    algorithm's channel plan and communicator), made once and kept by the topology's store of structural data
    (topology.derived.memo), which its calibrated variants share: a calibration fit's every evaluation asks again."""
    return memo(topo.derive_structure, "tuner_parts", key, compute)


def _nccl_guess(topo: Topology, collective: str, nbytes: int, ranks: np.ndarray, nccl_version,
                channel_env: ChannelEnv) -> dict[tuple[str, str], float]:
    """NCCL's model's time per (NCCL algorithm, protocol) for this call, where it models the collective: the order
    the tuner times its candidates in (any order gives the same pick; a good one rules out more)."""
    if collective not in K.FUNCS or len(ranks) < 2:
        return {}
    return nccl_model.nccl_times(_nccl_system(topo, ranks.tobytes(), nccl_version, channel_env), collective,
                                 max(int(nbytes), 1))


def _one_rank(topo: Topology, collective: str, nbytes: int, ranks: np.ndarray, elem_size: int, level: str) -> Choice:
    """The pick for a one-rank communicator: NCCL's local copy (tuner.one_rank), no channel, no protocol."""
    res = one_rank.result(topo, collective, nbytes, int(ranks[0]), level)
    schedule = schedules.Schedule(collective, one_rank.ALGORITHM, 1, 1, ())
    job = Job(schedule, nbytes, ranks, elem_size, one_rank.PROTOCOL, one_rank.CHANNELS)
    return Choice(one_rank.ALGORITHM, one_rank.PROTOCOL, res, ((one_rank.ALGORITHM, one_rank.PROTOCOL, res.time),), job)


def plan_call(topo: Topology, collective: str, algo: str, proto: str, nbytes: int, ranks: np.ndarray, *,
              elem_size: int = 4, root: int = 0, nccl_version=None,
              structure: schedules.Structure | None = None, chunk_env: ChunkEnv | None = None) -> Job:
    """The engine job for one call: the schedule, NCCL's channels for it and the network p2p cap (`structure`:
    the ranks' own, when the caller has it; `chunk_env`: the buffer and chunk sizes the run's environment set)."""
    ranks = np.asarray(ranks, dtype=np.int32)
    structure = schedules.structure_from_topology(topo, ranks) if structure is None else structure
    return _job(collective, algo, proto, nbytes, ranks, elem_size, root, structure,
                _call_parts(topo, collective, algo, ranks, structure, nccl_version, chunk_env))


class _CallParts(NamedTuple):
    """What one call of an algorithm runs on besides its schedule (plan_call's parts)."""

    sched_channels: int  # channels the schedule is built with
    channels: int  # channels the engine runs, before the schedule's own count rounds them up
    rings: tuple[tuple[int, ...], ...]  # ring: each channel's order of a node's local ranks
    tree_heads: tuple[int, ...]  # tree: the local rank heading each channel
    heads: int  # NVLSTree: NCCL's NVLS heads (<= 32 per domain)
    trees: int  # tree: 2 (the double binary tree), 1 (tree 0 alone: a communicator bounded to its search channels)
    comm: CommPlan  # NCCL's communicator: channels, NVLS heads, chunk sizes (the run's environment applied)
    net_peer_bw: float | None  # bytes/s cap per point-to-point transfer across the network


def _call_parts(topo: Topology, collective: str, algo: str, ranks: np.ndarray, structure: schedules.Structure,
                nccl_version, chunk_env: ChunkEnv | None) -> _CallParts:
    channel_env = chunk_env.channels if chunk_env is not None else ChannelEnv()
    sched_channels, channels = channel_plan(topo, collective, algo, ranks, structure, nccl_version, channel_env)
    rings = node_rings(topo, ranks) if algo == "ring" else ()
    tree_heads_ = tree_heads(topo, ranks, structure) if algo == "tree" else ()
    system = _nccl_system(topo, ranks.tobytes(), nccl_version, channel_env)
    graphs = nccl_graph.search_graphs(system)
    comm = nccl_graph.comm_plan(system, graphs)
    # connectTrees puts tree 0 on the search channels and tree 1 on their duplicates (v2.30.7-1
    # src/graph/connect.cc:149-174): a communicator that keeps no more than those runs tree 0 alone
    trees = 2
    if algo == "tree" and channel_env and _kept(topo, ranks.tobytes(), nccl_version, system, graphs) <= \
            graphs["Tree"].n_channels:
        trees = 1
    if chunk_env is not None:
        comm = chunk_env.apply(comm)
    net_peer_bw = None
    if collective in P2P_COLLECTIVES and structure.nnodes > 1:
        net_peer_bw = p2p_channels_per_net_peer(system) * P2P_PER_CHANNEL_NET_BW
    return _CallParts(sched_channels, channels, rings, tree_heads_, comm.nvls_heads if algo == "nvls_tree" else 0,
                      trees, comm, net_peer_bw)


def _job(collective: str, algo: str, proto: str, nbytes: int, ranks: np.ndarray, elem_size: int, root: int,
         structure: schedules.Structure, parts: _CallParts) -> Job:
    """The engine job of a call planned as `parts`: its schedule built, the channels a multiple of the schedule's."""
    schedule = schedules.build_schedule(collective, algo, len(ranks), structure=structure, root=root,
                                        channels=parts.sched_channels, rings=parts.rings, heads=parts.heads,
                                        tree_heads=parts.tree_heads, trees=parts.trees)
    channels = parts.channels + (-parts.channels) % schedule.channels  # some schedules fix their own (NVLSTree: 2 per local rank)
    return Job(schedule, nbytes, ranks, elem_size, proto, channels, parts.net_peer_bw, parts.comm)


def _built_channels(algo: str, parts: _CallParts) -> int | None:
    """The channels `_job` gives a call planned as `parts`, known before its schedule is built where the schedule
    runs on the channels it is built with (schedules.built_channels: ring, tree); None elsewhere."""
    own = schedules.built_channels(algo, parts.sched_channels, parts.trees)
    return None if own is None else parts.channels + (-parts.channels) % own


NCCL_VERSION = nccl_versions.NEWEST[:2]  # the release fabricsim's NCCL constants are read from (v2.30.7)
# NCCL_P2P_PER_CHANNEL_NET_BW default, GB/s -> B/s: what one p2p channel moves over the network. NCCL sizes
# its network p2p channels by it (src/graph/paths.cc ncclTopoGetNchannels, v2.29.2 .. v2.30.7).
P2P_PER_CHANNEL_NET_BW = 14e9
NCCL_MAX_DEV_WORK_P2P_PER_BATCH = 8  # src/include/device.h


def _pow2_up(x: int) -> int:
    return 1 << max(int(x) - 1, 0).bit_length()


def p2p_channels_per_net_peer(system: nccl_model.NcclSystem, version=None) -> int:
    """comm->p2pnChannelsPerPeer on a multi-node communicator: the channels one send or receive to a
    network peer is striped over (enqueue.cc addP2pToPlan uses all of them for large messages).

    src/graph/paths.cc ncclTopoGetNchannels / ncclTopoComputeP2p*; channels per peer are the minimum over
    peers (NVLink peers 2 x links, PCIe peers 2, network peers as below), rounded up to a power of two.
    v2.29+: a network peer gets max(n, ceil(B / 14)) channels, n the GPU's local NICs counted until their summed
    bandwidth B reaches the GPU's own PCIe bandwidth (ncclTopoGetLocalNetCountByBw, src/graph/topo.cc:1974-1998;
    paths.cc:943-951), then, with several nodes, the
    count halves while channels x ceil(nRanks / 8) exceed p2pnChannels (every peer fits one round).
    v2.20-2.28: a network peer starts at 2 channels, halving while 2 x nRanks > 4 x comm channels.
    Before v2.20: NCCL_NCHANNELS_PER_NET_PEER, default 2 (tuner.nccl_versions 'p2p channels per net peer').
    `version`: the release whose rule applies (default: the system's)."""
    rule = (system.release if version is None else nccl_versions.release(version)).get("p2p channels per net peer")
    graphs = nccl_graph.search_graphs(system)
    comm = nccl_graph.comm_channels(system, graphs)
    p2p = _pow2_up(min(comm, system.max_channels))
    if system.ppn > 1:
        links = system.nvlink_bw_per_gpu / system.search.nvlink_bw if system.intra_type == "nvl" else 1
        local = 2 * max(1, int(links))
    else:
        local = system.max_channels
    if rule == "nic bandwidth":
        count, total = 0, 0.0
        while count < system.gpu_nics and (count == 0 or total < system.pcie_bw):
            total += system.net_cap
            count += 1
        remote = max(count, -(-int(total) // int(P2P_PER_CHANNEL_NET_BW / 1e9)))
        per_peer = _pow2_up(min(local, remote))
        while per_peer * -(-system.n_ranks // NCCL_MAX_DEV_WORK_P2P_PER_BATCH) > p2p and per_peer > 1:
            per_peer //= 2
        return per_peer
    remote = 2
    while rule == "halving" and remote * system.n_ranks > comm * 4 and remote > 1:
        remote //= 2
    return min(_pow2_up(min(local, remote)), p2p)


def _rails(topo: Topology, structure: schedules.Structure) -> int:
    """NICs the ranks of one node reach on their own rails (1 on one node)."""
    if structure.nnodes <= 1:
        return 1
    nics = int(topo.features.get("nics_per_node", 1) or 1)
    per_node = max(int(topo.features.get("gpus_per_node", structure.ranks_per_node)), 1)
    return max(1, min(structure.ranks_per_node, nics * structure.ranks_per_node // per_node))


def node_rings(topo: Topology, ranks: np.ndarray) -> tuple[tuple[int, ...], ...]:
    """The order of one node's local ranks in each ring channel, where NCCL's search fixes it: on a direct NVLink
    mesh (DGX-1) the rings NCCL's search finds there (nccl_graph.ring_orders), and across nodes wherever GPUs share
    a NIC; () elsewhere (an NVSwitch or PCIe node with a NIC per GPU, whose ascending and descending rings are what
    NCCL's search gives).

    NCCL's multi-node ring search enters each node from a NIC and leaves on the same NIC when it can (search.cc:
    'NET n -> GPU a -> ... -> GPU x -> NET n', crossNic 0 tried first, then 2), at the closest path type first
    (PIX: a GPU on the NIC's own PCIe switch), and subtracts each channel's bandwidth from the NIC it used
    (search.cc:735-751): a NIC shared by two GPUs carries one channel per direction, entering at one of its GPUs
    and leaving at the other, and the channels take the NICs in turn (`_shared_nic_rings`). On a mesh each
    channel's ring is turned to leave the node from a GPU on the channel's NIC rail, the rails taken in turn,
    entering on that same rail where the ring allows it, else on every rail equally often, with enough channels
    (the least common multiple of rings and rails) for every ring to use every rail equally."""
    ranks = np.asarray(ranks, dtype=np.int32)
    rings = nccl_graph.ring_orders(_nccl_system(topo, ranks.tobytes()))
    structure = schedules.structure_from_topology(topo, ranks)
    rails = _rails(topo, structure)
    if rails <= 1:
        return rings
    rpn = structure.ranks_per_node
    rail = _local_rails(topo, ranks, rpn, rails)
    if not rings:
        return _shared_nic_rings(rail, rails) if rails < rpn else ()
    n = math.lcm(len(rings), rails)
    chans = [rings[c % len(rings)] for c in range(n)]
    # per channel, the positions of the GPUs on its rail (c mod rails) it may leave from, and the rail of the entry
    # GPU (the ring successor) each would give the next node: entering on the channel's own rail where every
    # channel can (crossNic 0), else the first choice in order that enters every rail equally often, as it leaves
    # every rail equally often (small: two GPUs per rail, a dozen channels)
    options = [[(i, int(rail[ring[(i + 1) % rpn]])) for i, g in enumerate(ring) if rail[g] == c % rails]
               for c, ring in enumerate(chans)]
    same = [[o for o in opts if o[1] == c % rails] for c, opts in enumerate(options)]
    pick = ([opts[0][0] for opts in same] if all(same) else
            _balanced(options, rails, -(-n // rails)) or [opts[0][0] for opts in options])
    return tuple(ring[pos + 1:] + ring[:pos + 1] for ring, pos in zip(chans, pick))  # the exit GPU last


def _local_rails(topo: Topology, ranks: np.ndarray, rpn: int, rails: int) -> np.ndarray:
    """Each local rank's NIC rail (0..rails-1) on the first node of `ranks`."""
    rail = topo.dev_local[topo.gpu_nic[ranks[:rpn]]]
    return rail * rails // max(int(rail.max()) + 1, 1)


def tree_heads(topo: Topology, ranks: np.ndarray, structure: schedules.Structure | None = None) -> tuple[int, ...]:
    """The local rank heading each tree channel where GPUs share NICs: the first GPU of each NIC, the NICs in
    turn; () where every GPU has its own NIC or on one node (channel c heads at local rank c, on NIC c).
    `structure`: the ranks' own, when the caller has it.

    NCCL's tree search (NCCL_TOPO_PATTERN_BALANCED_TREE, v2.30.7 init.cc:1183) starts channel c at NIC
    nets[(c + i) % netCount], the NICs in turn, subtracting the channel's bandwidth from it (search.cc:736-750),
    at the GPU most local to that NIC (net.localGpu, search.cc:791), and brings the channel's second GPU back to
    the same NIC (search.cc:614-617: the tree parent on the first GPU, the children on the second, one NIC);
    connect.cc:50-62 puts the node's parent and child connections on those GPUs and duplicates each channel for
    the two trees (connect.cc:70-73). So tree channels leave each node on every NIC, one NIC a channel, as the
    ring channels do (`_shared_nic_rings`): heading channel c at local rank c would put two channels on each of
    half the NICs (local ranks 0 and 1 share NIC 0) and leave the others idle."""
    ranks = np.asarray(ranks, dtype=np.int32)
    structure = schedules.structure_from_topology(topo, ranks) if structure is None else structure
    rails = _rails(topo, structure)
    rpn = structure.ranks_per_node
    if rails <= 1 or rails >= rpn:
        return ()
    rail = _local_rails(topo, ranks, rpn, rails)
    return tuple(int(np.flatnonzero(rail == r)[0]) for r in range(rails) if np.any(rail == r))


def _shared_nic_rings(rail: np.ndarray, rails: int) -> tuple[tuple[int, ...], ...]:
    """One ring per NIC when GPUs share NICs (`rail`: each local rank's NIC): it enters at the NIC's first GPU,
    visits the other local ranks in ascending order from there, and leaves from the NIC's second GPU."""
    rpn = rail.shape[0]
    out = []
    for r in range(rails):
        group = np.flatnonzero(rail == r).tolist()
        if len(group) < 2:
            return ()
        entry, exit_ = group[0], group[1]
        rest = [i for i in [*range(entry + 1, rpn), *range(entry)] if i != exit_]
        out.append((entry, *rest, exit_))
    return tuple(out)


def _balanced(options: list[list[tuple[int, int]]], rails: int, limit: int) -> list[int] | None:
    """One (position, entry rail) choice per channel with at most `limit` entries on any rail (depth first, in
    order); None when there is none."""
    entries = [0] * rails
    chosen: list[int] = []

    def go(c: int) -> bool:
        if c == len(options):
            return True
        for pos, entry in options[c]:
            if entries[entry] < limit:
                entries[entry] += 1
                chosen.append(pos)
                if go(c + 1):
                    return True
                chosen.pop()
                entries[entry] -= 1
        return False

    return chosen if go(0) else None


def channel_plan(topo: Topology, collective: str, algo: str, ranks: np.ndarray,
                 structure: schedules.Structure, nccl_version=None,
                 channel_env: ChannelEnv = ChannelEnv()) -> tuple[int, int]:
    """(channels the schedule is built with, channels the engine runs).

    The engine runs the channels of NCCL's own graph search for this algorithm (src/graph/search.cc ncclTopoCompute),
    which its per-channel caps multiply (tuning.cc). A ring or tree over several nodes is built with
    one channel per NIC rail so its channels leave each node on different NICs, as NCCL's do;
    Broadcast and Reduce run on the ring graph's channels (a chain along each ring), so they too. On a
    direct NVLink mesh a ring is built with one channel per ring of `node_rings`, in NCCL's proportions
    (a DGX-1 V100: two channels on each doubled-link ring, one on each single-link ring).

    Under the run's channel bounds (`channel_env`: NCCL_MAX_NCHANNELS, NCCL_MIN_CTAS, ...) the schedule is built on
    at most the communicator's channels NCCL keeps before copying them (tuner.nccl_graph.bounded_channels): NCCL runs
    the communicator's first channels, so a ring or tree on fewer channels than NIC rails leaves each node on that
    many NICs; the per-channel caps follow the bounded count (engine.chunking.CommPlan.natural_channels).
    """
    key = np.asarray(ranks, dtype=np.int32).tobytes()
    system = _nccl_system(topo, key, nccl_version, channel_env)
    graphs = nccl_graph.search_graphs(system)
    graph = ALGORITHMS[algo].graph if algo in ALGORITHMS else "Ring"  # NCCL's graph for it; others run on Ring's
    channels = graphs[graph].n_channels or graphs["Ring"].n_channels
    rails = _rails(topo, structure)
    sched = 1
    if algo == "ring":
        sched = len(node_rings(topo, ranks)) or rails
    elif algo == "tree":
        sched = rails
    elif algo == "collnet_chain":
        sched = rails
    # NCCL runs at most MAXCHANNELS channels (src/include/device.h:91), its graph search's count doubled and
    # clamped to it (src/graph/connect.cc:460 ncclTopoPostset: min(MAXCHANNELS, nChannels * 2)): a channel per NIC
    # rail stops there (an NVL72 domain has 72 NICs; NCCL's channels leave on 64 of them).
    sched = min(sched, system.max_channels)
    channels = max(int(channels), sched)
    if channel_env and algo not in ("nvls", "nvls_tree"):  # NVLS runs its own channels (nccl_graph.nvls_bounded)
        sched = max(1, min(sched, _kept(topo, key, nccl_version, system, graphs)))
    return sched, min(channels + (-channels) % sched, system.max_channels // sched * sched)


def _kept(topo: Topology, ranks_key: bytes, version, system: nccl_model.NcclSystem, graphs: dict) -> int:
    """The communicator's first channels NCCL keeps under `system`'s channel bounds, before copying them
    (nccl_graph.bounded_channels of the unbounded communicator's count)."""
    return nccl_graph.bounded_channels(system, nccl_graph.comm_channels(_nccl_system(topo, ranks_key, version),
                                                                        graphs))[0]


def _nccl_system(topo: Topology, ranks_key: bytes, version=None,
                 channel_env: ChannelEnv = ChannelEnv()) -> nccl_model.NcclSystem:
    """NCCL's view of these ranks under NCCL `version` (default: the newest modelled) and the run's channel bounds,
    kept in the topology's store of structural data: the tuner asks once per candidate and size."""
    v = nccl_versions.release(version).version
    if channel_env:
        return replace(_nccl_system(topo, ranks_key, v), channel_env=channel_env)
    return topo.derive_structure(("nccl_system", ranks_key, v), lambda: nccl_model.system_from_topology(
        topo, ranks=np.frombuffer(ranks_key, dtype=np.int32), version=v))
