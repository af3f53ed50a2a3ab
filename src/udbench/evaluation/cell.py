"""One cell of the benchmark: load the task, fit, predict, validate, score; one row.

:func:`evaluate_cell` runs one (task file, method configuration) :class:`Cell`: it loads the
task, fits the method on the training sample (``X_train``, ``y_train``), predicts at the
evaluation pool ``X_eval`` (and at the query points, when the task has them), validates the
prediction (shape, finiteness, non-negative variances), scores it
(:func:`udbench.evaluation.scoring.score_prediction`: the oracle targets of SPEC §1, the
per-instance metrics of SPEC §10 and the per-shell Spearman ρ of SPEC §3) and returns the
long-format row of the :class:`~udbench.evaluation.store.ResultsStore` in a
:class:`CellOutcome`. A cell that raises, returns invalid output or exceeds its time limit
gives a failed row with its reason; it never raises for the cell's own errors.

A classification task with a classifier is evaluated by
:mod:`udbench.evaluation.classification_cell` (its own row layout); a method whose
``task_type`` is not the task's is a failed row naming both.

The loop over the cells (planning, execution, storing) is :mod:`udbench.evaluation.runner`.
"""

from __future__ import annotations

import platform
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from udbench import __version__
from udbench._threads import single_threaded
from udbench._validation import UdbenchError, param_error
from udbench.data import N_SHELLS
from udbench.evaluation._cell_parts import _now, _one_line, _Stage
from udbench.evaluation.scoring import METRIC_KEYS, PROXY_KEYS, score_prediction
from udbench.evaluation.store import cell_key
from udbench.execution.executor import call_with_timeout, worker_address
from udbench.methods.base import BaseMethod, MethodOutputError, Prediction
from udbench.methods.configs import MethodConfig
from udbench.tasks import Task

__all__ = ["Cell", "CellMeasure", "CellOutcome", "evaluate_cell"]

#: ``measure(fitted estimator, task) -> extra row fields``: quantities of the fitted method
#: that the metrics do not cover (``udbench study spectral-norm``: its distance preservation),
#: computed in the cell after scoring, outside the time limit. If it raises, the cell stays
#: ok and the reason is added to ``metric_notes`` (the fields are then missing: NaN).
CellMeasure = Callable[[BaseMethod, Task], "dict[str, Any]"]


@dataclass(frozen=True)
class Cell:
    """One unit of work: a task file and a method configuration.

    Attributes
    ----------
    task_path : str
        Absolute path of the task file (stored in the cell's row, so that commands reading
        the results find it from any folder).
    task_id : str
        Its id (file stem if unreadable).
    method : MethodConfig
        The method configuration.
    seed : int
        The method's ``random_state`` in this cell (:func:`udbench.evaluation.runner.method_seed`).
    task_sha256 : str or None
        The task file's content checksum when planned (None if it could not be read).
    extra : tuple of (str, Any)
        Extra row fields (e.g. which tuned record gave the configuration).
    """

    task_path: str
    task_id: str
    method: MethodConfig
    seed: int
    task_sha256: str | None = None
    extra: tuple[tuple[str, Any], ...] = ()

    @property
    def key(self) -> str:
        """The cell key ``"<task_id>|<method>|<config_hash>|<task checksum[:16]>"``."""
        return cell_key(self.task_id, self.method.name, self.method.config_hash, self.task_sha256)


@dataclass
class CellOutcome:
    """What a cell produced: its row and, on request, its per-point predictions."""

    row: dict[str, Any]
    predictions: pd.DataFrame | None = None
    timed_out: bool = False
    worker: str | None = None


def _base_row(cell: Cell, losses: tuple[str, ...] = ()) -> dict[str, Any]:
    mc = cell.method
    row: dict[str, Any] = {
        "cell_key": cell.key,
        "task_id": cell.task_id,
        "dataset": None,
        "family": None,
        "noise": None,
        "coverage": None,
        "seed": None,
        "fidelity": None,
        "n_draws": None,
        "n_train": None,
        "n_eval": None,
        "n_features": None,
        "task_path": cell.task_path,
        "task_sha256": cell.task_sha256,
        "task_version": None,
        "method": mc.name,
        "method_label": mc.label,
        "config": mc.config,
        "config_hash": mc.config_hash,
        "method_seed": cell.seed,
        "constant_aleatoric": mc.constant_aleatoric,
        "method_family": mc.family,
        "status": "failed",
        "error": None,
        "traceback": None,
        "fit_time_s": float("nan"),
        "predict_time_s": float("nan"),
        "udbench_version": __version__,
        "host": platform.node(),
        "started_at": _now(),
        "finished_at": None,
    }
    for k in (*METRIC_KEYS, *PROXY_KEYS):
        row[k] = float("nan")
    for s in range(N_SHELLS):
        row[f"rho_eu_risk_shell{s}"] = float("nan")
        row[f"rho_eu_var_shell{s}"] = float("nan")
    if losses:  # other losses (udbench run --loss): their columns only when asked for
        from udbench.evaluation.losses import loss_columns

        for loss in losses:
            row.update(dict.fromkeys(loss_columns(loss), float("nan")))
    row["metric_notes"] = None
    row.update(dict(cell.extra))
    return row


