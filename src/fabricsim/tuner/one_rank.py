"""A one-rank communicator: NCCL runs no algorithm, no channel and no protocol, it copies the buffer on the GPU.

NCCL 2.30 (github:NVIDIA/nccl src/enqueue.cc:3039-3041, taskAppend) sends every collective of a communicator with
nRanks == 1 to `ncclLaunchOneRank` before any algorithm is chosen (so NCCL_ALGO / NCCL_PROTO do not apply), and
src/device/onerank.cu:49-56 turns it into one `cudaMemcpyAsync` of count x element size bytes from the send to the
receive buffer when they differ (a PreMulSum reduction runs a one-block-per-channel copy kernel instead; fabricsim's
reductions are sum/prod/min/max/avg on a single rank, all a plain copy). Its own cost table says the same:
updateCollCostTable (enqueue.cc:1993-1995) prices only Ring/Simple, at 0, when nRanks == 1.

The time is the copy's launch overhead plus the bytes read and written through the GPU's memory (`hardware` catalog
`hbm_bw`, nominal: a lower bound on the copy time). nccl-tests' bus factors are 0 for one rank in all_reduce,
all_gather, reduce_scatter and alltoall ((n-1)/n), 1 in broadcast and reduce (vocab.bus_factor).
"""

from __future__ import annotations

import numpy as np

from fabricsim.engine.result import Limiter, Result, Timeline
from fabricsim.hardware import get_gpu
from fabricsim.topology.model import Topology
from fabricsim.vocab import bus_factor

ALGORITHM = "copy"  # the pick's algorithm column: NCCL's one-rank device-to-device copy
PROTOCOL = "none"  # no NCCL protocol runs
CHANNELS = 0  # no NCCL channel runs

# Host cost of submitting one cudaMemcpyAsync: "approximately 5-7 us" per call, measured by Wu et al., "DualPath:
# Breaking the Storage Bandwidth Bottleneck in Agentic LLM Inference", arXiv 2602.21548 (2026), Section 5.2; the low
# end, as for a single copy on an otherwise idle stream.
MEMCPY_LAUNCH_LATENCY = 5e-6  # s
MEMCPY_LAUNCH_SOURCE = "cudaMemcpyAsync per-call overhead 5-7 us (arXiv 2602.21548 Section 5.2), low end"


def copy_time(topo: Topology, rank: int, nbytes: int) -> tuple[float, float, float]:
    """(latency s, bandwidth s, HBM bytes/s) of copying `nbytes` within GPU `rank`'s memory: read and write once."""
    gpu = get_gpu(topo.gpu_part(rank))
    return MEMCPY_LAUNCH_LATENCY, 2.0 * nbytes / gpu.hbm_bw, float(gpu.hbm_bw)


def result(topo: Topology, collective: str, nbytes: int, rank: int, level: str) -> Result:
    """The engine-shaped result of `collective` on the one rank `rank`: no link carries a byte."""
    lat, bw_time, hbm = copy_time(topo, rank, nbytes)
    time = lat + bw_time
    algbw = nbytes / time
    zeros = np.zeros(topo.n_links)
    zeros.flags.writeable = False
    limiter = Limiter("memory", hbm / 2.0, bw_time, f"hardware catalog HBM bandwidth {hbm / 1e12:.2f} TB/s",
                      "one-rank copy: read and write through HBM")
    return Result(collective=collective, algorithm=ALGORITHM, protocol=PROTOCOL, nranks=1, nbytes=nbytes,
                  level=level, time=time, latency_time=lat, bandwidth_time=bw_time, algbw=algbw,
                  busbw=algbw * bus_factor(collective, 1),
                  bound="latency-bound" if lat >= bw_time else "bandwidth-bound", necks_of=lambda: (limiter, (), 0),
                  link_bytes=zeros, link_util=zeros,
                  timeline_of=lambda: Timeline(np.array([0.0]), np.array([time]), np.zeros(1, dtype=np.int32)),
                  slices=1, slowdown=1.0, topo=topo)
