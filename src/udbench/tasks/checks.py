"""Acceptance checks of reference posteriors (SPEC §7), per instance and pooled.

Per instance (:func:`acceptance_checks`), at every evaluation point x:

- simulation-based calibration (Talts et al. 2018): the rank of f*(x) among the D draws
  (number of draws below f*, 0..D); a 20-bin histogram of rank/(D + 1); the largest
  deviation of a bin share from 1/20;
- coverage of the central 90 % posterior interval of the D draws, as order statistics
  [x₍ₖ₎, x₍D+1−k₎] with k = max(1, ⌊0.05·(D + 1) + ½⌋) (:func:`coverage_rank_bounds`): f* is
  inside when its rank r satisfies k ≤ r ≤ D − k. Under a correct posterior f* and the draws
  are D + 1 exchangeable values, r is uniform on 0..D and the expected coverage is exactly
  (D + 1 − 2k)/(D + 1) (:func:`expected_coverage`; the distribution-free prediction
  interval of Wilks 1941, David & Nagaraja 2003 §7.2), e.g. 0.9024 at D = 40 and 0.9001 at
  D = 1000. With each draw in turn taken as the truth among the other D values, the same
  rule gives the D coverage counts a correct posterior would produce for this instance
  (``covered_90_null``, :func:`coverage_counts`): the null distribution of the pooled test;
- Monte Carlo standard error of σ_f² by batch means (Flegal & Jones 2010), computed by
  :func:`udbench.priors.diagnostics.batch_means_mcse_var`: 20 batches of whole chains (at least
  20 chains) or equal chain segments (fewer chains; independent draws are one chain),
  σ_f² estimated in every batch about the overall draw mean, MCSE = SD(batch estimates) /
  √20. Reported *relative*, MCSE / σ̂_f² (dimensionless; about √(2/D) ≈ 0.045 for
  D = 1000 independent draws);
- Pearson correlation of the posterior mean with f* over the evaluation pool;
- where the exact moments are known (GP): at every point, a two-sided test of the MC mean
  (m̂ − m)/√(σ_f²/D) ~ N(0, 1) and of the MC variance (D − 1)·σ̂_f²/σ_f² ~ χ²(D − 1); they
  agree when the smallest of the 2·n_eval p-values exceeds 0.01/(2·n_eval) (Bonferroni,
  family-wise level 1 %). The largest |z| of both are reported too.

Pooled over many instances, and the verdicts of ``udbench check``:
:mod:`udbench.tasks.pooling`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from udbench._validation import check_array, param_error
from udbench.priors import (
    MCSE_N_BATCHES,
    RHAT_THRESHOLD,
    batch_means_mcse_var,
)

__all__ = [
    "GATE_LEVEL",
    "MC_AGREE_LEVEL",
    "NOMINAL_COVERAGE",
    "N_SBC_BINS",
    "STUCK_ESS_PER_CHAIN",
    "acceptance_checks",
    "coverage_counts",
    "coverage_rank_bounds",
    "coverage_summary",
    "expected_coverage",
    "generation_record",
    "mcmc_summary",
    "mcse_implied_ess",
    "missing_training_classes",
    "sbc_expected_shares",
    "sbc_histogram",
    "sbc_ranks",
    "stuck_chains",
]

#: SBC histogram bins (SPEC §7).
N_SBC_BINS = 20
#: Nominal level of the central posterior interval whose coverage is checked (SPEC §7).
NOMINAL_COVERAGE = 0.90
#: Family-wise level of one instance's MC = exact test (Bonferroni over its 2·n_eval tests).
MC_AGREE_LEVEL = 0.01
#: Level of each pooled gate of :func:`udbench.tasks.pooling.gate_verdicts` (coverage,
#: MC = exact): a correct reference posterior fails each with probability at most this.
GATE_LEVEL = 0.01
#: Effective draws of σ_f² per chain at or below which :func:`stuck_chains` flags an instance.
STUCK_ESS_PER_CHAIN = 1.5


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


def _rank_bins(ranks: np.ndarray, n_draws: int, n_bins: int) -> np.ndarray:
    # integer arithmetic: floor(r · n_bins / (D + 1)) without rounding error
    bins = (np.asarray(ranks, dtype=np.int64) * n_bins) // (int(n_draws) + 1)
    return np.clip(bins, 0, n_bins - 1)


def sbc_histogram(ranks: np.ndarray, n_draws: int, n_bins: int = N_SBC_BINS) -> np.ndarray:
    """Counts of ``ranks`` (0..n_draws) in ``n_bins`` equal bins of rank / (n_draws + 1)."""
    return np.bincount(_rank_bins(ranks, n_draws, n_bins), minlength=n_bins)


def sbc_expected_shares(n_draws: int, n_bins: int = N_SBC_BINS) -> np.ndarray:
    """Expected share of each SBC bin under a correct posterior, exactly.

    The rank of f* is uniform on the D + 1 values 0..D (Talts et al. 2018, Theorem 1), and
    bin b holds the ranks r with ⌊r · n_bins / (D + 1)⌋ = b; unless n_bins divides D + 1 the
    bins hold different numbers of ranks (D = 40: 2 or 3 of 41), so a correct posterior's
    shares are not all 1/n_bins.

    Parameters
    ----------
    n_draws : int
        D.
    n_bins : int, default 20

    Returns
    -------
    ndarray, shape (n_bins,)
        Shares summing to 1.
    """
    counts = np.bincount(_rank_bins(np.arange(int(n_draws) + 1), n_draws, n_bins), minlength=n_bins)
    return counts / (int(n_draws) + 1)


def coverage_rank_bounds(n_draws: int, nominal: float = NOMINAL_COVERAGE) -> tuple[int, int]:
    """Ranks that count as inside the central ``nominal`` interval of D draws.

    The interval is [x₍ₖ₎, x₍D+1−k₎] (order statistics of the draws, 1-based) with
    k = max(1, ⌊(1 − nominal)/2 · (D + 1) + ½⌋): f* is inside when its rank r (the number of
    draws below it, :func:`sbc_ranks`) satisfies k ≤ r ≤ D − k.

    Parameters
    ----------
    n_draws : int
        D ≥ 1.
    nominal : float, default 0.90

    Returns
    -------
    (k, D − k) : tuple of int
        The smallest and largest covered rank (an empty range when D < 2k).

    Raises
    ------
    UdbenchError
        D < 1 or ``nominal`` outside (0, 1).
    """
    if isinstance(n_draws, bool) or not isinstance(n_draws, (int, np.integer)) or n_draws < 1:
        raise param_error("coverage_rank_bounds", "n_draws", "be an integer >= 1", n_draws)
    if not 0.0 < float(nominal) < 1.0:
        raise param_error("coverage_rank_bounds", "nominal", "be in (0, 1)", nominal)
    D = int(n_draws)
    k = max(1, int(np.floor((1.0 - float(nominal)) / 2.0 * (D + 1) + 0.5)))
    return k, D - k


def expected_coverage(n_draws: int, nominal: float = NOMINAL_COVERAGE) -> float:
    """Coverage of the interval of :func:`coverage_rank_bounds` under a correct posterior.

    f* and the D draws are D + 1 exchangeable continuous values, so the rank of f* is
    uniform on 0..D and P(k ≤ r ≤ D − k) = (D + 1 − 2k)/(D + 1) exactly (the distribution-free
    prediction interval between order statistics; Wilks 1941; David & Nagaraja 2003, §7.2).

    Examples
    --------
    >>> round(expected_coverage(40), 4), round(expected_coverage(1000), 4)
    (0.9024, 0.9001)
    """
    k, hi = coverage_rank_bounds(n_draws, nominal)
    return max(0, hi - k + 1) / (int(n_draws) + 1)


def coverage_counts(
    f_star: np.ndarray, draws: np.ndarray, nominal: float = NOMINAL_COVERAGE
) -> tuple[int, np.ndarray]:
    """Points covered by the central interval, for f* and for each draw taken as the truth.

    The D + 1 values f*, draw₁, …, draw_D at each point are pooled; value v counts as covered
    when the number of the *other* D values below it lies in the bounds of
    :func:`coverage_rank_bounds`. For f* this is the coverage of the interval of the D draws.
    For draw j it is the coverage draw j would get as the truth, with f* in its place among
    the draws. Under a correct posterior the D + 1 values are exchangeable, so the D + 1
    counts are too: the observed count is a uniform pick among them. This is the null
    distribution of the pooled coverage test of :func:`udbench.tasks.pooling.pool_checks` (a
    randomization test). The D + 1 counts average exactly ``expected_coverage(D) · m`` when no
    values tie.

    Parameters
    ----------
    f_star : ndarray, shape (m,)
    draws : ndarray, shape (D, m)

    Returns
    -------
    covered : int
        Points where f* is inside the interval of the draws.
    covered_null : ndarray, shape (D,), int64
        The same count for each draw as the truth.
    """
    D = draws.shape[0]
    k, hi = coverage_rank_bounds(D, nominal)
    values = np.concatenate([np.asarray(f_star)[None, :], np.asarray(draws)], axis=0)
    if hi < k:  # D < 2k: nothing is ever covered
        counts = np.zeros(D + 1, dtype=np.int64)
    else:
        # value v has #{others < v} in [k, D − k]  ⇔  s₍k−1₎ < v ≤ s₍D−k₎ (0-based order
        # statistics s of all D + 1 values at the point, ties included)
        order = np.partition(values, [k - 1, hi], axis=0)
        inside = (values > order[k - 1][None, :]) & (values <= order[hi][None, :])
        counts = inside.sum(axis=1).astype(np.int64)
    return int(counts[0]), counts[1:]


def coverage_summary(f_star: np.ndarray, draws: np.ndarray) -> dict[str, Any]:
    """The coverage figures of one instance (SPEC §7), as :func:`acceptance_checks` stores them.

    Parameters
    ----------
    f_star : ndarray, shape (m,)
    draws : ndarray, shape (D, m)

    Returns
    -------
    dict
        ``coverage_90`` (share of points with f* inside the interval of
        :func:`coverage_rank_bounds`), ``covered_90`` (their number),
        ``coverage_90_expected`` (:func:`expected_coverage` at D) and ``covered_90_null``
        (list of D counts, :func:`coverage_counts`).
    """
    covered, null = coverage_counts(f_star, draws)
    return {
        "coverage_90": covered / f_star.shape[0],
        "covered_90": covered,
        "coverage_90_expected": expected_coverage(draws.shape[0]),
        "covered_90_null": null.tolist(),
    }


def acceptance_checks(
    f_star: np.ndarray,
    draws: np.ndarray,
    mean: np.ndarray | None = None,
    var: np.ndarray | None = None,
    n_chains: int = 1,
    *,
    rank_values: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Acceptance checks of one instance's reference posterior (SPEC §7).

    Parameters
    ----------
    f_star : ndarray, shape (m,)
        Ground truth at the evaluation pool.
    draws : ndarray, shape (D, m)
        Posterior draws, chain-major (chain c holds rows c·D/n_chains … (c+1)·D/n_chains − 1),
        D ≥ 2.
    mean, var : ndarray, shape (m,), optional
        Exact posterior mean and variance (GP); enable the MC-agreement check.
    n_chains : int, default 1
        Number of MCMC chains in ``draws`` (1 for independent draws); sets the batches of
        the MCSE (whole chains or chain segments, SPEC §7). Must divide D.
    rank_values : (ndarray (m,), ndarray (D, m)), optional
        ``(g(f_star), g(draws))`` for a transform g strictly increasing at every point, used
        in place of ``f_star`` and ``draws`` by the rank-based checks (SBC ranks and
        histogram, coverage and its null counts): the same ranks in exact arithmetic, but
        free of the ties that rounding puts into ``f_star`` and ``draws``. A classification
        task passes log π for π, which saturates at exactly 1.0 in float64 once a class's
        logit leads by more than about 37 (docs/classification.md, "SBC and coverage of
        π*"). The MCSE and the correlation always use ``f_star`` and ``draws``.

    Returns
    -------
    summary : dict
        JSON-ready numbers: ``n_points, n_draws, sbc_hist (list of 20 counts),
        sbc_max_bin_deviation`` (from the exact expected shares,
        :func:`sbc_expected_shares`), ``coverage_90, covered_90`` (the interval of
        :func:`coverage_rank_bounds`), ``coverage_90_expected`` (its coverage under a
        correct posterior), ``covered_90_null`` (list of D counts, :func:`coverage_counts`),
        ``mcse_var_rel_median, mcse_var_rel_p95, corr_mean_fstar`` and, with exact moments,
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
    if D < 2:
        raise param_error(comp, "draws", "hold at least 2 draws (rows)", f"shape {draws.shape}")
    if isinstance(n_chains, bool) or not isinstance(n_chains, (int, np.integer)):
        raise param_error(comp, "n_chains", "be a positive integer dividing D", n_chains)
    if n_chains < 1 or D % n_chains:
        raise param_error(comp, "n_chains", f"be a positive integer dividing D={D}", n_chains)
    r_star, r_draws = f_star, draws
    if rank_values is not None:
        r_star = check_array(comp, "rank_values[0]", rank_values[0], shape=(m,))
        r_draws = check_array(comp, "rank_values[1]", rank_values[1], shape=(D, m))
    ranks = sbc_ranks(r_star, r_draws)
    hist = sbc_histogram(ranks, D)
    mc_mean = draws.mean(axis=0)
    mc_var = draws.var(axis=0, ddof=1)
    mcse = batch_means_mcse_var(draws.reshape(int(n_chains), D // int(n_chains), m))
    mcse_rel = mcse / np.maximum(mc_var, np.finfo(float).tiny)
    point_mean = mc_mean if mean is None else check_array(comp, "mean", mean, shape=(m,))
    corr = float(np.corrcoef(point_mean, f_star)[0, 1]) if m > 1 else float("nan")
    summary: dict[str, Any] = {
        "n_points": m,
        "n_draws": D,
        "sbc_hist": hist.tolist(),
        "sbc_max_bin_deviation": float(np.max(np.abs(hist / m - sbc_expected_shares(D)))),
        **coverage_summary(r_star, r_draws),
        "mcse_var_rel_median": float(np.median(mcse_rel)),
        "mcse_var_rel_p95": float(np.quantile(mcse_rel, 0.95)),
        "corr_mean_fstar": corr,
    }
    if mean is not None and var is not None:
        var = check_array(comp, "var", var, shape=(m,), nonnegative=True)
        safe = np.maximum(var, np.finfo(float).tiny)
        z_mean = (mc_mean - point_mean) / np.sqrt(safe / D)
        z_var = (mc_var / safe - 1.0) / np.sqrt(2.0 / (D - 1))
        import scipy.stats  # lazy: ~1 s to import, and ``udbench --help`` needs only the defaults

        # exact tests: the MC mean is normal; (D - 1)·σ̂²/σ² is χ²(D - 1) for independent draws
        p_mean = 2.0 * scipy.stats.norm.sf(np.abs(z_mean))
        chi = (D - 1) * mc_var / safe
        p_var = 2.0 * np.minimum(scipy.stats.chi2.cdf(chi, D - 1), scipy.stats.chi2.sf(chi, D - 1))
        min_p = float(min(p_mean.min(), p_var.min()))
        summary.update(
            mc_mean_max_abs_z=float(np.max(np.abs(z_mean))),
            mc_var_max_abs_z=float(np.max(np.abs(z_var))),
            mc_min_p=min_p,
            mc_agree=bool(min_p > MC_AGREE_LEVEL / (2 * m)),
        )
    return summary, {"sbc_rank": ranks, "mcse_var_rel": mcse_rel}


def mcmc_summary(diagnostics: dict[str, Any]) -> dict[str, Any]:
    """Per-instance MCMC scalars for pooling, from a task's stored diagnostics (SPEC §7).

    Parameters
    ----------
    diagnostics : dict
        ``Task.diagnostics``: its ``"sampler"`` entry (``Posterior.diagnostics`` of the
        family) and, for tasks from :func:`udbench.tasks.generate_task`, its
        ``"seed_replacement"`` record.

    Returns
    -------
    dict
        Only the keys whose source is stored: ``rhat_max``, ``rhat_n_above`` (points with
        split-R̂ > 1.05) and ``rhat_n_points`` (points with a finite R̂), from the per-point
        ``rhat`` list (or the scalar ``rhat_max`` alone); ``rhat_iid_max`` (the largest
        R̂ that independent draws in the same chain layout give, see
        :func:`udbench.priors.diagnostics.rhat_iid_reference`); ``accept_rate`` (NUTS
        ``accept_prob_mean``, HBART ``accept_rate_kept``: share of trees with an accepted
        grow/prune move); ``n_divergent``, ``tree_depth_mean`` and
        ``share_at_max_tree_depth`` (NUTS); ``rhat_gate`` (whether the R̂ rule gates the
        family: False for HBART, SPEC §7); ``n_seed_replacements`` (rejections before the
        accepted seed) and ``seed_replaced`` (bool). Empty for a GP task without a
        replacement record.
    """
    sampler = diagnostics.get("sampler") or {}
    out: dict[str, Any] = {}
    if "rhat" in sampler:
        rhat = np.asarray(sampler["rhat"], dtype=np.float64)
        rhat = rhat[np.isfinite(rhat)]
        if rhat.size:
            out["rhat_max"] = float(rhat.max())
        out["rhat_n_above"] = int(np.sum(rhat > RHAT_THRESHOLD))
        out["rhat_n_points"] = int(rhat.size)
    elif "rhat_max" in sampler:
        out["rhat_max"] = float(sampler["rhat_max"])
    if "rhat_iid_max" in sampler:
        out["rhat_iid_max"] = float(sampler["rhat_iid_max"])
    if "rhat_gate" in sampler:
        out["rhat_gate"] = bool(sampler["rhat_gate"])
    if "accept_prob_mean" in sampler:
        out["accept_rate"] = float(sampler["accept_prob_mean"])
    elif "accept_rate_kept" in sampler:
        out["accept_rate"] = float(sampler["accept_rate_kept"])
    for key in ("n_divergent",):
        if key in sampler:
            out[key] = int(sampler[key])
    for key in ("tree_depth_mean", "share_at_max_tree_depth"):
        if key in sampler:
            out[key] = float(sampler[key])
    record = diagnostics.get("seed_replacement")
    if record is not None:
        out["n_seed_replacements"] = len(record.get("log", []))
        out["seed_replaced"] = bool(record.get("used_seed") != record.get("requested_seed"))
    return out


def missing_training_classes(y_train: np.ndarray, n_classes: int) -> list[int]:
    """The classes of a classification task that no training label holds.

    A ``gpc`` instance whose latent functions put one class far above the others at every
    training input (the prior allows it: an f* shift latent drawn far out) has training
    labels of fewer than K classes; its classifiers then learn nothing about the others, its
    evaluation labels are nearly all one class, and rank correlations on it measure noise.
    Such an instance is valid (its oracle is still exact) but degenerate: ``udbench check``
    lists it and every classifier cell on it notes it (docs/classification.md, "Degenerate
    instances").

    Parameters
    ----------
    y_train : ndarray of int, shape (n_train,)
        Training labels in ``0 … n_classes − 1``.
    n_classes : int
        K.

    Returns
    -------
    list of int
        The absent classes, ascending (empty for an ordinary instance).

    Raises
    ------
    UdbenchError
        ``n_classes`` < 2, or a label outside ``0 … n_classes − 1``.
    """
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
        raise param_error("missing_training_classes", "n_classes", "be an integer >= 2", n_classes)
    y = np.asarray(y_train).astype(np.int64, copy=False).ravel()
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise param_error(
            "missing_training_classes",
            "y_train",
            f"hold labels in 0 … {n_classes - 1}",
            f"labels {int(y.min())} … {int(y.max())}",
        )
    counts = np.bincount(y, minlength=int(n_classes))
    return [int(k) for k in np.flatnonzero(counts == 0)]


def mcse_implied_ess(mcse_var_rel_median: float | None) -> float | None:
    """The effective sample size of σ_f² implied by its relative MCSE m: ESS = 2 / m².

    For normal draws the sample variance has variance 2σ⁴ / (n − 1) (Casella & Berger 2002,
    §5.3), so m ≈ √(2/D) for D independent draws; :func:`stuck_chains` explains its use.

    Parameters
    ----------
    mcse_var_rel_median : float or None
        Median over the evaluation points of the relative MCSE of σ_f² (dimensionless).

    Returns
    -------
    float or None
        2 / m²; None for a missing, zero or non-finite m (no finite ESS).
    """
    if mcse_var_rel_median is None:
        return None
    m = float(mcse_var_rel_median)
    return 2.0 / m**2 if np.isfinite(m) and m > 0 else None


def stuck_chains(
    mcse_var_rel_median: float | None,
    n_chains: int | None,
    per_chain: float = STUCK_ESS_PER_CHAIN,
) -> dict[str, float] | None:
    """Whether an instance's chains look stuck: about one effective draw each.

    The relative Monte Carlo standard error m of σ_f² (batch means over whole chains,
    :func:`acceptance_checks`; Flegal & Jones 2010) implies an effective sample size
    ESS = 2 / m²: for normal draws the sample variance has variance 2σ⁴ / (n − 1) (Casella &
    Berger 2002, §5.3), so m ≈ √(2/D) for D independent draws (heavier tails, excess
    kurtosis κ − 3 > 0, give (κ − 1)σ⁴ / n and a lower implied ESS: a false alarm is possible
    there). Chains that cannot move each contribute about one effective draw, so ESS ≈
    n_chains, and after an overdispersed (tempered) warm-up the pooled draws then measure the
    spread *between* chains: the intervals and σ_f² (and EU*_var) are likely too large. Found
    on HBART at full size (protein × u-shaped: m = 0.30 with 20 chains, coverage 0.998;
    healthy instances m = 0.05-0.09, ESS 250-800; docs/priors-mcmc.md). Not a SPEC §7 gate
    (SPEC §7 validates HBART by warm-up sensitivity): ``udbench check`` lists such instances.

    Only judged with at least :data:`~udbench.priors.MCSE_N_BATCHES` chains: with
    fewer, the batches are segments of chains, and frozen chains do not give ESS ≈ n_chains.

    Parameters
    ----------
    mcse_var_rel_median : float or None
        Median over the evaluation points of the relative MCSE of σ_f² (dimensionless);
        None where it was not recorded (not judged).
    n_chains : int or None
        Chains pooled into the instance's draws; None for draws not made by chains (not
        judged).
    per_chain : float
        Flag at ESS ≤ ``per_chain`` × ``n_chains`` (default :data:`STUCK_ESS_PER_CHAIN`).

    Returns
    -------
    dict or None
        ``{"ess_implied", "ess_per_chain"}`` when flagged, else None (also for fewer chains
        than batches, and for a zero or non-finite MCSE, which implies no finite ESS).

    Raises
    ------
    UdbenchError
        ``n_chains`` < 1 or ``per_chain`` ≤ 0.
    """
    if mcse_var_rel_median is None or n_chains is None:
        return None
    if int(n_chains) < 1:
        raise param_error("stuck_chains", "n_chains", "be >= 1", n_chains)
    if not per_chain > 0:
        raise param_error("stuck_chains", "per_chain", "be > 0", per_chain)
    ess = mcse_implied_ess(mcse_var_rel_median)
    if int(n_chains) < MCSE_N_BATCHES or ess is None or ess > per_chain * int(n_chains):
        return None
    return {"ess_implied": ess, "ess_per_chain": ess / int(n_chains)}


def generation_record(task: Any) -> dict[str, Any]:
    """What a generation campaign unit records of one generated task: its SPEC §7 checks,
    MCMC scalars and seed replacements, the summary :func:`udbench.tasks.pooling.pool_checks`
    pools per family.

    Parameters
    ----------
    task : Task
        A task, normally from :func:`udbench.tasks.generate_task` (its ``diagnostics`` hold
        ``"checks"``).

    Returns
    -------
    dict
        ``task_id``, ``family``, ``dataset``, ``checks`` (the stored SPEC §7 checks; empty
        for a task that stores none, e.g. one made outside :func:`~udbench.tasks.generate_task`),
        ``mcmc`` (:func:`mcmc_summary`), ``seed_replacement`` (the stored record, ``{}``
        without one) and ``sampler_wall_seconds`` (None for exact families).
    """
    spec = task.spec
    diagnostics = task.diagnostics
    sampler = diagnostics.get("sampler") or {}
    return {
        "task_id": spec.task_id,
        "family": spec.family,
        "dataset": spec.dataset,
        "checks": diagnostics.get("checks", {}),
        "mcmc": mcmc_summary(diagnostics),
        "seed_replacement": diagnostics.get("seed_replacement", {}),
        "sampler_wall_seconds": sampler.get("wall_seconds"),
    }
