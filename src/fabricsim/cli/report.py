"""`fabricsim report`: results files of `fabricsim sweep` -> one self-contained HTML report."""

from __future__ import annotations

import click


@click.command("report")
@click.argument("results", nargs=-1, required=True, metavar="RESULTS...")
@click.option("-o", "--output", required=True, help="The HTML file to write.")
@click.option("--point", default=None,
              help="Key (or its first characters) of the collective point whose link utilisation to show "
                   "(default: the first at the largest size).")
@click.option("--title", default=None, help="The report's title.")
def report(results, output, point, title):
    """Write the HTML report of RESULTS (Parquet or CSV files that fabricsim sweep wrote)."""
    from fabricsim import api

    path = api.report(list(results), output, point=point, title=title)
    click.echo(f"report of {', '.join(results)} -> {path}")
