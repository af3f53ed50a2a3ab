"""Finding task files: task arguments (files, folders, globs) expanded, and a file's identity.

Used by ``udbench run`` (and, later, tuning) to turn what a user names into the sorted list
of task files to run, and to key each file by (task id, content checksum) before any array is
read (:meth:`udbench.tasks.Task.load` reads the metadata only).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path

from udbench._validation import UdbenchError, as_list, param_error
from udbench.tasks.taskfile import Task, TaskFileMisnamed

__all__ = ["TASK_SUFFIXES", "find_task_files", "task_files_by_id", "task_identity"]

#: Suffixes of task files picked up when a task argument is a directory.
TASK_SUFFIXES: tuple[str, ...] = (".npz",)


def find_task_files(
    patterns: Sequence[str | os.PathLike[str]], *, command: str = "udbench run"
) -> list[Path]:
    """Expand task arguments (files, directories, globs) into a sorted list of task files.

    Parameters
    ----------
    patterns : str, Path or sequence of them
        One string or path is one pattern (not a sequence of characters). Each one a
        task file, a directory (its files ending in :data:`TASK_SUFFIXES`, searched
        recursively) or a glob pattern (``**`` allowed).
    command : str, default "udbench run"
        The command named in error messages.

    Returns
    -------
    list of Path
        Unique files, sorted.

    Raises
    ------
    UdbenchError
        If no pattern is given, ``patterns`` is not a string, path or sequence of them,
        one matches no file, or a folder cannot be read.
    """
    patterns = as_list(
        command, "tasks", patterns, (str, os.PathLike), what="task files, folders or globs"
    )
    if not patterns:
        raise param_error(command, "tasks", "name at least one task file or folder", [])
    found: dict[str, Path] = {}
    for pat in patterns:
        text = os.fspath(pat)
        p = Path(text)
        matches: list[Path]
        if p.is_dir():
            _check_readable_folder(p, command)
            matches = [
                q
                for q in sorted(p.rglob("*"))
                if q.is_file() and q.suffix in TASK_SUFFIXES and not q.name.startswith(".")
            ]
            if not matches:
                raise param_error(
                    command,
                    "tasks",
                    f"be a folder holding task files ({', '.join(TASK_SUFFIXES)})",
                    text,
                )
        elif p.is_file():
            matches = [p]
        elif glob.has_magic(text):
            matches = [
                Path(q) for q in sorted(glob.glob(text, recursive=True)) if Path(q).is_file()
            ]
            if not matches:
                raise param_error(command, "tasks", "be a glob matching task files", text)
        else:
            raise param_error(command, "tasks", "be an existing task file, folder or glob", text)
        for q in matches:
            found.setdefault(str(q.resolve()), q)
    return sorted(found.values(), key=lambda q: str(q))


def _check_readable_folder(folder: Path, command: str) -> None:
    """Raise when ``folder`` or a folder under it cannot be listed (permissions).

    ``Path.rglob`` skips such folders silently, which would leave their task files out of a
    run without a word, or call a folder full of tasks "not a folder holding task files".

    Raises
    ------
    UdbenchError
        Naming the first folder that cannot be read and the system's reason.
    """
    errors: list[OSError] = []
    for _ in os.walk(folder, onerror=errors.append):
        if errors:
            break
    if errors:
        err = errors[0]
        where = str(err.filename or folder)
        inside = "" if Path(where) == folder else f" (under the task folder {str(folder)!r})"
        raise UdbenchError(
            f"{command}: the folder {where!r}{inside} cannot be read "
            f"({err.strerror or type(err).__name__}): give this user read and search "
            "permission on it (chmod u+rx), or name only folders that can be read"
        )


def task_identity(path: str | os.PathLike[str]) -> tuple[str, str | None]:
    """(task id, content checksum) of a task file, from its metadata only.

    Parameters
    ----------
    path : str or Path
        A task file.

    Returns
    -------
    task_id : str
        :attr:`udbench.tasks.TaskSpec.task_id`, or the file name up to its first dot when the
        file cannot be read (the runner then stores the cell as failed under that id).
    content_sha256 : str or None
        :attr:`udbench.tasks.Task.content_sha256` (covers every array); None if unreadable.

    Raises
    ------
    TaskFileMisnamed
        The file's name is a task id other than the one it holds: which id it would be
        stored under is the question, so it is refused rather than failed under either.
    """
    try:
        task = Task.load(Path(path))
        return task.spec.task_id, task.content_sha256
    except TaskFileMisnamed:
        raise
    except Exception:
        return Path(path).name.split(".")[0], None


def task_files_by_id(
    folders: Sequence[str | os.PathLike[str]], *, command: str = "udbench run"
) -> dict[str, list[Path]]:
    """The task files under ``folders`` by task id (metadata read only).

    Used where a results row's stored ``task_path`` is gone and the user names where the task
    files are now (``udbench score --tasks``, ``udbench transfer --tasks``).

    Parameters
    ----------
    folders : sequence of str or Path
        Task arguments as :func:`find_task_files` takes them; empty gives ``{}``.
    command : str
        The command named in error messages.

    Returns
    -------
    dict of str to list of Path
        Task id -> the files holding it (sorted).

    Raises
    ------
    UdbenchError
        As :func:`find_task_files`.
    """
    index: dict[str, list[Path]] = {}
    if not folders:
        return index
    for p in find_task_files(list(folders), command=command):
        tid, _ = task_identity(p)
        index.setdefault(tid, []).append(Path(p))
    return index
