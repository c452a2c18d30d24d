"""`fabricsim jobs`: several jobs on one fabric, each alone and all together: slowdowns and the links they share."""

from __future__ import annotations

import json

import click

from fabricsim.cli.options import notes, routing_option
from fabricsim.cli.progress import progress_bar
from fabricsim.errors import FabricsimError

POLICIES = ("packed", "scattered", "random")  # fabricsim.multijob.spec.POLICIES, without importing the library here


@click.command("jobs")
@click.argument("jobs_file", metavar="JOBS.yaml")
@click.option("--placement", type=click.Choice(POLICIES), default=None,
              help="Place every job given a GPU count by this policy (default: the file's).")
@click.option("--compare-placement", "compare", is_flag=True,
              help="Run the same jobs packed and scattered and print them side by side.")
@click.option("--level", default=None, type=click.Choice(["flow", "analytical"]),
              help="Engine fidelity of each job's collectives (default: the file's, flow).")
@routing_option
@click.option("--format", "fmt", default="table", show_default=True, type=click.Choice(["table", "json"]))
@click.option("--trace", "trace_path", default=None,
              help="Write a Chrome/Perfetto trace (JSON, ui.perfetto.dev): one track per job, the fabric's utilisation.")
@click.option("--plot", type=click.Path(dir_okay=False),
              help="Each job's rate and each fabric tier's utilisation over time (.png, .pdf or .svg; the plot extra).")
def jobs(jobs_file, placement, compare, level, routing, fmt, trace_path, plot):
    """Run the jobs of JOBS.yaml on their cluster (`fabricsim schema jobs` lists the fields): each job's time alone
    and sharing the fabric, its slowdown, the links the jobs contend on and the fabric's utilisation over time."""
    from fabricsim import api

    if compare and placement:
        raise FabricsimError("--compare-placement runs packed and scattered: drop --placement")
    if plot:
        from fabricsim.reports.plotting import plot_format

        plot_format(plot)  # a bad name or a missing matplotlib fails before the work, not after
    policies = ["packed", "scattered"] if compare else placement
    with progress_bar("jobs") as progress:
        result = api.jobs(jobs_file, placement=policies, level=level, routing=routing, progress=progress)
    notes(dict.fromkeys(n for run in result.runs for n in run.notes))
    if trace_path:
        result.to_perfetto(trace_path)
    if plot:
        from fabricsim.reports.plotting import save_figure

        save_figure(result.figure(), plot)
    from fabricsim.reports.jobs import records, table

    if fmt == "json":
        out = [records(run) for run in result.runs]
        click.echo(json.dumps(out[0] if len(out) == 1 else {"runs": out}, indent=2))
    else:
        click.echo(table(result.runs))
