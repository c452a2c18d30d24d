"""The NCCL environment variables that change nccl-tests results, applied to a cluster and a tuner call.

Each variable either changes the prediction (a spec variant or the tuner's candidates) or is refused or
ignored with a note saying why. Semantics from NCCL's environment-variable documentation
(docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html) and src/graph/paths.cc:
- NCCL_ALGO / NCCL_PROTO: lists (Ring, Tree, NVLS, NVLSTree, CollNetDirect, CollNetChain, PAT / LL, LL128,
  Simple), '^' excludes, 'allreduce:ring,tree;allgather:ring' sets them per collective (NCCL 2.24+).
- NCCL_NVLS_ENABLE 0 off, 1 on, 2 (default) on where supported; NCCL_COLLNET_ENABLE 1 turns SHARP on.
- NCCL_P2P_DISABLE=1: no P2P transport (NVLink or PCIe): GPUs of a node go through host memory (SHM).
- NCCL_SHM_DISABLE=1: with P2P off too, NCCL would loop through the NIC, which is not modelled: refused.
- NCCL_NET_GDR_LEVEL: GPUDirect RDMA up to this GPU-NIC distance (LOC, PIX, PXB, PHB, SYS; legacy 0-4).
- NCCL_IB_HCA: the HCAs to use ('mlx5_0,mlx5_1', '^mlx5_0' excludes, '=' exact match).
- NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS / NCCL_MIN_CTAS / NCCL_MAX_CTAS: the communicator's channel bounds, read
  as `perf --env` reads them (reports.nccl_env.CHANNEL_VARS).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from fabricsim.engine.chunking import ChunkEnv
from fabricsim.errors import FabricsimError
from fabricsim.reports.nccl_env import CHANNEL_VARS, RunSetup, environment, sharp_switches
from fabricsim.topology.spec import ClusterSpec
from fabricsim.vocab import P2P_COLLECTIVES, parse_algorithms, parse_protocols

_P2P_OPS = P2P_COLLECTIVES  # NCCL point-to-point: NCCL_ALGO / NCCL_PROTO do not choose their algorithm
_GDR_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS")
MODELLED = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE", "NCCL_P2P_DISABLE",
            "NCCL_SHM_DISABLE", "NCCL_NET_GDR_LEVEL", "NCCL_IB_HCA", *CHANNEL_VARS)
_HARMLESS = re.compile(r"^NCCL_(DEBUG.*|SOCKET_IFNAME|TESTS_.*)$")  # logging and plumbing: no effect on timing


@dataclass(frozen=True)
class NcclEnv:
    """A cluster and tuner restrictions under the job's NCCL environment, with a note per variable."""

    spec: ClusterSpec
    algos: list[str] | None
    protos: list[str] | None
    notes: tuple[str, ...]
    applied: tuple[str, ...]  # 'NAME=value' of the variables read, in MODELLED order
    chunk_env: ChunkEnv = ChunkEnv()  # the channel bounds the environment sets


def _names(name: str, text: str, parse, collective: str) -> list[str] | None:
    """NCCL_ALGO / NCCL_PROTO for this collective (vocab's parser: lists, '^', per-collective form) in fabricsim names,
    '^' on the first when excluded; None: no restriction."""
    try:
        selection = parse(text, collective)
    except FabricsimError as err:
        raise FabricsimError(f"{name}: {err}") from None
    return selection.spec().split(",") if selection else None


def _gdr_path(spec: ClusterSpec) -> str:
    """The GPU-NIC path NCCL would see on this cluster: PIX when they share a PCIe switch, else PHB."""
    return "PIX" if spec.pcie_switches_per_node else "PHB"


def _hca_count(text: str, spec: ClusterSpec) -> int:
    body = text.strip()
    exclude = body.startswith("^")
    names = [t.strip().split(":")[0] for t in body.lstrip("^=").split(",") if t.strip()]
    if not names:
        raise FabricsimError(f"NCCL_IB_HCA={text!r} names no HCA: use e.g. mlx5_0,mlx5_1 or ^mlx5_0")
    own = {f"mlx5_{k}" for k in range(spec.nics_per_node)}
    if exclude:
        return spec.nics_per_node - len(set(names) & own)
    return len(set(names) & own) if set(names) <= own else min(len(names), spec.nics_per_node)


