"""The runs campaign's oracle fits: one committed ``gp:KERNEL`` fit per (instance, oracle).

One fit per (instance, oracle), committed (from 2026-12-04). A ``gp:KERNEL`` oracle is a
kernel fitted by L-BFGS-B on the instance's training sample, an optimum another machine can
place elsewhere (docs/campaigns.md, "Task versions across machines"). When the campaign's
records folder is known (``udbench campaign run runs`` passes it), each such (instance,
oracle) gets an ``oracle-fit`` unit (:data:`ORACLE_FIT_KIND`) whose record holds the fitted
kernel and scale, and the instance's transfer units require it and condition on that fit
(:func:`udbench.evaluation.transfer.alternative_moments`, ``fitted``) instead of fitting
again. So the 19 methods of an instance are scored against one oracle whichever machines
ran them, provided the fit records are committed with the others. A transfer record scored
under another fit than the committed one (its ``fit_sha256``) is stale (:func:`fit_check`)
and is scored again. A fit that does not work is recorded in its unit's result (``status``
``failed``, with the reason) and the transfer units record that oracle as failed, as before;
an error of the machine (:data:`MACHINE_ERRORS`) fails the unit instead, and it is retried.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from udbench._validation import InputUnavailableError, UdbenchError
from udbench.campaigns._runs_versions import _numerics, task_version_check
from udbench.campaigns.engine import Unit, jsonable

#: The part the ``oracle-fit`` units belong to (and whose units score each tuned cell under
#: the alternative oracles: :mod:`udbench.campaigns._runs_transfer`).
TRANSFER_PART = "transfer"

#: The kind of the units that fit a ``gp:KERNEL`` oracle once per instance (module notes);
#: built with the ``transfer`` part, before the instance's first transfer unit.
ORACLE_FIT_KIND = "oracle-fit"


#: Errors of the machine rather than of a fit or a score (a full disk, no memory): the unit
#: fails and the next run retries it, instead of recording the oracle as failed for good.
MACHINE_ERRORS: tuple[type[Exception], ...] = (OSError, MemoryError)


#: An ``oracle-fit`` unit's CPU seconds: one L-BFGS-B kernel fit and its conditioning on
#: gp-small (the instance's three fits took 9-13 s).
ORACLE_FIT_UNIT_SECONDS = 4.0


def fits_kernel(oracle: str) -> bool:
    """Whether ``oracle`` (a :func:`udbench.evaluation.transfer.parse_oracle` spec) is fitted
    per instance: ``gp:KERNEL`` (not ``gp:prior``, not ``family:``). By its kind and name
    only, so an oracle text kept in an old record is classed without being parsed; a kernel
    that does not parse is refused where its unit is built (:func:`oracle_fit_unit_id`)."""
    from udbench.evaluation.transfer import GP_ORACLE

    kind, _, name = str(oracle).partition(":")
    return kind.strip().lower() == GP_ORACLE and name.strip().lower() not in ("", "prior")


def oracle_fit_unit_id(task_id: str, oracle: str) -> str:
    """``oracle-fit/<task id>/<oracle slug>``, e.g. ``oracle-fit/…__s0/gp-rq_linear``."""
    from udbench.evaluation.transfer import parse_oracle

    return f"{ORACLE_FIT_KIND}/{task_id}/{parse_oracle(oracle, 'udbench campaign runs').slug}"


def oracle_fit_settings(spec: Any, oracle: str, suite_name: str) -> dict[str, Any]:
    """What an ``oracle-fit`` unit's fit depends on: the instance, the oracle, its fit
    settings at the instance's fidelity and the oracle moments' version."""
    from udbench.evaluation.transfer import ORACLE_MOMENTS_VERSION, fit_settings_for

    return {
        "suite": suite_name,
        "part": TRANSFER_PART,
        "task_id": spec.task_id,
        "fidelity": str(spec.fidelity),
        "oracle": oracle,
        "oracle_fit": fit_settings_for(str(spec.fidelity)),
        "oracle_moments": ORACLE_MOMENTS_VERSION,
    }


def oracle_fit_work(
    spec: Any,
    oracle: str,
    work_dir: str,
    data_dir: str | None,
    generate: Any,
    suite: dict[str, Any],
) -> dict[str, Any]:
    """Fit ``oracle`` on the instance's training sample (or read this machine's cache of the
    fit, ``WORK/transfer-oracles``) and return the record's result: ``status`` (``ok`` or
    ``failed`` with ``error``), ``kernel``, ``scale``, ``fit_sha256``
    (:func:`oracle_fit_checksum`), ``lml_initial``, ``lml_final``, ``fit_settings``,
    ``seconds`` and the task file's ``task_arrays_sha256``."""
    from udbench.campaigns._runs_versions import ready_task_file
    from udbench.evaluation.transfer import parse_oracle
    from udbench.evaluation.transfer_rescoring import cached_oracle_moments
    from udbench.tasks import Task

    path, arrays = ready_task_file(spec, work_dir, data_dir, generate, suite)
    task = Task.load(path).verify()  # its arrays now: a damaged file is no fit's failure
    parsed = parse_oracle(oracle, "udbench campaign runs")
    cache = Path(work_dir) / "transfer-oracles" / parsed.slug
    out: dict[str, Any] = {"status": "ok", "error": None, "task_arrays_sha256": arrays}
    try:
        moments = cached_oracle_moments(task, parsed, cache, task.content_sha256, data_dir=data_dir)
    except InputUnavailableError:  # nothing failed: the unit waits for the input
        raise
    except MACHINE_ERRORS:  # not the fit's failure: the unit fails, retried
        raise
    except Exception as err:
        # a fit that does not work: kept with its reason, and the instance's transfer units
        # record the oracle as failed with it
        why = f"{type(err).__name__}: {' '.join(str(err).split())}"
        return {**out, "status": "failed", "error": why}
    info = moments.info
    out.update(
        kernel=info["kernel"],
        scale=info["scale"],
        fit_sha256=oracle_fit_checksum(info),
        lml_initial=info.get("lml_initial"),
        lml_final=info.get("lml_final"),
        fit_settings=info.get("fit_settings"),
        seconds=moments.seconds,
    )
    return jsonable(out)


