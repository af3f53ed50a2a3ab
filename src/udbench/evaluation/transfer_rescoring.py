"""Rescoring stored predictions against an alternative oracle (``udbench transfer``).

:func:`rescore_cells` takes the stored (task, method) predictions of a results folder
(``udbench run --keep-predictions``), computes each task's alternative posterior moments once
(:func:`udbench.evaluation.transfer.alternative_moments`, cached under the output folder so an
interrupted run resumes) and scores every prediction again with the very code of
``udbench run`` (:func:`udbench.evaluation.scoring.score_prediction`) on the task with those
moments (:func:`udbench.evaluation.transfer.task_with_moments`); for another loss, also in
closed form against the oracle and the task's own moments (module notes of
:mod:`udbench.evaluation.transfer`). A task whose oracle fails gives failed rows with the
reason and the others go on.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udbench._cache import cache_checksum
from udbench._losses import LOSS_TABLE, loss_names
from udbench._validation import UdbenchError, UdbenchWarning, check_choice
from udbench.evaluation.scoring import score_prediction
from udbench.evaluation.store import ResultsStore, prediction_from_frame
from udbench.evaluation.transfer import (
    GP_ORACLE,
    ORACLE_MOMENTS_VERSION,
    OWN_PREFIX,
    SCORED_KEYS,
    OracleMoments,
    OracleSpec,
    alternative_moments,
    fit_settings_for,
    task_with_moments,
    transfer_losses,
)
from udbench.methods.base import Prediction
from udbench.tasks import Task

__all__ = ["TaskCallback", "cached_oracle_moments", "rescore_cells", "rescore_prediction"]


def _cache_path(cache_dir: Path, task_id: str, sha: str | None, request: dict[str, Any]) -> Path:
    """``<task id>__<checksum[:16]>__<request hash>.npz``: the request is the oracle, its
    fit settings and :data:`ORACLE_MOMENTS_VERSION`, so other settings or an older version
    never reuse a cached oracle."""
    import hashlib

    tag = hashlib.blake2b(json.dumps(request, sort_keys=True).encode(), digest_size=4).hexdigest()
    return cache_dir / f"{task_id}__{(sha or 'unknown')[:16]}__{tag}.npz"


def _load_cached(path: Path, oracle: OracleSpec) -> OracleMoments | None:
    """The cached moments at ``path``, or None (recomputed): damaged, foreign, written before
    checksums were kept, or not matching its checksum (then said, in one warning line)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            entries = {k: np.asarray(z[k]) for k in ("mean", "var", "seconds", "info")}
            stored = str(z["checksum"]) if "checksum" in z.files else None
    except (OSError, ValueError, KeyError):
        return None  # damaged or foreign: recomputed
    if stored is None:
        return None  # written before checksums were kept: recomputed
    if cache_checksum(entries) != stored:  # edited or damaged: never used (issue 68)
        warnings.warn(
            f"udbench transfer: the cached oracle moments {str(path)!r} do not match their "
            "checksum (edited or damaged): recomputing them",
            UdbenchWarning,
            stacklevel=3,
        )
        return None
    try:
        info = json.loads(str(entries["info"]))
    except ValueError:
        return None
    if not isinstance(info, dict) or info.get("oracle") != oracle.text:
        return None
    return OracleMoments(entries["mean"], entries["var"], float(entries["seconds"]), info)


def _save_cached(path: Path, m: OracleMoments) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # workers may share the cache
    entries: dict[str, Any] = {
        "mean": np.asarray(m.mean),
        "var": np.asarray(m.var),
        "seconds": np.asarray(np.float64(m.seconds)),
        "info": np.asarray(json.dumps(m.info, default=str)),
    }
    with open(tmp, "wb") as fh:
        np.savez(fh, **entries, checksum=np.asarray(cache_checksum(entries)))
    os.replace(tmp, path)


def _locate(row: pd.Series, by_id: dict[str, list[Path]]) -> Path | None:
    path = row.get("task_path")
    if isinstance(path, str) and path and Path(path).is_file():
        return Path(path)
    found = by_id.get(str(row["task_id"]), [])
    return found[0] if found else None


