"""Matplotlib figures without pyplot: an Agg canvas per figure, no display, no global state.

Also the helpers every report figure shares so that none drops or confuses a method:

- :func:`method_styles`: a colour, marker and line style per method, distinct for every
  method (colours distinct up to 20 methods, the (colour, marker) pair up to 140);
- :func:`grid_shape`: rows × columns of small multiples (one panel per method);
- :func:`no_overlap`: the pairs of text labels of a drawn figure that overlap (tests use it).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

__all__ = ["MARKERS", "figure", "grid_shape", "method_styles", "no_overlap", "png"]

#: Markers cycled per method (7, coprime with the 20 colours: pairs repeat after 140).
MARKERS: tuple[str, ...] = ("o", "s", "D", "^", "v", "P", "X")
_LINESTYLES = ("-", "--", ":", "-.")


def figure(**kw: Any) -> Any:
    """A matplotlib ``Figure`` drawn by the Agg canvas (keywords go to ``Figure``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(**kw)
    FigureCanvasAgg(fig)
    return fig


def png(fig: Any) -> bytes:
    """The figure as PNG bytes (110 dpi, tight bounding box)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def method_styles(methods: Sequence[str]) -> dict[str, dict[str, Any]]:
    """A distinct ``color``, ``marker`` and ``linestyle`` for every method, in the given order.

    Colours are matplotlib's 20 ``tab20`` colours, the strong ones first, so up to 20
    methods get 20 different colours; markers cycle through :data:`MARKERS` and the line
    style changes every 20 methods, so the (colour, marker, line style) of two methods never
    coincide (for up to 560 methods).

    Parameters
    ----------
    methods : sequence of str
        Method labels (duplicates get one style).

    Returns
    -------
    dict
        Label -> keywords for ``Axes.plot`` / ``Axes.errorbar``.
    """
    from matplotlib import colormaps

    palette = colormaps["tab20"](range(20))  # a ListedColormap of 20 colours
    order = [*range(0, 20, 2), *range(1, 20, 2)]  # strong colours first, then their light pairs
    out: dict[str, dict[str, Any]] = {}
    for m in methods:
        if m in out:
            continue
        i = len(out)
        out[m] = {
            "color": tuple(float(c) for c in palette[order[i % 20]]),
            "marker": MARKERS[i % len(MARKERS)],
            "linestyle": _LINESTYLES[(i // 20) % len(_LINESTYLES)],
        }
    return out


def grid_shape(n: int, max_columns: int = 5) -> tuple[int, int]:
    """Rows and columns of ``n`` small multiples, at most ``max_columns`` per row (n ≥ 1)."""
    n = max(int(n), 1)
    columns = min(n, max_columns)
    return -(-n // columns), columns


def no_overlap(fig: Any) -> list[tuple[str, str]]:
    """The pairs of visible, non-empty text labels of ``fig`` whose boxes overlap.

    Draws the figure (Agg) and compares the window extents of every title, axis label,
    tick label, legend text and free text; used by the tests to show that long labels and
    dense ticks do not run into each other. Texts inside one legend are not compared with
    the legend's own frame.
    """
    from matplotlib.text import Text

    def ax_hidden(t: Any) -> bool:
        ax = t.axes
        return ax is not None and not ax.get_visible()

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    hidden: set[int] = set()  # labels of ticks outside the view limits are not drawn
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            span = (high - low) * 1e-9
            for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                if not low - span <= tick.get_loc() <= high + span:
                    hidden.update({id(tick.label1), id(tick.label2)})
    texts = [
        t
        for t in fig.findobj(Text)
        if t.get_visible()
        and t.get_text().strip()
        and t.get_figure() is not None
        and id(t) not in hidden
        and (not ax_hidden(t))
    ]
    boxes = []
    for t in texts:
        try:
            boxes.append((t, t.get_window_extent(renderer)))
        except (RuntimeError, ValueError):  # a text without a position
            continue
    clashes = []
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1 :]:
            if box_a.width * box_a.height == 0 or box_b.width * box_b.height == 0:
                continue
            inter_w = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            inter_h = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            if inter_w > 0.5 and inter_h > 0.5:  # more than touching (half a pixel)
                clashes.append((a.get_text(), b.get_text()))
    return clashes
