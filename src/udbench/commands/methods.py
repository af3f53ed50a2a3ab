"""``udbench`` sub-commands of this area (filled in by its issue)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's sub-commands to ``app``."""
