"""One merged Machine -> the nearest faithful ClusterSpec, what was filled in, and what the spec cannot say.

Every field comes from the inputs where one states it; otherwise from the catalog or the preset built on
the same GPU (dgx-h100 for H100, ...), and that choice is an assumption printed to the user. A cluster file says
the transport (EFA, sockets), several NICs per GPU or NICs shared by GPUs, dual-port cards, PCIe generation and
lanes per GPU, NVLinks per GPU and bridged GPU pairs, and AMD hosts; what the inputs state but a cluster file
still cannot express (an uneven NIC layout, NVLinks between other GPU pairs) is mapped to the closest spec and
listed as a gap.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from fabricsim import hardware
from fabricsim.errors import FabricsimError, option
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
        counts = sorted(set(links_per_gpu(m).values()))
        if (counts or m.nvswitch_links or m.nvlink_fabric) and not hardware.get_gpu(part).scaleup_links:
            shown = f" ({'/'.join(map(str, counts))} per GPU)" if counts else ""
            raise FabricsimError(f"{option('gpu', given)}: the inputs show NVLink{shown} and a {part} has none: give "
                                 f"the GPU these files come from (one with NVLink), or leave {option('gpu')} out to "
                                 "infer it")
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
    nvlinks = 0  # the catalog GPU's own count
    counts = set(links.values())
    if links and counts != {gpu.scaleup_links}:
        if len(counts) == 1 and max(counts) <= gpu.scaleup_links:
            nvlinks = max(counts)
        else:
            notes.gaps.append(f"the inputs give {'/'.join(map(str, sorted(counts)))} NVLinks per GPU, the catalog's "
                              f"{gpu.name} has {gpu.scaleup_links}: a cluster file gives every GPU the same count; "
                              f"took the catalog's")
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
        return dict(scaleup="nvswitch", domain_size=n, nvswitch_chips=chips, nvls=_nvls(m, gpu, notes), nvlinks=nvlinks)
    if m.nvlinks:
        if n == 8 and set(links.values()) == {gpu.scaleup_links} and gpu.scaleup_links in (4, 6) and len(m.nvlinks) > 4:
            return dict(scaleup="nvlink-mesh", domain_size=n, nvswitch_chips=0, nvls=False)
        pairs = {(a, b) for a, b, _ in m.nvlinks}
        per_pair = {c for _, _, c in m.nvlinks}
        if n % 2 == 0 and pairs == {(2 * i, 2 * i + 1) for i in range(n // 2)} and len(per_pair) == 1:
            # NVLink bridges joining GPUs 2i and 2i+1 (nvidia-smi topo -m 'NV4' / 'NV12' beside the pair only)
            return dict(scaleup="nvlink-bridge", domain_size=n, nvswitch_chips=0, nvls=False,
                        nvlinks=0 if per_pair == {gpu.scaleup_links} else min(per_pair.pop(), gpu.scaleup_links))
        said = ", ".join(f"{a}-{b} x{c}" for a, b, c in m.nvlinks)
        notes.gaps.append(f"NVLinks between some GPU pairs only ({said}): a cluster file has NVSwitch, the DGX-1 "
                          "cube-mesh or bridged pairs (GPUs 2i, 2i+1 with one link count); modelled as PCIe only")
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
    part = hardware.nvswitch_for(gpu.scaleup_link)
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
    if transport == "socket":
        notes.assumed.append("NCCL used TCP sockets (NET/Socket): transport socket, through host memory (no GPUDirect)")
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
    cards = sorted({x.name.split(":")[0] if x.name else nic_key(x) for x in nics})
    ports = len(nics) // len(cards) if len(nics) % len(cards) == 0 else 1  # ibstat's 'mlx5_0:1', 'mlx5_0:2'
    count = len(nics) // ports
    if count % n and n % count:
        fit = max(d for d in [*range(1, n + 1), *range(n, count + 1, n)] if (n % d == 0 or d % n == 0) and d <= count)
        notes.gaps.append(f"{count} NIC cards for {n} GPUs: a cluster file spreads cards evenly among the GPUs; took "
                          f"{fit}, so {count - fit} carry no GPU traffic")
        count = fit
    eth = layer == "ethernet"
    if transport == "efa":
        part = _efa_part(gbps, count // n, notes)
    else:
        part = _nic_part(model or transport, gbps, eth, notes, ports)
    switch = _fabric_switch(gbps, eth, notes)
    fabric = "ethernet" if transport == "efa" else "roce" if eth else "infiniband"
    net = dict(nics_per_node=count, nic=part, nic_gbps=float(gbps), fabric=fabric, leaf_switch=switch,
               spine_switch=switch)
    if transport in ("efa", "socket"):
        net["transport"] = transport
    if transport == "efa":  # SRD sprays each flow's packets over many paths (AWS, IEEE Micro 2020)
        net["routing"] = "adaptive"
    if ports > 1:
        net["nic_ports"] = ports
    return net, nics


def _efa_part(gbps: float, per_gpu: int, notes: _Notes) -> str:
    """The EFA device of the EC2 platform these NICs belong to: 200 Gb/s EFA on p5en; 100 Gb/s, several per GPU on
    p5/p5e, one per two GPUs on p4d (aws-ofi-nccl keys its latency and cost model by platform, hardware.nics)."""
    part = "efa-p5en" if gbps >= 200 else "efa-p5" if per_gpu > 1 else "efa-p4d"
    notes.assumed.append(f"EFA part {part}: the EC2 platform with {gbps:g} Gb/s EFA devices, "
                         f"{per_gpu or 'one per two'} per GPU")
    return part


def _nic_part(model: str, gbps: float, eth: bool, notes: _Notes, ports: int = 1) -> str:
    name = {"cx6-dx": "cx6"}.get(model, model)
    if ports > 1:
        fits = [x for x in hardware.NICS.values() if x.ports >= ports and hardware.get_link(x.port_link).kind ==
                ("ethernet" if eth else "infiniband") and hardware.get_link(x.port_link).line_rate_gbps >= gbps]
        if fits:
            nic = min(fits, key=lambda x: (hardware.get_link(x.port_link).line_rate_gbps, x.name))
            notes.assumed.append(f"NIC part {nic.name}: a {ports}-port card of {gbps:g} Gb/s ports")
            return nic.name
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
    out: dict = {}
    if gen and f"pcie{gen}" != gpu.pcie_link and gen >= 3:
        out["pcie_gen"] = gen  # the GPUs' links as the inputs show them
        if len(speeds) > 1:
            notes.gaps.append(f"GPUs on PCIe links of {'/'.join(f'{s:g}' for s in sorted(speeds))} GT/s: a cluster file "
                              f"gives every GPU one generation; took Gen{gen}")
    widths = sorted({g.pcie_width for g in m.gpus if g.pcie_width})
    if widths and widths != [16]:
        lanes = max(w for w in (1, 2, 4, 8, 16) if w <= widths[0])
        out["pcie_lanes"] = lanes
        if len(widths) > 1:
            notes.gaps.append(f"GPU PCIe links x{'/x'.join(map(str, widths))}: a cluster file gives every GPU one width; "
                              f"took the narrowest, x{lanes}")
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
        return dict(pcie_switches_per_node=count, pcie_switch=part, **out)
    if m.gpus and any(g.busid for g in m.gpus) and not any(labels):
        return dict(pcie_switches_per_node=0, pcie_switch="", **out)  # the PCI tree shows GPUs on CPU root ports
    if preset and preset.gpus_per_node == n:
        count, part = preset.pcie_switches_per_node, preset.pcie_switch
        if count and -(-n // count) + -(-nic_count // count) + 1 > hardware.get_switch(part).ports:
            # more NICs than the preset's switches hold (p5: 4 EFA per GPU): one switch per GPU with its own NICs
            count = n
            part = _pcie_part(int(hardware.get_switch(part).port_link[-1]), 1 + -(-nic_count // n) + 1, notes)
            notes.assumed.append(f"PCIe layout not in the inputs: one {part} per GPU with its {nic_count // n} NICs "
                                 f"({preset.name}'s {preset.pcie_switches_per_node} switches do not hold {nic_count} NICs)")
        else:
            notes.assumed.append(f"PCIe layout not in the inputs: {count} x {part or 'none'} as {preset.name}")
        return dict(pcie_switches_per_node=count, pcie_switch=part, **out)
    notes.assumed.append("PCIe layout not in the inputs: GPUs and NICs on CPU root ports")
    return dict(pcie_switches_per_node=0, pcie_switch="", **out)


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
    host = "grace" if m.cpu_arch == "aarch64" or part.c2c_link else "x86"
    vendor = {"AuthenticAMD": "amd", "GenuineIntel": "intel"}.get(m.cpu_vendor, "auto") if host == "x86" else "auto"
    rail = net["nics_per_node"] >= n
    if net["nics_per_node"] and n_nodes > 1:
        notes.assumed.append(f"{'rail-optimised' if rail else 'single-rail'} fat tree: the inputs do not show the "
                             "cabling")
    if net.get("transport") == "socket":
        gpudirect = False  # NCCL's socket transport moves host memory only
    spec = ClusterSpec(name=name, gpu=part.name, nodes=n_nodes, gpus_per_node=n, scaleup=up["scaleup"],
                       domain_size=up["domain_size"], nvswitch_chips=up["nvswitch_chips"], nvls=up["nvls"],
                       nvlinks=up.get("nvlinks", 0), gpudirect=gpudirect, p2p=p2p, sharp=bool(m.sharp),
                       rail_optimized=rail, cpus_per_node=cpus, host_cpu=host, cpu_vendor=vendor, **net, **pcie)
    return Imported(spec, m, tuple(nics), tuple(dict.fromkeys(notes.assumed)), tuple(dict.fromkeys(notes.gaps)),
                    preset_name)
