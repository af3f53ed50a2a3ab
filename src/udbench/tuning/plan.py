"""``udbench plan``: how much work a grid is, and its projected CPU-hours from measured times.

For a grid of task instances (the flags of ``udbench generate``), a list of methods and a
number of trials per sweep, the plan counts

- **instances** (stage ``generate``): one per (dataset, family, noise, coverage, seed);
- **trials** (stage ``tune``): conditions × methods × trials, one sweep per (method,
  condition) (SPEC §9);
- **fits** (stage ``run``): instances × methods,

and projects CPU-hours per stage and method as count × the median measured seconds per unit.
Measurements come from folders you name (``--measured``, any number of each kind):

- a results folder of ``udbench run``: per ok cell, ``fit_time_s + predict_time_s`` (the
  method's compute; the first cell on a worker also pays imports and JAX compilation, so the
  median is used). The plan counts each method at its default configuration; cells run with
  other settings (``nn-ens:n_members=5`` against the default 10 members, the quickstart's
  smoke settings) are counted all the same, and :meth:`PlanRow.config_note` says which
  settings and how many cells, since their time need not be the default's;
- a tuning folder of ``udbench tune``: per finished trial, its fit + predict seconds (fitted on
  80 % of the training sample);
- a folder of task files: per instance, the seconds ``udbench generate`` logged for it (the
  hidden ``.udbench-generate-times.jsonl`` beside the tasks: generation, replacements, checks
  and save, in the worker), else the MCMC sampler's ``wall_seconds`` stored in the task
  (HBART, BNN). GP task files store no timing, so GP tasks made before the log existed (or
  copied without it) are unknown.

A figure with no measurement behind it is shown as unknown, never guessed. No scaling by data
size is attempted: the median is over whatever instances were measured (the plan lists how
many, and on which datasets), so measure on the datasets you will run.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "PAPER_METHODS",
    "FinishedWork",
    "PlanRow",
    "collect_measurements",
    "finished_work",
    "plan_grid",
    "remaining_rows",
    "unmeasured",
]

#: The paper's 19 methods (SPEC §8), by registry name (some may not be registered yet).
PAPER_METHODS: tuple[str, ...] = (
    "blr",
    "gp",
    "vlgp",
    "dkl",
    "sngp-het",
    "ngboost-nig",
    "ngboost-bag",
    "catboost-ps",
    "catboost-kgb",
    "nn-bag",
    "nn-ens",
    "nn-drop",
    "nn-edl",
    "nn-deup",
    "nn-lap",
    "nn-lap-sn",
    "nn-fsp",
    "nn-fsp-sn",
    "nn-swag",
)


@dataclass
class Measurements:
    """Measured seconds per unit, by (stage, key): key is a method, or a family for generate."""

    seconds: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    datasets: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    #: (stage, key) -> settings that differ from the method's defaults -> cells measured so
    configs: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)

    def add(
        self, stage: str, key: str, value: float, dataset: str | None, config: str = ""
    ) -> None:
        if value is None or not math.isfinite(value) or value < 0:
            return
        self.seconds.setdefault((stage, key), []).append(float(value))
        if dataset:
            self.datasets.setdefault((stage, key), set()).add(dataset)
        if config:
            counts = self.configs.setdefault((stage, key), {})
            counts[config] = counts.get(config, 0) + 1


def collect_measurements(folders: Iterable[str | os.PathLike[str]]) -> Measurements:
    """Measured times from results folders, tuning folders and task folders (module docstring).

    Raises
    ------
    UdbenchError
        A folder that holds none of the three kinds, or does not exist.
    """
    from udbench._validation import param_error

    found = Measurements()
    for folder in folders:
        root = Path(folder)
        kinds = 0
        if root.is_dir() and ((root / "results.parquet").exists() or (root / "cells").is_dir()):
            kinds += 1
            _from_results(root, found)
        records = sorted(root.glob("*/*.json")) if root.is_dir() else []
        if records:
            kinds += 1
            _from_records(records, found)
        tasks = sorted(root.rglob("*.npz")) if root.is_dir() else []
        if tasks:
            kinds += 1
            _from_tasks(tasks, found)
        if not kinds:
            raise param_error(
                "udbench plan",
                "measured",
                "be a results, tuning or task folder made by udbench",
                str(folder),
            )
    return found


def _non_default(method: str, config: Any, defaults: dict[str, dict[str, Any] | None]) -> str:
    """``"k=v (default d), ..."`` for the settings of a stored ``config`` that are not the
    registered method's defaults; ``""`` when they all are, or the method is not registered."""
    if method not in defaults:
        try:
            from udbench.methods.registry import make_method

            params = make_method(method).get_params(deep=False)
            defaults[method] = {k: v for k, v in params.items() if k != "random_state"}
        except Exception:  # not a registered method (an import path gone): nothing to say
            defaults[method] = None
    base = defaults[method]
    if base is None or not isinstance(config, str):
        return ""
    try:
        given = json.loads(config).get("params") or {}
    except (json.JSONDecodeError, AttributeError):
        return ""
    diff = [
        f"{k}={given[k]!r} (default {base[k]!r})"
        for k in sorted(given)
        if k in base and json.dumps(given[k], default=repr) != json.dumps(base[k], default=repr)
    ]
    return ", ".join(diff)


