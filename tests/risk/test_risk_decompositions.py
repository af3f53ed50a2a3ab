"""Tests of the five posterior-risk decompositions (paper Appendix A, Table 2).

Monte Carlo tolerances are stated next to each check together with the number of draws; all
random streams are seeded, so every number here is reproducible.
"""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest
import scoringrules as sr
from scipy import integrate, stats

from udbench._seeding import make_rng
from udbench._validation import UdbenchError
from udbench.risk import (
    brier_decomposition,
    crps_decomposition,
    crps_decomposition_gaussian,
    fair_mean_abs_difference,
    log_score_decomposition,
    log_score_decomposition_gaussian,
    mean_abs_normal,
    multiclass_log_decomposition,
    squared_loss_decomposition,
    squared_loss_decomposition_gaussian,
)

# A small Gaussian reference posterior at 4 points (hand-chosen, varied noise-to-signal ratio).
M = np.array([0.0, 1.0, -0.5, 2.0])
V_F = np.array([0.05, 0.5, 1.0, 2.0])
S2 = np.array([0.3, 0.1, 1.0, 0.5])
MU = M + np.array([0.3, -0.2, 0.0, 1.0])
V_HAT = np.array([0.5, 0.8, 1.5, 3.0])


def gaussian_draws(d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return M + np.sqrt(V_F) * rng.standard_normal((d, M.size))


def class_draws(d: int, n: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(k) * 0.7, size=(d, n))


def terms_sum(dec) -> np.ndarray:
    return dec.au + dec.generalized_variance + dec.deployment_gap


# --------------------------------------------------------------------------- squared loss
def test_squared_loss_reduces_exactly():
    f = gaussian_draws(500, 0)
    a = MU
    dec = squared_loss_decomposition(f, S2, a)
    m_hat, v_hat = f.mean(axis=0), f.var(axis=0)
    np.testing.assert_allclose(dec.au, S2, rtol=0, atol=0)
    np.testing.assert_allclose(dec.generalized_variance, v_hat, rtol=1e-12)
    np.testing.assert_allclose(dec.deployment_gap, (a - m_hat) ** 2, rtol=1e-12)
    # compensation identity: E_F (F − â)² = E_F (F − m̄)² + (m̄ − â)², to rounding
    np.testing.assert_allclose(dec.total, S2 + np.mean((f - a) ** 2, axis=0), rtol=1e-12)
    closed = squared_loss_decomposition_gaussian(M, V_F, S2, a)
    # the closed form against the formula written out here: the same terms, another summation
    # order, so equal to rounding
    np.testing.assert_allclose(closed.total, S2 + V_F + (a - M) ** 2, rtol=1e-14)
    np.testing.assert_allclose(closed.eu, V_F + (a - M) ** 2, rtol=1e-14)


def test_squared_loss_variance_is_accurate_for_large_means():
    # mean 1e6, SD 1e-3 (mean²/var = 1e18): the one-pass moment would lose every digit
    rng = np.random.default_rng(17)
    f = np.column_stack([1e6 + 1e-3 * rng.standard_normal(400), rng.standard_normal(400)])
    dec = squared_loss_decomposition(f, [0.1, 0.1], [1e6, 0.0])
    ref = np.mean((f - f.mean(axis=0)) ** 2, axis=0)
    np.testing.assert_allclose(dec.generalized_variance, ref, rtol=1e-9)


def test_squared_loss_total_matches_direct_monte_carlo():
    # D = 500 draws x 400 outcomes each; tolerance 5 standard errors of the direct average
    rng = np.random.default_rng(1)
    f = gaussian_draws(500, 1)
    y = f[:, None, :] + np.sqrt(S2) * rng.standard_normal((500, 400, M.size))
    losses = ((y - MU) ** 2).reshape(-1, M.size)
    se = losses.std(axis=0) / np.sqrt(losses.shape[0])
    dec = squared_loss_decomposition(f, S2, MU)
    assert np.all(np.abs(losses.mean(axis=0) - terms_sum(dec)) < 5 * se)


def test_squared_loss_zero_gap_at_centroid_and_nonnegative():
    f = gaussian_draws(200, 2)
    dec = squared_loss_decomposition(f, S2, f.mean(axis=0))
    np.testing.assert_allclose(dec.deployment_gap, 0.0, atol=1e-28)
    assert np.all(dec.generalized_variance >= 0) and np.all(dec.au >= 0)


# --------------------------------------------------------------------------- CRPS
def test_fair_mean_abs_difference_equals_pairwise_mean():
    x = np.random.default_rng(3).normal(size=(37, 5))
    brute = np.abs(x[:, None, :] - x[None, :, :]).sum(axis=(0, 1)) / (37 * 36)
    np.testing.assert_allclose(fair_mean_abs_difference(x), brute, rtol=1e-12)
    # review fix: one sample gave 0/0 = NaN with only a RuntimeWarning
    with pytest.raises(UdbenchError, match=r"'samples' must have at least 2 rows"):
        fair_mean_abs_difference(np.ones((1, 3)))
    with pytest.raises(UdbenchError, match=r"'samples' must contain only finite values"):
        fair_mean_abs_difference([[0.0, np.nan], [1.0, 2.0]])


def test_crps_sample_path_never_forms_d_by_d_by_n():
    # D = 2000, n = 20: a D x D x n float64 array would need 640 MB; we allow 40 MB peak.
    f = np.random.default_rng(4).normal(size=(2000, 20))
    tracemalloc.start()
    crps_decomposition(f, np.full(20, 0.3), np.zeros(20), np.ones(20))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 40e6


def test_gaussian_crps_au_is_sigma_over_sqrt_pi():
    sigma = np.sqrt(S2)
    closed = crps_decomposition_gaussian(M, V_F, S2, MU, V_HAT)
    np.testing.assert_allclose(closed.au, sigma / np.sqrt(np.pi), rtol=1e-15)
    # independent check by quadrature of ∫ Φ(t/σ)(1 − Φ(t/σ)) dt (A.3 aleatoric term)
    for s in sigma:
        val, _ = integrate.quad(
            lambda t, s=s: stats.norm.cdf(t / s) * stats.norm.sf(t / s), -40, 40
        )
        assert val == pytest.approx(s / np.sqrt(np.pi), rel=1e-8)
    draws = crps_decomposition(gaussian_draws(50, 5), S2, MU, V_HAT)
    np.testing.assert_allclose(draws.au, sigma / np.sqrt(np.pi), rtol=1e-15)


def test_crps_total_matches_direct_monte_carlo_with_scoringrules():
    # D = 400 draws x 500 outcomes each, CRPS of N(μ̂, ŝ²) by scoringrules; tolerance 5 SE
    rng = np.random.default_rng(6)
    f = gaussian_draws(400, 6)
    y = f[:, None, :] + np.sqrt(S2) * rng.standard_normal((400, 500, M.size))
    scores = sr.crps_normal(y, MU, np.sqrt(V_HAT)).reshape(-1, M.size)
    se = scores.std(axis=0) / np.sqrt(scores.shape[0])
    dec = crps_decomposition(f, S2, MU, V_HAT)
    assert np.all(np.abs(scores.mean(axis=0) - dec.total) < 5 * se)
    np.testing.assert_allclose(terms_sum(dec), dec.total, rtol=1e-12)


def test_crps_terms_against_quadrature_and_compensation_identity():
    # Independent check on a grid: ∫(G_d − Ĝ)², ∫(G_d − Ḡ)², ∫(Ḡ − Ĝ)² by the trapezoid rule.
    # D = 400; the generalized variance uses noise samples, tolerance 0.03 (> 4 MC SD, measured).
    d = 400
    f = gaussian_draws(d, 7)
    dec = crps_decomposition(f, S2, MU, V_HAT)
    t = np.linspace(-15, 15, 6001)
    for j in range(M.size):
        g = stats.norm.cdf(t[None, :], f[:, j, None], np.sqrt(S2[j]))
        g_bar = g.mean(axis=0)
        g_hat = stats.norm.cdf(t, MU[j], np.sqrt(V_HAT[j]))
        eu_direct = np.trapezoid(((g - g_hat) ** 2).mean(axis=0), t)
        gv_emp = np.trapezoid(((g - g_bar) ** 2).mean(axis=0), t)
        gap_emp = np.trapezoid((g_bar - g_hat) ** 2, t)
        # compensation identity on the grid (exact up to quadrature error)
        assert eu_direct == pytest.approx(gv_emp + gap_emp, abs=1e-9)
        # EU = total − AU is exact given the draws
        assert dec.eu[j] == pytest.approx(eu_direct, abs=1e-6)
        # fair (pairs i ≠ j) vs empirical (all pairs) generalized variance: GV_fair ≈ GV_emp·D/(D−1)
        assert dec.generalized_variance[j] == pytest.approx(gv_emp * d / (d - 1), abs=0.03)


def test_crps_closed_form_matches_draws():
    # D = 2000 draws; observed MC SD over 30 seeds ≤ 0.014 for every term; tolerance 0.06
    closed = crps_decomposition_gaussian(M, V_F, S2, MU, V_HAT)
    dec = crps_decomposition(gaussian_draws(2000, 8), S2, MU, V_HAT, random_state=8)
    for name in ("au", "generalized_variance", "deployment_gap", "total"):
        np.testing.assert_allclose(getattr(dec, name), getattr(closed, name), atol=0.06)
    np.testing.assert_allclose(terms_sum(closed), closed.total, rtol=1e-12)
    assert dec.n_draws == 2000 and dec.n_samples == 2000


def test_crps_zero_gap_at_centroid_and_nonnegative():
    v = V_F + S2
    closed = crps_decomposition_gaussian(M, V_F, S2, M, v)
    np.testing.assert_allclose(closed.deployment_gap, 0.0, atol=1e-14)
    assert np.all(closed.generalized_variance >= 0)
    other = crps_decomposition_gaussian(M, V_F, S2, MU, V_HAT)
    assert np.all(other.deployment_gap > 0) and np.all(other.au > 0)
    # draw-based at the (Gaussian) centroid: gap ≈ 0 within MC error (D = 2000, tol 0.04)
    dec = crps_decomposition(gaussian_draws(2000, 9), S2, M, v)
    np.testing.assert_allclose(dec.deployment_gap, 0.0, atol=0.04)
    assert np.all(dec.generalized_variance > -0.04)


def test_crps_pairwise_term_with_several_noise_samples_equals_brute_force():
    # K = 3 noise samples per draw, D = 6, n = 2: P = mean |Y_dk − Y_d'k'| over d ≠ d'
    f = np.random.default_rng(16).normal(size=(6, 2))
    s2 = np.array([0.4, 0.9])
    dec = crps_decomposition(f, s2, [0.0, 0.0], [1.0, 1.0], n_noise=3, random_state=5)
    eps = make_rng("risk", "crps", "noise", 5).standard_normal((3, 6, 2))
    y = f[None] + np.sqrt(s2) * eps
    for j in range(2):
        diff = np.abs(y[:, :, None, None, j] - y[None, None, :, :, j])  # (k, d, k', d')
        distinct = ~np.eye(6, dtype=bool)[None, :, None, :]
        pair = (diff * distinct).sum() / (6 * 5 * 9)
        assert dec.generalized_variance[j] == pytest.approx(0.5 * pair - np.sqrt(s2[j] / np.pi))
    assert dec.n_samples == 18
    one = crps_decomposition(f, s2, [0.0, 0.0], [1.0, 1.0], random_state=5)
    # the total does not depend on the number of noise samples (another code path: to rounding)
    np.testing.assert_allclose(one.total, dec.total, rtol=1e-13)
    with pytest.raises(UdbenchError, match="'n_noise'"):
        crps_decomposition(f, s2, [0.0, 0.0], [1.0, 1.0], n_noise=0)


def test_crps_is_deterministic_per_random_state():
    f = gaussian_draws(100, 10)
    a = crps_decomposition(f, S2, MU, V_HAT, random_state=3)
    b = crps_decomposition(f, S2, MU, V_HAT, random_state=3)
    c = crps_decomposition(f, S2, MU, V_HAT, random_state=4)
    assert a.generalized_variance.tobytes() == b.generalized_variance.tobytes()
    assert a.generalized_variance.tobytes() != c.generalized_variance.tobytes()
    np.testing.assert_array_equal(a.total, c.total)  # total does not use the noise samples


@pytest.mark.parametrize("decompose", [crps_decomposition, log_score_decomposition])
@pytest.mark.parametrize(
    ("bad", "shown"),
    [
        ("x", "'x'"),
        (None, "None"),
        (2.7, "2.7"),
        (3.0, "3.0"),
        (-1, "-1"),
        (True, "True"),
        (2**32, "4294967296"),
    ],
)
def test_bad_random_state_is_one_line_error(decompose, bad, shown):
    # issue 68: 'x' and None gave a raw ValueError/TypeError, 2.7 was truncated to 2
    f = gaussian_draws(50, 1)
    with pytest.raises(UdbenchError) as info:
        decompose(f, S2, MU, V_HAT, random_state=bad)
    assert str(info.value) == (
        f"{decompose.__name__}: parameter 'random_state' must be an integer from 0 to "
        f"4294967295; got {shown}"
    )


@pytest.mark.parametrize("decompose", [crps_decomposition, log_score_decomposition])
def test_random_state_takes_numpy_integers_and_the_largest_seed(decompose):
    f = gaussian_draws(50, 1)
    a = decompose(f, S2, MU, V_HAT, random_state=np.int64(7))
    b = decompose(f, S2, MU, V_HAT, random_state=7)
    assert a.generalized_variance.tobytes() == b.generalized_variance.tobytes()
    assert a.extra["random_state"] == 7 and type(a.extra["random_state"]) is int
    top = decompose(f, S2, MU, V_HAT, random_state=2**32 - 1)
    assert np.all(np.isfinite(top.generalized_variance))


# --------------------------------------------------------------------------- log score
def test_log_score_closed_form_hand_values():
    # σ² = 1, σ_f² = 3 (v = 4), μ̂ − m = 2, ŝ² = 2
    dec = log_score_decomposition_gaussian([0.0], [3.0], [1.0], [2.0], [2.0])
    assert dec.au[0] == pytest.approx(0.5 * np.log(2 * np.pi * np.e))
    assert dec.generalized_variance[0] == pytest.approx(0.5 * np.log(4.0))
    assert dec.deployment_gap[0] == pytest.approx(0.5 * (np.log(0.5) + 8.0 / 2.0 - 1.0))
    assert dec.total[0] == pytest.approx(terms_sum(dec)[0], rel=1e-14)
    # AU is a differential entropy: negative for small noise (A.4)
    small = log_score_decomposition_gaussian([0.0], [1.0], [0.01], [0.0], [1.0])
    assert small.au[0] < 0


def test_log_score_total_matches_direct_monte_carlo_with_scoringrules():
    # D = 400 draws x 500 outcomes; log score of N(μ̂, ŝ²) by scoringrules; tolerance 5 SE
    rng = np.random.default_rng(11)
    f = gaussian_draws(400, 11)
    y = f[:, None, :] + np.sqrt(S2) * rng.standard_normal((400, 500, M.size))
    scores = sr.logs_normal(y, MU, np.sqrt(V_HAT)).reshape(-1, M.size)
    se = scores.std(axis=0) / np.sqrt(scores.shape[0])
    dec = log_score_decomposition(f, S2, MU, V_HAT)
    assert np.all(np.abs(scores.mean(axis=0) - dec.total) < 5 * se)
    np.testing.assert_allclose(terms_sum(dec), dec.total, rtol=1e-12)


def test_log_score_closed_form_matches_draws_and_zero_gap():
    # D = 2000 draws; observed MC SD over 30 seeds ≤ 0.019 for every term; tolerance 0.08
    closed = log_score_decomposition_gaussian(M, V_F, S2, MU, V_HAT)
    dec = log_score_decomposition(gaussian_draws(2000, 12), S2, MU, V_HAT, random_state=12)
    for name in ("au", "generalized_variance", "deployment_gap", "total"):
        np.testing.assert_allclose(getattr(dec, name), getattr(closed, name), atol=0.08)
    # fewer outcome samples (M = 500 of D = 2000): same terms within a looser 0.15
    sub = log_score_decomposition(gaussian_draws(2000, 12), S2, MU, V_HAT, n_samples=500)
    assert sub.n_samples == 500 and sub.n_draws == 2000
    np.testing.assert_allclose(sub.generalized_variance, closed.generalized_variance, atol=0.15)
    np.testing.assert_allclose(sub.total, dec.total, rtol=1e-13)  # to rounding: another path
    at_centroid = log_score_decomposition_gaussian(M, V_F, S2, M, V_F + S2)
    np.testing.assert_allclose(at_centroid.deployment_gap, 0.0, atol=1e-14)
    assert np.all(closed.generalized_variance >= 0) and np.all(closed.deployment_gap > 0)
    # compensation identity for KL between Gaussians, computed per draw independently:
    # E_F KL(N(F, σ²) ‖ q̂) = GV + gap, with GV, gap from the closed form
    kl = 0.5 * (np.log(V_HAT / S2) + (S2 + V_F + (M - MU) ** 2) / V_HAT - 1.0)
    np.testing.assert_allclose(closed.eu, kl, rtol=1e-12)


# --------------------------------------------------------------------------- classification
def test_multiclass_log_generalized_variance_is_mutual_information():
    p = class_draws(300, 6, 3, 13)
    q = np.full((6, 3), 1 / 3)
    dec = multiclass_log_decomposition(p, q)
    # I(Y; F) from the joint law of (draw index, class): p(d, k) = π_dk / D
    for j in range(6):
        joint = p[:, j, :] / p.shape[0]
        pd_, pk = joint.sum(axis=1, keepdims=True), joint.sum(axis=0, keepdims=True)
        mi = float(np.sum(joint * np.log(joint / (pd_ * pk))))
        assert dec.generalized_variance[j] == pytest.approx(mi, rel=1e-10)
    # H(π̄) = AU + I (A.5) and the total equals a direct expectation of −log π̂_Y
    h_bar = stats.entropy(p.mean(axis=0), axis=-1)
    np.testing.assert_allclose(dec.au + dec.generalized_variance, h_bar, rtol=1e-12)
    np.testing.assert_allclose(dec.total, np.log(3.0), rtol=1e-12)
    np.testing.assert_allclose(terms_sum(dec), dec.total, rtol=1e-12)


def test_multiclass_log_monte_carlo_total_and_zero_gap():
    # D = 200 draws x 200 labels each; tolerance 5 SE
    rng = np.random.default_rng(14)
    p = class_draws(200, 3, 4, 14)
    q = rng.dirichlet(np.ones(4), size=3)
    dec = multiclass_log_decomposition(p, q)
    for j in range(3):
        labels = np.concatenate([rng.choice(4, size=200, p=p[d, j]) for d in range(200)])
        losses = -np.log(q[j, labels])
        assert abs(losses.mean() - dec.total[j]) < 5 * losses.std() / np.sqrt(losses.size)
    # compensation identity: mean_d KL(π_d ‖ π̂) = GV + gap
    kl = (p * np.log(p / q)).sum(axis=-1).mean(axis=0)
    np.testing.assert_allclose(dec.eu, kl, rtol=1e-10)
    centroid = multiclass_log_decomposition(p, p.mean(axis=0))
    np.testing.assert_allclose(centroid.deployment_gap, 0.0, atol=1e-15)
    assert np.all(dec.au >= 0) and np.all(dec.generalized_variance >= 0)
    assert np.all(dec.deployment_gap >= 0)


def test_brier_decomposition_values_and_identities():
    rng = np.random.default_rng(15)
    p = class_draws(200, 3, 3, 15)
    q = rng.dirichlet(np.ones(3), size=3)
    dec = brier_decomposition(p, q)
    for j in range(3):
        labels = np.concatenate([rng.choice(3, size=200, p=p[d, j]) for d in range(200)])
        losses = ((q[j] - np.eye(3)[labels]) ** 2).sum(axis=1)
        assert abs(losses.mean() - dec.total[j]) < 5 * losses.std() / np.sqrt(losses.size)
    np.testing.assert_allclose(terms_sum(dec), dec.total, rtol=1e-12)
    direct = ((p - q) ** 2).sum(axis=-1).mean(axis=0)  # compensation identity
    np.testing.assert_allclose(dec.eu, direct, rtol=1e-12)
    centroid = brier_decomposition(p, p.mean(axis=0))
    np.testing.assert_allclose(centroid.deployment_gap, 0.0, atol=1e-15)
    # deterministic labelings: AU = 0, everything epistemic (A.5/A.7)
    onehot = np.eye(2)[np.array([[0], [1], [1], [0]])]  # D = 4, n = 1, K = 2
    det = brier_decomposition(onehot, [[0.5, 0.5]])
    np.testing.assert_array_equal(det.au, [0.0])
    assert det.generalized_variance[0] == pytest.approx(0.5)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (
            lambda: squared_loss_decomposition(np.zeros((5, 3)), np.ones(4), np.zeros(3)),
            "noise_var",
        ),
        (lambda: squared_loss_decomposition(np.zeros((1, 3)), np.ones(3), np.zeros(3)), "draws"),
        (lambda: squared_loss_decomposition([[np.nan, 0.0], [0.0, 0.0]], [1, 1], [0, 0]), "draws"),
        (lambda: squared_loss_decomposition([[np.inf, 0.0], [0.0, 0.0]], [1, 1], [0, 0]), "draws"),
        (lambda: crps_decomposition([[np.nan, 0.0], [0.0, 0.0]], [1, 1], [0, 0], [1, 1]), "draws"),
        (lambda: squared_loss_decomposition(np.zeros((2, 2)), [1, 1], [np.inf, 0]), "prediction"),
        (lambda: squared_loss_decomposition(np.zeros((2, 2)), [1, -1], [0, 0]), "noise_var"),
        (lambda: crps_decomposition(np.zeros((2, 2)), [1, 1], [0, 0], [1, 0]), "pred_var"),
        (lambda: log_score_decomposition(np.zeros((2, 2)), [1, 0], [0, 0], [1, 1]), "noise_var"),
        (lambda: crps_decomposition_gaussian([0, 0], [-1, 1], [1, 1], [0, 0], [1, 1]), "post_var"),
        (lambda: log_score_decomposition_gaussian([0], [1], [1], [0, 1], [1]), "pred_mean"),
        (
            lambda: log_score_decomposition(np.zeros((3, 1)), [1], [0], [1], n_samples=5),
            "n_samples",
        ),
        (lambda: brier_decomposition(np.full((2, 1, 2), 0.6), [[0.5, 0.5]]), "prob_draws"),
        (lambda: brier_decomposition(np.full((2, 1, 2), 0.5), [[0.7, 0.2]]), "pred_probs"),
        (
            lambda: brier_decomposition(np.full((2, 1, 2), 0.5), [[0.5, 0.5], [0.5, 0.5]]),
            "pred_probs",
        ),
        (lambda: multiclass_log_decomposition(np.full((2, 1, 2), 0.5), [[1.0, 0.0]]), "pred_probs"),
        (
            lambda: multiclass_log_decomposition([[[1.5, -0.5]], [[0.5, 0.5]]], [[0.5, 0.5]]),
            "prob_draws",
        ),
    ],
)
def test_bad_input_names_the_argument(call, argument):
    with pytest.raises(UdbenchError, match=f"'{argument}'"):
        call()


