"""Options shared by several subcommands."""

from __future__ import annotations

import click


def routing_option(f):
    """--routing: override the cluster's fat-tree routing (what-if: adaptive routing on a static fabric)."""
    return click.option("--routing", default=None, type=click.Choice(["ecmp", "adaptive"]),
                        help="Fat-tree routing: ecmp (one hashed path per flow) or adaptive (flows spread over all "
                             "paths); default: the cluster's.")(f)


def load_topology(cluster: str, nodes: int | None, gpus: int | None, routing: str | None):
    """The cluster's topology, with its routing replaced when --routing is given."""
    from dataclasses import replace

    from fabricsim.topology import build, load_spec

    spec = load_spec(cluster, nodes=nodes, gpus=gpus)
    return build(replace(spec, routing=routing) if routing else spec)


def size_options(f):
    """--nodes / --gpus: how big to build a preset cluster."""
    f = click.option("--gpus", type=int, default=None, help="Total GPUs (whole nodes / racks); presets only.")(f)
    return click.option("--nodes", type=int, default=None, help="Nodes (servers or NVL72 trays); presets only.")(f)


def engine_options(f):
    """--algo / --proto / --level / --model: how a prediction is made (perf, compare)."""
    f = click.option("--model", default="fabricsim", show_default=True, type=click.Choice(["fabricsim", "nccl"]),
                     help="fabricsim: simulate every candidate on the topology; nccl: NCCL's own cost model.")(f)
    f = click.option("--level", default="flow", show_default=True, type=click.Choice(["flow", "analytical"]),
                     help="Engine fidelity: flow-level max-min sharing, or the fast per-step bottleneck model.")(f)
    f = click.option("--proto", default=None, help="Force protocols, as NCCL_PROTO: ll, ll128, simple.")(f)
    return click.option("--algo", default=None, help="Force algorithms, as NCCL_ALGO: e.g. ring,tree,nvls.")(f)


def split_list(text: str | None) -> list[str] | None:
    """'ring,tree' -> ['ring', 'tree'] (lower case); None or '' -> None."""
    if not text:
        return None
    return [t.strip().lower() for t in text.split(",") if t.strip()]
