"""The causes the doctor tests: one rule each, with its evidence test on the log and how its effect is computed.

A rule looks at the log (its INFO lines, environment, version, table) and the cluster, and returns hypotheses:
the evidence state ('shown': the log says it; 'not shown': the log says nothing either way; 'ruled out': the log
contradicts it; 'in the prediction': the prediction already has it) with the quoted lines, and the effect: a case to
re-predict with the cause applied (a changed cluster field, an NCCL variable as validation.logs honours it, a forced
algorithm) or, where no public knob exists, an estimate from a documented figure, said as such.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np
from dataclasses import dataclass, replace

from fabricsim import hardware
from fabricsim.diagnosis.facts import Facts
from fabricsim.diagnosis.shortfall import SizeCheck
from fabricsim.errors import FabricsimError
from fabricsim.reports.nccl_env import CHANNEL_VARS, tuner_plugin_skips
from fabricsim.topology import DeviceKind, Topology
from fabricsim.topology.spec import ClusterSpec
from fabricsim.topology.variants import with_link_capacity
from fabricsim.validation.logs import LogCase
from fabricsim.vocab import NCCL_ALGO_NAMES, NCCL_PROTO_NAMES

SHOWN, NOT_SHOWN, RULED_OUT, IN_PREDICTION = "shown", "not shown", "ruled out", "in the prediction"


@dataclass(frozen=True)
class Effect:
    """How the times with the cause applied are found: re-predicting `case` (on `topology(built cluster)` where
    given: a what-if variant from fabricsim.topology.variants), or `per_size` (an estimate from the predicted row)."""

    how: str
    case: LogCase | None = None
    per_size: Callable[[SizeCheck], float] | None = None
    only: frozenset[int] | None = None  # the sizes it applies to (None: all); others keep the predicted time
    topology: Callable[[Topology], Topology] | None = None  # with `case`: predict on this variant of its cluster


@dataclass(frozen=True)
class Hypothesis:
    """One candidate cause: what the log says about it, and its effect (None: not computable, `why` says why)."""

    rule: str
    title: str
    state: str
    evidence: tuple[str, ...]
    effect: Effect | None
    why: str = ""


@dataclass(frozen=True)
class Context:
    """What every rule may read."""

    facts: Facts
    case: LogCase  # the baseline prediction's case (the environment validation.logs honours applied)
    checks: tuple[SizeCheck, ...]  # the short sizes the rules are asked about
    recase: Callable[[dict[str, str]], LogCase]  # the baseline case with more NCCL variables set
    sizes: tuple[SizeCheck, ...] = ()  # every size of the log

    @property
    def spec(self) -> ClusterSpec:
        return self.case.spec

    @property
    def domains(self) -> int:
        """NVLink domains (NCCL nodes) the ranks span: above 1, traffic crosses the network."""
        return len({r // self.spec.domain_size for r in self.case.ranks})

    @property
    def networked(self) -> bool:
        return self.domains > 1 and self.spec.fabric != "none"

    def variant(self, how: str, **fields) -> Effect | str:
        """The baseline case on the cluster with `fields` changed; a spec the builder refuses is the reason why not."""
        try:
            return Effect(how, replace(self.case, spec=replace(self.spec, **fields)))
        except FabricsimError as err:
            return f"the cluster with {how.removeprefix('re-predicted with ')} cannot be built: {err}"


def _hyp(rule: str, title: str, state: str, evidence, effect: Effect | str | None, why: str = "") -> Hypothesis:
    if isinstance(effect, str):
        return Hypothesis(rule, title, state, tuple(evidence), None, effect)
    return Hypothesis(rule, title, state, tuple(evidence), effect, why)


def _q(facts: Facts, *kinds: str, first: bool = False) -> list[str]:
    """The quoted lines of these kinds (first: only the first line of each kind)."""
    return [str(q) for k in kinds for q in facts.quotes(k)[:1 if first else None]]


# --- GPUDirect RDMA ---------------------------------------------------------------------------------------------

# NCCL_NET_GDR_LEVEL=LOC (or 0) never uses GPUDirect RDMA (NCCL user guide, Environment Variables).
_GDR_OFF_LEVELS = ("LOC", "0")


def gpudirect(ctx: Context) -> list[Hypothesis]:
    """GPUDirect RDMA not used: 'via NET/.../GDRDMA' missing from the channel lines, 'GDR 0', NCCL_NET_GDR_LEVEL=LOC."""
    if not ctx.networked:
        return []
    title = "GPUDirect RDMA not used (network data staged through host memory)"
    f = ctx.facts
    if not ctx.spec.gpudirect:
        return [_hyp("gpudirect", title, IN_PREDICTION, ["the cluster has gpudirect: false"], None)]
    shown = _q(f, "net_host") + [str(q) for q in f.quotes("ring_gdr") if q.text.endswith("GDR 0")]
    level = f.env.get("NCCL_NET_GDR_LEVEL", "").upper()
    if level in _GDR_OFF_LEVELS:
        shown.append(f.env_quote("NCCL_NET_GDR_LEVEL"))
    if shown:
        state = SHOWN
    elif f.quotes("net_gdr") or any(f.info.ring_gdr):
        state, shown = RULED_OUT, _q(f, "net_gdr") or [str(q) for q in f.quotes("ring_gdr")]
    else:
        state = NOT_SHOWN
    return [_hyp("gpudirect", title, state, shown, ctx.variant("re-predicted with gpudirect: false", gpudirect=False))]


# --- NICs in use ------------------------------------------------------------------------------------------------

def nics_in_use(ctx: Context) -> list[Hypothesis]:
    """One NIC of several in use: the NET devices the channels use ('via NET/IB/k') vs those NCCL lists, or an
    NCCL_IB_HCA list naming fewer NICs than the node has."""
    if not ctx.networked or ctx.spec.nics_per_node < 2:
        return []
    f = ctx.facts
    title = "fewer NICs in use than the node has"
    listed = len(f.info.ib) or len(f.info.ofi_groups) or (f.info.ofi[1] if f.info.ofi else 0)
    used = max((len(devs) for devs in f.info.net_devs.values()), default=0)
    hca = f.env.get("NCCL_IB_HCA", "")
    named = [x for x in hca.lstrip("=").split(",") if x] if hca and not hca.startswith("^") else []
    if used and listed and used < listed:
        k, state = used, SHOWN
        evidence = _q(f, "net") + [f"the channel lines use {used} of the {listed} NET devices "
                                   f"({', '.join(map(str, sorted(next(iter(f.info.net_devs.values())))))})"]
        evidence += _q(f, "net_gdr", "net_host")[:1]
    elif named and len(named) < ctx.spec.net_devices:
        k, state, evidence = len(named), SHOWN, [f.env_quote("NCCL_IB_HCA")]
    elif used and listed:
        return [_hyp("nics", title, RULED_OUT, _q(f, "net")[:1] + [f"the channel lines use all {listed} NET devices"],
                     None)]
    else:
        return []
    devices = ctx.spec.net_devices  # NCCL's NET devices (a card's ports fused, EFA's NIC groups)
    if k >= devices:
        return [_hyp("nics", title, state, evidence, None, f"the cluster already has {devices} NET devices "
                                                          f"per node, not more than the {k} in use")]
    cards = k * (ctx.spec.nics_per_node // devices)
    n = ctx.spec.gpus_per_node
    if cards % n and n % cards:  # the cards a cluster file can spread evenly over its GPUs, at most those in use
        cards = max(d for d in range(1, cards + 1) if d % n == 0 or n % d == 0)
    return [_hyp("nics", title, state, evidence, ctx.variant(f"re-predicted with nics_per_node: {cards}",
                                                             nics_per_node=cards))]


# --- channels ---------------------------------------------------------------------------------------------------

def _bandwidth_sizes(ctx: Context) -> Callable[[SizeCheck], bool]:
    """Sizes whose prediction runs at half its peak busbw or more (bandwidth-dominated: a cap on the rate shows)."""
    peak = max((c.predicted_busbw for c in ctx.sizes or ctx.checks), default=0.0)
    return lambda c: c.predicted_busbw >= 0.5 * peak


def _channel_estimate(ctx: Context, have: int, algos: tuple[str, ...]) -> Callable[[SizeCheck], float]:
    big = _bandwidth_sizes(ctx)

    def time(c: SizeCheck) -> float:
        if c.algo in algos and big(c) and c.channels > have:
            return c.predicted_time_s * c.channels / have
        return c.predicted_time_s

    return time


_CHANNEL_ESTIMATE = ("estimated: busbw scaled by channels / predicted channels at the sizes the prediction runs at "
                     ">= half its peak (NCCL runs one thread block per channel; an upper bound on the loss)")


def channels(ctx: Context) -> list[Hypothesis]:
    """Fewer channels than the topology allows: NCCL's 'N coll channels' below the channels fabricsim's graph search
    gives the picked Ring/Tree algorithm. (A run's NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS bound the prediction itself,
    reports.nccl_env.CHANNEL_VARS.)"""
    f = ctx.facts
    title = "fewer channels than the topology allows"
    picked = [c.channels for c in ctx.checks if c.algo in ("ring", "tree")]
    if not picked:
        return []
    bounds = [f.env_quote(e.var) for e in ctx.case.env if e.var in CHANNEL_VARS and e.status == "applied"]
    if bounds:
        return [_hyp("channels", title, IN_PREDICTION, bounds, None)]
    want = max(picked)
    caps = [(max(f.info.coll), _q(f, "channels"))] if f.info.coll else []
    if not caps:
        return [_hyp("channels", title, NOT_SHOWN, [], None, "the log does not print its channel count "
                                                              "(NCCL_DEBUG=INFO's 'N coll channels')")]
    have, evidence = min(caps, key=lambda c: c[0])
    if have >= want:
        return [_hyp("channels", title, RULED_OUT, evidence + [f"fabricsim's Ring/Tree picks run {want} channels"], None)]
    return [_hyp("channels", title, SHOWN, evidence + [f"fabricsim's Ring/Tree picks run {want} channels"],
                 Effect(_CHANNEL_ESTIMATE, per_size=_channel_estimate(ctx, have, ("ring", "tree"))))]


# --- PCIe -------------------------------------------------------------------------------------------------------

# Per-lane data rate after line encoding by generation, from GT/s (PCI-SIG base specifications, docs/SOURCES.md
# 'PCIe rates'): Gen1/2 8b/10b, Gen3-5 128b/130b, Gen6 242/256 FLIT.
_LANE_RATE = {2.5: 2.5 * 0.8, 5.0: 5.0 * 0.8, 8.0: 8 * 128 / 130, 16.0: 16 * 128 / 130, 32.0: 32 * 128 / 130,
              64.0: 64 * 242 / 256}
_GEN_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}


def _pcie_bound(ctx: Context) -> bool:
    """Whether GPU-to-GPU data crosses PCIe: a PCIe-only node, or P2P off (host-staged)."""
    return ctx.spec.scaleup == "pcie" or not ctx.spec.p2p


def gpu_pcie_links(topo: Topology) -> np.ndarray:
    """Mask of the PCIe links with a GPU at one end (the GPUs' own slots)."""
    pcie = np.array([t.startswith("pcie") for t in topo.techs])[topo.link_tech]
    gpu = (topo.dev_kind[topo.link_src] == DeviceKind.GPU) | (topo.dev_kind[topo.link_dst] == DeviceKind.GPU)
    return pcie & gpu


def _slower_pcie(factor: float) -> Callable[[Topology], Topology]:
    return lambda topo: with_link_capacity(topo, gpu_pcie_links(topo), factor)


def pcie(ctx: Context) -> list[Hypothesis]:
    """PCIe running below its generation or width: an accompanying topology dump (NCCL XML link_speed/link_width)
    shows the GPUs' links below the catalog part's x16 link. Without a dump, half and quarter rate are tested where
    GPU-to-GPU data crosses PCIe. The effect: the GPUs' PCIe links at that fraction of their capacity."""
    gpu = hardware.get_gpu(ctx.spec.gpu)
    gen = int(gpu.pcie_link.removeprefix("pcie"))
    nominal = _LANE_RATE[_GEN_GTS[gen]] * 16
    title = "PCIe running below its generation or width"
    links = [(g.pcie_gts, g.pcie_width or 16) for m in ctx.facts.machines for g in m.gpus if g.pcie_gts]
    if links:
        worst = min(links, key=lambda x: _LANE_RATE.get(x[0], x[0]) * x[1])
        factor = _LANE_RATE.get(worst[0], worst[0]) * worst[1] / nominal
        said = f"the topology dump shows GPU links at {worst[0]:g} GT/s x{worst[1]} (the {gpu.name} has Gen{gen} x16)"
        if factor >= 0.99:
            return [_hyp("pcie", title, RULED_OUT, [said], None)]
        return [_hyp("pcie", title, SHOWN, [said],
                     Effect(f"re-predicted with the GPUs' PCIe links at {factor:.2f} of their capacity",
                            ctx.case, topology=_slower_pcie(factor)))]
    if not _pcie_bound(ctx):
        return []
    why = ("the log does not show the PCIe links; check `nvidia-smi -q -d PCIE` (Link Width / Generation, current vs "
           "max) or pass an NCCL_TOPO_DUMP_FILE dump with --topo")
    return [_hyp("pcie", f"{title} ({what})", NOT_SHOWN, [why],
                 Effect(f"re-predicted with the GPUs' PCIe links at {factor:g} of their capacity ({what})", ctx.case,
                        topology=_slower_pcie(factor)))
            for factor, what in ((0.5, f"x8, or Gen{gen - 1} x16"), (0.25, "x4"))]


# --- NVLS -------------------------------------------------------------------------------------------------------

def nvls(ctx: Context) -> list[Hypothesis]:
    """NVLS off or unsupported where the prediction picks NVLS/NVLSTree: 'NVLS multicast support is not available',
    '0 nvls channels' (NCCL_NVLS_ENABLE=0 takes NVLS out of the prediction itself, reports.nccl_env)."""
    f = ctx.facts
    title = "NVLS off or unsupported"
    if any(e.var == "NCCL_NVLS_ENABLE" and e.status == "applied" for e in ctx.case.env):
        return [_hyp("nvls", title, IN_PREDICTION, [f.env_quote("NCCL_NVLS_ENABLE")], None)]
    if not ctx.spec.nvls or not any(c.algo.startswith("nvls") for c in ctx.checks):
        return []
    shown = _q(f, "nvls_not")
    if f.info.nvls_channels and max(f.info.nvls_channels) == 0:
        shown += _q(f, "channels")
    if shown:
        state = SHOWN
    elif f.quotes("nvls") and (not f.info.nvls_channels or max(f.info.nvls_channels) > 0):
        state, shown = RULED_OUT, _q(f, "nvls")[:1] + _q(f, "channels")[:1]
    else:
        state = NOT_SHOWN
    return [_hyp("nvls", title, state, shown, ctx.variant("re-predicted with nvls: false", nvls=False))]


# --- host-staged intra-node path -----------------------------------------------------------------------------------

def host_staged(ctx: Context) -> list[Hypothesis]:
    """GPU-to-GPU traffic through host memory: 'via SHM' channel lines, NCCL_P2P_DISABLE=1 or NCCL_P2P_LEVEL=LOC."""
    spec = ctx.spec
    title = "host-staged GPU-to-GPU path (SHM: P2P off or not possible)"
    per_node = Counter(r // spec.gpus_per_node for r in ctx.case.ranks)
    if max(per_node.values()) < 2:
        return []  # one GPU per node: no intra-node transfer
    f = ctx.facts
    if not spec.p2p:
        applied = [e for e in ctx.case.env if e.var == "NCCL_P2P_DISABLE" and e.status == "applied"]
        why = f.env_quote("NCCL_P2P_DISABLE") if applied else "the cluster has p2p: false"
        return [_hyp("host", title, IN_PREDICTION, [why], None)]
    shown = _q(f, "local_shm")
    level = f.env.get("NCCL_P2P_LEVEL", "").upper()
    if level in ("LOC", "0"):
        shown.append(f.env_quote("NCCL_P2P_LEVEL"))
    if f.env.get("NCCL_P2P_DISABLE", "0").strip() not in ("0", ""):
        shown.append(f.env_quote("NCCL_P2P_DISABLE"))
    if shown:
        state = SHOWN
    elif f.quotes("local_p2p"):
        state, shown = RULED_OUT, _q(f, "local_p2p")[:2]
    else:
        state = NOT_SHOWN
    try:
        effect: Effect | str = Effect("re-predicted with NCCL_P2P_DISABLE=1 (validation.logs: scaleup pcie, p2p false)",
                                      ctx.recase({"NCCL_P2P_DISABLE": "1"}))
    except FabricsimError as err:
        effect = f"P2P off cannot be applied to this cluster: {err}"
    return [_hyp("host", title, state, shown, effect)]


# --- ECMP -------------------------------------------------------------------------------------------------------

def ecmp(ctx: Context) -> list[Hypothesis]:
    """ECMP collisions: flows hashed onto equal-cost paths (Ethernet ECMP; NCCL enables adaptive routing only on
    InfiniBand links, src/transport/net_ib init.cc) collide on a link and run at 1/2 or 1/k of the NIC rate."""
    if not ctx.networked:
        return []
    f = ctx.facts
    spec = ctx.spec
    title = "ECMP collisions (flows hashed onto the same fabric link)"
    roce = [str(q) for q in f.quotes("net") if "/RoCE" in q.text]
    evidence = roce or ([f"the cluster's fabric is {spec.fabric} (Ethernet: hashed ECMP)"] if spec.fabric == "roce" else [])
    state = SHOWN if evidence else NOT_SHOWN
    if spec.routing == "ecmp":
        return [_hyp("ecmp", title, IN_PREDICTION, evidence + ["the cluster has routing: ecmp: the prediction hashes "
                                                               "each flow onto one path"], None)]
    return [_hyp("ecmp", title, state, evidence, ctx.variant("re-predicted with routing: ecmp", routing="ecmp"))]


# --- software transports ------------------------------------------------------------------------------------------

# aws-ofi-nccl's model tuner prices each network step of an EFA collective on p4d/p5 at 20 us, plus 3 us for
# Simple's completion (aws/aws-ofi-nccl src/tuner/nccl_ofi_model.cpp:13-44, include/nccl_ofi_param.h:285-291:
# "~2usec cost in the device and ~1usec cost to write that completion up to the host"). Its network steps: Ring
# 2 x nodes, Tree 2 x log2(nodes) (same file, 46-120).
EFA_STEP_S = 20e-6
EFA_SIMPLE_S = 3e-6


def _transport(f: Facts) -> tuple[str, list[str]]:
    if f.info.ofi or "Libfabric" in f.info.network:
        return "efa", _q(f, "network", "net", first=True)
    if any(v.startswith("NCCL_GPUDIRECTTCPX") for v in f.env) or "TCPX" in f.info.network.upper():
        var = next((v for v in sorted(f.env) if v.startswith("NCCL_GPUDIRECTTCPX")), "")
        return "tcpx", ([f.env_quote(var)] if var else []) + _q(f, "network")[:1]
    if f.info.socket or f.info.network == "Socket":
        return "socket", _q(f, "net", "network", first=True)
    return "", []


def _efa_steps(algo: str, collective: str, nodes: int) -> int:
    if algo in ("tree", "nvls_tree"):
        return 2 * max(1, math.ceil(math.log2(nodes)))
    return 2 * nodes if collective == "all_reduce" else nodes


def transport_floor(ctx: Context) -> list[Hypothesis]:
    """Small-message floor of a software transport: EFA through aws-ofi-nccl (documented per-step cost), TCP
    sockets or GPUDirect-TCPX (no published per-message cost: named with its evidence, effect not computed)."""
    if not ctx.networked:
        return []
    kind, evidence = _transport(ctx.facts)
    if not kind:
        return []
    names = {"efa": "EFA through aws-ofi-nccl", "tcpx": "GPUDirect-TCPX (TCP)", "socket": "TCP sockets (NET/Socket)"}
    title = f"per-message floor of a software transport: {names[kind]}"
    if kind == "efa" and ctx.spec.net_transport == "efa":  # the engine charges EFA's documented per-step cost
        return [_hyp("transport", title, IN_PREDICTION, evidence + ["the cluster has transport: efa"], None)]
    if kind == "efa":
        if ctx.facts.info.plugin_latency_us is not None:
            evidence = evidence + _q(ctx.facts, "plugin_latency")[:1]
        nodes, coll = ctx.domains, ctx.case.collective

        def time(c: SizeCheck) -> float:
            steps = _efa_steps(c.algo, coll, nodes)
            return c.predicted_time_s + steps * (EFA_STEP_S + (EFA_SIMPLE_S if c.proto == "simple" else 0.0))

        how = (f"estimated: + {EFA_STEP_S * 1e6:.0f} us per network step (+ {EFA_SIMPLE_S * 1e6:.0f} us with Simple), "
               "Ring 2 x nodes and Tree 2 x log2(nodes) steps (aws-ofi-nccl's model tuner, src/tuner/nccl_ofi_model.cpp)")
        return [_hyp("transport", title, SHOWN, evidence, Effect(how, per_size=time))]
    return [_hyp("transport", title, SHOWN, evidence, None, f"no published per-message cost for {names[kind]}: the "
                                                            "effect cannot be computed")]


# --- NCCL version defaults --------------------------------------------------------------------------------------

# Release notes (NVIDIA/nccl release commits): 2.17.1 NVLS (5d3ab08b), 2.18.1 NVLSTree (d97a32fa), 2.23.4 PAT
# (68b54236), 2.28.3 'max CTAs on Blackwell 32 -> 16' (f1308997).
_NVLS_SINCE, _NVLS_TREE_SINCE, _PAT_SINCE, _BLACKWELL_CTAS_SINCE = (2, 17), (2, 18), (2, 23), (2, 28)
_BLACKWELL_CTAS = 16


def version_defaults(ctx: Context) -> list[Hypothesis]:
    """A known NCCL-version default: the algorithms the run's NCCL lacks, or its channel cap, where the prediction
    relies on them. With the version unknown, an NCCL older than NVLS is tested as a possibility."""
    f = ctx.facts
    v = f.nccl_version
    said = [str(f.version_quote)] if f.version_quote else ([f"given: NCCL {f.version}"] if f.version else [])
    algos = {c.algo for c in ctx.checks}
    out = []

    def forbid(name: str, since: tuple[int, int], what: str) -> None:
        if not ctx.case.algos:
            how = f"re-predicted with NCCL_ALGO=^{NCCL_ALGO_NAMES[name]} ({what} arrived in NCCL {since[0]}.{since[1]})"
            out.append(_hyp("version", f"NCCL {f.version} has no {what}", SHOWN, said,
                            Effect(how, replace(ctx.case, algos=(f"^{name}",)))))

    if v is not None:
        if v < _NVLS_SINCE and algos & {"nvls", "nvls_tree"} and ctx.spec.nvls:
            out.append(_hyp("version", f"NCCL {f.version} has no NVLS", SHOWN, said,
                            ctx.variant(f"re-predicted with nvls: false (NVLS arrived in NCCL 2.17)", nvls=False)))
        elif v < _NVLS_TREE_SINCE and "nvls_tree" in algos:
            forbid("nvls_tree", _NVLS_TREE_SINCE, "NVLSTree")
        if v < _PAT_SINCE and "pat" in algos:
            forbid("pat", _PAT_SINCE, "PAT")
        wide = [c.channels for c in ctx.checks if c.algo in ("ring", "tree") and c.channels > _BLACKWELL_CTAS]
        if v >= _BLACKWELL_CTAS_SINCE and hardware.get_gpu(ctx.spec.gpu).arch == "blackwell" and wide:
            out.append(_hyp("version", f"NCCL {f.version} caps Blackwell at {_BLACKWELL_CTAS} channels (CTAs)", SHOWN,
                            said, Effect(_CHANNEL_ESTIMATE, per_size=_channel_estimate(ctx, _BLACKWELL_CTAS,
                                                                                       ("ring", "tree")))))
    elif algos & {"nvls", "nvls_tree"} and ctx.spec.nvls:
        out.append(_hyp("version", "an NCCL older than 2.17 (no NVLS)", NOT_SHOWN,
                        ["the log does not print its NCCL version"],
                        ctx.variant("re-predicted with nvls: false (NVLS arrived in NCCL 2.17)", nvls=False)))
    return out


# --- the algorithm NCCL chose ---------------------------------------------------------------------------------

_FUNC = {"all_reduce": "AllReduce", "all_gather": "AllGather", "reduce_scatter": "ReduceScatter",
         "broadcast": "Broadcast", "reduce": "Reduce"}
_ALGO_BY_NCCL = {v.lower(): k for k, v in NCCL_ALGO_NAMES.items()}
_PROTO_BY_NCCL = {v.lower(): k for k, v in NCCL_PROTO_NAMES.items()}


def algorithm_choice(ctx: Context) -> list[Hypothesis]:
    """The algorithm/protocol NCCL chose, where the log says (NCCL_DEBUG_SUBSYS=TUNING lines), against fabricsim's
    pick; a tuner plugin that loaded chose instead of NCCL's model (its choices are not in the log)."""
    f = ctx.facts
    func = _FUNC.get(ctx.case.collective, "")
    out = []
    groups: dict[tuple[str, str], list[SizeCheck]] = {}
    for c in ctx.checks:
        got = f.info.tuning.get((func, c.size_bytes)) or f.info.tuning.get(("", c.size_bytes))
        if got is None:
            continue
        algo, proto = _ALGO_BY_NCCL.get(got[0].lower(), ""), _PROTO_BY_NCCL.get(got[1].lower(), "")
        if algo and proto and (algo, proto) != (c.algo, c.proto):
            groups.setdefault((algo, proto), []).append(c)
    for (algo, proto), sizes in sorted(groups.items()):
        title = f"NCCL chose {NCCL_ALGO_NAMES[algo]}/{NCCL_PROTO_NAMES[proto]} where fabricsim picks another"
        picks = sorted({f'{c.algo}/{c.proto}' for c in sizes})
        evidence = _q(f, "tuning") + [f"fabricsim picks {', '.join(picks)} at those sizes"]
        case = replace(ctx.case, algos=(algo,), protos=(proto,))
        out.append(_hyp("algorithm", title, SHOWN, evidence,
                        Effect(f"re-predicted with NCCL_ALGO={NCCL_ALGO_NAMES[algo]} NCCL_PROTO={NCCL_PROTO_NAMES[proto]}"
                               " at those sizes", case, only=frozenset(c.size_bytes for c in sizes))))
    if f.info.tuner_plugin and not groups and not tuner_plugin_skips(f.text, ctx.spec):
        out.append(_hyp("algorithm", "a tuner plugin chose the algorithms (not NCCL's model)", SHOWN, _q(f, "tuner"),
                        None, "the plugin's choices are not in the log (NCCL_DEBUG_SUBSYS=TUNING prints them)"))
    return out


RULES: tuple[Callable[[Context], list[Hypothesis]], ...] = (
    gpudirect, nics_in_use, channels, pcie, nvls, host_staged, ecmp, transport_floor, version_defaults,
    algorithm_choice,
)
