"""The tuning objective (SPEC §9): held-out NLL on the training sample only.

One trial fits a configuration on a uniformly random 80 % of a condition's training sample
and scores it on the other 20 %. A regression method is scored by the mean Gaussian negative
log-likelihood

    NLL = mean_i [ ½ log(2π σ²_i) + (y_i − ŷ_i)² / (2 σ²_i) ],   σ²_i = AU_i + EU_i,

in nats per point (targets in their own units, so scores compare configurations of one
condition, not conditions). Only the total variance is scored, so nothing rewards a particular
split into AU and EU (paper, Appendix C, "Hyperparameter tuning").

A classifier (:class:`udbench.methods.classification.BaseClassifier`, on a classification
task) is scored by the mean categorical NLL of the held-out labels under its deployed
probabilities π̂ (:func:`categorical_nll`, nats per point; π̂ clipped below at
:data:`PROB_FLOOR`), the same split rule and seeds. Its AU and EU are not scored either.

:func:`evaluate_trial` runs on a worker (a child process of a Dask worker, like a cell): it
opens the task file and reads **only** ``X_train`` and ``y_train`` (the file's arrays are read
lazily, each on first access; evaluation points and oracle arrays are never read).
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from udbench._seeding import derive_seed
from udbench._threads import single_threaded
from udbench._validation import UdbenchError
from udbench.execution.executor import call_with_timeout
from udbench.methods.base import BaseMethod, Prediction
from udbench.methods.classification import PROB_FLOOR as CLASS_PROB_FLOOR
from udbench.methods.classification import BaseClassifier, ClassPrediction
from udbench.tasks import Task

__all__ = [
    "HOLDOUT_FRACTION",
    "PROB_FLOOR",
    "TRAIN_ARRAYS",
    "TrialJob",
    "TrialOutcome",
    "categorical_nll",
    "evaluate_trial",
    "gaussian_nll",
    "holdout_split",
    "read_training_sample",
]

#: Share of the training sample held out to score a configuration (SPEC §9).
HOLDOUT_FRACTION = 0.2

#: Floor of a held-out label's probability in :func:`categorical_nll` (the runner's scoring
#: uses the same, :data:`udbench.methods.classification.PROB_FLOOR`): a point scores at most
#: −log(1e-12) ≈ 27.6 nats, so one confidently wrong point makes a configuration bad, not
#: unscorable.
PROB_FLOOR = CLASS_PROB_FLOOR

#: The only arrays of a task file that tuning reads.
TRAIN_ARRAYS: tuple[str, ...] = ("X_train", "y_train")


def gaussian_nll(y: np.ndarray, mean: np.ndarray, var: np.ndarray) -> float:
    """Mean Gaussian negative log-likelihood of ``y`` under N(mean, var), nats per point.

    Parameters
    ----------
    y, mean, var : ndarray, shape (n,)
        Targets, predictive means and total predictive variances (target units, squared for
        ``var``).

    Returns
    -------
    float
        ``+inf`` when a variance is 0 (a point predicted with certainty and missed).
    """
    y, mean, var = (np.asarray(a, dtype=np.float64) for a in (y, mean, var))
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = 0.5 * np.log(2.0 * np.pi * var) + 0.5 * (y - mean) ** 2 / var
    if np.any(var <= 0):
        return float("inf")
    return float(np.mean(terms))


def categorical_nll(y: np.ndarray, probs: np.ndarray, floor: float = PROB_FLOOR) -> float:
    """Mean categorical negative log-likelihood −log max(π̂_i[y_i], floor), nats per point.

    Parameters
    ----------
    y : ndarray, shape (n,)
        Integer labels in 0 … K − 1.
    probs : ndarray, shape (n, K)
        Class probabilities (rows on the simplex, as a checked
        :class:`~udbench.methods.classification.ClassPrediction` holds).
    floor : float, default :data:`PROB_FLOOR`
        Lower clip of each held-out label's probability (so the score is finite).

    Returns
    -------
    float

    Raises
    ------
    UdbenchError
        ``probs`` not of shape (n, K) or a label outside 0 … K − 1.
    """
    labels = np.asarray(y, dtype=np.int64)
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] != labels.shape[0]:
        raise UdbenchError(
            f"categorical_nll: probs must have shape ({labels.shape[0]}, K); got {p.shape}"
        )
    if labels.size and (labels.min() < 0 or labels.max() >= p.shape[1]):
        raise UdbenchError(f"categorical_nll: labels must lie in 0 … {p.shape[1] - 1}")
    picked = p[np.arange(labels.shape[0]), labels]
    return float(np.mean(-np.log(np.maximum(picked, floor))))


def holdout_split(n: int, seed: int, fraction: float = HOLDOUT_FRACTION) -> tuple[Any, Any]:
    """A uniformly random split of ``n`` rows: ``(fit rows, held-out rows)``, each sorted.

    ``round(fraction * n)`` rows (at least 1) are held out, drawn by a NumPy ``Generator``
    seeded with ``seed`` (so every method of a condition sees the same split).

    Raises
    ------
    UdbenchError
        If fewer than 2 rows would remain to fit on.
    """
    n_hold = max(1, round(fraction * n))
    if n - n_hold < 2:
        raise UdbenchError(
            f"udbench tune: the training sample has {n} rows; the {fraction:.0%} hold-out "
            "split needs at least 2 rows left to fit on"
        )
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[n_hold:]), np.sort(perm[:n_hold])


def read_training_sample(task_path: str) -> tuple[np.ndarray, np.ndarray, str]:
    """``(X_train, y_train, train_sha256)`` of a task file, reading no other array.

    ``y_train`` is float64 targets for a regression task, int64 labels for a classification
    task.

    ``train_sha256`` is the SHA-256 of the two arrays' SHA-256s as stored in the file's
    metadata: it identifies the training sample (equal for the same instance at two fidelities
    or draw counts, which share f* and S).
    """
    X, y, sha, _ = _training_sample(task_path)
    return X, y, sha


def _training_sample(task_path: str) -> tuple[np.ndarray, np.ndarray, str, int | None]:
    """``(X_train, y_train, train_sha256, K)``: K and int64 labels for a classification
    task, None and float64 targets for a regression task."""
    task = Task.load(task_path)
    X = np.asarray(task.X_train, dtype=np.float64)
    if task.spec.task_type == "classification":
        return X, np.asarray(task.y_train, dtype=np.int64), train_sha256(task), task.spec.n_classes
    return X, np.asarray(task.y_train, dtype=np.float64), train_sha256(task), None


def train_sha256(task: Task) -> str:
    """SHA-256 identifying a task's training sample, from its metadata (no array read)."""
    import hashlib

    hashes = getattr(task, "_hashes", {})
    text = "|".join(str(hashes.get(name, "")) for name in TRAIN_ARRAYS)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class TrialJob:
    """One trial to evaluate: a configuration on a condition's training sample.

    Attributes
    ----------
    sweep : str
        ``"<method>/<condition>"`` (the driver's key).
    number : int
        Optuna's trial number within the sweep.
    task_path : str
        The task file whose training sample is used.
    estimator : BaseMethod or BaseClassifier
        The unfitted method with its base configuration (cloned for the trial); a
        classifier is scored by the categorical NLL (module docstring).
    params : dict
        The sampled hyperparameters, set on the clone.
    seed : int
        The method's ``random_state`` for this trial.
    split_seed : int
        Seed of the hold-out split (:func:`holdout_split`).
    train_sha256 : str
        Expected training-sample hash (a file changed since planning is a failed trial).
    pruning : PruningContext or None
        The pruner and the sweep's snapshot (:mod:`udbench.tuning.pruning`); None: the
        trial runs to the end.
    """

    sweep: str
    number: int
    task_path: str
    estimator: BaseMethod | BaseClassifier
    params: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    split_seed: int = 0
    train_sha256: str = ""
    pruning: Any = None


