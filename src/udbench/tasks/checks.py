"""Acceptance checks of reference posteriors (SPEC §7), per instance and pooled.

Per instance (:func:`acceptance_checks`), at every evaluation point x:

- simulation-based calibration (Talts et al. 2018): the rank of f*(x) among the D draws
  (number of draws below f*, 0..D); a 20-bin histogram of rank/(D + 1); the largest
  deviation of a bin share from 1/20;
- coverage of the central 90 % posterior interval (empirical 5 % and 95 % quantiles);
- Monte Carlo standard error of σ_f² by batch means (Flegal & Jones 2010): the D draws are
  cut into 20 consecutive batches (whole chains or chain segments for MCMC families),
  σ_f² is estimated in every batch about the overall draw mean, and
  MCSE = SD(batch estimates) / √20. Reported *relative*, MCSE / σ̂_f² (dimensionless; about
  √(2/D) ≈ 0.045 for D = 1000 independent draws);
- Pearson correlation of the posterior mean with f* over the evaluation pool;
- where the exact moments are known (GP): at every point, a two-sided test of the MC mean
  (m̂ − m)/√(σ_f²/D) ~ N(0, 1) and of the MC variance (D − 1)·σ̂_f²/σ_f² ~ χ²(D − 1); they
  agree when the smallest of the 2·n_eval p-values exceeds 0.01/(2·n_eval) (Bonferroni,
  family-wise level 1 %). The largest |z| of both are reported too.

Pooled (:func:`pool_checks`): coverage over all points of many instances with a percentile
bootstrap interval that resamples whole instances; the pooled SBC histogram's largest bin
deviation; median and 95th percentile of the relative MCSE over all points; median of the
per-instance correlations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.stats

from udbench._seeding import make_rng
from udbench._validation import check_array, param_error

__all__ = [
    "N_BATCHES",
    "N_SBC_BINS",
    "acceptance_checks",
    "batch_means_mcse_var",
    "pool_checks",
    "sbc_histogram",
    "sbc_ranks",
]

#: SBC histogram bins (SPEC §7).
N_SBC_BINS = 20
#: Batches for the batch-means MCSE (SPEC §7).
N_BATCHES = 20


def sbc_ranks(f_star: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Rank of f*(x) among the draws at every point: #{d : draws[d, x] < f*(x)}.

    Parameters
    ----------
    f_star : ndarray, shape (m,)
    draws : ndarray, shape (D, m)

    Returns
    -------
    ndarray, shape (m,), int64, values in 0..D
        Uniform on 0..D when f* is a draw from the same distribution as the draws.
    """
    return np.sum(draws < f_star[None, :], axis=0).astype(np.int64)


def sbc_histogram(ranks: np.ndarray, n_draws: int, n_bins: int = N_SBC_BINS) -> np.ndarray:
    """Counts of ``ranks`` (0..n_draws) in ``n_bins`` equal bins of rank / (n_draws + 1)."""
    bins = np.floor(np.asarray(ranks) * n_bins / (n_draws + 1)).astype(np.int64)
    return np.bincount(np.clip(bins, 0, n_bins - 1), minlength=n_bins)


def batch_means_mcse_var(draws: np.ndarray, n_batches: int = N_BATCHES) -> np.ndarray:
    """Batch-means Monte Carlo standard error of the posterior variance at every point.

    Parameters
    ----------
    draws : ndarray, shape (D, m)
        Draws in sampler order (chains concatenated); D ≥ 2·n_batches. Trailing draws that
        do not fill a batch are dropped.
    n_batches : int

    Returns
    -------
    ndarray, shape (m,)
        Absolute MCSE of σ̂_f², target units squared.
    """
    D = draws.shape[0]
    size = D // n_batches
    if size < 2:
        raise param_error("batch_means_mcse_var", "draws", f"have >= {2 * n_batches} rows", D)
    centred = draws[: size * n_batches] - draws.mean(axis=0, keepdims=True)
    per_batch = (centred**2).reshape(n_batches, size, -1).mean(axis=1)
    return per_batch.std(axis=0, ddof=1) / np.sqrt(n_batches)


