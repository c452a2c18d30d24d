"""What a caller asks the engine to time, and the checked values it becomes: the input checks, once per call.

A caller names a collective as a `Job` (a schedule, a size, ranks, protocol, channels) or as explicit step
traffic; `job_call` / `traffic_call` check every field once and return a `Call`, and `options` checks how to
time it (`Options`). The planner, solver, assembler and unit cache below trust both and check nothing again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fabricsim.engine.chunking import CommPlan
from fabricsim.errors import FabricsimError
from fabricsim.schedules.model import Schedule
from fabricsim.topology.model import Topology
from fabricsim.vocab import BUSBW_FACTOR, PROTOCOLS

LEVELS = ("flow", "analytical")


@dataclass(frozen=True)
class Job:
    """One collective to time: `schedule` moving `nbytes` (nccl-tests' size) on GPU `ranks` (default 0..n-1)."""

    schedule: Schedule
    nbytes: int
    ranks: Sequence[int] | np.ndarray | None = None
    elem_size: int = 4
    protocol: str = "simple"
    channels: int | None = None  # NCCL channels (default: the schedule's own)
    net_peer_bw: float | None = None  # bytes/s cap per point-to-point transfer across the network (see time_traffic)
    comm: CommPlan | None = None  # NCCL's communicator channels, heads and chunk sizes (None: chunking.default_comm)


@dataclass(frozen=True)
class Options:
    """How every collective of one engine call is timed."""

    level: str  # 'flow' (max-min fair sharing, re-solved as flows finish) or 'analytical' (per-link bottleneck)
    pxn: bool | None  # PXN for cross-rail traffic: None as NCCL (rail-optimised fabrics), True / False forced
    adaptive: bool  # flows spread over every equal-cost fabric path (True) or one hashed path each (False)


@dataclass(frozen=True, eq=False)
class Call:
    """One collective, checked: what moves, on which GPUs, on how many channels."""

    collective: str
    algorithm: str
    nranks: int  # ranks of the traffic (all copies)
    copies: int  # disjoint copies of an (nranks / copies)-rank collective timed together, reported per copy
    rotations: int  # > 1: the traffic is one rotation of a rank-symmetric schedule (Schedule.rotations)
    nbytes: int  # nccl-tests' size of the message
    elem_size: int  # bytes per element
    gpu_ranks: np.ndarray  # int32 GPU rank of each schedule rank
    protocol: str
    channels: int  # NCCL channels the collective runs on (its per-channel caps multiply them)
    connections: int  # parallel connections carrying each transfer
    net_peer_bw: float | None  # bytes/s cap on each point-to-point transfer across the network; None: no cap
    schedule: Schedule | None = None  # the schedule the traffic comes from (None: explicit step traffic)
    pieces: int = 0  # equal pieces the schedule cuts a message into (0: explicit traffic)
    comm: CommPlan | None = None  # NCCL's communicator for the call's chunking (None: chunking.default_comm)


def options(topo: Topology, level: str, pxn: bool | None, adaptive: bool | None) -> Options:
    """Checked options; `adaptive` None follows the cluster's routing ('adaptive' / 'ecmp')."""
    if level not in LEVELS:
        raise FabricsimError(f"unknown level '{level}': use 'flow' or 'analytical'")
    spread = topo.features.get("routing") == "adaptive" if adaptive is None else bool(adaptive)
    return Options(level, pxn, spread)


def check_nbytes(nbytes) -> int:
    if not isinstance(nbytes, (int, np.integer, float)) or nbytes < 0 or nbytes != int(nbytes):
        raise FabricsimError(f"invalid size {nbytes!r}: give a whole, non-negative number of bytes")
    return int(nbytes)


def check_ranks(topo: Topology, nranks: int, ranks) -> np.ndarray:
    """The GPU rank of each of `nranks` schedule ranks (default 0..nranks-1), each a distinct GPU of `topo`. A list
    of integers checked once is kept in the topology's store of structural data, read-only: the tuner times every
    candidate of every size on the same ranks."""
    if nranks > topo.n_gpus:
        raise FabricsimError(f"the schedule has {nranks} ranks but topology '{topo.name}' has {topo.n_gpus} GPUs: "
                             "use fewer ranks or a larger cluster")
    if ranks is None:
        return np.arange(nranks, dtype=np.int32)
    arr = np.asarray(ranks)
    if arr.ndim != 1 or arr.shape[0] != nranks or arr.dtype.kind not in "iu":  # signed or unsigned integers
        raise FabricsimError(f"ranks must list {nranks} integer GPU ranks, one per schedule rank: got {arr.shape[0] if arr.ndim == 1 else arr.shape}")
    return topo.derive_structure(("checked_ranks", arr.dtype.str, arr.tobytes()), lambda: _distinct_gpus(topo, arr))


def _distinct_gpus(topo: Topology, arr: np.ndarray) -> np.ndarray:
    if arr.min() < 0 or arr.max() >= topo.n_gpus:
        raise FabricsimError(f"ranks must be GPU ranks 0..{topo.n_gpus - 1} of topology '{topo.name}': got {int(arr.min())}..{int(arr.max())}")
    if np.count_nonzero(np.bincount(arr) > 1):
        raise FabricsimError("ranks lists a GPU twice: give each schedule rank its own GPU")
    return arr.astype(np.int32)


def _check_protocol(protocol: str) -> str:
    if protocol not in PROTOCOLS:
        raise FabricsimError(f"unknown protocol '{protocol}': use one of {', '.join(PROTOCOLS)}")
    return protocol


def _check_peer_cap(net_peer_bw) -> float | None:
    if net_peer_bw is not None and not net_peer_bw > 0:
        raise FabricsimError(f"net_peer_bw={net_peer_bw!r} must be a positive bandwidth in bytes/s (or None: no cap)")
    return None if net_peer_bw is None else float(net_peer_bw)


def check_comm(comm) -> CommPlan | None:
    if comm is not None and not isinstance(comm, CommPlan):
        raise FabricsimError(f"comm={comm!r} must be an engine.chunking.CommPlan (or None: NCCL's defaults)")
    if comm is not None and min(comm.channels, comm.nvls_channels, comm.nvls_heads, comm.simple_buffsize) < 1:
        raise FabricsimError(f"comm={comm!r}: channels, NVLS channels, NVLS heads and the buffer size must be positive")
    return comm


def _check_split(nranks: int, copies: int, rotations: int) -> None:
    if copies < 1 or nranks % copies:
        raise FabricsimError(f"copies={copies} must divide the {nranks} ranks into equal groups")
    if rotations < 1 or nranks % rotations or (rotations > 1 and copies > 1):
        raise FabricsimError(f"rotations={rotations} must divide the {nranks} ranks of one collective (no copies)")


def job_call(topo: Topology, job: Job) -> Call:
    """The checked Call of a Job."""
    sched = job.schedule
    channels = sched.channels if job.channels is None else int(job.channels)
    if channels < 1 or channels % max(sched.channels, 1):
        raise FabricsimError(f"channels={job.channels} must be a positive multiple of the schedule's {sched.channels} channels")
    if not isinstance(job.elem_size, (int, np.integer)) or job.elem_size <= 0:
        raise FabricsimError(f"elem_size={job.elem_size!r} must be a positive number of bytes per element")
    _check_split(sched.nranks, sched.copies, sched.rotations)
    cm = sched.chunkmap
    pieces = math.prod(cm.split) if cm is not None else int(sched.nchunks)
    return Call(sched.collective, sched.algorithm, sched.nranks, sched.copies, sched.rotations, check_nbytes(job.nbytes),
                int(job.elem_size), check_ranks(topo, sched.nranks, job.ranks), _check_protocol(job.protocol), channels,
                channels // max(sched.channels, 1), _check_peer_cap(job.net_peer_bw), sched, pieces, check_comm(job.comm))


def traffic_call(topo: Topology, *, collective: str, algorithm: str, nranks: int, nbytes, copies: int, ranks,
                 protocol: str, channels: int, connections: int, net_peer_bw, rotations: int,
                 comm: CommPlan | None = None) -> Call:
    """The checked Call of explicit step traffic (`engine.time_traffic`; `comm`: NCCL's communicator, for a bound
    on a call whose schedule is not built yet, engine.bound)."""
    if collective not in BUSBW_FACTOR:
        raise FabricsimError(f"unknown collective '{collective}': use one of {', '.join(BUSBW_FACTOR)}")
    _check_split(nranks, copies, rotations)
    return Call(collective, algorithm, nranks, copies, rotations, check_nbytes(nbytes), 1, check_ranks(topo, nranks, ranks),
                _check_protocol(protocol), int(channels), int(connections), _check_peer_cap(net_peer_bw),
                comm=check_comm(comm))
