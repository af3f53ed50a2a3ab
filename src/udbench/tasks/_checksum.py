"""The task file's content checksum, and the timings it leaves out (schema 3).

:mod:`udbench.tasks.taskfile`, module notes ("Timings"): ``content_sha256`` is the SHA-256
of the canonical JSON of a task file's metadata; a schema-3 file's timings (keys named
``*_seconds`` or ``*_per_second`` under ``diagnostics``) are left out, so the same task
generated twice has one checksum however long its sampler took.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["content_checksum", "has_timings", "is_timing_key", "json_form"]


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()


def is_timing_key(key: str) -> bool:
    """True for a diagnostics key that holds a wall-clock measurement.

    The rule is by name, like :func:`udbench.tasks.taskfile.is_draws_array`: ``*_seconds``
    (e.g. ``wall_seconds``) or ``*_per_second`` (e.g. ``chain_iterations_per_second``), so a
    timing a sampler adds later is covered too. Such keys are left out of a schema-3 file's
    ``content_sha256`` (:mod:`udbench.tasks.taskfile`, module notes, "Timings").
    """
    return isinstance(key, str) and (key.endswith("_seconds") or key.endswith("_per_second"))


def _without_timings(obj: Any) -> Any:
    """``obj`` (as JSON reads it back) with every dict entry whose key :func:`is_timing_key`
    removed, at any depth."""
    if isinstance(obj, dict):
        return {k: _without_timings(v) for k, v in obj.items() if not is_timing_key(k)}
    if isinstance(obj, list):
        return [_without_timings(v) for v in obj]
    return obj


def json_form(obj: Any) -> Any:
    """``obj`` as JSON reads it back (tuples as lists, keys as strings): the form
    :func:`content_checksum` hashes, which metadata read from a file already has."""
    return json.loads(_canonical(obj))


def has_timings(obj: Any) -> bool:
    """Whether ``obj`` (in its JSON form, :func:`json_form`) holds a timing at any depth."""
    if isinstance(obj, dict):
        return any(is_timing_key(k) or has_timings(v) for k, v in obj.items())
    if isinstance(obj, list):
        return any(has_timings(v) for v in obj)
    return False


def content_checksum(meta: dict[str, Any]) -> str:
    """The ``content_sha256`` of a task file's metadata (without its ``content_sha256``).

    SHA-256 of the canonical JSON (sorted keys, no spaces) of ``meta`` in its JSON form
    (:func:`json_form`: as :func:`udbench.tasks.taskfile.read_task_meta` reads it, and as
    :meth:`udbench.tasks.taskfile.Task.save` puts it before hashing, so a non-string key is
    hashed as the string a reader sees). For schema 3 the
    timings under ``meta["diagnostics"]`` (:func:`is_timing_key`) are left out first, so
    two generations of one task that differ only in how long they took have one checksum;
    for schema 2 every entry counts, as it always has.

    Parameters
    ----------
    meta : dict
        The metadata as written to ``meta.json`` (its JSON form), without ``content_sha256``.

    Returns
    -------
    str
        64 hex digits.
    """
    if meta.get("schema_version") == 3:
        meta = {**meta, "diagnostics": _without_timings(meta.get("diagnostics"))}
    return hashlib.sha256(_canonical(meta)).hexdigest()
