"""Resumable campaigns: long work cut into units, each leaving a small committed record.

A *campaign* is work longer than one sitting (a preset validation at full size, a sweep of
sampler settings, a tuning grid). It is cut into :class:`Unit` objects, each small enough to
finish in minutes, and each finished unit writes one small JSON *record* (settings, seeds,
figures, the version of the numerics it depends on, the code version, the machine and its
load) under a records folder that is meant to be committed to the repository. Big artefacts
(task files) go to a separate work folder that is not. A later run, possibly on a fresh
machine with only the committed records, redoes only what is missing
(:func:`run_campaign`); the figures and verdicts are rebuilt from the records alone by the
campaign's own summary functions (e.g. :mod:`udbench.campaigns.mcmc`).

Which records count (:func:`unit_status`):

- ``done``: a record with ``"status": "done"``, the unit's settings and the unit's numerics
  versions. Records survive commits that do not change the numbers: a unit is identified by
  its settings and by a *numerics version* per component (a constant such as
  :attr:`udbench.priors.base.Prior.numerics_version`, bumped only by a change that alters the
  draws), never by the commit.
- ``stale``: a record made under another numerics version or with other settings, or one
  its unit's own check refuses (``Unit.accepts``, e.g. made on another version of its task
  file). It is reported, never mixed into a summary, and the unit is redone (its record
  replaced). A unit whose fresh result its own check refuses is recorded as failed.
- ``failed``: the unit raised; the record holds the error (and, when the unit raised
  :class:`UnitFailed`, what it had made: ``result``). The run goes on with the next unit,
  and a later run retries it.
- ``corrupt``: the file is not a readable record (reported; redone).
- ``missing``: no record.

A unit whose work raises :class:`udbench._validation.InputUnavailableError` (an input it needs,
such as a dataset's raw table, is not on this machine) did not fail: it writes no record (a
missing unit stays missing; an older stale or failed record stays as it was), so that it runs
once the input is provided, and the run goes on.

A unit that is killed mid-way leaves no record (records are written atomically, after the
work), so a resumed run redoes exactly the unfinished unit. One writer per *unit*: while it
works on a unit, :func:`run_campaign` holds that unit's claim, a file lock under
``<records>/.claims/`` (:mod:`udbench.campaigns._claims`) that the kernel drops when the
process ends; another run that reaches the unit skips it (counted ``busy``) and goes on with
the next. So several runs of one campaign, on one machine or on several machines sharing
the records folder, share its units without doing one twice: the way to use more than one
core, since a run does its units one after another.
"""

from __future__ import annotations

import datetime
import json
import os
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from udbench._threads import release_compiled_programs_if_crowded
from udbench._validation import InputUnavailableError, param_error
from udbench.campaigns import _record_kinds, _timeout
from udbench.campaigns._claims import (
    UnitBusy,
    claim_path,
    claimed_units,
    refuse_folder_lock,
    unit_claim,
)
from udbench.campaigns._provenance import code_version, jsonable, machine_facts

__all__ = [
    "RECORD_SCHEMA",
    "Unit",
    "UnitFailed",
    "claim_path",
    "claimed_units",
    "code_version",
    "current_records",
    "jsonable",
    "load_done_records",
    "machine_facts",
    "read_record",
    "record_file",
    "run_campaign",
    "settings_difference",
    "stale_reason",
    "unit_status",
]

#: Version of the record layout written by :func:`run_campaign`.
RECORD_SCHEMA = 1
_ID_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/+=")


