"""The Rich consoles of the command-line interface: user text is never markup.

Everything udbench prints may hold text from the user or the file system: output paths
(``--out 'a[/]b'``), method labels (``blr [/] v2``), dataset names, error messages quoting
values. Rich reads ``[...]`` in a printed string as markup (``[/]`` closes a style and, without
one open, raises ``MarkupError``; ``[bold]mark[/]`` loses its brackets) and ``:smile:`` as an
emoji code (``res:smile:`` would be printed as ``res😄``, a path nobody can copy). So every
console of udbench is made here, with markup and emoji codes **off**: strings and table cells
print as they are. A line that styles its own fixed words opts in with ``markup=True`` and
escapes every value it interpolates (:func:`rich.markup.escape`); a styled table cell is a
:class:`rich.text.Text` (:func:`styled`).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

__all__ = ["make_console", "styled"]


def make_console(**kwargs: Any) -> Console:
    """A :class:`rich.console.Console` with markup and emoji codes off by default.

    Parameters
    ----------
    **kwargs
        Passed to :class:`~rich.console.Console` (``stderr=True``, ``width=…``); ``markup``
        and ``emoji`` default to False.
    """
    kwargs.setdefault("markup", False)
    kwargs.setdefault("emoji", False)
    return Console(**kwargs)


def styled(text: str, style: str) -> Text:
    """``text`` as it is (no markup, no emoji codes) in ``style``, e.g. a coloured table cell."""
    return Text(str(text), style=style)
