"""Measured seconds per unit of work, for ``udbench plan`` (:mod:`udbench.tuning.plan`).

Read from the folders that ``udbench plan --measured`` names: results folders of
``udbench run`` (fit + predict seconds per ok cell, with the settings that differ from the
method's defaults), tuning folders of ``udbench tune`` or of the tuning campaign (per finished
trial), records folders of the runs campaign (per cell) and folders of task files (the
generation log, else the MCMC sampler's wall time). The module docstring of
:mod:`udbench.tuning.plan` says which figure each stage takes.

Two clocks are kept apart, never mixed in one figure: **CPU seconds** where a record measured
them (a tuning campaign's record, :mod:`udbench.tuning.shipped`: the sweep's ``cpu_seconds``,
process CPU time, over its finished trials; a runs campaign's record,
``<records>/<suite>/{untuned,tuned}/<task id>/<method>.json``: the cell's ``cpu_seconds``,
one run-stage value per done record) and **wall-clock seconds** everywhere else (a
cell's or trial's ``fit_time_s + predict_time_s``, the generation log, the sampler's
``wall_seconds``: elapsed time, longer than the CPU time on a loaded machine, shorter where
a fit uses several threads). :meth:`Measurements.values` prefers the CPU seconds of a row.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Measurements", "collect_measurements"]

#: Trial states that count as a finished trial of a sweep.
_FINISHED = ("complete", "failed", "pruned")


@dataclass
class Measurements:
    """Measured seconds per unit, by (stage, key): key is a method, or a family for generate.

    Attributes
    ----------
    seconds : dict
        (stage, key) -> wall-clock seconds per unit.
    datasets : dict
        (stage, key) -> datasets of the wall-clock measurements.
    configs : dict
        (stage, key) -> settings that differ from the method's defaults -> cells measured so
        (wall-clock measurements of results folders).
    cpu_seconds : dict
        (stage, key) -> CPU seconds per unit (a tuning campaign record: one value per sweep,
        its ``cpu_seconds`` over its finished trials; a runs campaign record: one value per
        cell).
    cpu_datasets : dict
        (stage, key) -> datasets of the CPU measurements.
    cpu_configs : dict
        (stage, key) -> settings that differ from the method's defaults -> cells measured so
        (CPU measurements of runs campaign records: the tuned cells).
    """

    seconds: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    datasets: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    configs: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    cpu_seconds: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    cpu_datasets: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    cpu_configs: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)

    def add(
        self,
        stage: str,
        key: str,
        value: float,
        dataset: str | None,
        config: str = "",
        *,
        clock: str = "wall",
    ) -> None:
        """Record one unit's seconds (``clock``: ``"wall"`` or ``"cpu"``); a value that is
        not finite and >= 0 is ignored."""
        if value is None or not math.isfinite(value) or value < 0:
            return
        cpu = clock == "cpu"
        (self.cpu_seconds if cpu else self.seconds).setdefault((stage, key), []).append(
            float(value)
        )
        if dataset:
            where = self.cpu_datasets if cpu else self.datasets
            where.setdefault((stage, key), set()).add(dataset)
        if config:
            counts = (self.cpu_configs if cpu else self.configs).setdefault((stage, key), {})
            counts[config] = counts.get(config, 0) + 1

    def values(self, stage: str, key: str) -> tuple[list[float], str, set[str], dict[str, int]]:
        """The measurements of a row: its CPU seconds where any were measured, else its
        wall-clock seconds.

        Returns
        -------
        seconds, clock, datasets, configs
            The values, ``"cpu"`` or ``"wall"``, the datasets they were measured on and the
            non-default settings of the measured cells (results folders and runs campaign
            records).
        """
        if self.cpu_seconds.get((stage, key)):
            return (
                self.cpu_seconds[(stage, key)],
                "cpu",
                self.cpu_datasets.get((stage, key), set()),
                self.cpu_configs.get((stage, key), {}),
            )
        return (
            self.seconds.get((stage, key), []),
            "wall",
            self.datasets.get((stage, key), set()),
            self.configs.get((stage, key), {}),
        )

    def measured(self, stage: str, key: str) -> bool:
        """Whether the row has any measurement (either clock)."""
        return bool(self.seconds.get((stage, key)) or self.cpu_seconds.get((stage, key)))

    def merge(self, other: Measurements) -> None:
        """Add ``other``'s measurements (both clocks) to these."""
        for mine, theirs in (
            (self.seconds, other.seconds),
            (self.cpu_seconds, other.cpu_seconds),
        ):
            for k, vals in theirs.items():
                mine.setdefault(k, []).extend(vals)
        for mine_ds, theirs_ds in (
            (self.datasets, other.datasets),
            (self.cpu_datasets, other.cpu_datasets),
        ):
            for k, ds in theirs_ds.items():
                mine_ds.setdefault(k, set()).update(ds)
        for mine_cf, theirs_cf in (
            (self.configs, other.configs),
            (self.cpu_configs, other.cpu_configs),
        ):
            for k, counts in theirs_cf.items():
                here = mine_cf.setdefault(k, {})
                for c, n in counts.items():
                    here[c] = here.get(c, 0) + n


