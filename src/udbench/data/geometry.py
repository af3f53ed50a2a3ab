"""Value-based geometry of a covariate matrix: noise score z and Mahalanobis shells.

Both are fitted once on all kept rows of a dataset and are then plain functions of x, so
the same point gets the same z and the same shell in any batch (SPEC §3).

Batch invariance is bitwise, not only to rounding: the step noise mode (z > 0) and the shells
(distance ≤ edge) are discontinuous in z and in the distance, so a one-ulp difference between the
value of a row computed alone and computed inside a larger batch could move a point across a step
or a shell edge. A matrix product does not give that guarantee (BLAS takes another kernel, with
another summation order, for one row than for many), so the row-wise contractions here are
accumulated column by column in a fixed order with elementwise NumPy operations, which round
each row's value identically whatever the batch's size, order or memory layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.covariance import ShrunkCovariance
from sklearn.decomposition import PCA

from udbench._validation import check_array, param_error

__all__ = [
    "N_SHELLS",
    "SHELL_SHRINKAGE",
    "CovariateGeometry",
    "fit_geometry",
    "largest_remainder",
    "rowwise_dot",
]

#: Number of coverage shells (quantile edges at 20/40/60/80 %, SPEC §3).
N_SHELLS = 5
#: Shrinkage λ of the covariance toward isotropy, Σ_λ = (1−λ)Σ + λ·(tr Σ/d)·I (SPEC §3).
SHELL_SHRINKAGE = 0.1


@dataclass(frozen=True)
class CovariateGeometry:
    """Fitted noise score and shell map of one dataset (SPEC §3).

    Attributes
    ----------
    center, scale : ndarray of shape (d,)
        Column means and SDs (ddof=0) of the scaled covariates over all kept rows.
    loading : ndarray of shape (d,)
        First principal axis of the column-standardised covariates, signed so that
        its entry of largest magnitude is positive.
    score_sd : float
        SD (ddof=0) over all kept rows of the projection on ``loading``.
    location : ndarray of shape (d,)
        Mean of the scaled covariates (centre of the shells).
    precision : ndarray of shape (d, d)
        Inverse of the shrunk covariance Σ_λ with λ = 0.1.
    shell_edges : ndarray of shape (4,)
        20/40/60/80 % quantiles of the Mahalanobis distance over all kept rows.
    """

    center: np.ndarray
    scale: np.ndarray
    loading: np.ndarray
    score_sd: float
    location: np.ndarray
    precision: np.ndarray
    shell_edges: np.ndarray

    def _check(self, X: object, name: str) -> np.ndarray:
        return check_array(name, "X", X, ndim=2, shape=(None, self.center.shape[0]))

    def noise_score(self, X: object) -> np.ndarray:
        """Noise score z(x) of scaled rows ``X`` (m, d) -> (m,), dimensionless (SPEC §3).

        Bitwise the same for a row whatever batch it is in (see the module docstring).
        """
        X = self._check(X, "noise_score")
        return rowwise_dot((X - self.center) / self.scale, self.loading) / self.score_sd

    def mahalanobis(self, X: object) -> np.ndarray:
        """Shrunk-covariance Mahalanobis distance (not squared) of rows ``X`` (m, d) -> (m,).

        Bitwise the same for a row whatever batch it is in (see the module docstring).
        """
        X = self._check(X, "mahalanobis")
        diff = X - self.location
        squared = np.zeros(diff.shape[0])
        for j in range(diff.shape[1]):
            squared = squared + diff[:, j] * rowwise_dot(diff, self.precision[:, j])
        return np.sqrt(squared)

    def shell_of(self, X: object) -> np.ndarray:
        """Shell index 0 (inner) … 4 (outermost) of rows ``X`` (m, d) -> (m,) int64.

        A distance equal to an edge belongs to the inner of the two shells.
        """
        return np.searchsorted(self.shell_edges, self.mahalanobis(X), side="left").astype(np.int64)


def rowwise_dot(A: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise inner products ``A @ v`` of ``A`` (m, d) and ``v`` (d,) -> (m,), batch-invariant.

    Accumulates ``A[:, 0]·v[0] + A[:, 1]·v[1] + …`` left to right with elementwise operations,
    so each row's value is rounded the same way whatever the batch's size, order or memory
    layout (a BLAS matrix-vector product is not: its kernel and summation order depend on the
    shape). Costs d elementwise passes over m values.
    """
    out = A[:, 0] * v[0]
    for k in range(1, A.shape[1]):
        out = out + A[:, k] * v[k]
    return np.asarray(out, dtype=np.float64)


def fit_geometry(X: np.ndarray) -> CovariateGeometry:
    """Fit the noise score and the shells on all kept rows ``X`` (N, d) in [0, 1].

    Noise score: PCA (scikit-learn) of the column-standardised covariates, first component,
    sign rule and standardisation over all rows (SPEC §3, paper B.3). Shells: Mahalanobis
    distance under scikit-learn's ``ShrunkCovariance(shrinkage=0.1)``, which is exactly
    Σ_λ = (1−λ)Σ + λ·(tr Σ/d)·I, cut at its 20/40/60/80 % quantiles (SPEC §3).
    The caller guarantees no covariate is constant.
    """
    center = X.mean(axis=0)
    scale = X.std(axis=0)
    standardised = (X - center) / scale
    loading = PCA(n_components=1, svd_solver="full").fit(standardised).components_[0]
    if loading[np.argmax(np.abs(loading))] < 0:
        loading = -loading
    score_sd = float((standardised @ loading).std())

    shrunk = ShrunkCovariance(shrinkage=SHELL_SHRINKAGE).fit(X)
    geometry = CovariateGeometry(
        center=center,
        scale=scale,
        loading=loading,
        score_sd=score_sd,
        location=shrunk.location_,
        precision=shrunk.get_precision(),
        shell_edges=np.zeros(N_SHELLS - 1),
    )
    distance = geometry.mahalanobis(X)
    edges = np.quantile(distance, np.arange(1, N_SHELLS) / N_SHELLS)
    return CovariateGeometry(**{**geometry.__dict__, "shell_edges": edges})


def largest_remainder(total: int, shares: np.ndarray | list[float]) -> np.ndarray:
    """Split integer ``total`` by ``shares`` (summing to 1) with largest-remainder rounding.

    Each part gets ⌊total·share⌋; the leftover units go to the largest fractional parts,
    ties to the lower index (Hamilton's method).

    Returns
    -------
    ndarray of int64, shape (len(shares),)
        Non-negative counts summing to ``total``.

    Raises
    ------
    UdbenchError
        ``shares`` negative, non-finite, or not summing to 1 (to 1e-9).
    """
    share = np.asarray(shares, dtype=np.float64)
    if share.ndim != 1 or np.any(~np.isfinite(share)) or np.any(share < 0):
        raise param_error("largest_remainder", "shares", "be finite and >= 0", shares)
    if abs(float(share.sum()) - 1.0) > 1e-9:
        raise param_error("largest_remainder", "shares", "sum to 1", shares)
    quota = total * share
    counts = np.floor(quota + 1e-9).astype(np.int64)
    remainder = quota - counts
    order = np.argsort(-remainder, kind="stable")
    counts[order[: total - int(counts.sum())]] += 1
    return counts