@dataclass
class TrialOutcome:
    """What a trial produced: its score, or why it failed, and how long it took.

    A pruned trial (:mod:`udbench.tuning.pruning`) has ``pruned_at`` (the step), ``value``
    its last intermediate NLL, and ``fit_time_s`` the time until it stopped.
    ``fit_time_s``/``predict_time_s`` are wall-clock seconds; ``cpu_time_s`` is the CPU time
    of the process that ran the trial, setup and scoring included (``time.process_time``), so
    a sweep resumed by another process still knows what its earlier trials cost.
    """

    value: float | None = None
    error: str | None = None
    traceback: str | None = None
    fit_time_s: float = float("nan")
    predict_time_s: float = float("nan")
    cpu_time_s: float = float("nan")
    n_fit: int = 0
    n_holdout: int = 0
    pruned_at: int | None = None
    intermediate: dict[int, float] = field(default_factory=dict)
    rung_attrs: dict[str, Any] = field(default_factory=dict)


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def trial_seed(method: str, condition: str, number: int) -> int:
    """The method's ``random_state`` in trial ``number`` of a sweep (32 bits)."""
    return derive_seed("tune-trial", method, condition, number, bits=32)


@single_threaded
def evaluate_trial(job: TrialJob, *, timeout: float | None = None) -> TrialOutcome:
    """Fit ``job``'s configuration on 80 % of the training sample; score the other 20 %.

    Never raises for a trial's own errors: a configuration the method rejects, a fit or
    predict that raises, an invalid prediction, a non-finite score or a timeout give a
    :class:`TrialOutcome` with ``value = None`` and a one-line ``error``. A classifier's
    invalid probabilities (off the simplex, NaN, a wrong shape: its ``predict`` raises
    :class:`~udbench.methods.base.MethodOutputError`) are such a failed trial.

    Parameters
    ----------
    job : TrialJob
    timeout : float, optional
        Wall-clock limit of fit + predict in seconds.
    """
    c0 = time.process_time()
    out = _evaluate(job, timeout)
    out.cpu_time_s = time.process_time() - c0
    return out


