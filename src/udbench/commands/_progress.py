"""The progress bar of a run, drawn by the command layer from the runner's ``on_cell`` callback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from udbench.evaluation.runner import CellCallback

__all__ = ["cell_progress"]


@contextmanager
def cell_progress(enabled: bool = True, console: Any = None) -> Iterator[CellCallback | None]:
    """A rich progress bar of cells (done/total, ok and failed counts, elapsed and remaining).

    Parameters
    ----------
    enabled : bool, default True
        If False, yield None (no bar).
    console : rich.console.Console, optional
        Where to draw it (default: :func:`udbench.commands._console.make_console`).

    Yields
    ------
    callable or None
        ``on_cell(done, total, row)`` for :func:`udbench.evaluation.runner.run_benchmark`.
    """
    if not enabled:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    if console is None:
        from udbench.commands._console import make_console

        console = make_console()
    counts = {"ok": 0, "failed": 0}
    ids: list[Any] = []
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("ok {task.fields[ok]} · failed {task.fields[failed]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        transient=False,
        console=console,
    ) as bar:
        # until the runner has planned the cells (reading every task file's checksum) and
        # started its workers, say so instead of showing nothing
        ids.append(
            bar.add_task(
                "preparing (reading task files, starting workers)", total=None, ok=0, failed=0
            )
        )

        def on_cell(done: int, total: int, row: dict[str, Any] | None) -> None:
            if bar.tasks[0].total is None:
                bar.update(ids[0], description="cells", total=total)
            if row is not None:
                counts["ok" if row["status"] == "ok" else "failed"] += 1
            bar.update(
                ids[0], completed=done, total=total, ok=counts["ok"], failed=counts["failed"]
            )

        yield on_cell
