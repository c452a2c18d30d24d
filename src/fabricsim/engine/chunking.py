"""NCCL's execution plan for one collective call: the channels it runs on, how each channel's share is cut into
chunks, and how many chunks each channel pipelines, as NCCL's source computes them.

Read from NVIDIA/nccl v2.30.7-1 (commit 5067397c):
  `exec_channels`   src/enqueue.cc:2070-2117 topoGetAlgoInfo: channels (and threads) per algorithm and size;
  `channels_used`   src/enqueue.cc:576-700 scheduleCollTasksToPlan: a call's traffic spread over channels in cells
                    of at least 32 KiB of traffic (MinTrafficPerChannel), traffic per byte from enqueue.cc:91-101;
  `chunk_bytes`     src/enqueue.cc:2218-2322 calcCollChunking (called per channel with nChannels = 1, enqueue.cc:688-702):
                    the buffer step per protocol (buffSizes / NCCL_STEPS), Simple ring chunks of CHUNKSTEPS steps
                    (src/include/collectives.h:19-34), the size-dependent shrinking of Tree/LL128, NVLS, NVLSTree,
                    CollNet and PAT chunks, aligned to the protocol's grain (src/include/device.h:328-334);
  `pipeline_chunks` src/enqueue.cc:2324-2362: chunks per loop per pattern (nRanks for rings, nHeads for NVLS,
                    NVLSTree and CollNetDirect, 1 for trees, chains and PAT) and nLoops = ceil(bytes / loopSize).
Buffers (src/init.cc:810-827): Simple DEFAULT_BUFFSIZE 4 MiB; LL 8 lines/thread x 512 threads x 8 steps x 16 B;
LL128 120 elements/thread x 640 threads x 8 steps x 8 B. NVLS chunk 128 KiB (NCCL_NVLS_CHUNKSIZE,
src/transport/nvls.cc:160); NVLSTree's maximum chunk: the NVLS chunk, 64 KiB from 4 nodes (nvls.cc:226-232), with
Blackwell multi-node values from the NIC speed (nvls.cc:164-200, `nvls_tuning`).

Network messages: the proxy thread of each GPU (src/proxy.cc, one progress thread per GPU) posts one network send
per slice of every channel (src/transport/net.cc sendProxyProgress: a Simple ring slice is 2 buffer steps, other
patterns one step; collnet, NVLS and NVLSTree one chunk) and one receive per slice, each costing the thread NCCL's
network post overhead (src/graph/tuning.cc:225-233 getNetOverhead: 1 us on Intel and Arm hosts, 2 us on AMD). (NCCL
prices a Simple ring step at three posts, tuning.cc:404-410: the flush and the completion that follow a post wait
on the wire and overlap the next message's post, so the thread's own time per message is one post.) Point-to-point
operations move NCCL_P2P_NET_CHUNKSIZE per message (128 KiB, twice that on multi-node Grace-Blackwell: src/init.cc:818-834).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

from fabricsim.engine import nccl_constants as K

NCCL_STEPS = 8  # src/include/device.h:26
SIMPLE_BUFFSIZE = 1 << 22  # DEFAULT_BUFFSIZE (src/init.cc:813)
LL_BUFFSIZE = 8 * 512 * NCCL_STEPS * 16  # NCCL_LL_LINES_PER_THREAD x NCCL_LL_MAX_NTHREADS x NCCL_STEPS x 16 B
LL128_BUFFSIZE = 120 * 640 * NCCL_STEPS * 8  # NCCL_LL128_ELEMS_PER_THREAD x NCCL_LL128_MAX_NTHREADS x NCCL_STEPS x 8 B
NVLS_CHUNK = 128 << 10  # NCCL_NVLS_CHUNKSIZE default (src/transport/nvls.cc:160)
MIN_TRAFFIC_PER_CHANNEL = 32 << 10  # MinTrafficPerChannel (src/enqueue.cc:585)
P2P_NET_CHUNK = 128 << 10  # NCCL_P2P_NET_CHUNKSIZE default (src/init.cc:818)
NET_OVERHEAD = 1e-6  # s per network post on Intel / Arm hosts (tuning.cc getNetOverhead; AMD 2 us)
# ncclProtoGrainSize (src/include/device.h:328-334): LL 16 B; LL128 WARP_SIZE x NCCL_LL128_SHMEM_ELEMS_PER_THREAD /
# NCCL_LL128_LINEELEMS x NCCL_LL128_DATAELEMS x 8 B = 32 x 8 / 16 x 15 x 8; Simple 512 B.
WARP_SIZE = 32  # threads per warp (src/include/device.h:90, v2.30.7-1)
GRAIN = {"ll": 16, "ll128": WARP_SIZE * 8 // 16 * 15 * 8, "simple": 512}
CHUNK_STEPS = {"all_reduce": 4, "all_gather": 4, "reduce_scatter": 4}  # *_CHUNKSTEPS = NCCL_STEPS/2; others 1
NVLS_MAX_HEADS = K.MAX_NVLS_ARITY  # NCCL_MAX_NVLS_ARITY (src/include/device.h)

# NCCL's kernel for NVLS and NVLSTree AllReduce runs, besides the warps that reduce and multicast through the switch
# (and the tree's network sends and receives), a warp group that scatters the user's input into the NVLS buffers and
# one that gathers the result out of them, when the user buffers are not registered (nccl-tests registers none unless
# run with -R): src/device/all_reduce.h:390-470 (runNvls) and :480-560 (runNvlsTree), `scatterWarps` / `gatherWarps`
# (one warp each once `work->regUsed`). Each chunk passes them as two more stages of the pipeline, each as long as
# the chunk's NVLS reduction (NCCL splits a channel's warps between the groups so that they keep pace).
NVLS_COPY_STAGES = 2


class ChannelCaps(NamedTuple):
    """NCCL's per-channel bandwidth caps of one release (tuning.cc perChMaxRingLL128Bws, perChMaxTreeLL128Bws,
    perChMaxTreeBws, perChMaxNVLSTreeBws: [compcap row][N1, N2, N4] GB/s) and its LL cap (llMaxBws: [row][N1, N2,
    N4], see engine.protocols). They bound a call and pace a pipelined tree's levels (engine.assemble)."""

    ring_ll128: tuple
    tree_ll128: tuple
    tree: tuple
    nvls_tree: tuple
    ll_max: tuple


