"""The routing result: for each requested (src, dst) pair, one or more weighted paths.

Stored flat (CSR) so a ring over 131,072 GPUs is a handful of numpy arrays:
  path_pair[p]      which requested pair path p belongs to
  path_weight[p]    fraction of that pair's bytes carried by path p (weights of a pair sum to 1)
  path_ptr          links of path p are `links[path_ptr[p]:path_ptr[p+1]]`, in hop order
  links             int32 link indices
  path_latency[p]   seconds: sum of the path's link latencies
  path_kind[p]      a PathKind value saying how the pair is connected (NVLink, PCIe P2P, host bounce, net, PXN)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np


class PathKind(IntEnum):
    """How two GPUs reach each other, after NCCL's path types (graph.h)."""

    LOCAL = 0  # same GPU
    NVLINK = 1  # direct NVLink or through an NVSwitch
    NVLINK_BRIDGE = 2  # NVLink through an intermediate GPU (NVB)
    PCIE = 3  # PCIe peer-to-peer through PCIe switches (PIX/PXB)
    HOST = 4  # through the CPU / host memory (PHB/SYS, or P2P disabled)
    NET = 5  # over the scale-out fabric with GPUDirect RDMA
    NET_HOST = 6  # over the fabric, staged through host memory (GPUDirect RDMA off)
    PXN = 7  # over NVLink to a peer GPU, then its NIC on the destination's rail


@dataclass(frozen=True, eq=False)
class Routes:
    n_pairs: int
    path_pair: np.ndarray
    path_weight: np.ndarray
    path_ptr: np.ndarray
    links: np.ndarray
    path_latency: np.ndarray
    path_kind: np.ndarray

    @property
    def n_paths(self) -> int:
        return int(self.path_pair.shape[0])

    def path_links(self, p: int) -> np.ndarray:
        return self.links[self.path_ptr[p] : self.path_ptr[p + 1]]
