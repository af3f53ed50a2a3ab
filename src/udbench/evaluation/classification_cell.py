"""One cell of a classification task: fit a classifier, predict, validate, score; one row.

:func:`udbench.evaluation.cell.evaluate_cell` hands a loaded classification task (family
``gpc``, docs/classification.md) to :func:`evaluate_classification`: the classifier is fitted
on ``(X_train, y_train)`` with the task's K (``fit(X, y, n_classes=K)``), predicts at
``X_eval`` under the multiclass log loss (AU and EU in nats), the prediction is validated
(π̂ of shape (n_eval, K), finite, ≥ 0, rows summing to 1 within
:data:`udbench.methods.classification.PROB_ATOL`; AU and EU finite and ≥ 0), the oracle
targets are computed from the task's reference draws ``draws_prob`` and ``pi_star_eval``
(:func:`udbench.risk.classification_oracle_targets`) and the row gets
:func:`udbench.evaluation.classification.classification_instance_metrics` against the
evaluation labels ``y_eval``.

A classification row has the regression row's id, timing and provenance columns
(:func:`udbench.evaluation.cell._base_row`), ``task_type = "classification"``,
``n_classes``, ``difficulty`` and ``loss``, and the metrics of
:data:`CLASSIFICATION_METRIC_KEYS` in place of the regression-only ones (RMSE, the proxies):
besides the instance metrics, the selective-prediction AUCs of
:func:`udbench.evaluation.selective.selective_columns` and the Spearman ρ of EU with EU*_risk
and EU*_var inside each coverage shell (as for regression,
:func:`udbench.evaluation.scoring._per_shell`). Every row also holds the Brier-score columns
(:data:`BRIER_METRIC_KEYS`, :func:`brier_metrics`): the same rank metrics against the oracle
targets of the multiclass Brier score, from the same prediction (its AU and EU stay the log
loss's, so these columns compare orderings only).
"""

from __future__ import annotations

import time
import traceback
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from udbench._validation import UdbenchError, param_error
from udbench.data import N_SHELLS
from udbench.evaluation._cell_parts import _now, _one_line, _Stage
from udbench.evaluation.losses import LOSS_METRIC_KEYS
from udbench.evaluation.metrics import RANK_METRIC_KEYS
from udbench.evaluation.proxies import PROXY_KEYS
from udbench.evaluation.scoring import METRIC_KEYS
from udbench.evaluation.selective import SELECTIVE_COLUMNS
from udbench.execution.executor import call_with_timeout
from udbench.methods.base import MethodOutputError

if TYPE_CHECKING:
    from udbench.methods.classification import BaseClassifier, ClassPrediction
    from udbench.tasks import Task

__all__ = [
    "BRIER_LOSS",
    "BRIER_METRIC_KEYS",
    "CLASSIFICATION_LOSS",
    "CLASSIFICATION_METRIC_KEYS",
    "brier_metrics",
    "classification_row",
    "evaluate_classification",
    "task_type_mismatch",
]

#: The loss a classification cell is scored under (AU, EU in nats; paper A.5).
CLASSIFICATION_LOSS = "multiclass_log"
#: The loss whose oracle targets every classification row also holds, in suffixed columns
#: (the multiclass Brier score, paper A.6; :func:`brier_metrics`).
BRIER_LOSS = "brier"
#: The Brier columns of a classification row: the keys of
#: :data:`udbench.evaluation.losses.LOSS_METRIC_KEYS` with the suffix ``_brier``, as a
#: regression loss names its columns (``rho_eu_risk_brier``, …, ``rho_eu_var_shell4_brier``).
BRIER_METRIC_KEYS: tuple[str, ...] = tuple(f"{k}_{BRIER_LOSS}" for k in LOSS_METRIC_KEYS)
#: The metric columns of a classification row (those of
#: :func:`~udbench.evaluation.classification.classification_instance_metrics`, the
#: ground-truth part of Δ_ent, ρ(EU*_t, AU*), as regression rows store it, the
#: selective-prediction AUCs of :func:`~udbench.evaluation.selective.selective_columns`,
#: the per-shell ρ(EU, EU*_risk) and ρ(EU, EU*_var), s = 0 … 4, and the Brier columns
#: :data:`BRIER_METRIC_KEYS`), in order.
CLASSIFICATION_METRIC_KEYS: tuple[str, ...] = (
    *RANK_METRIC_KEYS,
    "accuracy",
    "nll",
    "brier",
    "ece",
    "accuracy_bayes",
    *SELECTIVE_COLUMNS,
    *(f"rho_eu_{t}_shell{s}" for s in range(N_SHELLS) for t in ("risk", "var")),
    *BRIER_METRIC_KEYS,
)


