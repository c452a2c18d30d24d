"""`fabricsim compare`: a real nccl-tests log against fabricsim's prediction of the same sizes on a cluster."""

from __future__ import annotations

import click

from fabricsim.cli.options import cost_model as pick_cost_model
from fabricsim.cli.options import (check_report, engine_options, fault_lines, fault_options, faults_given,
                                   nccl_version_option, notes, parse_env, report_option, routing_option,
                                   size_options)
from fabricsim.cli.progress import progress_bar
from fabricsim.errors import FabricsimError

PERF_COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "alltoall", "sendrecv")


@click.command("compare")
@click.argument("log_path", metavar="LOG")
@click.option("--cluster", "-c", required=True, help="Preset name (fabricsim topo list) or a cluster YAML file.")
@size_options
@routing_option
@fault_options
@click.option("--collective", default=None, type=click.Choice(PERF_COLLECTIVES),
              help="Only for logs that do not name their collective (e.g. nccl-tests v2.9 without the binary line).")
@engine_options
@nccl_version_option
@click.option("--env", "env_pairs", multiple=True,
              help="An NCCL variable the run set that the log does not print, NCCL_NAME=VALUE; repeatable.")
@click.option("--placement", default="out", show_default=True, type=click.Choice(["out", "in"]),
              help="Compare against the out-of-place or the in-place columns of the log.")
@click.option("--plot", "plot_path", default=None,
              help="Also save measured vs predicted busbw and time against size (.png, .pdf or .svg).")
@click.option("--format", "fmt", default="table", show_default=True, type=click.Choice(["table", "json"]))
@report_option
def compare(log_path, cluster, nodes, gpus, routing, fail, degrade, seed, collective, algo, proto, nccl_version,
            env_pairs, placement, level, cost_model, old_model, plot_path, fmt, report_path):
    """Compare a real nccl-tests LOG with fabricsim's prediction of the same sizes on a cluster."""
    from fabricsim import api
    from fabricsim.api.clusters import unit_gpus
    from fabricsim.reports import compare as report
    from fabricsim.reports.nccltests_log import ranks_of

    model = pick_cost_model(cost_model, old_model)
    if routing and model != "fabricsim":
        raise FabricsimError("--routing changes fabricsim's simulated fabric; NCCL's cost model does not route: drop "
                             "--routing or --cost-model nccl")
    if plot_path is not None:
        from fabricsim.reports.plotting import plot_format

        plot_format(plot_path)  # a bad name fails before the work, not after
    check_report(report_path)
    _, log = report.read_log(log_path)
    c = api.cluster(cluster, nodes, gpus, routing=routing, faults=faults_given(fail, degrade, seed))
    nranks = ranks_of(log, log.collective or collective)
    if nranks is not None and nranks != c.n_gpus:
        sized = f" --nodes {nodes}" if nodes is not None else ""
        sized += f" --gpus {gpus}" if gpus is not None else ""
        raise FabricsimError(report.rank_mismatch(nranks, cluster, sized, c.n_gpus, int(c.spec.gpus_per_node),
                                                  unit_gpus(c.spec)))
    with progress_bar("compare") as progress:
        result = api.compare(log_path, c, collective=collective, placement=placement, algo=algo, proto=proto,
                             level=level, cost_model=model, progress=progress, nccl_version=nccl_version,
                             env=parse_env(env_pairs))  # the path: the log's own environment lines apply
    meta = {**result.meta, "log": str(log_path)}
    notes(result.notes)
    if plot_path is not None:
        from fabricsim.reports.plotting import save_figure

        save_figure(result.figure(), plot_path)
    if report_path is not None:
        result.report(report_path)
    if fmt == "json":
        click.echo(report.format_json(list(result.rows), result.summary, meta, list(result.skipped)), nl=False)
        return
    m = meta
    ranks = (f"{nranks} ranks" + (" (from its busbw / algbw)" if log.nranks is None or log.nranks_inferred else "")
             if nranks is not None else f"rank count not in the log, assumed {c.n_gpus}")
    nccl = f", NCCL {log.nccl_version}" if log.nccl_version else ""
    columns = "out-of-place" if placement == "out" else "in-place"
    gpus_used = f"{c.n_gpus} of {c.total_gpus} GPUs, ranks {m['ranks']}" if c.partial else f"{c.n_gpus} GPUs"
    how = f"cost model {model}" + (f", engine level {m['level']}" if m["level"] else "") + f", {m['nccl']} rules"
    title = f"fabricsim compare: {m['collective']} log ({ranks}{nccl}, {columns} columns) vs {c.name} ({gpus_used}), {how}"
    if c.faults is not None:
        title += "\n" + "\n".join(fault_lines(c.faults))
    title += "".join(f"\n# {e['var']}={e['value']}: {e['status']} ({e['why']})" for e in m.get("env", ()))
    click.echo(report.format_table(list(result.rows), result.summary, title, list(result.skipped)), nl=False)