def _evaluate(job: TrialJob, timeout: float | None) -> TrialOutcome:
    """:func:`evaluate_trial` without its CPU clock."""
    out = TrialOutcome()
    try:
        X, y, sha, n_classes = _training_sample(job.task_path)
        if job.train_sha256 and sha != job.train_sha256:
            raise UdbenchError("the task file's training sample changed since the sweep began")
        fit_rows, hold_rows = holdout_split(len(y), job.split_seed)
        out.n_fit, out.n_holdout = len(fit_rows), len(hold_rows)
        from sklearn.base import clone

        est = clone(job.estimator)
        params = dict(job.params)
        if "random_state" in est.get_params(deep=False):
            params["random_state"] = job.seed
        est.set_params(**params)
        reporter = None
        if job.pruning is not None:
            from udbench.tuning.pruning import TrialReporter

            reporter = TrialReporter(job.pruning, X[hold_rows], y[hold_rows], gaussian_nll)
    except Exception as err:
        out.error = f"setup raised {_one_line(err)}"
        out.traceback = traceback.format_exc(limit=8)
        return out

    def fit_predict() -> tuple[Prediction | ClassPrediction | None, float, float]:
        from udbench.methods._progress import TrainingStopped, reporting

        t0 = time.perf_counter()
        try:
            with reporting(reporter):
                if isinstance(est, BaseClassifier):
                    est.fit(X[fit_rows], y[fit_rows], n_classes=n_classes)
                else:
                    est.fit(X[fit_rows], y[fit_rows])
        except TrainingStopped:
            return None, time.perf_counter() - t0, 0.0
        t1 = time.perf_counter()
        pred = est.predict(X[hold_rows])
        return pred, t1 - t0, time.perf_counter() - t1

    finished, result = call_with_timeout(fit_predict, timeout, None)
    if reporter is not None:
        out.intermediate = dict(reporter.intermediate)
        out.rung_attrs = reporter.system_attrs()
    if not finished:
        out.error = f"timeout: fit + predict exceeded {timeout:g} s"
        return out
    if isinstance(result, BaseException):
        out.error = f"fit/predict raised {_one_line(result)}"
        out.traceback = "".join(traceback.format_exception(result)[-12:])
        return out
    pred, out.fit_time_s, out.predict_time_s = result
    if pred is None:  # pruned: its value is the last intermediate score
        assert reporter is not None and reporter.pruned_at is not None
        out.pruned_at = reporter.pruned_at
        out.value = reporter.intermediate[reporter.pruned_at]
        return out
    out.value, out.error = _score(pred, y[hold_rows], n_classes)
    return out


def _score(
    pred: Prediction | ClassPrediction, y: np.ndarray, n_classes: int | None
) -> tuple[float | None, str | None]:
    """``(held-out NLL, None)``, or ``(None, why)`` for a prediction that cannot be scored."""
    if isinstance(pred, ClassPrediction):
        try:  # predict checks it already; a classifier that skips the check is caught here
            pred.validate(len(y), n_classes, component="tuning trial")
        except Exception as err:
            return None, f"invalid class probabilities: {_one_line(err)}"
        return categorical_nll(y, pred.probs), None
    score = gaussian_nll(y, pred.mean, pred.total)
    if not np.isfinite(score):
        return None, f"held-out Gaussian NLL is not finite ({score}): a zero total variance"
    return score, None
