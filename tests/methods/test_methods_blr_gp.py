"""BLR and GP against closed forms computed independently here with dense NumPy.

References: Bishop (2006) eqs. 3.53–3.54 and 3.58–3.59 (BLR posterior, predictive variance),
3.87/3.92/3.95 (evidence fixed point); Rasmussen & Williams (2006) eqs. 2.25–2.26 and 5.8
(GP predictive mean/variance, log marginal likelihood); Matérn-5/2: R&W eq. 4.17.
"""

from __future__ import annotations

import numpy as np
import pytest

from udbench._seeding import make_rng
from udbench.methods.blr import BLR
from udbench.methods.gp import GP


def _linear_data(n: int, d: int, noise_sd: float, key: str):
    rng = make_rng("tests", "methods", key)
    X = rng.uniform(size=(n, d))
    w = rng.normal(size=d)
    y = 2.0 + X @ w + noise_sd * rng.standard_normal(n)
    return X, y, rng.uniform(size=(7, d))


def test_blr_matches_closed_form_posterior():
    X, y, Xt = _linear_data(30, 4, 0.3, "blr-closed-form")
    m = BLR(tol=1e-12, max_iter=1000).fit(X, y)
    pred = m.predict(Xt)
    alpha, lam = m.model_.alpha_, m.model_.lambda_  # noise and prior precision (standardised)
    loc, scale = y.mean(), y.std()
    ys = (y - loc) / scale
    xbar = X.mean(axis=0)
    Xc, Xtc = X - xbar, Xt - xbar
    Sigma = np.linalg.inv(lam * np.eye(4) + alpha * Xc.T @ Xc)
    w = alpha * Sigma @ Xc.T @ (ys - ys.mean())
    mean = loc + scale * (ys.mean() + Xtc @ w)
    eu = scale**2 * np.einsum("ij,jk,ik->i", Xtc, Sigma, Xtc)
    np.testing.assert_allclose(pred.mean, mean, rtol=0, atol=1e-8)
    np.testing.assert_allclose(pred.epistemic, eu, rtol=0, atol=1e-8)
    np.testing.assert_allclose(pred.aleatoric, np.full(7, scale**2 / alpha), rtol=0, atol=1e-8)
    assert m.noise_variance_ == pytest.approx(scale**2 / alpha, rel=1e-12)


def test_blr_precisions_are_the_evidence_fixed_point():
    X, y, _ = _linear_data(40, 3, 0.5, "blr-evidence")
    m = BLR(tol=1e-14, max_iter=5000).fit(X, y)
    alpha, lam = m.model_.alpha_, m.model_.lambda_
    ys = (y - y.mean()) / y.std()
    Xc = X - X.mean(axis=0)
    eig = np.linalg.eigvalsh(Xc.T @ Xc)
    Sigma = np.linalg.inv(lam * np.eye(3) + alpha * Xc.T @ Xc)
    w = alpha * Sigma @ Xc.T @ ys
    gamma = np.sum(alpha * eig / (lam + alpha * eig))  # effective number of parameters
    # MacKay's updates with the (near-flat, 1e-6) Gamma hyperpriors of BayesianRidge.
    lam_next = (gamma + 2e-6) / (w @ w + 2e-6)
    alpha_next = (40 - gamma + 2e-6) / (np.sum((ys - Xc @ w) ** 2) + 2e-6)
    assert lam == pytest.approx(lam_next, rel=1e-6)
    assert alpha == pytest.approx(alpha_next, rel=1e-6)


def test_blr_recovers_noise_variance():
    # n = 2000, noise variance 0.25: the SD of the residual-variance estimate is about
    # 0.25 * sqrt(2 / 2000) = 0.008; the tolerance 0.04 is five of those.
    X, y, Xt = _linear_data(2000, 5, 0.5, "blr-noise")
    pred = BLR().fit(X, y).predict(Xt)
    assert abs(pred.aleatoric[0] - 0.25) < 0.04
    assert np.all(pred.epistemic < 0.01)  # a 6-parameter posterior on 2000 points is tight


