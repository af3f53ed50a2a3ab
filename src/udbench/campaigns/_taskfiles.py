"""The task files of the campaigns' units: made once in the work folder, then reused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from udbench._validation import UdbenchError

__all__ = ["ensure_task_file"]


def ensure_task_file(
    path: Path,
    spec: Any,
    data_dir: str | None,
    *,
    component: str,
    generate: Callable[[Any, str | None], Any] | None = None,
    strict: bool = False,
) -> bool:
    """Make the task file of ``spec`` at ``path`` unless it is there; whether it was made now.

    A file that cannot be read as a task (damaged: a disk fault, a bad copy; a kill leaves
    none, :meth:`udbench.tasks.Task.save` is atomic) is made again.

    Parameters
    ----------
    path : Path
        The file (its folder is created).
    spec : TaskSpec
        The task.
    data_dir : str, optional
        Raw-data folder.
    component : str
        Named in the error message.
    generate : callable, optional
        ``generate(spec, data_dir) -> Task``; default :func:`udbench.tasks.generate_task`.
    strict : bool, default False
        Also require the file's fidelity and number of draws to be ``spec``'s (the task id
        names neither: two suites of other fidelities sharing a work folder would otherwise
        reuse each other's files).

    Raises
    ------
    UdbenchError
        ``path`` holds another task than ``spec`` (it is never overwritten).
    """
    from udbench.tasks import Task, generate_task

    have = None
    if path.is_file():
        try:
            have = Task.load(path).spec
        except UdbenchError:  # damaged (a disk fault, a bad copy): derived data, made again
            have = None
    if have is not None:
        found = have.task_id
        if found != spec.task_id:
            raise UdbenchError(
                f"{component}: {str(path)!r} holds task {found!r}, not {spec.task_id!r}; delete it"
            )
        if strict and (str(have.fidelity), int(have.n_draws)) != (
            str(spec.fidelity),
            int(spec.n_draws),
        ):
            raise UdbenchError(
                f"{component}: {str(path)!r} holds {found} at fidelity {have.fidelity} with "
                f"{have.n_draws} draws, not {spec.fidelity} with {spec.n_draws}; use another "
                "--work folder (one per suite), or delete the file"
            )
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    (generate or generate_task)(spec, data_dir).save(path)
    return True
