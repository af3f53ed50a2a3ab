"""Tuned configurations shipped with udbench: the tuning campaign's records, as package data.

The ``tuning`` campaign (:mod:`udbench.campaigns.tuning`, ``udbench campaign run tuning
--suite NAME``) writes one record per (method, condition) sweep of a preset suite into
``udbench/tuning/shipped/<suite>/<method>/<condition>.json`` (:func:`shipped_folder`), the
layout of a ``udbench tune --out`` folder. Those records are committed, so they ship in the
package, and ``udbench run TASKS -m … --tuned <suite>`` (and ``udbench suite <suite> --tuned
<suite>``) uses them with no tuning folder of the user's own (:func:`resolve_tuned`).

A shipped file is a campaign record (:mod:`udbench.campaigns.engine`: ``unit_id``, ``kind =
"tuning-sweep"``, ``status``, ``settings``, ``numerics``, cost, machine, code) whose
``result`` is the sweep's tuned record in the format of :mod:`udbench.tuning.records` (its
trial history compacted). :func:`read_tuned_record` reads either kind of file.

**Stale records are never used silently.** A shipped record is *stale* when, since the sweep
ran, (a) the method's declared search space changed (its ``search_space_hash``), (b) the
method's base configuration changed (the suite's spec of the method, e.g. its defaults,
resolved now differs from the configuration the sweep started from: the method's "version"
as far as its numbers go), or (c) the numerics version of the prior family
that generated the condition's training sample changed (the sample it was tuned on is no
longer the condition's). ``run --tuned`` refuses a stale record with one line naming the
method, the condition and what changed (:func:`shipped_staleness`), whatever ``--fallback``
says, as it refuses a tuning folder's record of another search space.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from udbench._validation import UdbenchError

__all__ = [
    "CAMPAIGN_KIND",
    "SHIPPED_ROOT",
    "read_tuned_record",
    "resolve_tuned",
    "shipped_folder",
    "shipped_names",
    "shipped_staleness",
]

#: Where the shipped records live: the ``shipped`` folder beside this module (package data).
SHIPPED_ROOT: Path = Path(__file__).resolve().with_name("shipped")

#: ``kind`` of the tuning campaign's records.
CAMPAIGN_KIND = "tuning-sweep"


def shipped_names() -> list[str]:
    """Names that ``--tuned`` accepts as shipped record sets: the preset suites."""
    from udbench.recipes.suites import SUITES

    return sorted(SUITES)


def shipped_folder(suite: str) -> Path:
    """``SHIPPED_ROOT/<suite>``: the shipped records of a suite (the campaign's records).

    The folder may not exist yet (no sweep of that suite finished and committed).
    """
    return Path(SHIPPED_ROOT) / suite


def resolve_tuned(value: str | os.PathLike[str], command: str) -> tuple[Path, str | None]:
    """What a ``--tuned`` value names: a tuning folder, or a suite's shipped records.

    Parameters
    ----------
    value : str or Path
        An existing folder (``udbench tune --out``), used as it is; otherwise the name of a
        preset suite (``gp-small``), meaning its shipped records.
    command : str
        Who asks (for the error message).

    Returns
    -------
    (folder, shipped) : tuple
        The folder to read records from, and the suite's name where it is a shipped set
        (None for a tuning folder).

    Raises
    ------
    UdbenchError
        ``value`` is neither an existing folder nor a preset suite's name.
    """
    path = Path(value)
    if path.is_dir():
        return path, None
    name = str(value)
    if name in shipped_names():
        return shipped_folder(name), name
    raise UdbenchError(
        f"{command}: --tuned must be a tuning folder (udbench tune --out) or the name of a "
        f"suite with shipped records ({', '.join(shipped_names())}); got {name!r}, which is "
        "neither"
    )


def read_tuned_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The tuned record in ``path``: a ``udbench tune`` record, or a campaign record's result.

    A campaign record (:mod:`udbench.campaigns.engine`) of kind ``tuning-sweep`` gives its
    ``result`` with ``_campaign`` added (its ``status``, ``settings``, ``numerics``,
    ``cpu_seconds``, ``code``). A failed campaign unit gives ``{"status": "sweep-failed",
    "error": ..., "_campaign": ...}`` (no configuration).

    Raises
    ------
    UdbenchError
        The file cannot be read, or is neither kind of record.
    """
    from udbench.tuning.records import RECORD_FORMAT

    path = Path(path)
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UdbenchError(f"tuned record {str(path)!r} cannot be read: {err}") from None
    if isinstance(rec, dict) and rec.get("format") == RECORD_FORMAT:
        return rec
    if not isinstance(rec, dict) or rec.get("kind") != CAMPAIGN_KIND:
        raise UdbenchError(f"{str(path)!r} is not a udbench tuned record")
    meta = {k: rec.get(k) for k in ("status", "settings", "numerics", "cpu_seconds", "code")}
    if rec.get("status") == "done" and isinstance(rec.get("result"), dict):
        inner = rec["result"]
        if inner.get("format") != RECORD_FORMAT:
            raise UdbenchError(f"{str(path)!r}: its result is not a udbench tuned record")
        return {**inner, "_campaign": meta}
    return {"status": "sweep-failed", "error": rec.get("error"), "_campaign": meta}


def shipped_staleness(rec: dict[str, Any], method: str) -> str | None:
    """Why the shipped record ``rec`` of ``method`` is stale (module docstring), or None.

    Parameters
    ----------
    rec : dict
        From :func:`read_tuned_record`.
    method : str
        The method's registry name. Its current class is looked up, and its current base
        configuration is the method spec the sweep started from (the campaign's setting
        ``method_spec``: the suite's spec of the method) resolved now.

    Returns
    -------
    str or None
        A short reason (``"the method's search space changed (hash a, now b)"``), or None
        when the record is current.
    """
    from udbench.methods.configs import resolve_method
    from udbench.priors import family_numerics_version
    from udbench.tuning.space import search_space_hash

    settings = (rec.get("_campaign") or {}).get("settings") or {}
    current = resolve_method(str(settings.get("method_spec") or method))
    want = search_space_hash(method, type(current.estimator).search_space)
    if rec.get("search_space_hash") != want:
        return (
            f"the method's search space changed since it was tuned (hash "
            f"{rec.get('search_space_hash')}, now {want})"
        )
    if rec.get("base_config") is not None and rec["base_config"] != current.config:
        return "the method's default configuration changed since it was tuned"
    numerics = (rec.get("_campaign") or {}).get("numerics") or {}
    family = str(rec.get("family"))
    if family in numerics and numerics[family] != family_numerics_version(family):
        return (
            f"the {family} prior's numerics changed since it was tuned (version "
            f"{numerics[family]}, now {family_numerics_version(family)}): the condition's "
            "training sample is not the one it was tuned on"
        )
    return None