#: ``(record path, inode, mtime_ns, size, fit unit's settings and numerics)`` → the fit's
#: checksum (None: no current ``ok`` fit): status and summaries judge every transfer record,
#: 19 per fit; a record rewritten meanwhile (records are replaced whole) has another key.
_FIT_SHA_CACHE: dict[tuple[str, int, int, int, str], str | None] = {}


def _committed_fit_sha(unit: Unit, records: str | Path) -> str | None:
    """``fit_sha256`` of ``unit``'s (an ``oracle-fit`` unit) record if it is current
    (:func:`udbench.campaigns.engine.unit_status` ``done``: its settings, numerics and task
    version) and its fit is ``ok``, else None."""
    from udbench.campaigns._record_kinds import file_version
    from udbench.campaigns.engine import record_file, unit_status

    version = file_version(record_file(records, unit.unit_id))
    if version is None:
        return None
    made = json.dumps([unit.settings, unit.numerics], sort_keys=True, default=str)
    key = (*version, made)
    if key not in _FIT_SHA_CACHE:
        status, rec = unit_status(unit, records)
        res = (rec or {}).get("result") or {}
        sha = res.get("fit_sha256")
        ok = status == "done" and res.get("status") == "ok" and bool(sha)
        if len(_FIT_SHA_CACHE) > 8192:
            _FIT_SHA_CACHE.clear()
        _FIT_SHA_CACHE[key] = str(sha) if ok else None
    return _FIT_SHA_CACHE[key]


def fit_check(
    fit_records: str | None, fits: Sequence[Unit]
) -> Callable[[dict[str, Any]], str | None] | None:
    """The ``accepts`` check of a transfer record against its instance's committed fits
    (module notes), judged against each ``oracle-fit`` unit of ``fits`` whose record is
    current and holds an ``ok`` fit:

    - a ``gp:KERNEL`` entry scored under another fit (its ``fit_sha256``) is stale;
    - an entry that failed before that fit was there (no ``fit_sha256``: the fit had failed
      or was not committed) is stale too, so it is scored against the fit now committed.

    While an instance's fit record is not current (missing, failed, stale), its oracle's
    entries are not judged: a run redoes the fit first (the transfer units require it) and
    judges them then. An ``ok`` entry without a checksum (records of before 2026-12-04,
    made from one cache) is not judged. None without ``fit_records`` or fit units.
    """
    if fit_records is None:
        return None
    by_oracle = {str(u.settings["oracle"]): u for u in fits if u.kind == ORACLE_FIT_KIND}
    if not by_oracle:
        return None

    def accepts(record: dict[str, Any]) -> str | None:
        entries = (record.get("result") or {}).get("oracles") or {}
        for oracle, unit in by_oracle.items():
            entry = entries.get(oracle) or {}
            have = entry.get("fit_sha256")
            if not have and entry.get("status") != "failed":
                continue  # an old record's ok entry, or an oracle it did not score
            want = _committed_fit_sha(unit, fit_records)
            if want is None or have == want:
                continue
            if not have:
                return f"{oracle} failed ({entry.get('error')}) before {unit.unit_id} held a fit"
            return (
                f"scored under another fit of {oracle} ({have[:8]}) than the committed "
                f"{unit.unit_id} ({want[:8]})"
            )
        return None

    return accepts


