"""The `fabricsim` command: a group whose subcommands are imported only when one runs (start-up stays lean).

Exit status: 0 ok, 1 a failed check (e.g. `verify` found a wrong result), 2 bad input (a `FabricsimError`
or a usage error, printed as one line on stderr), 130 interrupted. A reader that closes the pipe early
(`fabricsim perf ... | head`) ends the run quietly with status 1, click's rule for a broken pipe.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys

import click

from fabricsim import __version__
from fabricsim.cli.commands import COMMANDS
from fabricsim.errors import FabricsimError

EXIT_OK, EXIT_FAILED_CHECK, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when that subcommand is asked for."""

    def __init__(self, *args, lazy: dict[str, str], **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            module, _, attr = self.lazy[cmd_name].partition(":")
            command = getattr(importlib.import_module(module), attr)
            _loaded()
            return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="fabricsim")
def cli() -> None:
    """fabricsim: how fast will these GPUs talk to each other, and how fast will my model train?"""


# click >= 8.2 raises this (a UsageError whose message is the whole help) for a group run without a command; 8.1
# printed the help itself. () matches nothing.
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


def one_line(text: str) -> str:
    """A message on one line: click's lists of choices span several."""
    return " ".join(text.split())


def _usage_line(err: click.UsageError) -> str:
    where = err.ctx.command_path if err.ctx is not None else "fabricsim"
    return f"error: {one_line(err.format_message())} (see '{where} --help')"


def one_blas_thread() -> None:
    """Have numpy's OpenBLAS start one thread, unless the user chose a number (OPENBLAS_NUM_THREADS) or numpy is
    already loaded (then it is too late, and not this process's start). OpenBLAS starts a thread per core when
    numpy loads, and each spins for a while waiting for work: fabricsim's array operations never hand it any
    worth splitting, so the pool only costs CPU time (about 0.1 s per run on a 2-core machine, which a shared
    machine pays in wall time too) and makes a dot product's rounding depend on the core count. Worker processes
    a command starts (sweep's pool) inherit the setting."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main(argv: list[str] | None = None) -> int:
    """Run `fabricsim` with `argv` (default: the process's) and return the exit status; bad input prints one
    line on stderr, never a traceback."""
    one_blas_thread()
    try:
        rv = cli.main(args=argv, prog_name="fabricsim", standalone_mode=False)
    except FabricsimError as err:
        click.echo(f"error: {one_line(str(err))}", err=True)
        return EXIT_BAD_INPUT
    except _NO_ARGS_IS_HELP as err:  # `fabricsim` or `fabricsim topo` alone: the help, as it reads
        click.echo(err.format_message(), err=True)
        return EXIT_BAD_INPUT
    except click.UsageError as err:
        click.echo(_usage_line(err), err=True)
        return EXIT_BAD_INPUT
    except click.ClickException as err:  # e.g. a file option click could not open
        click.echo(f"error: {one_line(err.format_message())}", err=True)
        return err.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    return rv if isinstance(rv, int) else EXIT_OK


_DEFERRED: list[bool] = []  # [True] while a fresh process (`run`) holds the cyclic collector back until its command is loaded


def _loaded() -> None:
    """The command's modules are loaded: in a fresh process (`run`), move everything allocated so far, which lives as
    long as the process, out of the cyclic collector's reach (gc.freeze) and let it run. Collecting during the
    imports finds no garbage (modules, classes and functions stay), and without the freeze every later collection
    of the run would walk the tens of thousands of objects they left (about 5% of a `perf` run's instructions)."""
    if _DEFERRED:
        _DEFERRED.clear()
        gc.freeze()
        gc.enable()


def run() -> None:
    """The console script: exit with `main()`'s status (the collector starts once the command is loaded)."""
    if gc.isenabled():
        gc.disable()
        _DEFERRED.append(True)
    try:
        status = main()
    finally:
        _loaded()
    sys.exit(status)


if __name__ == "__main__":
    run()
