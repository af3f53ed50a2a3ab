"""Estimators shared by the regression decompositions of :mod:`udbench.risk.decompositions`.

Gaussian mean absolute values, the fair pairwise mean absolute difference of samples, a
guarded one-pass variance, the control variate of the mixture log score and the seeded
outcome noise. The two public ones are re-exported by :mod:`udbench.risk`.
"""

from __future__ import annotations

import numpy as np
import scoringrules as sr

from udbench._seeding import make_rng
from udbench._validation import check_array, param_error

__all__ = ["fair_mean_abs_difference", "mean_abs_normal"]

_SQRT_PI = float(np.sqrt(np.pi))

#: The one-pass variance is used where mean² <= this ratio times the variance (<= 6 digits lost).
_ONE_PASS_MAX_RATIO = 1e6


def mean_abs_normal(delta: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """E|Z| for Z ~ N(delta, scale²), elementwise (broadcasting); scale >= 0 (0 gives |delta|).

    Uses ``scoringrules.crps_normal``: CRPS(N(0, s²), δ) = E|X − δ| − s/√π with X ~ N(0, s²),
    so E|N(δ, s²)| = CRPS(N(0, s²), δ) + s/√π (closed form of the Gaussian
    CRPS: Gneiting, Raftery, Westveld & Goldman 2005, Mon. Weather Rev. 133).
    """
    delta = np.asarray(delta, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    degenerate = scale == 0.0  # a point mass: E|δ| = |δ| (crps_normal would divide by 0)
    if not np.any(degenerate):
        return np.asarray(sr.crps_normal(delta, 0.0, scale), dtype=np.float64) + scale / _SQRT_PI
    safe = np.where(degenerate, 1.0, scale)
    kernel = np.asarray(sr.crps_normal(delta, 0.0, safe), dtype=np.float64) + safe / _SQRT_PI
    return np.where(degenerate, np.abs(delta), kernel)


def fair_mean_abs_difference(samples: np.ndarray) -> np.ndarray:
    """Unbiased mean |Y_i − Y_j| over ordered pairs i ≠ j, along axis 0 of (D, n) samples.

    Sorted-sample identity: Σ_{i<j} |y_(j) − y_(i)| = Σ_i (2i − D − 1) y_(i) (i = 1..D), so the
    cost is O(D log D) per column and no D × D array is formed. Returns shape (n,).

    Raises
    ------
    UdbenchError
        ``samples`` not 2-D, with fewer than 2 rows, or with NaN/inf entries.
    """
    name = "fair_mean_abs_difference"
    samples = check_array(name, "samples", samples, ndim=2)
    d = samples.shape[0]
    if d < 2:  # no pair i != j: the mean would be 0/0
        raise param_error(
            name, "samples", "have at least 2 rows (samples)", f"shape {samples.shape}"
        )
    return _ordered_pair_sum(samples) / (d * (d - 1))


def _ordered_pair_sum(samples: np.ndarray) -> np.ndarray:
    """Σ_{i ≠ j} |y_i − y_j| over ordered pairs along axis 0 (sorted-sample identity)."""
    d = samples.shape[0]
    weights = 2.0 * np.arange(1, d + 1, dtype=np.float64) - d - 1.0
    return 2.0 * np.tensordot(weights, np.sort(samples, axis=0), axes=(0, 0))


def _variance_about(draws: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Variance (divisor D) along axis 0 of (D, n) draws whose column means are ``mean``.

    Fast path: the one-pass moment E[f²] − m̄², which loses about log10(m̄²/var) digits; columns
    where that loss could exceed 6 digits (m̄² > 1e6·var) are recomputed from centred draws.
    """
    d = draws.shape[0]
    var = np.einsum("dn,dn->n", draws, draws) / d - mean * mean
    unsafe = ~(var * _ONE_PASS_MAX_RATIO > mean * mean)
    if np.any(unsafe):
        cols = np.flatnonzero(unsafe)
        centred = draws[:, cols] - mean[cols]
        var[cols] = np.einsum("dn,dn->n", centred, centred) / d
    return var


def _control_variate(scores: np.ndarray, eps2: np.ndarray) -> np.ndarray:
    """The mixture entropy H(p̄) per point from M outcome scores −log p̄(Y_m), shape (M, k).

    Control variate: c_m = ε_m²/2 − ½ (so that −log p_d(Y_m) − AU = c_m for the draw d that made
    Y_m) has mean exactly 0. The estimate is mean(s) − β·mean(c) with β the per-point
    regression coefficient Cov(s, c)/Var(c) (Glasserman 2003, §4.1). It removes the noise of
    ε²/2, which otherwise dominates I(Y; F) when σ_f² ≪ σ² (an SD near 0.7/√M nats); β is 1
    there and falls as the mixture widens, so the estimate is never noisier than the plain mean
    (up to O(1/M)).
    """
    c = 0.5 * eps2 - 0.5
    cc = c - c.mean(axis=0)
    sc = scores - scores.mean(axis=0)
    var_c = np.einsum("mk,mk->k", cc, cc)
    beta = np.where(var_c > 0, np.einsum("mk,mk->k", sc, cc) / np.where(var_c > 0, var_c, 1), 0)
    return scores.mean(axis=0) - beta * c.mean(axis=0)


def _noise_samples(draws: np.ndarray, noise_sd: np.ndarray, loss: str, random_state: int):
    rng = make_rng("risk", loss, "noise", int(random_state))
    return draws + noise_sd * rng.standard_normal(draws.shape)
