"""The statistics of the wine OOD study: AUROC, distances, matching, the supervised
reference, partial Spearman and the bootstrap over instances."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from udbench._resampling import instance_counts, percentile_interval
from udbench._seeding import make_rng
from udbench._validation import param_error
from udbench.studies.wine_ood._design import N_BINS, N_FOLDS, N_NEIGHBOURS


def auroc(negatives: np.ndarray, positives: np.ndarray) -> float:
    """Area under the ROC curve of a score, positives ranked above negatives.

    Equals the Mann–Whitney probability P(score⁺ > score⁻) + ½ P(tie)
    (:func:`sklearn.metrics.roc_auc_score`). NaN if a class is empty or a score not finite.
    """
    from sklearn.metrics import roc_auc_score

    neg = np.asarray(negatives, dtype=float)
    pos = np.asarray(positives, dtype=float)
    if neg.size == 0 or pos.size == 0:
        return float("nan")
    s = np.concatenate([neg, pos])
    if not np.all(np.isfinite(s)):
        return float("nan")
    y = np.concatenate([np.zeros(neg.size), np.ones(pos.size)])
    return float(roc_auc_score(y, s))


def mahalanobis_distance(X_train: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Mahalanobis distance of the rows of ``X`` to the training inputs.

    d(x) = sqrt((x − μ)ᵀ Σ⁺ (x − μ)), μ and Σ the mean and sample covariance of
    ``X_train`` (n, d), Σ⁺ its pseudo-inverse (a constant covariate contributes nothing).

    Returns
    -------
    ndarray, shape (m,)
    """
    X_train = np.asarray(X_train, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    mu = X_train.mean(axis=0)
    prec = np.linalg.pinv(np.atleast_2d(np.cov(X_train, rowvar=False)), hermitian=True)
    c = X - mu
    return np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", c, prec, c), 0.0))


def knn_distance(X_train: np.ndarray, X: np.ndarray, k: int = N_NEIGHBOURS) -> np.ndarray:
    """Mean Euclidean distance of every row of ``X`` to its ``k`` nearest training inputs."""
    from sklearn.neighbors import NearestNeighbors

    k = min(int(k), int(np.shape(X_train)[0]))
    nn = NearestNeighbors(n_neighbors=k).fit(np.asarray(X_train, dtype=np.float64))
    dist, _ = nn.kneighbors(np.asarray(X, dtype=np.float64))
    return np.asarray(dist.mean(axis=1), dtype=np.float64)


@dataclass(frozen=True)
class Matched:
    """Result of :func:`distance_match`.

    Attributes
    ----------
    negatives, positives : ndarray of int
        Indices (sorted) of the kept points of each class.
    edges : ndarray, shape (n_bins + 1,)
        Bin edges (pooled quantiles).
    """

    negatives: np.ndarray
    positives: np.ndarray
    edges: np.ndarray

    def bins(self, distances: np.ndarray) -> np.ndarray:
        """Bin (0 … n_bins − 1) of every distance under these edges."""
        n_bins = self.edges.size - 1
        inner = self.edges[1:-1]
        return np.clip(np.searchsorted(inner, np.asarray(distances), side="right"), 0, n_bins - 1)


def distance_match(
    d_neg: np.ndarray, d_pos: np.ndarray, n_bins: int = N_BINS, *, rng: Any = 0
) -> Matched:
    """Keep equal numbers of negatives and positives in every distance bin (paper D.3).

    The distances of both classes are pooled and cut into ``n_bins`` bins at the pooled
    quantiles (k/n_bins, k = 0 … n_bins; a point on an inner edge goes to the bin above);
    in every bin the smaller of the two counts is kept of each class, drawn at random
    without replacement. Both classes then have the same distance histogram on these bins.

    Parameters
    ----------
    d_neg, d_pos : ndarray, shape (n,), (m,)
        Distances of the negatives (white) and positives (red).
    n_bins : int, default N_BINS
    rng : int, str or numpy Generator, default 0
        Seed (or stream name) of the draw.

    Returns
    -------
    Matched

    Raises
    ------
    UdbenchError
        ``n_bins`` < 1, empty classes or non-finite distances.
    """
    d_neg = np.asarray(d_neg, dtype=float)
    d_pos = np.asarray(d_pos, dtype=float)
    if isinstance(n_bins, bool) or int(n_bins) < 1:
        raise param_error("distance_match", "n_bins", "be an integer >= 1", n_bins)
    if d_neg.size == 0 or d_pos.size == 0:
        raise param_error("distance_match", "distances", "be non-empty for both classes", 0)
    if not (np.all(np.isfinite(d_neg)) and np.all(np.isfinite(d_pos))):
        raise param_error("distance_match", "distances", "be finite", "NaN or inf values")
    gen = rng if isinstance(rng, np.random.Generator) else make_rng("distance-match", rng)
    edges = np.quantile(np.concatenate([d_neg, d_pos]), np.linspace(0.0, 1.0, int(n_bins) + 1))
    out = Matched(np.zeros(0, np.int64), np.zeros(0, np.int64), edges)
    b_neg, b_pos = out.bins(d_neg), out.bins(d_pos)
    keep_neg: list[np.ndarray] = []
    keep_pos: list[np.ndarray] = []
    for b in range(int(n_bins)):
        i_neg = np.flatnonzero(b_neg == b)
        i_pos = np.flatnonzero(b_pos == b)
        k = min(i_neg.size, i_pos.size)
        if k:
            keep_neg.append(gen.choice(i_neg, size=k, replace=False))
            keep_pos.append(gen.choice(i_pos, size=k, replace=False))
    neg = np.sort(np.concatenate(keep_neg)) if keep_neg else np.zeros(0, np.int64)
    pos = np.sort(np.concatenate(keep_pos)) if keep_pos else np.zeros(0, np.int64)
    return Matched(neg.astype(np.int64), pos.astype(np.int64), edges)


def supervised_auroc(
    X_neg: np.ndarray, X_pos: np.ndarray, n_folds: int = N_FOLDS, random_state: int = 0
) -> float:
    """AUROC of a cross-validated gradient-boosting classifier of positives vs negatives.

    scikit-learn's :class:`~sklearn.ensemble.HistGradientBoostingClassifier` (defaults,
    ``random_state``, one thread) is trained on ``n_folds`` − 1 stratified folds (shuffled with
    ``random_state``) and predicts the probability of "positive" on the held-out fold; the
    AUROC is computed on the out-of-fold probabilities of all points. It bounds how
    separable the two sets are (≈ 1: separable; ≈ 0.5: indistinguishable).

    Returns
    -------
    float
        NaN when a class has fewer than ``n_folds`` points.
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    X_neg = np.asarray(X_neg, dtype=np.float64)
    X_pos = np.asarray(X_pos, dtype=np.float64)
    if min(len(X_neg), len(X_pos)) < n_folds:
        return float("nan")
    X = np.vstack([X_neg, X_pos])
    y = np.concatenate([np.zeros(len(X_neg), int), np.ones(len(X_pos), int)])
    cv = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=random_state)
    clf = HistGradientBoostingClassifier(random_state=random_state)
    from threadpoolctl import threadpool_limits

    # one OpenMP thread: on a shared machine the default (all cores) oversubscribes badly
    # (measured: minutes instead of seconds), and it keeps the study's cells single-threaded
    with threadpool_limits(1):
        proba = cross_val_predict(clf, X, y, cv=cv, method="predict_proba")[:, 1]
    return auroc(proba[y == 0], proba[y == 1])


def partial_spearman(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> float:
    """Partial Spearman correlation of ``x`` and ``y`` given ``z``.

    The Pearson partial correlation of the average ranks:
    (r_xy − r_xz r_yz) / sqrt((1 − r_xz²)(1 − r_yz²)), r the Spearman correlations
    (Kendall & Stuart; Conover 1999, §5.4). NaN when a variable is constant or z explains
    x or y entirely.
    """
    from scipy.stats import rankdata

    arrs = [np.asarray(a, dtype=float) for a in (x, y, z)]
    if len({a.size for a in arrs}) != 1 or arrs[0].size < 3:
        raise param_error(
            "partial_spearman", "x, y, z", "have one length >= 3", [a.size for a in arrs]
        )
    if not all(np.all(np.isfinite(a)) for a in arrs):
        return float("nan")
    r = [rankdata(a) for a in arrs]
    if any(np.ptp(a) == 0 for a in r):
        return float("nan")
    c = np.corrcoef(np.vstack(r))
    rxy, rxz, ryz = c[0, 1], c[0, 2], c[1, 2]
    den = (1.0 - rxz**2) * (1.0 - ryz**2)
    if not den > 1e-15:
        return float("nan")
    return float((rxy - rxz * ryz) / np.sqrt(den))


def _median_ratio(num: np.ndarray, den: np.ndarray) -> float:
    if num.size == 0 or den.size == 0:
        return float("nan")
    d = float(np.median(den))
    return float(np.median(num)) / d if d > 0 else float("nan")


def _bootstrap_counts(n: int, n_resamples: int, random_state: int | str) -> np.ndarray:
    """Instance resampling counts (B, n) from the stream ``("wine-ood-bootstrap", seed)``."""
    return instance_counts(make_rng("wine-ood-bootstrap", random_state), n, n_resamples)


def _boot_mean(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Replicate means (B, k) of the columns of ``values`` (n, k; NaN = missing)."""
    finite = np.isfinite(values)
    num = counts @ np.where(finite, values, 0.0)
    den = counts @ finite.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _interval(reps: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    return percentile_interval(reps, confidence)


def _summary(
    inst: pd.DataFrame, columns: Sequence[str], counts: np.ndarray, confidence: float
) -> pd.DataFrame:
    """Mean over instances per score, with bootstrap intervals over instances."""
    tasks = sorted(inst["task_id"].unique())
    scores = list(dict.fromkeys(inst["score"]))
    out = pd.DataFrame(index=pd.Index(scores, name="score"))
    out["kind"] = [str(inst.loc[inst["score"] == s, "kind"].iloc[0]) for s in scores]
    for col in columns:
        pivot = inst.pivot_table(index="task_id", columns="score", values=col, dropna=False)
        wide = pivot.reindex(index=tasks, columns=scores).to_numpy(dtype=float)
        lo, hi = _interval(_boot_mean(wide, counts), confidence)
        finite = np.isfinite(wide)
        n_ok = finite.sum(axis=0)
        total = np.where(finite, wide, 0.0).sum(axis=0)
        out[col] = np.where(n_ok > 0, total / np.maximum(n_ok, 1), np.nan)
        out[f"{col}_low"], out[f"{col}_high"] = lo, hi
        out[f"{col}_n"] = np.isfinite(wide).sum(axis=0)
    return out
