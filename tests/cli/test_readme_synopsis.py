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


def synopses() -> list[tuple[list[str], str]]:
    """Every synopsis of the README's Commands block: (the command path, e.g. ['whatif', 'failures'], its text)."""
    text = (ROOT / "README.md").read_text()
    block = text[text.index("## Commands"):]
    block = block[block.index("```") + 3:]
    block = block[:block.index("```")]
    out: list[tuple[list[str], list[str]]] = []
    for line in block.splitlines():
        if line.startswith("fabricsim "):
            out.append((line.split()[1:], [line]))
        elif line.startswith(" ") and out:
            out[-1][1].append(line)
    found = []
    for words, lines in out:
        cmd, path = cli, []
        for word in words:
            sub = cmd.get_command(click.Context(cmd), word) if isinstance(cmd, click.Group) else None
            if sub is None:
                break
            cmd, path = sub, [*path, word]
        found.append((path, "\n".join(lines)))
    return found


def commands() -> list[tuple[list[str], click.Command, str]]:
    """(command path, the click command it names, its synopsis text) for every synopsis of the Commands block."""
    out = []
    for path, text in synopses():
        cmd = cli
        for word in path:
            cmd = cmd.get_command(click.Context(cmd), word)
        out.append((path, cmd, text))
    return out


def test_every_synopsis_lists_an_options_choices_as_the_command_has_them():
    checked = 0
    for path, cmd, text in commands():
        params = {opt: p for p in cmd.params for opt in getattr(p, "opts", ())}
        for opt, values, more in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)[ =]([\w-][\w.-]*(?:\|[\w-][\w.-]*)+)(\|\.\.\.)?", text):
            param = params.get(opt)
            if param is None or not isinstance(param.type, click.Choice):
                continue  # a file name pattern (out.png|.pdf|.svg), or an option the other test checks
            shown, real = set(values.split("|")), set(param.type.choices)
            assert shown <= real and (more or shown == real), (path, opt, sorted(shown), sorted(real))
            checked += 1
    assert checked >= 10


def test_every_synopsis_names_every_option_its_command_has():
    """A user reading the Commands block sees every option (by its long or short name); hidden ones aside."""
    checked = 0
    for path, cmd, text in commands():
        if isinstance(cmd, click.Group):
            continue
        shown = set(re.findall(r"(?<![\w-])--?[a-zA-Z][\w-]*", text))
        missing = [p.opts[0] for p in cmd.params if isinstance(p, click.Option) and not p.hidden
                   and p.name != "help" and not (set(p.opts) | set(p.secondary_opts)) & shown]
        assert not missing, (path, missing)
        checked += 1
    assert checked >= 15
