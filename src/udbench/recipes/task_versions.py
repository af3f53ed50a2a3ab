"""Reference task versions of the preset suites: the content checksum of every instance.

A task id names a grid point, not a file's content. The files are generated on each
machine, and two machines can make different files for one id (docs/campaigns.md, "Task
versions across machines"); results made on two versions of a task are not comparable.
``task_versions/<suite>.json`` (package data) holds the
:attr:`udbench.tasks.Task.content_sha256` of each of the suite's instances as generated
for the committed campaign records, with the numerics versions they were made under. The
runs campaign refuses a cell whose task file differs from its reference version and
redoes a record made on another version (:func:`udbench.campaigns.runs.campaign_units`).
Without a reference (another suite, or a numerics version changed since) nothing is
checked. ``tools/ship_task_versions.py`` writes one.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from udbench._validation import UdbenchError

__all__ = [
    "TASK_VERSIONS_DIR",
    "compare_with_reference",
    "reference_task_versions",
    "task_version_problem",
]

#: Folder of the shipped references, one ``<suite>.json`` per suite.
TASK_VERSIONS_DIR = Path(__file__).with_name("task_versions")


@functools.cache
def _read(suite: str) -> dict[str, Any] | None:
    path = TASK_VERSIONS_DIR / f"{suite}.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise UdbenchError(
            f"udbench: the task versions {str(path)!r} are unreadable ({err})"
        ) from None
    if not isinstance(data.get("tasks"), dict) or not isinstance(data.get("numerics"), dict):
        raise UdbenchError(f"udbench: the task versions {str(path)!r} lack 'tasks' or 'numerics'")
    return data


def reference_task_versions(
    suite: str, numerics: Mapping[str, int] | None = None
) -> dict[str, str] | None:
    """Task id → reference content checksum (hex SHA-256) of the suite's instances.

    Parameters
    ----------
    suite : str
        Suite name (a preset of :data:`udbench.recipes.suites.SUITES`).
    numerics : mapping, optional
        The current numerics versions of the prior families (e.g. ``{"gp": 2}``). A
        reference made under another version of a family it names no longer applies.

    Returns
    -------
    dict or None
        None when the suite has no reference, or it was made under other numerics.

    Raises
    ------
    UdbenchError
        A shipped reference that cannot be read.
    """
    data = _read(suite)
    if data is None:
        return None
    if numerics is not None:
        made = data["numerics"]
        if any(k in made and made[k] != v for k, v in numerics.items()):
            return None
    return dict(data["tasks"])


def task_version_problem(
    suite: str, task_id: str, sha256: str | None, numerics: Mapping[str, int]
) -> str | None:
    """Why a task file (or a record made on one) is not the suite's reference version.

    Parameters
    ----------
    suite, task_id : str
        The suite and the instance.
    sha256 : str or None
        The file's :attr:`~udbench.tasks.Task.content_sha256` (None: unknown, e.g. a row
        written before checksums were stored).
    numerics : mapping
        Current numerics versions (:func:`reference_task_versions`).

    Returns
    -------
    str or None
        One line naming both checksums, or None when it is the reference version or there
        is nothing to compare with (no reference for the suite or the task).
    """
    ref = reference_task_versions(suite, numerics)
    want = None if ref is None else ref.get(task_id)
    if want is None:
        return None
    if sha256 == want:
        return None
    got = "no checksum" if sha256 is None else f"content {sha256[:12]}"
    return (
        f"task {task_id} has {got}, not the {suite} reference version {want[:12]} "
        f"(udbench/recipes/task_versions/{suite}.json): results on the two are not comparable"
    )


def compare_with_reference(suite: str, paths: Sequence[str | Path]) -> str | None:
    """One line saying whether the task files are the suite's reference versions.

    ``udbench suite`` prints it after its check stage, so a user knows whether their results
    can be compared with the committed campaign's (docs/campaigns.md, "Task versions across
    machines").

    Parameters
    ----------
    suite : str
        Suite name.
    paths : sequence of path
        The suite's task files (unreadable ones are counted as different).

    Returns
    -------
    str or None
        None when the suite has no reference under the current numerics versions.
    """
    from udbench.priors import family_numerics_version
    from udbench.tasks.discovery import task_identity

    data = _read(suite)
    if data is None:
        return None
    ref = reference_task_versions(suite, {f: family_numerics_version(f) for f in data["numerics"]})
    if ref is None:
        return (
            f"task versions: {suite}'s reference was made under numerics {data['numerics']}, "
            "not this udbench's: not compared"
        )
    same, other, unknown = 0, [], 0
    for path in paths:
        tid, sha = task_identity(path)
        if tid not in ref:
            unknown += 1
        elif sha == ref[tid]:
            same += 1
        else:
            other.append(tid)
    line = f"task versions: {same} of {same + len(other)} are {suite}'s reference versions"
    if unknown:
        line += f" ({unknown} task file(s) not in the reference)"
    if other:
        line += (
            f"; {len(other)} differ (first {other[0]}): results on them are not comparable "
            "with the committed campaign's (docs/campaigns.md, 'Task versions across machines')"
        )
    return line
