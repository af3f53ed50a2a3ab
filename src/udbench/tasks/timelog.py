"""The generation log of a task folder: how long each instance took to make.

Task files store no timing (a GP task's bytes depend only on its spec and data, SPEC §6), so
the commands that generate instances (``udbench generate``, ``udbench suite``, the studies)
append one JSON line per generated instance, and one per prior made ready, to the hidden
file :data:`GENERATION_LOG` in the task folder. ``udbench plan --measured TASKS``
(:func:`udbench.tuning.plan.collect_measurements`) projects the ``generate`` stage from it.

An instance line: ``{"task_id", "family", "dataset", "fidelity", "seconds", "utc",
"udbench"}``, ``seconds`` being the wall time of generation (seed replacements, checks) and
save in the worker that made it. A prior line: ``{"prior": family, "dataset", "fidelity",
"seconds", "utc", "udbench"}``, the kernel fit or the cache read (the line does not say which).
Lines are appended by the submitting process only (never by workers), so they never interleave.
"""

from __future__ import annotations

import datetime
import json
import os
import warnings
from pathlib import Path
from typing import Any

from udbench._validation import UdbenchWarning

__all__ = ["GENERATION_LOG", "log_generation_time", "read_generation_log"]

#: File name of the log, in the task folder.
GENERATION_LOG = ".udbench-generate-times.jsonl"


def log_generation_time(
    folder: str | os.PathLike[str],
    spec: Any,
    seconds: float,
    *,
    prior: tuple[str, str, Any] | None = None,
) -> None:
    """Append one line to ``folder/GENERATION_LOG``.

    Parameters
    ----------
    folder : str or Path
        The task folder (must exist).
    spec : TaskSpec or None
        The generated instance; None for a prior line.
    seconds : float
        Wall seconds.
    prior : (family, dataset, fidelity), optional
        Write a prior line instead of an instance line.

    Warns
    -----
    UdbenchWarning
        The log could not be written (the tasks themselves are saved; only the timing is lost).
    """
    from udbench import __version__

    if prior is None:
        rec: dict[str, Any] = {
            "task_id": spec.task_id,
            "family": spec.family,
            "dataset": spec.dataset,
            "fidelity": str(getattr(spec.fidelity, "value", spec.fidelity)),
        }
    else:
        family, dataset, fidelity = prior
        rec = {
            "prior": family,
            "dataset": dataset,
            "fidelity": str(getattr(fidelity, "value", fidelity)),
        }
    rec["seconds"] = round(float(seconds), 4)
    rec["utc"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    rec["udbench"] = __version__
    try:
        with open(Path(folder) / GENERATION_LOG, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec) + "\n")
    except OSError as err:
        warnings.warn(
            f"could not record a generation time in {str(Path(folder) / GENERATION_LOG)!r}: {err}",
            UdbenchWarning,
            stacklevel=2,
        )


def read_generation_log(folder: str | os.PathLike[str]) -> dict[str, float]:
    """Task id → the seconds of its last logged generation in ``folder``.

    Returns an empty dict when the folder has no log. Lines that are not complete JSON
    instance lines (a line cut by a killed process, a prior line) are skipped.
    """
    times: dict[str, float] = {}
    try:
        lines = (Path(folder) / GENERATION_LOG).read_text(encoding="utf-8").splitlines()
    except OSError:
        return times
    for line in lines:
        try:
            rec = json.loads(line)
            if isinstance(rec, dict) and "task_id" in rec:
                times[str(rec["task_id"])] = float(rec["seconds"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
    return times
