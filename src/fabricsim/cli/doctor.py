"""`fabricsim doctor`: a real nccl-tests log against what its cluster should deliver, and why it falls short."""

from __future__ import annotations

import click

from fabricsim.cli.options import notes, parse_env
from fabricsim.schedules import COLLECTIVES


@click.command("doctor")
@click.argument("log_path", metavar="LOG")
@click.option("--cluster", "-c", default=None,
              help="Preset (fabricsim topo list) or cluster YAML the run used; default: inferred from the log.")
@click.option("--topo", "topo_files", multiple=True,
              help="An accompanying dump (NCCL topology XML, nvidia-smi topo -m, ibstat, ibv_devinfo); repeatable.")
@click.option("--env", "env_pairs", multiple=True,
              help="An NCCL variable the run set that the log does not print, NCCL_NAME=VALUE; repeatable.")
@click.option("--nccl-version", default=None, help="The NCCL release the run used, where the log does not say.")
@click.option("--collective", default=None, type=click.Choice(COLLECTIVES),
              help="Only for logs that do not name their collective.")
@click.option("--gpu", default=None, help="Catalog GPU, where the log does not name it (inference only).")
@click.option("--gpus", type=int, default=None,
              help="The run's rank count, where the log does not print it (-g 4 on an 8-GPU preset: its first 4).")
@click.option("--threshold", default=25.0, show_default=True, type=float,
              help="Percent below the predicted busbw at which a size falls short.")
@click.option("--level", default="flow", show_default=True, type=click.Choice(["flow", "analytical"]),
              help="fabricsim's engine fidelity for the predictions.")
@click.option("--format", "fmt", default="text", show_default=True, type=click.Choice(["text", "json"]))
def doctor(log_path, cluster, topo_files, env_pairs, nccl_version, collective, gpu, gpus, threshold, level, fmt):
    """Diagnose a real nccl-tests LOG: where it falls short of its hardware, and the likely causes."""
    from fabricsim import api
    from fabricsim.diagnosis import report

    d = api.doctor(log_path, cluster, topo=topo_files, env=parse_env(env_pairs), nccl_version=nccl_version,
                   collective=collective, gpu=gpu, gpus=gpus, threshold=threshold, level=level)
    if cluster is not None:
        notes(api.gpu_notes(d.facts.text, d.target.spec.gpu, str(cluster)))
    click.echo(report.json_doc(d) if fmt == "json" else report.text(d), nl=False)
