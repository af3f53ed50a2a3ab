"""The runs campaign's task-version rule: a cell is run, and its record kept, only on the
suite's reference version of its task file (:mod:`udbench.recipes.task_versions`;
docs/campaigns.md, "Task versions across machines")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from udbench._validation import UdbenchError

__all__ = [
    "all_checks",
    "check_task_version",
    "is_reference_task",
    "ready_task_file",
    "task_version_check",
]


def _numerics(family: str) -> dict[str, int]:
    from udbench.priors import family_numerics_version

    return {family: family_numerics_version(family)}


def task_version_check(
    suite: Mapping[str, Any], spec: Any
) -> Callable[[dict[str, Any]], str | None] | None:
    """The ``accepts`` check of a cell's or transfer unit's record: made on the suite's
    reference version of its task (:mod:`udbench.recipes.task_versions`); None when the
    suite has no reference (or one made with other task settings or numerics).

    A record that keeps the task's numbers checksum (``task_arrays_sha256``, from
    2026-12-04) is compared by it; an older cell record by its row's ``task_sha256``; an
    older transfer record, which keeps neither, is accepted (the part began on 2026-12-04,
    on the reference versions).
    """
    from udbench.recipes.task_versions import _tasks, task_version_problem

    numerics = _numerics(spec.family)
    if _tasks(suite, numerics) is None:
        return None

    def accepts(record: dict[str, Any]) -> str | None:
        result = record.get("result") or {}
        row = result.get("row")
        arrays = result.get("task_arrays_sha256")
        if arrays is None and not isinstance(row, dict):
            return None
        content = row.get("task_sha256") if isinstance(row, dict) else None
        return task_version_problem(
            suite, spec.task_id, numerics, arrays_sha256=arrays, content_sha256=content
        )

    return accepts


def all_checks(
    *checks: Callable[[dict[str, Any]], str | None] | None,
) -> Callable[[dict[str, Any]], str | None] | None:
    """One ``accepts`` check of several (None ones left out): the first reason any gives."""
    live = [c for c in checks if c is not None]
    if not live:
        return None
    if len(live) == 1:
        return live[0]

    def accepts(record: dict[str, Any]) -> str | None:
        return next((r for c in live if (r := c(record)) is not None), None)

    return accepts


def _problem(suite: Mapping[str, Any], spec: Any, path: Path) -> tuple[str, str | None]:
    from udbench.recipes.task_versions import task_arrays_sha256, task_version_problem

    sha = task_arrays_sha256(path)
    numerics = _numerics(spec.family)
    return sha, task_version_problem(suite, spec.task_id, numerics, arrays_sha256=sha)


def is_reference_task(suite: Mapping[str, Any], spec: Any, path: Path) -> bool:
    """Whether the task file is the suite's reference version (True without a reference)."""
    return _problem(suite, spec, path)[1] is None


def check_task_version(
    suite: Mapping[str, Any], spec: Any, path: Path, remake: Callable[[], Any]
) -> str:
    """The task file's numbers checksum (:func:`udbench.recipes.task_versions.
    task_arrays_sha256`), after checking it against the suite's reference version.

    A file that is another version is made again once with ``remake()`` (a task file is
    derived data: one made before udbench shipped the kernel fits is replaced).

    Raises
    ------
    UdbenchError
        The file made here is still another version than the suite's reference (this
        machine generates other numbers for the task: its cells are not run here).
    """
    sha, problem = _problem(suite, spec, path)
    if problem is None:
        return sha
    remake()
    sha, problem = _problem(suite, spec, path)
    if problem is not None:
        raise UdbenchError(
            f"udbench campaign runs: {problem}. This machine generated the file {str(path)!r} "
            "again and it is still another version: its cells are not run here "
            "(docs/campaigns.md, 'Task versions across machines')"
        )
    return sha


def ready_task_file(
    spec: Any,
    work_dir: str,
    data_dir: str | None,
    generate: Callable[..., Any] | None,
    suite: Mapping[str, Any],
) -> tuple[Path, str]:
    """The task file of ``spec`` in the work folder, made if missing or damaged and checked
    against the suite's reference version (:func:`check_task_version`), with one compute
    thread as task generation runs; its path and numbers checksum.

    Raises
    ------
    UdbenchError
        What :func:`check_task_version` and task generation raise.
    """
    from udbench._threads import cell_threads
    from udbench.campaigns._taskfiles import ensure_task_file
    from udbench.campaigns.tuning import condition_task_folder
    from udbench.tasks import generate_task

    path = condition_task_folder(work_dir, spec.family) / f"{spec.task_id}.npz"
    make = generate or generate_task
    with cell_threads():  # a task file is made with one thread (docs/tasks.md)
        ensure_task_file(
            path, spec, data_dir, component="udbench campaign runs", generate=make, strict=True
        )
        arrays = check_task_version(suite, spec, path, lambda: make(spec, data_dir).save(path))
    return path, arrays
