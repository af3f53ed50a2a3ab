"""The ``udbench`` command-line interface: one entry point with sub-commands.

Each area of the package contributes its sub-commands from a module in
:mod:`udbench.commands` exposing ``register(app)``; this file only wires them together
and turns user errors (:class:`udbench._validation.UdbenchError`) into a one-line
message and exit status 2, without a traceback.
"""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console
from rich.markup import escape

from udbench import __version__
from udbench._validation import UdbenchError

#: Modules under ``udbench.commands`` whose ``register(app)`` adds sub-commands.
COMMAND_MODULES: tuple[str, ...] = ("datasets", "tasks", "methods", "run", "risk")

app = typer.Typer(
    name="udbench",
    help=(
        "Score uncertainty-quantification methods for regression against ground-truth "
        "aleatoric and epistemic uncertainty (reference posteriors correct by construction)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"udbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version."
    ),
) -> None:
    """udbench: ground-truth benchmark for aleatoric and epistemic uncertainty."""


for _name in COMMAND_MODULES:
    importlib.import_module(f"udbench.commands.{_name}").register(app)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit status (0 ok, 2 user error)."""
    try:
        result = app(args=argv, standalone_mode=False)
        if isinstance(result, int):  # click returns typer.Exit(code)'s code here
            return result
    except UdbenchError as err:
        # the message is plain text: escape it, or rich would eat "[...]" in user values
        Console(stderr=True).print(
            f"[bold red]error:[/] {escape(str(err))}", highlight=False, soft_wrap=True
        )
        return 2
    except typer.Exit as ex:
        return int(ex.exit_code or 0)
    except typer.Abort:
        return 130
    except SystemExit as ex:  # click usage errors in standalone_mode=False still exit
        return int(ex.code or 0)
    except Exception as err:  # click exceptions (bad option, missing argument)
        import click

        # typer >= 0.2x vendors its own click (``typer._click``), whose exceptions derive from
        # ``typer.TyperException``, not from ``click.ClickException``: accept both.
        if isinstance(err, (click.ClickException, typer.TyperException)) and hasattr(err, "show"):
            err.show()
            return int(getattr(err, "exit_code", 2))
        raise
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
