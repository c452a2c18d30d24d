"""What changes with the NCCL release: one table of rules, each with the source it was read from.

A log's figures depend on the NCCL that ran it. Every row of `RULES` says what a range of releases does
(first and last release it holds in, from NVIDIA/nccl's tags: the source files at those tags and the release
commits' notes), and `release(version)` resolves them for one release into a `Release` the tuner reads: which
algorithms exist, where LL128 is on by default, how many channels Ring/Tree and NVLS calls get, NVLS chunk
rules, point-to-point channels per network peer, and the tuning constants NCCL's own cost model (tuner.nccl_model)
uses in that release (2.30.7's formulas with that release's constants, and the formulas that changed where a row
says so: NVLS / NVLSTree busBw before 2.28.3, Tree's TREE-pattern factor; elsewhere an approximation where a
release's formulas differ, said beside the rows concerned). The engine's per-step latencies stay those of the
newest release modelled (engine.protocols): a release changes what NCCL runs, not the hardware. Its per-channel
caps, which pace a pipelined tree's levels as well as bound a call, are the release's own (`tuning`, through
engine.chunking.CommPlan.channel_caps): NCCL retuned them with its kernels (Blackwell's Tree cap across 4+ nodes 72
GB/s per channel in 2.27, 24 from 2.28), and a 2.27.3 Tree run across three GB200 NVL4 partitions (nccl#1801)
reaches a bus bandwidth above what 2.30.7's caps allow its channels.

Versions are (major, minor, patch); a version given without its patch (2.18) is read as the last patch of that
minor release that this table knows of (`Release.version` says which). Releases newer than NEWEST are
modelled as NEWEST.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from fabricsim.engine import nccl_constants as K
from fabricsim.errors import FabricsimError

Version = tuple[int, int, int]
NEWEST: Version = (2, 30, 7)  # the release fabricsim's NCCL source reading follows (engine.nccl_constants)
OLDEST: Version = (2, 4, 2)  # Tree (the double binary tree) arrived in 2.4.2: the oldest release modelled
# The last patch of each minor release, from NVIDIA/nccl's tags (v2.4.8-1 .. v2.30.7-1).
LAST_PATCH = {4: 8, 5: 7, 6: 4, 7: 8, 8: 4, 9: 9, 10: 3, 11: 4, 12: 12, 13: 4, 14: 3, 15: 5, 16: 5, 17: 1, 18: 6,
              19: 4, 20: 5, 21: 5, 22: 3, 23: 4, 24: 3, 25: 1, 26: 6, 27: 7, 28: 9, 29: 7, 30: 7}

_SRC = "NVIDIA/nccl "


@dataclass(frozen=True)
class Rule:
    """What releases `since` .. `until` (inclusive; None: to NEWEST) do for one setting."""

    setting: str
    since: Version
    until: Version | None
    value: object
    source: str

    def holds(self, v: Version) -> bool:
        return self.since <= v and (self.until is None or v <= self.until)


_TUNE = "src/graph/tuning.cc"
# Tuning constants: (table, row, column) -> value, overriding NCCL 2.30.7's (engine.nccl_constants) in the releases
# named. Rows/columns as nccl_constants indexes them: algorithm / protocol names, compute-capability rows.
RULES: tuple[Rule, ...] = (
    # -- algorithms ------------------------------------------------------------------------------------------------
    Rule("algorithm tree", (2, 4, 2), None, True, _SRC + "v2.4.2-1 release (double binary trees); nccl-tests#196"),
    Rule("algorithm collnet_direct", (2, 6, 4), None, True, _SRC + "v2.6.4-1 src/graph/tuning.cc:55 ncclAlgoStr 'CollNet'"),
    Rule("algorithm collnet_chain", (2, 14, 3), None, True, _SRC + "v2.14.3-1 src/graph/tuning.cc:66 CollNetChain row"),
    Rule("algorithm nvls", (2, 17, 1), None, True, _SRC + "v2.17.1-1 src/graph/tuning.cc:67 NVLS row; release 5d3ab08b"),
    Rule("algorithm nvls_tree", (2, 18, 1), None, True, _SRC + "v2.18.1-1 src/graph/tuning.cc:122 NVLS_TREE; release d97a32fa"),
    Rule("algorithm pat", (2, 23, 4), None, True, _SRC + "v2.23.4-1 src/graph/tuning.cc:109 ncclPatEnable; release 68b54236"),
    # -- GPU generations NCCL knows ---------------------------------------------------------------------------------
    Rule("oldest compute capability 9.0", (2, 15, 5), None, True, _SRC + "v2.15.5-1 src/graph/tuning.cc:237 'case 90'"),
    Rule("oldest compute capability 10.0", (2, 25, 1), None, True,
         _SRC + "v2.25.1-1 src/graph/tuning.cc:148 BLACKWELL_COMPCAP_IDX; release 80f6bda4"),
    # -- LL128 on by default ------------------------------------------------------------------------------------------
    Rule("ll128 archs", (2, 5, 6), (2, 7, 8), (70,), _SRC + "v2.5.6-1 src/graph/tuning.cc:154 (Volta + NVLink only)"),
    Rule("ll128 archs", (2, 8, 3), (2, 15, 1), (70, 80), _SRC + "v2.8.3-1 src/graph/tuning.cc:195"),
    Rule("ll128 archs", (2, 15, 5), (2, 24, 3), (70, 80, 90), _SRC + "v2.15.5-1 src/graph/tuning.cc:235-237"),
    Rule("ll128 archs", (2, 25, 1), (2, 26, 6), (70, 80, 90, 100, 120), _SRC + "v2.25.1-1 src/graph/tuning.cc:432-436"),
    Rule("ll128 archs", (2, 27, 3), None, "sm70+", _SRC + "v2.27.3-1 src/graph/tuning.cc:463 (any compute capability >= 7.0)"),
    Rule("ll128 intra path", (2, 5, 6), (2, 18, 1), "nvl", _SRC + "v2.18.1-1 src/graph/tuning.cc:276 typeIntra <= PATH_NVL"),
    Rule("ll128 intra path", (2, 18, 3), None, "nvb", _SRC + "v2.18.3-1 src/graph/tuning.cc:286 typeIntra <= PATH_NVB"),
    Rule("ll128 inter path sm90", (2, 5, 6), (2, 16, 5), "pxb", _SRC + "v2.16.5-1 src/graph/tuning.cc:231 typeInter <= PATH_PXB"),
    # 2.27 added PATH_P2C and NCCL_LL128_C2C (default 1): 2.27.3 bounds sm90+ at PATH_P2C, numbered after PATH_PXN
    # there (v2.27.3-1 src/graph/topo.h:80-83), so PXN stays allowed; from 2.27.5 P2C comes before PXN (v2.27.5-1
    # topo.h) and the bound is PATH_PXN (v2.27.5-1 tuning.cc:459-461): in PATH_TYPES' order both are 'pxn'
    Rule("ll128 inter path sm90", (2, 17, 1), None, "pxn",
         _SRC + "v2.17.1-1 src/graph/tuning.cc:247 PXN allowed on sm90+; v2.27.3-1 tuning.cc:211, :460; "
         "v2.28.3-1 tuning.cc:482-484"),
    # -- paths -------------------------------------------------------------------------------------------------------
    # A GPU on NVLink-C2C (Grace) reaches its NIC through the CPU's PCIe root: PATH_PHB ('a path going through the
    # CPU', v2.26.2-1 src/graph/paths.cc:96-97) until 2.27.3 named that path PATH_P2C (src/graph/paths.cc:669-681)
    Rule("c2c gpu-nic path", (2, 4, 2), (2, 26, 6), "phb", _SRC + "v2.26.2-1 src/graph/paths.cc:96-97"),
    Rule("c2c gpu-nic path", (2, 27, 3), None, "p2c", _SRC + "v2.27.3-1 src/graph/paths.cc:669-681"),
    # NCCL_NET_GDR_C2C (GPUDirect RDMA on that path) and its default: none in v2.25.1-1
    Rule("net gdr c2c default", (2, 26, 2), (2, 26, 6), "0", _SRC + "v2.26.2-1 src/graph/paths.cc:381"),
    Rule("net gdr c2c default", (2, 27, 3), None, "1", _SRC + "v2.27.3-1 src/graph/paths.cc:386"),
    # -- channels ------------------------------------------------------------------------------------------------------
    # 2.20-2.21 raised comm->nChannels to nvlsChannels but Ring/Tree kept comm->collChannels (v2.21.5 enqueue.cc:1568);
    # 2.22.3 made Ring/Tree use comm->nChannels; 2.28.3 dropped the raise ("Decreased max CTA count from 32 to 16 on
    # Blackwell", release f1308997): Blackwell across nodes goes from 32 Ring/Tree channels back to 16.
    Rule("ring/tree channels raised to nvls channels", (2, 22, 3), (2, 27, 7), True,
         _SRC + "v2.22.3-1 src/graph/connect.cc:493-494 and src/enqueue.cc:1617; gone in v2.28.3-1 (release f1308997)"),
    # the environment's channel bounds (engine.chunking.ChannelEnv; tuner.nccl_graph.bounded_channels): NCCL_MIN/
    # MAX_NCHANNELS on comm->nChannels from 2.5.6 (2.4 read NCCL_MIN/MAX_NRINGS, src/misc/rings.cc:179-180); the
    # communicator config's minCTAs / maxCTAs, with NCCL_MIN_CTAS / NCCL_MAX_CTAS, on comm->nChannels and
    # comm->nvlsChannels from 2.17.1
    Rule("nchannels env", (2, 5, 6), None, True,
         _SRC + "v2.5.6-1 src/graph/connect.cc:181-200, 244-250; v2.30.7-1 src/graph/connect.cc:331-362, 503-505"),
    Rule("cta config", (2, 17, 1), None, True,
         _SRC + "v2.17.1-1 src/init.cc:1072-1073, src/graph/connect.cc:316-317, src/transport/nvls.cc:246; "
         "v2.30.7-1 src/init.cc:2013-2035, 2178-2194, src/graph/connect.cc:503-505, src/transport/nvls.cc:235"),
    Rule("nvls channels sm90", (2, 17, 1), None, 16, _SRC + "v2.17.1-1 src/transport/nvls.cc:227 NVLS_NCHANNELS 16"),
    Rule("nvls channels sm100 (one domain, several)", (2, 25, 1), (2, 26, 6), (32, 32),
         _SRC + "v2.25.1-1 src/transport/nvls.cc:145 NVLS_NCHANNELS_SM100 32"),
    Rule("nvls channels sm100 (one domain, several)", (2, 27, 3), None, (24, 32),
         _SRC + "v2.27.3-1 src/transport/nvls.cc:149,193 NVLS_NCHANNELS_SM100_NVL 24 on one domain"),
    Rule("nvls sm100 multi-node tuning", (2, 30, 3), None, True,
         _SRC + "v2.30.3-1 src/transport/nvls.cc:158-211 ncclNvlsTreeSm100Tuning (channels and chunks by NIC speed)"),
    Rule("nvls_tree chunk from the simple step", (2, 18, 1), (2, 20, 5), True,
         _SRC + "v2.20.3-1 src/enqueue.cc:1684-1687, 1713-1716 (stepSize; comm->nvlsChunkSize from v2.21.5-1 :1754)"),
    Rule("nvls_tree 64 KiB chunk from 4 nodes", (2, 19, 3), None, True,
         _SRC + "v2.19.3-1 src/enqueue.cc:1372; v2.20.3-1 src/enqueue.cc:1716 (NCCL_NVLSTREE_MAX_CHUNKSIZE)"),
    Rule("p2p channels per net peer", (2, 4, 2), (2, 19, 4), "2", _SRC + "v2.19.4-1 src/graph/paths.cc:669 NCCL_NCHANNELS_PER_NET_PEER 2"),
    Rule("p2p channels per net peer", (2, 20, 3), (2, 28, 9), "halving",
         _SRC + "v2.20.3-1 src/graph/paths.cc:687-714 (2, halved while 2 x nRanks > 4 x channels)"),
    Rule("p2p channels per net peer", (2, 29, 2), None, "nic bandwidth",
         _SRC + "v2.29.2-1 src/graph/paths.cc:823-852 NCCL_P2P_PER_CHANNEL_NET_BW 14 GB/s"),
    # -- graph search inputs (tuner.nccl_graph, tuner.nccl_ring_search) ------------------------------------------------
    # ncclTopoNVLinkBw's per-link GB/s by architecture (src/graph/topo.h; a missing key falls through to the next
    # older architecture as NCCL's chain of tests does: Hopper is SM80's 22.0 until SM90_NVLINK_BW arrived in 2.18.1).
    # Releases before 2.10.3 (NVLINK_WIDTH 21.0 in 2.8.3-2.9.9, a single speed array) are read as 2.10.3's.
    Rule("nvlink bw", (2, 4, 2), (2, 17, 1), {"sm60": 18.0, "sm70": 22.0, "sm80": 22.0, "sm86": 12.0},
         _SRC + "v2.10.3-1 src/graph/topo.h:14-17 SM*_NVLINK_WIDTH; v2.17.1-1 src/graph/topo.h:14-17 SM*_NVLINK_BW"),
    Rule("nvlink bw", (2, 18, 1), (2, 19, 4), {"sm60": 18.0, "sm70": 20.0, "sm80": 20.0, "sm86": 12.0, "sm90": 20.0},
         _SRC + "v2.18.1-1 src/graph/topo.h:14-18; v2.19.4-1 src/graph/topo.h:14-18"),
    Rule("nvlink bw", (2, 20, 3), (2, 24, 3), {"sm60": 18.0, "sm70": 20.0, "sm80": 20.0, "sm86": 12.0, "sm90": 20.6},
         _SRC + "v2.20.3-1 src/graph/topo.h:17 SM90_NVLINK_BW 20.6"),
    Rule("nvlink bw", (2, 25, 1), (2, 27, 3),
         {"sm60": 18.0, "sm70": 20.0, "sm80": 20.0, "sm86": 12.0, "sm90": 20.6, "sm100": 40.0},
         _SRC + "v2.25.1-1 src/graph/topo.h:19 SM100_NVLINK_BW 40.0; v2.27.3-1 src/graph/topo.h:21"),
    Rule("nvlink bw", (2, 27, 5), None,
         {"sm60": 18.0, "sm70": 20.0, "sm80": 20.0, "sm86": 12.0, "sm90": 20.6, "sm100": 40.1},
         _SRC + "v2.27.5-1 src/graph/topo.h:21 SM100_NVLINK_BW 40.1; v2.30.7-1 src/graph/topo.h:19-24"),
    # ncclTopoCompute's speed arrays (src/graph/search.cc); the sm90 arrays serve ccMin >= 90 from 2.16.5, the sm100
    # ones ccMin >= 100 from 2.25.1 (v2.25.1-1 search.cc:1009-1013); before, Hopper searched the default arrays.
    Rule("speeds intra", (2, 4, 2), (2, 17, 1), (44.0, 30.0, 22.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
         _SRC + "v2.10.3-1 src/graph/search.cc:710; v2.17.1-1 src/graph/search.cc:729"),
    Rule("speeds intra", (2, 18, 1), None, K.SPEEDS_INTRA, _SRC + "v2.18.1-1 src/graph/search.cc:776; v2.30.7-1 :1051"),
    Rule("speeds inter", (2, 4, 2), (2, 14, 3),
         (48.0, 30.0, 24.0, 22.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12),
         _SRC + "v2.10.3-1 src/graph/search.cc:711; v2.14.3-1 src/graph/search.cc:730"),
    Rule("speeds inter", (2, 15, 1), (2, 17, 1),
         (48.0, 30.0, 28.0, 24.0, 22.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12),
         _SRC + "v2.15.1-1 src/graph/search.cc:730; v2.17.1-1 src/graph/search.cc:730"),
    Rule("speeds inter", (2, 18, 1), None, K.SPEEDS_INTER, _SRC + "v2.18.1-1 src/graph/search.cc:777; v2.30.7-1 :1052"),
    Rule("speeds intra sm90", (2, 16, 5), (2, 17, 1), (66.0, 33.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0),
         _SRC + "v2.16.5-1 src/graph/search.cc:734; v2.17.1-1 src/graph/search.cc:734"),
    Rule("speeds intra sm90", (2, 18, 1), (2, 18, 6), (60.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0),
         _SRC + "v2.18.1-1 src/graph/search.cc:781; v2.18.3-1 src/graph/search.cc:794"),
    Rule("speeds intra sm90", (2, 19, 1), (2, 20, 5), (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0),
         _SRC + "v2.19.1-1 src/graph/search.cc:802; v2.20.3-1 src/graph/search.cc:844"),
    Rule("speeds intra sm90", (2, 21, 5), None, K.SPEEDS_INTRA_SM90, _SRC + "v2.21.5-1 src/graph/search.cc:855; v2.30.7-1 :1057"),
    Rule("speeds inter sm90", (2, 16, 5), (2, 17, 1), (48.0, 45.0, 30.0, 24.0, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
         _SRC + "v2.16.5-1 src/graph/search.cc:735; v2.17.1-1 src/graph/search.cc:735"),
    Rule("speeds inter sm90", (2, 18, 1), (2, 18, 1),
         (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
         _SRC + "v2.18.1-1 src/graph/search.cc:782"),
    Rule("speeds inter sm90", (2, 18, 3), (2, 19, 1),
         (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
         _SRC + "v2.18.3-1 src/graph/search.cc:795; v2.19.1-1 src/graph/search.cc:803"),
    Rule("speeds inter sm90", (2, 19, 3), None, K.SPEEDS_INTER_SM90, _SRC + "v2.19.3-1 src/graph/search.cc:844; v2.30.7-1 :1058"),
    Rule("speeds intra sm100", (2, 25, 1), (2, 26, 6), (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0),
         _SRC + "v2.25.1-1 src/graph/search.cc:940; v2.26.6-1 src/graph/search.cc:923"),
    Rule("speeds intra sm100", (2, 27, 3), (2, 28, 9), (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0),
         _SRC + "v2.27.3-1 src/graph/search.cc:912; v2.28.3-1 src/graph/search.cc:962"),
    Rule("speeds intra sm100", (2, 29, 2), None, K.SPEEDS_INTRA_SM100, _SRC + "v2.29.2-1 src/graph/search.cc:986; v2.30.7-1 :1063"),
    Rule("speeds inter sm100", (2, 25, 1), (2, 26, 6),
         (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
         _SRC + "v2.25.1-1 src/graph/search.cc:941"),
    Rule("speeds inter sm100", (2, 27, 3), (2, 27, 3),
         (47.9, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
         _SRC + "v2.27.3-1 src/graph/search.cc:913"),
    Rule("speeds inter sm100", (2, 27, 5), (2, 27, 5),
         (48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
         _SRC + "v2.27.5-1 src/graph/search.cc:963"),
    Rule("speeds inter sm100", (2, 27, 6), (2, 29, 3),
         (96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
         _SRC + "v2.27.6-1 src/graph/search.cc:963; v2.29.2-1 src/graph/search.cc:987"),
    Rule("speeds inter sm100", (2, 29, 7), (2, 29, 7),
         (96.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
         _SRC + "v2.29.7-1 src/graph/search.cc:988"),
    Rule("speeds inter sm100", (2, 30, 3), None, K.SPEEDS_INTER_SM100, _SRC + "v2.30.3-1 src/graph/search.cc:996; v2.30.7-1 :1064"),
    # channel duplication (ncclTopoDupChannels): 'bw25' doubles any graph of >= 25 GB/s per channel; 'sm80 25 sm90 50'
    # (ccMin <= 80 && bw >= 25) || (ccMin <= 90 && bw >= 50); 'bw25 not sm80+ under 50 x4': >= 25 but not above sm80
    # below 50 GB/s with more than 4 channels
    Rule("dup channels", (2, 4, 2), (2, 16, 2), "bw25", _SRC + "v2.10.3-1 src/graph/search.cc:869; v2.16.2-1 :893"),
    Rule("dup channels", (2, 16, 5), (2, 18, 1), "sm80 25 sm90 50", _SRC + "v2.16.5-1 src/graph/search.cc:898; v2.18.1-1 :954"),
    Rule("dup channels", (2, 18, 3), None, "bw25 not sm80+ under 50 x4",
         _SRC + "v2.18.3-1 src/graph/search.cc:970-971; v2.30.7-1 :1039-1040"),
    Rule("max channels", (2, 4, 2), (2, 24, 3), 32,
         _SRC + "v2.10.3-1 src/include/devcomm.h:49 MAXCHANNELS 32; v2.24.3-1 src/include/device.h:62"),
    Rule("max channels", (2, 25, 1), None, K.MAXCHANNELS, _SRC + "v2.25.1-1 src/include/device.h:62 MAXCHANNELS 64"),
    Rule("dup skips nvls", (2, 18, 1), None, True, _SRC + "v2.18.1-1 src/graph/search.cc:954 pattern != NVLS"),
    # ncclTopoCompute's flow: until 2.19.1 it duplicated last, after a pass 2 that raised bwIntra of trees only;
    # 2.19.3 duplicates between the passes and raises the speed of rings in pass 2 as well
    Rule("dup before pass 2, ring pass 2", (2, 19, 3), None, True,
         _SRC + "v2.19.3-1 src/graph/search.cc:993 ncclTopoDupChannels, :1005-1006 'increase bw for Ring'"),
    Rule("search start within total bw", (2, 18, 3), None, True,
         _SRC + "v2.18.3-1 src/graph/search.cc:856-857 speed x minChannels <= totalBw (maxBw only before)"),
    Rule("nvls pass 2 raises bwInter", (2, 19, 1), None, True,
         _SRC + "v2.19.1-1 src/graph/search.cc:962, :973 (NVLS took the trees' bwIntra step before)"),
    # -- kernels a default nccl-tests run does not use (reported, not applied) ----------------------------------------
    Rule("symmetric kernels (registered windows only)", (2, 27, 3), None, True,
         _SRC + "v2.27.3-1 src/enqueue.cc:342-371 (one node, buffers registered as symmetric windows: nccl-tests -R 2)"),
    Rule("copy-engine collectives (opt-in)", (2, 28, 3), None, True,
         _SRC + "v2.28.3-1 release f1308997 (symmetric windows + NCCL_CTA_POLICY_ZERO)"),
    # -- NCCL's cost model constants (tuning.cc) differing from 2.30.7's ------------------------------------------------
    Rule("hwLat NVLINK Tree Simple", (2, 4, 2), (2, 18, 1), 28.0, _SRC + "v2.18.1-1 " + _TUNE + ":69"),
    Rule("hwLat NVLINK Tree Simple", (2, 19, 1), (2, 22, 3), 28.0, _SRC + "v2.19.1-1 " + _TUNE + ":67"),
    Rule("hwLat PCI Tree Simple", (2, 4, 2), (2, 18, 1), 28.0, _SRC + "v2.18.1-1 " + _TUNE + ":73"),
    Rule("hwLat PCI Tree Simple", (2, 18, 3), (2, 18, 6), 6.0, _SRC + "v2.18.5-1 " + _TUNE + ":71"),
    Rule("hwLat PCI Tree Simple", (2, 19, 1), (2, 22, 3), 28.0, _SRC + "v2.19.1-1 " + _TUNE + ":71"),
    Rule("hwLat NET Tree Simple", (2, 4, 2), (2, 18, 1), 28.0, _SRC + "v2.18.1-1 " + _TUNE + ":77"),
    Rule("hwLat NET Tree Simple", (2, 19, 1), (2, 22, 3), 28.0, _SRC + "v2.19.1-1 " + _TUNE + ":75"),
    Rule("baseLat Tree Simple", (2, 4, 2), (2, 22, 3), 0.0, _SRC + "v2.22.3-1 " + _TUNE + ":57 (8.4 from v2.23.4-1)"),
    # NVLS and NVLSTree latencies: 2.17-2.18 priced them as baseLat (NVLS 40, then 23; NVLSTree 23 + 2(nNodes-1) x
    # hwLat[NET]), 2.19 moved them to hwLat; in 2.30.7's formulas (latency = intraLat, NVLSTree + 2 log2(nNodes) x
    # interLat) they are the NVLink row's values below (the same figure on one node and on two).
    Rule("hwLat NVLINK NVLS Simple", (2, 17, 1), (2, 17, 1), 40.0, _SRC + "v2.17.1-1 " + _TUNE + ":57 baseLat NVLS"),
    Rule("hwLat NVLINK NVLS Simple", (2, 18, 1), (2, 18, 6), 23.0, _SRC + "v2.18.5-1 " + _TUNE + ":59 baseLat NVLS"),
    Rule("hwLat NVLINK NVLS Simple", (2, 19, 1), (2, 20, 5), 23.0, _SRC + "v2.20.5-1 " + _TUNE + ":69"),
    Rule("hwLat NVLINK NVLSTree Simple", (2, 18, 1), (2, 18, 6), 23.0, _SRC + "v2.18.5-1 " + _TUNE + ":59 baseLat NVLSTree"),
    Rule("hwLat NVLINK NVLSTree Simple", (2, 19, 1), (2, 20, 5), 23.0, _SRC + "v2.20.5-1 " + _TUNE + ":69"),
    Rule("hwLat NET NVLSTree Simple", (2, 18, 1), (2, 18, 6), 19.0, _SRC + "v2.18.5-1 " + _TUNE + ":77"),
    Rule("hwLat NET NVLSTree Simple", (2, 19, 1), (2, 28, 3), 14.0, _SRC + "v2.28.3-1 " + _TUNE + ":165 (20.9 from v2.28.7-1)"),
    Rule("hwLat NVLINK CollNetDirect Simple", (2, 18, 1), (2, 18, 6), 8.0, _SRC + "v2.18.5-1 " + _TUNE + ":68"),
    Rule("hwLat NVLINK CollNetChain Simple", (2, 18, 1), (2, 18, 6), 4.75, _SRC + "v2.18.5-1 " + _TUNE + ":68"),
    Rule("hwLat NET CollNetDirect Simple", (2, 18, 1), (2, 18, 6), 10.7, _SRC + "v2.18.5-1 " + _TUNE + ":76"),
    Rule("hwLat NET CollNetChain Simple", (2, 18, 1), (2, 18, 6), 14.0, _SRC + "v2.18.5-1 " + _TUNE + ":76"),
    # CollNet busBw refinements: Chain x0.75 from its return in 2.14.3 (one TREE-pattern CollNet graph served Direct
    # and Chain, v2.17.1-1 src/init.cc:722-726) until 2.18.1 dropped it and gave Direct on sm90+ its x0.85; the two
    # still shared that graph (v2.18.1-1 src/init.cc:713) until 2.22.3 gave each its own (v2.22.3-1 init.cc:865-876)
    Rule("collnet_chain busBw factor", (2, 14, 3), (2, 17, 1), 0.75,
         _SRC + "v2.14.3-1 " + _TUNE + ":145, v2.17.1-1 " + _TUNE + ":168; gone in v2.18.1-1"),
    Rule("collnet_direct sm90 busBw factor", (2, 18, 1), None, 0.85, _SRC + "v2.18.1-1 " + _TUNE + ":182"),
    Rule("llMaxBw Hopper", (2, 15, 5), (2, 20, 5), (87.7, 22.5, 19.0), _SRC + "v2.20.5-1 " + _TUNE + ":89 (Ampere's row)"),
    Rule("perChMaxTreeBw Hopper", (2, 15, 5), (2, 16, 5), (24.0, 23.6, 17.8), _SRC + "v2.16.5-1 " + _TUNE + ":91 (Ampere's row)"),
    Rule("perChMaxTreeBw Hopper", (2, 17, 1), (2, 18, 1), (38.7, 41.4, 33.0), _SRC + "v2.18.1-1 " + _TUNE + ":98"),
    Rule("perChMaxRingLL128Bw Blackwell", (2, 25, 1), (2, 28, 3), (73.4, 73.4, 73.4), _SRC + "v2.28.3-1 " + _TUNE + ":179"),
    Rule("perChMaxRingLL128Bw Blackwell", (2, 28, 7), (2, 29, 7), (73.4, 34.6, 73.4), _SRC + "v2.28.9-1 " + _TUNE + ":179"),
    Rule("perChMaxTreeLL128Bw Blackwell", (2, 25, 1), (2, 27, 7), (73.4, 73.4, 58.0), _SRC + "v2.27.7-1 " + _TUNE + ":182"),
    Rule("perChMaxTreeBw Blackwell", (2, 25, 1), (2, 27, 7), (77.4, 82.8, 72.0), _SRC + "v2.27.7-1 " + _TUNE + ":188"),
    # NVLS / NVLSTree busBw before 2.28.3's nvlsEfficiency formula (tuner.nccl_model._nvls_before_2_28): the graph's
    # bandwidth, then a fixed busBw -> algBw ratio; 2.19.1 took the smaller of intra and inter (NVLSTree: half the
    # network from 3 nodes); 2.27.3 priced NVLS AllGather/ReduceScatter on its own line.
    Rule("nvls busBw formula", (2, 17, 1), (2, 18, 1), "2.17",
         _SRC + "v2.17.1-1 " + _TUNE + ":149,173 (NVLS x.75); v2.18.1-1 " + _TUNE + ":165,186-188 (NVLSTree x.70 n/(2(n-1)))"),
    Rule("nvls busBw formula", (2, 18, 3), (2, 18, 6), "2.18.3",
         _SRC + "v2.18.3-1 " + _TUNE + ":174,196-198 (NVLS x5/6, NVLSTree x.70 n/(2(n-1)))"),
    Rule("nvls busBw formula", (2, 19, 1), (2, 26, 6), "2.19",
         _SRC + "v2.19.1-1 " + _TUNE + ":175-176,199 (min(bwIntra, bwInter), NVLSTree bwInter/2 from 3 nodes; x5/6)"),
    Rule("nvls busBw formula", (2, 27, 3), (2, 27, 7), "2.27",
         _SRC + "v2.27.3-1 " + _TUNE + ":267-275,324 (2.19's, NVLS AllGather/ReduceScatter min(bwIntra (ppn-1)/ppn, "
         "0.9 bwInter)); nvlsEfficiency from v2.28.3-1"),
    # Tree busBw x0.85 where a tree graph has the TREE pattern, which the search forces on a node with one GPU of the
    # communicator (v2.26.2-1 src/graph/search.cc:978, v2.29.2-1 :1067 `if (ngpus == 1) ... pattern = NCCL_TOPO_PATTERN_TREE`).
    Rule("tree pattern busBw factor", (2, 26, 2), None, 0.85,
         _SRC + "v2.26.2-1 " + _TUNE + ":261, v2.29.2-1 " + _TUNE + ":309 (maxTreePattern == NCCL_TOPO_PATTERN_TREE)"),
    Rule("perChMaxNVLSTreeBw", (2, 18, 1), (2, 27, 7), None, _SRC + "v2.28.3-1 " + _TUNE + ":193 (the table arrived in 2.28.3)"),
    Rule("perChMaxNVLSTreeBw Blackwell", (2, 28, 3), (2, 28, 3), (0.0, 96.0, 43.1), _SRC + "v2.28.3-1 " + _TUNE + ":197"),
    Rule("perChMaxNVLSTreeBw Blackwell", (2, 28, 7), (2, 29, 7), (0.0, 96.0, 43.8), _SRC + "v2.29.7-1 " + _TUNE + ":198"),
)


def parse_version(text) -> Version:
    """'2.18.5', '2.18', '2.18.5-1', 21805 (NCCL_VERSION_CODE) or a (major, minor[, patch]) tuple, as a Version;
    a missing patch is the last one of that minor release."""
    if isinstance(text, tuple):
        parts = [int(x) for x in text]
    elif isinstance(text, int):
        parts = [text // 10000, text // 100 % 100, text % 100] if text >= 10000 else [text // 1000, text // 100 % 10, text % 100]
    else:
        m = re.fullmatch(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?(?:-\d+)?\s*", str(text))
        if not m:
            raise FabricsimError(f"NCCL version {text!r} is not major.minor[.patch] (e.g. 2.18 or 2.26.5): give it as "
                                 "NCCL prints it")
        parts = [int(g) for g in m.groups() if g is not None]
    if len(parts) not in (2, 3) or parts[0] != 2:
        raise FabricsimError(f"NCCL version {text!r}: fabricsim models NCCL 2.x ({_fmt(OLDEST)} .. {_fmt(NEWEST)})")
    if len(parts) == 2:
        parts.append(LAST_PATCH.get(parts[1], 99 if parts[1] > NEWEST[1] else 0))
    v = (parts[0], parts[1], parts[2])
    if v < OLDEST:
        raise FabricsimError(f"NCCL {_fmt(v)} predates NCCL's Tree algorithm and cost model ({_fmt(OLDEST)}): "
                             f"give a version from {_fmt(OLDEST)} to {_fmt(NEWEST)}")
    return v


def _fmt(v: Version) -> str:
    """'2.18.5'; a minor release beyond the table, whose patches it does not know, as '2.31'."""
    return ".".join(str(x) for x in (v[:2] if v[2] == 99 else v))


@dataclass(frozen=True)
class Release:
    """The rules of one NCCL release (those of NEWEST for a newer one)."""

    version: Version  # the release the rules are for
    asked: Version  # the version asked for
    settings: dict = field(compare=False, hash=False)  # setting -> value (absent: the rule does not hold)
    applied: tuple[Rule, ...] = field(compare=False, hash=False)  # the rules that hold

    def get(self, setting: str, default=None):
        return self.settings.get(setting, default)

    @property
    def label(self) -> str:
        newer = f" (NCCL {_fmt(self.asked)} is newer than any release modelled)" if self.asked > NEWEST else ""
        return f"NCCL {_fmt(self.version)}{newer}"

    def has_algorithm(self, algo: str) -> bool:
        """Whether the release has `algo` (fabricsim name); algorithms NCCL has no rule for (ring, its
        point-to-point patterns, fabricsim's own schedules) are always there."""
        return bool(self.settings.get(f"algorithm {algo}", f"algorithm {algo}" not in _ALGORITHM_RULES))

    def ll128_arch(self, compcap: int) -> bool:
        """Whether LL128 is on by default for GPUs of compute capability `compcap` (x10: 90 = sm90)."""
        archs = self.settings.get("ll128 archs")
        if archs is None:
            return False
        return compcap >= 70 if archs == "sm70+" else compcap in archs

    def supports(self, compcap: int) -> bool:
        """Whether the release knows GPUs of compute capability `compcap` (x10)."""
        if compcap >= 100:
            return bool(self.settings.get("oldest compute capability 10.0"))
        if compcap >= 90:
            return bool(self.settings.get("oldest compute capability 9.0"))
        return True


_ALGORITHM_RULES = {r.setting for r in RULES if r.setting.startswith("algorithm ")}


def release(version=None) -> Release:
    """The rules of NCCL `version` (anything `parse_version` reads; None: NEWEST)."""
    return _release(NEWEST if version is None else parse_version(version))


@lru_cache(maxsize=64)
def _release(asked: Version) -> Release:
    v = min(asked, NEWEST)
    applied = tuple(r for r in RULES if r.holds(v))
    return Release(v, asked, {r.setting: r.value for r in applied}, applied)



_ARCH_ROW = {"Volta": 0, "Ampere": 1, "Hopper": 2, "Blackwell": 3}
_HOPS = {"NVLINK": 0, "PCI": 1, "NET": 2}
_PROTO_COL = {"LL": 0, "LL128": 1, "Simple": 2}


@dataclass(frozen=True)
class Tuning:
    """NCCL's cost-model constants in one release (engine.nccl_constants' tables, 2.30.7's, with the release's
    rules applied): what tuner.nccl_model prices with."""

    base_lat: dict  # algorithm -> (LL, LL128, Simple) us
    hw_lat: tuple  # per hop class (NVLINK, PCI, NET): algorithm -> (LL, LL128, Simple) us
    ll_max_bw: tuple  # [row][N1, N2, N4] GB/s
    per_ch_ring_ll128: tuple  # [compcap row][N1, N2, N4] GB/s
    per_ch_tree_ll128: tuple
    per_ch_tree: tuple
    per_ch_nvls_tree: tuple | None  # None: the release caps NVLSTree per channel nowhere


def tuning(rel: Release) -> Tuning:
    """The cost-model constants of release `rel`."""
    return _tuning(rel.version)


@lru_cache(maxsize=64)
def _tuning(v: Version) -> Tuning:
    base = {a: list(x) for a, x in K.BASE_LAT.items()}
    hw = [{a: list(x) for a, x in hop.items()} for hop in K.HW_LAT]
    tables = {"llMaxBw": [list(r) for r in K.LL_MAX_BW], "perChMaxRingLL128Bw": [list(r) for r in K.PER_CH_MAX_RING_LL128_BW],
              "perChMaxTreeLL128Bw": [list(r) for r in K.PER_CH_MAX_TREE_LL128_BW],
              "perChMaxTreeBw": [list(r) for r in K.PER_CH_MAX_TREE_BW],
              "perChMaxNVLSTreeBw": [list(r) for r in K.PER_CH_MAX_NVLS_TREE_BW]}
    nvls_tree_capped = True
    for r in _release(v).applied:
        words = r.setting.split()
        if words[0] == "baseLat":
            base[words[1]][_PROTO_COL[words[2]]] = r.value
        elif words[0] == "hwLat":
            hw[_HOPS[words[1]]][words[2]][_PROTO_COL[words[3]]] = r.value
        elif words[0] in tables and len(words) == 1 and r.value is None:
            nvls_tree_capped = False
        elif words[0] in tables:
            tables[words[0]][_ARCH_ROW[words[1]]] = list(r.value)
    if not nvls_tree_capped:
        tables["perChMaxNVLSTreeBw"] = None
    freeze = (lambda rows: None if rows is None else tuple(tuple(x) for x in rows))
    return Tuning({a: tuple(x) for a, x in base.items()}, tuple({a: tuple(x) for a, x in hop.items()} for hop in hw),
                  freeze(tables["llMaxBw"]), freeze(tables["perChMaxRingLL128Bw"]), freeze(tables["perChMaxTreeLL128Bw"]),
                  freeze(tables["perChMaxTreeBw"]), freeze(tables["perChMaxNVLSTreeBw"]))


@dataclass(frozen=True)
class GraphSearch:
    """ncclTopoCompute's inputs in one release for GPUs of one compute capability (the 'graph search' rules)."""

    nvlink_bw: float  # ncclTopoNVLinkBw, GB/s per NVLink
    speeds_intra: tuple[float, ...]  # candidate GB/s per channel inside a node
    speeds_inter: tuple[float, ...]  # ... across nodes
    dup: str  # ncclTopoDupChannels' rule ('dup channels')
    dup_skips_nvls: bool
    dup_first: bool  # duplicate between pass 1 and pass 2, and raise rings' speed in pass 2 (2.19.3+)
    start_within_total: bool  # pass 1 starts at a speed whose minChannels fit the GPU's total bandwidth (2.18.3+)
    nvls_raise: bool  # pass 2 raises NVLS's bwInter (2.19.1+); before, NVLS took the trees' bwIntra step

    def duplicates(self, bw_intra: float, n_channels: int, compcap: int) -> bool:
        """Whether ncclTopoDupChannels doubles a graph of `n_channels` at `bw_intra` GB/s per channel."""
        if self.dup == "bw25":
            return bw_intra >= 25.0
        if self.dup == "sm80 25 sm90 50":
            return (compcap <= 80 and bw_intra >= 25.0) or (compcap <= 90 and bw_intra >= 50.0)
        return bw_intra >= 25.0 and not (compcap > 80 and bw_intra < 50.0 and n_channels > 4)

    def duplicated(self, n_channels: int, bw_intra: float, compcap: int, max_channels: int) -> tuple[int, int]:
        """(channels, divisor of each one's bandwidth) after ncclTopoDupChannels: twice the channels, at most
        `max_channels`, where the rule allows it; (n_channels, 1) where it does not."""
        if not n_channels or not self.duplicates(bw_intra, n_channels, compcap):
            return n_channels, 1
        dup = min(2 * n_channels, max_channels)
        return dup, -(-dup // n_channels)


def graph_search(version, compcap: int) -> GraphSearch:
    """The graph-search rules of NCCL `version` (None: NEWEST) for compute capability `compcap` (x10)."""
    return _graph_search(release(version).version, compcap)


@lru_cache(maxsize=64)
def _graph_search(v: Version, compcap: int) -> GraphSearch:
    s = _release(v).settings
    links = s["nvlink bw"]
    # ncclTopoNVLinkBw's chain of tests; an architecture the release has no constant for falls through
    tests = (("sm100", compcap >= 100), ("sm90", compcap >= 90), ("sm86", compcap == 86), ("sm80", compcap >= 80),
             ("sm70", compcap >= 70), ("sm60", compcap >= 60))
    nvlink_bw = next((links[k] for k, hit in tests if hit and k in links), links["sm80"])

    def speeds(kind: str) -> tuple[float, ...]:
        arch = "sm100" if compcap >= 100 else "sm90" if compcap >= 90 else ""
        if arch == "sm100" and f"{kind} sm100" not in s:
            arch = "sm90"
        return tuple(s.get(f"{kind} {arch}", s[kind]) if arch else s[kind])

    return GraphSearch(nvlink_bw, speeds("speeds intra"), speeds("speeds inter"), s["dup channels"],
                       bool(s.get("dup skips nvls")), bool(s.get("dup before pass 2, ring pass 2")),
                       bool(s.get("search start within total bw")), bool(s.get("nvls pass 2 raises bwInter")))
