"""Options shared by several subcommands."""

from __future__ import annotations

import click


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