def _task_coordinates(task: Task) -> dict[str, Any]:
    spec = task.spec
    return {
        "dataset": spec.dataset,
        "family": spec.family,
        "noise": spec.noise,
        "coverage": spec.coverage,
        "seed": int(spec.seed),
        "fidelity": str(spec.fidelity),  # a Fidelity (string enum) is stored as its plain name
        "n_draws": int(spec.n_draws),
        "task_version": str(task.version) or None,
        # only for an approximate reference (student-t noise): other rows keep their columns
        **({} if task.reference_exact else {"reference_exact": False}),
    }


def _fit_predict(est: BaseMethod, task: Task) -> tuple[Prediction, float, float, Prediction | None]:
    t0 = time.perf_counter()
    try:
        est.fit(np.asarray(task.X_train), np.asarray(task.y_train))
    except Exception as err:
        raise _Stage("fit", err) from err
    t1 = time.perf_counter()
    try:
        pred = est.predict(np.asarray(task.X_eval))
    except Exception as err:
        raise _Stage("predict", err) from err
    t2 = time.perf_counter()
    pred_query = None
    if task.has_query:  # query points (e.g. the wine OOD study's red wines): a second call
        try:
            pred_query = est.predict(np.asarray(task.X_query))
        except Exception as err:
            raise _Stage("predict at the query points", err) from err
    return pred, t1 - t0, t2 - t1, pred_query


def _not_regression(
    cell: Cell,
    task: Task,
    outcome: CellOutcome,
    keep_predictions: bool,
    timeout: float | None,
    losses: tuple[str, ...],
) -> CellOutcome:
    """A classification task or a classifier: a mismatch is a failed row, a match is scored
    by :func:`udbench.evaluation.classification_cell.evaluate_classification`."""
    from udbench.evaluation import classification_cell as clf

    if task.spec.task_type == "classification":
        clf.classification_row(outcome.row, task, losses)
    mismatch = clf.task_type_mismatch(cell, task)
    if mismatch is not None:
        outcome.row["error"], outcome.row["finished_at"] = mismatch, _now()
        return outcome
    return clf.evaluate_classification(
        cell, task, outcome, keep_predictions=keep_predictions, timeout=timeout
    )


