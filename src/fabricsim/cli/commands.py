"""The list of subcommands `fabricsim` offers, one module each."""

from __future__ import annotations

from fabricsim.cli.perf import perf
from fabricsim.cli.topo import topo

ALL: list = [perf, topo]
