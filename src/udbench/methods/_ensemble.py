"""What the ensemble methods share: bagging resamples, and aggregating members into a mean, an
aleatoric and an epistemic variance.

Sister method modules share helpers through this module, never by importing each other
(``udbench._layers``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from udbench.methods.base import Prediction

__all__ = ["aggregate_members", "bagging_rows", "member_moments"]


def aggregate_members(means: np.ndarray, variances: np.ndarray) -> Prediction:
    """Moment-match an equally weighted mixture of Gaussian members (paper App. C.3, C.4).

    Parameters
    ----------
    means, variances : ndarray, shape (M, m)
        Member predictive means and variances (any consistent units).

    Returns
    -------
    Prediction
        ``mean = (1/M) Σ μ_m``, ``aleatoric = (1/M) Σ v_m`` and
        ``epistemic = (1/M) Σ (μ_m − mean)²`` (population variance, ddof = 0, so that
        AU + EU is the variance of the mixture; Lakshminarayanan et al., 2017).
    """
    means = np.asarray(means, dtype=np.float64)
    variances = np.asarray(variances, dtype=np.float64)
    mean = means.mean(axis=0)
    return Prediction(
        mean=mean,
        aleatoric=np.maximum(variances.mean(axis=0), 0.0),
        epistemic=np.mean((means - mean) ** 2, axis=0),
    )


def member_moments(
    members: Sequence[Any],
    X: np.ndarray,
    moments: Callable[[Any, np.ndarray], tuple[np.ndarray, np.ndarray]],
    loc: float,
    scale: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Stack the predictive means and variances of fitted members at ``X``.

    Parameters
    ----------
    members : sequence
        Fitted members; a ``float`` member (a resample with a constant target) predicts that
        constant with variance 0.
    X : ndarray, shape (m, d)
        Prediction inputs.
    moments : callable
        ``moments(member, X) -> (mean, variance)``, each shape (m,), in the members' units.
    loc, scale : float
        The members' target units are ``loc + scale * standardised``.

    Returns
    -------
    means, variances : ndarray, shape (M, m)
        In standardised target units (means ``(μ - loc) / scale``, variances ``v / scale²``).
    """
    means = np.empty((len(members), X.shape[0]))
    variances = np.empty_like(means)
    for i, member in enumerate(members):
        if isinstance(member, float):
            means[i], variances[i] = member, 0.0
        else:
            means[i], variances[i] = moments(member, X)
    return (means - loc) / scale, variances / scale**2


def bagging_rows(n: int, fraction: float, replace: bool, rng: np.random.Generator) -> np.ndarray:
    """Row indices of one bagging resample: ⌊fraction·n⌋ rows (at least 2), sorted.

    Drawn uniformly with replacement (bootstrap) or without (subsampling) from ``range(n)``
    (Breiman, 1996). Used by NGBoost-Bag and CatBoost-PS.

    Parameters
    ----------
    n : int
        Number of training rows.
    fraction : float
        Resample size as a share of ``n`` (callers validate it in their constructors).
    replace : bool
        Draw with replacement (bootstrap) or without (subsample; size capped at ``n``).
    rng : numpy.random.Generator
        The member's random stream.

    Returns
    -------
    ndarray of shape (max(2, ⌊fraction·n⌋),), int
        Sorted row indices (repeats possible when ``replace``).
    """
    size = max(2, int(np.floor(fraction * n)))
    if not replace:
        size = min(size, n)
    return np.sort(rng.choice(n, size=size, replace=replace))
