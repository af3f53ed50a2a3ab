"""The runs campaign's task-version rule: a cell is run, and its record kept, only on the
suite's reference version of its task file (:mod:`udbench.recipes.task_versions`;
docs/campaigns.md, "Task versions across machines")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from udbench._validation import UdbenchError

__all__ = ["check_task_version", "task_version_check"]


def _numerics(family: str) -> dict[str, int]:
    from udbench.priors import family_numerics_version

    return {family: family_numerics_version(family)}


def task_version_check(suite: str, spec: Any) -> Callable[[dict[str, Any]], str | None] | None:
    """The ``accepts`` check of a cell's or transfer unit's record: made on the suite's
    reference version of its task (:mod:`udbench.recipes.task_versions`); None when the
    suite has no reference under the current numerics."""
    from udbench.recipes.task_versions import reference_task_versions, task_version_problem

    numerics = _numerics(spec.family)
    if reference_task_versions(suite, numerics) is None:
        return None

    def accepts(record: dict[str, Any]) -> str | None:
        result = record.get("result") or {}
        row = result.get("row")
        sha = row.get("task_sha256") if isinstance(row, dict) else result.get("task_sha256")
        if sha is None and not isinstance(row, dict):
            return None  # a transfer record from before they kept the checksum (2026-12-04)
        return task_version_problem(suite, spec.task_id, sha, numerics)

    return accepts


def check_task_version(suite: str, spec: Any, path: Path) -> str:
    """The task file's content checksum, after checking it against the suite's reference
    version.

    Raises
    ------
    UdbenchError
        The file is another version of the task than the suite's reference (this machine
        generates other files for it: a kernel fit or numerics that differ).
    """
    from udbench.recipes.task_versions import task_version_problem
    from udbench.tasks.discovery import task_identity

    sha = task_identity(path)[1]
    problem = task_version_problem(suite, spec.task_id, sha, _numerics(spec.family))
    if problem is not None:
        raise UdbenchError(
            f"udbench campaign runs: {problem}. This machine generated another file for the "
            "task; its cells are not run here (docs/campaigns.md, 'Task versions across "
            "machines')"
        )
    return str(sha)