def _task_index(task_dirs: Iterable[str | os.PathLike[str]]) -> dict[str, list[Path]]:
    from udbench.tasks.discovery import task_files_by_id

    return task_files_by_id([str(d) for d in task_dirs], command="udbench transfer")


#: Called after each task as ``on_task(done, total, task_id)``.
TaskCallback = Callable[[int, int, str], None]


def rescore_cells(
    results: pd.DataFrame,
    results_dir: str | os.PathLike[str],
    oracle: OracleSpec,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    task_dirs: Sequence[str | os.PathLike[str]] = (),
    data_dir: str | os.PathLike[str] | None = None,
    loss: str = "squared",
    on_task: TaskCallback | None = None,
    fit_settings: dict[str, int] | None = None,
) -> pd.DataFrame:
    """Score every stored prediction of ``results`` against the alternative ``oracle``.

    Parameters
    ----------
    results : DataFrame
        ``ok`` rows of one version per task (:func:`udbench.evaluation.leaderboard.
        select_task_versions`), with ``cell_key``, ``task_id``, ``task_sha256``,
        ``task_path``, ``constant_aleatoric``.
    results_dir : str or Path
        The results folder holding ``predictions/<cell>.parquet``.
    oracle : OracleSpec
    cache_dir : str or Path, optional
        Where the per-task moments are cached (none if None).
    task_dirs : sequence of str or Path
        Folders searched for a task file (by task id) when a row's ``task_path`` is gone.
    data_dir : str or Path, optional
        Raw-data folder (see :func:`alternative_moments`).
    loss : {"squared", "crps", "log"}
        ``crps`` / ``log`` also add that loss's metric columns (``<key>_<loss>``,
        :func:`udbench.evaluation.losses.loss_columns`) under ``oracle`` and, prefixed
        :data:`OWN_PREFIX`, under the task's own posterior moments, both by the Gaussian
        closed form (module docstring). The squared-loss columns are always recomputed.
    on_task : callable, optional
        Progress callback (:data:`TaskCallback`).
    fit_settings : dict, optional
        Overrides of the ``gp:KERNEL`` fit settings (:func:`fit_settings_for`).

    Returns
    -------
    DataFrame
        One row per input row, keyed like it (every column of ``results`` kept), with the
        metric columns :data:`SCORED_KEYS` recomputed under ``oracle``, and ``oracle``,
        ``oracle_status`` (``"ok"``, ``"failed"``: the task's oracle or this cell's
        rescoring failed, ``"no-predictions"``: the cell was run without
        ``--keep-predictions``), ``oracle_error``, ``oracle_seconds`` (the task's oracle
        computation, fit included; also for a cached one) and ``oracle_info`` (JSON).
        ``status`` is ``"ok"`` only where ``oracle_status`` is.
    """
    check_choice("rescore_cells", "loss", loss, transfer_losses())
    store = ResultsStore(results_dir)
    cache = None if cache_dir is None else Path(cache_dir)
    by_id = _task_index(task_dirs)
    stale = _stale_columns(results, loss)
    out_rows: list[dict[str, Any]] = []
    groups = list(results.groupby("task_id", sort=True))
    for done, (task_id, rows) in enumerate(groups, start=1):
        first = rows.iloc[0]
        sha = first.get("task_sha256")
        sha = str(sha) if isinstance(sha, str) and sha else None
        moments: OracleMoments | None = None
        task: Task | None = None
        error: str | None = None
        # no cell of the task kept its predictions: nothing to rescore, so no oracle is fitted
        kept = any(store.prediction_path(str(k)).is_file() for k in rows["cell_key"])
        try:
            if not kept:
                raise _NothingToRescore
            path = _locate(first, by_id)
            if path is None:
                raise UdbenchError(
                    f"task file {first.get('task_path')!r} not found (pass its folder with --tasks)"
                )
            task = Task.load(path)
            if sha is not None and task.content_sha256 != sha:
                raise UdbenchError(
                    f"task file {str(path)!r} holds another version of the task (checksum "
                    f"{str(task.content_sha256)[:12]}, results {sha[:12]})"
                )
            moments = cached_oracle_moments(
                task, oracle, cache, sha, data_dir=data_dir, fit_settings=fit_settings
            )
        except _NothingToRescore:
            pass
        except Exception as err:  # recorded: the other tasks go on
            error = f"oracle failed: {type(err).__name__}: {' '.join(str(err).split())}"
        view = None if task is None or moments is None else task_with_moments(task, *_mv(moments))
        # the task itself holds its own moments (the closed-form "own" side of another loss)
        own = task if view is not None and LOSS_TABLE[loss].scored else None
        for _, row in rows.iterrows():
            out: dict[str, Any] = {str(k): v for k, v in row.items() if str(k) not in stale}
            for k in (*SCORED_KEYS, *_loss_keys(loss)):
                out[k] = float("nan")
            out.update(
                oracle=oracle.text,
                oracle_status="failed",
                oracle_error=error,
                oracle_seconds=float("nan") if moments is None else moments.seconds,
                oracle_info=None if moments is None else json.dumps(moments.info, default=str),
                metric_notes=None,
                status="failed",
            )
            if not kept:
                out.update(oracle_status="no-predictions", oracle_error=_NOT_KEPT)
            elif view is not None:
                _score_row(out, row, view, store, loss, own)
            out_rows.append(out)
        if on_task is not None:
            on_task(done, len(groups), str(task_id))
    return pd.DataFrame(out_rows, columns=_columns(results, loss, stale))


