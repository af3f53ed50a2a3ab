"""Bregman decompositions of sample-conditional posterior risk for five losses.

For an evaluation point x, a reference posterior over generative functions F and a deployed
action â, the posterior risk splits into three terms (paper Eq. 4, Appendix A.1)::

    R_S(â; x) = E_F[R*_F(x)]  +  E_F[D(a_F || ā_ref)]  +  D(ā_ref || â)
                AU               generalized variance      deployment gap

where a_F is the conditional Bayes act under F and ā_ref the posterior centroid (the Bayes act
of the posterior predictive). Every function here works per evaluation point on plain arrays
and returns a :class:`Decomposition` with arrays of shape (n,).

Inputs
------
Regression (squared loss, CRPS, continuous log score): ``draws`` of shape (D, n) are draws of
the conditional mean f(x) from the reference posterior; the noise law is Gaussian,
``Y | F ~ N(F(x), noise_var)`` with ``noise_var`` of shape (n,) independent of F (SPEC §4).
Classification (multiclass log loss, Brier score): ``prob_draws`` of shape (D, n, K) are draws
of the class-probability vector π_F(x); those two live in
:mod:`udbench.risk.classification_decompositions` (all five are re-exported by
:mod:`udbench.risk`).

Draw-based estimates treat the D draws as the reference posterior (its empirical measure);
the only exception is the CRPS, whose pairwise term uses the unbiased ("fair") energy form over
pairs of distinct draws. In every case AU + generalized variance + deployment gap equals the
returned total up to floating-point rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scoringrules as sr

from udbench._seeding import make_rng
from udbench._validation import check_array, check_seed, param_error
from udbench.risk import _checks
from udbench.risk._estimators import (
    _SQRT_PI,
    _control_variate,
    _noise_samples,
    _ordered_pair_sum,
    _variance_about,
    fair_mean_abs_difference,
    mean_abs_normal,
)

__all__ = [
    "Decomposition",
    "crps_decomposition",
    "crps_decomposition_gaussian",
    "fair_mean_abs_difference",
    "log_score_decomposition",
    "log_score_decomposition_gaussian",
    "mean_abs_normal",
    "squared_loss_decomposition",
    "squared_loss_decomposition_gaussian",
]

_LOG_2PI = float(np.log(2.0 * np.pi))

#: Points per block in the draw-based CRPS (bounds the temporaries to D x 32 entries).
_CRPS_BLOCK = 32

#: Largest number of float64 entries one chunk of the mixture log score may hold (32 MiB).
_MIXTURE_CHUNK_ENTRIES = 1 << 22


@dataclass(frozen=True, eq=False)
class Decomposition:
    """Per-point decomposition of posterior risk (paper Eq. 4, Table 2).

    Attributes
    ----------
    loss : str
        ``"squared"``, ``"crps"``, ``"log"``, ``"multiclass_log"`` or ``"brier"``.
    au : ndarray, shape (n,)
        Aleatoric term E_F[R*_F(x)], the posterior expected Bayes risk.
    generalized_variance : ndarray, shape (n,)
        E_F[D(a_F || ā_ref)]: spread of the plausible conditional laws around the centroid.
    deployment_gap : ndarray, shape (n,)
        D(ā_ref || â): divergence of the deployed action from the centroid.
    total : ndarray, shape (n,)
        Posterior risk E_F E_{Y|F} ℓ(â, Y), computed directly (not as the sum of the terms),
        except for the squared loss from draws (see there).
    method : str
        ``"draws"`` or ``"closed_form"``.
    n_draws : int or None
        Number D of reference-posterior draws used (None for closed forms).
    n_samples : int or None
        Number of outcome samples per point used by a Monte Carlo term (CRPS pairwise term,
        log-score mixture entropy); None when every term is exact given the draws.
    estimator : str
        Short description of how the terms were computed.
    """

    loss: str
    au: np.ndarray
    generalized_variance: np.ndarray
    deployment_gap: np.ndarray
    total: np.ndarray
    method: str
    n_draws: int | None = None
    n_samples: int | None = None
    estimator: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def eu(self) -> np.ndarray:
        """Epistemic term: generalized variance + deployment gap, shape (n,)."""
        return self.generalized_variance + self.deployment_gap


# --------------------------------------------------------------------------- squared
def squared_loss_decomposition(draws: Any, noise_var: Any, prediction: Any) -> Decomposition:
    """Squared-loss decomposition from reference-posterior draws (paper A.2, SPEC §1).

    The deployed predictor is a point prediction â(x). With additive noise of variance σ²(x),
    R = σ² + E_F(F − m̄)² + (â − m̄)² with m̄ the mean of the draws (the posterior centroid).

    Parameters
    ----------
    draws : array_like, shape (D, n)
        Reference-posterior draws of f(x) (the conditional mean), target units; D >= 2.
    noise_var : array_like, shape (n,)
        Noise variance σ²(x), target units squared, >= 0.
    prediction : array_like, shape (n,)
        Deployed point prediction â(x), target units.

    Returns
    -------
    Decomposition
        au = σ², generalized_variance = variance of the draws (divisor D), deployment_gap =
        (â − m̄)², total = σ² + mean_d (f_d − â)², all in target units² (the total is formed
        by the compensation identity, which is exact for the empirical measure of the draws).

    Raises
    ------
    UdbenchError
        Wrong shapes, NaN/inf, fewer than 2 draws, negative ``noise_var``.
    """
    name = "squared_loss_decomposition"
    # finiteness of the draws is checked on the per-point moments (one pass fewer): a NaN/inf
    # draw makes its column's moments non-finite
    f = _checks.regression_draws(name, draws, finite=False)
    n = f.shape[1]
    s2 = _checks.vector(name, "noise_var", noise_var, n, nonnegative=True)
    a = _checks.vector(name, "prediction", prediction, n)
    with np.errstate(invalid="ignore", over="ignore"):  # non-finite input is reported below
        centroid = f.mean(axis=0)
        gv = _variance_about(f, centroid)
    if not np.all(np.isfinite(gv)):
        _checks.raise_nonfinite(name, "draws", f)
    gap = (a - centroid) ** 2
    # E_F (F − â)² = E_F (F − m̄)² + (m̄ − â)² holds exactly for the empirical measure
    total = s2 + gv + gap
    return Decomposition(
        "squared",
        s2.copy(),
        gv,
        gap,
        total,
        "draws",
        n_draws=f.shape[0],
        estimator="exact moments of the empirical posterior",
    )


def squared_loss_decomposition_gaussian(
    post_mean: Any, post_var: Any, noise_var: Any, prediction: Any
) -> Decomposition:
    """Squared-loss decomposition in closed form: σ² + σ_f² + (â − m)² (paper A.2, B.6).

    Only the posterior mean m(x) and variance σ_f²(x) enter, so this is exact for any reference
    posterior, Gaussian or not.

    Parameters
    ----------
    post_mean, post_var : array_like, shape (n,)
        Reference-posterior mean and variance (>= 0) of f(x).
    noise_var : array_like, shape (n,)
        Noise variance σ²(x) >= 0.
    prediction : array_like, shape (n,)
        Deployed point prediction â(x).

    Returns
    -------
    Decomposition
        Terms in target units².

    Raises
    ------
    UdbenchError
        Wrong shapes, NaN/inf, negative variances.
    """
    name = "squared_loss_decomposition_gaussian"
    m = _first_vector(name, "post_mean", post_mean)
    n = m.shape[0]
    v = _checks.vector(name, "post_var", post_var, n, nonnegative=True)
    s2 = _checks.vector(name, "noise_var", noise_var, n, nonnegative=True)
    a = _checks.vector(name, "prediction", prediction, n)
    gap = (a - m) ** 2
    return Decomposition(
        "squared",
        s2.copy(),
        v.copy(),
        gap,
        s2 + v + gap,
        "closed_form",
        estimator="closed form (A.2)",
    )


# --------------------------------------------------------------------------- CRPS
def crps_decomposition(
    draws: Any,
    noise_var: Any,
    pred_mean: Any,
    pred_var: Any,
    *,
    n_noise: int = 1,
    random_state: int = 0,
) -> Decomposition:
    """CRPS decomposition from reference-posterior draws (paper A.3).

    The deployed predictor is a Gaussian predictive distribution Ĝ = N(μ̂(x), ŝ²(x)); the
    reference conditional laws are G_F = N(F(x), σ²(x)) and the centroid is the posterior
    predictive mixture Ḡ = mean_d G_d. With E|·| written through the energy form
    ∫(G₁ − G₂)² = E|X₁ − X₂| − ½E|X₁ − X₁'| − ½E|X₂ − X₂'| (A.3, "Computation"):

    - AU = σ/√π exactly (Gaussian noise, A.3 "Aleatoric term");
    - total = mean_d E|N(f_d − μ̂, σ² + ŝ²)| − ŝ/√π, exact given the draws;
    - generalized variance = ½ P − σ/√π and deployment gap = total − AU − generalized variance,
      where P = E|Y − Y'| for Y, Y' from two *distinct* posterior draws. P is estimated with the
      unbiased (fair) estimator over all pairs of outcome samples Y_dk = f_d + σ ε_dk
      (k = 1..K = ``n_noise`` per draw) that come from different draws d ≠ d', using the
      sorted-sample identity (O(KD log KD) per point; no D × D array is formed).

    Only the split of EU into its two terms depends on the noise samples; its noise-sampling
    standard deviation falls like 1/√K (about 0.007–0.017 at D = 1000, K = 1 on unit-scale
    functions, comparable to the Monte Carlo error from D itself).

    Parameters
    ----------
    draws : array_like, shape (D, n)
        Reference-posterior draws of f(x), target units; D >= 2.
    noise_var : array_like, shape (n,)
        Gaussian noise variance σ²(x) >= 0.
    pred_mean : array_like, shape (n,)
        Mean μ̂(x) of the deployed Gaussian predictive.
    pred_var : array_like, shape (n,)
        Variance ŝ²(x) > 0 of the deployed Gaussian predictive (e.g. AU + EU of a method).
    n_noise : int, default 1
        Number K >= 1 of noise samples per draw for the pairwise term (cost grows with K).
    random_state : int, default 0
        Names the stream of the noise samples ε (via :func:`udbench._seeding.make_rng`): an
        integer from 0 to 2³² − 1 (:data:`udbench._validation.MAX_SEED`). None is refused,
        not fresh entropy: every figure here is reproducible from its arguments.

    Returns
    -------
    Decomposition
        Terms in target units; ``n_samples`` = K·D outcome samples per point.

    Raises
    ------
    UdbenchError
        Wrong shapes, NaN/inf, fewer than 2 draws, negative ``noise_var``, ``pred_var`` <= 0,
        ``n_noise`` < 1, ``random_state`` not an integer from 0 to 2³² − 1.
    """
    name = "crps_decomposition"
    seed = check_seed(name, "random_state", random_state)
    f = _checks.regression_draws(name, draws)
    d, n = f.shape
    s2 = _checks.vector(name, "noise_var", noise_var, n, nonnegative=True)
    mu = _checks.vector(name, "pred_mean", pred_mean, n)
    v_hat = _checks.vector(name, "pred_var", pred_var, n, positive=True)
    sd, sd_hat, sd_cross = np.sqrt(s2), np.sqrt(v_hat), np.sqrt(s2 + v_hat)
    k = int(n_noise) if isinstance(n_noise, int | np.integer) else -1
    if k < 1:
        raise param_error(name, "n_noise", "be an integer >= 1", n_noise)
    au = sd / _SQRT_PI
    rng = make_rng("risk", "crps", "noise", seed)
    eps = rng.standard_normal((k, d, n))  # the K = 1 stream is a prefix of the K > 1 stream
    cross, pair = np.empty(n), np.empty(n)
    # blocks of points keep the (K, D, block) temporaries in cache (~1.5x faster at D = 1000)
    for lo in range(0, n, _CRPS_BLOCK):
        blk = slice(lo, lo + _CRPS_BLOCK)
        cross[blk] = mean_abs_normal(f[:, blk] - mu[blk], sd_cross[blk]).mean(axis=0)
        y = f[None, :, blk] + sd[blk] * eps[:, :, blk]  # (K, D, block)
        pairs = _ordered_pair_sum(y.reshape(k * d, -1))
        if k > 1:  # remove pairs of samples that share a draw
            pairs -= _ordered_pair_sum(y).sum(axis=0)
        pair[blk] = pairs / (d * (d - 1) * k * k)
    total = cross - sd_hat / _SQRT_PI
    gv = 0.5 * pair - au
    gap = cross - 0.5 * pair - sd_hat / _SQRT_PI
    return Decomposition(
        "crps",
        au,
        gv,
        gap,
        total,
        "draws",
        n_draws=d,
        n_samples=k * d,
        estimator=f"energy form; fair pairwise term over distinct draws, {k} noise sample(s)/draw",
        extra={"random_state": seed, "n_noise": k},
    )


def crps_decomposition_gaussian(
    post_mean: Any, post_var: Any, noise_var: Any, pred_mean: Any, pred_var: Any
) -> Decomposition:
    """CRPS decomposition in closed form for a Gaussian reference posterior (paper A.3).

    With F(x) ~ N(m, σ_f²), Gaussian noise σ² and a Gaussian deployed predictive N(μ̂, ŝ²), the
    posterior predictive is N(m, v) with v = σ_f² + σ², and (energy form, A.3)

    - AU = σ/√π,
    - generalized variance = (√v − σ)/√π,
    - deployment gap = E|N(m − μ̂, v + ŝ²)| − (√v + ŝ)/√π = ∫(Ḡ − Ĝ)² dt,
    - total = E|N(m − μ̂, v + ŝ²)| − ŝ/√π.

    Parameters
    ----------
    post_mean, post_var : array_like, shape (n,)
        Reference-posterior mean and variance (>= 0) of f(x).
    noise_var : array_like, shape (n,)
        Noise variance σ²(x) >= 0.
    pred_mean, pred_var : array_like, shape (n,)
        Deployed Gaussian predictive mean and variance (> 0).

    Returns
    -------
    Decomposition
        Terms in target units.

    Raises
    ------
    UdbenchError
        Wrong shapes, NaN/inf, negative variances, ``pred_var`` <= 0.
    """
    name = "crps_decomposition_gaussian"
    m = _first_vector(name, "post_mean", post_mean)
    n = m.shape[0]
    v_f = _checks.vector(name, "post_var", post_var, n, nonnegative=True)
    s2 = _checks.vector(name, "noise_var", noise_var, n, nonnegative=True)
    mu = _checks.vector(name, "pred_mean", pred_mean, n)
    v_hat = _checks.vector(name, "pred_var", pred_var, n, positive=True)
    sd, sd_ref, sd_hat = np.sqrt(s2), np.sqrt(v_f + s2), np.sqrt(v_hat)
    cross = mean_abs_normal(m - mu, np.sqrt(v_f + s2 + v_hat))
    au = sd / _SQRT_PI
    gv = (sd_ref - sd) / _SQRT_PI
    gap = cross - (sd_ref + sd_hat) / _SQRT_PI
    total = cross - sd_hat / _SQRT_PI
    return Decomposition(
        "crps", au, gv, gap, total, "closed_form", estimator="closed form (A.3, Gaussian)"
    )


# --------------------------------------------------------------------------- log score
def log_score_decomposition(
    draws: Any,
    noise_var: Any,
    pred_mean: Any,
    pred_var: Any,
    *,
    n_samples: int | None = None,
    random_state: int = 0,
    mixture_entropy: Any = None,
) -> Decomposition:
    """Continuous log-score decomposition from reference-posterior draws (paper A.4, Lemma A.1).

    The deployed predictor is a Gaussian predictive density q̂ = N(μ̂(x), ŝ²(x)); the reference
    conditional densities are p_F = N(F(x), σ²(x)); the centroid is the posterior predictive
    mixture p̄ = mean_d p_d. Then

    - AU = E_F H(p_F) = ½ log(2πe σ²) exactly (differential entropy; may be negative);
    - total = E_{Y~p̄}[−log q̂(Y)] = ½ log(2π ŝ²) + (σ² + mean_d (f_d − μ̂)²)/(2ŝ²), exact;
    - generalized variance = I(Y; F) = H(p̄) − AU and deployment gap = KL(p̄ ‖ q̂) = total − H(p̄),
      where the mixture entropy H(p̄) = E_{p̄}[−log p̄(Y)] is a Monte Carlo average over M
      outcome samples Y = f_d + σ ε, one for each of M evenly spaced draws d (all D by
      default), each scored against the full D-component mixture with
      ``scoringrules.logs_mixnorm`` (in chunks of points, so memory stays bounded), with the
      control variate −log p_d(Y) of the draw d that made Y (its mean is exactly AU; regression
      coefficient per point), which removes the noise of ε²/2: where σ_f² ≪ σ² the SD of
      I(Y; F) falls from about 0.7/√M nats to a fraction of that. The cost is
      O(M·D·n): about 10 s for D = M = 1000 and n = 300 on one core; pass ``n_samples=200``
      for large n.

    Parameters
    ----------
    draws : array_like, shape (D, n)
        Reference-posterior draws of f(x); D >= 2.
    noise_var : array_like, shape (n,)
        Gaussian noise variance σ²(x) > 0.
    pred_mean, pred_var : array_like, shape (n,)
        Deployed Gaussian predictive mean and variance (> 0).
    n_samples : int, optional
        Number M of outcome samples per point for the mixture entropy, 2 <= M <= D;
        default D.
    random_state : int, default 0
        Names the stream of the noise samples ε: an integer from 0 to 2³² − 1. None is
        refused, not fresh entropy (as for :func:`crps_decomposition`).
    mixture_entropy : array_like, shape (n,), optional
        H(p̄) per point from an earlier call on the same draws, noise variance, ``n_samples``
        and ``random_state`` (``au + generalized_variance`` of its result): it does not depend
        on the deployed predictive, so scoring several predictives against one posterior
        skips the O(M·D·n) step and gives the same terms.

    Returns
    -------
    Decomposition
        Terms in nats; ``n_samples`` = M.

    Raises
    ------
    UdbenchError
        Wrong shapes, NaN/inf, fewer than 2 draws, ``noise_var`` or ``pred_var`` <= 0,
        ``n_samples`` outside [2, D], ``random_state`` not an integer from 0 to 2³² − 1.
    """
    name = "log_score_decomposition"
    seed = check_seed(name, "random_state", random_state)
    f = _checks.regression_draws(name, draws)
    d, n = f.shape
    s2 = _checks.vector(name, "noise_var", noise_var, n, positive=True)
    mu = _checks.vector(name, "pred_mean", pred_mean, n)
    v_hat = _checks.vector(name, "pred_var", pred_var, n, positive=True)
    sd = np.sqrt(s2)
    au = 0.5 * (_LOG_2PI + 1.0 + np.log(s2))
    total = 0.5 * (_LOG_2PI + np.log(v_hat)) + (s2 + np.mean((f - mu) ** 2, axis=0)) / (2 * v_hat)
    m_out = d if n_samples is None else int(n_samples)
    if n_samples is not None and (m_out != n_samples or not 2 <= m_out <= d):
        raise param_error(name, "n_samples", f"be an integer in [2, {d}] (D)", n_samples)
    if mixture_entropy is not None:
        h_given = _checks.vector(name, "mixture_entropy", mixture_entropy, n)
        return _log_terms(au, h_given, total, d, m_out, seed)
    rows = np.linspace(0, d - 1, m_out).round().astype(np.intp)
    y = _noise_samples(f[rows], sd, "log", seed)
    h_mix = np.empty(n)
    step = max(1, _MIXTURE_CHUNK_ENTRIES // (d * m_out))
    comps = f.T  # (n, D): mixture components per point
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        scores = sr.logs_mixnorm(
            y[:, lo:hi],
            comps[None, lo:hi, :],
            np.broadcast_to(sd[None, lo:hi, None], (1, hi - lo, d)),
        )
        eps2 = ((y[:, lo:hi] - f[rows, lo:hi]) / sd[lo:hi]) ** 2
        h_mix[lo:hi] = _control_variate(scores, eps2)
    return _log_terms(au, h_mix, total, d, m_out, seed)


def _log_terms(
    au: np.ndarray, h_mix: np.ndarray, total: np.ndarray, d: int, m_out: int, random_state: int
) -> Decomposition:
    """The log-score :class:`Decomposition` from AU, the mixture entropy H(p̄) and the total."""
    return Decomposition(
        "log",
        au,
        h_mix - au,
        total - h_mix,
        total,
        "draws",
        n_draws=d,
        n_samples=m_out,
        estimator="exact AU and total; mixture entropy by Monte Carlo over outcome samples "
        "with the own-component control variate",
        extra={"random_state": random_state},
    )


def log_score_decomposition_gaussian(
    post_mean: Any, post_var: Any, noise_var: Any, pred_mean: Any, pred_var: Any
) -> Decomposition:
    """Continuous log-score decomposition in closed form (paper A.4, Gaussian reference).

    With F(x) ~ N(m, σ_f²), noise σ² and deployed N(μ̂, ŝ²), the predictive is N(m, v),
    v = σ_f² + σ²:

    - AU = ½ log(2πe σ²),
    - generalized variance = ½ log(1 + σ_f²/σ²) (the mutual information I(Y; F)),
    - deployment gap = ½ [log(ŝ²/v) + (v + (μ̂ − m)²)/ŝ² − 1] = KL(N(m, v) ‖ N(μ̂, ŝ²)),
    - total = ½ log(2π ŝ²) + (v + (μ̂ − m)²)/(2ŝ²).

    Parameters
    ----------
    post_mean, post_var : array_like, shape (n,)
        Reference-posterior mean and variance (>= 0) of f(x).
    noise_var : array_like, shape (n,)
        Noise variance σ²(x) > 0.
    pred_mean, pred_var : array_like, shape (n,)
        Deployed Gaussian predictive mean and variance (> 0).

    Returns
    -------
    Decomposition
        Terms in nats.

    Raises
    ------
    UdbenchError
        Wrong shapes, NaN/inf, ``noise_var`` or ``pred_var`` <= 0, negative ``post_var``.
    """
    name = "log_score_decomposition_gaussian"
    m = _first_vector(name, "post_mean", post_mean)
    n = m.shape[0]
    v_f = _checks.vector(name, "post_var", post_var, n, nonnegative=True)
    s2 = _checks.vector(name, "noise_var", noise_var, n, positive=True)
    mu = _checks.vector(name, "pred_mean", pred_mean, n)
    v_hat = _checks.vector(name, "pred_var", pred_var, n, positive=True)
    v = v_f + s2
    au = 0.5 * (_LOG_2PI + 1.0 + np.log(s2))
    gv = 0.5 * np.log1p(v_f / s2)
    gap = 0.5 * (np.log(v_hat / v) + (v + (mu - m) ** 2) / v_hat - 1.0)
    total = 0.5 * (_LOG_2PI + np.log(v_hat)) + (v + (mu - m) ** 2) / (2 * v_hat)
    return Decomposition(
        "log", au, gv, gap, total, "closed_form", estimator="closed form (A.4, Gaussian)"
    )


def _first_vector(component: str, name: str, value: Any) -> np.ndarray:
    """Check the first per-point vector of a call (any length n), shape (n,)."""
    return check_array(component, name, value, ndim=1)