def apply_env(spec: ClusterSpec, collective: str, environ: dict[str, str]) -> NcclEnv:
    """The cluster and tuner restrictions `environ` implies for one nccl-tests run."""
    notes: list[str] = []
    applied = [f"{k}={environ[k]}" for k in MODELLED if k in environ]
    algos = protos = None
    p2p_off = environ.get("NCCL_P2P_DISABLE", "0").strip() not in ("", "0")
    if "NCCL_ALGO" in environ:
        if collective in _P2P_OPS:
            notes.append(f"NCCL_ALGO ignored: {collective} is a point-to-point operation in NCCL, which NCCL_ALGO "
                         "does not choose")
        else:
            algos = _names("NCCL_ALGO", environ["NCCL_ALGO"], parse_algorithms, collective)
            notes.append(f"NCCL_ALGO={environ['NCCL_ALGO']}: candidates {', '.join(algos) if algos else 'unchanged'}")
    if "NCCL_PROTO" in environ:
        protos = _names("NCCL_PROTO", environ["NCCL_PROTO"], parse_protocols, collective)
        notes.append(f"NCCL_PROTO={environ['NCCL_PROTO']}: protocols {', '.join(protos) if protos else 'unchanged'}")
    nvls = environ.get("NCCL_NVLS_ENABLE")
    if nvls is not None:
        if nvls.strip() not in ("0", "1", "2"):
            raise FabricsimError(f"NCCL_NVLS_ENABLE={nvls!r}: use 0 (off), 1 (on) or 2 (on where supported)")
        if nvls.strip() == "0" and spec.nvls:
            spec = replace(spec, nvls=False)
            notes.append("NCCL_NVLS_ENABLE=0: NVLS and NVLSTree off")
        elif nvls.strip() != "0" and not spec.nvls:
            notes.append(f"NCCL_NVLS_ENABLE={nvls}: this cluster has no NVLS (NVLink SHARP switch): no change")
    collnet = environ.get("NCCL_COLLNET_ENABLE")
    if collnet is not None:
        on = collnet.strip() not in ("", "0")
        if on and not sharp_switches(spec):
            notes.append("NCCL_COLLNET_ENABLE=1: the fabric has no SHARP switches: no change")
        elif on != spec.sharp:
            spec = replace(spec, sharp=on)
            notes.append(f"NCCL_COLLNET_ENABLE={collnet}: IB SHARP (CollNet) {'on' if on else 'off'}")
    if p2p_off:
        spec = replace(spec, scaleup="pcie", domain_size=spec.gpus_per_node, nvswitch_chips=0, nvls=False, p2p=False)
        notes.append("NCCL_P2P_DISABLE=1: no P2P transport; GPUs of a node exchange data through host memory (SHM), "
                     "NVLink unused")
    shm_off = environ.get("NCCL_SHM_DISABLE", "0").strip() not in ("", "0")
    if shm_off:
        if not spec.p2p and spec.gpus_per_node > 1:
            raise FabricsimError("NCCL_SHM_DISABLE=1 with GPU P2P off: NCCL would move intra-node data through the "
                                 "network loopback, which fabricsim does not model; unset one of them")
        notes.append("NCCL_SHM_DISABLE=1: no effect here (P2P carries intra-node traffic)")
    level = environ.get("NCCL_NET_GDR_LEVEL")
    if level is not None:
        key = level.strip().upper()
        if key.isdigit():
            key = _GDR_LEVELS[min(int(key), 4)]
        if key not in _GDR_LEVELS:
            raise FabricsimError(f"NCCL_NET_GDR_LEVEL={level!r}: use LOC, PIX, PXB, PHB, SYS or 0-4")
        path = _gdr_path(spec)
        if _GDR_LEVELS.index(path) > _GDR_LEVELS.index(key) and spec.gpudirect:
            spec = replace(spec, gpudirect=False)
            notes.append(f"NCCL_NET_GDR_LEVEL={level}: the GPU-NIC path is {path}, beyond {key}: GPUDirect RDMA off, "
                         "network data staged in host memory")
        elif path == "PHB" and key in ("PHB", "SYS"):
            notes.append(f"NCCL_NET_GDR_LEVEL={level}: GPUDirect through the CPU root complex is not modelled "
                         "(fabricsim stages such paths in host memory): no change")
        else:
            notes.append(f"NCCL_NET_GDR_LEVEL={level}: GPU-NIC path {path} within {key}: no change")
    hca = environ.get("NCCL_IB_HCA")
    if hca is not None:
        if spec.fabric == "none" or spec.nodes == 1:
            notes.append("NCCL_IB_HCA: one node, no network traffic: no change")
        else:
            k = _hca_count(hca, spec)
            if k < 1:
                raise FabricsimError(f"NCCL_IB_HCA={hca!r} leaves no NIC of the cluster's mlx5_0..mlx5_"
                                     f"{spec.nics_per_node - 1}")
            if k != spec.nics_per_node:
                spec = replace(spec, nics_per_node=k, rail_optimized=spec.rail_optimized and k == spec.gpus_per_node)
            notes.append(f"NCCL_IB_HCA={hca}: {k} of the cluster's NICs per node (named mlx5_0.. in order)")
    run = RunSetup(spec, collective, "")
    for e in environment(run, {k: environ[k] for k in CHANNEL_VARS if k in environ}):
        notes.append(f"{e.var}={e.value}: {e.status} ({e.why})")
    other = sorted(k for k in environ if k.startswith("NCCL_") and k not in MODELLED and not _HARMLESS.match(k))
    if other:
        notes.append(f"not modelled, ignored: {', '.join(other)}")
    return NcclEnv(spec, algos, protos, tuple(notes), tuple(applied), run.chunk_env)
