"""Per-instance metrics of a classifier on a classification task (docs/spec.md §11).

The regression metrics of SPEC §10 (Spearman ρ of EU with each EU target and of AU with AU*,
excess entanglement Δ_ent per EU target; :mod:`udbench.evaluation.metrics`) plus the usual
accuracy figures against labels drawn from π* at the evaluation points: accuracy, negative
log-likelihood (NLL), Brier score and the top-label expected calibration error (ECE). Plain
arrays in, a flat dict out; NaN values carry their reason in ``nan_reasons`` as in
:func:`udbench.evaluation.metrics.instance_metrics`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from udbench._validation import check_array, param_error
from udbench.evaluation.metrics import StatResult, uncertainty_rank_metrics
from udbench.risk import _checks
from udbench.risk.classification import ClassificationTargets

__all__ = [
    "ECE_N_BINS",
    "classification_instance_metrics",
    "expected_calibration_error",
    "label_metrics",
]

#: Equal-width confidence bins of the ECE (Guo et al. 2017 use 15).
ECE_N_BINS: int = 15


def _labels(component: str, labels: Any, n: int, n_classes: int) -> np.ndarray:
    raw = np.asarray(labels)
    if raw.shape != (n,):
        raise param_error(component, "labels", f"have shape ({n},)", f"shape {raw.shape}")
    if raw.dtype.kind not in "iu":
        raise param_error(component, "labels", "hold integers", f"dtype {raw.dtype}")
    if raw.size and (raw.min() < 0 or raw.max() >= n_classes):
        bad = raw[(raw < 0) | (raw >= n_classes)][0]
        raise param_error(component, "labels", f"lie in 0 … {n_classes - 1}", int(bad))
    return raw.astype(np.int64)


def expected_calibration_error(probs: Any, labels: Any, n_bins: int = ECE_N_BINS) -> float:
    """Top-label expected calibration error (Naeini et al. 2015; Guo et al. 2017, eq. 3).

    The confidence c_i = max_k π̂_ik and the correctness a_i = [argmax_k π̂_ik = y_i] are
    grouped into ``n_bins`` equal-width bins of (0, 1] (bin b holds c ∈ ((b−1)/B, b/B]);
    ECE = Σ_b (n_b / n)·|mean_b a − mean_b c|.

    Parameters
    ----------
    probs : array_like, shape (n, K)
        Predicted class probabilities (rows on the simplex).
    labels : array_like, shape (n,)
        Integer labels in 0 … K − 1.
    n_bins : int, default 15

    Returns
    -------
    float
        In [0, 1].

    Raises
    ------
    UdbenchError
        Bad shapes, probabilities off the simplex, labels outside 0 … K − 1, n_bins < 1.
    """
    comp = "expected_calibration_error"
    p = _checks.simplex(comp, "probs", probs, (None, None))
    y = _labels(comp, labels, p.shape[0], p.shape[1])
    if isinstance(n_bins, bool) or not isinstance(n_bins, int | np.integer) or n_bins < 1:
        raise param_error(comp, "n_bins", "be an integer >= 1", n_bins)
    if p.shape[0] == 0:
        raise param_error(comp, "probs", "have at least 1 row", p.shape)
    conf = p.max(axis=1)
    correct = (p.argmax(axis=1) == y).astype(np.float64)
    bins = np.clip(np.ceil(conf * n_bins).astype(np.int64) - 1, 0, n_bins - 1)
    total = 0.0
    for b in range(int(n_bins)):
        sel = bins == b
        if sel.any():
            total += sel.mean() * abs(correct[sel].mean() - conf[sel].mean())
    return float(total)


def label_metrics(probs: Any, labels: Any, n_bins: int = ECE_N_BINS) -> dict[str, float]:
    """Accuracy, NLL, Brier score and ECE of predicted probabilities against labels.

    Parameters
    ----------
    probs : array_like, shape (n, K)
        π̂, rows on the simplex (NLL is +inf where π̂_y = 0).
    labels : array_like, shape (n,)
    n_bins : int, default 15

    Returns
    -------
    dict
        ``accuracy`` (share of argmax_k π̂_k = y, first index on ties), ``nll``
        (−mean log π̂_y, nats), ``brier`` (mean ‖π̂ − e_y‖²), ``ece``
        (:func:`expected_calibration_error`).

    Raises
    ------
    UdbenchError
        As :func:`expected_calibration_error`.
    """
    comp = "label_metrics"
    p = _checks.simplex(comp, "probs", probs, (None, None))
    y = _labels(comp, labels, p.shape[0], p.shape[1])
    py = p[np.arange(p.shape[0]), y]
    with np.errstate(divide="ignore"):
        nll = float(-np.mean(np.log(py)))
    onehot = np.eye(p.shape[1])[y]
    return {
        "accuracy": float(np.mean(p.argmax(axis=1) == y)),
        "nll": nll,
        "brier": float(np.mean(((p - onehot) ** 2).sum(axis=1))),
        "ece": expected_calibration_error(p, y, n_bins),
    }


def classification_instance_metrics(
    probs: Any,
    aleatoric: Any,
    epistemic: Any,
    targets: ClassificationTargets,
    labels: Any,
    *,
    constant_aleatoric: bool = False,
) -> dict[str, float | str]:
    """The per-(task, method) row of a classifier (SPEC §10 metrics + label metrics).

    Parameters
    ----------
    probs : array_like, shape (n, K)
        The method's π̂ at the evaluation points.
    aleatoric, epistemic : array_like, shape (n,)
        The method's AU and EU, in the units of ``targets.loss`` (finite; the metrics are
        rank statistics).
    targets : udbench.risk.ClassificationTargets
        From :func:`udbench.risk.classification_oracle_targets` with the same ``probs``.
    labels : array_like, shape (n,)
        Labels drawn from π* at the evaluation points.
    constant_aleatoric : bool, default False
        The method's AU is constant by construction: its AU criteria are NaN with that reason.

    Returns
    -------
    dict
        ``rho_eu_risk``, ``rho_eu_var``, ``rho_eu_point``, ``rho_au``, ``delta_ent_risk``,
        ``delta_ent_var``, ``delta_ent_point``, ``rho_eu_au``, ``accuracy``, ``nll``,
        ``brier``, ``ece``, ``accuracy_bayes`` (accuracy of argmax π* on the same labels:
        the Bayes classifier's, for reference), ``loss`` (``targets.loss``) and
        ``nan_reasons``.

    Raises
    ------
    UdbenchError
        Mismatched lengths, NaN/inf, bad probabilities or labels.
    """
    comp = "classification_instance_metrics"
    n = targets.n
    p = _checks.simplex(comp, "probs", probs, (n, targets.pi_star.shape[1]))
    au = check_array(comp, "aleatoric", aleatoric, shape=(n,))
    eu = check_array(comp, "epistemic", epistemic, shape=(n,))
    out: dict[str, float | str] = {}
    reasons: list[str] = []

    def put(key: str, res: StatResult) -> None:
        out[key] = res.value
        if res.reason is not None:
            reasons.append(f"{key}: {res.reason}")

    uncertainty_rank_metrics(eu, au, targets, constant_aleatoric, put)
    lab = label_metrics(p, labels)
    out.update(lab)
    y = _labels(comp, labels, n, p.shape[1])
    out["accuracy_bayes"] = float(np.mean(targets.pi_star.argmax(axis=1) == y))
    out["loss"] = targets.loss
    out["nan_reasons"] = "; ".join(reasons)
    return out
