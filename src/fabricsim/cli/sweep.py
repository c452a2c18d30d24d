"""`fabricsim sweep`: every point of a sweep file's design space, computed on a local process pool or on Ray,
written one row per point to a Parquet or CSV file; a rerun computes only the points not yet there."""

from __future__ import annotations

import os

import click

from fabricsim.cli.progress import progress_bar


@click.command("sweep")
@click.argument("sweep_file", metavar="SWEEP.yaml")
@click.option("-o", "--output", default=None,
              help="Results file (default: the sweep file's name with .parquet, or .csv with --format csv).")
@click.option("--format", "fmt", default=None, type=click.Choice(["parquet", "csv"]),
              help="Results format (default: from the -o suffix; Parquet needs the parquet extra).")
@click.option("--ray", "use_ray", is_flag=True, default=None,
              help="Run on Ray (the ray extra): the cluster RAY_ADDRESS names, else a local one "
                   "(also when RAY_ADDRESS is set without --ray).")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Worker processes (default: this machine's CPUs; with a local Ray, its CPUs).")
@click.option("--retry-failed", is_flag=True, help="Compute again the points an earlier run recorded as failed.")
def sweep(sweep_file, output, fmt, use_ray, workers, retry_failed):
    """Compute every point of SWEEP.yaml (axes of cluster fields and perf / train options) into a results file."""
    from fabricsim import api

    with progress_bar("sweep") as bar:
        progress = (lambda done, total, failed: bar(done, total, f"failed={failed}")) if bar is not None else None
        result = api.sweep(sweep_file, output, format=fmt, ray=use_ray, workers=workers, retry_failed=retry_failed,
                           progress=progress)
    if result.backend == "pool":
        where = f"a local pool of {result.workers} worker{'s' * (result.workers != 1)}"
    else:
        address = os.environ.get("RAY_ADDRESS")
        where = f"the Ray cluster at {address}" if address else f"a local Ray of {result.workers} CPUs"
    click.echo(f"{result.name}: {result.total:,} points: {result.computed:,} computed, {result.resumed:,} already "
               f"done, {result.failed:,} failed; {result.seconds:.1f} s on {where} "
               f"({result.points_per_s:.1f} points/s) -> {result.output}")
    for key, error in result.failures:
        click.echo(f"note: point {key} failed: {error}", err=True)
    if result.failed > len(result.failures):
        click.echo(f"note: {result.failed - len(result.failures):,} more failed: the results' error column says why",
                   err=True)
