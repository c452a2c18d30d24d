"""`fabricsim topo import`: a cluster file from a real machine's dumps (NCCL XML, nvidia-smi, ibstat, NCCL logs)."""

from __future__ import annotations

from pathlib import Path

import click

from fabricsim.errors import FabricsimError


@click.command("import")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Cluster YAML file to write.")
@click.option("--nodes", type=int, default=None, help="Nodes of this machine (default: the log's nNodes, else 1).")
@click.option("--gpu", default=None, help="GPU model where no input names it (e.g. Azure's ndv5-topo.xml): H100, ...")
@click.option("--name", default=None, help="Cluster name (default: the output file's stem).")
def import_cluster(files, output, nodes, gpu, name):
    """Build a cluster file from NCCL topology XML, nvidia-smi topo -m, ibstat / ibstatus / ibv_devinfo output
    and NCCL_DEBUG=INFO logs of one machine; print what was assumed and what the file cannot express."""
    from fabricsim.importers import import_cluster as run
    from fabricsim.importers.check import compare
    from fabricsim.topology import build, save_cluster

    if not Path(output).resolve().parent.is_dir():
        raise FabricsimError(f"cannot write {output}: its directory does not exist; create it or choose another path")
    imp = run(files, nodes=nodes, gpu=gpu, name=name or Path(output).stem)
    topo = build(imp.spec)
    save_cluster(imp.spec, output)
    s = imp.spec
    net = f"{s.nics_per_node} x {s.nic} {s.nic_gbps:g} Gb/s {s.fabric}" if s.nics_per_node else "no network"
    click.echo(f"wrote {output}: {s.nodes} node{'s' * (s.nodes != 1)} of {s.gpus_per_node} x {s.gpu}, {s.scaleup}"
               + (f" ({s.nvswitch_chips} NVSwitch chips)" if s.nvswitch_chips else "") + f", {net}")
    for line in imp.machine.notes:
        click.echo(f"read: {line}")
    for line in imp.assumptions:
        click.echo(f"assumed: {line}")
    for line in imp.gaps:
        click.echo(f"not expressible: {line}")
    for c in compare(imp, topo):
        verdict = {True: "matches", False: "DIFFERS", None: "not in the inputs"}[c.ok]
        said = f"inputs {c.inputs}, " if c.inputs else ""
        click.echo(f"check: {c.what}: {said}cluster {c.cluster} ({verdict})")
