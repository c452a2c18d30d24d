"""NCCL 2.30.7 tuning constants, copied verbatim from the library source.

Source for every table unless noted: NVIDIA/nccl v2.30.7-1 (commit 5067397c) `src/graph/tuning.cc`
(`ncclTunerConstantsDefaults`, `nvlsEfficiency`, `treeCorrectionFactor`). Units as NCCL uses them: microseconds and GB/s (1e9 B/s).
Indices: algorithm order of `ncclAlgoStr`, protocol order LL, LL128, Simple, hardware NVLINK, PCI, NET,
compute-capability rows Volta, Ampere, Hopper, Blackwell, scale columns 1 node, 2 nodes, >2 nodes.
"""

from __future__ import annotations

# Protocol order of every [proto] index (ncclProtoStr, src/init.cc) and NCCL's function names (ncclFuncStr)
# keyed by fabricsim's collective names: both in fabricsim.vocab.
from fabricsim.vocab import NCCL_FUNCS as FUNCS, NCCL_PROTOCOLS as PROTOS  # noqa: F401

HW_NVLINK, HW_PCI, HW_NET = 0, 1, 2

# baseLatencies[algo][proto] (us)
BASE_LAT = {
    "Tree": (6.8, 14.0, 8.4),
    "Ring": (6.6, 14.0, 8.4),
    "CollNetDirect": (0.0, 0.0, 0.0),
    "CollNetChain": (0.0, 0.0, 0.0),
    "NVLS": (0.0, 0.0, 0.0),
    "NVLSTree": (0.0, 0.0, 0.0),
    "PAT": (8.0, 8.0, 8.0),
}

# hwLatencies[hw][algo][proto] (us per step / hop)
HW_LAT = (
    {  # NVLINK
        "Tree": (0.6, 1.25, 4.0),
        "Ring": (0.6, 1.9, 3.4),
        "CollNetDirect": (0.0, 0.0, 3.7),
        "CollNetChain": (0.0, 0.0, 2.8),
        "NVLS": (0.0, 0.0, 25.0),
        "NVLSTree": (0.0, 0.0, 25.0),
        "PAT": (0.0, 0.0, 4.0),
    },
    {  # PCI
        "Tree": (1.0, 1.9, 4.0),
        "Ring": (1.0, 2.5, 5.7),
        "CollNetDirect": (0.0, 0.0, 3.7),
        "CollNetChain": (0.0, 0.0, 2.8),
        "NVLS": (0.0, 0.0, 0.0),
        "NVLSTree": (0.0, 0.0, 0.0),
        "PAT": (0.0, 0.0, 4.0),
    },
    {  # NET
        "Tree": (5.0, 8.5, 14.0),
        "Ring": (2.7, 4.0, 14.0),
        "CollNetDirect": (0.0, 0.0, 31.0),
        "CollNetChain": (0.0, 0.0, 30.0),
        "NVLS": (0.0, 0.0, 18.0),
        "NVLSTree": (0.0, 0.0, 20.9),
        "PAT": (0.0, 0.0, 14.0),
    },
)

# llMaxBws[index1][index2] (GB/s): index1 = compcap row on 1 node, else 1 for AMD/mixed CPUs and 0 otherwise.
LL_MAX_BW = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0))
# Per-channel caps (GB/s) [compcap row][scale column].
PER_CH_MAX_RING_LL128_BW = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7), (40.0, 40.0, 40.0))
PER_CH_MAX_TREE_LL128_BW = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))
PER_CH_MAX_TREE_BW = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))
PER_CH_MAX_NVLS_TREE_BW = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 80.0))
NVLS_EFFICIENCY = (0.0, 0.0, 0.85, 0.74)

# treeCorrectionFactor[proto][log2(nBytes >> 6)], 64 B .. 512 MiB.
TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)

# getNetOverhead() (us) by CPU vendor: Intel x86 1.0, AMD x86 2.0, anything else 1.0 (tuning.cc).
NET_OVERHEAD_US = {"intel": 1.0, "amd": 2.0, "arm": 1.0}

# NCCL_MAX_DEV_WORK_BATCH_COLLS = 1024 / sizeof(ncclDevWorkColl) = 8 (src/include/device.h).
MAX_DEV_WORK_BATCH_COLLS = 8
# MAXCHANNELS (src/include/device.h) = 64; the ring search uses MAXCHANNELS/2 (src/init.cc).
MAXCHANNELS = 64
# NCCL_MAX_NVLS_ARITY 32, NCCL_MAX_DIRECT_ARITY 7 (src/include/device.h).
MAX_NVLS_ARITY = 32
MAX_DIRECT_ARITY = 7

# Threads per block (src/include/device.h) and per-thread work thresholds (src/include/comm.h), used by
# topoGetAlgoInfo (src/enqueue.cc) to size the execution channels of one call.
SIMPLE_MAX_NTHREADS = 512
LL_MAX_NTHREADS = 512
LL128_MAX_NTHREADS = 640
LL_THREAD_THRESHOLD = 8
LL128_THREAD_THRESHOLD = 8
SIMPLE_THREAD_THRESHOLD = 64
COLLNET_THREAD_THRESHOLD = 512
PCI_BW = 12.0  # GB/s, Gen3 x16 (src/graph/topo.h); below it ring Simple uses 256 threads
# followPath charges every PCIe link of a GPU's PATH_PHB path through an Intel x86 CPU 6/5 of the channel's
# bandwidth (INTEL_P2P_OVERHEAD, v2.19.3-1 src/graph/topo.h:31, applied in src/graph/search.cc:72-76).
INTEL_P2P_OVERHEAD = 6 / 5

# Execution NVLS channels (src/transport/nvls.cc): SM90 16; SM100 24 on one node, 32 multi-node.
NVLS_NCHANNELS_SM90 = 16
NVLS_NCHANNELS_SM100 = 32
NVLS_NCHANNELS_SM100_NVL = 24

# Channel-search candidate speeds per channel, GB/s (src/graph/search.cc).
SPEEDS_INTRA = (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0)
SPEEDS_INTER = (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12)
SPEEDS_INTRA_SM90 = (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0)
SPEEDS_INTER_SM90 = (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12)
SPEEDS_INTRA_SM100 = (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0)
SPEEDS_INTER_SM100 = (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0,
                      2.4, 1.2, 0.24, 0.12)

# Path types (src/include/graph.h); the tuner only compares them.
PATH_TYPES = ("loc", "nvl", "nvb", "c2c", "pix", "pxb", "p2c", "pxn", "phb", "sys", "net")


def compcap_index(compcap: int) -> int:
    """NCCL's compute-capability row: Volta 0, Ampere 1, Hopper 2, Blackwell 3."""
    return 3 if compcap >= 100 else 2 if compcap >= 90 else 1 if compcap >= 80 else 0


