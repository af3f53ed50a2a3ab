"""The bootstrap of the package: one settings object and one resampling engine.

Every bootstrap interval of :mod:`udbench` (the metric intervals of
:func:`udbench.evaluation.metrics.bootstrap_ci`, the analyses' paired intervals, the
studies' tables) draws its replicates here and reads its defaults from
:data:`DEFAULT_N_RESAMPLES` and :data:`DEFAULT_CONFIDENCE`.

A replicate is described by *resampling count weights*: row ``b`` of a (B, n) matrix ``C``
says how often each of the n units is drawn in replicate b, so a replicate mean of values
``v`` is ``(C @ v) / (C @ 1)``, one matrix product for all replicates (Efron & Tibshirani
1993, ch. 6, the bootstrap as a reweighting of the empirical distribution). Three draw
schemes:

- :func:`instance_counts`: n instances drawn with replacement, uniform (the ordinary
  nonparametric bootstrap; Efron & Tibshirani 1993, §6.2);
- :func:`stratified_counts`: within every group its instances drawn with replacement, so
  each replicate keeps every group's size (a stratified bootstrap; Davison & Hinkley 1997,
  §3.7);
- :func:`cluster_counts`: whole groups drawn with replacement, each bringing all its
  instances, so all instances of a group share one weight (a cluster bootstrap; Davison &
  Hinkley 1997, §3.8). :func:`cluster_picks` draws the same scheme as explicit group
  indices, for statistics that need the pooled values rather than weights.

Intervals are percentile intervals of the replicates (:func:`percentile_interval`; Efron &
Tibshirani 1993, §13.3), or basic (reverse-percentile) intervals where the replicates share
a bias of the estimate (:func:`basic_interval`; Davison & Hinkley 1997, §5.2.1);
:func:`scipy_percentile_bootstrap` is the ordinary instance
bootstrap of an arbitrary statistic through :func:`scipy.stats.bootstrap`.

Every draw function takes the :class:`numpy.random.Generator` to draw from (made by the
caller with :func:`udbench._seeding.make_rng` from its own stream name) and makes a fixed
sequence of calls on it, written in its docstring: a caller that switches to the engine
keeps its random numbers, and the same seed gives the same bytes.

References
----------
Efron, B. & Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*. Chapman & Hall.

Davison, A. C. & Hinkley, D. V. (1997). *Bootstrap Methods and their Application*.
Cambridge University Press.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from udbench._validation import check_choice, check_int, param_error

__all__ = [
    "BOOTSTRAP_UNITS",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_N_RESAMPLES",
    "BootstrapSettings",
    "basic_interval",
    "check_confidence",
    "check_n_resamples",
    "cluster_counts",
    "cluster_picks",
    "instance_counts",
    "percentile_interval",
    "picks_to_counts",
    "scipy_percentile_bootstrap",
    "stratified_counts",
]

#: Default number of bootstrap replicates B of every interval in the package.
DEFAULT_N_RESAMPLES: int = 2000
#: Default nominal coverage of every bootstrap interval in the package.
DEFAULT_CONFIDENCE: float = 0.95
#: Resampling units: instances (within their groups, where there are groups) or whole groups.
BOOTSTRAP_UNITS: tuple[str, ...] = ("instance", "dataset")


def check_n_resamples(component: str, value: Any) -> int:
    """Return ``value`` as an int if it is an integer >= 1 (booleans refused).

    Raises
    ------
    UdbenchError
        ``"<component>: parameter 'n_resamples' must be an integer >= 1; got <value>"``.
    """
    n = check_int(component, "n_resamples", value, minimum=1)
    assert n is not None  # allow_none is False
    return n


def check_confidence(component: str, value: Any) -> float:
    """Return ``value`` as a float if it is a real number in the open interval (0, 1).

    Raises
    ------
    UdbenchError
        ``"<component>: parameter 'confidence' must be a number in (0, 1); got <value>"``
        (booleans, strings and NaN refused).
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float | np.integer | np.floating)
        or not 0 < float(value) < 1
    ):
        raise param_error(component, "confidence", "be a number in (0, 1)", value)
    return float(value)


