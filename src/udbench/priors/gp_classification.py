"""The latent-GP classification prior and its reference posterior by elliptical slice sampling.

Model (docs/spec.md §11, docs/classification.md). On a dataset's covariates, K latent
functions are independent draws of the dataset's GP prior (:mod:`udbench.priors.gp`: the
fitted unit kernel k̃ and scale constant a of SPEC §5, unchanged, with the prior's nugget ν):

    f_k ~ GP(0, a²k̃ + ν·δ)  (k = 1…K),   π*(x) = softmax(f*(x) / τ(x)),   y ~ Categorical(π*(x)).

The temperature τ(x) > 0 is known, like the noise variance of a regression task: it is the
noise's role (a larger τ flattens π*, a higher Bayes error). Its level and heteroscedastic
shapes are :class:`udbench.design.temperature.TemperatureModel`; the level rule (a target mean
prior-expected Bayes error over the evaluation pool) is :func:`temperature_level` here.

Reference posterior. p(f | S) with S = (X_train, y) is not Gaussian. Two exact reductions
and one sampler:

1. *Contrasts.* Rotate the K latents at every point by the orthonormal Helmert matrix Q
   (:func:`contrast_basis`): u = Q f gives one shift u₀ = Σ_k f_k/√K and K − 1 contrasts.
   Independent GPs with one kernel stay independent with that kernel under a rotation, and
   softmax(f/τ) depends on the contrasts only, so the shift's posterior is its prior (drawn
   exactly) and only the (K − 1)·n training contrasts V are sampled; every contrast column
   has the prior N(0, Σ_t), Σ_t = a²K̃_tt + ν·I.
2. *Elliptical slice sampling* (ESS; Murray, Adams & MacKay 2010, AISTATS; BlackJAX's
   ``elliptical_proposal``) in its generalised form (Nishihara, Murray & Adams 2014, JMLR
   15): the target N(V; 0, Σ_t)·L(V) is written as N(V; m, S)·R(V) with a Gaussian
   *reference* N(m, S) and R = target / reference, and ESS is run with respect to the
   reference. This is exact for any reference; a reference close to the posterior makes
   the ellipse moves long. ``reference="laplace"`` (every preset): m is the posterior mode,
   found by the monotone MM iteration of Böhning's bound (the softmax Hessian is ≼ ½I in
   orthonormal contrasts; Böhning 1992), and S = (Σ_t⁻¹ + W)⁻¹ with W the diagonal of the
   likelihood's curvature at m (averaged over contrasts): a Laplace approximation without
   the cross-contrast terms (R&W 2006 §3.4 for the binary case). Momenta from N(0, S) by
   Matheron's rule with B = I + W^½Σ_tW^½ (two factorisations of n × n matrices in all);
   R(V) costs O(nK) per evaluation. ``reference="prior"`` is plain ESS (m = 0, S = Σ_t);
   measured at kin8nm size it does not converge in a usable time (docs/classification.md).
   Several chains start from independent draws of the reference, run a burn-in
   (``n_warmup``; ESS has nothing to adapt), then keep every ``thin``-th state.

The evaluation latents are exact given each kept training draw (the GP conditional with the
prior's nugget, R&W 2006 eq. 2.19 with noise-free targets), per rotated component: with
W_t = L_t⁻¹U_t (L_t = chol Σ_t) and A = L_t⁻¹ a²K̃_te,

    u_e | u_t ~ N(Aᵀ W_t,  a²K̃_ee + ν·I − AᵀA),

drawn as Aᵀ W_t + L_c Z′ (L_c = chol of the conditional covariance, adaptive jitter
recorded), then f_e = Qᵀu_e. The posterior of π at the evaluation points is
softmax(f_e / τ_e) per draw.

Seed streams (the rule of :mod:`udbench.priors.base`, family ``"gpc"``): ``"gpc-prior"``
(prior latent draws, :meth:`GPClassificationPrior.sample`), ``"gpc-mcmc"`` (the chains:
initial states, momenta, slice variables; a JAX key) and ``"gpc-conditional"`` (the shift
draws and the normals of the evaluation latents). The level rule's Monte Carlo normals
are a build stream, ``("gpc-level", K)``.

The family is registered as ``"gpc"`` in :data:`udbench.priors.base.PRIOR_FAMILIES` with
``PriorCapabilities.task_type == "classification"``; :func:`build_prior` is its builder
(``make_prior("gpc", cov, fidelity, n_classes=K)``) and ``udbench generate --families gpc``
makes its tasks (docs/classification.md, "Classification tasks").
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.special

from udbench._seeding import make_rng
from udbench._validation import check_array, check_choice, param_error
from udbench.priors.base import (
    CLASSIFICATION_DIFFICULTIES,
    DEFAULT_FIDELITY,
    FAMILY_CAPABILITIES,
    Fidelity,
    PriorCapabilities,
    call_seed,
)
from udbench.priors.base import DEFAULT_N_CLASSES as _DEFAULT_N_CLASSES
from udbench.priors.diagnostics import summarise_function_draws
from udbench.priors.gp.linalg import JITTER_START, add_diag, chol_jitter, solve_lower, tri_matmul_T
from udbench.priors.gp.linalg import xp as _xp
from udbench.priors.mcmc import MCMCDiagnostics, MCMCPrior

__all__ = [
    "DEFAULT_N_CLASSES",
    "DIFFICULTIES",
    "PRIOR_CLASS",
    "ClassificationPosterior",
    "ESSDiagnostics",
    "GPClassificationPrior",
    "build_classification_prior",
    "build_prior",
    "check_labels",
    "check_n_classes",
    "check_temperature",
    "class_probabilities",
    "draw_labels",
    "expected_bayes_error_curve",
    "temperature_level",
]

#: Number of classes K when none is given (:data:`udbench.priors.base.DEFAULT_N_CLASSES`).
DEFAULT_N_CLASSES: int = _DEFAULT_N_CLASSES

#: Named difficulty levels: the target of the level rule, the mean over the evaluation pool of
#: the prior-expected Bayes error divided by its chance value 1 − 1/K (:func:`temperature_level`).
DIFFICULTIES: dict[str, float] = CLASSIFICATION_DIFFICULTIES

#: Monte Carlo draws of the level rule's curve g(r) (one fixed stream per K).
LEVEL_MC_DRAWS: int = 16384
#: Grid of signal ratios r = sd f / τ on which g(r) is tabulated (log-spaced, interpolated).
_LEVEL_GRID = np.geomspace(1e-3, 1e3, 241)


# --------------------------------------------------------------------------------------
# Checks (each value is checked where it enters, with one error template)
# --------------------------------------------------------------------------------------
def check_n_classes(component: str, n_classes: Any) -> int:
    """``n_classes`` as an int K >= 2.

    Raises
    ------
    UdbenchError
        K not an integer or K < 2.
    """
    if isinstance(n_classes, bool) or not isinstance(n_classes, int | np.integer):
        raise param_error(component, "n_classes", "be an integer >= 2", n_classes)
    if int(n_classes) < 2:
        raise param_error(component, "n_classes", "be an integer >= 2", n_classes)
    return int(n_classes)


def check_temperature(component: str, name: str, tau: Any, n: int | None = None) -> np.ndarray:
    """Temperatures τ, shape (n,), finite and > 0.

    Raises
    ------
    UdbenchError
        Wrong shape, NaN/inf, or an entry <= 0 (the message gives the smallest value).
    """
    arr = check_array(component, name, tau, shape=(n,))
    if arr.size and not np.min(arr) > 0:
        raise param_error(component, name, "be > 0 everywhere", f"minimum {float(np.min(arr))!r}")
    return arr


def check_labels(component: str, labels: Any, n: int, n_classes: int) -> np.ndarray:
    """Class labels, shape (n,), integers in 0 … K − 1; returned as int64.

    Raises
    ------
    UdbenchError
        Wrong shape, non-integer values, or a label outside 0 … K − 1.
    """
    raw = np.asarray(labels)
    if raw.shape != (n,):
        raise param_error(component, "labels", f"have shape ({n},)", f"shape {raw.shape}")
    if raw.dtype.kind not in "iu":
        if raw.dtype.kind != "f" or not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw)):
            raise param_error(component, "labels", "hold integers", f"dtype {raw.dtype}")
    out = raw.astype(np.int64)
    if out.size and (out.min() < 0 or out.max() >= n_classes):
        bad = out[(out < 0) | (out >= n_classes)][0]
        raise param_error(component, "labels", f"lie in 0 … {n_classes - 1}", int(bad))
    return out


# --------------------------------------------------------------------------------------
# The likelihood: class probabilities and labels
# --------------------------------------------------------------------------------------
def class_probabilities(latents: Any, tau: Any) -> np.ndarray:
    """π = softmax(f / τ) along the class axis.

    Parameters
    ----------
    latents : array_like, shape (..., m, K)
        Latent function values f_k(x) at m inputs (target units of the GP prior).
    tau : array_like, shape (m,)
        Temperatures τ(x) > 0.

    Returns
    -------
    ndarray, shape (..., m, K), float64
        Rows on the simplex (SciPy's stable softmax).

    Raises
    ------
    UdbenchError
        NaN/inf, fewer than 2 classes, τ of the wrong length or <= 0.
    """
    f = check_array("class_probabilities", "latents", latents)
    if f.ndim < 2 or f.shape[-1] < 2:
        raise param_error(
            "class_probabilities", "latents", "have shape (..., m, K) with K >= 2", f.shape
        )
    t = check_temperature("class_probabilities", "tau", tau, f.shape[-2])
    return np.asarray(scipy.special.softmax(f / t[:, None], axis=-1), dtype=np.float64)


def draw_labels(probs: Any, rng: np.random.Generator) -> np.ndarray:
    """One label per row, y_i ~ Categorical(π_i), by inverse CDF with one uniform per row.

    Parameters
    ----------
    probs : array_like, shape (m, K)
        Class probabilities (rows on the simplex, atol 1e-6).
    rng : numpy.random.Generator
        The stream of the labels (the task passes its own, named stream).

    Returns
    -------
    ndarray, shape (m,), int64
        Labels in 0 … K − 1.

    Raises
    ------
    UdbenchError
        Rows that are not probability vectors.
    """
    p = check_array("draw_labels", "probs", probs, ndim=2, nonnegative=True)
    if p.shape[1] < 2:
        raise param_error("draw_labels", "probs", "have K >= 2 columns", p.shape)
    dev = float(np.max(np.abs(p.sum(axis=1) - 1.0))) if p.size else 0.0
    if dev > 1e-6:
        raise param_error("draw_labels", "probs", "have rows summing to 1", f"deviation {dev:.3g}")
    u = np.asarray(rng.random(p.shape[0]))
    cdf = np.cumsum(p, axis=1)
    cdf[:, -1] = np.inf  # rounding never lets u fall past the last class
    return np.asarray((u[:, None] >= cdf).sum(axis=1), dtype=np.int64)


# --------------------------------------------------------------------------------------
# The level rule of the temperature
# --------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=16)
def _level_curves(n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(normalised Bayes error g(r), normalised expected entropy e(r)) on :data:`_LEVEL_GRID`."""
    z = make_rng("gpc-level", n_classes).standard_normal((LEVEL_MC_DRAWS, n_classes))
    chance = 1.0 - 1.0 / n_classes
    g = np.empty(_LEVEL_GRID.size)
    e = np.empty(_LEVEL_GRID.size)
    for i, r in enumerate(_LEVEL_GRID):
        p = scipy.special.softmax(r * z, axis=1)
        g[i] = float(np.mean(1.0 - p.max(axis=1))) / chance
        e[i] = float(np.mean(scipy.special.entr(p).sum(axis=1))) / np.log(n_classes)
    return g, e


def expected_bayes_error_curve(
    signal_ratio: Any, n_classes: int, quantity: str = "bayes_error"
) -> np.ndarray:
    """Prior-expected Bayes error (or entropy) at x as a function of r = sd f(x) / τ(x).

    Under the prior the K latents at x are independent N(0, v(x)), so
    π(x) = softmax(√v(x)·Z / τ(x)) with Z ~ N(0, I_K) depends on x only through
    r(x) = √v(x)/τ(x). Returns g(r) = E[1 − max_k π_k] / (1 − 1/K) (``"bayes_error"``) or
    E[H(π)] / log K (``"entropy"``), both in [0, 1] and decreasing in r (the tempered softmax
    sharpens monotonically). Tabulated once per K by Monte Carlo (:data:`LEVEL_MC_DRAWS`
    fixed normals, stream ``("gpc-level", K)``; SD of the table entries below 0.003) on a
    log grid r ∈ [1e-3, 1e3] and interpolated linearly in log r (clamped outside the grid).

    Parameters
    ----------
    signal_ratio : array_like, shape (m,)
        r(x) > 0.
    n_classes : int
        K >= 2.
    quantity : {"bayes_error", "entropy"}

    Returns
    -------
    ndarray, shape (m,)

    Raises
    ------
    UdbenchError
        K < 2, r <= 0 or NaN, or an unknown quantity.
    """
    K = check_n_classes("expected_bayes_error_curve", n_classes)
    r = check_temperature("expected_bayes_error_curve", "signal_ratio", signal_ratio)
    if quantity not in ("bayes_error", "entropy"):
        raise param_error(
            "expected_bayes_error_curve", "quantity", "be 'bayes_error' or 'entropy'", quantity
        )
    g, e = _level_curves(K)
    table = g if quantity == "bayes_error" else e
    return np.interp(np.log(r), np.log(_LEVEL_GRID), table)


def temperature_level(
    latent_sd: Any,
    shape: Any,
    strength: float,
    n_classes: int,
    target: float,
) -> float:
    """Level c of log τ(x) = c + (s/2)·h(x) so that the pool's mean Bayes error is ``target``.

    The level rule (docs/spec.md §11): over the evaluation pool, the mean of the prior-expected
    Bayes error divided by its chance value, mean_x g(sd(x) / τ(x)) with
    g = :func:`expected_bayes_error_curve`, equals ``target``. It is decreasing in r, hence
    increasing in c, so the root is unique (Brent's method, SciPy).

    Parameters
    ----------
    latent_sd : array_like, shape (m,)
        Prior SD √v(x) of one latent at the pool's points (a·√k̃(x, x)).
    shape : array_like, shape (m,)
        Standardised shape h(x) at the pool (zeros for homoscedastic).
    strength : float
        s >= 0, the SD of log τ² over the pool (τ² plays the noise variance's role).
    n_classes : int
        K >= 2.
    target : float
        In (0, 1): normalised mean Bayes error (e.g. :data:`DIFFICULTIES`).

    Returns
    -------
    float
        c.

    Raises
    ------
    UdbenchError
        Bad shapes, K < 2, s < 0, a target outside (0, 1) or one the grid cannot reach.
    """
    comp = "temperature_level"
    sd = check_temperature(comp, "latent_sd", latent_sd)
    h = check_array(comp, "shape", shape, shape=sd.shape)
    K = check_n_classes(comp, n_classes)
    s = float(strength)
    if not (np.isfinite(s) and s >= 0):
        raise param_error(comp, "strength", "be a finite number >= 0", strength)
    t = float(target)
    if not 0.0 < t < 1.0:
        raise param_error(comp, "target", "be in (0, 1)", target)
    g, _ = _level_curves(K)

    def excess(c: float) -> float:
        r = sd * np.exp(-(c + 0.5 * s * h))
        return float(np.mean(np.interp(np.log(r), np.log(_LEVEL_GRID), g))) - t

    lo, hi = -12.0, 12.0
    if not excess(lo) < 0 < excess(hi):
        raise param_error(comp, "target", "be reachable with τ in [e^-12, e^12]", target)
    return float(scipy.optimize.brentq(excess, lo, hi, xtol=1e-10))


# --------------------------------------------------------------------------------------
# Elliptical slice sampling of the training latents (BlackJAX)
# --------------------------------------------------------------------------------------
def contrast_basis(n_classes: int) -> np.ndarray:
    """The orthonormal Helmert matrix Q (K, K) whose first row is (1, …, 1)/√K (SciPy).

    u = Q f maps the K class latents at a point to their *shift* u₀ = Σ_k f_k/√K and K − 1
    orthonormal *contrasts* u₁…u_{K−1}; f = Qᵀu. Independent GP latents with a common kernel
    stay independent with that kernel under the rotation, and softmax(f/τ) depends on the
    contrasts alone, so the shift's posterior is its prior (module docstring).
    """
    return np.asarray(scipy.linalg.helmert(check_n_classes("contrast_basis", n_classes), True))


def _contrast_loglik(
    v: jax.Array, labels: jax.Array, inv_tau: jax.Array, Q2: jax.Array
) -> jax.Array:
    """Σ_i log softmax(Q₂ᵀv_i / τ_i)[y_i] for contrasts v (n, K − 1)."""
    logp = jax.nn.log_softmax((v @ Q2) * inv_tau[:, None], axis=1)
    return jnp.sum(jnp.take_along_axis(logp, labels[:, None], axis=1))


@partial(jax.jit, static_argnames=("n_warmup", "n_keep", "thin"))
def _run_chains(
    ops: dict[str, jax.Array],
    keys: jax.Array,
    *,
    n_warmup: int,
    n_keep: int,
    thin: int,
) -> dict[str, jax.Array]:
    """Generalised elliptical slice sampling of the contrasts, one chain per key (vmapped).

    Target p(v | y) ∝ N(v; 0, Σ) L(v) for every contrast column of v (n, K − 1), written as
    N(v; m, S)·R(v) with the reference S = (Σ⁻¹ + W)⁻¹ (W = diag ``sqrt_w``², shared by the
    columns) and R(v) = L(v) + ½Σ_c (v_c − m_c)ᵀW(v_c − m_c) − Σ_c v_cᵀα_c + const,
    α = Σ⁻¹m; BlackJAX's ellipse is taken around m with momenta from N(0, S), drawn by
    Matheron's rule ν = f₀ − ΣW^½B⁻¹(W^½f₀ + ε), f₀ = L_Σz, B = I + W^½ΣW^½ = L_B L_Bᵀ.
    W = 0, m = 0 is plain ESS with the prior as the reference.

    ``ops``: ``L`` (chol Σ), ``Sigma``, ``LB``, ``sqrt_w`` (n,), ``m``, ``alpha`` (n, K − 1),
    ``labels`` (n,), ``inv_tau`` (n,), ``Q2`` (K − 1, K).

    Returns ``"v"`` (chains, n_keep, n, K − 1), ``"loglik"`` (chains, n_keep) (the labels'
    log-likelihood), ``"subiter"`` (chains, n_warmup + n_keep·thin), ``"theta"``
    (chains, n_keep·thin).
    """
    from blackjax.mcmc.elliptical_slice import EllipSliceState, elliptical_proposal

    L, Sigma, LB, sw = ops["L"], ops["Sigma"], ops["LB"], ops["sqrt_w"]
    m, alpha = ops["m"], ops["alpha"]
    labels, inv_tau, Q2 = ops["labels"], ops["inv_tau"], ops["Q2"]
    w2 = sw * sw

    def loglik(v: jax.Array) -> jax.Array:
        return _contrast_loglik(v, labels, inv_tau, Q2)

    def ratio(v: jax.Array) -> jax.Array:
        d = v - m
        return loglik(v) + 0.5 * jnp.sum(w2[:, None] * d * d) - jnp.sum(v * alpha)

    def momentum(key: jax.Array, position: jax.Array) -> jax.Array:
        k1, k2 = jax.random.split(key)
        f0 = L @ jax.random.normal(k1, position.shape, dtype=position.dtype)
        r = sw[:, None] * f0 + jax.random.normal(k2, position.shape, dtype=position.dtype)
        s = jax.scipy.linalg.solve_triangular(LB, r, lower=True)
        s = jax.scipy.linalg.solve_triangular(LB, s, lower=True, trans=1)
        return m + f0 - Sigma @ (sw[:, None] * s)

    def one_chain(key: jax.Array) -> dict[str, jax.Array]:
        k_init, k_warm, k_keep = jax.random.split(key, 3)
        v0 = momentum(k_init, m)  # a draw of the reference: chains start apart
        step = elliptical_proposal(ratio, momentum, m.reshape(-1))
        state = EllipSliceState(v0, ratio(v0))

        def body(st: Any, k: jax.Array) -> tuple[Any, tuple[jax.Array, jax.Array]]:
            st, info = step(k, st)
            return st, (info.subiter, jnp.abs(info.theta))

        state, (sub_w, _) = jax.lax.scan(body, state, jax.random.split(k_warm, n_warmup))

        def keep(st: Any, k: jax.Array) -> tuple[Any, tuple[Any, ...]]:
            st, (sub, th) = jax.lax.scan(body, st, jax.random.split(k, thin))
            return st, (st.position, loglik(st.position), sub, th)

        state, (v, ll, sub_k, th) = jax.lax.scan(keep, state, jax.random.split(k_keep, n_keep))
        return {
            "v": v,
            "loglik": ll,
            "subiter": jnp.concatenate([sub_w, sub_k.reshape(-1)]),
            "theta": th.reshape(-1),
        }

    return jax.vmap(one_chain)(keys)


def _contrast_grad_curv(
    v: np.ndarray, labels: np.ndarray, inv_tau: np.ndarray, Q2: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float]:
    """Gradient (n, K − 1), diagonal curvature (n, K − 1) and value of the log-likelihood in
    the contrasts: g_i = Q₂(e_y − π_i)/τ_i, w_ic = [Q₂(diag π_i − π_iπ_iᵀ)Q₂ᵀ]_cc / τ_i²."""
    logits = (v @ Q2) * inv_tau[:, None]
    logp = scipy.special.log_softmax(logits, axis=1)
    p = np.exp(logp)
    onehot = np.eye(Q2.shape[1])[labels]
    g = ((onehot - p) @ Q2.T) * inv_tau[:, None]
    # diag of Q₂ diag(π) Q₂ᵀ − (Q₂π)² per contrast
    qp = p @ Q2.T
    curv = ((p @ (Q2.T**2)) - qp**2) * (inv_tau**2)[:, None]
    return g, curv, float(np.sum(logp[np.arange(labels.size), labels]))


def _reference(
    L: Any, Sigma: Any, labels: np.ndarray, inv_tau: np.ndarray, Q2: np.ndarray, max_iter: int
) -> tuple[np.ndarray, np.ndarray, Any, np.ndarray, dict[str, Any]]:
    """The Gaussian reference N(m, (Σ⁻¹ + W)⁻¹) of the contrasts (a Laplace-type fit).

    Mode m: Böhning's bound (the softmax Hessian is ≼ ½(I − 11ᵀ/K), i.e. ≼ ½I in the
    orthonormal contrasts; Böhning 1992) makes v ← (Σ⁻¹ + W_b)⁻¹(W_b v + g(v)) with
    W_b = 1/(2τ²) a monotone MM ascent of the log posterior, one factorisation for all
    iterations (R&W 2006 eq. 3.18 with a fixed W). Then W = the diagonal curvature at m,
    averaged over contrasts, and B = I + W^½ΣW^½ = L_B L_Bᵀ. Returns (m, α = Σ⁻¹m, L_B,
    √W, record).
    """
    xp = _xp()
    n, C = labels.size, Q2.shape[0]

    def factor(w: np.ndarray) -> Any:
        sw = np.sqrt(w)
        B = add_diag(xp.asarray(sw[:, None] * np.asarray(Sigma) * sw[None, :]), 1.0)
        LB, _ = chol_jitter(B, start=None)
        return LB

    def solve_ref(LB: Any, sw: np.ndarray, r: np.ndarray) -> np.ndarray:
        # (Σ⁻¹ + W)⁻¹ r = Σr − ΣW^½B⁻¹W^½Σr
        Sr = np.asarray(Sigma @ xp.asarray(r))
        t = solve_lower(LB, xp.asarray(sw[:, None] * Sr))
        t = np.asarray(solve_lower(LB, t, trans=True))
        return Sr - np.asarray(Sigma @ xp.asarray(sw[:, None] * t))

    wb = 0.5 * inv_tau**2
    swb = np.sqrt(wb)
    LBb = factor(wb)
    v = np.zeros((n, C))
    value = -np.inf
    n_it = 0
    step = float("inf")
    for _ in range(max_iter):
        n_it += 1
        g, _, _ = _contrast_grad_curv(v, labels, inv_tau, Q2)
        v_new = solve_ref(LBb, swb, wb[:, None] * v + g)
        step = float(np.max(np.abs(v_new - v)))
        v = v_new
        if step < 1e-7 * max(1.0, float(np.max(np.abs(v)))):
            break
    g, curv, value = _contrast_grad_curv(v, labels, inv_tau, Q2)
    w = curv.mean(axis=1)
    LB = factor(w)
    alpha = np.asarray(solve_lower(L, solve_lower(L, xp.asarray(v)), trans=True))
    record = {
        "mode_iterations": n_it,
        "mode_last_step": step,
        "mode_loglik": value,
        "reference_curvature_mean": float(np.mean(w)),
    }
    return v, alpha, LB, np.sqrt(w), record


# --------------------------------------------------------------------------------------
# The posterior and its diagnostics
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ESSDiagnostics(MCMCDiagnostics):
    """:class:`~udbench.priors.mcmc.MCMCDiagnostics` of the elliptical slice sampler.

    ``convergence`` (flattened into :meth:`to_dict`) is
    :func:`~udbench.priors.diagnostics.summarise_function_draws` of π at the evaluation
    points, one variable per (point, class), point-major (``rhat[i·K + k]`` is point i,
    class k); ``rhat_max_train`` / ``rhat_train`` are the split-R̂ of the sampled training
    contrasts (point-major, K − 1 per point; the shift is drawn exactly). ``rhat_gate`` is
    True: the SPEC §7 R̂ rule applies (few long chains, as for the BNN).

    Attributes
    ----------
    n_classes : int
        K.
    thin : int
        Iterations per kept draw.
    rhat_max_per_class : list of float
        Largest split-R̂ of π_k over the evaluation points, per class k.
    ess_bulk_min, ess_bulk_median : float
        Bulk effective sample size of π (ArviZ, rank-normalised) over the (point, class)
        variables: smallest and median.
    subiter_mean_warmup, subiter_mean_kept : float
        Mean likelihood evaluations per iteration (1 + slice shrinks) in the burn-in and in
        the kept phase; ``subiter_max`` the largest of any iteration.
    subiter_max : int
    theta_abs_mean : float
        Mean |accepted angle| on the ellipse in the kept phase (π/2 ≈ 1.57 for a flat
        likelihood; small values mean short moves).
    loglik_mean_first_half, loglik_mean_second_half : float
        Mean log-likelihood of the kept draws in each half of the chains (a drift between
        them means the burn-in was too short).
    jitter_train : float
        Jitter added to Σ_t = a²K̃_tt + ν·I beyond the nugget (0 when it factorised).
    jitter_conditional : float
        Jitter of the evaluation-latent conditional covariance factor.
    nugget : float
        ν, the prior's nugget (target units²).
    sampler_seconds, conditional_seconds : float
        Wall time of the reference fit and the chains (compilation included), and of the
        evaluation latents.
    reference : {"laplace", "prior"}
        The Gaussian the ellipses are drawn from (module docstring).
    mode_iterations : int
        Böhning-bound iterations of the reference's mode (0 for ``"prior"``).
    mode_loglik : float
        The labels' log-likelihood at that mode (NaN for ``"prior"``).
    reference_curvature_mean : float
        Mean of the reference's diagonal curvature W (0 for ``"prior"``).
    """

    n_classes: int
    thin: int
    rhat_max_per_class: list[float]
    ess_bulk_min: float
    ess_bulk_median: float
    subiter_mean_warmup: float
    subiter_mean_kept: float
    subiter_max: int
    theta_abs_mean: float
    loglik_mean_first_half: float
    loglik_mean_second_half: float
    jitter_train: float
    jitter_conditional: float
    nugget: float
    sampler_seconds: float
    conditional_seconds: float
    reference: str
    mode_iterations: int
    mode_loglik: float
    reference_curvature_mean: float


@dataclass(frozen=True)
class ClassificationPosterior:
    """Draws of the reference posterior of a latent-GP classification task.

    Attributes
    ----------
    prob_draws : ndarray, shape (D, n_eval, K), float64
        π_F(x) = softmax(f_e(x)/τ(x)) per draw at the evaluation points (the input of
        :func:`udbench.risk.classification_oracle_targets`).
    latent_eval : ndarray, shape (D, n_eval, K), float64
        Evaluation latents f_k(x), draws chain-major (``n_chains`` blocks of D / n_chains).
    latent_train : ndarray, shape (D, n, K), float64
        Training latents (the ESS chains' kept states).
    n_chains : int
        Chains; draw d is chain d // (D / n_chains).
    diagnostics : dict
        :meth:`ESSDiagnostics.to_dict` (JSON-serialisable).
    """

    prob_draws: np.ndarray
    latent_eval: np.ndarray
    latent_train: np.ndarray
    n_chains: int
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def mean_probs(self) -> np.ndarray:
        """The posterior predictive π̄(x) = mean over draws of π_F(x), shape (n_eval, K)."""
        return np.asarray(self.prob_draws.mean(axis=0))

    def chains(self, what: str = "prob_draws") -> np.ndarray:
        """``prob_draws``, ``latent_eval`` or ``latent_train`` as (chains, per chain, m, K)."""
        arr = getattr(self, what)
        return arr.reshape(self.n_chains, -1, *arr.shape[1:])


def _ess_bulk(chains: np.ndarray) -> np.ndarray:
    """Bulk ESS (ArviZ, rank-normalised) of every variable of (chains, draws, m) draws."""
    import warnings

    import arviz as az

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="More chains", category=UserWarning)
        ds = az.convert_to_dataset(chains)
    return np.asarray(az.ess(ds, method="bulk")["x"].values, dtype=np.float64).reshape(-1)


