"""What every study writes, written one way: tables, figures, a summary and an HTML page.

A study's analysis computes its tables (DataFrames) and figures (Matplotlib figures); a
:class:`StudyWriter` writes them under the study's output folder, in the layout of
``udbench analyze``:

- ``tables/<name>.csv`` (:meth:`pandas.DataFrame.to_csv`) and, with a caption,
  ``tables/<name>.tex`` (:func:`udbench.analyses.latex_table`);
- ``figures/<name>.png`` and ``figures/<name>.svg`` (150 dpi);
- any other text file at the top of the folder (``summary.json``, ``study.html``; the page
  is an :class:`HtmlReport`).

Every path written is appended, in order, to the list the writer was given (the study's
result keeps it).
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["FIGURE_DPI", "FIGURE_FORMATS", "HtmlReport", "StudyWriter"]

#: Formats every figure is written in, in this order.
FIGURE_FORMATS: tuple[str, ...] = ("png", "svg")
#: Resolution of the raster figures (dots per inch).
FIGURE_DPI = 150


@dataclass
class HtmlReport:
    """One self-contained HTML page: a heading, a paragraph, then one section per table.

    Attributes
    ----------
    title : str
        The page's ``<title>``.
    heading : str
        Its ``<h1>``.
    intro : str
        The paragraph under the heading (the setting of every table).
    parts : list of str
        The HTML of the sections added so far (:meth:`section`).
    """

    title: str
    heading: str
    intro: str
    parts: list[str] = field(default_factory=list)

    def section(self, title: str, table: pd.DataFrame, *, figure: str | None = None) -> None:
        """Add ``<h2>title</h2>``, the figure ``figures/<figure>.png`` if named, the table.

        The table is shown as :func:`udbench.analyses.display_table` formats it, without
        its index.
        """
        from udbench.analyses import display_table

        self.parts.append(f"<h2>{html.escape(title)}</h2>")
        if figure is not None:
            self.parts.append(f"<p><img src='figures/{figure}.png' alt='{html.escape(title)}'></p>")
        self.parts.append(display_table(table).to_html(index=False))

    def render(self) -> str:
        """The page's text (lines joined by newlines, no trailing newline)."""
        head = (
            "<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(self.title)}</title></head><body>"
            f"<h1>{html.escape(self.heading)}</h1>"
        )
        return "\n".join([head, f"<p>{html.escape(self.intro)}</p>", *self.parts, "</body></html>"])


class StudyWriter:
    """Writes a study's files under ``root`` and records each path in ``files``.

    Parameters
    ----------
    root : str or Path
        The output folder; ``root/tables`` and ``root/figures`` are made (with parents)
        when the writer is made.
    files : list of Path, optional
        The list every written path is appended to (default a new one: :attr:`files`).
    """

    def __init__(self, root: str | os.PathLike[str], files: list[Path] | None = None) -> None:
        self.root = Path(root)
        self.files: list[Path] = [] if files is None else files
        (self.root / "tables").mkdir(parents=True, exist_ok=True)
        (self.root / "figures").mkdir(parents=True, exist_ok=True)

    def _add(self, path: Path) -> Path:
        self.files.append(path)
        return path

    def csv(self, name: str, table: pd.DataFrame, *, index: bool = False) -> Path:
        """Write ``tables/<name>.csv`` (with the index if ``index``); its path."""
        path = self.root / "tables" / f"{name}.csv"
        table.to_csv(path, index=index)
        return self._add(path)

    def latex(self, name: str, table: pd.DataFrame, *, caption: str, label: str) -> Path:
        """Write ``tables/<name>.tex`` (:func:`udbench.analyses.latex_table`); its path."""
        from udbench.analyses import latex_table

        path = self.root / "tables" / f"{name}.tex"
        path.write_text(latex_table(table, caption=caption, label=label), encoding="utf-8")
        return self._add(path)

    def table(
        self,
        name: str,
        table: pd.DataFrame,
        *,
        caption: str,
        label: str,
        index: bool = False,
    ) -> list[Path]:
        """Write a table as CSV (:meth:`csv`) then LaTeX (:meth:`latex`); both paths."""
        return [
            self.csv(name, table, index=index),
            self.latex(name, table, caption=caption, label=label),
        ]

    def figure(self, name: str, fig: Any) -> list[Path]:
        """Save a Matplotlib figure as ``figures/<name>.<fmt>`` for :data:`FIGURE_FORMATS`."""
        out = []
        for fmt in FIGURE_FORMATS:
            path = self.root / "figures" / f"{name}.{fmt}"
            fig.savefig(path, format=fmt, dpi=FIGURE_DPI)
            out.append(self._add(path))
        return out

    def text(self, name: str, text: str) -> Path:
        """Write ``root/<name>`` (UTF-8); its path."""
        path = self.root / name
        path.write_text(text, encoding="utf-8")
        return self._add(path)

    def html(self, name: str, report: HtmlReport) -> Path:
        """Write an :class:`HtmlReport` as ``root/<name>``; its path."""
        return self.text(name, report.render())
