"""Tuned configurations as data: one JSON record per (method, condition).

A tuning folder (``udbench tune --out DIR``) holds, per sweep, ``DIR/<method>/<condition>.json``
(the record, written when the sweep has all its trials) beside ``<condition>.journal`` (the
Optuna journal it was made from). A record holds:

- ``format`` (``"udbench-tuned-config"``), ``schema_version``, ``udbench_version``,
  ``optuna_version``, ``created_at``;
- what was tuned: ``method``, ``condition`` and its parts (``dataset, family, noise,
  coverage``), ``task_id`` and ``train_sha256`` (the training sample used), ``base_config``
  (canonical JSON of the configuration the sweep started from), ``search_space`` and
  ``search_space_hash``, ``sampler``, ``sampler_seed``, ``split_seed``, ``holdout_fraction``;
- the outcome: ``status`` (``"ok"``, or ``"no-complete-trial"`` when every trial failed),
  ``params`` (every hyperparameter of the winning configuration), ``tuned_params`` (the
  sampled ones), ``config_hash`` (:func:`udbench.methods.configs.config_hash` of ``params``),
  ``score`` (its held-out NLL: ``score_name`` is ``heldout_gaussian_nll``, or for a
  classifier ``heldout_categorical_nll``, whose record also holds ``task_type =
  "classification"`` and ``prob_floor``), ``best_trial``, ``n_trials`` (complete + failed +
  pruned), ``n_complete``, ``n_failed``, ``n_pruned``, ``n_interrupted``, ``pruner`` (None, or
  the pruner and its resources: :mod:`udbench.tuning.pruning`); the best is always a
  complete trial;
- ``history``: every trial in number order (``number, state`` (``complete``, ``pruned``,
  ``failed``, ``interrupted``), ``value`` (a pruned trial's: its last intermediate NLL),
  ``best_so_far, params, error, running_at_ask, finish_index, fit_time_s, predict_time_s``
  (wall-clock), ``cpu_time_s`` (the trial's process CPU seconds; None in a record made before
  it was kept), ``duration_s, intermediate`` (step -> held-out NLL reported while it trained),
  ``pruned_at``): the best-so-far curve of the report and the measured trial times of
  ``udbench plan``.

:func:`tuned_configurer` turns a folder of records into the per-task configurations of
``udbench run --tuned``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from udbench._validation import UdbenchError, param_error
from udbench.methods.configs import MethodConfig, config_hash
from udbench.tasks import TaskSpec
from udbench.tuning.space import search_space_hash

__all__ = [
    "CAMPAIGN_KIND",
    "FALLBACKS",
    "RECORD_FORMAT",
    "Condition",
    "StaleRecordError",
    "TunedConfigs",
    "load_records",
    "read_tuned_record",
    "record_path",
    "shipped_staleness",
    "summary_rows",
    "tuned_configurer",
    "write_record",
]

RECORD_FORMAT = "udbench-tuned-config"
SCHEMA_VERSION = 1

#: What ``run --tuned`` does for a condition without a record: ``error`` (default) or use the
#: method's configuration as given (``default``).
FALLBACKS: tuple[str, ...] = ("error", "default")


class StaleRecordError(UdbenchError):
    """A tuning record that may not be used: made for another search space, base
    configuration or prior numerics (:func:`shipped_staleness`).

    Parameters
    ----------
    message : str
        The one-line error, as the command names it.
    record : str
        ``"<method>/<condition key>"``.
    why : str
        What changed since the record was made.
    """

    def __init__(self, message: str, record: str, why: str) -> None:
        super().__init__(message)
        self.record = record
        self.why = why

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:
        # rebuilt from all three arguments when pickled (e.g. raised in a worker process)
        return (type(self), (str(self), self.record, self.why))


@dataclass(frozen=True, order=True)
class Condition:
    """A benchmark condition: dataset × prior family × noise mode × coverage (SPEC §9).

    ``family`` is the task's family coordinate (:attr:`udbench.tasks.TaskSpec.
    family_coordinate`): the family name for a regression task, ``"gpc-k3-medium"`` for a
    classification task (K and the difficulty are part of its condition).
    """

    dataset: str
    family: str
    noise: str
    coverage: str

    @property
    def key(self) -> str:
        """``"<dataset>__<family>__<noise>__<coverage>"`` (a task id without its seed)."""
        return f"{self.dataset}__{self.family}__{self.noise}__{self.coverage}"

    @classmethod
    def of(cls, spec: TaskSpec) -> Condition:
        """The condition of a task (its family coordinate as ``family``)."""
        return cls(spec.dataset, spec.family_coordinate, spec.noise, spec.coverage)


def _slug(name: str) -> str:
    """A method name as a folder name (an import path's ``:`` and ``/`` replaced)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def record_path(out: str | os.PathLike[str], method: str, condition: Condition) -> Path:
    """``OUT/<method>/<condition>.json``."""
    return Path(out) / _slug(method) / f"{condition.key}.json"


def write_record(out: str | os.PathLike[str], record: dict[str, Any]) -> Path:
    """Write ``record`` atomically (temporary file, rename) at its :func:`record_path`."""
    cond = Condition(record["dataset"], record["family"], record["noise"], record["coverage"])
    path = record_path(out, record["method"], cond)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(record, fh, indent=1, sort_keys=True, allow_nan=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_records(folder: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every record under a tuning folder, sorted by (method, condition).

    Campaign records (the shipped ones, :mod:`udbench.tuning.shipped`) are read as their
    tuned record; a failed campaign unit is left out. Each record gets ``_path`` (its file).
    Raises :class:`UdbenchError` if ``folder`` is not a folder or a ``*.json`` under it is
    not a readable record.
    """
    root = Path(folder)
    if not root.is_dir():
        raise param_error("udbench tune-summary", "DIR", "be a tuning folder", str(folder))
    out = []
    for path in sorted(root.glob("*/*.json")):
        rec = read_tuned_record(path)
        if rec.get("format") != RECORD_FORMAT:
            continue  # a failed campaign unit: no record yet
        rec["_path"] = str(path)
        out.append(rec)
    return sorted(out, key=lambda r: (r["method"], r["condition"]))


def summary_rows(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One plain row per record for ``udbench tune-summary`` (JSON-ready)."""
    keys = (
        "method",
        "condition",
        "status",
        "score",
        "best_trial",
        "n_trials",
        "n_complete",
        "n_failed",
        "n_pruned",
        "n_interrupted",
        "tuned_params",
        "search_space_hash",
        "udbench_version",
        "task_id",
    )
    # records from before pruning existed have no n_pruned: none of their trials was pruned
    return [{k: r.get(k, 0 if k == "n_pruned" else None) for k in keys} for r in records]


#: ``configure(spec, method)`` -> (configuration for this task, extra row fields); the hook of
#: :func:`udbench.evaluation.runner.run_benchmark` (``configure=``).
Configurer = Callable[[TaskSpec, MethodConfig], tuple[MethodConfig, dict[str, Any]]]


def tuned_configurer(
    folder: str | os.PathLike[str],
    methods: Sequence[MethodConfig],
    specs: Iterable[TaskSpec],
    *,
    fallback: str = "error",
    command: str = "udbench run --tuned",
    remedy: str = "run udbench tune on those conditions, or pass --fallback default to use the "
    "configuration as given there",
    shipped: str | None = None,
    suite_conditions: Collection[str] | None = None,
) -> TunedConfigs:
    """Per-task configurations from a tuning folder, checked for every task before a run.

    For a task of condition c and a method m, the record ``m/c`` gives the configuration:
    the method's configuration as given on the command line, with the record's tuned values
    (``tuned_params``) set on top. The cell is labelled ``<label>[tuned]`` (one leaderboard
    entry per method across conditions) and its row gets ``tuned_record`` (``"<method>/
    <condition>"``) and ``tuned_score``. A cell run with the fallback keeps the configuration
    and label as given (no ``[tuned]``; ``tuned_record`` None), so a method tuned on only some
    conditions shows as two partial leaderboard entries rather than one that mixes tuned and
    default cells.

    Parameters
    ----------
    folder : str or Path
        A ``udbench tune --out`` folder.
    methods : sequence of MethodConfig
        The run's method configurations.
    specs : iterable of TaskSpec
        The run's tasks (every condition is checked up front).
    fallback : {"error", "default"}
        For a condition without a usable record: a one-line error naming every missing
        (method, condition), or the method's configuration as given (named in the result's
        ``fallback_note``).
    command, remedy : str
        Who asks (the error's first words) and what the user can do about missing records
        (its last): a caller without ``--fallback`` (``udbench study spectral-norm``) names
        its own remedy.
    shipped : str, optional
        ``folder`` is the shipped record set of this suite (:mod:`udbench.tuning.shipped`):
        the messages say so and name the campaign that makes the records.
    suite_conditions : collection of str, optional
        The condition keys of the ``shipped`` suite: a missing record of a condition outside
        them is one its campaign never makes, and the message says to tune it instead.

    Raises
    ------
    UdbenchError
        Missing records (with ``fallback="error"``), a stale record (whatever the fallback):
        one whose search-space hash differs from the method's current search space, and for
        a campaign record (shipped) also one whose base configuration or prior numerics
        changed (:func:`shipped_staleness`); or a folder that does not
        exist (a shipped set that does not exist yet has no records: they are missing).
    """
    if fallback not in FALLBACKS:
        raise param_error("udbench run", "fallback", f"be one of {list(FALLBACKS)}", fallback)

    root = Path(folder)
    if shipped is None and not root.is_dir():
        raise param_error("udbench run", "tuned", "be a tuning folder (udbench tune --out)", folder)
    where = f"the shipped records of {shipped}" if shipped is not None else repr(str(root))
    if shipped is not None:
        remedy = (
            f"the tuning campaign makes them (udbench campaign run tuning --suite {shipped}), "
            "or pass --fallback default to use the configuration as given there"
        )
    conditions = sorted({Condition.of(s) for s in specs})
    chosen: dict[tuple[str, str, str], tuple[MethodConfig, dict[str, Any]]] = {}
    used: list[Path] = []
    missing: list[str] = []  # "<method>/<condition>[ (why)]", for the message
    missing_conds: set[str] = set()  # their condition keys
    for mc in methods:
        space = type(mc.estimator).search_space
        want_hash = search_space_hash(mc.name, space)
        for cond in conditions:
            path = record_path(root, mc.name, cond)
            if not path.is_file():
                missing.append(f"{mc.name}/{cond.key}")
                missing_conds.add(cond.key)
                continue
            rec = read_tuned_record(path)
            if rec.get("status") == "sweep-failed":
                missing.append(f"{mc.name}/{cond.key} (its campaign sweep failed)")
                missing_conds.add(cond.key)
                continue
            if "_campaign" in rec:  # a campaign (shipped) record: every way it can be stale
                why = shipped_staleness(rec, mc.name)
                if why is not None:
                    suite = shipped or (rec["_campaign"].get("settings") or {}).get("suite")
                    raise StaleRecordError(
                        f"{command}: {where}: record {mc.name}/{cond.key} is stale ({why}); "
                        f"re-tune it (udbench campaign run tuning --suite {suite} --methods "
                        f"{mc.name}) or run {mc.name} without --tuned",
                        f"{mc.name}/{cond.key}",
                        why,
                    )
            elif rec.get("search_space_hash") != want_hash:
                why = (
                    f"tuned over another search space (hash {rec.get('search_space_hash')}, "
                    f"the method's is now {want_hash})"
                )
                raise StaleRecordError(
                    f"{command}: record {mc.name}/{cond.key} was {why}; tune it again",
                    f"{mc.name}/{cond.key}",
                    why,
                )
            if rec.get("status") != "ok" or rec.get("tuned_params") is None:
                missing.append(f"{mc.name}/{cond.key} (no complete trial)")
                missing_conds.add(cond.key)
                continue
            from sklearn.base import clone

            params = {**mc.params, **rec["tuned_params"]}
            est = clone(mc.estimator).set_params(**rec["tuned_params"])
            est.validate_hyperparameters()
            tuned = MethodConfig(
                label=f"{mc.label}[tuned]",
                name=mc.name,
                estimator=est,
                params=params,
                config_hash=config_hash(mc.name, params),
            )
            extra = {"tuned_record": f"{mc.name}/{cond.key}", "tuned_score": rec.get("score")}
            chosen[(mc.name, mc.config_hash, cond.key)] = (tuned, extra)
            used.append(path)
    if missing:
        shown = ", ".join(missing[:8]) + (f" … ({len(missing)} in all)" if len(missing) > 8 else "")
        outside = sorted(missing_conds - set(suite_conditions or ()))
        if shipped is not None and suite_conditions is not None and outside:
            inside = len(missing_conds) > len(outside)
            remedy = (
                (
                    f"the tuning campaign makes those of {shipped}'s grid (udbench campaign "
                    f"run tuning --suite {shipped}); "
                    if inside
                    else ""
                )
                + f"{shipped}'s tuning campaign tunes its own {len(set(suite_conditions))} "
                f"conditions only, not {outside[0]}"
                + (f" and {len(outside) - 1} more" if len(outside) > 1 else "")
                + ": tune those with udbench tune and pass its folder to --tuned, or pass "
                "--fallback default to use the configuration as given there"
            )
        if fallback == "error":
            raise UdbenchError(f"{command}: no tuned record in {where} for {shown}; {remedy}")
        # labelled apart, and said by the caller (TunedConfigs.fallback_note): a [tuned] entry
        # made of default cells looks right and is not
        note = (
            f"{command}: no tuned record in {where} for {shown}: those cells run with the "
            "configuration as given and keep its label (without [tuned])"
        )
        return TunedConfigs(chosen, used, note)

    return TunedConfigs(chosen, used)


class TunedConfigs:
    """The ``configure`` hook of ``run --tuned`` (:data:`Configurer`), made by
    :func:`tuned_configurer`.

    Attributes
    ----------
    paths : list of Path
        The record files used (``udbench run --tuned`` copies them into ``OUT/tuned/`` so the
        results folder carries its configurations, for the report).
    fallback_note : str or None
        With ``fallback="default"`` and conditions without a usable record: one line naming
        them (``udbench run`` prints it as a warning); None otherwise.
    """

    def __init__(
        self,
        chosen: dict[tuple[str, str, str], tuple[MethodConfig, dict[str, Any]]],
        paths: list[Path],
        fallback_note: str | None = None,
    ) -> None:
        self._chosen = chosen
        self.paths = paths
        self.fallback_note = fallback_note

    def __call__(self, spec: TaskSpec, mc: MethodConfig) -> tuple[MethodConfig, dict[str, Any]]:
        hit = self._chosen.get((mc.name, mc.config_hash, Condition.of(spec).key))
        if hit is not None:
            return hit
        # the fallback (--fallback default): the configuration as given, under its own label,
        # so that a [tuned] leaderboard entry holds tuned cells only
        return mc, {"tuned_record": None, "tuned_score": None}

    def warn_fallback(self) -> None:
        """Warn (:class:`~udbench._validation.UdbenchWarning`, one line) with
        :attr:`fallback_note` when cells run with the configuration as given."""
        if self.fallback_note:
            import warnings

            from udbench._validation import UdbenchWarning

            warnings.warn(self.fallback_note, UdbenchWarning, stacklevel=3)

    def copy_to(self, folder: str | os.PathLike[str]) -> None:
        """Copy the records used to ``folder/<method>/<condition>.json`` (atomically)."""

        for path in self.paths:
            rec = read_tuned_record(path)
            rec.pop("_campaign", None)
            write_record(folder, rec)


#: ``kind`` of the tuning campaign's records.
CAMPAIGN_KIND = "tuning-sweep"


def read_tuned_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The tuned record in ``path``: a ``udbench tune`` record, or a campaign record's result.

    A campaign record (:mod:`udbench.campaigns.engine`) of kind ``tuning-sweep`` gives its
    ``result`` with ``_campaign`` added (its ``status``, ``settings``, ``numerics``,
    ``cpu_seconds``, ``wall_seconds``, ``code``). A failed campaign unit gives
    ``{"status": "sweep-failed", "error": ..., "_campaign": ...}`` (no configuration).

    Raises
    ------
    UdbenchError
        The file cannot be read, or is neither kind of record.
    """
    path = Path(path)
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UdbenchError(f"tuned record {str(path)!r} cannot be read: {err}") from None
    if isinstance(rec, dict) and rec.get("format") == RECORD_FORMAT:
        return rec
    if not isinstance(rec, dict) or rec.get("kind") != CAMPAIGN_KIND:
        raise UdbenchError(f"{str(path)!r} is not a udbench tuned record")
    meta = {
        k: rec.get(k)
        for k in ("status", "settings", "numerics", "cpu_seconds", "wall_seconds", "code")
    }
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
    from udbench.methods.classifiers import classifier_spec_name, resolve_classifier
    from udbench.methods.configs import resolve_method
    from udbench.priors import family_numerics_version
    from udbench.tasks.spec import family_of_coordinate
    from udbench.tuning.space import search_space_hash

    settings = (rec.get("_campaign") or {}).get("settings") or {}
    spec = str(settings.get("method_spec") or method)
    # a classifier resolves through its own registry (clf-small's records)
    current = resolve_classifier(spec) if classifier_spec_name(spec) else resolve_method(spec)
    want = search_space_hash(method, type(current.estimator).search_space)
    if rec.get("search_space_hash") != want:
        return (
            f"the method's search space changed since it was tuned (hash "
            f"{rec.get('search_space_hash')}, now {want})"
        )
    if rec.get("base_config") is not None and rec["base_config"] != current.config:
        return "the method's default configuration changed since it was tuned"
    numerics = (rec.get("_campaign") or {}).get("numerics") or {}
    family = family_of_coordinate(str(rec.get("family")))  # "gpc-k3-medium" -> "gpc"
    if family in numerics and numerics[family] != family_numerics_version(family):
        return (
            f"the {family} prior's numerics changed since it was tuned (version "
            f"{numerics[family]}, now {family_numerics_version(family)}): the condition's "
            "training sample is not the one it was tuned on"
        )
    return None