_NOT_KEPT = "predictions not kept (run with --keep-predictions)"


def cached_oracle_moments(
    task: Task,
    oracle: OracleSpec,
    cache_dir: str | os.PathLike[str] | None,
    sha: str | None,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    fit_settings: dict[str, int] | None = None,
    fitted: dict[str, Any] | None = None,
) -> OracleMoments:
    """``task``'s posterior moments under ``oracle`` (:func:`udbench.evaluation.transfer.
    alternative_moments`), read from ``cache_dir`` when a run with the same request (oracle,
    fit settings, :data:`ORACLE_MOMENTS_VERSION`, and the given fit ``fitted`` if any) and
    task checksum ``sha`` left them there, else computed and cached (``cache_dir`` None: never
    cached). Each cache file holds a content checksum of its moments
    (:func:`udbench._cache.cache_checksum`): a damaged or foreign one, one written before
    checksums were kept, or one that does not match its checksum (edited; a warning says so)
    is recomputed and overwritten, never used. Raises what :func:`alternative_moments`
    raises."""
    request: dict[str, Any] = {
        "oracle": oracle.text,
        "moments": ORACLE_MOMENTS_VERSION,
        "fit": fit_settings_for(str(task.spec.fidelity), fit_settings)
        if oracle.kind == GP_ORACLE and oracle.name != "prior"
        else None,
    }
    if fitted is not None:  # another key, so a fit made here is never taken for it
        request["given"] = json.loads(json.dumps(fitted, sort_keys=True))
    cache = None if cache_dir is None else Path(cache_dir)
    cpath = None if cache is None else _cache_path(cache, str(task.spec.task_id), sha, request)
    moments = _load_cached(cpath, oracle) if cpath is not None and cpath.is_file() else None
    if moments is None:
        moments = alternative_moments(
            task, oracle, data_dir=data_dir, fit_settings=fit_settings, fitted=fitted
        )
        if cpath is not None:
            _save_cached(cpath, moments)
    return moments


