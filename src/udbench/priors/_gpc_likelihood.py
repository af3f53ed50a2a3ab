"""The likelihood of :mod:`udbench.priors.gp_classification` and the level rule of its temperature.

Input checks (each value is checked where it enters, with one error template), the class
probabilities softmax(f/τ) and label draws, and the level rule: the prior-expected Bayes
error as a function of the signal ratio, and the temperature τ that puts it at a named
difficulty. Re-exported by :mod:`udbench.priors.gp_classification`, the public module.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import scipy.optimize
import scipy.special

from udbench._seeding import make_rng
from udbench._validation import check_array, param_error
from udbench.priors.base import CLASSIFICATION_DIFFICULTIES

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


def log_class_probabilities(latents: Any, tau: Any) -> np.ndarray:
    """log π = log softmax(f / τ), accurate where π rounds to 1.0.

    With z = f/τ − max_j f_j/τ and s the sum of exp(z_j) over the classes other than the
    leading one, log π_k = z_k − log1p(s): the leading class gets −log1p(s) ≈ −s, which
    float64 holds down to s ≈ 1e-308 (a lead of ~700 in f/τ), where π itself (and a plain
    log-softmax, z − log Σ exp z) rounds to exactly 1.0 (0.0) once the lead exceeds ~37.
    Strictly increasing in π_k at every point, so it orders values of π without those
    ties (the SBC ranks of a classification task, :func:`udbench.tasks.generate.
    make_classification_task`).

    Parameters
    ----------
    latents : array_like, shape (..., m, K)
    tau : array_like, shape (m,)
        Temperatures τ(x) > 0.

    Returns
    -------
    ndarray, shape (..., m, K), float64, ≤ 0

    Raises
    ------
    UdbenchError
        As :func:`class_probabilities`.
    """
    f = check_array("log_class_probabilities", "latents", latents)
    if f.ndim < 2 or f.shape[-1] < 2:
        raise param_error(
            "log_class_probabilities", "latents", "have shape (..., m, K) with K >= 2", f.shape
        )
    t = check_temperature("log_class_probabilities", "tau", tau, f.shape[-2])
    z = f / t[:, None]
    lead = np.argmax(z, axis=-1)[..., None]
    z = z - np.take_along_axis(z, lead, axis=-1)
    e = np.exp(z)
    np.put_along_axis(e, lead, 0.0, axis=-1)  # the leading class's exp(0) = 1, kept apart
    return np.asarray(z - np.log1p(e.sum(axis=-1, keepdims=True)), dtype=np.float64)


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
