"""Ctrl-C in a command: one line naming what is kept and how to resume, exit status 130.

The one printer is :func:`udbench.cli.main`. A command that knows what its interrupt keeps
wraps its work in :func:`on_interrupt`, which turns the ``KeyboardInterrupt`` into
:class:`Interrupted` carrying that text; any other command's interrupt gets the generic
:data:`GENERIC_NOTE` (udbench writes every file whole, and a re-run skips what is finished).
A command that starts ``udbench`` in a child process and reports the interrupt itself (``udbench
suite``) sets :data:`QUIET_ENV` for the child, so that the user reads one line, not two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = [
    "EXIT_INTERRUPTED",
    "GENERIC_NOTE",
    "QUIET_ENV",
    "RESUME",
    "Interrupted",
    "interrupt_line",
    "on_interrupt",
]

#: Exit status after Ctrl-C (128 + SIGINT, the shell's convention).
EXIT_INTERRUPTED = 130
#: How an interrupted command resumes, unless it says otherwise.
RESUME = "re-run the same command to resume"
#: What an interrupt keeps, for a command that does not say more.
GENERIC_NOTE = f"the files finished before it are kept (each is written whole); {RESUME}"
#: Environment variable set for a child ``udbench`` whose parent reports the interrupt.
QUIET_ENV = "UDBENCH_INTERRUPT_REPORTED_BY_PARENT"


class Interrupted(Exception):
    """A Ctrl-C, with what is kept and how to resume (the text after ``interrupted;`` and a space).

    An :class:`Exception`, not a ``KeyboardInterrupt``: the CLI framework turns the latter
    into a bare exit status 130 and the text would be lost.
    """

    def __init__(self, kept: str, resume: str = RESUME) -> None:
        super().__init__(f"{kept}; {resume}")


def interrupt_line(command: str, note: str = GENERIC_NOTE) -> str:
    """The one line printed for an interrupted ``command``: ``<command>: interrupted; <note>``."""
    return f"{command}: interrupted; {note}"


@contextmanager
def on_interrupt(kept: Callable[[], str], resume: str = RESUME) -> Iterator[None]:
    """Turn a Ctrl-C in the block into :class:`Interrupted` (``kept()`` is asked then).

    Parameters
    ----------
    kept : callable
        Returns what the interrupt keeps, e.g. ``"3 cell(s) ... are kept in res/"``.
    resume : str
        How to resume (default :data:`RESUME`).
    """
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(kept(), resume) from None
