"""`fabricsim topo`: list presets, show a cluster's summary, save a cluster spec as YAML."""

from __future__ import annotations

import json

import click

from fabricsim.cli.importers import import_cluster
from fabricsim.cli.options import size_options
from fabricsim.units import GB, Gbit


def _bw(bps: float) -> str:
    """bytes/s -> 'x GB/s' or 'x TB/s' (decimal, as datasheets)."""
    return f"{bps / 1e12:,.2f} TB/s" if bps >= 1e12 else f"{bps / GB:,.2f} GB/s"


@click.group("topo")
def topo() -> None:
    """Cluster topologies: presets, summaries, YAML specs."""


topo.add_command(import_cluster)


@topo.command("list")
def list_presets() -> None:
    """List the preset clusters."""
    from fabricsim.topology import PRESETS

    width = max(map(len, PRESETS))
    for name, (desc, _) in PRESETS.items():
        click.echo(f"{name:<{width}}  {desc}")


def _transport(s: dict) -> str:
    """', transport efa, 4 NIC ports per GPU' where the transport is not the fabric's own or GPUs send on several
    ports (nothing for a plain InfiniBand or RoCE cluster, whose summary reads as it always has)."""
    from fabricsim.hardware import DEFAULT_TRANSPORT

    t = s.get("transport")
    text = f", transport {t}" if t and t != DEFAULT_TRANSPORT.get(s["fabric"] or "none") else ""
    per = s.get("nics_per_gpu", 0)
    return text + (f", {per} NIC ports per GPU" if per > 1 else "")


def _oversubscription(s: dict) -> list[tuple[str, str]]:
    """The oversubscription row, where the cluster file sets one: the leaves' down:up bandwidth as built, or that the
    setting has no effect (every NIC on one leaf switch). Nothing for a non-blocking cluster."""
    o = s.get("oversubscription_set", 1.0)
    if o == 1:
        return []
    built = s.get("leaf_down_up")
    if built is None:
        where = "no scale-out fabric" if not s["fabric"] else "every NIC is on one leaf switch, no traffic crosses an uplink"
        return [("oversubscription", f"{o:g}:1 set, no effect: {where}")]
    return [("oversubscription", f"{o:g}:1 set; leaves {built:.3g}:1 down:up bandwidth as built")]


def render(s: dict) -> str:
    """The summary as an aligned, deterministic text report."""
    rows = [
        ("cluster", s["name"]),
        ("GPUs", f"{s['gpus']:,} x {s['gpu']} ({s['nodes']:,} node{'s' * (s['nodes'] != 1)}, "
                 + (f"{s['gpus_per_domain']} GPUs per NVLink domain)" if s["nvlink_to_pcie"] else
                    f"{s['gpus_per_domain']} GPUs per node on PCIe, no NVLink)")),
        *([("ranks used", f"{s['ranks_used']:,} of {s['gpus']:,} (ranks {s['ranks']}); the figures below are the whole "
                          "cluster's hardware")] if s.get("ranks_used", s["gpus"]) != s["gpus"] else []),
        ("scale-up per GPU", f"{_bw(s['scaleup_bw_per_gpu'])}/dir, {_bw(s['scaleup_bw_per_gpu_bidir'])} both ({s['scaleup_tech']})"),
        ("PCIe per GPU", f"{_bw(s['pcie_bw_per_gpu'])}/dir; host link {_bw(s['host_link_bw_per_gpu'])}/dir"),
        ("NVLink : PCIe", f"{s['nvlink_to_pcie']:.1f}x" if s["nvlink_to_pcie"] else "no NVLink"),
        ("scale-out per GPU", f"{_bw(s['scaleout_bw_per_gpu'])}/dir ({s['scaleout_bw_per_gpu'] / Gbit:,.0f} Gb/s)"),
        ("all-to-all aggregate", f"{_bw(s['alltoall_bw'])}/dir, {_bw(s['alltoall_bw_bidir'])} both (at most; bound: {s['alltoall_bound']})"),
        ("scale-up domain", f"{_bw(s['domain_bw'])}/dir, {_bw(s['domain_bw_bidir'])} both (one domain: "
                            f"{min(s['gpus_per_domain'] or s['gpus'], s['gpus'])} GPUs x {_bw(s['scaleup_bw_per_gpu'])})"),
        ("bisection", f"{_bw(s['bisection_bw'])}/dir, {_bw(s['bisection_bw_bidir'])} both ({s['bisection_cut']})"),
        ("fabric", f"{s['fabric'] or 'none'}, {s['fabric_levels']} level(s)"
                   + _transport(s)
                   + (f", {s['fabric_planes']} rail planes" if s["fabric_planes"] > 1 else "")),
        *_oversubscription(s),
        ("features", ", ".join(k for k, v in s["features"].items() if v) or "none"),
        ("switches", ", ".join(f"{k} {v:,}" for k, v in s["switches"].items() if v)),
        ("size", f"{s['devices']:,} devices, {s['directed_links']:,} directed links"),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    lines += ["", "switch parts:"]
    part_width = max([13, *map(len, s["switch_parts"])])
    for name, p in s["switch_parts"].items():
        lines.append(f"  {name:<{part_width}} {p['kind']:<10} x{p['chips']:<7,} {p['ports']:>3} x {p['port_bw'] / Gbit:>6,.0f} Gb/s"
                     f" = {p['aggregate_bw_bidir'] / Gbit / 1e3:,.1f} Tb/s both ({p['port_link']}, reduction {p['reduction']})")
    lines += ["", "link technologies:"]
    for name, lt in s["links"].items():
        lines.append(f"  {name:<11} {lt['kind']:<11} {lt['physical_links']:>9,} links  {_bw(lt['bw']):>12}/dir"
                     f" {_bw(lt['bw_bidir']):>12} both  ({lt['bw'] / Gbit:,.0f} Gb/s/dir)")
    return "\n".join(lines)


@topo.command("show")
@click.argument("cluster")
@size_options
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (SI units).")
def show(cluster: str, nodes: int | None, gpus: int | None, as_json: bool) -> None:
    """Summarise CLUSTER (a preset name or a YAML file)."""
    from fabricsim import api

    s = api.cluster(cluster, nodes, gpus).summary()
    click.echo(json.dumps(s, indent=2, sort_keys=True) if as_json else render(s))


@topo.command("save")
@click.argument("cluster")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="YAML file to write.")
@size_options
def save(cluster: str, output: str, nodes: int | None, gpus: int | None) -> None:
    """Write CLUSTER's spec as YAML (edit it, then `topo show file.yaml`)."""
    from fabricsim import api
    from fabricsim.topology import save_cluster

    c = api.cluster(cluster, nodes, gpus)
    save_cluster(c.spec, output)
    click.echo(f"wrote {output}")
    if c.partial:
        click.echo(f"note: {output} holds the whole hardware ({c.total_gpus} GPUs); a run on ranks {c.summary()['ranks']} "
                   f"of it is --gpus {c.n_gpus}" + (f" --nodes {nodes}" if nodes is not None else ""), err=True)
