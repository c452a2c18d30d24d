"""Every command that takes --cluster also takes -c, as perf, compare and whatif do (train had only --cluster)."""

from __future__ import annotations

import click

from fabricsim.cli.main import cli


def _commands(group: click.Group, ctx: click.Context):
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, click.Context(cmd, parent=ctx))
        elif cmd is not None:
            yield name, cmd


def test_every_cluster_option_has_its_short_form():
    missing = [name for name, cmd in _commands(cli, click.Context(cli))
               for p in cmd.params if "--cluster" in getattr(p, "opts", ()) and "-c" not in p.opts]
    assert not missing, missing