DEFAULT_CAPS = ChannelCaps(K.PER_CH_MAX_RING_LL128_BW, K.PER_CH_MAX_TREE_LL128_BW, K.PER_CH_MAX_TREE_BW,
                           K.PER_CH_MAX_NVLS_TREE_BW, K.LL_MAX_BW)  # v2.30.7's (engine.nccl_constants)


@dataclass(frozen=True)
class CommPlan:
    """What NCCL's communicator gives every call (filled in by the tuner from NCCL's system and graphs; the engine
    falls back to `default_comm` for a caller that names only the channels)."""

    channels: int  # comm->nChannels: Ring / Tree / CollNet / PAT execution channels (src/graph/connect.cc)
    nvls_channels: int  # comm->nvlsChannels (src/transport/nvls.cc)
    nvls_heads: int  # channels[0].nvls.nHeads: the NVLS graph's channels, one head GPU each (connect.cc connectNvls)
    nvls_tree_max_chunk: int  # comm->nvlsTreeMaxChunkSize (nvls.cc:226-232)
    nvls_chunk: int = NVLS_CHUNK  # comm->nvlsChunkSize
    collnet_heads: int = 1  # channels[0].collnetDirect.nHeads
    ring_simple_threads: int = K.SIMPLE_MAX_NTHREADS  # 256 when the ring's bwIntra x channels <= PCI_BW (tuning.cc:244)
    simple_buffsize: int = SIMPLE_BUFFSIZE  # NCCL_BUFFSIZE
    net_overhead: float = NET_OVERHEAD  # s per network post (getNetOverhead: the host CPU's vendor)
    p2p_net_chunk: int = P2P_NET_CHUNK  # bytes per point-to-point network message (comm->p2pChunkSize)
    # NVLSTree's chunk starts from the Simple buffer step (buffSizes[Simple] / NCCL_STEPS) instead of the NVLS chunk:
    # NCCL 2.18-2.20 (v2.20.3-1 src/enqueue.cc:1684-1687, 1713-1716; comm->nvlsChunkSize from v2.21.5-1 enqueue.cc:1754)
    nvls_tree_from_step: bool = False
    channel_caps: ChannelCaps | None = None  # the caps of the release NCCL ran; None: v2.30.7's (DEFAULT_CAPS)
    # Under the run's channel bounds (ChannelEnv), the communicator's channels and NVLS channels without them (0: no
    # bounds): NCCL's per-channel caps price the search's channels, which the unbounded communicator runs, so a
    # call's share of them is its channels over these (`call_chunks`; above 1 on more, NCCL_MIN_NCHANNELS)
    natural_channels: int = 0
    natural_nvls_channels: int = 0


