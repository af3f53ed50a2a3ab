"""Scoring the stored cells of a results folder under other losses (``udbench score``).

:func:`score_results` reads every ok cell run with ``--keep-predictions``, scores its stored
per-point prediction on its task file under the asked losses
(:func:`udbench.evaluation.losses.loss_metrics`: the CRPS and log-score decompositions of
paper Table 2) and writes the cell's row again with those columns added; the squared-loss
metrics keep their exact values.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from udbench._losses import loss_names
from udbench._validation import UdbenchError, as_list, check_choice, param_error
from udbench.evaluation.losses import loss_column, loss_columns, loss_metrics

__all__ = ["ScoreSummary", "score_results"]


@dataclass
class ScoreSummary:
    """What :func:`score_results` did.

    Attributes
    ----------
    losses : tuple of str
        The losses scored.
    n_ok : int
        Ok cells in the results.
    n_scored : int
        Cells scored now.
    n_already : int
        Cells that held every asked loss already (skipped; ``force`` re-scores them).
    skipped : list of (str, str)
        ``(cell key, reason)`` of the ok cells that could not be scored (predictions not
        kept, task file missing or changed).
    n_no_predictions : int
        Of those, the cells run without ``--keep-predictions`` (nothing to score).
    """

    losses: tuple[str, ...]
    n_ok: int = 0
    n_scored: int = 0
    n_already: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    n_no_predictions: int = 0


def _missing(value: Any) -> bool:
    """True for None, pd.NA and float NaN (a missing cell as pandas gives it)."""
    return value is None or value is pd.NA or (isinstance(value, float) and value != value)


def _has_loss(row: dict[str, Any], loss: str) -> bool:
    value = row.get(loss_column("rho_eu_var", loss))
    return value is not None and not pd.isna(value)


def _merge_notes(old: Any, losses: tuple[str, ...], new: list[str]) -> str | None:
    """The row's notes without earlier notes of ``losses``, plus ``new``."""
    own = {*losses, *(c for loss in losses for c in loss_columns(loss))}
    kept = []
    if isinstance(old, str) and old:
        kept = [n for n in old.split("; ") if n.split(":", 1)[0].strip() not in own]
    merged = [*kept, *new]
    return "; ".join(merged) if merged else None


def _find_task_file(stored: str, row: dict[str, Any], by_id: dict[str, list[Path]]) -> Path | None:
    """The task file of a results row: its stored path, else one of ``by_id`` with its id.

    Among several files with the row's task id, the one whose content checksum is the row's
    ``task_sha256`` wins (else the first).
    """
    from udbench.tasks import Task

    if stored and Path(stored).is_file():
        return Path(stored)
    found = by_id.get(str(row.get("task_id")), [])
    sha = row.get("task_sha256")
    for candidate in found:
        try:
            if isinstance(sha, str) and Task.load(candidate).content_sha256 == sha:
                return candidate
        except UdbenchError:
            continue
    return found[0] if found else None