class UnitFailed(Exception):
    """Raised by a unit's work to fail with a partial result kept in its record.

    The record gets ``"status": "failed"``, ``error`` (the message) and ``result`` (the
    JSON-ready ``result``), e.g. a benchmark cell's failed row with its reason; like any
    failed unit it is retried by the next run.

    Parameters
    ----------
    message : str
        Why the unit failed (one line).
    result : dict
        What the unit made before failing (JSON-ready).
    """

    def __init__(self, message: str, result: dict[str, Any]) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class Unit:
    """One unit of a campaign.

    Parameters
    ----------
    unit_id : str
        Stable name, also the record's path under the records folder
        (``<unit_id>.json``; ``/`` makes sub-folders). Letters, digits and ``._-/+=`` only.
    kind : str
        What kind of unit (e.g. ``"hbart-validation"``); summaries select records by it.
    settings : dict
        Everything that defines the unit's numbers (JSON-ready). A record with other
        settings is stale.
    numerics : dict of str to int
        Numerics version of every component whose numbers the unit depends on (e.g.
        ``{"hbart": 1}``). A record made under other versions is stale.
    work : callable
        ``work() -> dict``: does the work and returns the JSON-ready result.
    estimate_seconds : float, optional
        Projected wall seconds on the reference machine (for the status table).
    estimate_note : str, optional
        How ``estimate_seconds`` was come by when it is no projection from measurements
        (e.g. ``"guessed: no calibration entry"``); the status table says so beside it.
    requires : tuple of Unit, optional
        Units whose current (done) records this unit's work needs, e.g. the cell whose
        predictions it scores: :func:`run_campaign` starts it only once they are done (one
        in flight in another run, failed or not run yet: it is tried again after the other
        units, then left for the next run).
    accepts : callable, optional
        ``accepts(record) -> str | None``: a check of a done record beyond its settings and
        numerics, e.g. that it was made on the reference version of its task file. It returns
        why the record is stale (redone, and left out of summaries), or None to keep it.
    """

    unit_id: str
    kind: str
    settings: dict[str, Any]
    numerics: dict[str, int]
    work: Callable[[], dict[str, Any]] = field(compare=False, repr=False)
    estimate_seconds: float | None = None
    estimate_note: str | None = field(default=None, compare=False)
    requires: tuple[Unit, ...] = field(default=(), compare=False, repr=False)
    accepts: Callable[[dict[str, Any]], str | None] | None = field(
        default=None, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        uid = self.unit_id
        if not uid or set(uid) - _ID_CHARS or uid.startswith("/") or ".." in uid.split("/"):
            raise param_error(
                "Unit", "unit_id", "be a relative name of letters, digits and ._-/+=", uid
            )


def record_file(records: str | Path, unit_id: str) -> Path:
    """``<records>/<unit_id>.json``."""
    return Path(records) / f"{unit_id}.json"


def read_record(path: str | Path) -> dict[str, Any] | None:
    """The record at ``path``: None if there is none; ``{"status": "corrupt", ...}`` if the
    file cannot be read as a record."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        return {"status": "corrupt", "error": f"{type(err).__name__}: {err}"}
    if not isinstance(record, dict) or "status" not in record or "unit_id" not in record:
        return {"status": "corrupt", "error": "not a campaign record (no status/unit_id)"}
    return record


def _canonical(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True))


def unit_status(unit: Unit, records: str | Path) -> tuple[str, dict[str, Any] | None]:
    """Status of ``unit`` against its record (module docstring) and the record itself.

    Returns
    -------
    (status, record) : tuple
        ``status`` is ``"done"``, ``"stale"``, ``"failed"``, ``"corrupt"`` or ``"missing"``;
        ``record`` is the parsed record (None if missing).
    """
    record = read_record(record_file(records, unit.unit_id))
    if record is None:
        return "missing", None
    if record["status"] == "corrupt":
        return "corrupt", record
    if record.get("numerics") != unit.numerics:
        return "stale", record
    if record.get("settings") != _canonical(unit.settings):
        return "stale", record
    if record["status"] != "done":
        return "failed", record
    if stale_reason(unit, record) is not None:
        return "stale", record
    return "done", record


def settings_difference(unit: Unit, record: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """What makes ``record`` stale by its settings or numerics: ``(key, recorded, current)``
    for every setting (``"numerics.<component>"`` for a numerics version) whose recorded value
    is not the unit's, sorted by key; empty when both agree.

    A status that calls records stale names the setting that differs with it (e.g. the tuning
    campaign's ``trials`` when ``--trials`` was not the run's).
    """
    recorded = record.get("settings")
    recorded = recorded if isinstance(recorded, dict) else {}
    current = _canonical(unit.settings)
    out = [
        (k, recorded.get(k), current.get(k))
        for k in sorted(set(recorded) | set(current))
        if recorded.get(k) != current.get(k)
    ]
    numerics = record.get("numerics")
    numerics = numerics if isinstance(numerics, dict) else {}
    out += [
        (f"numerics.{k}", numerics.get(k), unit.numerics.get(k))
        for k in sorted(set(numerics) | set(unit.numerics))
        if numerics.get(k) != unit.numerics.get(k)
    ]
    return out


def stale_reason(unit: Unit, record: dict[str, Any]) -> str | None:
    """Why ``unit.accepts`` refuses ``record`` (None: accepted, no check, or no result).

    Applied to done records and to failed ones that keep a result (a failed cell's row)."""
    if unit.accepts is None or not isinstance(record.get("result"), dict):
        return None
    return unit.accepts(record)


def _write_atomic(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(payload, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


#: Units named one by one when ``finish_within`` leaves them; the rest are counted.
_SAID_NOT_FITTING = 3


def run_campaign(
    units: Sequence[Unit],
    records: str | Path,
    *,
    max_seconds: float | None = None,
    max_units: int | None = None,
    finish_within: float | None = None,
    projected: Callable[[Unit], float | None] | None = None,
    progress: Callable[[str], None] | None = None,
    started: float | None = None,
    unit_timeout: float | None = None,
) -> dict[str, int]:
    """Run every unit of ``units`` that has no valid record, in order, writing records.

    Parameters
    ----------
    units : sequence of Unit
        Unit ids must be unique.
    records : str or Path
        Records folder (committed to the repository).
    max_seconds : float, optional
        Start no new unit after this many wall seconds (the running one finishes).
    max_units : int, optional
        Start at most this many units (those that turn out unavailable included).
    finish_within : float, optional
        Wall seconds from the start by which every started unit should have finished: a
        unit whose ``projected(unit)`` seconds do not fit in the time left is not started
        (counted ``left``, for the next run) and shorter units after it still run; a unit
        without a projection is started while time is left. For a run that must end before
        the machine is needed (a killed unit loses all its work).
    projected : callable, optional
        ``projected(unit)``: the unit's projected wall seconds, or None (with
        ``finish_within``; default: ``unit.estimate_seconds``).
    progress : callable, optional
        Called with one line per unit started, finished, failed, not run or skipped as stale.
    started : float, optional
        ``time.perf_counter()`` at the start that ``max_seconds`` and ``finish_within``
        count from (default: this call's; a command passes its own start, before it built
        the units and read the records).
    unit_timeout : float, optional
        Wall seconds a unit may run: one still running then is stopped at its next return
        to Python and recorded as failed, or, inside compiled code, its record is written
        and the process ends (:mod:`udbench.campaigns._timeout`); a failed unit that timed
        out under a limit at least this long is not retried (counted ``left``).

    Returns
    -------
    dict
        Counts: ``skipped`` (already done), ``done``, ``failed`` (this run), ``left``,
        ``unavailable``: units that raised :class:`~udbench._validation.InputUnavailableError`
        (no record written; each missing input is described in full once, then named), and
        ``busy``: units another run held the claim of (not run here).

    Raises
    ------
    UdbenchError
        Duplicate unit ids; the records folder is held whole by a live run of an earlier
        udbench (which locked the folder, not the units); a ``unit_timeout`` that is not a
        positive number, or that this process cannot keep (not its main thread).
    """
    _timeout.check_unit_timeout("run_campaign", unit_timeout)
    ids = [u.unit_id for u in units]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise param_error("run_campaign", "units", "have unique unit ids", dup)
    say = progress or (lambda line: None)
    project = projected or (lambda unit: unit.estimate_seconds)
    counts = {"skipped": 0, "done": 0, "failed": 0, "left": 0, "unavailable": 0, "busy": 0}
    n_not_fitting = 0
    missing_inputs: set[str] = set()
    t_start = time.perf_counter() if started is None else float(started)
    refuse_folder_lock(records)
    waiting: list[Unit] = []  # units whose requirements were not done: tried once more
    for unit in _then_waiting(units, waiting):
        status, old = unit_status(unit, records)
        if status == "done":
            counts["skipped"] += 1
            continue
        if status == "failed" and (why := _timeout.skip_reason(unit, old, unit_timeout)):
            counts["left"] += 1
            say(f"{unit.unit_id}: {why}")
            continue
        pending = next((r for r in unit.requires if unit_status(r, records)[0] != "done"), None)
        if pending is not None:
            if unit not in waiting:
                waiting.append(unit)
                continue
            counts["left"] += 1
            say(f"{unit.unit_id}: waits for {pending.unit_id} (not done); not run here")
            continue
        out_of_time = max_seconds is not None and time.perf_counter() - t_start > max_seconds
        tried = counts["done"] + counts["failed"] + counts["unavailable"]
        out_of_units = max_units is not None and tried >= max_units
        if out_of_time or out_of_units:
            counts["left"] += 1
            continue
        if finish_within is not None:
            left_s = finish_within - (time.perf_counter() - t_start)
            need = project(unit) if left_s > 0 else None
            if left_s <= 0 or (need is not None and need > left_s):
                counts["left"] += 1
                n_not_fitting += 1
                if need is not None and n_not_fitting <= _SAID_NOT_FITTING:
                    say(
                        f"{unit.unit_id}: left for the next run (projected "
                        f"{need / 60:.1f} min, {left_s / 60:.1f} min left to finish within)"
                    )
                continue
        try:
            with unit_claim(records, unit.unit_id, "udbench campaign run"):
                # claimed: another run may have finished (or failed) it since the status above
                now, rec = unit_status(unit, records)
                if now == "done":
                    counts["skipped"] += 1
                    continue
                if rec != old:  # e.g. a failed record just written: that run's to retry
                    counts["busy"] += 1
                    say(f"{unit.unit_id}: just recorded by another run ({now}); skipped")
                    continue
                outcome = _run_unit(unit, records, now, rec, say, missing_inputs, unit_timeout)
        except UnitBusy as busy:  # another live run works on it: not ours to do
            counts["busy"] += 1
            owner = busy.owner
            say(
                f"{unit.unit_id}: being run by another process (pid {owner.get('pid', '?')} "
                f"on {owner.get('host', '?')}, since {owner.get('since', '?')}); skipped"
            )
            continue
        counts[outcome] += 1
    if n_not_fitting > _SAID_NOT_FITTING:
        say(
            f"… {n_not_fitting} unit(s) in all left for the next run: they would not finish in time"
        )
    return counts


def _then_waiting(units: Sequence[Unit], waiting: list[Unit]) -> Any:
    """``units`` in order, then the ``waiting`` ones (those the first pass put there because
    a requirement was not done: by then another run may have finished it) once more."""
    yield from units
    yield from list(waiting)


def _run_unit(
    unit: Unit,
    records: str | Path,
    status: str,
    old: dict[str, Any] | None,
    say: Callable[[str], None],
    missing_inputs: set[str],
    unit_timeout: float | None = None,
) -> str:
    """Do one claimed unit's work and write its record; ``done``, ``failed`` or
    ``unavailable`` (no record: an input is missing, each named in full once)."""
    if status in ("stale", "corrupt"):
        why = (
            (old or {}).get("error")
            or (None if old is None else stale_reason(unit, old))
            or f"numerics {(old or {}).get('numerics')} / other settings"
        )
        say(f"{unit.unit_id}: record {status} ({why}); redoing it")
    say(f"{unit.unit_id}: started")
    began = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    record: dict[str, Any] = {
        "schema": RECORD_SCHEMA,
        "unit_id": unit.unit_id,
        "kind": unit.kind,
        "status": "failed",  # until the work is done; as written by a hard stop
        "settings": _canonical(unit.settings),
        "numerics": dict(unit.numerics),
        "started": began,
        "wall_seconds": 0.0,
        "cpu_seconds": 0.0,
        "machine": machine_facts(),
        "code": code_version(),
    }
    t0, c0 = time.perf_counter(), time.process_time()
    partial: dict[str, Any] | None = None
    timed_out: float | None = None
    path = record_file(records, unit.unit_id)
    try:
        with _timeout.time_limit(unit_timeout, (path, record, _write_atomic)):
            result: dict[str, Any] | None = unit.work()
        error = None
    except KeyboardInterrupt:
        raise
    except InputUnavailableError as err:  # nothing failed: no record, stays missing
        first = err.what not in missing_inputs
        missing_inputs.add(err.what)
        say(
            f"{unit.unit_id}: not run, no record written: {err}"
            if first
            else f"{unit.unit_id}: not run ({err.what} is missing, see above)"
        )
        return "unavailable"
    except UnitFailed as err:  # failed, with what it made
        result, error, partial = None, str(err), err.result
        tb = traceback.format_exc(limit=8)
    except (Exception, _timeout.UnitTimedOut) as err:  # recorded, the campaign goes on
        if _timeout.interrupted(err):  # a Ctrl-C a library's clean-up made another error
            raise KeyboardInterrupt from err
        # stopped by --unit-timeout: also where a library's clean-up made it another error
        result, error, timed_out = None, f"{type(err).__name__}: {err}", _timeout.limit_in(err)
        tb = traceback.format_exc(limit=8)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    record.update(status="done" if error is None else "failed")
    record.update(wall_seconds=round(wall, 3), cpu_seconds=round(cpu, 3))
    if error is None:
        record["result"] = _canonical(result)
        refused = stale_reason(unit, record)
        if refused is not None:  # a "done" record its own check refuses would loop forever
            record["status"], error = "failed", f"made a record its check refuses: {refused}"
            record["error"], record["traceback"] = error, ""
    else:
        record["error"] = error
        record["traceback"] = tb
        if timed_out is not None:
            record[_timeout.TIMED_OUT_KEY] = timed_out
        if partial is not None:
            record["result"] = _canonical(partial)
    # the record first: a progress line that cannot be written (a closed pipe) loses nothing
    _write_atomic(path, record)
    if error is None:
        say(f"{unit.unit_id}: done in {wall / 60:.1f} min")
    else:
        say(f"{unit.unit_id}: FAILED ({error}); recorded, going on")
    release_compiled_programs_if_crowded()  # kept for the next unit while maps are few
    return "done" if error is None else "failed"


def load_done_records(
    records: str | Path,
    kind: str | None = None,
    numerics: Mapping[str, int] | None = None,
    *,
    include_failed: bool = False,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The finished records under ``records`` (optionally of one ``kind``), and the notes.

    Parameters
    ----------
    records : str or Path
    kind : str, optional
        Keep records of this kind only.
    numerics : mapping, optional
        The current numerics versions: a record whose versions differ for any component
        named in both is left out and named in the notes (never mixed into a summary).
    include_failed : bool, default False
        Keep the failed records too (a summary that counts failures, e.g. a failed benchmark
        cell's row; :class:`UnitFailed`), under the same numerics rule.

    Returns
    -------
    (done, notes) : tuple
        ``done``: parsed records with status ``done`` (and ``failed`` on request), sorted by
        unit id; ``notes``: one line per record left out (corrupt, failed, other numerics
        version).
    """
    folder = Path(records)
    done: list[dict[str, Any]] = []
    notes: list[str] = []
    if not folder.is_dir():
        return done, notes
    for path in sorted(folder.rglob("*.json")):
        record = _record_kinds.read_unless_other_kind(path, kind, read_record)
        if record is None:
            continue
        rel = path.relative_to(folder).with_suffix("").as_posix()
        if record["status"] == "corrupt":
            notes.append(f"{rel}: unreadable record ({record['error']})")
            continue
        if kind is not None and record.get("kind") != kind:
            continue
        if record["status"] != "done" and not include_failed:
            notes.append(f"{rel}: failed ({record.get('error')}); retried by a later run")
            continue
        if numerics is not None:
            theirs = record.get("numerics") or {}
            clash = {
                k: (theirs[k], v) for k, v in numerics.items() if k in theirs and theirs[k] != v
            }
            if clash:
                notes.append(
                    f"{rel}: made under numerics {theirs} (now {dict(numerics)}); left out"
                )
                continue
        done.append(record)
    done.sort(key=lambda r: str(r["unit_id"]))
    return done, notes


def current_records(
    records: str | Path,
    kind: str,
    units: Sequence[Unit] | None = None,
    numerics: Mapping[str, int] | None = None,
    *,
    include_failed: bool = False,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The records of ``kind`` a summary may use, and a note on each one left out.

    The rule of every campaign summary that takes the campaign's units (module docstring,
    "Which records count"):
    :func:`load_done_records` under ``numerics``; then, with ``units``, only the records of
    those units made with their unit's settings and numerics versions.

    Parameters
    ----------
    records : str or Path
        The campaign's records folder.
    kind : str
        The units' kind (:attr:`Unit.kind`).
    units : sequence of Unit, optional
        The units selected now (e.g. one suite's, or some methods' only). A record of a unit
        not among them (another method, or a unit the campaign no longer has) is left out,
        and one note counts them; a record whose settings or numerics differ from its unit's
        is stale: left out and named in a note; so are the records its unit's check
        (``Unit.accepts``) refuses, done or failed, counted in one note per kind.
    numerics : mapping, optional
        Current numerics versions (:func:`load_done_records`).
    include_failed : bool, default False
        Keep failed records that hold a result (:class:`UnitFailed`, e.g. a benchmark cell's
        failed row); a failed record without one is named in a note.

    Returns
    -------
    (records, notes) : tuple
        ``records``: the done records, then the failed ones, each group by unit id (row
        order matters to the bootstraps downstream); ``notes``: one line per record left out.
    """
    recs, notes = load_done_records(records, kind, numerics, include_failed=include_failed)
    recs.sort(key=lambda r: r["status"] != "done")  # stable: unit-id order within each group
    if units is not None:
        wanted = {
            u.unit_id: (_canonical(u.settings), u.numerics, u) for u in units if u.kind == kind
        }
        kept, n_other, refused = [], 0, []
        for rec in recs:
            want = wanted.get(rec["unit_id"])
            if want is None:
                n_other += 1
            elif rec.get("settings") != want[0] or (rec.get("numerics") or {}) != want[1]:
                notes.append(
                    f"{rec['unit_id']}: made with other settings or numerics (stale); left out"
                )
            elif (why := stale_reason(want[2], rec)) is not None:
                refused.append(f"{rec['unit_id']}: {why}")
            else:
                kept.append(rec)
        if refused:  # one note: a machine's worth of records can be refused by one rule
            more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
            notes.append(f"{len(refused)} stale {kind} record(s) left out: {refused[0]}{more}")
        if n_other:
            notes.append(
                f"{n_other} {kind} record(s) of units not selected now (other methods or "
                "conditions, or units the campaign no longer has); left out"
            )
        recs = kept
    notes += [
        f"{r['unit_id']}: {r['status']} without a result ({r.get('error')}); redone by a later run"
        for r in recs
        if not isinstance(r.get("result"), dict)
    ]
    return [r for r in recs if isinstance(r.get("result"), dict)], notes