def test_mean_abs_normal_values_and_point_mass():
    # review fix: scale = 0 (a point mass) returned NaN with only a RuntimeWarning
    delta = np.array([0.5, -1.0, 0.0, 2.0])
    scale = np.array([0.0, 0.0, 0.0, 1.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = mean_abs_normal(delta, scale)
    np.testing.assert_array_equal(got[:3], [0.5, 1.0, 0.0])
    # E|N(δ, s²)| = s√(2/π) e^{−δ²/2s²} + δ(1 − 2Φ(−δ/s)) (folded normal mean)
    s, d = 1.5, 2.0
    ref = s * np.sqrt(2 / np.pi) * np.exp(-(d**2) / (2 * s**2)) + d * (
        1 - 2 * stats.norm.cdf(-d / s)
    )
    assert got[3] == pytest.approx(ref, rel=1e-12)
    np.testing.assert_allclose(mean_abs_normal(2.0, 0.0), 2.0)  # scalars broadcast


def test_log_score_mixture_entropy_control_variate_small_epistemic():
    """Where σ_f² ≪ σ², the noise of ε²/2 used to swamp I(Y; F) (SD ≈ 0.7/√M ≈ 0.05 nats at
    M = 200 against I ≈ 0.01); the control variate brings the noise-sampling SD far below."""
    d, n = 1000, 8
    rng = np.random.default_rng(3)
    s2 = np.full(n, 0.25)
    v = np.full(n, 0.005)  # σ_f²/σ² = 0.02: I(Y; F) = ½ log(1.02) ≈ 0.0099
    f = 0.3 + np.sqrt(v) * rng.standard_normal((d, n))
    gv = np.array(
        [
            log_score_decomposition(
                f, s2, 0.3 + 0 * v, s2 + v, n_samples=200, random_state=r
            ).generalized_variance
            for r in range(12)
        ]
    )
    assert gv.std(axis=0).max() < 0.015  # the plain mean: about 0.05
    truth = log_score_decomposition_gaussian(f.mean(0), f.var(0), s2, f.mean(0), s2 + v)
    np.testing.assert_allclose(gv.mean(axis=0), truth.generalized_variance, atol=0.01)
