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

import os
from collections.abc import Sequence
from pathlib import Path

from udbench._validation import UdbenchError
from udbench.tuning.records import CAMPAIGN_KIND, read_tuned_record, shipped_staleness

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


def shipped_names() -> list[str]:
    """Names that ``--tuned`` accepts as shipped record sets: the suites that have a folder
    of shipped records (``SHIPPED_ROOT/<suite>``, made by the tuning campaign of a preset
    suite)."""
    root = Path(SHIPPED_ROOT)
    if not root.is_dir():
        return []
    return sorted(
        p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
    )


def shipped_folder(suite: str) -> Path:
    """``SHIPPED_ROOT/<suite>``: the shipped records of a suite (the campaign's records).

    The folder may not exist yet (no sweep of that suite finished and committed).
    """
    return Path(SHIPPED_ROOT) / suite


def resolve_tuned(
    value: str | os.PathLike[str], command: str, presets: Sequence[str] = ()
) -> tuple[Path, str | None]:
    """What a ``--tuned`` value names: a tuning folder, or a suite's shipped records.

    Parameters
    ----------
    value : str or Path
        An existing folder (``udbench tune --out``), used as it is; otherwise the name of a
        preset suite (``gp-small``), meaning its shipped records.
    command : str
        Who asks (for the error message).
    presets : sequence of str, optional
        Preset suites' names taken as shipped sets even before their folder exists (no sweep
        of theirs committed yet, e.g. ``clf-small``): every record of theirs is then missing,
        and :func:`udbench.tuning.records.tuned_configurer` names them and the campaign
        that makes them.

    Returns
    -------
    (folder, shipped) : tuple
        The folder to read records from, and the suite's name where it is a shipped set
        (None for a tuning folder).

    Raises
    ------
    UdbenchError
        ``value`` is neither an existing folder nor a preset suite's name, or is a results
        folder (``udbench run --out``) rather than a tuning folder.
    """
    path = Path(value)
    if path.is_dir():
        from udbench.evaluation.store import ResultsStore

        if ResultsStore(path).has_results and not any(path.glob("*/*.json")):
            raise UdbenchError(
                f"{command}: --tuned must be a tuning folder (udbench tune --out: "
                f"<method>/<condition>.json records) or a suite with shipped records; "
                f"{str(path)!r} is a results folder (udbench run --out), which holds no tuned "
                "configuration"
            )
        return path, None
    name = str(value)
    if name in shipped_names() or name in presets:
        return shipped_folder(name), name
    raise UdbenchError(
        f"{command}: --tuned must be a tuning folder (udbench tune --out) or the name of a "
        f"suite with shipped records ({', '.join(sorted({*shipped_names(), *presets}))}); got "
        f"{name!r}, which is "
        "neither"
    )