# ``cell`` below is a :class:`udbench.evaluation.cell.Cell` and ``outcome`` its
# :class:`~udbench.evaluation.cell.CellOutcome` (typed Any: that module calls this one, and
# the import layers allow no cycle).
def task_type_mismatch(cell: Any, task: Task) -> str | None:
    """One line when the cell's method and task are of different types, else None."""
    method_type, task_type = str(cell.method.task_type), str(task.spec.task_type)
    if method_type == task_type:
        return None
    return (
        f"method {cell.method.name!r} is a {method_type} method and task "
        f"{task.spec.task_id!r} is a {task_type} task: a cell needs a method of the task's "
        "type (udbench methods lists both, by task type)"
    )


def classification_row(row: dict[str, Any], task: Task, losses: tuple[str, ...] = ()) -> None:
    """Turn a base row (regression layout) into a classification row, in place.

    ``losses`` are the regression losses of ``udbench run --loss``: their columns are
    dropped too (a classification cell is scored under the log loss, plus the Brier columns
    :data:`BRIER_METRIC_KEYS`).
    """
    from udbench.evaluation.losses import loss_columns

    drop = {k for k in (*METRIC_KEYS, *PROXY_KEYS) if k not in CLASSIFICATION_METRIC_KEYS}
    drop |= {k for loss in losses for k in loss_columns(loss)}
    notes = row.pop("metric_notes", None)
    for key in drop:
        row.pop(key, None)
    row["task_type"] = "classification"
    row["n_classes"] = int(task.spec.n_classes or 0)
    row["difficulty"] = task.spec.difficulty
    row["loss"] = CLASSIFICATION_LOSS
    for key in CLASSIFICATION_METRIC_KEYS:
        row.setdefault(key, float("nan"))
    row["metric_notes"] = notes


def _fit_predict(est: BaseClassifier, task: Task) -> tuple[Any, float, float]:
    t0 = time.perf_counter()
    try:
        est.fit(
            np.asarray(task.X_train),
            np.asarray(task.y_train),
            n_classes=int(task.spec.n_classes or 2),
        )
    except Exception as err:
        raise _Stage("fit", err) from err
    t1 = time.perf_counter()
    try:
        pred = est.predict(np.asarray(task.X_eval), loss=CLASSIFICATION_LOSS)
    except Exception as err:
        raise _Stage("predict", err) from err
    return pred, t1 - t0, time.perf_counter() - t1


def _check_prediction(cell: Any, pred: Any, n_eval: int, n_classes: int) -> ClassPrediction:
    """The classifier's output checked (a ClassPrediction on the simplex, AU/EU ≥ 0)."""
    from udbench.methods.classification import ClassPrediction

    comp = f"{cell.method.name}.predict"
    if not isinstance(pred, ClassPrediction):
        raise param_error(comp, "return value", "be a ClassPrediction", type(pred))
    if pred.loss != CLASSIFICATION_LOSS:
        raise param_error(comp, "loss", f"be {CLASSIFICATION_LOSS!r} (as asked)", pred.loss)
    return pred.validate(n_eval, n_classes, component=comp)


def _failed(row: dict[str, Any], error: str, tb: str | None = None) -> None:
    row["error"], row["finished_at"] = error, _now()
    if tb is not None:
        row["traceback"] = tb


def _run_error(result: BaseException) -> tuple[str, str]:
    """The row's one-line error and traceback of a fit/predict that raised."""
    if isinstance(result, _Stage) and isinstance(result.err, MethodOutputError):
        text = f"invalid prediction: {_one_line(result.err, with_type=False)}"
        return text, "".join(traceback.format_exception(result.err)[-12:])
    if isinstance(result, _Stage):
        text = f"{result.stage} raised {_one_line(result.err)}"
        return text, "".join(traceback.format_exception(result.err)[-12:])
    return f"raised {_one_line(result)}", "".join(traceback.format_exception(result)[-12:])


def _target_columns(
    eu: np.ndarray, targets: Any, shell: np.ndarray, suffix: str = ""
) -> tuple[dict[str, float], list[str]]:
    """ρ(EU*_t, AU*) per EU target t (the oracle's own part of Δ_ent, as regression rows store
    it) and the per-shell ρ(EU, EU*_risk), ρ(EU, EU*_var), against ``targets``, each key
    followed by ``suffix``; and the ``"key: reason"`` notes of the NaN values among the
    former."""
    from udbench.evaluation.metrics import spearman
    from udbench.evaluation.scoring import _per_shell

    out: dict[str, float] = {}
    reasons: list[str] = []
    stars = {"risk": targets.eu_risk, "var": targets.eu_var, "point": targets.eu_point}
    for key, star in stars.items():
        res = spearman(star, targets.au, names=(f"EU*_{key}", "AU*"))
        out[f"rho_eu_au_star_{key}{suffix}"] = res.value
        if res.reason is not None:
            reasons.append(f"rho_eu_au_star_{key}{suffix}: {res.reason}")
    eu_risk = np.asarray(targets.eu_risk, dtype=np.float64)
    shells = _per_shell(eu, eu_risk, np.asarray(targets.eu_var, dtype=np.float64), shell)
    out.update({f"{k}{suffix}": v for k, v in shells.items()})
    return out, reasons


