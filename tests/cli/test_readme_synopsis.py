"""The README's command synopsis names only options the commands have, and the log commands' --collective
(most saved nccl-tests logs do not name their collective)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from fabricsim.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]


def synopsis(command: str) -> str:
    """The README's synopsis lines of `fabricsim COMMAND` (its first line and the indented lines after it)."""
    lines = (ROOT / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"fabricsim {command} "))
    out = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith(" "):
            break
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("command", ["compare", "doctor", "calibrate"])
def test_the_log_commands_synopsis_names_collective_and_only_real_options(command):
    shown = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", synopsis(command)))
    cmd = cli.get_command(click.Context(cli), command)
    real = {opt for p in cmd.params for opt in getattr(p, "opts", ()) if opt.startswith("--")}
    assert "--collective" in shown
    assert shown <= real, shown - real
