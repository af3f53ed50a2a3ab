"""The benchmark's metrics (SPEC §10): rank correlations, entanglement, agreement, intervals.

Undefined statistics (constant input, too few points) are returned as NaN together with a
reason string, never only as a warning. Where SciPy or scikit-learn has the statistic it is
used; Kendall's W (with the tie correction) and the grouped bootstrap are written here because
neither library provides them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats
from sklearn.metrics import roc_auc_score

from udbench._resampling import (
    DEFAULT_CONFIDENCE,
    DEFAULT_N_RESAMPLES,
    check_confidence,
    check_n_resamples,
    cluster_picks,
    percentile_interval,
    scipy_percentile_bootstrap,
)
from udbench._seeding import make_rng
from udbench._validation import check_array, param_error

if TYPE_CHECKING:
    from udbench.methods.base import Prediction
    from udbench.risk.oracle import OracleTargets

__all__ = [
    "RANK_METRIC_KEYS",
    "BootstrapResult",
    "StatResult",
    "auroc",
    "bootstrap_ci",
    "excess_entanglement",
    "instance_metrics",
    "kendall_tau",
    "kendall_w",
    "mean_ranks",
    "spearman",
    "uncertainty_rank_metrics",
]


@dataclass(frozen=True)
class StatResult:
    """A statistic that may be undefined: ``value`` is NaN exactly when ``reason`` is set.

    Attributes
    ----------
    value : float
        The statistic, or NaN.
    reason : str or None
        Why the statistic is undefined (None when it is defined).
    """

    value: float
    reason: str | None = None

    def __float__(self) -> float:
        return float(self.value)

    @property
    def defined(self) -> bool:
        """True when ``value`` is a number."""
        return self.reason is None


def _pair(component: str, x: Any, y: Any, names: tuple[str, str] = ("x", "y")):
    a = check_array(component, names[0], x, ndim=1)
    b = check_array(component, names[1], y, shape=a.shape)
    return a, b


#: Relative spread (max − min) / max|x| at or below which an input counts as constant, so that
#: rounding noise in a flat estimate is not ranked.
CONSTANT_RTOL = 1e-12


def _constant_reason(arrays: list[tuple[str, np.ndarray]]) -> str | None:
    # a list, not a dict: two inputs given the same name must both be checked
    for name, arr in arrays:
        if arr.size and np.ptp(arr) <= CONSTANT_RTOL * np.max(np.abs(arr)):
            return f"{name} is constant"
    return None


def spearman(x: Any, y: Any, *, names: tuple[str, str] = ("x", "y")) -> StatResult:
    """Spearman's rank correlation ρ with explicit tie and constant-input handling.

    Ties get average ranks (midranks) and ρ is the Pearson correlation of the ranks, as in
    ``scipy.stats.spearmanr`` (used here). Constant input (relative spread <= 1e-12, so that
    rounding noise is not ranked) or fewer than 3 points → NaN with a reason.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Paired observations; finite.
    names : (str, str), default ("x", "y")
        Names used in errors and NaN reasons (e.g. ``("EU", "EU*_risk")``).

    Returns
    -------
    StatResult
        ρ in [−1, 1], or NaN with the reason.

    Raises
    ------
    UdbenchError
        Mismatched shapes or NaN/inf entries.
    """
    a, b = _pair("spearman", x, y, names)
    if a.size < 3:
        return StatResult(float("nan"), f"fewer than 3 points (n={a.size})")
    reason = _constant_reason([(names[0], a), (names[1], b)])
    if reason is not None:
        return StatResult(float("nan"), reason)
    return StatResult(float(stats.spearmanr(a, b).statistic))


def kendall_tau(x: Any, y: Any) -> StatResult:
    """Kendall's τ-b between two rankings or scores (``scipy.stats.kendalltau``; ties: τ-b).

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Paired scores or ranks.

    Returns
    -------
    StatResult
        τ-b, or NaN with a reason (constant input, fewer than 2 points).

    Raises
    ------
    UdbenchError
        Mismatched shapes or NaN/inf entries.
    """
    a, b = _pair("kendall_tau", x, y)
    if a.size < 2:
        return StatResult(float("nan"), f"fewer than 2 points (n={a.size})")
    reason = _constant_reason([("x", a), ("y", b)])
    if reason is not None:
        return StatResult(float("nan"), reason)
    return StatResult(float(stats.kendalltau(a, b).statistic))


def excess_entanglement(eu: Any, au: Any, eu_star: Any, au_star: Any) -> StatResult:
    """Excess entanglement Δ_ent = ρ(EU, AU) − ρ(EU*, AU*) (SPEC §10, paper Section 4).

    Positive values: the method's EU and AU estimates depend on each other more strongly than
    the ground-truth quantities do.

    Parameters
    ----------
    eu, au : array_like, shape (n,)
        The method's EU and AU estimates.
    eu_star, au_star : array_like, shape (n,)
        The oracle EU target (one of EU*_risk, EU*_var, EU*_point) and AU*.

    Returns
    -------
    StatResult
        Δ_ent in [−2, 2], or NaN with the reason of whichever correlation is undefined.

    Raises
    ------
    UdbenchError
        Mismatched shapes or NaN/inf entries.
    """
    hat = spearman(eu, au, names=("EU", "AU"))
    star = spearman(eu_star, au_star, names=("EU*", "AU*"))
    if not hat.defined or not star.defined:
        return StatResult(float("nan"), hat.reason or star.reason)
    return StatResult(hat.value - star.value)


def _rank_rows(table: np.ndarray, higher_is_better: bool) -> np.ndarray:
    return stats.rankdata(-table if higher_is_better else table, axis=1, method="average")


def _table(component: str, table: Any) -> np.ndarray:
    arr = check_array(component, "table", table, ndim=2)
    if arr.shape[0] < 1 or arr.shape[1] < 2:
        raise param_error(
            component, "table", "have >= 1 row (level) and >= 2 columns (methods)", arr.shape
        )
    return arr


def kendall_w(table: Any) -> StatResult:
    """Kendall's coefficient of concordance W with the tie correction.

    Rows are the m levels (the "raters", e.g. the prior families) and columns the k methods
    (the objects ranked); each row is ranked with average ranks for ties. With R_j the rank sum
    of method j, S = Σ_j (R_j − m(k+1)/2)² and T_i = Σ (t³ − t) over the tie groups of row i,

        W = 12 S / (m² (k³ − k) − m Σ_i T_i)

    (Kendall & Babington Smith 1939; tie correction as in Legendre 2005, JABES 10:226–245).
    W is the same whether low or high scores are ranked first. For m = 2 rows without ties,
    W = (1 + ρ_S)/2.

    Parameters
    ----------
    table : array_like, shape (m, k)
        Scores (or ranks) of k >= 2 methods at m >= 2 levels; finite.

    Returns
    -------
    StatResult
        W in [0, 1], or NaN with a reason (fewer than 2 levels; every row entirely tied).

    Raises
    ------
    UdbenchError
        Not 2-D, fewer than 2 methods, NaN/inf entries.
    """
    arr = _table("kendall_w", table)
    m, k = arr.shape
    if m < 2:
        return StatResult(float("nan"), f"fewer than 2 levels (rows); got {m}")
    ranks = _rank_rows(arr, False)
    rank_sums = ranks.sum(axis=0)
    s = float(np.sum((rank_sums - m * (k + 1) / 2.0) ** 2))
    ties = 0.0
    for row in arr:
        _, counts = np.unique(row, return_counts=True)
        ties += float(np.sum(counts.astype(np.float64) ** 3 - counts))
    denom = m * m * (k**3 - k) - m * ties
    if denom <= 0:
        return StatResult(float("nan"), "every level ranks all methods as tied")
    return StatResult(12.0 * s / denom)


def mean_ranks(table: Any, *, higher_is_better: bool = True) -> np.ndarray:
    """Mean rank of each method over levels (rank 1 = best; ties get average ranks).

    Parameters
    ----------
    table : array_like, shape (m, k)
        Scores of k methods (columns) at m levels (rows); finite.
    higher_is_better : bool, default True
        True for scores such as Spearman ρ; False for errors such as RMSE.

    Returns
    -------
    ndarray, shape (k,)
        Mean rank per method, in [1, k].

    Raises
    ------
    UdbenchError
        Not 2-D, fewer than 2 methods, NaN/inf entries.
    """
    arr = _table("mean_ranks", table)
    return _rank_rows(arr, higher_is_better).mean(axis=0)


def auroc(scores: Any, labels: Any) -> StatResult:
    """Area under the ROC curve (``sklearn.metrics.roc_auc_score``), e.g. OOD detection by EU.

    Parameters
    ----------
    scores : array_like, shape (n,)
        Higher means "more likely positive" (e.g. EU estimate; positive = out of distribution).
    labels : array_like, shape (n,)
        0/1 or boolean labels.

    Returns
    -------
    StatResult
        AUROC in [0, 1] (ties count one half), or NaN with a reason if only one class occurs.

    Raises
    ------
    UdbenchError
        Mismatched shapes, NaN/inf scores, labels other than 0/1.
    """
    s = check_array("auroc", "scores", scores, ndim=1)
    lab = check_array("auroc", "labels", labels, shape=s.shape)
    if not np.all((lab == 0) | (lab == 1)):
        raise param_error("auroc", "labels", "contain only 0/1", np.unique(lab)[:5])
    if lab.size == 0 or np.all(lab == lab[0]):
        return StatResult(float("nan"), "labels contain a single class")
    return StatResult(float(roc_auc_score(lab.astype(int), s)))


@dataclass(frozen=True)
class BootstrapResult:
    """A percentile bootstrap interval.

    Attributes
    ----------
    estimate : float
        The statistic on the full data.
    low, high : float
        Interval end points (percentiles (1 − c)/2 and (1 + c)/2 of the bootstrap replicates).
    confidence : float
        Nominal coverage c.
    n_resamples : int
        Number of bootstrap replicates.
    unit : str
        What was resampled: ``"instances"`` or ``"groups"``.
    n_units : int
        Number of resampled units.
    """

    estimate: float
    low: float
    high: float
    confidence: float
    n_resamples: int
    unit: str
    n_units: int


def bootstrap_ci(
    values: Any,
    *,
    statistic: Callable[[np.ndarray], float] | None = None,
    groups: Any = None,
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
) -> BootstrapResult:
    """Percentile bootstrap interval of a statistic, resampling instances or whole groups.

    Without ``groups`` each value is a unit and ``scipy.stats.bootstrap`` (method
    ``"percentile"``) resamples them. With ``groups`` (e.g. the dataset of every instance), whole
    groups are drawn with replacement and all their values pooled, so that dependence within a
    group is respected (cluster bootstrap; Davison & Hinkley 1997, §3.8).

    Parameters
    ----------
    values : array_like, shape (n,)
        One value per instance (e.g. per-instance Spearman ρ); finite.
    statistic : callable, optional
        Maps a 1-D array to a float; default the mean.
    groups : array_like, shape (n,), optional
        Group label of every value; when given, groups are the resampled unit.
    n_resamples : int, default 2000
        Number of bootstrap replicates.
    confidence : float, default 0.95
        Nominal coverage, in (0, 1).
    random_state : int or str, default 0
        Names the random stream (via :func:`udbench._seeding.make_rng`).

    Returns
    -------
    BootstrapResult

    Raises
    ------
    UdbenchError
        NaN/inf values, mismatched ``groups``, fewer than 2 units, ``n_resamples`` not an
        integer >= 1, bad ``confidence``, or a ``statistic`` that is NaN/inf on the data or
        on any resample.
    """
    name = "bootstrap_ci"
    x = check_array(name, "values", values, ndim=1)
    n_res = check_n_resamples(name, n_resamples)
    conf = check_confidence(name, confidence)
    stat = statistic if statistic is not None else np.mean
    rng = make_rng("bootstrap_ci", random_state)
    if groups is None:
        if x.size < 2:
            raise param_error(name, "values", "have at least 2 entries", x.size)
        estimate = _finite_statistic(name, stat, x)
        vectorized = statistic is None
        low, high, reps = scipy_percentile_bootstrap(
            x,
            (lambda a, axis: np.mean(a, axis=axis)) if vectorized else stat,
            vectorized=vectorized,
            n_resamples=n_res,
            confidence=conf,
            rng=rng,
        )
        _check_replicates(name, reps)
        return BootstrapResult(estimate, low, high, conf, n_res, "instances", x.size)
    g = np.asarray(groups)
    if g.shape != x.shape:
        raise param_error(name, "groups", f"have shape {x.shape}", f"shape {g.shape}")
    labels, inverse = np.unique(g, return_inverse=True)
    if labels.size < 2:
        raise param_error(name, "groups", "contain at least 2 distinct groups", labels.size)
    estimate = _finite_statistic(name, stat, x)
    members = [x[inverse == i] for i in range(labels.size)]
    picks = cluster_picks(rng, labels.size, n_res)
    reps = np.array([float(stat(np.concatenate([members[i] for i in row]))) for row in picks])
    _check_replicates(name, reps)
    ends = percentile_interval(reps, conf)
    return BootstrapResult(
        estimate, float(ends[0]), float(ends[1]), conf, n_res, "groups", labels.size
    )


def _finite_statistic(component: str, stat: Callable[[np.ndarray], float], x: np.ndarray) -> float:
    """The statistic on the full data; a non-finite value is an error, never a silent NaN."""
    value = float(stat(x))
    if not np.isfinite(value):
        raise param_error(component, "statistic", "return a finite value on the data", value)
    return value


def _check_replicates(component: str, reps: np.ndarray) -> None:
    """Raise if any bootstrap replicate is NaN/inf (the interval would be NaN)."""
    bad = int(np.size(reps) - np.count_nonzero(np.isfinite(reps)))
    if bad:
        raise param_error(
            component,
            "statistic",
            "return a finite value on every resample",
            f"NaN/inf on {bad} of {np.size(reps)} resamples",
        )


#: The rank metrics of a prediction against the oracle targets (SPEC §10), in row order:
#: ρ(EU, EU*_t) per EU target t, ρ(AU, AU*), Δ_ent per target, ρ(EU, AU) and ρ(EU*_t, AU*).
#: Regression rows (:data:`udbench.evaluation.scoring.METRIC_KEYS`), their per-loss columns
#: and classification rows all start with them.
RANK_METRIC_KEYS: tuple[str, ...] = (
    "rho_eu_risk",
    "rho_eu_var",
    "rho_eu_point",
    "rho_au",
    "delta_ent_risk",
    "delta_ent_var",
    "delta_ent_point",
    "rho_eu_au",
    "rho_eu_au_star_risk",
    "rho_eu_au_star_var",
    "rho_eu_au_star_point",
)


def uncertainty_rank_metrics(
    eu: np.ndarray,
    au: np.ndarray,
    targets: Any,
    constant_aleatoric: bool,
    put: Callable[[str, StatResult], None],
) -> dict[str, np.ndarray]:
    """The rank metrics of EU and AU against the oracle targets (SPEC §10), shared by the
    regression and classification instance metrics.

    Puts ``rho_eu_{risk,var,point}`` (Spearman ρ of EU with each EU* target), ``rho_au``,
    ``delta_ent_{risk,var,point}`` (:func:`excess_entanglement`) and ``rho_eu_au`` (the
    method's part of Δ_ent) through ``put(key, result)``, in that order; the AU-based ones
    are NaN, flagged, for a method whose AU is constant in x.

    Parameters
    ----------
    eu, au : ndarray, shape (n,)
        The method's epistemic and aleatoric uncertainty (checked by the caller).
    targets : object
        Oracle targets with ``eu_risk``, ``eu_var``, ``eu_point`` and ``au``, shape (n,)
        (:class:`udbench.risk.OracleTargets` or the classification targets).
    constant_aleatoric : bool
        The method declares AU constant in x.
    put : callable
        ``put(key, StatResult)``: stores a value and its NaN reason.

    Returns
    -------
    dict
        ``{"risk": EU*_risk, "var": EU*_var, "point": EU*_point}``.
    """
    eu_targets = {"risk": targets.eu_risk, "var": targets.eu_var, "point": targets.eu_point}
    for key, star in eu_targets.items():
        put(f"rho_eu_{key}", spearman(eu, star, names=("EU", f"EU*_{key}")))
    flagged = StatResult(float("nan"), "method's AU is constant in x (flagged)")
    put("rho_au", flagged if constant_aleatoric else spearman(au, targets.au, names=("AU", "AU*")))
    for key, star in eu_targets.items():
        ent = excess_entanglement(eu, au, star, targets.au)
        put(f"delta_ent_{key}", flagged if constant_aleatoric else ent)
    # the two parts of Δ_ent, for the entanglement analysis (udbench.analyses)
    hat = spearman(eu, au, names=("EU", "AU"))
    put("rho_eu_au", flagged if constant_aleatoric else hat)
    return eu_targets


def instance_metrics(
    prediction: Prediction,
    targets: OracleTargets,
    *,
    constant_aleatoric: bool = False,
    variances: bool = True,
) -> dict[str, float | str]:
    """Per-instance metrics of one method on one task (SPEC §10).

    Parameters
    ----------
    prediction : udbench.methods.base.Prediction
        The method's ``mean``, ``aleatoric`` and ``epistemic`` at the n evaluation points.
    targets : udbench.risk.OracleTargets
        Oracle targets at the same points (from :func:`udbench.risk.oracle_targets` with the
        same ``prediction.mean``).
    constant_aleatoric : bool, default False
        The method's AU is constant in x by construction (``BaseMethod.constant_aleatoric``,
        SPEC §8): its AU correlations and Δ_ent are NaN with that reason, whatever rounding
        noise its AU output carries.
    variances : bool, default True
        The AU and EU estimates are variances and must be >= 0. False for loss-specific
        terms that may be negative (the log-score AU is a differential entropy;
        :mod:`udbench.evaluation.losses`); every metric here is a rank statistic, so only
        finiteness is then required.

    Returns
    -------
    dict
        Floats ``rho_eu_risk``, ``rho_eu_var``, ``rho_eu_point`` (Spearman ρ of the EU estimate
        with each EU target), ``rho_au`` (ρ of the AU estimate with AU*), ``delta_ent_risk``,
        ``delta_ent_var``, ``delta_ent_point`` (Δ_ent per EU target), its two parts
        ``rho_eu_au`` (ρ(EU, AU) of the estimates; NaN for a flagged constant AU) and
        ``rho_eu_au_star_risk``, ``rho_eu_au_star_var``, ``rho_eu_au_star_point`` (the
        ground truth ρ(EU*, AU*) per EU target), ``rmse`` (√mean(â − f*)²)
        and ``nmse`` (mean(â − f*)² / Var(f*), population variance over the points); and the
        string ``nan_reasons``: ``"key: reason"`` entries joined by ``"; "`` for every NaN
        value (empty when none is NaN).

    Raises
    ------
    UdbenchError
        Mismatched lengths, NaN/inf, negative variance estimates.
    """
    name = "instance_metrics"
    n = targets.n
    mean = check_array(name, "prediction.mean", prediction.mean, shape=(n,))
    au = check_array(
        name, "prediction.aleatoric", prediction.aleatoric, shape=(n,), nonnegative=variances
    )
    eu = check_array(
        name, "prediction.epistemic", prediction.epistemic, shape=(n,), nonnegative=variances
    )
    out: dict[str, float | str] = {}
    reasons: list[str] = []

    def put(key: str, res: StatResult) -> None:
        out[key] = res.value
        if res.reason is not None:
            reasons.append(f"{key}: {res.reason}")

    eu_targets = uncertainty_rank_metrics(eu, au, targets, constant_aleatoric, put)
    for key, star in eu_targets.items():
        put(f"rho_eu_au_star_{key}", spearman(star, targets.au, names=(f"EU*_{key}", "AU*")))
    mse = float(np.mean((mean - targets.f_star) ** 2))
    out["rmse"] = float(np.sqrt(mse))
    var_f = float(np.var(targets.f_star))
    if var_f > 0:
        out["nmse"] = mse / var_f
    else:
        out["nmse"] = float("nan")
        reasons.append("nmse: f* is constant")
    out["nan_reasons"] = "; ".join(reasons)
    return out
