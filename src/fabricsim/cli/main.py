"""The `fabricsim` command. Each subcommand lives in its own module of this package."""

from __future__ import annotations

import sys

import click

from fabricsim import __version__
from fabricsim.errors import FabricsimError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="fabricsim")
def cli() -> None:
    """fabricsim: how fast will these GPUs talk to each other, and how fast will my model train?"""


def _register() -> None:
    from fabricsim.cli import commands

    for command in commands.ALL:
        cli.add_command(command)


def main(argv: list[str] | None = None) -> int:
    """Entry point: bad input prints one clear line on stderr and exits 2, never a traceback."""
    _register()
    try:
        cli.main(args=argv, prog_name="fabricsim", standalone_mode=False)
    except FabricsimError as err:
        click.echo(f"error: {err}", err=True)
        return 2
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except click.ClickException as err:
        err.show()
        return err.exit_code
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