def brier_metrics(
    pred: ClassPrediction,
    prob_draws: Any,
    pi_star: Any,
    shell: Any,
    *,
    constant_aleatoric: bool = False,
) -> tuple[dict[str, float], list[str]]:
    """The Brier-score columns of a classification row (:data:`BRIER_METRIC_KEYS`).

    The oracle targets are those of the multiclass Brier score for the prediction's own π̂
    (:func:`udbench.risk.classification_oracle_targets` with ``loss="brier"``: AU* the
    expected Gini impurity, EU*_var the expected squared spread of π_F, EU*_risk adding the
    deployment gap ‖π̄ − π̂‖², EU*_point ‖π* − π̂‖²; paper A.6). The method's AU and EU are
    those of the same prediction, made under the log loss (nats): every metric is a rank
    statistic, so a Brier column compares orderings only, whether the method's log-loss EU
    orders the points as the Brier EU* does (the units never meet). Each key of
    :data:`udbench.evaluation.losses.LOSS_METRIC_KEYS` gets the suffix ``_brier``, as a
    regression loss's columns do (``rho_eu_risk_crps``).

    Parameters
    ----------
    pred : ClassPrediction
        The validated prediction at the evaluation points (π̂ (n, K), AU and EU (n,)).
    prob_draws : array_like, shape (D, n, K)
        Reference-posterior draws of π_F at the evaluation points (the task's ``draws_prob``).
    pi_star : array_like, shape (n, K)
        The ground truth π* (the task's ``pi_star_eval``).
    shell : array_like, shape (n,)
        Coverage shell of each evaluation point (0 … 4).
    constant_aleatoric : bool, default False
        The method's AU is constant in x: its AU criteria are NaN with that reason.

    Returns
    -------
    metrics : dict
        ``<key>_brier`` for every key of ``LOSS_METRIC_KEYS`` (NaN where undefined).
    notes : list of str
        ``"<column>: reason"`` for the NaN values of the rank metrics.

    Raises
    ------
    UdbenchError
        The errors of :func:`udbench.risk.classification_oracle_targets` (shapes, draws
        off the simplex).
    """
    from udbench.evaluation.metrics import StatResult, uncertainty_rank_metrics
    from udbench.risk import classification_oracle_targets

    targets = classification_oracle_targets(prob_draws, pred.probs, pi_star, loss=BRIER_LOSS)
    suffix = f"_{BRIER_LOSS}"
    eu = np.asarray(pred.epistemic, dtype=np.float64)
    raw: dict[str, float] = {}
    reasons: list[str] = []

    def put(key: str, res: StatResult) -> None:
        raw[f"{key}{suffix}"] = res.value
        if res.reason is not None:
            reasons.append(f"{key}{suffix}: {res.reason}")

    uncertainty_rank_metrics(
        eu, np.asarray(pred.aleatoric, dtype=np.float64), targets, constant_aleatoric, put
    )
    more, why = _target_columns(eu, targets, np.asarray(shell), suffix)
    raw.update(more)
    return {k: float(raw[k]) for k in BRIER_METRIC_KEYS}, [*reasons, *why]


def _score(cell: Any, task: Task, pred: ClassPrediction) -> tuple[dict[str, Any], str | None]:
    """The metric columns of a validated prediction and the row's NaN notes (None if none):
    the log-loss metrics, the selective AUCs and per-shell ρ, then the Brier columns."""
    from udbench.evaluation.classification import classification_instance_metrics
    from udbench.evaluation.selective import selective_columns
    from udbench.risk import classification_oracle_targets
    from udbench.tasks.checks import missing_training_classes

    pred, floored = _floor_probs(pred)
    draws = np.asarray(task.draws_prob, dtype=np.float64)
    targets = classification_oracle_targets(
        draws, pred.probs, np.asarray(task.pi_star_eval), loss=CLASSIFICATION_LOSS
    )
    const = cell.method.constant_aleatoric
    metrics: dict[str, Any] = classification_instance_metrics(
        pred.probs,
        pred.aleatoric,
        pred.epistemic,
        targets,
        np.asarray(task.y_eval),
        constant_aleatoric=const,
    )
    reasons = [str(metrics.pop("nan_reasons") or "")]
    metrics.pop("loss", None)
    eu = np.asarray(pred.epistemic, dtype=np.float64)
    shell = np.asarray(task.shell_eval)
    star, why = _target_columns(eu, targets, shell)  # rho_eu_au_star_*, *_shell{s}
    metrics.update(star)
    reasons += why
    metrics.update(selective_columns(pred.probs, task.y_eval, pred.aleatoric, eu))
    brier, notes = brier_metrics(pred, draws, task.pi_star_eval, shell, constant_aleatoric=const)
    metrics.update(brier)
    k = int(np.asarray(task.pi_star_eval).shape[1])
    absent = missing_training_classes(np.asarray(task.y_train), k)
    if absent:  # a degenerate instance (docs/classification.md): said in every cell's row
        notes = [*notes, f"training labels hold {k - len(absent)} of {k} classes"]
    return metrics, "; ".join(r for r in (floored, *reasons, *notes) if r) or None