@dataclass(frozen=True)
class BootstrapSettings:
    """How a bootstrap interval is made: replicates, coverage, seed and resampling unit.

    Validated once, when made; a function that takes the settings trusts them.

    Parameters
    ----------
    n_resamples : int, default :data:`DEFAULT_N_RESAMPLES` (2000)
        Number of bootstrap replicates B, an integer >= 1.
    confidence : float, default :data:`DEFAULT_CONFIDENCE` (0.95)
        Nominal coverage c of the percentile interval, in (0, 1).
    random_state : int or str, default 0
        Names the random stream, together with the caller's stream name
        (:func:`udbench._seeding.make_rng`).
    unit : {"instance", "dataset"}, default "instance"
        What is resampled (:data:`BOOTSTRAP_UNITS`): instances (within their dataset, where
        the caller has datasets) or whole datasets (cluster bootstrap).

    Raises
    ------
    UdbenchError
        ``n_resamples`` not an integer >= 1, ``confidence`` not a number in (0, 1),
        ``random_state`` not an int or str, or an unknown ``unit``; the message names the
        parameter, the rule and the value.

    Examples
    --------
    >>> BootstrapSettings(n_resamples=500).confidence
    0.95
    """

    n_resamples: int = DEFAULT_N_RESAMPLES
    confidence: float = DEFAULT_CONFIDENCE
    random_state: int | str = 0
    unit: str = "instance"

    def __post_init__(self) -> None:
        component = "BootstrapSettings"
        object.__setattr__(self, "n_resamples", check_n_resamples(component, self.n_resamples))
        object.__setattr__(self, "confidence", check_confidence(component, self.confidence))
        rs = self.random_state
        if isinstance(rs, bool) or not isinstance(rs, int | np.integer | str):
            raise param_error(component, "random_state", "be an int or a str", rs)
        check_choice(component, "unit", self.unit, BOOTSTRAP_UNITS)


def _uniform_multinomial(
    rng: np.random.Generator, n: int, n_resamples: int
) -> np.ndarray[Any, np.dtype[np.int64]]:
    """``rng.multinomial(n, [1/n] * n, size=B)``: n uniform draws among n cells, B times."""
    return rng.multinomial(n, np.full(n, 1.0 / n), size=int(n_resamples))


def instance_counts(rng: np.random.Generator, n: int, n_resamples: int) -> np.ndarray:
    """Resampling counts of the ordinary bootstrap: n instances drawn with replacement.

    One call ``rng.multinomial(n, [1/n] * n, size=B)`` (Efron & Tibshirani 1993, §6.2).

    Parameters
    ----------
    rng : numpy.random.Generator
        The stream to draw from.
    n : int
        Number of instances, >= 1.
    n_resamples : int
        Replicates B, >= 1.

    Returns
    -------
    ndarray of float, shape (B, n)
        How often each instance is drawn in each replicate; every row sums to n.
    """
    return _uniform_multinomial(rng, n, n_resamples).astype(float)


def stratified_counts(
    rng: np.random.Generator, codes: np.ndarray, n_resamples: int, n_groups: int | None = None
) -> np.ndarray:
    """Resampling counts of the stratified bootstrap: instances drawn within their group.

    For g = 0, …, G − 1 in turn, one call ``rng.multinomial(n_g, [1/n_g] * n_g, size=B)``
    over the instances of group g (in their order in ``codes``); a group without instances
    draws nothing. Every replicate keeps each group's size (Davison & Hinkley 1997, §3.7).

    Parameters
    ----------
    rng : numpy.random.Generator
        The stream to draw from.
    codes : ndarray of int, shape (n,)
        Group index of every instance, in 0 … G − 1.
    n_resamples : int
        Replicates B, >= 1.
    n_groups : int, optional
        G; default ``codes.max() + 1``.

    Returns
    -------
    ndarray of float, shape (B, n)
        How often each instance is drawn in each replicate; within every replicate the
        counts of a group's instances sum to its size (so a row sums to n).
    """
    codes = np.asarray(codes)
    if n_groups is None:
        n_groups = int(codes.max()) + 1 if codes.size else 0
    counts = np.zeros((int(n_resamples), codes.size))
    for g in range(int(n_groups)):
        idx = np.flatnonzero(codes == g)
        if idx.size:
            counts[:, idx] = _uniform_multinomial(rng, idx.size, n_resamples)
    return counts


