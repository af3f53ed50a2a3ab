"""Reference task versions of the preset suites: the checksum of every instance's numbers.

A task id names a grid point, not a file's content. The files are generated on each
machine, and two machines can make different files for one id (docs/campaigns.md, "Task
versions across machines"); results made on two versions of a task are not comparable.
``task_versions/<suite>.json`` (package data) holds, for each of the suite's instances as
generated for the committed campaign records, :func:`task_arrays_sha256` (the task's
numbers) and :attr:`udbench.tasks.Task.content_sha256` (numbers and metadata, what the
results rows keep as ``task_sha256``), with the numerics versions they were made under.

The version compared is the numbers': a file's metadata also holds the sampler's wall-clock
timings (MCMC and gpc tasks), so two generations of one task on one machine can have other
content checksums and the same arrays. A row that keeps only ``task_sha256`` is compared by
the content checksum (exact for GP tasks, whose metadata holds no timings).

The runs campaign refuses a cell whose task file differs from its reference version and
redoes a record made on another version (:func:`udbench.campaigns.runs.campaign_units`);
``udbench suite`` says whether its task files are the reference versions. Without a
reference (another suite, or a numerics version changed since) nothing is checked.
``tools/ship_task_versions.py`` writes one.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from udbench._validation import UdbenchError

__all__ = [
    "TASK_VERSIONS_DIR",
    "blas_kernel",
    "compare_with_reference",
    "kernel_note",
    "reference_task_versions",
    "task_arrays_sha256",
    "task_version_problem",
]

#: Folder of the shipped references, one ``<suite>.json`` per suite.
TASK_VERSIONS_DIR = Path(__file__).with_name("task_versions")


@functools.cache
def blas_kernel() -> str:
    """The BLAS library and kernel NumPy computes with here, e.g. ``"openblas SkylakeX"``.

    A task file's numbers depend on it: OpenBLAS picks its kernel by processor, and
    ``OPENBLAS_CORETYPE`` overrides the choice. On 2026-12-07 one gp-small instance
    generated on an AVX-512 processor was the reference version under the ``SkylakeX``
    kernel (OpenBLAS's own choice there) and another version under ``Haswell`` (forced by
    that machine's environment) — other bits in the last places, the same task otherwise.
    Read with ``threadpoolctl`` (a scikit-learn dependency).

    Returns
    -------
    str
        ``"<internal_api> <architecture>"`` of the first BLAS NumPy loaded, ``"unknown"``
        when none is found.
    """
    import numpy  # noqa: F401  (loads its BLAS, so that threadpoolctl sees it)
    from threadpoolctl import threadpool_info

    for info in threadpool_info():
        if info.get("user_api") == "blas":
            return f"{info.get('internal_api')} {info.get('architecture')}"
    return "unknown"


def kernel_note(suite: Mapping[str, Any]) -> str | None:
    """Why this machine may make other task versions than the suite's reference: a sentence
    naming both BLAS kernels when the reference records one (:func:`blas_kernel`) and it is
    not this machine's; None otherwise (the same kernel, or not recorded)."""
    data = _applicable(suite)
    made = None if data is None else data.get("made", {}).get("blas")
    here = blas_kernel()
    if made is None or made == here:
        return None
    return (
        f"this machine computes with {here}, the {suite.get('name')} reference was made with "
        f"{made}: its task files differ in the last bits (docs/campaigns.md, 'Task versions "
        "across machines'; unsetting OPENBLAS_CORETYPE lets OpenBLAS choose its kernel)"
    )


def task_arrays_sha256(path: str | Path) -> str:
    """SHA-256 (hex) of a task file's numbers: of its arrays' checksums, in name order.

    Reads the metadata only (the arrays' checksums are stored there and checked when an
    array is read).

    Raises
    ------
    UdbenchError
        An unreadable or damaged task file (:func:`udbench.tasks.taskfile.read_task_meta`).
    """
    from udbench.tasks.taskfile import read_task_meta

    hashes = read_task_meta(path)["array_sha256"]
    return hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()


#: The suite settings that decide its task files; a reference applies to a suite only when
#: they are the ones it was made with (a user's suite file may reuse a preset's name).
TASK_SETTINGS = ("datasets", "families", "noise", "coverage", "seeds", "fidelity", "draws")


def _applicable(suite: Mapping[str, Any]) -> dict[str, Any] | None:
    """The reference of ``suite`` (a :func:`udbench.recipes.suites.load_suite` dict) when
    its task settings are the reference's, else None."""
    data = _read(str(suite.get("name")), TASK_VERSIONS_DIR)
    if data is None:
        return None
    made = data["settings"]
    if any(str(suite.get(k)) != str(v) for k, v in made.items()):
        return None
    return data


@functools.cache
def _read(suite: str, folder: Path) -> dict[str, Any] | None:
    path = folder / f"{suite}.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise UdbenchError(
            f"udbench: the task versions {str(path)!r} are unreadable ({err})"
        ) from None
    tasks = data.get("tasks")
    if not all(isinstance(data.get(k), dict) for k in ("numerics", "settings", "tasks")):
        raise UdbenchError(
            f"udbench: the task versions {str(path)!r} lack 'tasks', 'settings' or 'numerics'"
        )
    if not all(isinstance(v, dict) and {"arrays_sha256", "content_sha256"} <= set(v)
               for v in tasks.values()):  # fmt: skip
        raise UdbenchError(
            f"udbench: the task versions {str(path)!r} need 'arrays_sha256' and "
            "'content_sha256' for every task"
        )
    return data


