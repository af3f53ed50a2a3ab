"""Proxy metrics: the scores people report for regression UQ when they have no ground truth.

Every metric here judges the method's Gaussian predictive N(â, AU + EU) (mean ``â``, total
variance ``s² = AU + EU``) at the n evaluation points against *noisy targets* y drawn at those
points with the task's known noise (:func:`noisy_targets`), and three of them judge the
epistemic part N(â, EU) against the ground truth f* (suffix ``_f``). Their definitions and
sources are in docs/metrics.md; in short (means over the n points):

- ``nll``: Gaussian negative log-likelihood −log φ(y; â, s²) (closed form; equal to
  ``scoringrules.logs_normal`` where that is finite, which it is not once φ underflows);
- ``crps``: continuous ranked probability score of N(â, s²) at y (``scoringrules.crps_normal``,
  closed form of Gneiting et al. 2005);
- ``picp_{50,90,95}``, ``mpiw_{50,90,95}``: coverage (fraction of y inside) and mean width of the
  central 50/90/95 % interval â ± z s;
- ``winkler_{50,90,95}``: interval (Winkler) score of those intervals
  (``scoringrules.interval_score``; Gneiting & Raftery 2007, eq. 43);
- ``miscal_area``: area between the calibration curve of central intervals (observed vs
  expected coverage at 99 levels 0.01 … 0.99, plus 0 and 1) and the diagonal (trapezoid rule;
  the Uncertainty Toolbox's "miscalibration area", Chung et al. 2021);
- ``ence``: expected normalised calibration error with :data:`ENCE_BINS` equal-count bins of
  s (Levi et al. 2022): mean over bins of |RMV − RMSE| / RMV;
- ``sharpness``: root mean predicted variance √mean(s²) (Uncertainty Toolbox; Gneiting et al.
  2007 "sharpness subject to calibration");
- ``spearman_err_sd``: Spearman ρ of |y − â| with s;
- ``ause``: area under the sparsification error curve (Ilg et al. 2018): points are removed in
  order of decreasing s, the RMSE of the rest (relative to the RMSE of all points) is compared
  with removing them in order of decreasing error (the oracle order), at fractions 0, 1/50, …,
  49/50; tied s count as removed in random order (expected curve, exact);
- ``nll_f``, ``crps_f``, ``ause_f``: the same for N(â, EU) against f* (EU's own quality as a
  predictive for the unknown function; ``ause_f`` orders by EU and errors |â − f*|).

Undefined values are NaN with a reason (``nan_reasons``), never silent: a predictive variance
of 0 at some point makes the scores of N(â, s²) undefined (the log score is infinite there).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from udbench._seeding import make_rng
from udbench._validation import check_array, param_error

__all__ = [
    "AUSE_STEPS",
    "CALIBRATION_LEVELS",
    "ENCE_BINS",
    "INTERVAL_LEVELS",
    "PROXY_DIRECTIONS",
    "PROXY_KEYS",
    "PROXY_LABELS",
    "calibration_curve",
    "noisy_targets",
    "oriented",
    "proxy_metrics",
]

#: Nominal coverages of the central intervals (percent).
INTERVAL_LEVELS: tuple[int, ...] = (50, 90, 95)
#: Equal-count bins of the predicted SD in the ENCE.
ENCE_BINS = 10
#: Removal fractions of the sparsification curves: 0, 1/AUSE_STEPS, …, (AUSE_STEPS−1)/AUSE_STEPS.
AUSE_STEPS = 50
#: Expected coverages at which the calibration curve is evaluated (besides 0 and 1).
CALIBRATION_LEVELS: np.ndarray = np.round(np.arange(1, 100) / 100.0, 2)

#: Proxy metrics stored in every results row, in order.
PROXY_KEYS: tuple[str, ...] = (
    "nll",
    "crps",
    *(f"picp_{q}" for q in INTERVAL_LEVELS),
    *(f"mpiw_{q}" for q in INTERVAL_LEVELS),
    *(f"winkler_{q}" for q in INTERVAL_LEVELS),
    "miscal_area",
    "ence",
    "sharpness",
    "spearman_err_sd",
    "ause",
    "nll_f",
    "crps_f",
    "ause_f",
)
#: How a proxy ranks methods: ``"lower"`` / ``"higher"`` is better, or ``"nominal:<p>"``
#: (closest to the nominal coverage p is best: −|PICP − p|).
PROXY_DIRECTIONS: dict[str, str] = {
    "nll": "lower",
    "crps": "lower",
    **{f"picp_{q}": f"nominal:{q / 100:g}" for q in INTERVAL_LEVELS},
    **{f"mpiw_{q}": "lower" for q in INTERVAL_LEVELS},
    **{f"winkler_{q}": "lower" for q in INTERVAL_LEVELS},
    "miscal_area": "lower",
    "ence": "lower",
    "sharpness": "lower",
    "spearman_err_sd": "higher",
    "ause": "lower",
    "nll_f": "lower",
    "crps_f": "lower",
    "ause_f": "lower",
}
#: Short readable names.
PROXY_LABELS: dict[str, str] = {
    "nll": "NLL",
    "crps": "CRPS",
    **{f"picp_{q}": f"PICP {q}%" for q in INTERVAL_LEVELS},
    **{f"mpiw_{q}": f"MPIW {q}%" for q in INTERVAL_LEVELS},
    **{f"winkler_{q}": f"Winkler {q}%" for q in INTERVAL_LEVELS},
    "miscal_area": "miscal. area",
    "ence": "ENCE",
    "sharpness": "sharpness",
    "spearman_err_sd": "ρ(|err|, SD)",
    "ause": "AUSE",
    "nll_f": "NLL vs f* (EU)",
    "crps_f": "CRPS vs f* (EU)",
    "ause_f": "AUSE vs f* (EU)",
}
_BACKEND = "numpy"  # scoringrules' numba backend would compile in every fresh worker


def oriented(key: str, values: Any) -> np.ndarray:
    """Values of proxy ``key`` turned so that higher is better (for ranking methods).

    ``"lower"`` proxies are negated, ``"higher"`` ones kept, coverages become −|PICP − p|.

    Raises
    ------
    UdbenchError
        ``key`` is not a proxy (:data:`PROXY_KEYS`).
    """
    if key not in PROXY_DIRECTIONS:
        raise param_error("proxies.oriented", "key", f"be one of {', '.join(PROXY_KEYS)}", key)
    v = np.asarray(values, dtype=float)
    how = PROXY_DIRECTIONS[key]
    if how == "lower":
        return -v
    if how == "higher":
        return v
    return -np.abs(v - float(how.split(":", 1)[1]))


def noisy_targets(task_id: str, f_eval: Any, noise_var_eval: Any) -> np.ndarray:
    """The noisy targets y = f* + ε at the evaluation points, the same on every call.

    ε ~ N(0, σ²_ε(x)) independently per point, drawn from the stream
    ``udbench._seeding.make_rng("proxy-targets", task_id)``: every method of a task is
    scored against the same y, and a re-run (or another machine) draws it again bit for bit,
    so y is not stored.

    Parameters
    ----------
    task_id : str
        The task's id (``task.spec.task_id``).
    f_eval, noise_var_eval : array_like, shape (n,)
        The ground truth f* and the noise variance at the evaluation points.

    Returns
    -------
    ndarray, shape (n,)

    Raises
    ------
    UdbenchError
        Mismatched shapes, NaN/inf, negative noise variance.
    """
    f = check_array("noisy_targets", "f_eval", f_eval, ndim=1)
    var = check_array(
        "noisy_targets", "noise_var_eval", noise_var_eval, shape=f.shape, nonnegative=True
    )
    z = make_rng("proxy-targets", str(task_id)).standard_normal(f.size)
    return f + np.sqrt(var) * z


def _sorted_abs_z(mean: np.ndarray, sd: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.sort(np.abs(y - mean) / sd)


def calibration_curve(
    mean: Any, variance: Any, y: Any, levels: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Observed against expected coverage of the central intervals of N(mean, variance).

    Parameters
    ----------
    mean, variance : array_like, shape (n,)
        Predictive mean and (positive) total variance.
    y : array_like, shape (n,)
        Observations.
    levels : array_like, optional
        Expected coverages in [0, 1]; default 0, :data:`CALIBRATION_LEVELS`, 1.

    Returns
    -------
    expected, observed : ndarray, shape (L,)
        ``observed[j]`` = fraction of points with |y − mean| ≤ z_{(1+p_j)/2} · sd.

    Raises
    ------
    UdbenchError
        Mismatched shapes, NaN/inf, a variance <= 0, a level outside [0, 1].
    """
    name = "calibration_curve"
    m = check_array(name, "mean", mean, ndim=1)
    v = check_array(name, "variance", variance, shape=m.shape, nonnegative=True)
    obs = check_array(name, "y", y, shape=m.shape)
    if np.any(v <= 0):
        raise param_error(name, "variance", "be > 0 everywhere", f"0 at {int(np.sum(v <= 0))}")
    p = (
        np.concatenate([[0.0], CALIBRATION_LEVELS, [1.0]])
        if levels is None
        else check_array(name, "levels", levels, ndim=1)
    )
    if np.any((p < 0) | (p > 1)):
        raise param_error(name, "levels", "lie in [0, 1]", p[(p < 0) | (p > 1)][:3])
    return p, _observed(_sorted_abs_z(m, np.sqrt(v), obs), p)


