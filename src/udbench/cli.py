"""The ``udbench`` command-line interface: one entry point with sub-commands.

Each area of the package contributes its sub-commands from a module in
:mod:`udbench.commands` exposing ``register(app)``; this file only wires them together
and is the single error boundary of the commands. Exit status 2 and a one-line message,
without a traceback, for the kinds of error a user causes and can fix:

- user errors (:class:`udbench._validation.UdbenchError`: bad values, unreadable results
  stores and input files, bad cluster settings);
- operating-system errors on a named file or folder (:class:`OSError` with a ``filename``:
  a read-only output folder or cache, a full disk, a path under a file), with the path and
  the system's reason.

A Ctrl-C gives exit status 130 and one line, ``udbench CMD: interrupted; <what is kept>;
<how to resume>`` (:mod:`udbench.commands._interrupt`). Anything else is a bug and keeps its
traceback. Warnings meant for the user
(:class:`udbench._validation.UdbenchWarning`, e.g. a skipped results part file) are printed
as one line ``warning: ...``.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import signal
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.markup import escape

from udbench import __version__
from udbench._validation import UdbenchError, UdbenchWarning
from udbench.commands._console import make_console
from udbench.commands._interrupt import (
    EXIT_INTERRUPTED,
    GENERIC_NOTE,
    QUIET_ENV,
    Interrupted,
    interrupt_line,
)

#: Modules under ``udbench.commands`` whose ``register(app)`` adds sub-commands.
COMMAND_MODULES: tuple[str, ...] = (
    "datasets",
    "tasks",
    "methods",
    "run",
    "risk",
    "analyze",
    "tuning",
    "validation",
    "score",
    "transfer",
    "study",
    "suite",
    "campaign",
)

app = typer.Typer(
    name="udbench",
    help=(
        "Score uncertainty-quantification methods for regression and classification against "
        "ground-truth aleatoric and epistemic uncertainty (reference posteriors correct by "
        "construction)."
    ),
    no_args_is_help=True,
    add_completion=True,
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


def _flags_show_no_type() -> None:
    """Show a boolean flag as a flag in ``--help``, not as ``--json <bool>``.

    typer 0.29's rich help prints every option's type, flags included; a flag takes no value,
    so its type column is left empty (options with values keep theirs).
    """
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich
    if getattr(shown, "_udbench_flags", False):
        return

    def display_type_rich(self: TyperOption, ctx: object) -> str | None:
        return None if self.is_flag else shown(self, ctx)  # type: ignore[arg-type]

    display_type_rich._udbench_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_show_no_type()

for _name in COMMAND_MODULES:
    importlib.import_module(f"udbench.commands.{_name}").register(app)


_LITERAL = re.compile(r"``([^`]+)``|`([^`]+)`")


def plain_help(text: str | None) -> str | None:
    """A command's help as ``--help`` should show it: no RST markup, no hard line breaks.

    Docstrings are wrapped at 100 characters in the source; Typer keeps those breaks, so a
    sentence breaks mid-line at whatever the terminal's width. Each paragraph (blank-line
    separated) becomes one line, which the terminal wraps; a list item (``- ``, ``* ``,
    ``1. ``) starts a line of its own. Literals written ````x```` or ```x``` are shown as
    ``'x'`` (the quoting of the other help texts).
    """
    if not text:
        return text
    text = _LITERAL.sub(lambda m: f"'{m.group(1) or m.group(2)}'", text)
    paragraphs = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines: list[str] = []
        for raw in block.splitlines():
            line = raw.strip()
            if lines and not re.match(r"([-*]|\d+\.) ", line):
                lines[-1] = f"{lines[-1]} {line}"
            else:
                lines.append(line)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def _tidy_help(typer_app: typer.Typer) -> None:
    """:func:`plain_help` for every command, group and option help of ``typer_app``."""
    typer_app.info.help = plain_help(typer_app.info.help)  # type: ignore[assignment]
    for command in typer_app.registered_commands:
        if command.callback is None:
            continue
        command.help = plain_help(command.help or inspect.getdoc(command.callback))
        for parameter in inspect.signature(command.callback).parameters.values():
            info = parameter.default
            if isinstance(getattr(info, "help", None), str):
                info.help = plain_help(info.help)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _tidy_help(group.typer_instance)


_tidy_help(app)


def _print_error(text: str) -> None:
    # the message is plain text: escape it, or rich would eat "[...]" in user values
    make_console(stderr=True).print(
        f"[bold red]error:[/] {escape(text)}", highlight=False, soft_wrap=True, markup=True
    )


def os_error_message(err: OSError, command: str = "udbench") -> str:
    """One line for an operating-system error on a file: the command, the path, the reason.

    E.g. ``udbench run: cannot write or read '/ro/x': Permission denied (check the path and its
    permissions, or choose another folder)`` for ``PermissionError(13, "Permission denied",
    "/ro/x")``.
    """
    path = err.filename if err.filename2 is None else f"{err.filename} -> {err.filename2}"
    reason = err.strerror or type(err).__name__
    return (
        f"{command}: cannot write or read {str(path)!r}: {reason} "
        "(check the path and its permissions, or choose another folder)"
    )


@contextmanager
def _one_line_warnings() -> Iterator[None]:
    """Show :class:`UdbenchWarning` as ``warning: <message>`` on stderr (others unchanged)."""
    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
            if isinstance(category, type) and issubclass(category, UdbenchWarning):
                make_console(stderr=True).print(
                    f"[yellow]warning:[/] {escape(str(message))}",
                    highlight=False,
                    soft_wrap=True,
                    markup=True,
                )
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


@contextmanager
def _sigint_seen() -> Iterator[list[int]]:
    """Note each SIGINT (then raise ``KeyboardInterrupt`` as Python does) while in the block.

    The CLI framework turns a ``KeyboardInterrupt`` into a bare exit status 130; this tells
    that status from a command's own. Left alone where SIGINT is ignored or handled otherwise.
    """
    seen: list[int] = []

    def note(signum: int, frame: Any) -> None:
        seen.append(signum)
        signal.default_int_handler(signum, frame)

    try:
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            raise ValueError("not ours to handle")
        previous = signal.signal(signal.SIGINT, note)
    except ValueError:  # not the main thread, or SIGINT ignored / handled by the caller
        yield seen
        return
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def _say_interrupted(command: str, note: str = GENERIC_NOTE) -> int:
    if not os.environ.get(QUIET_ENV):
        make_console(stderr=True).print(
            interrupt_line(command, note), highlight=False, markup=False, soft_wrap=True
        )
    return EXIT_INTERRUPTED


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit status (0 ok, 2 user error, 130 interrupted)."""
    args = sys.argv[1:] if argv is None else list(argv)
    command = "udbench" if not args or args[0].startswith("-") else f"udbench {args[0]}"
    try:
        with _one_line_warnings(), _sigint_seen() as seen:
            result = app(args=argv, standalone_mode=False)
        if isinstance(result, int):  # click returns typer.Exit(code)'s code here
            if result == EXIT_INTERRUPTED and seen:  # typer's Exit(130) for a Ctrl-C
                return _say_interrupted(command)
            return result
    except Interrupted as err:  # a command that says what its interrupt keeps
        return _say_interrupted(command, str(err))
    except UdbenchError as err:
        _print_error(str(err))
        return 2
    except OSError as err:
        if err.filename is None:  # not about a path the user chose: a bug or an outage
            raise
        _print_error(os_error_message(err, command))
        return 2
    except typer.Exit as ex:
        return int(ex.exit_code or 0)
    except (typer.Abort, KeyboardInterrupt):  # click turns Ctrl-C into Abort
        return _say_interrupted(command)
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
