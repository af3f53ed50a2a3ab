"""The work a resumed run skips: instances, cells and sweeps already made in its folders.

:func:`finished_work` reads them; :func:`udbench.tuning.plan.remaining_rows` takes them out
of a plan.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["FinishedWork", "finished_work"]


@dataclass
class FinishedWork:
    """What a resumed run skips (:func:`finished_work`).

    Attributes
    ----------
    tasks : set of str
        Task ids with a task file.
    cells : set of (str, str)
        ``(task id, method name)`` pairs with an ok cell.
    sweeps : set of (str, str)
        ``(method name, condition key)`` pairs with a tuned record (a finished sweep).
    """

    tasks: set[str] = field(default_factory=set)
    cells: set[tuple[str, str]] = field(default_factory=set)
    sweeps: set[tuple[str, str]] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.tasks or self.cells or self.sweeps)


def finished_work(
    tasks: str | os.PathLike[str] | None = None,
    results: str | os.PathLike[str] | None = None,
    tuning: str | os.PathLike[str] | None = None,
) -> FinishedWork:
    """The instances, cells and sweeps already made in a run's folders (any may be None or
    absent).

    Counted by name, as :func:`~udbench.tuning.plan.plan_grid` counts: a task file is taken as
    done without being verified (``generate`` re-makes a damaged one), a method with overrides
    counts as its name, and a sweep counts as done only once its record is written (a partly run
    sweep is projected whole).
    """
    from udbench._validation import UdbenchError

    done = FinishedWork()
    if tasks is not None and Path(tasks).is_dir():
        done.tasks = {p.stem for p in Path(tasks).glob("*.npz")}
    if results is not None and Path(results).is_dir():
        from udbench.evaluation.store import read_results

        try:
            df = read_results(results)
        except UdbenchError:  # no cell stored yet
            df = None
        if df is not None and len(df) and {"task_id", "method", "status"} <= set(df.columns):
            ok = df[df["status"] == "ok"]
            pairs = zip(ok["task_id"].astype(str), ok["method"].astype(str), strict=True)
            done.cells = set(pairs)
    if tuning is not None and Path(tuning).is_dir():
        from udbench.tuning.records import load_records

        try:
            records = load_records(tuning)
        except UdbenchError:
            records = []
        done.sweeps = {(str(r["method"]), str(r["condition"])) for r in records}
    return done
