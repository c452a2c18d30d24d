"""Options shared by several subcommands."""

from __future__ import annotations

import click


def size_options(f):
    """--nodes / --gpus: how big to build a preset cluster."""
    f = click.option("--gpus", type=int, default=None, help="Total GPUs (whole nodes / racks); presets only.")(f)
    return click.option("--nodes", type=int, default=None, help="Nodes (servers or NVL72 trays); presets only.")(f)


def split_list(text: str | None) -> list[str] | None:
    """'ring,tree' -> ['ring', 'tree'] (lower case); None or '' -> None."""
    if not text:
        return None
    return [t.strip().lower() for t in text.split(",") if t.strip()]
