"""`fabricsim whatif`: what a cluster does when parts of it fail (a failures sweep), and the names to fail them by."""

from __future__ import annotations

import json

import click

from fabricsim.cli.options import fault_options, faults_given, notes, routing_option, size_options
from fabricsim.cli.progress import progress_bar

WHAT = ("spines", "leaves", "cores", "nics", "nvswitches", "nic-links", "spine-links", "core-links", "links", "nvlinks")


@click.group("whatif")
def whatif() -> None:
    """What-ifs: a cluster with failed parts."""


@whatif.command("failures")
@click.option("--cluster", "-c", required=True, help="Preset name (fabricsim topo list) or a cluster YAML file.")
@size_options
@routing_option
@fault_options
@click.option("--collective", default="all_reduce", show_default=True,
              type=click.Choice(["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall"]))
@click.option("--size", default="1G", show_default=True, help="Message size (nccl-tests' size; K/M/G suffixes).")
@click.option("--fail-count", "fail_count", default="0..4", show_default=True,
              help="How many to fail: a range (0..8) or a list (0,1,2,4).")
@click.option("--what", default="spines", show_default=True, type=click.Choice(WHAT),
              help="What fails: switches of a tier, NICs, NVSwitches, or physical cables of a class.")
@click.option("--seeds", default=5, show_default=True, type=click.IntRange(1, 1000),
              help="Draws per count (seeds 0..N-1): the median and the worst are printed.")
@click.option("--algo", default=None, help="Force algorithms, as NCCL_ALGO: e.g. ring,tree,nvls.")
@click.option("--proto", default=None, help="Force protocols, as NCCL_PROTO: ll, ll128, simple.")
@click.option("--level", default=None, type=click.Choice(["flow", "analytical"]), help="fabricsim's engine fidelity.")
@click.option("--plot", "plot_path", default=None, help="Also save busbw against the number failed (.png, .pdf, .svg).")
@click.option("--format", "fmt", default="table", show_default=True, type=click.Choice(["table", "json"]))
def failures(cluster, nodes, gpus, routing, fail, degrade, seed, collective, size, fail_count, what, seeds, algo, proto,
             level, plot_path, fmt):
    """Sweep the number of failed spines, leaves, NICs or cables: busbw (median and worst over seeds) and the
    bottleneck at each count; --fail / --degrade add fixed faults under every draw."""
    from fabricsim import api

    if plot_path is not None:
        from fabricsim.reports.plotting import plot_format

        plot_format(plot_path)  # a bad name fails before the work, not after
    c = api.cluster(cluster, nodes, gpus, routing=routing, faults=faults_given(fail, degrade, seed))
    notes(c.faults.notes if c.faults is not None else ())
    with progress_bar("whatif failures") as progress:
        result = api.failures(c, collective, size, fail_counts=fail_count, what=what, seeds=seeds, algo=algo,
                              proto=proto, level=level, progress=progress)
    if fmt == "json":
        meta = {"cluster": c.name, "gpus": c.n_gpus, "collective": collective, "size_bytes": result.nbytes,
                "what": what, "of": result.size, "seeds": seeds,
                "faults": list(c.faults.lines) if c.faults is not None else None}
        click.echo(json.dumps({**meta, "rows": result.to_records()}, indent=2))
    else:
        if c.faults is not None:
            click.echo("under every draw: " + "; ".join(c.faults.lines))
        click.echo(result.table())
    if plot_path is not None:
        from fabricsim.reports.plotting import save_figure

        save_figure(result.figure(), plot_path)


@whatif.command("names")
@click.argument("cluster")
@click.argument("pattern", default="*")
@size_options
@click.option("--links", is_flag=True, help="List the links ('A -> B') between devices matching PATTERN instead.")
def names(cluster, pattern, nodes, gpus, links):
    """List the devices (or with --links the cables) of CLUSTER whose names match PATTERN: the names --fail and
    --degrade take."""
    from fabricsim import api
    from fabricsim.errors import FabricsimError
    from fabricsim.topology import names as N

    topo = api.cluster(cluster, nodes, gpus).topology
    asked = pattern
    if links:
        pattern = pattern if "->" in pattern else f"{pattern} -> *"
        left = set(N.match_devices(topo, N.split_link(pattern)[0]).tolist())
        found = [int(c) if int(topo.link_src[c]) in left else int(c) + 1 for c in N.match_links(topo, pattern)]
        lines = [topo.link_name(link) + (f" x{int(topo.link_count[link])}" if topo.link_count[link] > 1 else "")
                 for link in found]
    else:
        all_names = N.device_names(topo)
        lines = [all_names[int(d)] for d in N.match_devices(topo, pattern)]
    if not lines:
        bare = "->" not in asked and not any(c in asked for c in "*?[")
        glob = f" (PATTERN is a shell glob over whole names: '*{asked}*')" if bare else ""
        raise FabricsimError(f"nothing on {topo.name} matches '{pattern}'{glob}: names look like {N.examples(topo)}")
    click.echo("\n".join(lines))
