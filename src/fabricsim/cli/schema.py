"""`fabricsim schema`: the JSON Schema of a cluster, model, sweep or jobs file, for editors to validate and complete."""

from __future__ import annotations

import json

import click

from fabricsim import inputs


def _schemas() -> dict:
    from fabricsim.multijob.spec import JobsFile
    from fabricsim.sweeps.spec import schema as sweep_schema
    from fabricsim.topology.spec import ClusterSpec
    from fabricsim.training.models import ModelSpec

    return {"cluster": ClusterSpec, "model": ModelSpec, "sweep": sweep_schema(), "jobs": JobsFile}


@click.command("schema")
@click.argument("kind", type=click.Choice(["cluster", "model", "sweep", "jobs"]))
def schema(kind: str) -> None:
    """Print the JSON Schema of a KIND file (cluster: `--cluster FILE.yaml`, model: `train --model FILE.yaml`, sweep:
    `fabricsim sweep FILE.yaml`, jobs: `fabricsim jobs FILE.yaml`).

    Editors validate YAML against it, e.g. with a `# yaml-language-server: $schema=cluster.schema.json` first line."""
    click.echo(json.dumps(inputs.json_schema(_schemas()[kind]), indent=2, sort_keys=True))
