"""One merged Machine -> the nearest faithful ClusterSpec, what was filled in, and what the spec cannot say.

Every field comes from the inputs where one states it; otherwise from the catalog or the preset built on
the same GPU (dgx-h100 for H100, ...), and that choice is an assumption printed to the user. What the
inputs state but a cluster file cannot express (several NICs per GPU, EFA, an uneven NIC layout, NVLink
bridges between some GPU pairs) is mapped to the closest spec and listed as a gap.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from fabricsim import hardware
from fabricsim.errors import FabricsimError
from fabricsim.importers.machine import PATH_TYPES, Machine, Nic, nic_key, nic_order
from fabricsim.topology.presets import PRESETS, preset_spec
from fabricsim.topology.spec import ClusterSpec

# PCIe generation by link speed per lane (PCI-SIG: Gen3 8 GT/s, Gen4 16, Gen5 32, Gen6 64).
_PCIE_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
_CONSUMER = ("RTX2080Ti", "RTX4090", "RTX5090")  # GeForce: no PCIe P2P (as the pcie-rtx presets)


@dataclass(frozen=True)
class Imported:
    """The cluster built from the inputs, the facts it rests on, and what had to be assumed or left out."""

    spec: ClusterSpec
    machine: Machine
    compute_nics: tuple[Nic, ...]
    assumptions: tuple[str, ...]
    gaps: tuple[str, ...]
    preset: str  # the preset on the same GPU the defaults came from ('' when none)


def matching_preset(gpu: str) -> str:
    """The single-node NVLink preset on this GPU (dgx-h100 for H100), else on a GPU of the same architecture
    and NVLinks (dgx-a100 for A100-40GB), else any preset on it; '' when none."""
    part = hardware.get_gpu(gpu)

    def kin(name: str) -> bool:
        other = hardware.get_gpu(preset_spec(name).gpu)
        return other.arch == part.arch and other.scaleup_links == part.scaleup_links
    for same in (lambda n: preset_spec(n).gpu == part.name, kin):
        names = [n for n in PRESETS if same(n)]
        scaled = [n for n in names if preset_spec(n).scaleup != "pcie" and preset_spec(n).nodes == 1]
        if scaled or names:
            return (scaled or names)[0]
    return ""


class _Notes:
    def __init__(self) -> None:
        self.assumed: list[str] = []
        self.gaps: list[str] = []


def links_per_gpu(m: Machine) -> dict[int, int]:
    """NVLinks each GPU has according to the inputs (to switches, to a fabric, or to peers)."""
    out: dict[int, int] = {}
    for g, _, c in m.nvswitch_links:
        out[g] = out.get(g, 0) + c
    if not out:
        out = {g: c for g, c in m.nvlink_fabric}
    if not out:
        for a, b, c in m.nvlinks:
            out[a] = out.get(a, 0) + c
            out[b] = out.get(b, 0) + c
    return out


def _gpu(m: Machine, given: str | None, notes: _Notes) -> str:
    named = sorted({g.model for g in m.gpus if g.model})
    if given:
        part = hardware.get_gpu(given).name
        if named and named != [part]:
            notes.assumed.append(f"GPU {part} from --gpu (the inputs say {', '.join(named)})")
        return part
    if len(named) > 1:
        raise FabricsimError(f"the inputs list several GPU models ({', '.join(named)}): a cluster file has one GPU "
                             "model; give files of one machine or pass --gpu")
    if named:
        return named[0]
    links = set(links_per_gpu(m).values())
    sms = {g.sm for g in m.gpus if g.sm}
    fabric = bool(m.nvswitch_links or m.nvlink_fabric)
    cands = [g for g in hardware.GPUS.values()
             if (not sms or round(g.compute_capability * 10) in sms)
             and (not links or g.scaleup_links in links)
             and not (fabric and g.name.endswith("PCIe"))]
    if not (sms or links) or not cands:
        raise FabricsimError("no input names the GPU model (the file has no <gpu sm=...>, no NVLink counts, no "
                             "nccl-tests device lines): pass --gpu NAME, e.g. --gpu H100 "
                             f"(catalog: {', '.join(hardware.GPUS)})")
    why = ", ".join(filter(None, [f"sm {'/'.join(map(str, sorted(sms)))}" if sms else "",
                                  f"{'/'.join(map(str, sorted(links)))} NVLinks per GPU" if links else ""]))
    others = [g.name for g in cands[1:]]
    notes.assumed.append(f"GPU {cands[0].name} from {why}" + (f" (also {', '.join(others)}: pass --gpu to choose)"
                                                              if others else ""))
    return cands[0].name


def _scaleup(m: Machine, gpu, n: int, preset: ClusterSpec | None, notes: _Notes) -> dict:
    """scaleup / domain / NVSwitch chips / NVLS from the NVLink facts, else from the preset on this GPU."""
    links = links_per_gpu(m)
    if links and set(links.values()) != {gpu.scaleup_links}:
        notes.gaps.append(f"the inputs give {'/'.join(map(str, sorted(set(links.values()))))} NVLinks per GPU, the "
                          f"catalog's {gpu.name} has {gpu.scaleup_links}: the cluster file takes the catalog's "
                          "(NVLinks per GPU is not a cluster field)")
    switched = bool(m.nvswitch_links or m.nvlink_fabric)
    if m.mnnvl and gpu.c2c_link:
        notes.assumed.append("MNNVL in the log: NVL72 racks of 72 GPUs (18 trays)")
        return dict(scaleup="nvl72", domain_size=72, nvswitch_chips=18, nvls=True if m.nvls is None else m.nvls)
    if switched:
        targets = {t for _, t, _ in m.nvswitch_links if not t.startswith("ffff")}
        if targets:
            chips = len(targets)
        else:
            chips = preset.nvswitch_chips if preset and preset.nvswitch_chips else 1
            notes.assumed.append(f"{chips} NVSwitch chips" + (f" (as {preset.name}): the inputs show the NVSwitch "
                                                              "fabric but not its chips" if preset else ""))
        return dict(scaleup="nvswitch", domain_size=n, nvswitch_chips=chips, nvls=_nvls(m, gpu, notes))
    if m.nvlinks:
        if n == 2 and len(m.nvlinks) == 1 or n == 8 and set(links.values()) == {gpu.scaleup_links} and gpu.scaleup_links in (4, 6):
            return dict(scaleup="nvlink-mesh", domain_size=n, nvswitch_chips=0, nvls=False)
        pairs = ", ".join(f"{a}-{b} x{c}" for a, b, c in m.nvlinks)
        notes.gaps.append(f"NVLinks between some GPU pairs only ({pairs}): the cluster file has NVSwitch, the DGX-1 "
                          "cube-mesh or a 2-GPU bridge; modelled as PCIe only")
        return dict(scaleup="pcie", domain_size=n, nvswitch_chips=0, nvls=False)
    if not gpu.scaleup_links:
        return dict(scaleup="pcie", domain_size=n, nvswitch_chips=0, nvls=False)
    if preset and preset.gpus_per_node == n and preset.scaleup in ("nvswitch", "nvlink-mesh"):
        notes.assumed.append(f"NVLink not in the inputs: {n} x {gpu.name} on {preset.scaleup}"
                             + (f" with {preset.nvswitch_chips} NVSwitch chips" if preset.nvswitch_chips else "")
                             + f", as preset {preset.name}")
        nvls = _nvls(m, gpu, notes) if preset.scaleup == "nvswitch" else False
        return dict(scaleup=preset.scaleup, domain_size=n, nvswitch_chips=preset.nvswitch_chips, nvls=nvls)
    notes.assumed.append(f"NVLink not in the inputs and no {n}-GPU preset on {gpu.name}: GPUs on PCIe only")
    return dict(scaleup="pcie", domain_size=n, nvswitch_chips=0, nvls=False)


def _nvls(m: Machine, gpu, notes: _Notes) -> bool:
    """NVLS where the log says; else where the NVSwitch generation reduces (NCCL_NVLS_ENABLE defaults to 2,
    'enable if supported', NCCL env docs)."""
    if m.nvls is not None:
        return m.nvls
    part = next((s for s in hardware.SWITCHES.values() if s.kind == "nvswitch" and s.port_link == gpu.scaleup_link),
                None)
    on = bool(part and part.reduction == "nvls")
    notes.assumed.append(f"NVLS {'on' if on else 'off'}: {part.name if part else 'no NVSwitch'} "
                         f"{'reduces in the switch' if on else 'has no NVLS'} and NCCL enables NVLS where supported")
    return on


def _best_path(m: Machine, key: str) -> str:
    kinds = [t for _, k, t in m.affinity if k == key]
    return min(kinds, key=PATH_TYPES.index) if kinds else ""


def _compute_nics(m: Machine, notes: _Notes) -> list[Nic]:
    """The NICs collectives use: those NCCL names in the log, else the active ones beside a GPU of the
    most common kind; the rest (front-end, storage) are left out, each with a note."""
    nics = list(m.nics)
    if not nics and m.net_nic_count:  # the network plugin counted its NICs without naming them
        return [Nic(name=f"{m.net_provider or 'net'}{k}", transport=m.net_provider) for k in range(m.net_nic_count)]
    if m.net_nics:
        wanted = set(m.net_nics)
        used = [n for n in nics if nic_key(n) in wanted or n.name in wanted]
        if len(used) == len(wanted):
            dropped = [nic_key(n) for n in nics if n not in used]
            if dropped:
                notes.assumed.append(f"NICs {', '.join(dropped)} left out: NCCL did not use them")
            return used
    down = [n for n in nics if n.active is False]
    if down:
        notes.assumed.append(f"NICs {', '.join(nic_key(n) for n in down)} left out: port not active")
    nics = [n for n in nics if n.active is not False]
    near = [n for n in nics if _best_path(m, nic_key(n)) in ("PIX", "PXB")]
    far = [nic_key(n) for n in nics if _best_path(m, nic_key(n)) in ("PHB", "NODE", "SYS")]
    if near and far:
        notes.assumed.append(f"NICs {', '.join(far)} left out: no GPU shares their PCIe switch (front-end or "
                             "storage NICs)")
        nics = [n for n in nics if nic_key(n) not in far]
    kinds = Counter((n.link_layer, n.gbps) for n in nics if n.gbps and n.link_layer)
    if len(kinds) > 1:
        (layer, gbps), _ = max(kinds.items(), key=lambda kv: (kv[1], kv[0][1]))
        other = [n for n in nics if n.gbps and n.link_layer and (n.link_layer, n.gbps) != (layer, gbps)]
        notes.assumed.append(f"NICs {', '.join(nic_key(n) + f' ({n.link_layer} {n.gbps:g} Gb/s)' for n in other)} left "
                             f"out: most NICs are {layer} {gbps:g} Gb/s")
        nics = [n for n in nics if n not in other]
    return sorted(nics, key=nic_order)


def _one(values, what: str, notes: _Notes):
    """The value all NICs share; mixed values: the most common, with a gap."""
    counts = Counter(v for v in values if v not in ("", 0, 0.0, None))
    if not counts:
        return None
    if len(counts) > 1:
        notes.gaps.append(f"NICs differ in {what} ({', '.join(f'{v}' for v in counts)}): the cluster file has one; "
                          f"took {counts.most_common(1)[0][0]}")
    return counts.most_common(1)[0][0]


def _network(m: Machine, gpu, n: int, preset: ClusterSpec | None, notes: _Notes) -> tuple[dict, list[Nic]]:
    nics = _compute_nics(m, notes)
    if not nics:
        if m.nodes > 1:
            raise FabricsimError(f"the job spans {m.nodes} nodes but no input lists a NIC: add ibstat or "
                                 "nvidia-smi topo -m output")
        return dict(nics_per_node=0, nic="", nic_gbps=0.0, fabric="none", leaf_switch="", spine_switch=""), []
    transport = _one([x.transport for x in nics], "transport", notes) or m.net_provider or \
        {"IB": "ib", "Socket": "socket"}.get(m.net, "")
    layer = _one([x.link_layer for x in nics], "link layer", notes) or \
        {"ib": "infiniband", "roce": "ethernet", "efa": "ethernet"}.get(transport, "")
    gbps = _one([x.gbps for x in nics], "rate", notes)
    model = _one([x.model for x in nics], "adapter", notes) or ""
    if not layer:
        layer = "infiniband" if not preset or preset.fabric != "roce" else "ethernet"
        notes.assumed.append(f"NIC link layer {layer}: no input says (as {preset.name if preset else 'DGX'})")
    if transport == "efa":
        notes.gaps.append("EFA (libfabric SRD over Ethernet) is modelled as RoCE: the cluster file has no EFA "
                          "transport, and the aws-ofi-nccl plugin's own per-message costs are not modelled")
    if transport == "socket":
        notes.gaps.append("NCCL used TCP sockets (NET/Socket), which the cluster file cannot express: modelled as "
                          "RoCE without GPUDirect, which overstates a socket transport")
    if not gbps:
        if model in ("cx5", "cx6", "cx7", "cx8"):
            gbps = hardware.get_link(hardware.get_nic(model).port_link).line_rate_gbps
            notes.assumed.append(f"NIC rate {gbps:g} Gb/s: the port rate of {model} (no input gives the rate)")
        elif preset and preset.nic_gbps:
            # more NICs per GPU than the preset: the preset's bandwidth per GPU spread over them (p5: 4 x 100G)
            ratio = (len(nics) / n) / (preset.nics_per_node / preset.gpus_per_node)
            gbps = preset.nic_gbps / ratio if ratio > 1 else preset.nic_gbps
            notes.assumed.append(f"NIC rate {gbps:g} Gb/s: " + (f"{preset.name}'s network bandwidth per GPU over "
                                 f"{len(nics) // n} NICs per GPU" if ratio > 1 else f"as {preset.name}")
                                 + " (no input gives the rate)")
        else:
            raise FabricsimError("no input gives the NIC rate: add ibstat output (Rate) or the NCCL topology XML "
                                 "(<net speed=...>)")
    count = len(nics)
    if count > n and count % n == 0:
        per = count // n
        try:
            (hardware.ib_link_for_speed if layer == "infiniband" else hardware.eth_link_for_speed)(gbps * per)
            notes.gaps.append(f"{count} NICs of {gbps:g} Gb/s, {per} per GPU, are modelled as {n} NICs of "
                              f"{gbps * per:g} Gb/s (one per GPU): a cluster file gives each GPU one NIC")
            count, gbps = n, gbps * per
        except FabricsimError:
            notes.gaps.append(f"{count} NICs for {n} GPUs: a cluster file routes each GPU through one NIC, so "
                              f"{per - 1} of every {per} NICs carry no GPU traffic")
    eth = layer == "ethernet"
    part = _nic_part(model or transport, gbps, eth, notes)
    switch = _fabric_switch(gbps, eth, notes)
    return dict(nics_per_node=count, nic=part, nic_gbps=float(gbps), fabric="roce" if eth else "infiniband",
                leaf_switch=switch, spine_switch=switch), nics


def _nic_part(model: str, gbps: float, eth: bool, notes: _Notes) -> str:
    name = {"cx6-dx": "cx6"}.get(model, model)
    if name in ("cx5", "cx6", "cx7", "cx8"):
        part = f"{name}-eth" if eth else name
        if hardware.get_link(hardware.get_nic(part).port_link).line_rate_gbps >= gbps:
            return part
    if name == "bf3" and eth:
        return "bf3"
    nic = hardware.nic_for_speed(gbps, "ethernet" if eth else "infiniband")
    why = {"efa": "an EFA device", "vf": "a virtual function that does not say which ConnectX", "": "no adapter model"}
    notes.assumed.append(f"NIC part {nic.name} for {gbps:g} Gb/s ({why.get(model, model)} in the inputs)")
    return nic.name


def _fabric_switch(gbps: float, eth: bool, notes: _Notes) -> str:
    kind = "ethernet" if eth else "infiniband"
    fits = [s for s in hardware.SWITCHES.values() if s.kind == kind
            and hardware.get_link(s.port_link).line_rate_gbps >= gbps]
    if not fits:
        raise FabricsimError(f"no {kind} switch in the catalog has {gbps:g} Gb/s ports")
    sw = min(fits, key=lambda s: hardware.get_link(s.port_link).line_rate_gbps)
    notes.assumed.append(f"fabric switches {sw.name} ({kind}, {hardware.get_link(sw.port_link).line_rate_gbps:g} Gb/s "
                         "ports), non-blocking fat tree: the inputs describe a node, not its fabric")
    return sw.name


def _affinity(m: Machine, nics: list[Nic], n: int, notes: _Notes) -> bool | None:
    """Whether every GPU's closest NIC is near enough for GPUDirect RDMA (None: the inputs do not say); a gap
    where the NIC-to-GPU layout is not the cluster file's (GPU g uses NIC g*R/G, NIC r sits by GPU r*G/R)."""
    keys = [nic_key(x) for x in nics]
    closest: dict[int, set[str]] = {}
    kinds: list[str] = []
    for g in range(n):
        row = {k: t for gg, k, t in m.affinity if gg == g and k in keys}
        if not row:
            return None
        top = min(row.values(), key=PATH_TYPES.index)
        kinds.append(top)
        closest[g] = {k for k, t in row.items() if t == top}
    r = len(keys)
    owner = {k: min((g for g in range(n) if k in closest[g]), default=n) for k in keys}
    order = sorted(keys, key=lambda k: (owner[k], keys.index(k)))  # NIC labels as the cluster file numbers them
    fits = all(order[g * r // n] in closest[g] for g in range(n)) and \
        all(order[i] in closest[i * n // r] for i in range(r))
    if not fits:
        notes.gaps.append("NIC-to-GPU affinity differs from the cluster file's layout (GPU g uses NIC g*R/G): closest "
                          "NICs " + ", ".join(f"GPU{g}: {'/'.join(sorted(closest[g]))}" for g in range(n)))
    return all(PATH_TYPES.index(k) <= PATH_TYPES.index("PXB") for k in kinds)


def _pcie(m: Machine, gpu, n: int, preset: ClusterSpec | None, nic_count: int, notes: _Notes) -> dict:
    labels = [g.switch for g in m.gpus]
    speeds = {g.pcie_gts for g in m.gpus if g.pcie_gts}
    gen = max((_PCIE_GEN.get(s, 0) for s in speeds), default=0)
    if gen and f"pcie{gen}" != gpu.pcie_link:
        said = f"GPUs on PCIe Gen{gen} links ({'/'.join(f'{s:g}' for s in sorted(speeds))} GT/s), the catalog's {gpu.name} has {gpu.pcie_link}"
        notes.gaps.append(said + (f": GPU links run at the PCIe switch part's generation" if any(labels) else
                                  f": links to CPU root ports are the catalog's {gpu.pcie_link}"))
    narrow = sorted({g.pcie_width for g in m.gpus if 0 < g.pcie_width < 16})
    if narrow:
        notes.gaps.append(f"GPU PCIe links x{'/x'.join(map(str, narrow))}: cluster-file links are x16")
    if any(labels):
        if not all(labels):
            notes.gaps.append("some GPUs sit on a PCIe switch and some on CPU root ports: the cluster file puts all "
                              "on switches")
        count = len({x for x in labels if x})
        if n % count:
            notes.gaps.append(f"{count} PCIe switches for {n} GPUs: the cluster file spreads GPUs evenly; took "
                              f"{max(d for d in range(1, n + 1) if n % d == 0 and d <= count)}")
            count = max(d for d in range(1, n + 1) if n % d == 0 and d <= count)
        ports = -(-n // count) + -(-nic_count // count) + 1  # GPUs and NICs below, one port up
        part = _pcie_part(gen or int(gpu.pcie_link[-1]), ports, notes)
        return dict(pcie_switches_per_node=count, pcie_switch=part)
    if m.gpus and any(g.busid for g in m.gpus) and not any(labels):
        return dict(pcie_switches_per_node=0, pcie_switch="")  # the PCI tree shows GPUs on CPU root ports
    if preset and preset.gpus_per_node == n:
        notes.assumed.append(f"PCIe layout not in the inputs: {preset.pcie_switches_per_node} x {preset.pcie_switch or 'none'}"
                             f" as {preset.name}")
        return dict(pcie_switches_per_node=preset.pcie_switches_per_node, pcie_switch=preset.pcie_switch)
    notes.assumed.append("PCIe layout not in the inputs: GPUs and NICs on CPU root ports")
    return dict(pcie_switches_per_node=0, pcie_switch="")


def _pcie_part(gen: int, ports: int, notes: _Notes) -> str:
    """The catalog PCIe switch of this generation; the next one up where it has too few ports."""
    parts = sorted((int(s.port_link[-1]), s.ports, s.name) for s in hardware.SWITCHES.values() if s.kind == "pcie")
    fits = [p for p in parts if p[1] >= ports]
    if not fits:
        raise FabricsimError(f"no PCIe switch in the catalog has {ports} ports (the devices of one switch complex "
                             "plus its uplink)")
    same = [p for p in fits if p[0] == gen]
    if same:
        return same[0][2]
    pick = min(fits, key=lambda p: (abs(p[0] - gen), -p[0]))
    notes.gaps.append(f"no Gen{gen} PCIe switch in the catalog with {ports} ports: {pick[2]} used, so those links run "
                      f"at Gen{pick[0]}")
    return pick[2]


def to_spec(m: Machine, *, nodes: int | None = None, gpu: str | None = None, name: str = "imported") -> Imported:
    """The nearest ClusterSpec to what the merged inputs say, with assumptions and gaps."""
    notes = _Notes()
    n = len(m.gpus)
    if n == 0:
        raise FabricsimError("no input says how many GPUs a node has: add nvidia-smi topo -m output, the NCCL "
                             "topology XML or an NCCL_DEBUG=INFO log")
    part = hardware.get_gpu(_gpu(m, gpu, notes))
    preset_name = matching_preset(part.name)
    preset = preset_spec(preset_name) if preset_name else None
    up = _scaleup(m, part, n, preset, notes)
    net, nics = _network(m, part, n, preset, notes)
    near = _affinity(m, nics, n, notes)
    pcie = _pcie(m, part, n, preset, net["nics_per_node"], notes)
    if m.gdr is not None:
        gpudirect = m.gdr
    elif near is not None:
        gpudirect = near
        if not near:
            notes.assumed.append("GPUDirect RDMA off: the NICs are not under the GPUs' PCIe switches (NCCL uses "
                                 "GPUDirect up to PXB by default, NCCL_NET_GDR_LEVEL)")
    else:
        gpudirect = True
        if net["nics_per_node"]:
            notes.assumed.append("GPUDirect RDMA on: no input shows the GPU-NIC PCIe path")
    if m.p2p is not None:
        p2p = m.p2p
    else:
        p2p = part.name not in _CONSUMER
        if not p2p:
            notes.assumed.append(f"no GPU P2P on {part.name} (GeForce), as the pcie-rtx presets")
    if nodes is not None and m.nodes and nodes != m.nodes:
        notes.assumed.append(f"--nodes {nodes} instead of the log's {m.nodes}")
    n_nodes = nodes if nodes is not None else (m.nodes or 1)
    if n_nodes < 1:
        raise FabricsimError(f"--nodes {n_nodes}: a cluster has at least one node")
    cpus = m.numa_nodes or (preset.cpus_per_node if preset else 2)
    if not m.numa_nodes:
        notes.assumed.append(f"{cpus} CPUs (NUMA nodes) per node: no input says")
    if m.cpu_vendor == "AuthenticAMD":
        notes.gaps.append("AMD host CPUs: fabricsim's host-dependent NCCL constants assume Intel")
    host = "grace" if m.cpu_arch == "aarch64" or part.c2c_link else "x86"
    rail = net["nics_per_node"] >= n
    if net["nics_per_node"] and n_nodes > 1:
        notes.assumed.append(f"{'rail-optimised' if rail else 'single-rail'} fat tree: the inputs do not show the "
                             "cabling")
    spec = ClusterSpec(name=name, gpu=part.name, nodes=n_nodes, gpus_per_node=n, scaleup=up["scaleup"],
                       domain_size=up["domain_size"], nvswitch_chips=up["nvswitch_chips"], nvls=up["nvls"],
                       gpudirect=gpudirect, p2p=p2p, sharp=bool(m.sharp), rail_optimized=rail,
                       cpus_per_node=cpus, host_cpu=host, **net, **pcie)
    return Imported(spec, m, tuple(nics), tuple(dict.fromkeys(notes.assumed)), tuple(dict.fromkeys(notes.gaps)),
                    preset_name)
