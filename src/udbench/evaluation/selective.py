"""Selective prediction of a classifier: accuracy as the most uncertain points are rejected.

A label-based proxy of uncertainty quality (Nadeem, Zucker & Hanczar 2009, "accuracy-rejection
curves"; Geifman & El-Yaniv 2017 use its complement, the risk–coverage curve): the n
evaluation points are rejected in order of decreasing uncertainty, and the mean per-point
score of the points kept is recorded at the rejection fractions 0, 1/n, …, (n − 1)/n. The
area under that curve (its mean over the n fractions) is high when the uncertainty puts the
misclassified points first. Points of equal uncertainty are rejected in random order and the
curve is its expectation over that order, computed exactly (no draw).

:func:`selective_columns` gives the two per-instance columns the analyses read
(:mod:`udbench.analyses.classification`): ``selective_auc_eu`` (rejecting by the method's EU)
and ``selective_auc_total`` (by AU + EU), both with the accuracy score.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from udbench._validation import check_array, check_choice, param_error
from udbench.risk import _checks

__all__ = ["SELECTIVE_COLUMNS", "SELECTIVE_SCORES", "selective_auc", "selective_columns"]

#: Per-point scores of :func:`selective_auc` and whether higher is better.
SELECTIVE_SCORES: dict[str, bool] = {"accuracy": True, "brier": False}
#: The per-instance columns of :func:`selective_columns`, in order.
SELECTIVE_COLUMNS: tuple[str, ...] = ("selective_auc_eu", "selective_auc_total")


def _point_scores(component: str, probs: Any, labels: Any, score: str) -> np.ndarray:
    p = _checks.simplex(component, "probs", probs, (None, None))
    n, k = p.shape
    y = np.asarray(labels)
    if y.shape != (n,):
        raise param_error(component, "labels", f"have shape ({n},)", f"shape {y.shape}")
    if y.dtype.kind not in "iu":
        raise param_error(component, "labels", "hold integers", f"dtype {y.dtype}")
    if n == 0:
        raise param_error(component, "probs", "have at least 1 row", p.shape)
    if y.min() < 0 or y.max() >= k:
        raise param_error(component, "labels", f"lie in 0 … {k - 1}", int(y[(y < 0) | (y >= k)][0]))
    if score == "accuracy":
        return (p.argmax(axis=1) == y).astype(np.float64)
    onehot = np.eye(k)[y]
    return ((p - onehot) ** 2).sum(axis=1)


def selective_auc(probs: Any, labels: Any, uncertainty: Any, *, score: str = "accuracy") -> float:
    """Area under the selective-prediction curve of one method on one task.

    With the points sorted by decreasing ``uncertainty`` and j of them rejected (j = 0 … n − 1),
    A_j is the mean per-point score of the n − j points kept; the area is
    (1/n) Σ_j A_j. Ties in ``uncertainty`` are rejected in random order and A_j is its
    expectation: when j cuts a tie group of size g and score sum S_g after q of its points, the
    group contributes q·S_g/g to the rejected sum.

    Parameters
    ----------
    probs : array_like, shape (n, K)
        The method's class probabilities π̂ (rows on the simplex).
    labels : array_like, shape (n,)
        Integer labels in 0 … K − 1 (drawn from π* at the evaluation points).
    uncertainty : array_like, shape (n,)
        What is rejected by (finite; higher = rejected first), e.g. the method's EU or AU + EU.
    score : {"accuracy", "brier"}, default "accuracy"
        Per-point score: 1[argmax_k π̂_k = y] (first index on ties; higher is better) or
        ‖π̂ − e_y‖² (lower is better).

    Returns
    -------
    float
        In [0, 1] for accuracy, [0, 2] for Brier. Uncertainty unrelated to the score gives,
        in expectation, the score's mean over all points; constant uncertainty gives it exactly.

    Raises
    ------
    UdbenchError
        Bad shapes, probabilities off the simplex, labels outside 0 … K − 1, non-finite
        uncertainty, an unknown score.
    """
    comp = "selective_auc"
    check_choice(comp, "score", score, list(SELECTIVE_SCORES))
    s = _point_scores(comp, probs, labels, score)
    n = s.size
    u = check_array(comp, "uncertainty", uncertainty, shape=(n,))
    order = np.argsort(-u, kind="stable")
    su, ss = u[order], s[order]
    starts = np.flatnonzero(np.r_[True, su[1:] != su[:-1]])
    sizes = np.diff(np.r_[starts, n])
    group_sums = np.add.reduceat(ss, starts)
    ends = starts + sizes
    j = np.arange(n)
    g = np.searchsorted(ends, j, side="right")  # the tie group the j-th rejection falls in
    before = np.r_[0.0, np.cumsum(group_sums)][g]  # score of the groups rejected entirely
    q = j - starts[g]
    rejected = before + q * group_sums[g] / sizes[g]
    kept = (ss.sum() - rejected) / (n - j)
    return float(kept.mean())


def selective_columns(probs: Any, labels: Any, aleatoric: Any, epistemic: Any) -> dict[str, float]:
    """The per-instance selective-prediction columns of a classifier's results row.

    Parameters
    ----------
    probs : array_like, shape (n, K)
    labels : array_like, shape (n,)
        As :func:`selective_auc`.
    aleatoric, epistemic : array_like, shape (n,)
        The method's AU and EU.

    Returns
    -------
    dict
        ``selective_auc_eu``: :func:`selective_auc` (accuracy) rejecting by EU;
        ``selective_auc_total``: rejecting by AU + EU.

    Raises
    ------
    UdbenchError
        As :func:`selective_auc`.
    """
    comp = "selective_columns"
    au = check_array(comp, "aleatoric", aleatoric, ndim=1)
    eu = check_array(comp, "epistemic", epistemic, shape=au.shape)
    return {
        "selective_auc_eu": selective_auc(probs, labels, eu),
        "selective_auc_total": selective_auc(probs, labels, au + eu),
    }