def _from_results(root: Path, found: Measurements) -> None:
    from udbench.evaluation.store import read_results

    df = read_results(root)
    ok = df[df["status"] == "ok"]
    secs = (ok["fit_time_s"].astype(float) + ok["predict_time_s"].astype(float)).tolist()
    configs = ok["config"].tolist() if "config" in ok.columns else [None] * len(ok)
    defaults: dict[str, dict[str, Any] | None] = {}
    for method, dataset, value, config in zip(
        ok["method"], ok["dataset"], secs, configs, strict=True
    ):
        found.add(
            "run",
            str(method),
            float(value),
            None if dataset is None else str(dataset),
            _non_default(str(method), config, defaults),
        )


def _from_records(paths: Sequence[Path], found: Measurements) -> None:
    for path in paths:
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if not isinstance(rec, dict) or rec.get("format") != "udbench-tuned-config":
            continue
        for h in rec.get("history", []):
            if h.get("state") in ("complete", "failed") and h.get("fit_time_s") is not None:
                secs = float(h["fit_time_s"]) + float(h.get("predict_time_s") or 0.0)
                found.add("tune", str(rec["method"]), secs, rec.get("dataset"))


def _from_tasks(paths: Sequence[Path], found: Measurements) -> None:
    from udbench.tasks.spec import TaskSpec
    from udbench.tasks.taskfile import read_task_meta
    from udbench.tasks.timelog import read_generation_log

    logs: dict[Path, dict[str, float]] = {}
    for path in paths:
        try:
            meta = read_task_meta(path)
        except Exception:
            continue
        spec = meta["spec"]
        if path.parent not in logs:
            logs[path.parent] = read_generation_log(path.parent)
        # the generation log's whole-instance seconds (replacements, checks and save included)
        # where ``udbench generate`` recorded them, else the MCMC sampler's own wall time
        wall = logs[path.parent].get(TaskSpec(**spec).task_id)
        if wall is None:
            sampler = (meta.get("diagnostics") or {}).get("sampler") or {}
            wall = sampler.get("wall_seconds") if isinstance(sampler, dict) else None
        if wall is not None:
            found.add("generate", str(spec["family"]), float(wall), spec["dataset"])


@dataclass
class PlanRow:
    """One line of the plan: a stage and a method (or prior family for ``generate``)."""

    stage: str
    key: str
    count: int
    n_measured: int
    median_s: float | None
    cpu_hours: float | None
    datasets: list[str]
    #: Settings of measured cells that are not the method's defaults -> how many cells.
    measured_configs: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "key": self.key,
            "count": self.count,
            "n_measured": self.n_measured,
            "median_s": self.median_s,
            "cpu_hours": self.cpu_hours,
            "measured_on": self.datasets,
            "measured_non_default": self.measured_configs,
        }

    def config_note(self) -> str | None:
        """One line when the measured cells ran other settings than the defaults planned."""
        if not self.measured_configs:
            return None
        n = sum(self.measured_configs.values())
        shown = "; ".join(list(self.measured_configs)[:2]) + (
            "; …" if len(self.measured_configs) > 2 else ""
        )
        return (
            f"{self.stage} {self.key}: {n} of the {self.n_measured} measured cells ran other "
            f"settings than the method's defaults ({shown}); the projection applies their "
            "time to the default configuration the plan counts, so scale it by hand (e.g. by "
            "the ensemble size) or measure the defaults"
        )


def plan_grid(
    specs: Sequence[Any],
    methods: Sequence[str],
    trials: int,
    measured: Measurements,
) -> tuple[dict[str, int], list[PlanRow]]:
    """Counts of a grid and its projected CPU-hours per stage and method.

    Parameters
    ----------
    specs : sequence of TaskSpec
        The instances (``udbench generate``'s grid).
    methods : sequence of str
        Method names.
    trials : int
        Trials per sweep.
    measured : Measurements
        From :func:`collect_measurements`.

    Returns
    -------
    counts : dict
        ``instances, conditions, methods, sweeps, trials, fits``.
    rows : list of PlanRow
        Per prior family (``generate``), then per method for ``tune`` and ``run``;
        ``cpu_hours`` is None where nothing was measured.
    """
    import numpy as np

    conditions = {(s.dataset, s.family, s.noise, s.coverage) for s in specs}
    counts = {
        "instances": len(specs),
        "conditions": len(conditions),
        "methods": len(methods),
        "sweeps": len(conditions) * len(methods),
        "trials": len(conditions) * len(methods) * trials,
        "fits": len(specs) * len(methods),
    }

    def row(stage: str, key: str, count: int) -> PlanRow:
        secs = measured.seconds.get((stage, key), [])
        med = float(np.median(secs)) if secs else None
        return PlanRow(
            stage,
            key,
            count,
            len(secs),
            med,
            None if med is None else count * med / 3600.0,
            sorted(measured.datasets.get((stage, key), set())),
            dict(measured.configs.get((stage, key), {})),
        )

    rows = []
    families: dict[str, int] = {}
    for s in specs:
        families[s.family] = families.get(s.family, 0) + 1
    for fam, n in sorted(families.items()):
        rows.append(row("generate", fam, n))
    per_method_trials = len(conditions) * trials
    for m in methods:
        rows.append(row("tune", m, per_method_trials))
    for m in methods:
        rows.append(row("run", m, len(specs)))
    return counts, rows


