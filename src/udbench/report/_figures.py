"""Matplotlib figures without pyplot: an Agg canvas per figure, no display, no global state."""

from __future__ import annotations

import io
from typing import Any

__all__ = ["figure", "png"]


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