def _floor_probs(pred: ClassPrediction) -> tuple[ClassPrediction, str]:
    """π̂ with every probability below :data:`~udbench.methods.classification.PROB_FLOOR`
    raised to it and the rows renormalised, and the row's note saying how many points ("" if
    none). The log loss needs the simplex interior: a probability that underflowed to 0
    would make KL(π̄ ‖ π̂), EU*_risk and the NLL infinite (docs/classification.md)."""
    from dataclasses import replace

    from udbench.methods.classification import PROB_FLOOR

    probs = np.asarray(pred.probs, dtype=np.float64)
    low = probs < PROB_FLOOR
    if not low.any():
        return pred, ""
    fixed = np.maximum(probs, PROB_FLOOR)
    fixed /= fixed.sum(axis=1, keepdims=True)
    n_points = int(low.any(axis=1).sum())
    note = f"probabilities below {PROB_FLOOR:g} floored at {n_points} point(s) (log loss)"
    return replace(pred, probs=fixed), note


def evaluate_classification(
    cell: Any,
    task: Task,
    outcome: Any,
    *,
    keep_predictions: bool = False,
    timeout: float | None = None,
) -> Any:
    """Fit, predict, validate and score a classifier on a loaded classification task.

    Parameters
    ----------
    cell : Cell
        Its method is a classifier (``cell.method.task_type == "classification"``).
    task : Task
        A loaded classification task (``draws_prob``, ``pi_star_eval``, ``y_train``,
        ``y_eval``).
    outcome : CellOutcome
        Its ``row`` already holds the task coordinates (:func:`classification_row` layout);
        it is filled in place.
    keep_predictions : bool, default False
        Also return the per-point predictions: ``eval_idx, shell, aleatoric, epistemic``
        (nats) and ``prob_0 … prob_{K−1}``.
    timeout : float, optional
        Wall-clock limit in seconds for fit + predict.

    Returns
    -------
    CellOutcome
        ``outcome``; its row's ``status`` is ``"ok"`` or ``"failed"`` with a one-line
        ``error`` (never raises for the cell's own errors).
    """
    from sklearn.base import clone

    row = outcome.row
    est = clone(cell.method.estimator)
    if "random_state" in est.get_params(deep=False):
        est.set_params(random_state=cell.seed)
    finished, result = call_with_timeout(lambda: _fit_predict(est, task), timeout, dict(row))
    if not finished:
        _failed(row, f"timeout: fit + predict exceeded {timeout:g} s")
        outcome.timed_out = True
        return outcome
    if isinstance(result, BaseException):
        _failed(row, *_run_error(result))
        return outcome
    pred, fit_s, pred_s = result
    row["fit_time_s"], row["predict_time_s"] = float(fit_s), float(pred_s)
    n_eval, n_classes = int(np.shape(task.X_eval)[0]), int(task.spec.n_classes or 2)
    try:
        pred = _check_prediction(cell, pred, n_eval, n_classes)
    except (UdbenchError, MethodOutputError) as err:
        _failed(row, f"invalid prediction: {_one_line(err, with_type=False)}")
        return outcome
    try:
        metrics, notes = _score(cell, task, pred)
    except Exception as err:
        _failed(row, f"scoring raised {_one_line(err)}", traceback.format_exc(limit=8))
        return outcome
    row.update(metrics)
    row["metric_notes"] = notes
    row["status"], row["finished_at"] = "ok", _now()
    if keep_predictions:
        frame = pd.DataFrame(
            {
                "eval_idx": np.asarray(task.eval_idx),
                "shell": np.asarray(task.shell_eval),
                "aleatoric": np.asarray(pred.aleatoric, dtype=np.float64),
                "epistemic": np.asarray(pred.epistemic, dtype=np.float64),
            }
        )
        probs = np.asarray(pred.probs, dtype=np.float64)
        for k in range(probs.shape[1]):
            frame[f"prob_{k}"] = probs[:, k]
        outcome.predictions = frame
    return outcome