@single_threaded
def evaluate_cell(
    cell: Cell,
    *,
    keep_predictions: bool = False,
    timeout: float | None = None,
    losses: tuple[str, ...] = (),
    measure: CellMeasure | None = None,
) -> CellOutcome:
    """Run one cell: load the task, fit, predict, validate, score; never raises for cell errors.

    Parameters
    ----------
    cell : Cell
        The task file and method configuration.
    keep_predictions : bool, default False
        Also return the per-point predictions (columns ``eval_idx, shell, mean, aleatoric,
        epistemic``, variances in target units squared). A task with query points
        (``docs/tasks.md``) is also predicted there (a second ``predict`` call, not counted
        in ``predict_time_s``; its prediction is validated like the pool's) and its
        predictions get a ``point_set`` column (``"eval"``, then ``"query"`` rows whose
        ``eval_idx`` is the query row and ``shell`` −1).
    timeout : float, optional
        Wall-clock limit in seconds for fit + predict; a cell over it is a failed row with
        ``error = "timeout: ..."``.
    losses : tuple of {"crps", "log"}, default ()
        Also score under these losses (:mod:`udbench.evaluation.losses`).
    measure : callable, optional
        Extra row fields from the fitted estimator (:data:`CellMeasure`), after scoring.

    Returns
    -------
    CellOutcome
        ``row["status"]`` is ``"ok"`` or ``"failed"`` (with ``row["error"]``, one line).

    Notes
    -----
    The cell runs with one compute thread (XLA and BLAS pools,
    :func:`udbench._threads.cell_threads`), so its result does not depend on the
    worker, the number of workers or core pinning.
    """
    row = _base_row(cell, losses)
    outcome = CellOutcome(row=row, worker=worker_address())
    try:
        task = Task.load(cell.task_path)
        row.update(_task_coordinates(task))
        n_eval = int(np.shape(task.X_eval)[0])
        row["n_eval"] = n_eval
        row["n_train"] = int(np.shape(task.X_train)[0])
        row["n_features"] = int(np.shape(task.X_train)[1])
        if cell.task_sha256 is not None:
            sha = str(task.content_sha256)
            if sha != cell.task_sha256:
                raise UdbenchError(
                    f"the file changed since the run was planned (content checksum "
                    f"{sha[:12]}, planned {cell.task_sha256[:12]})"
                )
    except Exception as err:
        row["error"] = f"task file could not be read: {_one_line(err)}"
        row["traceback"] = traceback.format_exc(limit=8)
        row["finished_at"] = _now()
        return outcome

    if task.spec.task_type != "regression" or cell.method.task_type != "regression":
        return _not_regression(cell, task, outcome, keep_predictions, timeout, losses)

    from sklearn.base import clone

    est = clone(cell.method.estimator)
    if "random_state" in est.get_params(deep=False):
        est.set_params(random_state=cell.seed)

    finished, result = call_with_timeout(lambda: _fit_predict(est, task), timeout, dict(row))
    if not finished:
        row["error"] = f"timeout: fit + predict exceeded {timeout:g} s"
        row["finished_at"] = _now()
        outcome.timed_out = True
        return outcome
    if isinstance(result, BaseException):
        if isinstance(result, _Stage) and isinstance(result.err, MethodOutputError):
            where = " at the query points" if result.stage.endswith("query points") else ""
            row["error"] = f"invalid prediction{where}: {_one_line(result.err, with_type=False)}"
            tb = traceback.format_exception(result.err)
        elif isinstance(result, _Stage):
            row["error"] = f"{result.stage} raised {_one_line(result.err)}"
            tb = traceback.format_exception(result.err)
        else:
            row["error"] = f"raised {_one_line(result)}"
            tb = traceback.format_exception(result)
        row["traceback"] = "".join(tb[-12:])
        row["finished_at"] = _now()
        return outcome
    pred, fit_s, pred_s, pred_query = result
    row["fit_time_s"] = float(fit_s)
    row["predict_time_s"] = float(pred_s)
    try:
        if not isinstance(pred, Prediction):
            raise param_error(
                f"{cell.method.name}.predict", "return value", "be a Prediction", type(pred)
            )
        pred.validate(n_eval, component=f"{cell.method.name}.predict")
        if task.has_query:
            if not isinstance(pred_query, Prediction):
                raise param_error(
                    f"{cell.method.name}.predict",
                    "return value at the query points",
                    "be a Prediction",
                    type(pred_query),
                )
            pred_query.validate(
                int(np.shape(task.X_query)[0]), component=f"{cell.method.name}.predict (query)"
            )
    except UdbenchError as err:
        row["error"] = f"invalid prediction: {err}"
        row["finished_at"] = _now()
        return outcome
    try:
        metrics, notes = score_prediction(
            task, pred, constant_aleatoric=cell.method.constant_aleatoric, losses=losses
        )
    except Exception as err:
        row["error"] = f"scoring raised {_one_line(err)}"
        row["traceback"] = traceback.format_exc(limit=8)
        row["finished_at"] = _now()
        return outcome
    row.update(metrics)
    if measure is not None:
        try:
            row.update(measure(est, task))
        except Exception as err:
            why = f"measure raised {_one_line(err)}"
            notes = f"{notes}; {why}" if notes else why
    row["metric_notes"] = notes
    row["status"] = "ok"
    row["finished_at"] = _now()
    if keep_predictions:
        outcome.predictions = pd.DataFrame(
            {
                "eval_idx": np.asarray(task.eval_idx),
                "shell": np.asarray(task.shell_eval),
                "mean": np.asarray(pred.mean, dtype=np.float64),
                "aleatoric": np.asarray(pred.aleatoric, dtype=np.float64),
                "epistemic": np.asarray(pred.epistemic, dtype=np.float64),
            }
        )
        if pred_query is not None:  # query rows after the pool's, told apart by point_set
            query = pd.DataFrame(
                {
                    "eval_idx": np.asarray(task.query_idx),
                    "shell": np.full(len(pred_query.mean), -1, dtype=np.int64),
                    "mean": np.asarray(pred_query.mean, dtype=np.float64),
                    "aleatoric": np.asarray(pred_query.aleatoric, dtype=np.float64),
                    "epistemic": np.asarray(pred_query.epistemic, dtype=np.float64),
                }
            )
            outcome.predictions["point_set"] = "eval"
            query["point_set"] = "query"
            outcome.predictions = pd.concat([outcome.predictions, query], ignore_index=True)
    return outcome