def acceptance_checks(
    f_star: np.ndarray,
    draws: np.ndarray,
    mean: np.ndarray | None = None,
    var: np.ndarray | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Acceptance checks of one instance's reference posterior (SPEC §7).

    Parameters
    ----------
    f_star : ndarray, shape (m,)
        Ground truth at the evaluation pool.
    draws : ndarray, shape (D, m)
        Posterior draws.
    mean, var : ndarray, shape (m,), optional
        Exact posterior mean and variance (GP); enable the MC-agreement check.

    Returns
    -------
    summary : dict
        JSON-ready numbers: ``n_points, n_draws, sbc_hist (list of 20 counts),
        sbc_max_bin_deviation, coverage_90, covered_90, mcse_var_rel_median,
        mcse_var_rel_p95, corr_mean_fstar`` and, with exact moments,
        ``mc_mean_max_abs_z, mc_var_max_abs_z, mc_min_p, mc_agree``.
    per_point : dict of ndarray
        ``sbc_rank`` (m,) int64 and ``mcse_var_rel`` (m,) float64.

    Raises
    ------
    UdbenchError
        Shapes that do not match.
    """
    comp = "acceptance_checks"
    f_star = check_array(comp, "f_star", f_star, ndim=1)
    m = f_star.shape[0]
    draws = check_array(comp, "draws", draws, shape=(None, m))
    D = draws.shape[0]
    ranks = sbc_ranks(f_star, draws)
    hist = sbc_histogram(ranks, D)
    lo, hi = np.quantile(draws, [0.05, 0.95], axis=0)
    covered = int(np.sum((f_star >= lo) & (f_star <= hi)))
    mc_mean = draws.mean(axis=0)
    mc_var = draws.var(axis=0, ddof=1)
    mcse_rel = batch_means_mcse_var(draws) / np.maximum(mc_var, np.finfo(float).tiny)
    point_mean = mc_mean if mean is None else check_array(comp, "mean", mean, shape=(m,))
    corr = float(np.corrcoef(point_mean, f_star)[0, 1]) if m > 1 else float("nan")
    summary: dict[str, Any] = {
        "n_points": m,
        "n_draws": D,
        "sbc_hist": hist.tolist(),
        "sbc_max_bin_deviation": float(np.max(np.abs(hist / m - 1.0 / N_SBC_BINS))),
        "coverage_90": covered / m,
        "covered_90": covered,
        "mcse_var_rel_median": float(np.median(mcse_rel)),
        "mcse_var_rel_p95": float(np.quantile(mcse_rel, 0.95)),
        "corr_mean_fstar": corr,
    }
    if mean is not None and var is not None:
        var = check_array(comp, "var", var, shape=(m,), nonnegative=True)
        safe = np.maximum(var, np.finfo(float).tiny)
        z_mean = (mc_mean - point_mean) / np.sqrt(safe / D)
        z_var = (mc_var / safe - 1.0) / np.sqrt(2.0 / (D - 1))
        # exact tests: the MC mean is normal; (D - 1)·σ̂²/σ² is χ²(D - 1) for independent draws
        p_mean = 2.0 * scipy.stats.norm.sf(np.abs(z_mean))
        chi = (D - 1) * mc_var / safe
        p_var = 2.0 * np.minimum(scipy.stats.chi2.cdf(chi, D - 1), scipy.stats.chi2.sf(chi, D - 1))
        min_p = float(min(p_mean.min(), p_var.min()))
        summary.update(
            mc_mean_max_abs_z=float(np.max(np.abs(z_mean))),
            mc_var_max_abs_z=float(np.max(np.abs(z_var))),
            mc_min_p=min_p,
            mc_agree=bool(min_p > 0.01 / (2 * m)),
        )
    return summary, {"sbc_rank": ranks, "mcse_var_rel": mcse_rel}


def pool_checks(
    summaries: Sequence[dict[str, Any]],
    mcse_rel: Sequence[np.ndarray] | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Pool the acceptance checks of many instances (SPEC §7).

    Parameters
    ----------
    summaries : sequence of dict
        Per-instance ``summary`` dicts from :func:`acceptance_checks`.
    mcse_rel : sequence of ndarray, optional
        Per-instance per-point relative MCSE; without it the per-instance medians and
        95th percentiles are pooled by their median / maximum instead.
    n_boot : int
        Bootstrap resamples of whole instances (percentile interval, 95 %).
    seed : int
        Seeds the bootstrap stream.

    Returns
    -------
    dict
        ``n_instances, n_points, coverage_90, coverage_90_ci ([lo, hi]),
        sbc_hist, sbc_max_bin_deviation, mcse_var_median, mcse_var_p95,
        corr_mean_fstar_median`` and, where available, ``mc_agree_fraction`` (GP) and
        ``rhat_max``, ``n_rhat_above_1_05`` (MCMC families, from a per-instance ``rhat_max``).

    Raises
    ------
    UdbenchError
        If ``summaries`` is empty.
    """
    if not summaries:
        raise param_error("pool_checks", "summaries", "hold at least one instance", 0)
    covered = np.array([s["covered_90"] for s in summaries], dtype=np.float64)
    npts = np.array([s["n_points"] for s in summaries], dtype=np.float64)
    k = len(summaries)
    rng = make_rng("pool_checks", "bootstrap", seed)
    idx = rng.integers(0, k, size=(n_boot, k))
    boot = covered[idx].sum(axis=1) / npts[idx].sum(axis=1)
    hist = np.sum([np.asarray(s["sbc_hist"]) for s in summaries], axis=0)
    if mcse_rel is not None:
        allm = np.concatenate([np.asarray(a) for a in mcse_rel])
        mcse_med, mcse_p95 = float(np.median(allm)), float(np.quantile(allm, 0.95))
    else:
        mcse_med = float(np.median([s["mcse_var_rel_median"] for s in summaries]))
        mcse_p95 = float(np.max([s["mcse_var_rel_p95"] for s in summaries]))
    out: dict[str, Any] = {
        "n_instances": k,
        "n_points": int(npts.sum()),
        "coverage_90": float(covered.sum() / npts.sum()),
        "coverage_90_ci": [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))],
        "sbc_hist": hist.tolist(),
        "sbc_max_bin_deviation": float(np.max(np.abs(hist / hist.sum() - 1.0 / len(hist)))),
        "mcse_var_median": mcse_med,
        "mcse_var_p95": mcse_p95,
        "corr_mean_fstar_median": float(np.median([s["corr_mean_fstar"] for s in summaries])),
    }
    rhat = [s["rhat_max"] for s in summaries if "rhat_max" in s]
    if rhat:  # MCMC families: largest split-R̂ and instances above the 1.05 threshold
        out["rhat_max"] = float(np.nanmax(rhat))
        out["n_rhat_above_1_05"] = int(np.sum(np.asarray(rhat) > 1.05))
    agree = [s["mc_agree"] for s in summaries if "mc_agree" in s]
    if agree:
        out["mc_agree_fraction"] = float(np.mean(agree))
    return out
