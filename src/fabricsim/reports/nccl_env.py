"""The NCCL environment of a run, as a prediction honours it: each variable NCCL reads that fabricsim knows is
'applied' (the prediction follows it: a forced algorithm or protocol, resized buffers and chunks, bounded channels,
NVLS or CollNet off or on, P2P off), said by the cluster file, of no effect (NCCL's default, or nothing this run
does), or 'not modelled' (NCCL changes behaviour and fabricsim cannot follow), with why. `perf --env`, `compare`
(with the log's own 'set by environment' lines), `doctor`, `calibrate`, `validate --logs`, the added rows' channel
bounds and the nccl-tests emulator's read a run's environment through `ENV`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fabricsim import hardware
from fabricsim.engine.chunking import ChunkEnv
from fabricsim.errors import FabricsimError
from fabricsim.topology.spec import ClusterSpec
from fabricsim.tuner import nccl_versions
from fabricsim.units import c_integer
from fabricsim.vocab import parse_algorithms, parse_protocols


@dataclass(frozen=True)
class EnvEffect:
    """How one NCCL environment variable of a log is honoured: status 'applied' (the prediction follows it),
    'cluster file' (the log's cluster file says it), 'no effect' (NCCL's default, or nothing this run does)
    or 'not modelled' (NCCL changes behaviour and fabricsim cannot follow)."""

    var: str
    value: str
    status: str
    why: str


def _nccl_list(value: str, parse, var: str, collective: str) -> tuple[str, ...]:
    """NCCL_ALGO / NCCL_PROTO text ('Ring,Tree', '^NVLS') in fabricsim names, the '^' kept on the first (vocab's parser)."""
    try:
        selection = parse(value, collective)
    except FabricsimError as err:
        raise FabricsimError(f"{var}={value}: {err}") from None
    if selection is None:
        raise FabricsimError(f"{var} is empty: give NCCL names, e.g. Ring,Tree")
    return tuple(selection.spec().split(","))


@dataclass
class RunSetup:
    """What the environment does to one prediction (mutable while the variables are read)."""

    spec: ClusterSpec
    collective: str
    log_text: str
    algos: tuple[str, ...] | None = None
    protos: tuple[str, ...] | None = None
    chunk_env: ChunkEnv = ChunkEnv()
    nccl_version: str | tuple[int, ...] | None = None  # the NCCL release it ran (tuner.nccl_versions; None: newest)


def _p2p_disable(run: RunSetup, var: str, value: str) -> EnvEffect:
    if value.strip() in ("0", ""):
        return EnvEffect(var, value, "no effect", "0 is NCCL's default")
    s = run.spec
    # NCCL_P2P_DISABLE=1 disables the P2P transport (NVLink and PCIe peer access): GPU-to-GPU traffic is routed
    # through CPU memory (src/graph/paths.cc ncclTopoCheckP2p / addInterStep; the SHM transport). fabricsim
    # says that with a PCIe-only node whose GPUs may not reach each other directly.
    run.spec = dataclasses.replace(s, scaleup="pcie", domain_size=s.gpus_per_node, nvswitch_chips=0, nvls=False,
                                   p2p=False, nvlinks=0, rack_trays=0, domain_racks=1)
    return EnvEffect(var, value, "applied", "GPU-to-GPU traffic through host memory: scaleup pcie, p2p false, "
                                            "no NVLink or NVLS")


def _algo(run: RunSetup, var: str, value: str) -> EnvEffect:
    run.algos = _nccl_list(value, parse_algorithms, var, run.collective)
    return EnvEffect(var, value, "applied", f"algorithms {','.join(run.algos)}")


def _proto(run: RunSetup, var: str, value: str) -> EnvEffect:
    run.protos = _nccl_list(value, parse_protocols, var, run.collective)
    return EnvEffect(var, value, "applied", f"protocols {','.join(run.protos)}")


def _default_is(default: str, what: str) -> Callable[[RunSetup, str, str], EnvEffect]:
    """A variable whose NCCL default is `default`: no effect at that value, `what` is not modelled otherwise."""

    def effect(run: RunSetup, var: str, value: str) -> EnvEffect:
        if value.strip() == default:
            return EnvEffect(var, value, "no effect", f"{default} is NCCL's default")
        return EnvEffect(var, value, "not modelled", what)

    return effect


def _fixed(status: str, why: str) -> Callable[[RunSetup, str, str], EnvEffect]:
    """A variable honoured the same way at any value."""
    return lambda run, var, value: EnvEffect(var, value, status, why)


def _size(var: str, value: str) -> int:
    """A byte count NCCL reads as an integer parameter (src/misc/param.cc: strtoll, base auto)."""
    n = c_integer(value)
    if n is None:
        raise FabricsimError(f"{var}={value!r} is not a whole number of bytes: give it as the run set it")
    if n <= 0:
        raise FabricsimError(f"{var}={value} must be a positive number of bytes")
    return n


def _chunk_size(field_name: str, what: str) -> Callable[[RunSetup, str, str], EnvEffect]:
    """A variable that resizes the communicator's buffers or chunks (engine.chunking.ChunkEnv's `field_name`)."""

    def effect(run: RunSetup, var: str, value: str) -> EnvEffect:
        size = _size(var, value)
        run.chunk_env = dataclasses.replace(run.chunk_env, **{field_name: size})
        return EnvEffect(var, value, "applied", f"{what} {size} B (engine.chunking.ChunkEnv)")

    return effect


# The variables that bound the communicator's channels -> engine.chunking.ChannelEnv's field and what it bounds
# (src/graph/connect.cc:492-506 ncclTopoPostset; src/transport/nvls.cc:234-235; tuner.nccl_graph.bounded_channels).
CHANNEL_VARS = {
    "NCCL_MIN_NCHANNELS": ("min_nchannels", "at least", "comm->nChannels", "copies of its first channels; NVLS "
                                                                           "channels unchanged"),
    "NCCL_MAX_NCHANNELS": ("max_nchannels", "at most", "comm->nChannels", "NCCL runs its first channels; NVLS "
                                                                          "channels unchanged"),
    # the legacy names, read first and overridden by the new ones (v2.30.7-1 src/graph/connect.cc:327-360)
    "NCCL_MIN_NRINGS": ("min_nchannels", "at least", "comm->nChannels", "NCCL_MIN_NCHANNELS's legacy name: copies of "
                                                                        "its first channels; NVLS channels unchanged"),
    "NCCL_MAX_NRINGS": ("max_nchannels", "at most", "comm->nChannels", "NCCL_MAX_NCHANNELS's legacy name: NCCL runs "
                                                                       "its first channels; NVLS channels unchanged"),
    "NCCL_MIN_CTAS": ("min_ctas", "at least", "comm->nChannels and the NVLS channels", "config minCTAs, NCCL 2.17+"),
    "NCCL_MAX_CTAS": ("max_ctas", "at most", "comm->nChannels and the NVLS channels", "config maxCTAs, NCCL 2.17+"),
}


def _channel_bound(run: RunSetup, var: str, value: str) -> EnvEffect:
    """A channel bound, read as NCCL reads an integer parameter (src/misc/param.cc: strtoll, base auto)."""
    field_name, side, what, how = CHANNEL_VARS[var]
    n = c_integer(value)
    if n is None:
        raise FabricsimError(f"{var}={value!r} is not a whole number of channels: give a count, e.g. {var}=4")
    if n == 0 and var in ("NCCL_MIN_NCHANNELS", "NCCL_MIN_NRINGS"):
        return EnvEffect(var, value, "no effect", "0 is NCCL's default (no minimum, src/graph/connect.cc:335)")
    if n < 1:
        raise FabricsimError(f"{var}={value}: a communicator runs at least 1 channel (NCCL ignores or raises a count "
                             f"below 1): give {var}=1 or more, or unset it")
    gate = "cta config" if var.endswith("_CTAS") else "nchannels env"
    rel = nccl_versions.release(run.nccl_version)
    if var.endswith("_NRINGS"):
        new_name = var.replace("NRINGS", "NCHANNELS")
        if getattr(run.chunk_env.channels, field_name) is not None:  # names are read in order: the new one came first
            return EnvEffect(var, value, "no effect", f"{new_name}, set too, overrides it (src/graph/connect.cc:336)")
        if rel.get(gate) is None:
            return EnvEffect(var, value, "not modelled", f"{rel.label} bounds its rings in src/misc/rings.cc, before "
                                                         "the channel bounds fabricsim follows (NCCL 2.5.6)")
    if rel.get(gate) is None:  # the release does not read it (the tuner leaves its bounds open there)
        since = next(r.since for r in nccl_versions.RULES if r.setting == gate)
        return EnvEffect(var, value, "no effect", f"{rel.label} does not read {var} (NCCL "
                                                  f"{'.'.join(map(str, since))} and newer do)")
    run.chunk_env = dataclasses.replace(run.chunk_env, channels=dataclasses.replace(run.chunk_env.channels,
                                                                                    **{field_name: n}))
    most = int(rel.get("max channels"))  # MAXCHANNELS of the run's release (32 before 2.25.1)
    top = f" (NCCL caps it at MAXCHANNELS, {most})" if n > most else ""
    return EnvEffect(var, value, "applied", f"{what} {side} {n}{top}: {how} (engine.chunking.ChannelEnv)")


def _check_channels(run: RunSetup) -> None:
    """The CTA bounds together: NCCL drops a minimum above the maximum to it (src/init.cc:2190-2194), which is
    what a run setting both cannot have meant. (NCCL_MIN_NCHANNELS above NCCL_MAX_NCHANNELS is NCCL's own way of
    copying the first channels, src/graph/connect.cc:492-493, and is honoured.)"""
    ch = run.chunk_env.channels
    if ch.min_ctas is not None and ch.max_ctas is not None and ch.min_ctas > ch.max_ctas:
        raise FabricsimError(f"NCCL_MIN_CTAS={ch.min_ctas} is above NCCL_MAX_CTAS={ch.max_ctas} (NCCL would lower the "
                             f"minimum to {ch.max_ctas}): give NCCL_MIN_CTAS at most NCCL_MAX_CTAS")


def sharp_switches(spec: ClusterSpec) -> bool:
    """Whether the cluster's leaf switches reduce in the network (IB SHARP): what CollNet needs (hardware.switches)."""
    sw = hardware.get_switch(spec.leaf_switch) if spec.leaf_switch else None
    return bool(spec.fabric == "infiniband" and sw and sw.reduction.startswith("sharp"))


def _nvls_enable(run: RunSetup, var: str, value: str) -> EnvEffect:
    # NCCL_NVLS_ENABLE: 0 off, 1 on, 2 (default) on where the GPU reports multicast (src/transport/nvls.cc:159,
    # 248-276 ncclNvlsInit); without NVLS support the NVLS graph and algorithms are gone (src/init.cc:1453)
    v = value.strip()
    if v not in ("0", "1", "2"):
        raise FabricsimError(f"{var}={value!r}: give 0 (NVLS off), 1 (on) or 2 (on where the GPUs support it, NCCL's "
                             "default)")
    if v != "0":
        return EnvEffect(var, value, "no effect", f"NVLS where the cluster file has it (nvls {str(run.spec.nvls).lower()})")
    if not run.spec.nvls:
        return EnvEffect(var, value, "no effect", "the cluster has no NVLS (nvls false)")
    release = nccl_versions.release(run.nccl_version)
    if not release.has_algorithm("nvls"):
        return EnvEffect(var, value, "no effect", f"{release.label} has no NVLS (NCCL 2.17 and newer do)")
    run.spec = dataclasses.replace(run.spec, nvls=False)
    return EnvEffect(var, value, "applied", "NVLS and NVLSTree out of the candidates: nvls false")


def _collnet_enable(run: RunSetup, var: str, value: str) -> EnvEffect:
    # NCCL_COLLNET_ENABLE: config collnetEnable, 0 by default, any value but 0 or 1 read as 0 (src/init.cc:2146-2157,
    # 2201-2204, 2419); CollNet needs the network's collNetSupport (init.cc:1164-1167): IB SHARP switches here
    on = c_integer(value)
    if on not in (0, 1):
        raise FabricsimError(f"{var}={value!r}: give 0 (CollNet off, NCCL's default) or 1 (on, where the fabric's "
                             "switches reduce: IB SHARP)")
    s = run.spec
    if on and not sharp_switches(s):
        return EnvEffect(var, value, "no effect", "the fabric has no SHARP switches: NCCL finds no CollNet support")
    if bool(on) == s.sharp:
        return EnvEffect(var, value, "no effect", "the cluster file has SHARP on" if on else "0 is NCCL's default")
    run.spec = dataclasses.replace(s, sharp=bool(on))
    return EnvEffect(var, value, "applied", f"CollNetDirect and CollNetChain {'among' if on else 'out of'} the "
                                            f"candidates: sharp {str(bool(on)).lower()}")


def _gdr_c2c(run: RunSetup, var: str, value: str) -> EnvEffect:
    # NCCL_NET_GDR_C2C: GPUDirect RDMA for a GPU that reaches its NIC through its CPU over C2C (Grace), with the
    # release's default (tuner.nccl_versions 'net gdr c2c default'); off, such a GPU's NIC is at PHB, above
    # NCCL_NET_GDR_LEVEL's PXB, and GPUDirect RDMA is off
    release = nccl_versions.release(run.nccl_version)
    default = release.get("net gdr c2c default")
    if default is None:
        return EnvEffect(var, value, "no effect", f"{release.label} does not read it (NCCL 2.26 and newer do)")
    if value.strip() == default:
        return EnvEffect(var, value, "no effect", f"{default} is {release.label}'s default")
    if value.strip() == "1":
        return EnvEffect(var, value, "cluster file", f"GPUDirect RDMA through C2C on ({release.label}'s default is 0): "
                                                     f"the cluster file's gpudirect says whether the run has it")
    return EnvEffect(var, value, "not modelled", "GPUDirect RDMA through C2C disabled is not modelled")


def _p2p_chunksize(run: RunSetup, var: str, value: str) -> EnvEffect:
    if run.collective in ("sendrecv", "alltoall"):
        return _chunk_size("p2p_net_chunk", "point-to-point network messages of")(run, var, value)
    return EnvEffect(var, value, "no effect", f"it sizes send/recv chunks; {run.collective} is a collective")


# aws-ofi-nccl releases whose tuner returns without choosing on communicators of at most this many NCCL nodes,
# leaving NCCL's internal tuning in place: v1.9.0-aws .. v1.9.2-aws src/tuner/nccl_ofi_tuner.c:60-62
# (nccl_ofi_tuner_get_coll_info: 'Skip runs smaller than 2 nodes and fallback to NCCL's internal tunings',
# `if (dims.num_nodes <= 2) return ncclSuccess;`); v1.10.0-aws drops the rule.
OFI_TUNER_SKIPS_NODES: dict[tuple[int, ...], int] = {(1, 9, 0): 2, (1, 9, 1): 2, (1, 9, 2): 2}
_OFI_VERSION = re.compile(r"NET/OFI Initializing aws-ofi-nccl (\d+)\.(\d+)\.(\d+)")


def tuner_plugin_skips(log_text: str, spec: ClusterSpec) -> str:
    """Why a tuner plugin the log loaded leaves this run to NCCL's internal tuning ('' where it does not say so): an
    aws-ofi-nccl release (its 'Initializing aws-ofi-nccl X.Y.Z' line) whose tuner skips this few NCCL nodes."""
    m = _OFI_VERSION.search(log_text)
    version = tuple(int(x) for x in m.groups()) if m else ()
    nccl_nodes = -(-spec.nodes * spec.gpus_per_node // spec.domain_size)  # NCCL's nNodes: one per NVLink domain
    skip = OFI_TUNER_SKIPS_NODES.get(version)
    if skip is None or nccl_nodes > skip:
        return ""
    return (f"aws-ofi-nccl {'.'.join(map(str, version))}'s tuner leaves communicators of {skip} nodes or fewer to "
            f"NCCL's internal tuning (src/tuner/nccl_ofi_tuner.c:60-62); this run has {nccl_nodes}")


def _tuner_plugin(run: RunSetup, var: str, value: str) -> EnvEffect:
    # NCCL falls back to its internal tuner when the plugin lacks the symbols this NCCL wants, and says so.
    if "using internal tuner instead" in run.log_text:
        return EnvEffect(var, value, "no effect", "the log says the plugin did not load ('using internal tuner instead')")
    skipped = tuner_plugin_skips(run.log_text, run.spec)
    if skipped:
        return EnvEffect(var, value, "no effect", skipped)
    return EnvEffect(var, value, "not modelled", "the plugin's algorithm/protocol choices; fabricsim's tuner picks instead")


# NCCL environment variables the calibration logs set -> how a prediction honours them. Defaults are NCCL's
# (NCCL user guide, "Environment Variables", docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html;
# buffer and chunk sizes: engine.chunking.ChunkEnv; NCCL_NET_GDR_C2C: src/graph/paths.cc). A log's own
# 'NCCL_X set by environment to V' lines (src/misc/param.cc) join the index's env: what NCCL says it read, which
# includes what a network plugin set before NCCL read it (aws-ofi-nccl's NVLS chunk sizes, src/platform-aws.c).
ENV: dict[str, Callable[[RunSetup, str, str], EnvEffect]] = {
    "NCCL_P2P_DISABLE": _p2p_disable,
    "NCCL_ALGO": _algo,
    "NCCL_PROTO": _proto,
    "NCCL_BUFFSIZE": _chunk_size("buffsize", "Simple buffer of"),
    "NCCL_NVLS_CHUNKSIZE": _chunk_size("nvls_chunk", "NVLS chunks of"),
    "NCCL_NVLSTREE_MAX_CHUNKSIZE": _chunk_size("nvls_tree_max_chunk", "NVLSTree chunks of at most"),
    # 0: no flush (a read of the received data from the GPU) after GPUDirect RDMA receives; the engine charges none
    # (src/transport/net.cc recvProxyProgress; aws-ofi-nccl sets it on Hopper, src/platform-aws.c)
    "NCCL_NET_FORCE_FLUSH": _default_is("0", "a GPUDirect RDMA flush after every network receive is not modelled"),
    "NCCL_TOPO_FILE": _fixed("cluster file", "the topology NCCL was given is the cluster file's (the XML is not read)"),
    "NCCL_P2P_NET_CHUNKSIZE": _p2p_chunksize,
    **{var: _channel_bound for var in CHANNEL_VARS},
    "NCCL_NVLS_ENABLE": _nvls_enable,
    "NCCL_COLLNET_ENABLE": _collnet_enable,
    "NCCL_TUNER_PLUGIN": _tuner_plugin,
    "NCCL_DEBUG": _fixed("no effect", "logging only"),
    "NCCL_CUMEM_ENABLE": _fixed("no effect", "how buffers are allocated (cuMem API), not how they move"),
    "NCCL_IB_QPS_PER_CONNECTION": _default_is("1", "several queue pairs per connection are not modelled"),
    "NCCL_NET_GDR_C2C": _gdr_c2c,
    "NCCL_MNNVL_ENABLE": _fixed("cluster file", "the cluster file's NVLink domain spans the trays of a rack"),
    "NCCL_IB_HCA": _fixed("cluster file", "the cluster file lists the compute NICs the run used"),
    "NCCL_GPUDIRECTTCPX_FORCE_ACK": _fixed("not modelled", "the TCPX plugin's acknowledgement setting (the cluster "
                                                           "file's transport is tcpx; its ACK timing is not modelled)"),
}


def honoured(env: Mapping[str, str]) -> tuple[dict[str, str], tuple[tuple[str, str], ...]]:
    """`env` split into the variables `ENV` knows (name -> value) and the others, (name, value) in name order: a log
    may set anything, and what fabricsim cannot honour is said, not an error."""
    known = {k: v for k, v in env.items() if k in ENV}
    return known, tuple((k, v) for k, v in sorted(env.items()) if k not in ENV)


def environment(run: RunSetup, env: Mapping[str, str]) -> tuple[EnvEffect, ...]:
    """Apply `env` (NCCL variable -> the text the run set) to `run`, in name order; one effect per variable."""
    out = []
    for var in sorted(env):
        if var not in ENV:
            raise FabricsimError(f"{var}={env[var]} is not an NCCL variable fabricsim knows how to honour: give one of "
                                 f"{', '.join(sorted(ENV))} (fabricsim.reports.nccl_env.ENV says what each changes)")
        if not isinstance(env[var], str):
            raise FabricsimError(f"env {var} is {env[var]!r}: give the value as the text the run set")
        out.append(ENV[var](run, var, env[var]))
    _check_channels(run)
    return tuple(out)
