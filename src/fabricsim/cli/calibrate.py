"""`fabricsim calibrate`: fit the cluster's declared physical parameters to the user's nccl-tests logs and write
the calibrated cluster file."""

from __future__ import annotations

from pathlib import Path

import click

from fabricsim.cli.options import parse_env
from fabricsim.errors import FabricsimError
from fabricsim.schedules import COLLECTIVES


@click.command("calibrate")
@click.argument("logs", metavar="LOG [LOG...]", nargs=-1, required=True)
@click.option("--cluster", "-c", required=True, help="Preset (fabricsim topo list) or cluster YAML the logs ran on.")
@click.option("--output", "-o", required=True, help="Cluster YAML to write, with the fitted `calibrated:` section.")
@click.option("--env", "env_pairs", multiple=True,
              help="An NCCL variable the runs set that the logs do not print, NCCL_NAME=VALUE; repeatable.")
@click.option("--nccl-version", default=None, help="The NCCL release the runs used, where the logs do not say.")
@click.option("--collective", default=None, type=click.Choice(COLLECTIVES),
              help="Only for logs that do not name their collective.")
@click.option("--gpus", type=int, default=None, help="The runs' rank count, where the logs do not print it.")
@click.option("--nodes", type=int, default=None, help="The runs' node count, where the logs do not print their hosts.")
def calibrate(logs, cluster, output, env_pairs, nccl_version, collective, gpus, nodes):
    """Fit network/NVLink/PCIe efficiency and per-step/launch latency to LOG(s) measured on --cluster; write -o."""
    from fabricsim import api
    from fabricsim.topology import save_cluster

    out = Path(output)
    if out.suffix not in (".yaml", ".yml"):
        raise FabricsimError(f"-o {output}: write the calibrated cluster as a .yaml file, e.g. -o mycluster.yaml")
    if any(Path(log).resolve() == out.resolve() for log in logs):
        raise FabricsimError(f"-o {output} is one of the logs: name another file")
    result = api.calibrate(list(logs), cluster, env=parse_env(env_pairs), nccl_version=nccl_version,
                           collective=collective, gpus=gpus, nodes=nodes)
    save_cluster(result.spec, out)
    click.echo(result.text(), nl=False)
    click.echo(f"wrote {out}: `fabricsim perf --cluster {out} ...` predicts with the fitted values")