def _given_fit(fit_records: str | None, task_id: str, oracle: str) -> dict[str, Any] | None:
    """The committed fit of (instance, oracle) from its ``oracle-fit`` record, None without
    a records folder or for an oracle that fits nothing.

    Raises
    ------
    UdbenchError
        The record is missing or not done (the unit requires it, so only a record removed
        meanwhile), or its fit failed (the oracle is then recorded as failed).
    """
    from udbench.campaigns.engine import read_record, record_file

    if fit_records is None or not fits_kernel(oracle):
        return None
    uid = oracle_fit_unit_id(task_id, oracle)
    rec = read_record(record_file(fit_records, uid))
    if rec is None or rec.get("status") != "done":
        raise UdbenchError(f"transfer: the fit {uid!r} has no done record in {fit_records!r}")
    res = rec.get("result") or {}
    if res.get("status") != "ok":
        raise UdbenchError(f"the oracle's fit failed ({uid}): {res.get('error')}")
    return {"kernel": res["kernel"], "scale": res["scale"]}


def oracle_fit_checksum(info: dict[str, Any]) -> str | None:
    """First 16 hex digits of the SHA-256 of a refitted oracle's kernel and scale (from
    :class:`udbench.evaluation.transfer.OracleMoments` ``info``), None for an oracle that
    fits nothing. The fit is an L-BFGS-B optimum, which another machine can place elsewhere
    (docs/campaigns.md, "Task versions across machines"); the transfer records keep this so
    that an instance scored under two fits of one oracle is found
    (:func:`udbench.campaigns._runs_transfer.transfer_summary`).
    """
    if "kernel" not in info:
        return None
    text = json.dumps({"kernel": info["kernel"], "scale": info.get("scale")}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _oracle_fit_note(done: list[dict[str, Any]]) -> str | None:
    """One note when an instance's methods were scored under more than one fit of an oracle
    (records made on other machines); records from before the checksum are not counted."""
    fits: dict[tuple[str, str], set[str]] = {}
    for rec in done:
        task = rec["unit_id"].split("/")[1]
        for oracle, entry in (rec.get("result") or {}).get("oracles", {}).items():
            if entry.get("fit_sha256"):
                fits.setdefault((task, oracle), set()).add(entry["fit_sha256"])
    mixed = sorted(k for k, v in fits.items() if len(v) > 1)
    if not mixed:
        return None
    return (
        f"transfer: {len(mixed)} (instance, oracle) pair(s) were scored under more than one fit "
        f"of the oracle (made on other machines; first {mixed[0][0]} under {mixed[0][1]}): "
        "their methods were not all scored against one oracle"
    )


def _fit_provenance(records: str | Path, units: Any, compared: list[dict[str, Any]]) -> str | None:
    """One line: how many ``oracle-fit`` records there are, and which fit the compared
    transfer records' ``gp:KERNEL`` entries were scored under (None without such entries)."""
    from udbench.campaigns.engine import current_records

    given = checksummed = bare = 0
    for rec in compared:
        for oracle, entry in ((rec.get("result") or {}).get("oracles") or {}).items():
            if entry.get("status") != "ok" or not fits_kernel(oracle):
                continue
            if entry.get("fit_given"):
                given += 1
            elif entry.get("fit_sha256"):
                checksummed += 1
            else:
                bare += 1
    if not given + checksummed + bare:
        return None
    fit_recs, _ = current_records(records, ORACLE_FIT_KIND, units, include_failed=True)
    ok = sum(
        r.get("status") == "done" and (r.get("result") or {}).get("status") == "ok"
        for r in fit_recs
    )
    expected = len(fit_recs) if units is None else sum(u.kind == ORACLE_FIT_KIND for u in units)
    return (
        f"transfer: oracle fits: {ok} committed with a fit (`oracle-fit` records; "
        f"{max(expected - ok, 0)} of the campaign's fit units without one: failed, not run or "
        f"not a fit); the compared records' gp:KERNEL entries: {given} scored "
        f"against a committed fit, {checksummed} scored before it was committed (under a fit "
        f"with a checksum), {bare} from before fit checksums were kept"
    )


def fit_units(spec: Any, oracles: Sequence[str], where: tuple[Any, ...]) -> tuple[Unit, ...]:
    """The ``oracle-fit`` units of one instance (one per ``gp:KERNEL`` oracle)."""
    work_dir, data_dir, generate, cfg = where
    return tuple(
        Unit(
            unit_id=oracle_fit_unit_id(spec.task_id, oracle),
            kind=ORACLE_FIT_KIND,
            settings=oracle_fit_settings(spec, oracle, str(cfg.get("name"))),
            numerics=_numerics(spec.family),
            work=functools.partial(
                oracle_fit_work, spec, oracle, work_dir, data_dir, generate, cfg
            ),
            estimate_seconds=ORACLE_FIT_UNIT_SECONDS,
            accepts=task_version_check(cfg, spec),
        )
        for oracle in oracles
    )
