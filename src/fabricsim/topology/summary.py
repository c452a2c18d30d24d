"""`summarize(topo)`: headline figures computed from the topology arrays (SI units, per direction unless `_bidir`)."""

from __future__ import annotations

from itertools import combinations

import numpy as np

from fabricsim import hardware
from fabricsim.topology.model import DeviceKind, Topology

_SCALEUP_KINDS = ("nvlink", "xgmi")


def _tech_kind(topo: Topology) -> np.ndarray:
    """Catalog kind ('nvlink', 'pcie', 'infiniband', ...) of every link."""
    kinds = np.array([hardware.get_link(t).kind for t in topo.techs], dtype=object)
    return kinds[topo.link_tech]


def _per_gpu_out(topo: Topology, mask: np.ndarray) -> np.ndarray:
    """Sum of capacity of the masked links leaving each GPU, per rank."""
    out = np.bincount(topo.link_src[mask], weights=topo.link_capacity[mask], minlength=topo.n_devices)
    return out[topo.gpu_device]


_TIERS = ("NIC -> leaf links", "leaf -> spine links", "spine -> core links")


def _bisection(topo: Topology, scaleup: float, host: float) -> tuple[float, str]:
    """Min cut (bytes/s per direction) between two halves of the GPUs, and what it cuts.

    Several NVLink domains: the halves split along domains, so the cut is the narrowest fat-tree
    tier (NIC->leaf, leaf->spine, spine->core) carrying half its uplink capacity. One domain:
    a non-blocking NVSwitch gives n/2 GPUs' NVLink; a direct mesh is cut exactly (every balanced
    partition); PCIe is cut at the socket link or half the GPUs' PCIe links.
    """
    n = topo.n_gpus
    kinds, src, dst = topo.dev_kind, topo.link_src, topo.link_dst
    up = np.zeros(4)
    fabric = kinds[dst] == DeviceKind.FABRIC_SWITCH
    from_level = np.where(kinds[src] == DeviceKind.NIC, 0, topo.dev_level[src])
    going_up = fabric & (topo.dev_level[dst] > np.where(kinds[src] == DeviceKind.FABRIC_SWITCH, topo.dev_level[src], 0))
    np.add.at(up, from_level[going_up], topo.link_capacity[going_up])
    if np.unique(topo.gpu_domain).size > 1:
        used = np.flatnonzero(up[:3] > 0)
        if not used.size:
            return 0.0, "no fabric"
        tier = int(used[np.argmin(up[used])])
        return float(up[tier] / 2), _TIERS[tier]
    if (kinds == DeviceKind.NVSWITCH).any():
        return n // 2 * scaleup, "NVSwitch (half the GPUs' NVLinks)"
    gg = (kinds[src] == DeviceKind.GPU) & (kinds[dst] == DeviceKind.GPU)
    if gg.any():
        cap = np.zeros((n, n))
        np.add.at(cap, (src[gg], dst[gg]), topo.link_capacity[gg])
        best = np.inf
        for half in combinations(range(1, n), n // 2 - 1):
            a = np.zeros(n, bool)
            a[[0, *half]] = True
            best = min(best, cap[np.ix_(a, ~a)].sum())
        return float(best), "NVLink mesh (narrowest balanced cut)"
    cc = (kinds[src] == DeviceKind.CPU) & (kinds[dst] == DeviceKind.CPU)
    socket = topo.link_capacity[cc][0::2].sum() if cc.any() else np.inf
    if socket <= n // 2 * host:
        return float(socket), "CPU socket link"
    return float(n // 2 * host), "half the GPUs' PCIe links"


def leaf_down_up(topo: Topology) -> float | None:
    """The highest down:up bandwidth ratio of any leaf switch as built (its NIC links' capacity over its uplinks');
    None where fewer than two leaves carry NICs (one leaf switches every byte itself: no uplink is ever crossed)."""
    kinds, src, dst = topo.dev_kind, topo.link_src, topo.link_dst
    leaf = (kinds == DeviceKind.FABRIC_SWITCH) & (topo.dev_level == 1)
    down_mask = (kinds[src] == DeviceKind.NIC) & leaf[dst]
    up_mask = leaf[src] & (kinds[dst] == DeviceKind.FABRIC_SWITCH) & (topo.dev_level[dst] > 1)
    down = np.bincount(dst[down_mask], weights=topo.link_capacity[down_mask], minlength=topo.n_devices)
    up = np.bincount(src[up_mask], weights=topo.link_capacity[up_mask], minlength=topo.n_devices)
    used = leaf & (down > 0) & (up > 0)
    if np.count_nonzero(leaf & (down > 0)) < 2 or not used.any():
        return None
    return float((down[used] / up[used]).max())


def oversubscription(topo: Topology) -> float:
    """The leaves' down:up bandwidth ratio as built where the cluster file sets an oversubscription, 1.0 where it
    does not or where it has no effect (every NIC on one leaf switch, or no fabric)."""
    if topo.spec is None or topo.spec.oversubscription == 1:
        return 1.0
    ratio = leaf_down_up(topo)
    return 1.0 if ratio is None else ratio


def _alltoall(n: int, domain: int, scaleup: float, scaleout: float, bisection: tuple[float, str]) -> tuple[float, str]:
    """Upper bound (bytes/s per direction, summed over GPUs) on a uniform all-to-all, and what bounds it.

    Every GPU sends 1/(n-1) of its traffic to each peer: (domain-1)/(n-1) of it over its scale-up links,
    (n-domain)/(n-1) through the scale-out NICs, and between two halves n^2/(4(n-1)) GPUs' worth of traffic
    crosses the bisection. The aggregate is n x the fastest per-GPU rate all three allow."""
    if n < 2:
        return 0.0, "one GPU"
    bounds = []
    if domain > 1:
        bounds.append((n * scaleup * (n - 1) / (domain - 1), "scale-up links per GPU"))
    if n > domain:
        bounds.append((n * scaleout * (n - 1) / (n - domain), "scale-out NICs per GPU"))
    cut, what = bisection
    bounds.append((4 * cut * (n - 1) / n, f"bisection: {what}"))
    return min(bounds, key=lambda b: b[0])


def summarize(topo: Topology) -> dict:
    """GPU count, per-GPU scale-up / host / scale-out bandwidth, the all-to-all aggregate (bounded by the
    GPUs' links and the fabric, with what bounds it), one NVLink domain's aggregate scale-up bandwidth,
    bisection bandwidth (and the cut), the oversubscription set and the leaves' down:up bandwidth as built
    (None: one leaf, where the setting has no effect), switch counts per tier and part, link technologies with counts."""
    kind = _tech_kind(topo)
    gpu_src = topo.dev_kind[topo.link_src] == DeviceKind.GPU
    nvl = gpu_src & np.isin(kind, _SCALEUP_KINDS)
    host = gpu_src & np.isin(topo.dev_kind[topo.link_dst], [DeviceKind.PCIE_SWITCH, DeviceKind.CPU])
    nvl_gpu = _per_gpu_out(topo, nvl)
    host_gpu = _per_gpu_out(topo, host)
    has_nvlink = bool(nvl.any())
    scaleup = float(nvl_gpu.min() if has_nvlink else host_gpu.min())
    host_bw = float(host_gpu.min())
    pcie = gpu_src & (kind == "pcie")  # the GPUs' own PCIe links as built (slower end of GPU and switch)
    pcie_bw = (float(_per_gpu_out(topo, pcie).min()) if pcie.any()  # else (GB200: NVLink-C2C host) the GPU's rating
               else hardware.get_link(hardware.get_gpu(topo.gpu_part()).pcie_link).bw)
    to_fabric = (topo.dev_kind[topo.link_src] == DeviceKind.NIC) & (topo.dev_kind[topo.link_dst] == DeviceKind.FABRIC_SWITCH)
    scaleout = float(topo.link_capacity[to_fabric].sum() / topo.n_gpus)
    bisection, cut = _bisection(topo, scaleup, host_bw)
    domain = int(topo.features.get("gpus_per_domain", 0)) or topo.n_gpus
    alltoall, bound = _alltoall(topo.n_gpus, min(domain, topo.n_gpus), scaleup, scaleout, (bisection, cut))
    scaleup_techs = sorted({topo.techs[t] for t in np.unique(topo.link_tech[nvl if has_nvlink else host])})

    fs = topo.dev_kind == DeviceKind.FABRIC_SWITCH
    switches = {
        "nvswitch_chips": int(topo.dev_units[topo.dev_kind == DeviceKind.NVSWITCH].sum()),
        "nvlink_domains": int((topo.dev_kind == DeviceKind.NVSWITCH).sum()),
        "pcie_switches": int((topo.dev_kind == DeviceKind.PCIE_SWITCH).sum()),
        "leaf": int((fs & (topo.dev_level == 1)).sum()),
        "spine": int((fs & (topo.dev_level == 2)).sum()),
        "core": int((fs & (topo.dev_level == 3)).sum()),
        "nics": int((topo.dev_kind == DeviceKind.NIC).sum()),
        "cpus": int((topo.dev_kind == DeviceKind.CPU).sum()),
    }
    units = np.bincount(topo.dev_part, weights=topo.dev_units, minlength=len(topo.parts))
    parts = {}
    for i, name in enumerate(topo.parts):
        sw = hardware.SWITCHES.get(name)
        if sw is not None and units[i]:
            port_bw = hardware.get_link(sw.port_link).bw
            parts[name] = {"kind": sw.kind, "chips": int(units[i]), "ports": sw.ports, "port_link": sw.port_link,
                           "port_bw": port_bw, "aggregate_bw": sw.ports * port_bw,
                           "aggregate_bw_bidir": 2 * sw.ports * port_bw, "reduction": sw.reduction}
    pair_count = np.bincount(topo.link_tech[0::2], weights=topo.link_count[0::2], minlength=len(topo.techs))
    links = {}
    for i, name in enumerate(topo.techs):
        lt = hardware.get_link(name)
        links[name] = {"kind": lt.kind, "physical_links": int(pair_count[i]), "bw": lt.bw, "bw_bidir": 2 * lt.bw,
                       "total_bw": float(pair_count[i] * lt.bw), "total_bw_bidir": float(2 * pair_count[i] * lt.bw)}
    return {
        "name": topo.name,
        "gpus": topo.n_gpus,
        "nodes": int(topo.features.get("nodes", np.unique(topo.gpu_node).size)),
        "gpus_per_domain": int(topo.features.get("gpus_per_domain", 0)),
        "gpu": topo.gpu_part(),
        "scaleup_tech": ",".join(scaleup_techs),
        "scaleup_bw_per_gpu": scaleup,
        "scaleup_bw_per_gpu_bidir": 2 * scaleup,
        "host_link_bw_per_gpu": host_bw,
        "pcie_bw_per_gpu": pcie_bw,
        "nvlink_to_pcie": float(nvl_gpu.min() / pcie_bw) if has_nvlink else 0.0,
        "scaleout_bw_per_gpu": scaleout,
        "scaleout_bw_per_gpu_bidir": 2 * scaleout,
        "alltoall_bw": alltoall,
        "alltoall_bw_bidir": 2 * alltoall,
        "alltoall_bound": bound,
        "domain_bw": min(domain, topo.n_gpus) * scaleup,
        "domain_bw_bidir": 2 * min(domain, topo.n_gpus) * scaleup,
        "bisection_bw": bisection,
        "bisection_bw_bidir": 2 * bisection,
        "bisection_cut": cut,
        "fabric": topo.features.get("fabric"),
        "transport": topo.features.get("transport"),
        "nics_per_gpu": int(topo.features.get("nics_per_gpu", 0) or 0),
        "fabric_levels": int(topo.features.get("fabric_levels", 0)),
        "fabric_planes": int(topo.features.get("fabric_planes", 0)),
        "oversubscription_set": float(topo.spec.oversubscription) if topo.spec is not None else 1.0,
        "leaf_down_up": leaf_down_up(topo),
        "features": {k: topo.features[k] for k in ("sharp", "gpudirect", "nvls", "p2p", "rail_optimized") if k in topo.features},
        "switches": switches,
        "switch_parts": parts,
        "links": links,
        "devices": topo.n_devices,
        "directed_links": topo.n_links,
    }
