"""Oracle targets per evaluation point under squared loss (SPEC §1, paper B.6)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from udbench._validation import check_array
from udbench.risk.decompositions import squared_loss_decomposition_gaussian

__all__ = ["OracleTargets", "oracle_targets"]


@dataclass(frozen=True, eq=False)
class OracleTargets:
    """Ground-truth uncertainty targets at n evaluation points (SPEC §1 table).

    Attributes
    ----------
    au : ndarray, shape (n,)
        AU* = σ²(x), the noise variance (target units²).
    eu_risk : ndarray, shape (n,)
        EU*_risk = σ_f²(x) + (â(x) − m_S(x))², posterior excess risk (primary EU target).
    eu_var : ndarray, shape (n,)
        EU*_var = σ_f²(x), reference-posterior variance.
    eu_point : ndarray, shape (n,)
        EU*_point = (â(x) − f*(x))², pointwise excess risk.
    total_risk : ndarray, shape (n,)
        R_S(â; x) = AU* + EU*_risk.
    f_star : ndarray, shape (n,)
        The ground truth f*(x) (kept for accuracy metrics such as NMSE).
    """

    au: np.ndarray
    eu_risk: np.ndarray
    eu_var: np.ndarray
    eu_point: np.ndarray
    total_risk: np.ndarray
    f_star: np.ndarray

    @property
    def n(self) -> int:
        """Number of evaluation points."""
        return int(self.au.shape[0])


def oracle_targets(
    pred_mean: Any, post_mean: Any, post_var: Any, noise_var: Any, f_star: Any
) -> OracleTargets:
    """Compute the oracle targets of SPEC §1 for one method's point prediction.

    R_S(â; x) = σ²(x) + σ_f²(x) + (â(x) − m_S(x))²  (SPEC §1; paper Section 2.1, A.2, B.6).

    Parameters
    ----------
    pred_mean : array_like, shape (n,)
        The method's point prediction â(x), target units.
    post_mean : array_like, shape (n,)
        Reference-posterior mean m_S(x).
    post_var : array_like, shape (n,)
        Reference-posterior variance σ_f²(x) >= 0, target units².
    noise_var : array_like, shape (n,)
        Noise variance σ²(x) >= 0, target units².
    f_star : array_like, shape (n,)
        Ground-truth function values f*(x).

    Returns
    -------
    OracleTargets
        Arrays of shape (n,), float64.

    Raises
    ------
    UdbenchError
        Mismatched shapes, NaN/inf, negative variances (the message names the argument).
    """
    name = "oracle_targets"
    a = check_array(name, "pred_mean", pred_mean, ndim=1)
    n = (a.shape[0],)
    m = check_array(name, "post_mean", post_mean, shape=n)
    v = check_array(name, "post_var", post_var, shape=n, nonnegative=True)
    s2 = check_array(name, "noise_var", noise_var, shape=n, nonnegative=True)
    f = check_array(name, "f_star", f_star, shape=n)
    # the squared-loss decomposition is the one place the formula is written (paper A.2)
    dec = squared_loss_decomposition_gaussian(m, v, s2, a)
    eu_risk = dec.eu  # σ_f² + (â − m)²
    return OracleTargets(
        au=dec.au,
        eu_risk=eu_risk,
        eu_var=dec.generalized_variance,
        eu_point=(a - f) ** 2,
        total_risk=dec.au + eu_risk,
        f_star=f.copy(),
    )