def _matern52(A: np.ndarray, B: np.ndarray, ell: np.ndarray, var: float) -> np.ndarray:
    diff = (A[:, None, :] - B[None, :, :]) / ell
    r = np.sqrt(np.maximum(np.sum(diff**2, axis=-1), 0.0))
    s5r = np.sqrt(5.0) * r
    return var * (1.0 + s5r + 5.0 / 3.0 * r**2) * np.exp(-s5r)


@pytest.fixture(scope="module")
def gp_fit():
    rng = make_rng("tests", "methods", "gp-dense")
    X = rng.uniform(size=(35, 2))
    y = 3.0 + np.sin(4.0 * X[:, 0]) + 0.5 * X[:, 1] + 0.2 * rng.standard_normal(35)
    Xt = rng.uniform(-0.2, 1.2, size=(9, 2))
    return X, y, Xt, GP(max_iter=60).fit(X, y)


def test_gp_matches_dense_numpy(gp_fit):
    X, y, Xt, m = gp_fit
    pred = m.predict(Xt)
    Z, Zt = m._transform(X), m._transform(Xt)
    loc, scale = y.mean(), y.std()
    ys = (y - loc) / scale

    def k(A, B):
        return _matern52(A, B, m.lengthscale_, m.signal_variance_) + m.linear_variance_ * A @ B.T

    K = k(Z, Z) + (m.noise_variance_std_ + m.jitter_) * np.eye(len(Z))
    Ks = k(Zt, Z)
    mean = loc + scale * Ks @ np.linalg.solve(K, ys)
    var = np.diag(k(Zt, Zt)) - np.einsum("ij,ji->i", Ks, np.linalg.solve(K, Ks.T))
    np.testing.assert_allclose(pred.mean, mean, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(pred.epistemic, scale**2 * var, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(pred.aleatoric, m.noise_variance_, rtol=1e-12)
    assert m.noise_variance_ == pytest.approx(scale**2 * m.noise_variance_std_, rel=1e-12)
    # The reported optimum is the dense log marginal likelihood (R&W eq. 2.30).
    _sign, logdet = np.linalg.slogdet(K)
    lml = -0.5 * ys @ np.linalg.solve(K, ys) - 0.5 * logdet - 0.5 * len(ys) * np.log(2 * np.pi)
    assert m.log_marginal_likelihood_ == pytest.approx(lml, rel=1e-8)


def test_gp_hyperparameters_maximise_the_marginal_likelihood(gp_fit):
    X, y, _, m = gp_fit
    # Restarting the optimiser from the optimum must not improve it by more than 1e-6 nats.
    again = GP(
        init_lengthscale=float(np.exp(np.mean(np.log(m.lengthscale_)))),
        init_signal_variance=m.signal_variance_,
        init_linear_variance=m.linear_variance_,
        init_noise_std=float(np.sqrt(m.noise_variance_std_)),
        max_iter=60,
    ).fit(X, y)
    assert again.log_marginal_likelihood_ <= m.log_marginal_likelihood_ + 1e-3
    assert m.n_iter_ >= 1
    # The noise estimate is near the true noise variance 0.04 (n = 35: loose, factor 3).
    assert 0.04 / 3 < m.noise_variance_ < 0.04 * 3


def test_gp_epistemic_grows_away_from_data(gp_fit):
    X, _, _, m = gp_fit
    near = m.predict(X[:5]).epistemic
    far = m.predict(np.full((1, 2), 3.0)).epistemic
    assert np.all(far > 10 * near.max())


def test_gp_gram_is_gpjax_kernel_gram():
    # The objective's matrix-product Gram matrix equals GPJax's Matern52 + Linear ``gram``
    # (a vmap over pairs) at arbitrary hyperparameters, to rounding of the |a|²+|b|²-2ab form.
    import gpjax as gpx
    import jax
    import jax.numpy as jnp

    from udbench.methods.gp import _gram

    rng = make_rng("tests", "methods", "gp-gram")
    A, B = rng.standard_normal((30, 3)), rng.standard_normal((20, 3))
    ell = np.array([0.5, 1.3, 2.0])
    with jax.enable_x64(True):
        kernel = gpx.kernels.Matern52(lengthscale=jnp.asarray(ell), variance=0.8) + (
            gpx.kernels.Linear(variance=0.3)
        )
        ours = np.asarray(_gram(jnp.asarray(A), jnp.asarray(A), ell, 0.8, 0.3))
        theirs = np.asarray(kernel.gram(jnp.asarray(A)).as_matrix())
        cross = np.asarray(_gram(jnp.asarray(A), jnp.asarray(B), ell, 0.8, 0.3))
        theirs_cross = np.asarray(kernel.cross_covariance(jnp.asarray(A), jnp.asarray(B)))
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)
    np.testing.assert_allclose(cross, theirs_cross, rtol=0, atol=1e-12)


def test_gp_objective_gradient_matches_autodiff_through_cholesky():
    # The hand-written gradient ½(K⁻¹ − ααᵀ) (R&W eq. 5.9) equals reverse-mode AD through
    # jnp.linalg.cholesky, and the value equals the dense slogdet form, to 1e-9 relative.
    import jax
    import jax.numpy as jnp
    from jax.scipy.linalg import cho_solve

    from udbench.methods.gp import _compiled, _gram, _unpack

    def plain(theta, Z, y, jitter):
        ell, s_m, s_l, s_n = _unpack(theta)
        K = _gram(Z, Z, ell, s_m, s_l) + (s_n**2 + jitter) * jnp.eye(Z.shape[0])
        L = jnp.linalg.cholesky(K)
        a = cho_solve((L, True), y)
        return 0.5 * y @ a + jnp.sum(jnp.log(jnp.diagonal(L))) + 0.5 * len(y) * jnp.log(2 * jnp.pi)

    rng = make_rng("tests", "methods", "gp-grad")
    Z, y, theta = rng.standard_normal((40, 3)), rng.standard_normal(40), rng.standard_normal(6)
    with jax.enable_x64(True):
        args = (jnp.asarray(theta), jnp.asarray(Z), jnp.asarray(y), jnp.asarray(1e-6))
        v_ref, g_ref = jax.value_and_grad(plain)(*args)
        v, g = _compiled("value_and_grad")(*args)
    assert float(v) == pytest.approx(float(v_ref), rel=1e-12)
    np.testing.assert_allclose(np.asarray(g), np.asarray(g_ref), rtol=1e-9, atol=1e-12)


def test_gp_noise_floor_binds_on_noiseless_data():
    # Noiseless smooth data: type-II ML drives the noise towards 0 (interpolation); the
    # default floor keeps σ_n ≥ 0.01 in standardised units (σ_n² ≥ 1e-4), min_noise_std=0
    # lets it collapse below that.
    rng = make_rng("test", "gp-noise-floor")
    X = rng.uniform(0.0, 1.0, size=(40, 1))
    y = np.sin(6.0 * X[:, 0])
    floored = GP(max_iter=100).fit(X, y)
    free = GP(max_iter=100, min_noise_std=0.0).fit(X, y)
    assert floored.noise_variance_std_ >= 1e-4 * (1 - 1e-9)
    assert free.noise_variance_std_ < 1e-4
    assert floored.log_marginal_likelihood_ <= free.log_marginal_likelihood_ + 1e-6
    pred = floored.predict(X)
    np.testing.assert_allclose(pred.aleatoric, floored.noise_variance_)


def test_gp_fit_survives_nonfinite_trial_steps():
    # On this embedded-data task (quickstart grid) L-BFGS-B with the noise floor took a trial
    # step where the objective was NaN and ended "ABNORMAL"; the fit must backtrack instead,
    # keep the best finite point and reach the same optimum as the other floors.
    from udbench.tasks import TaskSpec, generate_task

    task = generate_task(
        TaskSpec("diabetes", "gp", "homoscedastic", "ood", 0, fidelity="smoke", n_draws=40)
    )
    X, y = np.asarray(task.X_train), np.asarray(task.y_train)
    lmls = [
        GP(max_iter=50, min_noise_std=floor).fit(X, y).log_marginal_likelihood_
        for floor in (0.0, 0.01, 0.03)
    ]
    assert np.all(np.isfinite(lmls))
    assert max(lmls) - min(lmls) < 1.0, lmls
