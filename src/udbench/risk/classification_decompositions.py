"""Bregman decompositions of posterior risk for the classification losses (paper A.5, A.6).

The multiclass log loss and the Brier score, from reference-posterior draws ``prob_draws`` of
shape (D, n, K) of the class-probability vector π_F(x) and deployed class probabilities of
shape (n, K). Both return a :class:`~udbench.risk.decompositions.Decomposition` (the terms
and conventions of :mod:`udbench.risk.decompositions`); both are exact given the draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import entr, rel_entr

from udbench._validation import param_error
from udbench.risk import _checks
from udbench.risk.decompositions import Decomposition

__all__ = ["brier_decomposition", "multiclass_log_decomposition"]


def _class_inputs(name: str, prob_draws: Any, pred_probs: Any, positive: bool):
    p = _checks.simplex(name, "prob_draws", prob_draws, (None, None, None))
    if p.shape[0] < 2:
        raise param_error(name, "prob_draws", "have at least 2 draws", f"shape {p.shape}")
    q = _checks.simplex(name, "pred_probs", pred_probs, (p.shape[1], p.shape[2]), positive=positive)
    return p, q


def multiclass_log_decomposition(prob_draws: Any, pred_probs: Any) -> Decomposition:
    """Multiclass log-loss decomposition from draws of class probabilities (paper A.5).

    The deployed predictor is a class-probability vector π̂(x) in the simplex interior. With
    π̄ = mean_d π_d the centroid (posterior predictive):

    - AU = mean_d H(π_d) (expected entropy),
    - generalized variance = mean_d KL(π_d ‖ π̄) = I(Y; F) (mutual information / BALD),
    - deployment gap = KL(π̄ ‖ π̂),
    - total = −Σ_k π̄_k log π̂_k (computed directly).

    Parameters
    ----------
    prob_draws : array_like, shape (D, n, K)
        Reference-posterior draws of π_F(x); rows >= 0 summing to 1; D >= 2, K >= 2.
    pred_probs : array_like, shape (n, K)
        Deployed class probabilities, every entry > 0, rows summing to 1.

    Returns
    -------
    Decomposition
        Terms in nats (0 log 0 := 0).

    Raises
    ------
    UdbenchError
        Wrong shapes, NaN/inf, negative entries, rows not summing to 1, zero deployed entries.
    """
    p, q = _class_inputs("multiclass_log_decomposition", prob_draws, pred_probs, True)
    centroid = p.mean(axis=0)
    au = entr(p).sum(axis=-1).mean(axis=0)
    gv = rel_entr(p, centroid).sum(axis=-1).mean(axis=0)
    gap = rel_entr(centroid, q).sum(axis=-1)
    total = -(centroid * np.log(q)).sum(axis=-1)
    return Decomposition(
        "multiclass_log",
        au,
        gv,
        gap,
        total,
        "draws",
        n_draws=p.shape[0],
        estimator="exact given the draws",
    )


def brier_decomposition(prob_draws: Any, pred_probs: Any) -> Decomposition:
    """Multiclass Brier-score decomposition from draws of class probabilities (paper A.6).

    The deployed predictor is a class-probability vector π̂(x); ℓ(π, y) = ‖π − e_y‖². With
    π̄ = mean_d π_d:

    - AU = mean_d (1 − ‖π_d‖²) (expected Gini impurity),
    - generalized variance = mean_d ‖π_d − π̄‖²,
    - deployment gap = ‖π̄ − π̂‖²,
    - total = mean_d Σ_k π_dk ‖π̂ − e_k‖² (computed directly).

    Parameters
    ----------
    prob_draws : array_like, shape (D, n, K)
        Reference-posterior draws of π_F(x); rows >= 0 summing to 1.
    pred_probs : array_like, shape (n, K)
        Deployed class probabilities, rows >= 0 summing to 1.

    Returns
    -------
    Decomposition
        Terms on the Brier scale [0, 2].

    Raises
    ------
    UdbenchError
        Wrong shapes, NaN/inf, negative entries, rows not summing to 1.
    """
    p, q = _class_inputs("brier_decomposition", prob_draws, pred_probs, False)
    centroid = p.mean(axis=0)
    au = (1.0 - (p**2).sum(axis=-1)).mean(axis=0)
    gv = ((p - centroid) ** 2).sum(axis=-1).mean(axis=0)
    gap = ((centroid - q) ** 2).sum(axis=-1)
    # ‖π̂ − e_k‖² = ‖π̂‖² − 2 π̂_k + 1, averaged over k ~ π_d and then over d
    total = (q**2).sum(axis=-1)[None, :, None] - 2.0 * q[None] + 1.0
    total = (p * total).sum(axis=-1).mean(axis=0)
    return Decomposition(
        "brier", au, gv, gap, total, "draws", n_draws=p.shape[0], estimator="exact given the draws"
    )
