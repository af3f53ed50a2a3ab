"""NGBoost-NIG: the NIG log score is the Student-t marginal, its gradient and Fisher information
are exact, the outputs follow the paper's formulas, bad hyperparameters are rejected."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import t as student_t

from udbench._validation import UdbenchError
from udbench.methods import make_method
from udbench.methods.ngboost_nig import (
    FISHER_DAMPING,
    NIG,
    NGBoostNIG,
    NIGLogScore,
    nig_uncertainties,
)
from udbench.methods.registry import REGISTRY

# θ = (μ, ln λ, ln(α − 1), ln β) per point: heavy tails (α near 1), moderate, near-Normal
THETA = np.array(
    [
        [0.3, -1.2, -2.0, -0.7],
        [-1.5, 0.4, 0.5, 0.2],
        [2.0, 2.5, 3.0, -2.5],
        [0.0, 0.0, 0.0, np.log(0.5)],
    ]
)
Y = np.array([1.7, -1.9, 2.05, -0.4])


class _Dist(NIGLogScore, NIG):
    """The distribution with its log score mixed in (as ngboost's manifold does)."""


def _nig(theta: np.ndarray) -> _Dist:
    return _Dist(np.asarray(theta, dtype=np.float64).T)


def _student_t_args(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """df = 2α, loc = μ, scale = sqrt(β(1 + λ)/(λα)) straight from the paper's definitions."""
    mu, lam, alpha, beta = (
        theta[:, 0],
        np.exp(theta[:, 1]),
        np.exp(theta[:, 2]) + 1,
        np.exp(theta[:, 3]),
    )
    return 2 * alpha, mu, np.sqrt(beta * (1 + lam) / (lam * alpha))


def _jax_neg_logpdf(theta: jnp.ndarray, y: jnp.ndarray) -> jnp.ndarray:
    lam, alpha, beta = jnp.exp(theta[1]), jnp.exp(theta[2]) + 1, jnp.exp(theta[3])
    scale = jnp.sqrt(beta * (1 + lam) / (lam * alpha))
    return -jax.scipy.stats.t.logpdf(y, 2 * alpha, loc=theta[0], scale=scale)


def test_score_is_student_t_negative_log_density():
    df, loc, scale = _student_t_args(THETA)
    expected = -student_t.logpdf(Y, df, loc=loc, scale=scale)
    np.testing.assert_allclose(_nig(THETA).score(Y), expected, rtol=1e-10, atol=1e-12)


def test_gradient_equals_autodiff_and_finite_differences():
    with jax.enable_x64(True):
        grad_fn = jax.vmap(jax.grad(_jax_neg_logpdf))
        auto = np.asarray(grad_fn(jnp.asarray(THETA), jnp.asarray(Y)))
    ours = _nig(THETA).d_score(Y)
    np.testing.assert_allclose(ours, auto, rtol=1e-8, atol=1e-10)
    # central differences of the score itself (independent of JAX), step 1e-5: error ~1e-10
    h, fd = 1e-5, np.zeros_like(THETA)
    for k in range(4):
        e = np.zeros(4)
        e[k] = h
        fd[:, k] = (_nig(THETA + e).score(Y) - _nig(THETA - e).score(Y)) / (2 * h)
    np.testing.assert_allclose(ours, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("row", range(len(THETA)))
def test_fisher_information_matches_monte_carlo(row):
    theta = THETA[row : row + 1]
    df, loc, scale = _student_t_args(theta)
    n = 200_000
    rng = np.random.default_rng(1234 + row)
    y = student_t.rvs(df[0], loc=loc[0], scale=scale[0], size=n, random_state=rng)
    g = _nig(np.repeat(theta, n, axis=0)).d_score(y)  # (n, 4)
    outer = g[:, :, None] * g[:, None, :]
    mc, se = outer.mean(axis=0), outer.std(axis=0, ddof=1) / np.sqrt(n)
    exact = _nig(theta).metric()[0]
    assert np.all(np.abs(exact - mc) <= 3 * se + 1e-12), (exact, mc, se)
    # the score has mean zero under the model (a consistency check of the gradient)
    assert np.all(np.abs(g.mean(axis=0)) <= 4 * g.std(axis=0) / np.sqrt(n))


def test_natural_gradient_solves_damped_fisher_system_off_the_null_direction():
    d = _nig(THETA)
    grad, nat, F = d.d_score(Y), d.grad(Y, natural=True), d.metric()
    damped = F + FISHER_DAMPING * np.eye(4)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", damped, nat), grad, rtol=1e-8, atol=1e-10)
    # the Fisher is singular along (0, 1, 0, 1/(1+λ)) (λ, β enter only through Ω) and the
    # natural gradient has no component there (Moore–Penrose solution)
    lam = np.exp(THETA[:, 1])
    null = np.stack([0 * lam, np.ones_like(lam), 0 * lam, 1 / (1 + lam)], axis=1)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", F, null), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.sum(nat * null, axis=1), 0.0, atol=1e-10)
    np.testing.assert_array_equal(d.grad(Y, natural=False), grad)


def test_natural_gradient_finite_where_alpha_information_vanishes():
    # α − 1 = e^-40 and e^+12 (β = α/2, so the Student-t scale is ~1 and y is 2-3 SD out):
    # the Fisher information of ln(α − 1) is ~0 at both ends; the undamped natural step
    # diverged there during boosting (θ₃ reached −2e7, the next gradient was inf)
    theta = np.array([[0.0, 0.0, -40.0, 0.0], [0.0, 0.0, 12.0, 12.0 - np.log(2.0)]])
    nat = _nig(theta).grad(np.array([3.0, -2.0]), natural=True)
    assert np.all(np.isfinite(nat))
    assert np.all(np.abs(nat) < 1e4), nat


def test_au_eu_formulas_hand_computed():
    # μ = 0.5, λ = 2, α = 3, β = 4: AU = β/(α−1) = 2, EU = β/(λ(α−1)) = 1
    theta = np.array([[0.5, np.log(2.0), np.log(2.0), np.log(4.0)]])
    mean, au, eu = nig_uncertainties(theta)
    np.testing.assert_allclose([mean[0], au[0], eu[0]], [0.5, 2.0, 1.0], rtol=1e-14)
    # AU + EU is the variance of the Student-t marginal: scale²·ν/(ν − 2)
    df, _, scale = _student_t_args(theta)
    np.testing.assert_allclose(au + eu, scale**2 * df / (df - 2), rtol=1e-14)


def test_initial_parameters_match_target_mean_and_variance():
    y = np.array([1.0, 2.0, 4.0, 7.0])
    theta = NIG.fit(y)[None, :]
    mean, au, eu = nig_uncertainties(theta)
    np.testing.assert_allclose([mean[0], au[0] + eu[0], au[0] / eu[0]], [3.5, np.var(y), 1.0])


def test_fit_predict_in_target_units():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(120, 2))
    f = np.sin(4 * X[:, 0])
    y = 10.0 * (f + 0.3 * rng.standard_normal(120)) + 5.0
    for natural in (False, True):
        pred = NGBoostNIG(**NGBoostNIG.smoke_params, natural_gradient=natural).fit(X, y).predict(X)
        assert np.corrcoef(pred.mean, f)[0, 1] > 0.8
        # total variance of order the true noise variance (9) in target units, not standardised
        assert 1.0 < np.median(pred.total) < 100.0
        assert np.all(pred.epistemic > 0) and np.all(pred.aleatoric > 0)


def test_validation_split_chooses_the_iterations_by_the_log_score():
    # A first fit on 80 % of the rows records the validation log score after every iteration
    # (NGBoost's own monitor); the final fit on all rows keeps the iterations up to its first
    # minimum, and equals a plain fit with that many iterations bit for bit.
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(80, 2))
    y = np.sin(4 * X[:, 0]) + 0.3 * rng.standard_normal(80)
    smoke = dict(NGBoostNIG.smoke_params, n_estimators=60)
    m = NGBoostNIG(**smoke, random_state=3).fit(X, y)
    scores = m.validation_scores_
    assert scores.shape == (60,) and np.isfinite(scores).all()
    assert m.n_estimators_ == int(np.argmin(scores)) + 1
    assert len(m.model_.base_models) == m.n_estimators_
    plain = NGBoostNIG(**dict(smoke, n_estimators=m.n_estimators_), validation_fraction=0.0)
    plain.set_params(random_state=3)
    a, b = m.predict(X), plain.fit(X, y).predict(X)
    for field in ("mean", "aleatoric", "epistemic"):
        assert getattr(a, field).tobytes() == getattr(b, field).tobytes()
    # off: all iterations, no validation fit
    off = NGBoostNIG(**smoke, validation_fraction=0.0).fit(X, y)
    assert off.n_estimators_ == 60 and off.validation_scores_.shape == (0,)
    # too few rows to hold any out with 2 left: all iterations
    two = NGBoostNIG(**smoke).fit(X[:2], y[:2])
    assert two.n_estimators_ == 60


def test_registered_under_paper_name():
    assert REGISTRY["ngboost-nig"] == "udbench.methods.ngboost_nig:NGBoostNIG"
    assert make_method("ngboost-nig:n_estimators=5").n_estimators == 5


@pytest.mark.parametrize(
    ("spec", "pattern"),
    [
        ("ngboost-nig:learning_rate=0", r"parameter 'learning_rate' must be .*> 0.*; got 0"),
        ("ngboost-nig:n_estimators=0", r"parameter 'n_estimators' must be .*>= 1; got 0"),
        ("ngboost-nig:minibatch_frac=1.5", r"parameter 'minibatch_frac' must .*; got 1.5"),
        ("ngboost-nig:max_depth=2.5", r"parameter 'max_depth' must be an integer"),
        ("ngboost-nig:natural_gradient=maybe", r"parameter 'natural_gradient' .*maybe"),
        ("ngboost-nig:validation_fraction=0.5", r"parameter 'validation_fraction' .*< 0.5"),
    ],
)
def test_bad_hyperparameters_one_line_error(spec, pattern):
    with pytest.raises(UdbenchError, match=pattern) as err:
        make_method(spec)
    assert "\n" not in str(err.value)


def test_bad_hyperparameter_at_fit():
    with pytest.raises(UdbenchError, match=r"NGBoostNIG: parameter 'col_sample' .*; got -0.1"):
        NGBoostNIG(col_sample=-0.1).fit(np.zeros((5, 1)), np.arange(5.0))