def rescore_prediction(
    view: Task,
    pred: Prediction,
    *,
    constant_aleatoric: bool,
    loss: str = "squared",
    own: Task | None = None,
) -> tuple[dict[str, float], str | None]:
    """One prediction's metrics under an alternative oracle: the squared-loss
    :data:`SCORED_KEYS` by ``udbench run``'s own scoring
    (:func:`udbench.evaluation.scoring.score_prediction`) on ``view`` (the task holding the
    oracle's moments, :func:`udbench.evaluation.transfer.task_with_moments`), and, for
    ``loss`` ``crps`` or ``log`` with ``own`` (the task itself), that loss's columns under
    the oracle and, prefixed :data:`OWN_PREFIX`, under the task's own moments, both by the
    Gaussian closed form (module docstring). Returns the metrics and the metric notes; a
    failure of the loss columns leaves them out, with the reason in the notes.

    Raises
    ------
    Exception
        What :func:`score_prediction` raises (a prediction of another length, ...).
    """
    metrics, notes = score_prediction(view, pred, constant_aleatoric=constant_aleatoric)
    if LOSS_TABLE[loss].scored and own is not None:
        from udbench.evaluation.losses import loss_metrics

        try:  # a failure here leaves the loss columns NaN, with the reason; squared stays
            for task_view, prefix in ((view, ""), (own, OWN_PREFIX)):
                by_loss, loss_notes = loss_metrics(
                    task_view,
                    pred,
                    (loss,),
                    constant_aleatoric=constant_aleatoric,
                    reference="gaussian",
                )
                metrics.update({prefix + k: v for k, v in by_loss.items()})
                if prefix == "" and loss_notes:
                    notes = "; ".join(filter(None, [notes, *loss_notes]))
        except Exception as err:
            why = f"{loss}: rescoring failed: {type(err).__name__}: {' '.join(str(err).split())}"
            notes = "; ".join(filter(None, [notes, why]))
    return metrics, notes


class _NothingToRescore(Exception):
    """No cell of a task kept its predictions (its oracle is not fitted)."""


def _loss_keys(loss: str) -> tuple[str, ...]:
    """The loss columns a rescored row gets: under the oracle, then under the task's own."""
    if not LOSS_TABLE[loss].scored:  # squared: the unsuffixed SCORED_KEYS
        return ()
    from udbench.evaluation.losses import loss_columns

    cols = loss_columns(loss)
    return (*cols, *(OWN_PREFIX + c for c in cols))


def _mv(m: OracleMoments) -> tuple[np.ndarray, np.ndarray]:
    return m.mean, m.var


def _stale_columns(results: pd.DataFrame, loss: str) -> set[str]:
    """Loss columns of ``results`` that this rescoring does not recompute (another loss's,
    scored against the task's own oracle): left out of the rescored rows, where they would
    read as values under the alternative oracle."""
    from udbench.evaluation.losses import loss_columns

    scored = loss_names("regression", scored=True)
    cols = {c for lo in scored if lo != loss for c in loss_columns(lo)}
    return cols & {str(c) for c in results.columns}


def _columns(results: pd.DataFrame, loss: str, stale: set[str]) -> list[str]:
    cols = [c for c in results.columns if str(c) not in stale]
    extras = (*SCORED_KEYS, *_loss_keys(loss))
    for extra in (*extras, "oracle", "oracle_status", "oracle_error", "oracle_seconds"):
        if extra not in cols:
            cols.append(extra)
    if "oracle_info" not in cols:
        cols.append("oracle_info")
    return cols


def _score_row(
    out: dict[str, Any],
    row: pd.Series,
    view: Task,
    store: ResultsStore,
    loss: str = "squared",
    own: Task | None = None,
) -> None:
    key = str(row["cell_key"])
    path = store.prediction_path(key)
    if not path.is_file():
        out["oracle_status"] = "no-predictions"
        out["oracle_error"] = _NOT_KEPT
        return
    try:
        pred = prediction_from_frame(store.read_predictions(key), view.eval_idx)
        if pred is None:
            raise UdbenchError("stored eval_idx differ from the task's evaluation pool")
        const = row.get("constant_aleatoric")
        constant = bool(const) if isinstance(const, bool | np.bool_) else False
        metrics, notes = rescore_prediction(
            view, pred, constant_aleatoric=constant, loss=loss, own=own
        )
    except Exception as err:
        out["oracle_error"] = f"rescoring failed: {type(err).__name__}: {err}"
        return
    out.update(metrics)
    out["metric_notes"] = notes
    out["oracle_status"] = "ok"
    out["oracle_error"] = None
    out["status"] = "ok"