def _observed(abs_z_sorted: np.ndarray, p: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = stats.norm.ppf((1.0 + p) / 2.0)  # p = 1 → inf
    counts = np.searchsorted(abs_z_sorted, z, side="right")
    return counts / abs_z_sorted.size


def _gaussian_nll(obs: np.ndarray, mean: np.ndarray, var: np.ndarray) -> float:
    """Mean −log φ(obs; mean, var) = ½ log(2π var) + (obs − mean)² / (2 var), closed form.

    Written out rather than ``scoringrules.logs_normal``, which takes the log of the density
    and so returns inf once the density underflows (|z| > ~38); the closed form stays finite.
    """
    return float(np.mean(0.5 * np.log(2.0 * np.pi * var) + 0.5 * (obs - mean) ** 2 / var))


def _ence(sd: np.ndarray, sq_err: np.ndarray, bins: int) -> tuple[float, str | None]:
    n = sd.size
    if n < bins:
        return float("nan"), f"fewer points ({n}) than ENCE bins ({bins})"
    order = np.argsort(sd, kind="stable")
    terms = []
    for idx in np.array_split(order, bins):
        rmv = float(np.sqrt(np.mean(sd[idx] ** 2)))
        rmse = float(np.sqrt(np.mean(sq_err[idx])))
        terms.append(abs(rmv - rmse) / rmv)
    return float(np.mean(terms)), None


def _ause(unc: np.ndarray, sq_err: np.ndarray, steps: int) -> tuple[float, str | None]:
    """Area under the sparsification error curve (RMSE, relative to all points)."""
    n = unc.size
    total = float(np.mean(sq_err))
    if n < 2:
        return float("nan"), f"fewer than 2 points (n={n})"
    if total <= 0:
        return float("nan"), "every error is 0"
    # ties in the uncertainty: expected curve under random removal order within a tie
    _, inverse = np.unique(unc, return_inverse=True)
    tie_mean = np.bincount(inverse, weights=sq_err) / np.bincount(inverse)
    by_unc = tie_mean[inverse][np.argsort(unc, kind="stable")]  # ascending uncertainty
    by_err = np.sort(sq_err)
    keep = n - np.floor(np.arange(steps) / steps * n).astype(int)  # points kept, >= 1
    curve = np.sqrt(np.cumsum(by_unc)[keep - 1] / keep / total)
    oracle = np.sqrt(np.cumsum(by_err)[keep - 1] / keep / total)
    frac = np.arange(steps) / steps
    return float(np.trapezoid(curve - oracle, frac)), None


def proxy_metrics(
    mean: Any,
    aleatoric: Any,
    epistemic: Any,
    y: Any,
    f_star: Any = None,
    *,
    ence_bins: int = ENCE_BINS,
    ause_steps: int = AUSE_STEPS,
) -> dict[str, float | str]:
    """Every proxy metric of one prediction (module docstring; docs/metrics.md).

    Parameters
    ----------
    mean, aleatoric, epistemic : array_like, shape (n,)
        The method's prediction â, AU and EU (variances, >= 0) at the evaluation points.
    y : array_like, shape (n,)
        Noisy targets at the same points (:func:`noisy_targets`).
    f_star : array_like, shape (n,), optional
        The ground truth; without it ``nll_f``, ``crps_f``, ``ause_f`` are NaN with a reason.
    ence_bins : int, default :data:`ENCE_BINS`
        Equal-count bins of the ENCE.
    ause_steps : int, default :data:`AUSE_STEPS`
        Removal fractions of the sparsification curves.

    Returns
    -------
    dict
        A float per :data:`PROXY_KEYS` and the string ``nan_reasons`` (``"key: reason"``
        entries joined by ``"; "``, empty when no value is NaN).

    Raises
    ------
    UdbenchError
        Mismatched shapes, NaN/inf, negative variances, bins or steps not integers >= 1.
    """
    import scoringrules as sr

    from udbench.evaluation.metrics import spearman

    name = "proxy_metrics"
    m = check_array(name, "mean", mean, ndim=1)
    au = check_array(name, "aleatoric", aleatoric, shape=m.shape, nonnegative=True)
    eu = check_array(name, "epistemic", epistemic, shape=m.shape, nonnegative=True)
    obs = check_array(name, "y", y, shape=m.shape)
    for pname, val in (("ence_bins", ence_bins), ("ause_steps", ause_steps)):
        if isinstance(val, bool) or not isinstance(val, int | np.integer) or val < 1:
            raise param_error(name, pname, "be an integer >= 1", val)
    out: dict[str, float | str] = {k: float("nan") for k in PROXY_KEYS}
    reasons: list[str] = []

    def undefined(keys: list[str], why: str) -> None:
        reasons.extend(f"{k}: {why}" for k in keys)

    var = au + eu
    sq_err = (obs - m) ** 2
    total_keys = [k for k in PROXY_KEYS if not k.endswith("_f")]
    n_zero = int(np.sum(var <= 0))
    if m.size == 0:
        undefined(list(PROXY_KEYS), "no evaluation points")
    elif n_zero:
        undefined(total_keys, f"predictive variance AU + EU is 0 at {n_zero} of {m.size} points")
    else:
        sd = np.sqrt(var)
        out["nll"] = _gaussian_nll(obs, m, var)
        out["crps"] = float(np.mean(sr.crps_normal(obs, m, sd, backend=_BACKEND)))
        for q in INTERVAL_LEVELS:
            alpha = 1.0 - q / 100.0
            half = float(stats.norm.ppf(1.0 - alpha / 2.0)) * sd
            lo, hi = m - half, m + half
            out[f"picp_{q}"] = float(np.mean((obs >= lo) & (obs <= hi)))
            out[f"mpiw_{q}"] = float(np.mean(hi - lo))
            score = sr.interval_score(obs, lo, hi, alpha, backend=_BACKEND)
            out[f"winkler_{q}"] = float(np.mean(score))
        p = np.concatenate([[0.0], CALIBRATION_LEVELS, [1.0]])
        observed = _observed(_sorted_abs_z(m, sd, obs), p)
        out["miscal_area"] = float(np.trapezoid(np.abs(observed - p), p))
        value, why = _ence(sd, sq_err, int(ence_bins))
        out["ence"] = value
        if why:
            undefined(["ence"], why)
        out["sharpness"] = float(np.sqrt(np.mean(var)))
        rho = spearman(np.abs(obs - m), sd, names=("|y − â|", "SD"))
        out["spearman_err_sd"] = rho.value
        if rho.reason:
            undefined(["spearman_err_sd"], rho.reason)
        value, why = _ause(sd, sq_err, int(ause_steps))
        out["ause"] = value
        if why:
            undefined(["ause"], why)
    if f_star is None:
        if m.size:
            undefined(["nll_f", "crps_f", "ause_f"], "no ground truth f* given")
    elif m.size:
        f = check_array(name, "f_star", f_star, shape=m.shape)
        sq_f = (f - m) ** 2
        value, why = _ause(np.sqrt(eu), sq_f, int(ause_steps))
        out["ause_f"] = value
        if why:
            undefined(["ause_f"], why)
        n_zero_eu = int(np.sum(eu <= 0))
        if n_zero_eu:
            undefined(["nll_f", "crps_f"], f"EU is 0 at {n_zero_eu} of {m.size} points")
        else:
            sd_f = np.sqrt(eu)
            out["nll_f"] = _gaussian_nll(f, m, eu)
            out["crps_f"] = float(np.mean(sr.crps_normal(f, m, sd_f, backend=_BACKEND)))
    out["nan_reasons"] = "; ".join(reasons)
    return out
