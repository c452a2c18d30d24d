"""The one exception type users see (a message that names the problem and the fix), and how a message names an
option: as the `fabricsim` command spells it while a command runs, as the Python keyword otherwise."""

from __future__ import annotations

import sys

_NO_VALUE = object()


class FabricsimError(Exception):
    """Bad input or an impossible request. The CLI prints `str(err)` alone, with no traceback."""


def _on_command_line() -> bool:
    """Whether a `fabricsim` command is running: click has a current context (click is imported only by the CLI,
    so a Python caller never pays for the check)."""
    click = sys.modules.get("click")
    return click is not None and click.get_current_context(silent=True) is not None


def option(name: str, value: object = _NO_VALUE, *, flag: str | None = None) -> str:
    """An option as the caller wrote it: `--gpus 8` inside a `fabricsim` command, `gpus=8` from Python (a list
    is `--gpus 8,64` there). `name` is the Python keyword; `flag` is the command's spelling where it is not
    `--name` with dashes (e.g. '-e' for `maxbytes`)."""
    if _on_command_line():
        text = flag or "--" + name.replace("_", "-")
        if isinstance(value, (list, tuple)):
            value = ",".join(map(str, value))
        return text if value is _NO_VALUE else f"{text} {value}"
    return name if value is _NO_VALUE else f"{name}={value!r}"
