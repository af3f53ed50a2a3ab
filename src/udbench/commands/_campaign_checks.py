"""``udbench campaign``: checks of the records and work folders before any unit runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from udbench._validation import UdbenchError, param_error


def campaign_kinds(campaign: str) -> frozenset[str]:
    """Every kind of unit ``campaign`` makes (all its parts, and a module's ``KINDS`` where
    a part makes units of more than one kind, e.g. the runs campaign's ``oracle-fit``)."""
    if campaign == "tuning":
        from udbench.tuning.shipped import CAMPAIGN_KIND

        return frozenset({CAMPAIGN_KIND})
    import importlib

    module = importlib.import_module(f"udbench.campaigns.{campaign}")
    return frozenset(getattr(module, "KINDS", module.PARTS))


def _record_kinds(folder: Path) -> dict[str, int]:
    """Kind -> number of readable records under ``folder``, done or failed
    (:func:`udbench.campaigns.engine.load_done_records`; unreadable ones are the summaries'
    and ``run``'s to report)."""
    from udbench.campaigns.engine import load_done_records

    kinds: dict[str, int] = {}
    for rec in load_done_records(folder, include_failed=True)[0]:
        if "kind" in rec:
            kinds[str(rec["kind"])] = kinds.get(str(rec["kind"]), 0) + 1
    return kinds


def check_records(campaign: str, folder: Path, *, writing: bool) -> list[str]:
    """Check ``--records`` for ``campaign``; return notes for the console.

    Parameters
    ----------
    campaign : str
    folder : Path
        The records folder (``--records`` or the campaign's default).
    writing : bool
        ``run`` (records are to be written there) rather than ``status``/``summarise``.

    Returns
    -------
    list of str
        A note that the folder does not exist yet (reading), or that it holds records of
        other campaigns (reading: they are left out of every count).

    Raises
    ------
    UdbenchError
        ``folder`` is not a folder; or, when ``writing``, it holds records of another
        campaign's kinds (a run would mix its records in among theirs).
    """
    comp = f"udbench campaign {campaign}"
    if folder.exists() and not folder.is_dir():
        raise param_error(comp, "--records", "be a folder (of this campaign's records)", folder)
    if not folder.is_dir():
        return [] if writing else [f"no records folder at {folder} yet (`run` makes it)"]
    other = {k: n for k, n in _record_kinds(folder).items() if k not in campaign_kinds(campaign)}
    if not other:
        return []
    found = ", ".join(f"{n} of kind {k!r}" for k, n in sorted(other.items()))
    if writing:
        raise param_error(
            comp,
            "--records",
            f"be this campaign's records folder, not one with other campaigns' records ({found})",
            folder,
        )
    return [f"{folder} holds records of other campaigns ({found}); left out of every count"]


def check_work(campaign: str, work: Path) -> None:
    """``--work`` must be a folder, or not exist yet (made by the first unit).

    Parameters
    ----------
    campaign : str
        The campaign, as the message names it.
    work : Path
        The work folder (``--work`` or the campaign's default).

    Raises
    ------
    UdbenchError
        ``work`` exists and is not a folder.
    """
    if work.exists() and not work.is_dir():
        raise param_error(f"udbench campaign {campaign}", "--work", "be a folder", work)


def download_note(units: Sequence[Any], data_dir: Path | None) -> str | None:
    """A note naming the datasets of ``units`` whose raw tables would have to be downloaded
    (neither in the data folder nor in the cache), or None.

    The datasets are read from the unit ids (the first ``/``-segment holding a task or
    condition id, ``<dataset>__…``); an unknown dataset key is left to the unit to report.

    Parameters
    ----------
    units : sequence of Unit
        The units about to run.
    data_dir : Path, optional
        ``--data-dir`` (None: ``$UDBENCH_DATA_DIR``, then the cache,
        :func:`udbench.data.sources.availability`).

    Returns
    -------
    str or None
        The note, or None when every table is local, cached or embedded.
    """
    from udbench.data.sources import availability

    keys: set[str] = set()
    for unit in units:
        for seg in unit.unit_id.split("/"):
            if "__" in seg:
                keys.add(seg.split("__")[0])
                break
    need = []
    for key in sorted(keys):
        try:
            if availability(key, None if data_dir is None else str(data_dir)) == "needs download":
                need.append(key)
        except UdbenchError:  # an unknown key: the unit says so
            continue
    if not need:
        return None
    return (
        f"the raw tables of {', '.join(need)} are neither in the data folder (--data-dir, "
        "$UDBENCH_DATA_DIR) nor in the cache: the units that need them (those whose task "
        "file is not yet in the work folder) are not run, and write no record, until they "
        "are there (`udbench datasets download KEY` for each, which needs internet, or "
        "--data-dir)"
    )


def select_units(command: str, units: list[Any], only: str | None) -> list[Any]:
    """The units that ``--only`` selects.

    Parameters
    ----------
    command : str
        The command, for error messages (``udbench campaign run`` or ``status``).
    units : list of Unit
        The campaign's units (:class:`udbench.campaigns.engine.Unit`), in its order.
    only : str or None
        Comma-separated glob patterns of unit ids (:func:`fnmatch.fnmatchcase`; a comma
        always separates patterns); None: every unit.

    Returns
    -------
    list of Unit
        The units whose ids match at least one pattern, in the campaign's order.

    Raises
    ------
    UdbenchError
        A pattern that matches no unit id (e.g. a typo would otherwise run nothing and say
        "0 unit(s) done"), or no pattern at all.
    """
    if only is None:
        return units
    import fnmatch

    patterns = [p.strip() for p in only.split(",") if p.strip()]
    if not patterns:
        raise param_error(command, "--only", "name at least one glob pattern of unit ids", only)
    ids = [u.unit_id for u in units]
    for pattern in patterns:
        if not any(fnmatch.fnmatchcase(i, pattern) for i in ids):
            examples = ", ".join(dict.fromkeys(ids[:2] + ids[-1:])) or "none"
            raise param_error(
                command,
                "--only",
                f"hold patterns that match unit ids (this campaign's ids look like {examples})",
                pattern,
            )
    return [u for u in units if any(fnmatch.fnmatchcase(u.unit_id, p) for p in patterns)]


def check_run_limits(
    max_hours: float | None,
    max_units: int | None,
    finish_within: float | None,
    workers: int,
    unit_timeout: float | None,
) -> None:
    """Refuse ``udbench campaign run``'s limits that break their rule, naming the option.

    Raises
    ------
    UdbenchError
        ``--max-hours``, ``--finish-within`` or ``--unit-timeout`` not > 0 (the last also
        at most :data:`udbench.campaigns._timeout.MAX_SECONDS` in hours), ``--max-units`` or
        ``--workers`` below 1.
    """
    import math

    from udbench.campaigns._timeout import MAX_SECONDS

    cmd = "udbench campaign run"
    if max_hours is not None and not max_hours > 0:
        raise param_error(cmd, "max-hours", "be > 0", max_hours)
    if max_units is not None and max_units < 1:
        raise param_error(cmd, "max-units", "be an integer >= 1", max_units)
    if finish_within is not None and not finish_within > 0:
        raise param_error(cmd, "finish-within", "be > 0", finish_within)
    most = MAX_SECONDS / 3600
    if unit_timeout is not None and not (math.isfinite(unit_timeout) and 0 < unit_timeout <= most):
        rule = f"be a number of hours > 0 and <= {math.floor(most)}"
        raise param_error(cmd, "unit-timeout", rule, unit_timeout)
    if workers < 1:
        raise param_error(cmd, "workers", "be an integer >= 1", workers)