# --------------------------------------------------------------------------------------
# The prior
# --------------------------------------------------------------------------------------
class GPClassificationPrior(MCMCPrior):
    """Latent-GP softmax classification prior bound to one dataset (module docstring).

    Parameters
    ----------
    gp : udbench.priors.gp.GPPrior
        The dataset's GP prior (fitted unit kernel k̃ and scale a, SPEC §5), as returned by
        :func:`udbench.priors.gp.build_prior`; every latent function is one of its draws.
    n_classes : int, default 3
        K >= 2.
    fidelity : Fidelity or str, default "standard"
        Sampler preset (:attr:`presets`).
    dataset : str, optional
        Dataset key (recorded).
    sampler_kwargs : dict, optional
        Overrides of single preset entries (``n_chains``, ``n_warmup``, ``thin``).

    Raises
    ------
    UdbenchError
        K < 2, an unknown fidelity or override key.

    Attributes
    ----------
    family : "gpc"
        Family name (seed streams ``"gpc-<use>"``).
    task_type : "classification"
        What the prior's tasks are (regression priors have no such attribute yet; issue 33
        moves these capabilities onto the Prior protocol).
    likelihood : "categorical-softmax"
        y ~ Categorical(softmax(f/τ)), τ known.
    numerics_version : int
        Bumped only by a change that alters the draws for the same settings and key.
    rhat_gate : True
        The SPEC §7 R̂ rule applies to reference presets.
    """

    family: ClassVar[str] = "gpc"
    capabilities: ClassVar[PriorCapabilities] = FAMILY_CAPABILITIES["gpc"]
    task_type: ClassVar[str] = "classification"
    likelihood: ClassVar[str] = "categorical-softmax"
    numerics_version: ClassVar[int] = 1
    rhat_gate: ClassVar[bool] = True
    seed_bits: ClassVar[int] = 32
    #: Sampler presets (measured costs: docs/classification.md, "Fidelities").
    presets: ClassVar[dict[str, dict[str, Any]]] = {
        Fidelity.SMOKE: {
            "n_chains": 2,
            "n_warmup": 100,
            "thin": 2,
            "reference": "laplace",
            "mode_max_iter": 200,
        },
        Fidelity.STANDARD: {
            "n_chains": 4,
            "n_warmup": 200,
            "thin": 2,
            "reference": "laplace",
            "mode_max_iter": 200,
        },
        Fidelity.PAPER: {
            "n_chains": 4,
            "n_warmup": 1000,
            "thin": 8,
            "reference": "laplace",
            "mode_max_iter": 500,
        },
    }

    def __init__(
        self,
        gp: Any,
        n_classes: int = DEFAULT_N_CLASSES,
        fidelity: Fidelity | str = DEFAULT_FIDELITY,
        *,
        dataset: str | None = None,
        sampler_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.n_classes = check_n_classes("GPClassificationPrior", n_classes)
        self.gp = gp
        super().__init__(gp.scale, fidelity, dataset=dataset, sampler_kwargs=sampler_kwargs)
        cfg = self.sampler_settings
        for key in ("n_chains", "thin"):
            value = cfg[key]
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise param_error("GPClassificationPrior", key, "be an integer >= 1", value)
        warm = cfg["n_warmup"]
        if isinstance(warm, bool) or not isinstance(warm, int | np.integer) or warm < 0:
            raise param_error("GPClassificationPrior", "n_warmup", "be an integer >= 0", warm)
        check_choice("GPClassificationPrior", "reference", cfg["reference"], ("laplace", "prior"))

    @classmethod
    def instance_work(cls, fidelity: str, n_draws: int = 1000) -> float:
        """Chain iterations of one instance at ``fidelity``: n_chains × (n_warmup + (D /
        n_chains) × thin), D = ``n_draws`` (:func:`udbench.tuning.calibration.work_ratio`)."""
        s = cls.presets[Fidelity.parse("GPClassificationPrior", fidelity)]
        return float(s["n_chains"] * (s["n_warmup"] + n_draws / s["n_chains"] * s["thin"]))

    @classmethod
    def synthetic(
        cls, fidelity: str, X_eval: np.ndarray, n_classes: int = DEFAULT_N_CLASSES
    ) -> GPClassificationPrior:
        """A classification prior at ``fidelity`` on the synthetic GP prior
        (:meth:`udbench.priors.gp.GPPrior.synthetic`, scale a = 1), for timing."""
        from udbench.priors.gp import GPPrior

        return cls(GPPrior.synthetic(fidelity, X_eval), n_classes, fidelity)

    def _model_settings(self) -> dict[str, Any]:
        return {
            "task_type": self.task_type,
            "likelihood": self.likelihood,
            "n_classes": self.n_classes,
            "latent_prior": {"family": "gp", "kernel": self.gp.hyper, "scale": self.gp.scale},
        }

    def _engine_settings(self) -> dict[str, Any]:
        import blackjax

        return {"engine": "blackjax elliptical_slice", "blackjax_version": blackjax.__version__}

    # -- prior --------------------------------------------------------------------------
    def marginal_sd(self, X: np.ndarray) -> np.ndarray:
        """Prior SD of one latent, a·√k̃(x, x), at ``X`` (m, d) -> (m,) (the nugget, ~1e-5·a,
        is left out)."""
        from udbench.priors.gp.prior import _diag_kernel

        X = check_array("GPClassificationPrior.marginal_sd", "X", X, ndim=2)
        with jax.enable_x64(True):
            return np.asarray(self.scale * np.sqrt(_diag_kernel(self.gp.hyper, X)))

    def sample(self, X: np.ndarray, key: int, n_draws: int = 1) -> np.ndarray:
        """Joint prior draws of the K latents at ``X`` (m, d).

        The K·``n_draws`` latent functions are independent joint draws of the GP prior
        (:meth:`udbench.priors.gp.GPPrior.sample`, stream ``("gpc-prior", key)``), draw j's
        class k being GP draw j·K + k. Drawing at J = (X_eval, X_train) keeps the joint
        factor, whose jitter is the nugget :meth:`condition` then uses.

        Returns
        -------
        ndarray, shape (n_draws, m, K), float64
        """
        X = check_array("GPClassificationPrior.sample", "X", X, ndim=2)
        D = int(n_draws)
        if D < 1:
            raise param_error("GPClassificationPrior.sample", "n_draws", "be >= 1", n_draws)
        f = self.gp.sample(X, call_seed(self.family, "prior", key), D * self.n_classes)
        return np.ascontiguousarray(f.reshape(D, self.n_classes, X.shape[0]).transpose(0, 2, 1))

    def probabilities(self, latents: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """π = softmax(f/τ) (:func:`class_probabilities`): (..., m, K) -> (..., m, K)."""
        return class_probabilities(latents, tau)

    @staticmethod
    def draw_labels(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Labels y_i ~ Categorical(π_i) (:func:`draw_labels`): (m, K) -> (m,) int64."""
        return draw_labels(probs, rng)

    # -- posterior ----------------------------------------------------------------------
    def _train_prior(self, X_train: np.ndarray, nu: float) -> tuple[Any, Any, float]:
        """(Σ_t = a²K̃_tt + (ν + jitter)·I, its Cholesky factor, the jitter beyond ν)."""
        K_tt = _xp().asarray(self.gp.covariance(X_train))
        L, jit = chol_jitter(add_diag(K_tt, nu), start=None)
        return add_diag(K_tt, nu + jit), L, float(jit)

    def condition(
        self,
        X_train: np.ndarray,
        labels: np.ndarray,
        tau_train: np.ndarray,
        X_eval: np.ndarray,
        key: int,
        n_draws: int,
        *,
        tau_eval: np.ndarray,
        nugget: float | None = None,
    ) -> ClassificationPosterior:
        """Reference posterior p(f | S): (generalised) ESS on the K − 1 training contrasts
        around the preset's reference, the shift drawn exactly, then the exact GP
        conditional at ``X_eval`` (module docstring).

        Parameters
        ----------
        X_train : ndarray, shape (n, d)
        labels : ndarray, shape (n,)
            Integer labels in 0 … K − 1.
        tau_train : ndarray, shape (n,)
            Known temperatures τ(x_i) > 0.
        X_eval : ndarray, shape (m, d)
        key : int
            The call's key (streams ``"gpc-mcmc"`` and ``"gpc-conditional"``).
        n_draws : int
            D, a positive multiple of the preset's ``n_chains``.
        tau_eval : ndarray, shape (m,)
            Temperatures at the evaluation points.
        nugget : float, optional
            ν; default :meth:`udbench.priors.gp.GPPrior.nugget` at (X_eval, X_train) (the
            jitter of the joint factor f* was drawn with, when it was drawn there).

        Returns
        -------
        ClassificationPosterior

        Raises
        ------
        UdbenchError
            Bad shapes, labels outside 0 … K − 1, τ <= 0, D not a multiple of the chains.
        """
        comp = "GPClassificationPrior.condition"
        K = self.n_classes
        X_train = check_array(comp, "X_train", X_train, ndim=2)
        n, d = X_train.shape
        if n < 1:
            raise param_error(comp, "X_train", "have at least 1 row", X_train.shape)
        y = check_labels(comp, labels, n, K)
        t_tr = check_temperature(comp, "tau_train", tau_train, n)
        X_eval = check_array(comp, "X_eval", X_eval, shape=(None, d))
        m = X_eval.shape[0]
        t_ev = check_temperature(comp, "tau_eval", tau_eval, m)
        n_chains, per = self._chain_layout(comp, n_draws)
        D = n_chains * per
        cfg = self.sampler_settings
        if nugget is None:
            nu = float(self.gp.nugget(X_eval, X_train))
        else:
            nu = float(nugget)
            if not (np.isfinite(nu) and nu >= 0):
                raise param_error(comp, "nugget", "be a finite number >= 0", nugget)
        t0 = time.perf_counter()
        C_ = K - 1
        Q = contrast_basis(K)
        with jax.enable_x64(True):
            xp = _xp()
            Sigma, L_t, jit_t = self._train_prior(X_train, nu)
            inv_tau = 1.0 / t_tr
            if cfg["reference"] == "laplace":
                m_ref, alpha, LB, sw, ref_record = _reference(
                    L_t, Sigma, y, inv_tau, Q[1:], int(cfg["mode_max_iter"])
                )
            else:  # plain ESS: the prior is the reference
                m_ref, alpha = np.zeros((n, C_)), np.zeros((n, C_))
                LB, sw, ref_record = xp.eye(n), np.zeros(n), {}
            ops = {
                "L": L_t,
                "Sigma": Sigma,
                "LB": LB,
                "sqrt_w": sw,
                "m": m_ref,
                "alpha": alpha,
                "labels": y,
                "inv_tau": inv_tau,
                "Q2": Q[1:],
            }
            keys = jax.random.split(jax.random.key(self._sampler_seed(key)), n_chains)
            out = _run_chains(
                {k: jnp.asarray(v) for k, v in ops.items()},
                keys,
                n_warmup=int(cfg["n_warmup"]),
                n_keep=per,
                thin=int(cfg["thin"]),
            )
            out = {k: np.asarray(v) for k, v in out.items()}
            t1 = time.perf_counter()
            # whitened training latents in the rotated basis u = Q f: the shift u₀ is a prior
            # draw (its posterior is its prior), the contrasts are the chains' states
            rng = np.random.default_rng(call_seed(self.family, "conditional", key))
            v = out["v"].reshape(D, n, C_)
            w_shift = rng.standard_normal((D, n))
            w_con = np.asarray(solve_lower(L_t, xp.asarray(v.transpose(1, 0, 2).reshape(n, -1))))
            Wu = np.concatenate([w_shift.T[:, :, None], w_con.reshape(n, D, C_)], axis=2)
            # evaluation latents: u_e = Aᵀ W + L_c Z', A = L_t⁻¹ a²K_te, then f = u Q
            K_te = xp.asarray(self.gp.covariance(X_train, X_eval))
            K_ee = xp.asarray(self.gp.covariance(X_eval))
            A = solve_lower(L_t, K_te)  # (n, m)
            Cc = add_diag(K_ee - A.T @ A, nu)
            L_c, jit_c = chol_jitter(0.5 * (Cc + Cc.T), start=None if nu > 0 else JITTER_START)
            mean_e = np.asarray(A.T @ xp.asarray(Wu.reshape(n, D * K)))  # (m, D·K)
            z = xp.asarray(rng.standard_normal((D * K, m)))
            noise = np.asarray(tri_matmul_T(z, L_c))  # (D·K, m)
            u_e = mean_e.reshape(m, D, K).transpose(1, 0, 2) + noise.reshape(D, K, m).transpose(
                0, 2, 1
            )
            f_e = np.ascontiguousarray(u_e @ Q, dtype=np.float64)
            shift_t = np.asarray(tri_matmul_T(xp.asarray(w_shift), L_t))  # (D, n)
            u_t = np.concatenate([shift_t[:, :, None], v], axis=2)
            f_t = np.ascontiguousarray(u_t @ Q, dtype=np.float64)
        probs = class_probabilities(f_e, t_ev)
        t2 = time.perf_counter()
        conv = summarise_function_draws(probs.reshape(n_chains, per, m * K))
        train_conv = summarise_function_draws(v.reshape(n_chains, per, n * C_), rhat_only=True)
        rhat = np.asarray(conv["rhat"], dtype=np.float64).reshape(m, K)
        ess = _ess_bulk(probs.reshape(n_chains, per, m * K))
        ll = out["loglik"]
        half = max(per // 2, 1)
        n_iter = int(cfg["n_warmup"]) + per * int(cfg["thin"])
        wall = time.perf_counter() - t0
        diag = ESSDiagnostics(
            sampler="blackjax elliptical_slice",
            fidelity=self.fidelity.value,
            n_chains=n_chains,
            n_warmup=int(cfg["n_warmup"]),
            draws_per_chain=per,
            n_draws=D,
            convergence=conv,
            rhat_max_train=float(train_conv["rhat_max"]),
            rhat_train=list(train_conv["rhat"]),
            wall_seconds=float(wall),
            chain_iterations_per_second=float(n_chains * n_iter / max(t1 - t0, 1e-12)),
            n_classes=K,
            thin=int(cfg["thin"]),
            rhat_max_per_class=[
                float(np.nanmax(rhat[:, k])) if np.isfinite(rhat[:, k]).any() else float("nan")
                for k in range(K)
            ],
            ess_bulk_min=float(np.nanmin(ess)) if np.isfinite(ess).any() else float("nan"),
            ess_bulk_median=float(np.nanmedian(ess)) if np.isfinite(ess).any() else float("nan"),
            subiter_mean_warmup=(
                float(out["subiter"][:, : int(cfg["n_warmup"])].mean())
                if int(cfg["n_warmup"])
                else float("nan")
            ),
            subiter_mean_kept=float(out["subiter"][:, int(cfg["n_warmup"]) :].mean()),
            subiter_max=int(out["subiter"].max()),
            theta_abs_mean=float(out["theta"].mean()),
            loglik_mean_first_half=float(ll[:, :half].mean()),
            loglik_mean_second_half=float(ll[:, half:].mean()) if per > 1 else float("nan"),
            jitter_train=float(jit_t),
            jitter_conditional=float(jit_c),
            nugget=nu,
            sampler_seconds=float(t1 - t0),
            conditional_seconds=float(t2 - t1),
            reference=str(cfg["reference"]),
            mode_iterations=int(ref_record.get("mode_iterations", 0)),
            mode_loglik=float(ref_record.get("mode_loglik", float("nan"))),
            reference_curvature_mean=float(ref_record.get("reference_curvature_mean", 0.0)),
        )
        return ClassificationPosterior(
            prob_draws=probs,
            latent_eval=f_e,
            latent_train=f_t,
            n_chains=n_chains,
            diagnostics=diag.to_dict(),
        )


#: The family's prior class (its capabilities, e.g. ``numerics_version``, ``task_type``).
PRIOR_CLASS = GPClassificationPrior


def build_classification_prior(
    cov: Any,
    n_classes: int = DEFAULT_N_CLASSES,
    fidelity: Fidelity | str = DEFAULT_FIDELITY,
    *,
    sampler_kwargs: dict[str, Any] | None = None,
    use_cache: bool = True,
) -> GPClassificationPrior:
    """The latent-GP classification prior of the dataset ``cov``.

    The latent GP is exactly the dataset's GP prior (:func:`udbench.priors.gp.build_prior`:
    the same cached kernel fit and scale constant a at this fidelity; nothing is refitted).

    Parameters
    ----------
    cov : udbench.data.Covariates
    n_classes : int, default 3
    fidelity : Fidelity or str, default "standard"
        Selects the GP fit settings and the sampler preset.
    sampler_kwargs : dict, optional
        Preset overrides.
    use_cache : bool, default True
        Read and write the GP fit cache.

    Returns
    -------
    GPClassificationPrior

    Raises
    ------
    UdbenchError
        K < 2, an unknown fidelity, a dataset without a GP kernel family.
    """
    from udbench.priors.gp import build_prior

    K = check_n_classes("build_classification_prior", n_classes)
    fidelity = Fidelity.parse("build_classification_prior", fidelity)
    gp = build_prior(cov, fidelity, use_cache=use_cache)
    return GPClassificationPrior(gp, K, fidelity, dataset=cov.key, sampler_kwargs=sampler_kwargs)


def build_prior(
    cov: Any, fidelity: Fidelity | str = DEFAULT_FIDELITY, n_classes: int = DEFAULT_N_CLASSES
) -> GPClassificationPrior:
    """The family's builder for :func:`udbench.priors.base.make_prior` (``"gpc"``).

    :func:`build_classification_prior` with the builders' argument order (``cov``,
    ``fidelity``) and K as a keyword (a task setting).
    """
    return build_classification_prior(cov, n_classes, fidelity)
