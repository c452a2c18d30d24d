"""The list of subcommands `fabricsim` offers, one module each."""

from __future__ import annotations

ALL: list = []