def reference_task_versions(
    suite: Mapping[str, Any], numerics: Mapping[str, int] | None = None
) -> dict[str, dict[str, str]] | None:
    """Task id → ``{"arrays_sha256": …, "content_sha256": …}`` of the suite's instances.

    Parameters
    ----------
    suite : mapping
        The suite (:func:`udbench.recipes.suites.load_suite`): its reference is the one of
        its name, if its :data:`TASK_SETTINGS` are the reference's.
    numerics : mapping, optional
        The current numerics versions of the prior families (e.g. ``{"gp": 2}``). A
        reference made under another version of a family it names no longer applies.

    Returns
    -------
    dict or None
        None when the suite has no reference, or it was made with other task settings or
        under other numerics.

    Raises
    ------
    UdbenchError
        A shipped reference that cannot be read or lacks a field.
    """
    tasks = _tasks(suite, numerics)
    return None if tasks is None else {k: dict(v) for k, v in tasks.items()}


def _tasks(
    suite: Mapping[str, Any], numerics: Mapping[str, int] | None
) -> Mapping[str, Mapping[str, str]] | None:
    """:func:`reference_task_versions` without the copy: the cached reference itself, for
    the checks made once per record (not to be changed)."""
    data = _applicable(suite)
    if data is None:
        return None
    if numerics is not None:
        made = data["numerics"]
        if any(k in made and made[k] != v for k, v in numerics.items()):
            return None
    tasks: Mapping[str, Mapping[str, str]] = data["tasks"]
    return tasks


def task_version_problem(
    suite: Mapping[str, Any],
    task_id: str,
    numerics: Mapping[str, int],
    *,
    arrays_sha256: str | None = None,
    content_sha256: str | None = None,
) -> str | None:
    """Why a task file (or a record made on one) is not the suite's reference version.

    Parameters
    ----------
    suite : mapping
        The suite (:func:`reference_task_versions`).
    task_id : str
        The instance.
    numerics : mapping
        Current numerics versions (:func:`reference_task_versions`).
    arrays_sha256 : str, optional
        The file's :func:`task_arrays_sha256`; compared when given.
    content_sha256 : str, optional
        Else its :attr:`~udbench.tasks.Task.content_sha256` (a results row's
        ``task_sha256``); neither given: a row without a checksum, which is a problem.

    Returns
    -------
    str or None
        One line naming both checksums, or None when it is the reference version or there
        is nothing to compare with (no reference for the suite or the task).
    """
    ref = _tasks(suite, numerics)
    want = None if ref is None else ref.get(task_id)
    if want is None:
        return None
    got: str | None
    if arrays_sha256 is not None:
        kind, got, expected = "numbers", arrays_sha256, want["arrays_sha256"]
    else:
        kind, got, expected = "content", content_sha256, want["content_sha256"]
    if got == expected:
        return None
    has = "no checksum" if got is None else f"{kind} {got[:12]}"
    name = suite.get("name")
    why = kernel_note(suite)
    return (
        f"task {task_id} has {has}, not the {name} reference version's {expected[:12]} "
        f"(udbench/recipes/task_versions/{name}.json): results on the two are not comparable"
        + ("" if why is None else f"; {why}")
    )


def compare_with_reference(suite: Mapping[str, Any], paths: Sequence[str | Path]) -> str | None:
    """One line saying whether the task files are the suite's reference versions (by their
    numbers, :func:`task_arrays_sha256`).

    ``udbench suite`` prints it after its check stage, so a user knows whether their results
    can be compared with the committed campaign's (docs/campaigns.md, "Task versions across
    machines").

    Parameters
    ----------
    suite : mapping
        The suite (:func:`reference_task_versions`).
    paths : sequence of path
        The suite's task files (an unreadable one is counted as differing).

    Returns
    -------
    str or None
        None when the suite has no reference (or one made with other task settings).
    """
    from udbench.priors import family_numerics_version
    from udbench.tasks.discovery import task_identity

    data = _applicable(suite)
    if data is None:
        return None
    name = suite.get("name")
    ref = _tasks(suite, {f: family_numerics_version(f) for f in data["numerics"]})
    if ref is None:
        return (
            f"task versions: {name}'s reference was made under numerics {data['numerics']}, "
            "not this udbench's: not compared"
        )
    same, other, unknown = 0, [], 0
    for path in paths:
        tid = task_identity(path)[0]
        if tid not in ref:
            unknown += 1
            continue
        try:
            sha: str | None = task_arrays_sha256(path)
        except UdbenchError:
            sha = None
        if sha == ref[tid]["arrays_sha256"]:
            same += 1
        else:
            other.append(tid)
    line = f"task versions: {same} of {same + len(other)} are {name}'s reference versions"
    if unknown:
        line += f" ({unknown} task file(s) not in the reference)"
    if other:
        why = kernel_note(suite)
        line += (
            f"; {len(other)} differ (first {other[0]}): results on them are not comparable "
            "with the committed campaign's. "
            + (
                f"The cause can be the BLAS kernel: {why}"
                if why is not None
                else "Files made before udbench shipped the kernel fits (2026-12-04) can be the "
                "cause: delete them and run again to regenerate (docs/campaigns.md, 'Task "
                "versions across machines')"
            )
        )
    return line
