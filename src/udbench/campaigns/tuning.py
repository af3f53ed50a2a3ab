"""The tuning campaign (issue 36): SPEC §9's sweeps of a suite as resumable units.

``udbench campaign run tuning --suite gp-small`` tunes every method of a preset suite on every
condition of the suite's grid (gp-small: 3 datasets × GP × 4 noise modes × 2 coverages = 24
conditions), one :class:`~udbench.campaigns.engine.Unit` per (method, condition):

1. the condition's task is that of the suite's lowest seed (seed 0), at the suite's fidelity
   and D; it is generated into the work folder (``WORK/<family>-v<N>/tasks/<task id>.npz``,
   N the family's numerics version: :func:`condition_task_folder`), or reused from
   there when a file of that task id exists (the training sample does not depend on the
   fidelity or D, and the sweep reads nothing else);
2. the sweep runs through :func:`udbench.tuning.sweep.tune`, inline in the campaign's process
   (``workers=0``, ``in_flight=1``: trials one after the other, so a seeded sweep gives the
   same record on any machine up to floating point): its training sample split 80/20 by the
   condition's seed, ``trials`` trials (SPEC §9: 30) of Optuna's TPE sampler, the held-out
   Gaussian NLL, with the pruner asked for (``udbench campaign``'s default ``auto``: each
   method's default pruner of :mod:`udbench.tuning.pruning`, or the pruner of the method's
   existing records, :func:`pruner_of_records`; or ``none``/``sha``/``hyperband``/
   ``median``), stored resolved in the unit's settings. Its Optuna journal lives in the work folder
   (``WORK/sweeps/<settings hash>/``), so a unit killed mid-sweep resumes its finished trials;
3. the unit's record (:mod:`udbench.campaigns.engine`) holds, as ``result``, the sweep's tuned
   record (:mod:`udbench.tuning.records`: best configuration, its validation NLL, trial
   counts complete/pruned/failed, search space and its hash, base configuration, sampler
   seed, Optuna and udbench versions) with its trial history compacted (number, state, value,
   best so far, fit and predict wall seconds, the trial's CPU seconds, error, pruning step)
   and, for a sweep resumed from its journal, ``resumed_trials`` and those trials' CPU
   seconds (``resumed_trials_cpu_seconds``: the engine's clock times the last process only);
   the engine adds CPU and wall seconds, the machine and the code version.

**A classification suite** (``--suite clf-small``: 3 datasets × ``gpc`` K = 3 ``medium`` ×
4 temperature modes × 2 coverages = 24 conditions × the 11 classifiers) works the same way:
the unit's method resolves through the classifiers' registry
(:func:`udbench.methods.classifiers.resolve_classifier`), its task file lives in the
classification campaign's layout (:func:`condition_task`), the sweep scores the held-out
categorical NLL (settings ``objective = "heldout_categorical_nll"``) and is never pruned
(a classifier reports no intermediate values; :func:`udbench.tuning.pruning.resolve_pruner`
resolves ``auto`` to ``none`` for it, and its units hold ``none`` whatever ``pruner``
says). The calibration table has no classifier entries: a classifier unit's projection is
then a stated guess, ``trials`` × the classification campaign's per-cell CPU seconds
(measured at kin8nm size, n = 3136: an upper bound at these conditions' n), with
:attr:`~udbench.campaigns.engine.Unit.estimate_note` saying so in the status table.

The records folder defaults to the package's shipped records of the suite
(:func:`udbench.tuning.shipped.shipped_folder`, ``src/udbench/tuning/shipped/<suite>/`` in a
checkout), laid out as a tuning folder (``<method>/<condition>.json``), so that committing the
records ships them and ``udbench run --tuned <suite>`` uses them.

**When a record counts**: its settings (suite, method and its spec, base configuration, search
space hash, condition, task id, trials, sampler, seeds, pruner, holdout fraction) and the
numerics version of the condition's prior family equal the unit's. A method whose search
space or defaults change, or a prior whose numerics change, makes its records stale: ``status``
reports them, ``run`` redoes them, ``run --tuned`` refuses them.

**Order**: methods cheapest first, all conditions of a method before the next, so that the
cheap methods' records are complete early: by the projected CPU seconds of their sweeps
(calibration table, :mod:`udbench.tuning.calibration`: the user's from ``udbench plan
--calibrate``, else the shipped one) when the table knows every method; otherwise by family
(:data:`_FAMILY_TIER`: linear, GP, trees, networks), then by projection, then the suite's
order.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from udbench._validation import UdbenchError, check_choice, param_error
from udbench.campaigns.engine import Unit, current_records
from udbench.tuning.shipped import CAMPAIGN_KIND

__all__ = [
    "DEFAULT_TRIALS",
    "compact_record",
    "condition_task",
    "condition_task_folder",
    "pruner_of_records",
    "suite_conditions",
    "tuning_summary",
    "tuning_units",
]

#: Trials per sweep (SPEC §9).
DEFAULT_TRIALS = 30

#: Sweep cost of a method family, cheap to dear, where the calibration table lacks a method
#: (closed forms, then exact GPs at n <= 1000 and trees, then networks).
_FAMILY_TIER = {"linear": 0, "gp": 1, "trees": 2, "nn": 3}

#: History fields kept in a campaign record (the rest of a trial is in the journal).
_HISTORY_KEYS = (
    "number", "state", "value", "best_so_far", "fit_time_s", "predict_time_s", "cpu_time_s"
)  # fmt: skip


def suite_conditions(suite: dict[str, Any], data_dir: str | None = None) -> list[Any]:
    """The task of each condition's lowest seed in a suite's grid, in the suite's order.

    Parameters
    ----------
    suite : dict
        From :func:`udbench.recipes.suites.load_suite`.
    data_dir : str, optional
        Raw-data folder (user datasets).

    Returns
    -------
    list of TaskSpec
        One per (dataset, family, noise mode, coverage), at the lowest seed of the suite.
    """
    from udbench.recipes.suites import suite_grid
    from udbench.tuning.records import Condition

    specs = suite_grid({**suite, "draws": int(suite["draws"])}, data_dir)
    lowest: dict[Condition, Any] = {}
    for spec in specs:
        cond = Condition.of(spec)
        if cond not in lowest or spec.seed < lowest[cond].seed:
            lowest[cond] = spec
    return list(lowest.values())


def condition_task_folder(work_dir: str | Path, family: str) -> Path:
    """``WORK/<family>-v<N>/tasks``: the condition task files of ``family`` made under its
    current numerics version N (:func:`udbench.priors.family_numerics_version`).

    The version is in the path because a task file does not record it: a numerics bump
    (which changes the draws, hence the training targets a sweep reads) must never reuse a
    file made before it. (Until 2026-12-03 regression files were in ``WORK/tasks/``; such a
    folder is no longer read, and its files are made again in the new place.)
    """
    from udbench.priors import family_numerics_version

    return Path(work_dir) / f"{family}-v{family_numerics_version(family)}" / "tasks"


def condition_task(spec: Any, work_dir: str | Path, data_dir: str | None = None) -> Path:
    """The condition's task file, generated unless a file of that task id is there.

    A regression task's file is ``<condition_task_folder(work, family)>/<task id>.npz``.
    A classification task's file is in ``WORK/gpc-v<N>/tasks/``
    (:func:`udbench.campaigns.classification.task_folder`, the same rule): the
    classification campaign's layout, so a ``--work`` shared with it reuses its seed-0
    files. In both, a numerics bump never reuses an older file.

    Raises
    ------
    UdbenchError
        A file of that name that is not the task ``spec`` names.
    """
    from udbench.campaigns._taskfiles import ensure_task_file

    folder = condition_task_folder(work_dir, spec.family)
    if spec.task_type == "classification":
        from udbench.campaigns.classification import task_folder

        folder = task_folder(work_dir)
    path = folder / f"{spec.task_id}.npz"
    ensure_task_file(path, spec, data_dir, component="udbench campaign tuning")
    return path


def compact_record(record: dict[str, Any]) -> dict[str, Any]:
    """A tuned record with its trial history cut to the fields the report and ``plan`` read.

    Keeps, per trial, ``number, state, value, best_so_far, fit_time_s, predict_time_s,
    cpu_time_s``,
    plus ``error`` (failed trials) and ``pruned_at`` (pruned ones); every other key of the
    record is kept as it is.
    """
    out = {k: v for k, v in record.items() if k != "history"}
    history = []
    for h in record.get("history", []):
        row = {k: h.get(k) for k in _HISTORY_KEYS}
        if h.get("error") is not None:
            row["error"] = h["error"]
        if h.get("pruned_at") is not None:
            row["pruned_at"] = h["pruned_at"]
        history.append(row)
    out["history"] = history
    return out


def _settings_hash(settings: dict[str, Any]) -> str:
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def _sweep_work(
    spec: Any,
    method_spec: str,
    settings: dict[str, Any],
    work_dir: str,
    data_dir: str | None,
) -> dict[str, Any]:
    from udbench._lock import folder_lock
    from udbench._threads import cell_threads
    from udbench.tuning.sweep import tune

    with cell_threads():  # one compute thread, as every cell and trial
        task_path = condition_task(spec, work_dir, data_dir)
        sweeps = Path(work_dir) / "sweeps" / _settings_hash(settings)
        with folder_lock(sweeps, "udbench campaign run tuning"):  # one driver per journal
            summary = tune(
                [str(task_path)],
                [method_spec],
                sweeps,
                trials=int(settings["trials"]),
                sampler=str(settings["sampler"]),
                seed=int(settings["seed"]),
                in_flight=1,
                pruner=str(settings["pruner"]),
                workers=0,
            )
    if len(summary.records) != 1:
        raise UdbenchError(
            f"udbench campaign tuning: the sweep of {settings['method']}/{settings['condition']} "
            f"wrote {len(summary.records)} records, expected 1"
        )
    record = json.loads(summary.records[0].read_text(encoding="utf-8"))
    if record.get("status") != "ok":
        raise UdbenchError(
            f"udbench campaign tuning: no trial of {settings['method']}/{settings['condition']} "
            f"completed ({record.get('n_failed')} failed); see the journal in {sweeps}"
        )
    # trials finished by an earlier, killed process: this record's CPU seconds miss them, and
    # their own CPU clocks say what they cost (tuning._measured.sweep_cpu_seconds)
    return {
        **compact_record(record),
        "resumed_trials": int(summary.n_resumed_trials),
        "resumed_trials_cpu_seconds": summary.resumed_cpu_s,
    }


def _sweep_seconds(method: str, dataset: str, trials: int, pruner: str, table: Any) -> float | None:
    """Projected CPU seconds of one sweep from the calibration table (None: not in it)."""
    from udbench.data import get_dataset_spec
    from udbench.tuning.objective import HOLDOUT_FRACTION

    try:
        n = int(get_dataset_spec(dataset).n_train or 0)
    except Exception:
        return None
    if n <= 0:
        return None
    held = max(1, round(HOLDOUT_FRACTION * n))
    per = table.method_seconds(method, n - held, held)
    over = table.method_overheads(method)
    if per is None:
        return None
    total = trials * (per + (over[1] if over else 0.0)) + (over[0] if over else 0.0)
    if pruner != "none":
        ratio = table.pruning_ratio(method, pruner)
        total *= 1.0 if ratio is None else ratio
    return float(total)


def pruner_of_records(records: str | Path, method: str) -> str | None:
    """The pruner that ``method``'s existing records in ``records`` were made with.

    Reads the ``settings["pruner"]`` of every readable record in ``records/<method>/``
    (done and failed ones). Returns None when there is none; with records of more than one
    pruner (a campaign switched pruners half-way), the one most records hold, ties to the
    name first in alphabetical order.

    Parameters
    ----------
    records : str or Path
        A tuning campaign's records folder (``<method>/<condition>.json``).
    method : str
        The method's name.
    """
    from collections import Counter

    from udbench.campaigns.engine import read_record
    from udbench.tuning.records import _slug

    folder = Path(records) / _slug(method)
    counts: Counter[str] = Counter()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        rec = read_record(path)
        settings = rec.get("settings") if isinstance(rec, dict) else None
        if isinstance(settings, dict) and isinstance(settings.get("pruner"), str):
            counts[settings["pruner"]] += 1
    if not counts:
        return None
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def tuning_units(
    suite: str | dict[str, Any] = "gp-small",
    *,
    work_dir: str | Path,
    methods: Sequence[str] | None = None,
    # "none" here (the function's callers pass records= with "auto"): without the records, an
    # "auto" pruner would make the unpruned records of a method it prunes stale.
    pruner: str = "none",
    trials: int = DEFAULT_TRIALS,
    sampler: str = "tpe",
    seed: int = 0,
    data_dir: str | None = None,
    records: str | Path | None = None,
) -> list[Unit]:
    """The units of the tuning campaign of ``suite``: one per (method, condition).

    Parameters
    ----------
    suite : str or dict
        A preset suite's name, a suite ``.toml`` file, or the dict of
        :func:`udbench.recipes.suites.load_suite`; a regression or a classification suite
        (its methods then classifiers, module docstring).
    work_dir : str or Path
        Folder for the task files and the sweeps' journals (not committed).
    methods : sequence of str, optional
        Method names (a subset of the suite's methods; default all of them).
    pruner : {"none", "auto", "sha", "hyperband", "median"}, default "none"
        The sweeps' pruner; ``"auto"`` is resolved per method
        (:func:`udbench.tuning.pruning.resolve_pruner`) and the unit's settings hold the
        resolved one — except for a method that already has records in ``records``, which
        keeps the pruner they were made with (:func:`pruner_of_records`), so one method's
        sweeps are never half pruned and half not, and finished records never turn stale
        (as ``udbench tune --pruner auto`` resumes a journal with its own pruner).
    trials : int, default 30
        Trials per sweep (SPEC §9).
    sampler : {"tpe", "random"}, default "tpe"
    seed : int, default 0
        Seeds every sweep's sampler (with the method and condition).
    data_dir : str, optional
        Raw-data folder.
    records : str or Path, optional
        The campaign's records folder, read only by ``pruner="auto"`` (above).

    Returns
    -------
    list of Unit
        Cheapest method first (module docstring), each method's conditions in the suite's
        order. Unit ids are ``<method>/<condition>`` (the tuning-folder layout).

    Raises
    ------
    UdbenchError
        An unknown suite, pruner or sampler, a method not in the suite, ``trials < 1``, a
        method whose search space cannot be sampled.
    """
    from udbench.campaigns.classification import CELL_SECONDS
    from udbench.methods.classifiers import classifier_spec_name, resolve_classifier
    from udbench.methods.configs import resolve_method
    from udbench.methods.registry import parse_method_spec
    from udbench.priors import family_numerics_version
    from udbench.recipes.suites import load_suite, method_specs
    from udbench.tuning.calibration import load_calibration
    from udbench.tuning.objective import HOLDOUT_FRACTION
    from udbench.tuning.pruning import PRUNERS, resolve_pruner
    from udbench.tuning.records import Condition, _slug
    from udbench.tuning.space import check_search_space, search_space_hash
    from udbench.tuning.sweep import SAMPLERS

    comp = "udbench campaign tuning"
    check_choice(comp, "pruner", pruner, list(PRUNERS))
    check_choice(comp, "sampler", sampler, list(SAMPLERS))
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise param_error(comp, "trials", "be an integer >= 1", trials)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise param_error(comp, "seed", "be an integer >= 0", seed)
    cfg = load_suite(suite) if isinstance(suite, str) else dict(suite)
    specs = {parse_method_spec(s)[0]: s for s in method_specs(cfg)}
    if methods is not None:
        unknown = [m for m in methods if m not in specs]
        if unknown:
            raise param_error(
                comp, "methods", f"be methods of suite {cfg['name']!r} ({list(specs)})", unknown
            )
        specs = {m: specs[m] for m in methods}
    conditions = suite_conditions(cfg, data_dir)
    table = load_calibration()
    by_method: list[tuple[int, float, int, list[Unit]]] = []
    for order, (name, mspec) in enumerate(specs.items()):
        clf = classifier_spec_name(mspec) is not None
        mc = resolve_classifier(mspec) if clf else resolve_method(mspec)
        space = type(mc.estimator).search_space
        check_search_space(name, space)
        units: list[Unit] = []
        cost = 0.0
        # a classifier reports no intermediate values: its sweep is never pruned, and its
        # settings say so whatever ``pruner`` asks (one record per sweep as made)
        kind = "none" if clf else resolve_pruner(pruner, name)
        if pruner == "auto" and not clf and records is not None:
            kind = pruner_of_records(records, name) or kind
        for spec in conditions:
            cond = Condition.of(spec)
            settings = {
                "suite": cfg["name"],
                "method": name,
                "method_spec": mspec,
                "base_config": mc.config,
                "search_space_hash": search_space_hash(name, space),
                "condition": cond.key,
                "task_id": spec.task_id,
                "fidelity": str(spec.fidelity),
                "draws": int(spec.n_draws),
                "trials": trials,
                "sampler": sampler,
                "seed": seed,
                "pruner": kind,
                "holdout_fraction": HOLDOUT_FRACTION,
                "objective": "heldout_categorical_nll" if clf else "heldout_gaussian_nll",
            }
            est = _sweep_seconds(name, spec.dataset, trials, kind, table)
            note = None
            if est is None and clf and name in CELL_SECONDS:  # no calibration entry
                est, note = trials * CELL_SECONDS[name], "guessed: no calibration entry"
            cost = float("inf") if est is None or note else cost + est
            units.append(
                Unit(
                    unit_id=f"{_slug(name)}/{cond.key}",
                    kind=CAMPAIGN_KIND,
                    settings=settings,
                    numerics={spec.family: family_numerics_version(spec.family)},
                    work=functools.partial(
                        _sweep_work, spec, mspec, settings, str(work_dir), data_dir
                    ),
                    estimate_seconds=est,
                    estimate_note=note,
                )
            )
        tier = _FAMILY_TIER.get(str(type(mc.estimator).family), len(_FAMILY_TIER))
        by_method.append((tier, cost, order, units))
    if all(cost < float("inf") for _, cost, _, _ in by_method):
        by_method.sort(key=lambda t: (t[1], t[2]))  # projected CPU of the method's sweeps
    else:  # the table lacks a method: families from cheap to dear, then the projections
        by_method.sort(key=lambda t: (t[0], t[1], t[2]))
    return [u for *_, units in by_method for u in units]


def _resumed_sweeps(done: list[dict[str, Any]]) -> list[tuple[str, float, float]]:
    """(unit id, finished trials' fit + predict seconds, record CPU seconds) of the sweeps
    resumed from their journal whose CPU seconds are undercounted: the record times the last
    process only, and the earlier trials' own CPU clocks are not known (a journal made before
    they were kept). Resumed: ``resumed_trials`` > 0 in the result, or, in a record made
    before that was kept, trials that took over 1.5x its wall seconds
    (:func:`udbench.tuning._measured.sweep_resumed`, :func:`~udbench.tuning._measured.
    sweep_cpu_seconds`)."""
    from udbench.tuning._measured import sweep_cpu_seconds, sweep_resumed

    out = []
    for rec in done:
        res, cpu, wall = rec["result"], rec.get("cpu_seconds"), rec.get("wall_seconds")
        resumed, took = sweep_resumed(res, wall)
        if resumed and sweep_cpu_seconds(res, cpu, wall) is None:
            out.append((str(rec["unit_id"]), took, float(cpu or 0.0)))
    return out


def tuning_summary(records: str | Path, units: Sequence[Unit] | None = None) -> dict[str, Any]:
    """Per-method and per-sweep figures of a tuning campaign, from its records alone.

    Parameters
    ----------
    records : str or Path
        The campaign's records folder.
    units : sequence of Unit, optional
        The campaign's units: records whose settings differ from their unit's (stale), and
        records of units not among them, are then left out with a note
        (:func:`udbench.campaigns.engine.current_records`), and each method's number of
        sweeps is known.

    Returns
    -------
    dict
        ``methods``: method -> ``{"sweeps_done", "sweeps" (None without units), "trials",
        "complete", "pruned", "failed", "cpu_hours"}``; ``sweeps``: one row per done record
        (method, condition, validation NLL, best trial, counts, tuned parameters, CPU
        seconds over every process that ran the sweep where known,
        :func:`udbench.tuning._measured.sweep_cpu_seconds`); ``choices``:
        :func:`udbench.tuning.choices.tuned_choices` of those records; ``notes``: records
        left out; ``markdown``: the tables.
    """
    from udbench.priors import family_numerics_version, list_prior_families
    from udbench.tuning._measured import sweep_cpu_seconds

    numerics = {f: family_numerics_version(f) for f in list_prior_families()}
    done, notes = current_records(records, CAMPAIGN_KIND, units, numerics)
    rows: list[dict[str, Any]] = []
    for rec in done:
        res = rec["result"]
        # every process's CPU where known; else the last process's (named below: too little)
        cpu = sweep_cpu_seconds(res, rec["cpu_seconds"], rec.get("wall_seconds"))
        rows.append(
            {
                "method": res["method"],
                "condition": res["condition"],
                "score": res.get("score"),
                "best_trial": res.get("best_trial"),
                "n_trials": res.get("n_trials"),
                "n_complete": res.get("n_complete"),
                "n_pruned": res.get("n_pruned", 0),
                "n_failed": res.get("n_failed"),
                "tuned_params": res.get("tuned_params"),
                "cpu_seconds": float(rec["cpu_seconds"]) if cpu is None else cpu,
            }
        )
    total: dict[str, int] = {}
    order: list[str] = []
    for u in units or []:
        m = str(u.settings["method"])
        if m not in total:
            order.append(m)
        total[m] = total.get(m, 0) + 1
    for r in rows:
        if r["method"] not in order:
            order.append(r["method"])
    methods: dict[str, dict[str, Any]] = {}
    for m in order:
        mine = [r for r in rows if r["method"] == m]
        methods[m] = {
            "sweeps_done": len(mine),
            "sweeps": total.get(m) if units is not None else None,
            "trials": sum(int(r["n_trials"] or 0) for r in mine),
            "complete": sum(int(r["n_complete"] or 0) for r in mine),
            "pruned": sum(int(r["n_pruned"] or 0) for r in mine),
            "failed": sum(int(r["n_failed"] or 0) for r in mine),
            "cpu_hours": sum(r["cpu_seconds"] for r in mine) / 3600,
        }
    lines = [
        "| method | sweeps done | trials | complete | pruned | failed | CPU-h |",
        "|---|---|---|---|---|---|---|",
    ]
    for m, s in methods.items():
        of = "" if s["sweeps"] is None else f" / {s['sweeps']}"
        lines.append(
            f"| {m} | {s['sweeps_done']}{of} | {s['trials']} | {s['complete']} | "
            f"{s['pruned']} | {s['failed']} | {s['cpu_hours']:.2f} |"
        )
    from udbench.tuning.choices import tuned_choices, tuned_choices_markdown

    choices = tuned_choices(r["result"] for r in done)
    if len(choices):
        lines += ["", "What the tuner chose, over each method's done sweeps (the default is",
                  "the suite's configuration; 'at an edge': within 2 % of a search-space bound):",
                  "", tuned_choices_markdown(choices)]  # fmt: skip
    resumed = _resumed_sweeps(done)
    if resumed:
        trials_s = sum(t for _, t, _ in resumed)
        cpu_s = sum(c for _, _, c in resumed)
        lines += [
            "",
            f"CPU-h undercounts {len(resumed)} sweep(s) resumed from their journal after a "
            f"kill ({', '.join(u for u, _, _ in resumed)}): a record times its last process "
            f"only, and their journals predate the trials' own CPU clocks (a record with "
            f"resumed_trials_cpu_seconds adds those); their finished trials took "
            f"{trials_s / 3600:.2f} h of fit + predict against {cpu_s / 3600:.2f} CPU-h recorded.",
        ]
    if notes:
        lines += ["", "Left out:", *(f"- {n}" for n in notes)]
    return {
        "methods": methods,
        "sweeps": rows,
        "choices": choices,
        "notes": notes,
        "markdown": "\n".join(lines),
    }
