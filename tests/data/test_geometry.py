"""Noise score and shells against hand-computed references (SPEC §3)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import mahalanobis

from udbench._validation import UdbenchError
from udbench.data import largest_remainder, load_covariates
from udbench.data.geometry import fit_geometry


@pytest.mark.parametrize(
    ("total", "shares", "expected"),
    [
        (751, [0.2] * 5, [151, 150, 150, 150, 150]),  # ties go to the inner shell
        (10, [0.25, 0.25, 0.25, 0.25, 0.0], [3, 3, 2, 2, 0]),
        (7, [0.5, 0.3, 0.2], [4, 2, 1]),  # 3.5, 2.1, 1.4 -> one unit to the .5
        (584, [0.2] * 5, [117, 117, 117, 117, 116]),
    ],
)
def test_largest_remainder(total, shares, expected):
    np.testing.assert_array_equal(largest_remainder(total, shares), expected)


def test_largest_remainder_rejects_shares_that_do_not_sum_to_one():
    # review fix: shares summing to 1.2 returned counts summing to 12 for total 10
    with pytest.raises(UdbenchError, match=r"largest_remainder: parameter 'shares' must sum to 1"):
        largest_remainder(10, [0.6, 0.6])
    with pytest.raises(UdbenchError, match=r"parameter 'shares' must be finite and >= 0"):
        largest_remainder(10, [1.2, -0.2])


def _toy(seed=0, n=400):
    rng = np.random.default_rng(seed)
    t = rng.uniform(size=n)
    return np.column_stack([t, 0.2 + 0.5 * t + 0.05 * rng.normal(size=n), rng.uniform(size=n)])


def test_noise_score_matches_a_hand_computed_pca():
    X = _toy()
    geo = fit_geometry(X)
    S = (X - X.mean(0)) / X.std(0)
    _, eigvec = np.linalg.eigh(np.cov(S.T, ddof=0))
    w = eigvec[:, -1]
    w = w if w[np.argmax(np.abs(w))] > 0 else -w
    z = S @ w / (S @ w).std()
    np.testing.assert_allclose(geo.noise_score(X), z, atol=1e-12)
    assert geo.loading[np.argmax(np.abs(geo.loading))] > 0
    # mirroring every covariate mirrors the score (same axis after the sign rule)
    np.testing.assert_allclose(fit_geometry(1.0 - X).noise_score(1.0 - X), -z, atol=1e-12)


def test_shells_use_the_shrunk_mahalanobis_distance():
    X = _toy(1)
    geo = fit_geometry(X)
    sigma = np.cov(X.T, ddof=0)
    shrunk = 0.9 * sigma + 0.1 * np.trace(sigma) / 3 * np.eye(3)
    vi = np.linalg.inv(shrunk)
    ref = np.array([mahalanobis(x, X.mean(0), vi) for x in X])
    np.testing.assert_allclose(geo.mahalanobis(X), ref, rtol=1e-10)
    np.testing.assert_allclose(geo.shell_edges, np.quantile(ref, [0.2, 0.4, 0.6, 0.8]))
    np.testing.assert_array_equal(np.bincount(geo.shell_of(X)), [80] * 5)


def _batches(X):
    """The same rows as a full batch and in other shapes, orders and memory layouts."""
    n = X.shape[0]
    rev = np.arange(n)[::-1]
    yield np.arange(n), X
    yield rev, X[rev]
    yield np.arange(n), np.asfortranarray(X)
    yield np.arange(0, n, 3), X[::3]  # a strided view
    for i in range(n):
        yield np.array([i]), X[i : i + 1]


def _assert_batch_invariant(geo, X):
    z, dist, shell = geo.noise_score(X), geo.mahalanobis(X), geo.shell_of(X)
    for rows, batch in _batches(X):
        # bitwise: z feeds the step noise mode (z > 0) and distances the shell edges
        assert geo.noise_score(batch).tobytes() == z[rows].tobytes()
        assert geo.mahalanobis(batch).tobytes() == dist[rows].tobytes()
        assert geo.shell_of(batch).tobytes() == shell[rows].tobytes()


def test_rowwise_contractions_equal_the_matrix_products_to_rounding(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    A, v = rng.standard_normal((300, 21)), rng.standard_normal(21)
    from udbench.data.geometry import rowwise_dot

    np.testing.assert_allclose(rowwise_dot(A, v), A @ v, rtol=1e-12, atol=1e-12)
    X = rng.uniform(size=(300, 21))
    geo = fit_geometry(X)
    S = (X - geo.center) / geo.scale
    np.testing.assert_allclose(geo.noise_score(X), S @ geo.loading / geo.score_sd, atol=1e-12)
    diff = X - geo.location
    ref = np.sqrt(np.einsum("ij,jk,ik->i", diff, geo.precision, diff))
    np.testing.assert_allclose(geo.mahalanobis(X), ref, rtol=1e-12)


@pytest.mark.parametrize("d", [3, 8, 21])
def test_noise_score_and_shell_are_bitwise_functions_of_x(d, global_random_seed):
    # d = 8 and 21: BLAS takes other kernels for one row than for many (one ulp on concrete)
    X = np.random.default_rng([d, global_random_seed]).uniform(size=(200, d))
    _assert_batch_invariant(fit_geometry(X), X)


def test_noise_score_and_shell_are_functions_of_x(data_dir):
    cov = load_covariates("concrete", data_dir)
    _assert_batch_invariant(cov.geometry, cov.X)
    rows = np.array([5, 900, 17, 5])
    np.testing.assert_array_equal(cov.noise_score(cov.X[rows]), cov.z[rows])
    np.testing.assert_array_equal(cov.shell_of(cov.X[rows]), cov.shell[rows])
    with pytest.raises(UdbenchError, match=r"noise_score: parameter 'X' must have shape \(\*, 8\)"):
        cov.noise_score(np.zeros((2, 3)))