@dataclass
class FinishedWork:
    """What a resumed run skips (:func:`finished_work`).

    Attributes
    ----------
    tasks : set of str
        Task ids with a task file.
    cells : set of (str, str)
        ``(task id, method name)`` pairs with an ok cell.
    sweeps : set of (str, str)
        ``(method name, condition key)`` pairs with a tuned record (a finished sweep).
    """

    tasks: set[str] = field(default_factory=set)
    cells: set[tuple[str, str]] = field(default_factory=set)
    sweeps: set[tuple[str, str]] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.tasks or self.cells or self.sweeps)


def finished_work(
    tasks: str | os.PathLike[str] | None = None,
    results: str | os.PathLike[str] | None = None,
    tuning: str | os.PathLike[str] | None = None,
) -> FinishedWork:
    """The instances, cells and sweeps already made in a run's folders (any may be None or
    absent).

    Counted by name, as :func:`plan_grid` counts: a task file is taken as done without being
    verified (``generate`` re-makes a damaged one), a method with overrides counts as its
    name, and a sweep counts as done only once its record is written (a partly run sweep is
    projected whole).
    """
    from udbench._validation import UdbenchError

    done = FinishedWork()
    if tasks is not None and Path(tasks).is_dir():
        done.tasks = {p.stem for p in Path(tasks).glob("*.npz")}
    if results is not None and Path(results).is_dir():
        from udbench.evaluation.store import read_results

        try:
            df = read_results(results)
        except UdbenchError:  # no cell stored yet
            df = None
        if df is not None and len(df) and {"task_id", "method", "status"} <= set(df.columns):
            ok = df[df["status"] == "ok"]
            pairs = zip(ok["task_id"].astype(str), ok["method"].astype(str), strict=True)
            done.cells = set(pairs)
    if tuning is not None and Path(tuning).is_dir():
        from udbench.tuning.records import load_records

        try:
            records = load_records(tuning)
        except UdbenchError:
            records = []
        done.sweeps = {(str(r["method"]), str(r["condition"])) for r in records}
    return done


def remaining_rows(
    rows: Sequence[PlanRow], specs: Sequence[Any], trials: int, done: FinishedWork
) -> list[PlanRow]:
    """:func:`plan_grid`'s rows for what is still to do: counts and CPU-hours without the
    instances, sweeps and cells in ``done`` (the median seconds are unchanged).

    Parameters
    ----------
    rows : sequence of PlanRow
        From :func:`plan_grid` over ``specs``.
    specs : sequence of TaskSpec
        The grid the rows were made for.
    trials : int
        Trials per sweep (as given to :func:`plan_grid`).
    done : FinishedWork
    """
    from dataclasses import replace

    from udbench.tuning.records import Condition

    conditions = sorted({Condition.of(s).key for s in specs})
    out = []
    for r in rows:
        if r.stage == "generate":
            n = sum(s.family == r.key and s.task_id not in done.tasks for s in specs)
        elif r.stage == "tune":
            n = trials * sum((r.key, c) not in done.sweeps for c in conditions)
        else:
            n = sum((s.task_id, r.key) not in done.cells for s in specs)
        hours = None if r.median_s is None else n * r.median_s / 3600.0
        out.append(replace(r, count=n, cpu_hours=hours))
    return out


def unmeasured(rows: Sequence[PlanRow]) -> list[str]:
    """The ``"stage key"`` of every plan row with work left and no measurement, the figures a
    study's ``--yes`` gate waits for, GP generation excepted: a GP instance takes seconds
    (docs/tasks.md), so an unmeasured ``generate gp`` does not hold a study back.

    Parameters
    ----------
    rows : sequence of PlanRow
        :func:`plan_grid` (or :func:`remaining_rows`) output.

    Returns
    -------
    list of str
        E.g. ``["run nn-lap", "tune nn-lap+sn"]``, in row order.
    """
    return [
        f"{r.stage} {r.key}"
        for r in rows
        if r.cpu_hours is None and r.count and not (r.stage == "generate" and r.key == "gp")
    ]