@dataclass(frozen=True)
class ChannelEnv:
    """The NCCL environment variables that bound a communicator's channels, as the run set them (None: unset; the
    values are whole numbers of at least 1). Two pairs, read apart (NVIDIA/nccl v2.30.7-1): NCCL_MIN_NCHANNELS /
    NCCL_MAX_NCHANNELS, graph parameters (src/graph/connect.cc:331-362 ncclMinNchannels / ncclMaxNchannels, since
    v2.5.6-1 connect.cc:181-200), and NCCL_MIN_CTAS / NCCL_MAX_CTAS, the communicator config's minCTAs / maxCTAs
    (src/init.cc:1725-1726, 2013-2035, 2178-2194; since v2.17.1-1 init.cc:1072-1073). ncclTopoPostset bounds
    comm->nChannels by both (connect.cc:492-506); only the CTA pair bounds the NVLS channels (src/transport/nvls.cc:235).
    The tuner resolves them for its release (tuner.nccl_graph.bounded_channels)."""

    min_nchannels: int | None = None
    max_nchannels: int | None = None
    min_ctas: int | None = None
    max_ctas: int | None = None

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.min_nchannels, self.max_nchannels, self.min_ctas, self.max_ctas))


@dataclass(frozen=True)
class ChunkEnv:
    """The NCCL environment variables that size a communicator: its buffers and chunks (None: NCCL's value), as NCCL
    reads them at init (NVIDIA/nccl v2.30.7-1): NCCL_BUFFSIZE -> comm->buffSizes[Simple] (src/init.cc:814, 822-827;
    a parameter in every modelled release, e.g. v2.20.3-1 src/init.cc:544); NCCL_NVLS_CHUNKSIZE -> comm->nvlsChunkSize,
    over Blackwell's multi-node tuning (src/transport/nvls.cc:160, 206-224; a parameter by v2.21.5-1 nvls.cc:233);
    NCCL_NVLSTREE_MAX_CHUNKSIZE -> comm->nvlsTreeMaxChunkSize, over the node-count rule and the tuning
    (nvls.cc:161, 227-231; since v2.20.3-1 enqueue.cc:1681); NCCL_P2P_NET_CHUNKSIZE -> comm->p2pChunkSize across
    nodes, doubled on multi-node Grace-Blackwell, at most the Simple buffer / NCCL_STEPS (src/init.cc:818, 829-840);
    and its channels (`ChannelEnv`, which the tuner's communicator follows: tuner.nccl_graph.comm_plan)."""

    buffsize: int | None = None
    nvls_chunk: int | None = None
    nvls_tree_max_chunk: int | None = None
    p2p_net_chunk: int | None = None
    channels: ChannelEnv = ChannelEnv()

    def apply(self, comm: CommPlan) -> CommPlan:
        """`comm` with the sizes this environment sets."""
        buff = self.buffsize or comm.simple_buffsize
        nvls = self.nvls_chunk or comm.nvls_chunk
        ratio = max(comm.p2p_net_chunk // P2P_NET_CHUNK, 1)  # 2 on multi-node Grace-Blackwell (init.cc:832)
        p2p = min(ratio * self.p2p_net_chunk if self.p2p_net_chunk else comm.p2p_net_chunk, buff // NCCL_STEPS)
        tree_max = self.nvls_tree_max_chunk or comm.nvls_tree_max_chunk
        if self.nvls_tree_max_chunk is None and comm.nvls_tree_max_chunk == comm.nvls_chunk:
            tree_max = nvls  # the rule's fallback is the NVLS chunk itself (nvls.cc:228-229)
        return replace(comm, simple_buffsize=buff, nvls_chunk=nvls, p2p_net_chunk=p2p, nvls_tree_max_chunk=tree_max)


def default_comm(channels: int, nranks: int, nnodes: int) -> CommPlan:
    """A communicator as NCCL would size it from `channels` search channels: twice as many execution channels
    (connect.cc ncclTopoPostset duplicates every search channel), 16 NVLS channels, one NVLS head per rank of a
    node (at most NCCL_MAX_NVLS_ARITY)."""
    ppn = max(1, nranks // max(nnodes, 1))
    return CommPlan(min(K.MAXCHANNELS, 2 * max(channels, 1)), K.NVLS_NCHANNELS_SM90, min(ppn, NVLS_MAX_HEADS),
                    nvls_tree_max_chunk(NVLS_CHUNK, nnodes))


def nvls_tree_max_chunk(nvls_chunk: int, nnodes: int) -> int:
    """comm->nvlsTreeMaxChunkSize without Blackwell's multi-node tuning: 64 KiB from 4 nodes, else the NVLS chunk
    (src/transport/nvls.cc:226-232)."""
    return 65536 if nnodes >= 4 else nvls_chunk


def nvls_tuning(nnodes: int, ppn: int, nic_gbps: float, pxb_nic: bool) -> tuple[int, int, int] | None:
    """ncclNvlsTreeSm100Tuning (src/transport/nvls.cc:164-200) for Blackwell across nodes: (nvlsChannels, NVLS chunk,
    NVLSTree maximum chunk) from the node count, GPUs per node, NIC speed (GB/s as NCCL counts it) and whether
    the GPU reaches its NIC through PCIe switches only (typeInter <= PATH_PXB); None where it keeps the defaults."""
    if nnodes == 2 and nic_gbps >= 48.0:
        if ppn <= 4:
            return 32, 256 << 10, 256 << 10
        if ppn >= 16 or (ppn <= 8 and pxb_nic and nic_gbps < 96.0):
            return 32, 128 << 10, 64 << 10
        return 32, 128 << 10, 128 << 10
    if nic_gbps >= 96.0:
        if ppn <= 8:
            return 24, 256 << 10, 256 << 10
        return 32, 128 << 10, (128 << 10) if ppn < 32 else (64 << 10)
    if nic_gbps >= 48.0:
        return 24, 128 << 10, (64 << 10) if pxb_nic else (128 << 10)
    return None


def _threads(family: str, protocol: str, comm: CommPlan) -> int:
    """comm->maxThreads[algo][proto] (src/graph/tuning.cc:244-257); PAT has none set (0: no channel reduction)."""
    if family == "PAT":
        return 0
    if protocol == "ll":
        return K.LL_MAX_NTHREADS
    if protocol == "ll128":
        return K.LL128_MAX_NTHREADS
    if family == "Ring":
        return comm.ring_simple_threads
    return K.SIMPLE_MAX_NTHREADS if family == "Tree" else 640  # NCCL_MAX_NTHREADS for CollNet / NVLS


def _threshold(family: str, protocol: str, nranks: int) -> int:
    """comm->threadThresholds (src/graph/tuning.cc:585-596; src/include/comm.h): bytes per thread below which a
    channel is dropped."""
    if family in ("CollNetDirect", "CollNetChain") and protocol == "simple":
        return K.COLLNET_THREAD_THRESHOLD
    t = {"ll": K.LL_THREAD_THRESHOLD, "ll128": K.LL128_THREAD_THRESHOLD, "simple": K.SIMPLE_THREAD_THRESHOLD}[protocol]
    return t * nranks if (family == "Ring" and protocol == "ll") else t


def exec_channels(comm: CommPlan, family: str, protocol: str, nbytes: int, nranks: int, nnodes: int) -> int:
    """Channels topoGetAlgoInfo gives a call of `nbytes` (src/enqueue.cc:2070-2117): NVLS and NVLSTree their NVLS
    channels (NVLS across nodes at most the communicator's), CollNetDirect steps down in halving bands, Ring,
    Tree and CollNetChain drop channels while the call has less than threshold bytes per thread."""
    nc = comm.channels
    if family in ("NVLS", "NVLSTree"):
        return min(comm.nvls_channels, comm.channels) if (nnodes > 1 and family == "NVLS") else comm.nvls_channels
    nt = _threads(family, protocol, comm)
    threshold = _threshold(family, protocol, nranks)
    if family == "CollNetDirect":
        heads = max(comm.collnet_heads, 1)
        switch, flag = 16, True
        while switch >= 1 and flag:
            while True:
                flag = nbytes < nc * nt * heads * threshold
                if not (flag and nc > switch):
                    break
                if nc == switch + switch // 2:
                    threshold //= 2
                nc -= 1
            switch //= 2
        return max(nc, 1)
    while nbytes < nc * nt * threshold and nc >= 2:
        nc -= 1
    return max(nc, 1)


def traffic_per_byte(collective: str, nranks: int) -> int:
    """ncclFuncTrafficPerByte (src/enqueue.cc:91-101): bytes a call moves per byte of its per-rank count."""
    return 2 if collective == "all_reduce" else nranks if collective in ("all_gather", "reduce_scatter") else 1


def channels_used(max_channels: int, collective: str, protocol: str, nbytes: int, nranks: int) -> int:
    """Channels the planner spreads one call over (src/enqueue.cc:596-700): its traffic in cells of at least 32 KiB
    (LL traffic counts four times, enqueue.cc:461, :658), at most `max_channels`."""
    per_byte = traffic_per_byte(collective, nranks) * (4 if protocol == "ll" else 1)
    cell = -(-(-(-MIN_TRAFFIC_PER_CHANNEL // per_byte)) // 16) * 16
    per_rank = nbytes // nranks if collective in ("all_gather", "reduce_scatter") else nbytes
    cells = -(-max(per_rank, 1) // cell)
    return max(1, min(max_channels, cells))


def _log2i(n: int) -> int:
    return max(int(n), 1).bit_length() - 1


def chunk_bytes(comm: CommPlan, family: str, protocol: str, collective: str, channel_bytes: int, nranks: int,
                nnodes: int) -> int:
    """calcCollChunking's chunk for one channel moving `channel_bytes` of the call (src/enqueue.cc:2218-2322)."""
    buff = {"simple": comm.simple_buffsize, "ll": LL_BUFFSIZE, "ll128": LL128_BUFFSIZE}[protocol]
    step = buff // NCCL_STEPS
    steps = CHUNK_STEPS.get(collective, 1) if (protocol == "simple" and family == "Ring") else 1
    chunk = step * steps
    if protocol == "ll":
        chunk //= 2
    elif protocol == "ll128":
        chunk = chunk // 16 * 15  # NCCL_LL128_LINEELEMS / NCCL_LL128_DATAELEMS
    b = channel_bytes
    if family == "CollNetDirect":
        # collnetDirect.depth: 2 where the head has local peers up or down, else 1 (src/graph/connect.cc:238)
        depth, heads = (2 if nranks > nnodes else 1), max(comm.collnet_heads, 1)
        for floor, mult in ((131072, 64), (65536, 8), (32768, 8)):
            while b // (heads * chunk) < depth * mult and chunk > floor:
                chunk //= 2
    elif family == "CollNetChain":
        depth = max(nranks // max(nnodes, 1), 1)
        chunk = min(256 << 10, comm.simple_buffsize // NCCL_STEPS)
        for floor, mult in ((131072, 64), (65536, 8), (32768, 1)):
            while b // chunk < depth * mult and chunk > floor:
                chunk //= 2
    elif family == "NVLS":
        chunk = min(chunk, comm.nvls_chunk)
        ops = comm.nvls_heads
        for limit, size in ((64, 65536), (8, 32768), (2, 16384)):
            if b < limit * ops * chunk and chunk > size:
                chunk = size
    elif family == "NVLSTree":
        ops = comm.nvls_heads
        start = comm.simple_buffsize // NCCL_STEPS if comm.nvls_tree_from_step else comm.nvls_chunk
        chunk = min(start, comm.nvls_tree_max_chunk or start)  # 0: no cap but the start (the rule's fallback)
        for limit, size in ((32, 262144), (16, 131072), (4, 65536), (1, 32768)):
            if b < limit * ops * chunk and chunk > size:
                chunk = size
    elif family == "Tree" and protocol == "ll128":
        ppn = nranks / max(nnodes, 1)
        nsteps = 1 + _log2i(nnodes) + 0.1 * ppn
        while b // chunk < nsteps * 64 / ppn and chunk > 131072:
            chunk //= 2
        while b // chunk < nsteps * 16 / ppn and chunk > 32768:
            chunk //= 2
    elif family == "PAT":
        mult = 32 if collective == "all_gather" else 16
        while chunk * mult > b and chunk > 65536:
            chunk //= 2
    grain = GRAIN[protocol]
    return max(grain, chunk // grain * grain)


def drains_every_loop(family: str, protocol: str, collective: str) -> bool:
    """Whether each loop of a channel starts only once the previous one has drained: a Simple ring AllReduce,
    AllGather or ReduceScatter. Each channel's thread block runs a loop's steps in program order, its first send
    (`directSend` / `send`) only after the previous loop's last receive (`directRecv` / `recvReduceCopy`) has
    taken its final slice in: NVIDIA/nccl v2.17.1-1 src/collectives/device/all_gather.h:32-75,
    all_reduce.h:36-93, reduce_scatter.h:30-64; the same order in v2.30.7-1 src/device/all_gather.h:46-74. Every
    channel takes its chunk of a loop at the same grid offset (loopSize = nChannels x chunk), so the channels
    reach the boundary together, and each link of the ring waits there for one step's latency before the next
    loop's first slice is on it."""
    return family == "Ring" and protocol == "simple" and collective in CHUNK_STEPS


def chunks_per_loop(family: str, collective: str, comm: CommPlan, nranks: int) -> int:
    """nchunksPerLoop (src/enqueue.cc:2324-2355): a ring's loop holds one chunk per rank, NVLS, NVLSTree and
    CollNetDirect one per head, trees, chains and PAT one."""
    if family == "Ring" and collective in ("all_reduce", "all_gather", "reduce_scatter"):
        return nranks
    if family in ("NVLS", "NVLSTree"):
        return max(comm.nvls_heads, 1)
    if family == "CollNetDirect":
        return max(comm.collnet_heads, 1)
    return 1


# How much of a chunk one stage of a pipelined tree or chain must move before the next stage can work on it, at one
# channel's rate. Simple: all of it. Its genericOp waits for the peer, moves a slice with the channel's threads, meets
# at a sub-barrier and only then posts the slice to the next rank (NVIDIA/nccl v2.30.7-1 src/device/prims_simple.h:
# 176-294: waitPeer :226, subBarrier :227, postPeer :277); a tree's slice is its chunk (chunkSteps = sliceSteps = 1
# outside Simple rings, src/enqueue.cc:2223-2224 calcCollChunking). LL128: one wave of warp slices. GenericOp waits
# for buffer room, meets at a barrier and has each warp move 2 KiB slices (1,920 data bytes, ncclProtoGrainSize) of
# the chunk in turn, the next rank's warp reading its slice's lines once their flags are there (v2.20.3-1 and
# v2.30.7-1 src/device/prims_ll128.h:293-327): a rank's first wave (one slice per warp) reaches the next rank after
# one wave's time, the whole chunk when it is a wave or less (the Tree LL128 chunks of mid sizes: 30-70 kB against a
# 38,400-byte wave of 20 warps). LL: none. Every thread polls and forwards its own 16-byte lines as their flags arrive
# (src/device/prims_ll.h:245-300 LLGenericOp), and its cap (llMaxBws, a ceiling on the whole call) is no channel's
# rate. engine.assemble makes each repetition of a pipelined step last at least this fraction of the message at NCCL's
# per-channel cap, all of it in the repetitions that cross the network (the proxy sends whole steps,
# engine.plan.Plan.stage_net).
def stage_fraction(family: str, protocol: str, chunk: int, comm: CommPlan) -> float:
    """The fraction of a chunk one pipeline stage moves before passing it on: 1 for Simple, one wave of warp slices
    for LL128 (at most 1), 0 for LL (see above)."""
    if protocol == "simple":
        return 1.0
    if protocol == "ll128":
        wave = _threads(family, protocol, comm) // WARP_SIZE * GRAIN["ll128"]  # warps x one slice's data bytes each
        return min(1.0, wave / max(chunk, 1))
    return 0.0


@dataclass(frozen=True)
class CallChunks:
    """How NCCL cuts one call."""

    channels: int  # channels the call runs on (topoGetAlgoInfo, then the planner's cells)
    share: float  # those channels / the ones the communicator gives the algorithm (without the run's bounds)
    chunk: int  # bytes per chunk of one channel
    loops: int  # chunks (loops of chunks) each channel pipelines
    copy_stages: int  # extra pipeline stages of the kernel (NVLS scatter / gather copies)
    message: int  # payload bytes per network message (a slice of a Simple ring, else a chunk; p2p: its chunk)
    post: float  # s the proxy thread spends per network message (NCCL's network post overhead)
    stage: float  # fraction of a chunk a pipeline stage moves before the next can start (stage_fraction)


def call_chunks(comm: CommPlan, family: str, protocol: str, collective: str, nbytes: int, nranks: int,
                nnodes: int) -> CallChunks:
    """The channels, chunk size and chunks per channel of one call of `nbytes` (nccl-tests' size)."""
    nc = exec_channels(comm, family, protocol, nbytes, nranks, nnodes)
    collnet = family in ("CollNetDirect", "CollNetChain") or (family == "NVLS" and nnodes > 1)
    # CollNet calls (NVLS across nodes included, enqueue.cc:440-446) take all their channels (enqueue.cc:624-633);
    # the others go through the planner's cells
    used = nc if collnet else channels_used(nc, collective, protocol, nbytes, nranks)
    per_channel = -(-max(nbytes, 1) // used)
    chunk = chunk_bytes(comm, family, protocol, collective, per_channel, nranks, nnodes)
    loop = chunk * chunks_per_loop(family, collective, comm, nranks)
    loops = max(1, math.ceil(per_channel / loop))
    stages = NVLS_COPY_STAGES if (family in ("NVLS", "NVLSTree") and collective == "all_reduce") else 0
    if family in ("NVLS", "NVLSTree"):
        full = comm.natural_nvls_channels or comm.nvls_channels
    else:
        full = comm.natural_channels or comm.channels
    if collective in ("sendrecv", "alltoall"):
        message = comm.p2p_net_chunk
    elif family == "Ring" and protocol == "simple" and collective in CHUNK_STEPS:
        message = max(chunk // 2, GRAIN[protocol])  # SlicePerChunk = CHUNKSTEPS / SLICESTEPS = 2
    else:
        message = chunk
    return CallChunks(used, used / max(full, 1), chunk, loops, stages, message, comm.net_overhead,
                      stage_fraction(family, protocol, chunk, comm))
