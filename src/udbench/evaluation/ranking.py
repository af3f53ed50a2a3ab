"""Critical-difference analysis of mean ranks: Friedman test and Nemenyi post-hoc (Demšar 2006).

For a chosen metric, every instance ranks the methods (1 = best, ties share the average
rank) on the *complete* instances — those where every method with the metric somewhere has
a value (as the leaderboard's ranks). With N instances and k methods:

- Friedman's test of "all methods rank alike" (``scipy.stats.friedmanchisquare``, χ² with
  k − 1 degrees of freedom, tie-corrected);
- Nemenyi's critical difference CD = q_α √(k(k+1) / (6N)), q_α the upper-α quantile of the
  studentized range for k groups and infinite degrees of freedom divided by √2
  (``scipy.stats.studentized_range``; Demšar 2006, JMLR 7:1–30, eq. 5 and Table 5): two methods
  whose mean ranks differ by less than CD are not significantly different at level α.

Direction: higher is better for the ρ metrics, lower for RMSE/NMSE, and each proxy's own
(:func:`udbench.evaluation.proxies.oriented`). AU metrics use heteroscedastic noise modes and
heteroscedastic-AU methods only (as the leaderboard). Instances of one dataset are not
independent, so the test is optimistic; the analyses' bootstrap (``udbench analyze``) is the
calibrated alternative for intervals of mean ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from udbench._validation import UdbenchError, check_positive, param_error
from udbench.evaluation.leaderboard import (
    _AU_METRICS,
    _au_mask,
    _label_column,
    select_task_versions,
)
from udbench.evaluation.metrics import mean_ranks
from udbench.evaluation.proxies import PROXY_KEYS, oriented

__all__ = ["CriticalDifference", "critical_difference"]


@dataclass(frozen=True)
class CriticalDifference:
    """Mean ranks of the methods on one metric, Friedman's test and Nemenyi's CD.

    Attributes
    ----------
    metric : str
        The ranking metric.
    methods : list of str
        Method labels, best mean rank first.
    mean_ranks : ndarray, shape (k,)
        Mean per-instance rank of each method (1 = best), in the order of ``methods``.
    n_instances : int
        Complete instances N.
    friedman_statistic, friedman_p : float
        Friedman's χ² and its p-value (NaN with fewer than 3 methods or 2 instances).
    cd : float
        Nemenyi's critical difference at level ``alpha``.
    alpha : float
        Significance level.
    cliques : list of tuple of int
        Maximal runs of methods (indices into ``methods``) whose mean ranks lie within CD of
        each other: the bars of the diagram.
    """

    metric: str
    methods: list[str]
    mean_ranks: np.ndarray
    n_instances: int
    friedman_statistic: float
    friedman_p: float
    cd: float
    alpha: float
    cliques: list[tuple[int, ...]]


def _oriented(metric: str, values: np.ndarray) -> np.ndarray:
    if metric in PROXY_KEYS:
        return oriented(metric, values)
    return -values if metric in ("rmse", "nmse") else values


def critical_difference(
    results: pd.DataFrame, metric: str = "rho_eu_risk", *, alpha: float = 0.05
) -> CriticalDifference:
    """Mean ranks, Friedman test and Nemenyi CD of the methods on ``metric``.

    Parameters
    ----------
    results : DataFrame
        Rows as stored by ``udbench run``.
    metric : str, default "rho_eu_risk"
        A per-instance metric column (ρ metrics, ``rmse``, ``nmse`` or a proxy).
    alpha : float, default 0.05
        Significance level of the test and the CD, in (0, 1).

    Returns
    -------
    CriticalDifference

    Raises
    ------
    UdbenchError
        No ``task_id``/``status`` column, ``metric`` not a column of the results, fewer than
        2 methods with values, no complete instance, ``alpha`` outside (0, 1).
    """
    name = "critical_difference"
    if check_positive(name, "alpha", alpha) >= 1:
        raise param_error(name, "alpha", "be in (0, 1)", alpha)
    for col in ("task_id", "status"):
        if col not in results.columns:
            raise param_error(name, "results", f"have a {col!r} column", list(results))
    if metric not in results.columns:
        raise param_error(name, "metric", "be a column of the results", metric)
    results, _ = select_task_versions(results)
    ok = results["status"].astype(str) == "ok"
    if metric in _AU_METRICS:
        ok &= _au_mask(results)
    rows = results[ok]
    label = _label_column(rows)
    wide = rows.pivot_table(
        index="task_id",
        columns=label,
        values=metric,
        aggfunc="mean",
    )
    wide = wide.dropna(axis=1, how="all")
    if wide.shape[1] < 2:
        raise UdbenchError(f"{name}: fewer than 2 methods have a value of {metric!r}")
    complete = wide.dropna(axis=0, how="any")
    if complete.empty:
        raise UdbenchError(f"{name}: no instance has a value of {metric!r} for every method")
    values = _oriented(metric, complete.to_numpy(dtype=float))
    ranks = mean_ranks(values, higher_is_better=True)
    order = np.argsort(ranks, kind="stable")
    methods = [str(complete.columns[i]) for i in order]
    ranks = ranks[order]
    n, k = values.shape
    stat = p = float("nan")
    if k >= 3 and n >= 2 and not np.all(values == values[:, :1]):
        res = stats.friedmanchisquare(*values.T)
        stat, p = float(res.statistic), float(res.pvalue)
    q = float(stats.studentized_range.ppf(1.0 - alpha, k, np.inf)) / np.sqrt(2.0)
    cd = q * np.sqrt(k * (k + 1) / (6.0 * n))
    cliques: list[tuple[int, ...]] = []
    for i in range(k):
        j = i
        while j + 1 < k and ranks[j + 1] - ranks[i] < cd:
            j += 1
        if j > i and not any(c[0] <= i and j <= c[-1] for c in cliques):
            cliques.append(tuple(range(i, j + 1)))
    return CriticalDifference(metric, methods, ranks, n, stat, p, float(cd), float(alpha), cliques)