def collect_measurements(folders: Iterable[str | os.PathLike[str]]) -> Measurements:
    """Measured times from results, tuning, runs campaign records and task folders (module
    docstring).

    Raises
    ------
    UdbenchError
        A folder that holds none of these kinds, or does not exist.
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
        cells = sorted(root.glob("*/*/*.json")) if root.is_dir() else []
        if cells and _from_run_records(cells, found):
            kinds += 1
        tasks = sorted(root.rglob("*.npz")) if root.is_dir() else []
        if tasks:
            kinds += 1
            _from_tasks(tasks, found)
        if not kinds:
            raise param_error(
                "udbench plan",
                "measured",
                "be a results, tuning, runs campaign records or task folder made by udbench",
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
    from udbench._validation import UdbenchError
    from udbench.tuning.shipped import read_tuned_record

    for path in paths:
        if _from_run_records([path], found):  # a runs campaign part folder named directly
            continue
        try:  # a tune record, or a tuning campaign's (shipped) record
            rec = read_tuned_record(path)
        except UdbenchError:
            continue
        if rec.get("format") != "udbench-tuned-config":
            continue
        method, dataset = str(rec["method"]), rec.get("dataset")
        finished = [h for h in rec.get("history", []) if h.get("state") in _FINISHED]
        meta = rec.get("_campaign") or {}
        # a campaign record: the sweep's CPU seconds (its overheads included) per finished
        # trial, one value per sweep; None for a sweep resumed from a journal whose earlier
        # trials' CPU is unknown (6 of 311 gp-small records, up to 27x too little)
        cpu = sweep_cpu_seconds(rec, meta.get("cpu_seconds"), meta.get("wall_seconds"))
        if cpu is not None and finished:
            found.add("tune", method, cpu / len(finished), dataset, clock="cpu")
            continue
        for h in finished:  # a udbench tune record (or a resumed sweep): trials' wall seconds
            if h.get("fit_time_s") is not None:
                secs = float(h["fit_time_s"]) + float(h.get("predict_time_s") or 0.0)
                found.add("tune", method, secs, dataset)


#: A campaign sweep whose finished trials took more than this many times its record's wall
#: seconds was resumed from its journal (the record times the last process only): its
#: trials' wall-clock seconds are taken instead of its CPU seconds.
_RESUMED_FACTOR = 1.5


def sweep_resumed(result: dict[str, Any], wall_seconds: Any) -> tuple[bool, float]:
    """Whether a tuning campaign sweep was resumed from its journal by a later process (its
    record then times that last process only), and its finished trials' fit + predict
    seconds.

    Parameters
    ----------
    result : dict
        The sweep's tuned record (a campaign record's ``result``): ``history`` and, in a
        record made since 2026-12-03, ``resumed_trials``.
    wall_seconds : float or None
        The campaign record's wall seconds.

    Returns
    -------
    resumed : bool
        ``resumed_trials`` > 0 where the record keeps it; otherwise whether the finished
        trials took over :data:`_RESUMED_FACTOR` times ``wall_seconds`` (False when that is
        unknown).
    trial_seconds : float
    """
    took = sum(
        float(h.get("fit_time_s") or 0.0) + float(h.get("predict_time_s") or 0.0)
        for h in result.get("history") or []
        if h.get("state") in _FINISHED
    )
    n_resumed = result.get("resumed_trials")
    if isinstance(n_resumed, int):
        return n_resumed > 0, took
    known = isinstance(wall_seconds, int | float)
    return known and took > _RESUMED_FACTOR * float(wall_seconds), took


def sweep_cpu_seconds(result: dict[str, Any], cpu_seconds: Any, wall_seconds: Any) -> float | None:
    """A tuning campaign sweep's CPU seconds over all the processes that ran it.

    The campaign record's ``cpu_seconds`` times the process that finished the sweep; a sweep
    resumed from its journal (:func:`sweep_resumed`) adds the CPU seconds of the trials an
    earlier process finished, as each trial measured them (the result's
    ``resumed_trials_cpu_seconds``; a record made before that key was kept has none). Not
    counted: an earlier process's interrupted trial and its overheads outside trials (task
    generation, imports), so the figure is a lower bound for a resumed sweep.

    Parameters
    ----------
    result : dict
        The sweep's tuned record (a campaign record's ``result``).
    cpu_seconds, wall_seconds : float or None
        The campaign record's CPU and wall-clock seconds.

    Returns
    -------
    float or None
        None when ``cpu_seconds`` is unknown, or the sweep was resumed and its earlier trials'
        CPU seconds are not known (a record or journal made before the per-trial clock).
    """
    if not isinstance(cpu_seconds, int | float):
        return None
    resumed, _ = sweep_resumed(result, wall_seconds)
    if not resumed:
        return float(cpu_seconds)
    earlier = result.get("resumed_trials_cpu_seconds")
    if not isinstance(earlier, int | float) or not math.isfinite(earlier):
        return None
    return float(cpu_seconds) + float(earlier)


def record_cpu_seconds(record: dict[str, Any]) -> float | None:
    """A finished campaign record's CPU seconds of one thread: its ``cpu_seconds``, plus,
    for a tuning sweep resumed from its journal, the CPU seconds of the trials an earlier
    process finished where known (:func:`sweep_cpu_seconds`).

    Parameters
    ----------
    record : dict
        A campaign record (:mod:`udbench.campaigns.engine`) of any kind.

    Returns
    -------
    float or None
        None without a numeric ``cpu_seconds``.
    """
    from udbench.tuning.records import CAMPAIGN_KIND

    cpu = record.get("cpu_seconds")
    if not isinstance(cpu, int | float):
        return None
    if record.get("kind") == CAMPAIGN_KIND and isinstance(record.get("result"), dict):
        whole = sweep_cpu_seconds(record["result"], cpu, record.get("wall_seconds"))
        return float(cpu) if whole is None else whole
    return float(cpu)


#: ``kind`` of a runs campaign record (:mod:`udbench.campaigns.runs`): its two parts.
_RUN_KINDS = ("untuned", "tuned")


def _from_run_records(paths: Sequence[Path], found: Measurements) -> int:
    """Add the runs campaign's cell records among ``paths`` (others are skipped).

    A done record (``status`` ``"done"``, ``kind`` ``"untuned"`` or ``"tuned"``, ``settings``
    with ``task_id`` and ``method``, ``result.row`` the results row) gives one CPU
    measurement of the run stage of its method on its dataset: the cell's ``cpu_seconds``
    (process CPU time of the whole unit: task read, fit, predict and scoring), with the
    row's settings that are not the method's defaults (the tuned cells' configurations).

    Returns
    -------
    int
        How many records were read as runs campaign records.
    """
    defaults: dict[str, dict[str, Any] | None] = {}
    n = 0
    for path in paths:
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if not isinstance(rec, dict) or rec.get("kind") not in _RUN_KINDS:
            continue
        settings, result = rec.get("settings"), rec.get("result")
        if not isinstance(settings, dict) or not isinstance(result, dict):
            continue
        row, method = result.get("row"), settings.get("method")
        if not isinstance(row, dict) or not method or not settings.get("task_id"):
            continue
        n += 1
        cpu = rec.get("cpu_seconds")
        if rec.get("status") != "done" or not isinstance(cpu, int | float):
            continue
        dataset = row.get("dataset") or str(settings["task_id"]).split("__", 1)[0]
        config = _non_default(str(method), row.get("config"), defaults)
        found.add("run", str(method), float(cpu), str(dataset), config, clock="cpu")
    return n


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