def score_results(
    results: str | os.PathLike[str],
    losses: tuple[str, ...] | list[str],
    *,
    force: bool = False,
    on_cell: Callable[[int, int], None] | None = None,
    task_dirs: Sequence[str | os.PathLike[str]] = (),
) -> ScoreSummary:
    """Score the stored cells of a results folder under other losses (``udbench score``).

    For every ok cell run with ``--keep-predictions``, the method's stored per-point
    prediction and its task file (``task_path``, checked against the stored content checksum)
    give the metrics of :func:`loss_metrics`; the cell's row is written again with those
    columns added and everything else unchanged (the squared-loss metrics keep their exact
    values), then the folder is compacted. Do not run it while ``udbench run`` writes into the
    same folder.

    Parameters
    ----------
    results : str or Path
        A results folder written by ``udbench run``.
    losses : str or sequence of {"squared", "crps", "log"}
        ``squared`` is always stored already and is ignored; one name is one loss.
    force : bool, default False
        Score cells that already hold a loss again (the default skips them).
    on_cell : callable, optional
        ``on_cell(done, total)`` after every task's cells (progress).
    task_dirs : sequence of str or Path, default ()
        Task files or folders searched by task id (and content checksum) when a row's
        stored ``task_path`` is gone (the tasks were moved; ``udbench score --tasks``).

    Returns
    -------
    ScoreSummary

    Raises
    ------
    UdbenchError
        ``results`` is not a results folder or holds no rows; an unknown loss.
    """
    from udbench.evaluation.store import ResultsStore, prediction_from_frame
    from udbench.tasks import Task
    from udbench.tasks.discovery import task_files_by_id

    comp = "udbench score"
    losses = as_list(comp, "losses", losses, (str,), what="loss names (squared, crps, log)")
    unscored = loss_names("regression", scored=False)  # squared: stored already
    wanted = tuple(dict.fromkeys(loss for loss in losses if loss not in unscored))
    for loss in wanted:
        check_choice(comp, "--loss", loss, loss_names("regression", scored=True))
    root = Path(results)
    if not root.is_dir():
        raise param_error(
            comp, "RESULTS", "be a results folder written by 'udbench run'", str(root)
        )
    store = ResultsStore(root)
    df = store.read()
    if df.empty:
        raise UdbenchError(f"{comp}: no results stored under {str(root)!r}")
    summary = ScoreSummary(losses=wanted)
    if not wanted:
        return summary
    # pandas reads a missing string as NaN (a float): give such cells back as None, so the row
    # written again keeps each column's type (a NaN "error" would clash with the failed rows')
    text = {str(c) for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])}
    rows = [
        {str(k): (None if str(k) in text and _missing(v) else v) for k, v in r.items()}
        for r in df.to_dict(orient="records")
        if str(r.get("status")) == "ok"
    ]
    summary.n_ok = len(rows)
    todo: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if not force and all(_has_loss(row, loss) for loss in wanted):
            summary.n_already += 1
            continue
        key = str(row["cell_key"])
        if not store.prediction_path(key).is_file():  # nothing to score: say so first
            summary.skipped.append((key, "predictions not kept (run with --keep-predictions)"))
            summary.n_no_predictions += 1
            continue
        todo.setdefault(str(row.get("task_path")), []).append(row)
    by_id = task_files_by_id(list(task_dirs), command=comp) if todo and task_dirs else {}
    total = sum(len(v) for v in todo.values())
    done = 0
    for stored_path, cells in todo.items():
        path = _find_task_file(stored_path, cells[0], by_id)
        if path is None:
            why = f"task file {stored_path!r} not found (moved or deleted since the run): " + (
                "not under --tasks either"
                if task_dirs
                else "pass the folder that holds it now with --tasks"
            )
            summary.skipped += [(str(r["cell_key"]), why) for r in cells]
            done += len(cells)
            continue
        try:
            task = Task.load(path)
        except UdbenchError as err:
            summary.skipped += [(str(r["cell_key"]), f"task file: {err}") for r in cells]
            done += len(cells)
            continue
        cache: dict[str, Any] = {}  # the task's method-independent terms, computed once
        for row in cells:
            key = str(row["cell_key"])
            sha = row.get("task_sha256")
            if isinstance(sha, str) and sha and sha != task.content_sha256:
                summary.skipped.append(
                    (key, f"task file {str(path)!r} changed since the run (content checksum)")
                )
                continue
            pred = prediction_from_frame(store.read_predictions(key), task.eval_idx)
            if pred is None:
                summary.skipped.append((key, "stored predictions are not at the task's points"))
                continue
            const = bool(row.get("constant_aleatoric") or False)
            try:
                metrics, notes = loss_metrics(
                    task, pred, wanted, constant_aleatoric=const, cache=cache
                )
            except UdbenchError as err:  # e.g. a damaged array of the task file
                summary.skipped.append((key, str(err)))
                continue
            new = dict(row)
            new.update(metrics)
            new["metric_notes"] = _merge_notes(row.get("metric_notes"), wanted, notes)
            store.write_cell(new)
            summary.n_scored += 1
        done += len(cells)
        if on_cell is not None:
            on_cell(done, total)
    if summary.n_scored:
        store.compact()
    return summary