def cluster_counts(
    rng: np.random.Generator, codes: np.ndarray, n_resamples: int, n_groups: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Resampling counts of the cluster bootstrap: whole groups drawn with replacement.

    One call ``rng.multinomial(G, [1/G] * G, size=B)`` for the groups; every instance takes
    the count of its group (Davison & Hinkley 1997, §3.8). With one group every replicate
    equals the data.

    Parameters
    ----------
    rng : numpy.random.Generator
        The stream to draw from.
    codes : ndarray of int, shape (n,)
        Group index of every instance, in 0 … G − 1.
    n_resamples : int
        Replicates B, >= 1.
    n_groups : int, optional
        G; default ``codes.max() + 1``.

    Returns
    -------
    group_counts : ndarray of int, shape (B, G)
        How often each group is drawn; every row sums to G.
    counts : ndarray of float, shape (B, n)
        How often each instance is drawn: ``group_counts[:, codes]``, constant within a
        group.
    """
    codes = np.asarray(codes)
    g_count = int(codes.max()) + 1 if n_groups is None else int(n_groups)
    group = _uniform_multinomial(rng, g_count, n_resamples)
    return group, group[:, codes].astype(float)


def cluster_picks(rng: np.random.Generator, n_groups: int, n_resamples: int) -> np.ndarray:
    """The cluster bootstrap as explicit picks: G group indices drawn uniformly, B times.

    One call ``rng.integers(0, G, size=(B, G))``. For statistics that need the pooled values
    of the drawn groups (in pick order) rather than weights; :func:`picks_to_counts` turns
    the picks into per-group counts. This is a different random stream from
    :func:`cluster_counts` (same distribution, other numbers).

    Parameters
    ----------
    rng : numpy.random.Generator
        The stream to draw from.
    n_groups : int
        G, >= 1.
    n_resamples : int
        Replicates B, >= 1.

    Returns
    -------
    ndarray of int, shape (B, G)
        Row b lists the groups drawn in replicate b.
    """
    return rng.integers(0, int(n_groups), size=(int(n_resamples), int(n_groups)))


def picks_to_counts(picks: np.ndarray, n_groups: int) -> np.ndarray:
    """How often each group occurs in each row of ``picks`` (B, k): int counts (B, G)."""
    picks = np.asarray(picks)
    out = np.zeros((picks.shape[0], int(n_groups)), dtype=np.int64)
    for b, row in enumerate(picks):
        out[b] = np.bincount(row, minlength=int(n_groups))
    return out


def percentile_interval(
    replicates: Any, confidence: float, axis: int | None = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of bootstrap replicates, NaN replicates left out.

    The end points are the (1 − c)/2 and (1 + c)/2 quantiles of the replicates (linear
    interpolation, :func:`numpy.nanquantile`; Efron & Tibshirani 1993, §13.3). A replicate in
    which the statistic is undefined (NaN) is left out; where all are NaN the end points are
    NaN (no warning).

    Parameters
    ----------
    replicates : array_like
        Replicates along ``axis`` (B of them).
    confidence : float
        Nominal coverage c, in (0, 1) (checked by the caller or :class:`BootstrapSettings`).
    axis : int or None, default 0
        The replicate axis; None flattens.

    Returns
    -------
    low, high : ndarray
        The end points, shape of ``replicates`` without ``axis`` (0-d for 1-D input).
    """
    a = (1.0 - confidence) / 2.0
    reps = np.asarray(replicates, dtype=float)
    with warnings.catch_warnings():  # an all-NaN slice gives NaN, said in the docstring
        warnings.simplefilter("ignore", RuntimeWarning)
        q = np.nanquantile(reps, [a, 1.0 - a], axis=axis)
    return q[0], q[1]


def basic_interval(
    estimate: Any,
    replicates: Any,
    confidence: float,
    bounds: tuple[float, float] = (-np.inf, np.inf),
    axis: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Basic (reverse-percentile) bootstrap interval, NaN replicates left out.

    With t̂ the estimate and t*_q the q quantile of the replicates (linear interpolation,
    :func:`numpy.nanquantile`), the end points are 2t̂ − t*_{(1+c)/2} and 2t̂ − t*_{(1−c)/2}
    (Davison & Hinkley 1997, §5.2.1, eq. 5.6: the quantiles of t* − t̂ stand in for those of
    t̂ − θ), then clipped to ``bounds`` (the range of the statistic, e.g. [−1, 1] for a
    correlation). Unlike the percentile interval (:func:`percentile_interval`), it corrects a
    bias of the estimate that the replicates repeat: if t* − t̂ is shifted down by the same
    amount as t̂ − θ, the interval is shifted up by it. Where all replicates or the estimate
    are NaN the end points are NaN (no warning).

    Parameters
    ----------
    estimate : array_like
        t̂, shape of ``replicates`` without ``axis`` (broadcast).
    replicates : array_like
        Replicates along ``axis`` (B of them).
    confidence : float
        Nominal coverage c, in (0, 1) (checked by the caller or :class:`BootstrapSettings`).
    bounds : tuple of float, default (−inf, inf)
        The range the end points are clipped to.
    axis : int, default 0
        The replicate axis.

    Returns
    -------
    low, high : ndarray
        The end points, shape of ``replicates`` without ``axis`` (0-d for 1-D input).
    """
    q_low, q_high = percentile_interval(replicates, confidence, axis=axis)
    est = np.asarray(estimate, dtype=float)
    low = np.clip(2.0 * est - q_high, bounds[0], bounds[1])
    high = np.clip(2.0 * est - q_low, bounds[0], bounds[1])
    return low, high


def scipy_percentile_bootstrap(
    x: np.ndarray,
    statistic: Callable[..., Any],
    *,
    vectorized: bool,
    n_resamples: int,
    confidence: float,
    rng: np.random.Generator,
) -> tuple[float, float, np.ndarray]:
    """Ordinary percentile bootstrap of one sample through :func:`scipy.stats.bootstrap`.

    ``scipy.stats.bootstrap((x,), statistic, method="percentile", rng=rng, …)``: instances
    drawn with replacement (Efron & Tibshirani 1993, §13.3). scipy's degenerate-data warning
    is silenced; the caller checks the replicates.

    Parameters
    ----------
    x : ndarray, shape (n,)
        The sample.
    statistic : callable
        ``statistic(sample)`` or, with ``vectorized``, ``statistic(samples, axis)``.
    vectorized : bool
        Whether ``statistic`` takes an ``axis`` argument.
    n_resamples : int
        Replicates B.
    confidence : float
        Nominal coverage, in (0, 1).
    rng : numpy.random.Generator
        The stream to draw from.

    Returns
    -------
    low, high : float
        The interval's end points.
    replicates : ndarray, shape (B,)
        The bootstrap distribution.
    """
    from scipy import stats

    with warnings.catch_warnings():  # a non-finite replicate is the caller's to raise
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        res = stats.bootstrap(
            (x,),
            statistic,
            n_resamples=int(n_resamples),
            confidence_level=confidence,
            method="percentile",
            vectorized=vectorized,
            rng=rng,
        )
    low, high = res.confidence_interval
    return float(low), float(high), np.asarray(res.bootstrap_distribution)
