"""NN-Lap and NN-FSP (last-layer Laplace, paper C.4): closed forms, samples, priors, errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _ml_toy import heteroscedastic, noise_var
from scipy.stats import spearmanr

from udbench._validation import UdbenchError
from udbench.methods.nn import BackboneConfig, TrainConfig, init_members, train_members
from udbench.methods.nn.laplace import add_bias_column, posterior_variance, sample_weights
from udbench.methods.nn_fsp import (
    FSP_JITTER,
    LAPLACE_JITTER,
    NNFSP,
    fsp_loss,
    fsp_prior_term,
    matern52,
)
from udbench.methods.nn_lap import NNLaplace

PARAMS = {**NNLaplace.smoke_params, "n_epochs": 60}  # enough steps to learn the noise
XQ = np.array([[0.05], [0.3], [0.6], [0.95], [1.4]])


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    return heteroscedastic(n=200)


@pytest.fixture(scope="module")
def lap(data) -> NNLaplace:
    return NNLaplace(**PARAMS).fit(*data)


def _dense_eu(method, X_train: np.ndarray, X: np.ndarray, prior: float) -> np.ndarray:
    """φᵀΛ⁻¹φ computed directly: Λ built densely and inverted (no Cholesky)."""
    H, _, v = method._network_outputs((X_train - method.x_loc_) / method.x_scale_)
    Phi = add_bias_column(H)
    lam = Phi.T @ np.diag(1.0 / v) @ Phi + prior * np.eye(Phi.shape[1])
    Hq, _, _ = method._network_outputs((X - method.x_loc_) / method.x_scale_)
    Pq = add_bias_column(Hq)
    return np.einsum("ij,jk,ik->i", Pq, np.linalg.inv(lam), Pq)


def test_closed_form_eu_equals_dense_computation(lap, data) -> None:
    dense = _dense_eu(lap, data[0], XQ, lap.prior_precision)
    got = lap.predict(XQ).epistemic / lap.y_scale_**2
    np.testing.assert_allclose(got, dense, rtol=1e-8)


def test_sampled_weights_agree_with_closed_form_within_3_se(lap, data) -> None:
    """256 sampled last-layer weights (the paper's n_members): sample variance of the member
    means vs φᵀΛ⁻¹φ, within 3 standard errors (SE of a variance: EU·√(2/(M−1)))."""
    samp = NNLaplace(**{**PARAMS, "predictive": "samples", "n_members": 256}).fit(*data)
    closed, mc = lap.predict(XQ), samp.predict(XQ)
    np.testing.assert_array_equal(closed.aleatoric, mc.aleatoric)  # same MAP network
    se = closed.epistemic * np.sqrt(2.0 / 255)
    assert np.all(np.abs(mc.epistemic - closed.epistemic) <= 3 * se), (
        mc.epistemic,
        closed.epistemic,
    )
    np.testing.assert_allclose(mc.mean, closed.mean, atol=4 * np.sqrt(closed.epistemic.max() / 256))
    assert samp.weight_samples_.shape == (256, PARAMS["hidden_dim"] + 1)


def test_sample_weights_have_the_posterior_covariance() -> None:
    rng = np.random.default_rng(0)
    A = rng.normal(size=(4, 4))
    lam = A @ A.T + 4 * np.eye(4)
    w = sample_weights(np.arange(4.0), lam, 200_000, np.random.default_rng(1))
    np.testing.assert_allclose(np.cov(w.T), np.linalg.inv(lam), atol=3e-3)
    np.testing.assert_allclose(w.mean(0), np.arange(4.0), atol=5e-3)
    phi = rng.normal(size=(3, 4))
    np.testing.assert_allclose(
        posterior_variance(phi, lam),
        np.einsum("ij,jk,ik->i", phi, np.linalg.inv(lam), phi),
        rtol=1e-12,
    )


def test_eu_vanishes_as_tau_grows(lap, data) -> None:
    big = NNLaplace(**{**PARAMS, "prior_precision": 1e10}).fit(*data)
    a, b = lap.predict(XQ), big.predict(XQ)
    np.testing.assert_array_equal(a.mean, b.mean)  # τ enters only the Laplace step
    assert np.all(b.epistemic < 1e-6 * a.epistemic.max())
    Hq, _, _ = big._network_outputs((XQ - big.x_loc_) / big.x_scale_)
    phi2 = (add_bias_column(Hq) ** 2).sum(1)  # EU -> φᵀφ/τ (target units: × s_y²)
    np.testing.assert_allclose(b.epistemic, big.y_scale_**2 * phi2 / 1e10, rtol=1e-3)


def test_aleatoric_tracks_noise_and_eu_grows_away(lap) -> None:
    x = np.linspace(0, 1, 101)
    pred = lap.predict(x[:, None])
    assert spearmanr(pred.aleatoric, noise_var(x)).statistic > 0.6
    far = lap.predict(np.array([[-2.0], [3.0]])).epistemic
    assert far.min() > 10 * np.median(pred.epistemic)


def test_sn_variant_bounds_the_backbone(data) -> None:
    from udbench.methods.nn_lap import NNLaplaceSN

    m = NNLaplaceSN(**{**PARAMS, "sn_coeff": 0.8}).fit(*data)
    w = np.asarray(m.params_["blocks"][0]["w1"][0])
    assert np.linalg.svd(w, compute_uv=False)[0] <= 0.8 * 1.01
    assert m.model_config_.spectral_norm


@pytest.mark.parametrize(
    ("param", "value"),
    [("prior_precision", 0.0), ("predictive", "mcmc"), ("n_members", 0)],
)
def test_bad_hyperparameter_names_parameter(param, value, data) -> None:
    with pytest.raises(UdbenchError, match=f"NNLaplace: parameter '{param}' must .*got"):
        NNLaplace(**{param: value}).fit(*data)


# -- NN-FSP ----------------------------------------------------------------------------


def test_matern52_closed_form_and_prior_term_equals_dense_numpy() -> None:
    rng = np.random.default_rng(0)
    C = rng.uniform(-1, 1, size=(30, 2))
    with jax.enable_x64(True):
        K = np.asarray(matern52(jnp.asarray(C), jnp.asarray(C), 0.7, 1.3))
        a, b = np.zeros((1, 2)), np.array([[0.7, 0.0]])  # r = ℓ
        k1 = float(matern52(jnp.asarray(a), jnp.asarray(b), 0.7, 1.3)[0, 0])
        K = K + 1e-6 * np.eye(30)
        f = rng.normal(size=30)
        got = float(fsp_prior_term(jnp.asarray(f), jnp.asarray(K)))
    assert k1 == pytest.approx(1.3 * (1 + np.sqrt(5) + 5 / 3) * np.exp(-np.sqrt(5)), rel=1e-12)
    np.testing.assert_allclose(K, matern52(C, C, 0.7, 1.3, xp=np) + 1e-6 * np.eye(30), rtol=1e-12)
    assert got == pytest.approx(0.5 * f @ np.linalg.inv(K) @ f, rel=1e-8)


def _fsp_state(X: np.ndarray, variance: float, jitter: float, n_ctx=(8, 8)) -> dict:
    one = {
        "pool": X,
        "lo": X.min(0),
        "hi": X.max(0),
        "lengthscale": 1.0,
        "variance": variance,
        "jitter": jitter,
        "inv_n": 1.0 / X.shape[0],
        "ctx_train": np.zeros(n_ctx[0]),
        "ctx_uniform": np.zeros(n_ctx[1]),
    }
    return {k: jnp.asarray(v)[None] for k, v in one.items()}


def test_fsp_with_huge_identity_prior_trains_as_plain_map() -> None:
    """K_CC = 1e12·I: the prior term's gradient is ~1e-12·f, so training equals MAP training;
    a strong prior (variance 1e-4) does change it (so the comparison can fail)."""
    X, y = heteroscedastic(n=48)
    cfg = BackboneConfig(in_dim=1, hidden_dim=8, n_blocks=1)
    tcfg = TrainConfig(n_epochs=5, batch_size=16, lr=1e-2, momentum=0.9, weight_decay=1e-4)
    with jax.enable_x64(True):
        p0 = init_members(jax.random.key(0), cfg, 1, jnp.float64)
        rows, keys = np.arange(48)[None], jax.random.split(jax.random.key(1), 1)
        plain, _, _ = train_members(p0, X, y, rows, keys, cfg, tcfg)
        huge, st, _ = train_members(
            p0, X, y, rows, keys, cfg, tcfg, loss_fn=fsp_loss, state=_fsp_state(X, 0.0, 1e12)
        )
        strong, _, _ = train_members(
            p0, X, y, rows, keys, cfg, tcfg, loss_fn=fsp_loss, state=_fsp_state(X, 1e-4, 1e-8)
        )
    for a, b in zip(jax.tree_util.tree_leaves(plain), jax.tree_util.tree_leaves(huge), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-9)
    assert float(st["jitter"][0]) == 1e12  # the state is carried unchanged
    diff = max(
        float(np.abs(np.asarray(a) - np.asarray(b)).max())
        for a, b in zip(
            jax.tree_util.tree_leaves(plain), jax.tree_util.tree_leaves(strong), strict=True
        )
    )
    assert diff > 1e-3


def test_fsp_laplace_prior_equals_dense_function_space_prior() -> None:
    X, y = heteroscedastic(n=120)
    m = NNFSP(**NNFSP.smoke_params).fit(X, y)
    Xs = (X - m.x_loc_) / m.x_scale_
    H, _, v = m._network_outputs(Xs)
    Phi = add_bias_column(H)
    C = m.context_
    assert C.shape == (NNFSP.smoke_params["n_context"], 1)
    Hc, _, _ = m._network_outputs(C)
    Pc = add_bias_column(Hc)
    K = matern52(C, C, m.prior_lengthscale, m.prior_variance, xp=np)
    K += FSP_JITTER * m.prior_variance * np.eye(len(C))
    expected = Pc.T @ np.linalg.inv(K) @ Pc + Phi.T @ np.diag(1 / v) @ Phi
    expected += LAPLACE_JITTER * np.eye(Phi.shape[1])
    np.testing.assert_allclose(
        m.precision_, expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max()
    )
    pred = m.predict(np.array([[0.5], [3.0]]))
    assert pred.epistemic[1] > 10 * pred.epistemic[0]


def test_fsp_bad_hyperparameters() -> None:
    X, y = heteroscedastic(n=20)
    with pytest.raises(UdbenchError, match=r"NNFSP: parameter 'prior_lengthscale' must .*got -1"):
        NNFSP(prior_lengthscale=-1.0).fit(X, y)
    with pytest.raises(UdbenchError, match=r"NNFSP: parameter 'n_context' must .*got 1"):
        NNFSP(n_context=1).fit(X, y)
