"""`fabricsim trace run ET_PREFIX --cluster C`: replay MLCommons Chakra execution traces on a cluster."""

from __future__ import annotations

import json
from pathlib import Path

import click

from fabricsim.cli.options import size_options
from fabricsim.errors import FabricsimError


@click.group("trace")
def trace() -> None:
    """Workload traces replayed on a cluster (MLCommons Chakra ET)."""


def _comm_groups(path: str | None) -> dict[str, list[int]] | None:
    if path is None:
        return None
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as err:
        raise FabricsimError(f"cannot read {path}: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise FabricsimError(f"{path}: not JSON ({err.msg} at line {err.lineno}): give a mapping of process group "
                             'names to ranks, e.g. {"0": [0, 1, 2, 3]}') from None
    if not isinstance(doc, dict) or not all(isinstance(v, list) and all(isinstance(r, int) for r in v)
                                            for v in doc.values()):
        raise FabricsimError(f'{path}: expected a mapping of process group names to rank lists, e.g. {{"0": [0, 1]}}')
    return {str(k): v for k, v in doc.items()}


def _ms(s: float) -> str:
    return f"{s * 1e3:,.3f} ms"


@trace.command("run")
@click.argument("prefix", metavar="ET_PREFIX")
@click.option("--cluster", "-c", required=True, help="Preset name (fabricsim topo list) or a cluster YAML file.")
@size_options
@click.option("--comm-groups", default=None, help="JSON mapping process-group names (pg_name) to ranks; default: each "
                                                  "group is the ranks whose traces call it.")
@click.option("--efficiency", type=float, default=None,
              help="Fraction of dense BF16 peak for compute nodes timed from num_ops (default: the training model's).")
@click.option("--perfetto", "perfetto_path", default=None, help="Also write a Perfetto / Chrome trace (JSON) here.")
@click.option("--format", "fmt", default="table", show_default=True, type=click.Choice(["table", "json"]))
def run(prefix, cluster, nodes, gpus, comm_groups, efficiency, perfetto_path, fmt):
    """Replay ET_PREFIX.0.et, ET_PREFIX.1.et, ... on a cluster: step time, exposed communication, collectives."""
    from fabricsim.topology import PRESETS, load_cluster
    from fabricsim.traces import perfetto
    from fabricsim.traces.chakra import read_trace
    from fabricsim.traces.replay import replay

    if efficiency is not None and not 0.01 <= efficiency <= 1:
        raise FabricsimError(f"--efficiency {efficiency} must be between 0.01 and 1, a fraction of peak compute")
    nodes_trace = read_trace(prefix)
    ranks = len(nodes_trace)
    if cluster in PRESETS and nodes is None and gpus is None:
        try:
            topo = load_cluster(cluster, gpus=ranks)
        except FabricsimError:
            topo = load_cluster(cluster)
    else:
        topo = load_cluster(cluster, nodes=nodes, gpus=gpus)
    rep = replay(nodes_trace, topo, comm_groups=_comm_groups(comm_groups), efficiency=efficiency)
    if perfetto_path:
        perfetto.write(rep, perfetto_path)
    last = max(rep.ranks, key=lambda r: r.end)
    worst = max(rep.ranks, key=lambda r: r.exposed_comm)
    if fmt == "json":
        click.echo(json.dumps({
            "prefix": prefix, "ranks": ranks, "cluster": topo.name, "gpus": topo.n_gpus, "step_time_s": rep.step_time,
            "per_rank": [r.__dict__ for r in rep.ranks],
            "collectives": [c.__dict__ for c in rep.collectives], "notes": list(rep.notes)}, indent=1))
        return
    n_nodes = sum(len(x) for x in nodes_trace)
    lines = [f"trace {prefix}: {ranks} ranks, {n_nodes} nodes, on {topo.name} ({topo.n_gpus} GPUs)",
             f"step time        {_ms(rep.step_time)} (rank {last.rank} ends last)",
             f"compute          {_ms(max(r.compute for r in rep.ranks))} per rank (most)",
             f"communication    {_ms(max(r.comm for r in rep.ranks))} per rank (most)",
             f"exposed comm     {_ms(worst.exposed_comm)} on rank {worst.rank} "
             f"(mean {_ms(sum(r.exposed_comm for r in rep.ranks) / ranks)})"]
    if rep.collectives:
        lines += ["", f"{'group':<12} {'collective':<15} {'ranks':>5} {'bytes':>12} {'algo/proto/ch':<22} "
                      f"{'time us':>10} {'calls':>6}"]
        for c in rep.collectives:
            lines.append(f"{c.group:<12} {c.collective:<15} {c.ranks:>5} {c.nbytes:>12} "
                         f"{c.algo + '/' + c.proto + '/' + str(c.channels):<22} {c.time * 1e6:>10.2f} {c.calls:>6}")
    lines += [f"note: {n}" for n in rep.notes]
    if perfetto_path:
        lines.append(f"wrote {perfetto_path} (open in ui.perfetto.dev)")
    click.echo("\n".join(lines))
