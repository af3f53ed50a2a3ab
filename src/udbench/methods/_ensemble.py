"""Aggregating ensemble members into a mean, an aleatoric and an epistemic variance."""

from __future__ import annotations

import numpy as np

from udbench.methods.base import Prediction

__all__ = ["aggregate_members"]


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
