"""The latent-GP classification prior and its ESS reference posterior.

Module under test: udbench.priors.gp_classification.

Every sampler test uses the same tiny problem shape and the same sampler settings, so the
jitted chains are compiled once for the module (the compilation dominates on a loaded
machine). References:

- brute force: self-normalised importance sampling from the joint prior (400 000 prior
  draws, weights = the categorical likelihood of the labels), whose Monte Carlo error is
  far below the sampler's;
- SBC: ranks of f*_k(x) among the latent draws, and of π*_k(x) among the draws of π, over
  replicated tasks (PIT chi-square and 90 % coverage, each at level 1e-3);
- closed forms of the level rule for K = 2 (one-dimensional quadrature).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import expit, softmax

from udbench._validation import UdbenchError
from udbench.priors.gp import GPPrior
from udbench.priors.gp.fit import default_kernel_hyper
from udbench.priors.gp_classification import (
    DIFFICULTIES,
    PRIOR_CLASS,
    GPClassificationPrior,
    class_probabilities,
    draw_labels,
    expected_bayes_error_curve,
    temperature_level,
)

# one sampler layout for every test (one compilation): 4 chains × 500 kept, thin 2
SAMPLER = {"n_chains": 4, "n_warmup": 100, "thin": 2}
D = 2000
N_TRAIN, N_EVAL = 3, 2


def _prior(
    n_classes: int = 3, scale: float = 1.0, reference: str | None = None
) -> GPClassificationPrior:
    gp = GPPrior(default_kernel_hyper("rbf", 1), scale)
    kw = SAMPLER if reference is None else {**SAMPLER, "reference": reference}
    return GPClassificationPrior(gp, n_classes, "smoke", sampler_kwargs=kw)


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    X_train = np.array([[0.1], [0.5], [0.9]])
    X_eval = np.array([[0.3], [1.4]])  # one between training points, one outside
    return X_train, X_eval


def test_prior_class_capabilities() -> None:
    assert PRIOR_CLASS is GPClassificationPrior
    assert PRIOR_CLASS.task_type == "classification"
    assert PRIOR_CLASS.numerics_version == 2
    assert PRIOR_CLASS.rhat_gate is True
    prior = _prior()
    settings = prior.settings
    assert settings["family"] == "gpc" and settings["n_classes"] == 3
    assert settings["sampler"]["n_chains"] == 4 and settings["sampler"]["thin"] == 2
    assert settings["sampler"]["reference"] == "laplace-full"
    with pytest.raises(UdbenchError, match="reference"):
        GPClassificationPrior(prior.gp, 3, "smoke", sampler_kwargs={"reference": "ep"})


def test_sample_is_k_independent_gp_draws() -> None:
    """Draw j, class k is GP draw j·K + k of the call's prior stream: exact bytes."""
    prior = _prior()
    X = np.linspace(0, 1, 7)[:, None]
    f = prior.sample(X, key=3, n_draws=2)
    assert f.shape == (2, 7, 3)
    from udbench.priors.base import call_seed

    ref = prior.gp.sample(X, call_seed("gpc", "prior", 3), 6)
    np.testing.assert_array_equal(f[1, :, 2], ref[5])
    np.testing.assert_array_equal(f, prior.sample(X, key=3, n_draws=2))


def test_class_probabilities_and_labels() -> None:
    f = np.array([[1.0, 0.0, -1.0], [0.0, 0.0, 0.0]])
    tau = np.array([0.5, 2.0])
    p = class_probabilities(f, tau)
    np.testing.assert_allclose(p[0], softmax(f[0] / 0.5), rtol=1e-15)
    np.testing.assert_allclose(p[1], [1 / 3] * 3, rtol=1e-15)
    # label frequencies: 20 000 rows of one probability vector, chi-square at level 1e-3
    probs = np.tile([0.2, 0.5, 0.3], (20_000, 1))
    y = draw_labels(probs, np.random.default_rng(0))
    counts = np.bincount(y, minlength=3)
    assert stats.chisquare(counts, 20_000 * np.array([0.2, 0.5, 0.3])).pvalue > 1e-3
    assert draw_labels(np.array([[0.0, 1.0, 0.0]]), np.random.default_rng(1))[0] == 1


def test_level_curve_k2_matches_quadrature() -> None:
    """K = 2: π₁ = σ((f₁ − f₂)/τ), f₁ − f₂ ~ N(0, 2v): Bayes error E min(σ(u), 1 − σ(u)) with
    u ~ N(0, 2r²), by quadrature; the Monte Carlo table agrees within 0.004 (its SD ≈ 0.002)."""
    for r in (0.1, 0.7, 2.0, 8.0):
        s = np.sqrt(2.0) * r

        def integrand(u: float, s: float = s) -> float:
            return min(expit(u), 1 - expit(u)) * stats.norm.pdf(u, scale=s)

        exact = integrate.quad(integrand, -12 * s, 12 * s, points=[0.0])[0] / 0.5
        got = float(expected_bayes_error_curve(np.array([r]), 2)[0])
        assert abs(got - exact) < 0.004, (r, got, exact)
    r = np.geomspace(1e-2, 1e2, 30)
    assert np.all(np.diff(expected_bayes_error_curve(r, 3)) < 0)  # decreasing in r
    assert np.all(np.diff(expected_bayes_error_curve(r, 3, "entropy")) < 0)


def test_temperature_level_hits_target() -> None:
    rng = np.random.default_rng(0)
    sd = 1.0 + 0.2 * rng.random(500)
    h = rng.standard_normal(500)
    h = (h - h.mean()) / h.std()
    for target in DIFFICULTIES.values():
        c = temperature_level(sd, h, 1.0, 3, target)
        r = sd / np.exp(c + 0.5 * h)
        assert abs(expected_bayes_error_curve(r, 3).mean() - target) < 1e-8
    # harder target -> higher temperature
    levels = [temperature_level(sd, h, 1.0, 3, t) for t in (0.1, 0.3, 0.6)]
    assert levels[0] < levels[1] < levels[2]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: _prior(n_classes=1), "n_classes"),
        (lambda: temperature_level(np.ones(3), np.zeros(3), 1.0, 3, 1.2), "target"),
        (lambda: class_probabilities(np.zeros((2, 3)), np.array([1.0, 0.0])), "tau"),
        (lambda: draw_labels(np.array([[0.5, 0.6]]), np.random.default_rng(0)), "probs"),
    ],
)
def test_bad_input_one_line_errors(call, match: str) -> None:
    with pytest.raises(UdbenchError, match=match) as info:
        call()
    assert "\n" not in str(info.value)


def test_condition_bad_input() -> None:
    prior = _prior()
    Xt, Xe = _inputs()
    ok = {"tau_eval": np.ones(N_EVAL)}
    y = np.array([0, 1, 2])
    cases = [
        ((Xt, np.array([0, 1, 3]), np.ones(3), Xe, 0, D), ok, "labels"),
        ((Xt, np.array([0, -1, 2]), np.ones(3), Xe, 0, D), ok, "labels"),
        ((Xt, y, np.array([1.0, 0.0, 1.0]), Xe, 0, D), ok, "tau_train"),
        ((Xt, y, np.ones(3), Xe, 0, D), {"tau_eval": -np.ones(N_EVAL)}, "tau_eval"),
        ((Xt, y, np.ones(3), Xe, 0, 2001), ok, "n_draws"),
    ]
    for args, kw, match in cases:
        with pytest.raises(UdbenchError, match=match) as info:
            prior.condition(*args, **kw)
        assert "\n" not in str(info.value)


def _importance_reference(
    prior: GPClassificationPrior,
    X_train: np.ndarray,
    y: np.ndarray,
    tau: float,
    X_eval: np.ndarray,
    n: int = 400_000,
) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and variance of π at X_eval by self-normalised importance sampling."""
    XJ = np.vstack([X_eval, X_train])
    cov = prior.gp.covariance(XJ) + prior.gp.nugget(X_eval, X_train) * np.eye(len(XJ))
    L = np.linalg.cholesky(cov)
    rng = np.random.default_rng(123)
    K = prior.n_classes
    f = np.einsum("ij,sjk->sik", L, rng.standard_normal((n, len(XJ), K)))
    m = len(X_eval)
    logp = f[:, m:, :] / tau
    logp = logp - np.logaddexp.reduce(logp, axis=2, keepdims=True)
    logw = logp[:, np.arange(len(y)), y].sum(axis=1)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    pi = softmax(f[:, :m, :] / tau, axis=2)
    mean = np.einsum("s,sik->ik", w, pi)
    var = np.einsum("s,sik->ik", w, (pi - mean) ** 2)
    return mean, var


@pytest.mark.parametrize("reference", ["laplace", "laplace-full"])
def test_sampler_matches_importance_sampling(reference: str) -> None:
    """Posterior mean and variance of π at 2 evaluation points, 3 classes, within MC error.

    Mean: |ESS mean − reference| < 4·SD/√ESS per (point, class) (bulk ESS of the draws).
    Variance: < 4·√((μ₄ − σ⁴)/ESS) (the large-sample SE of a variance estimate).
    """
    prior = _prior(reference=reference)
    Xt, Xe = _inputs()
    y = np.array([0, 0, 2])
    tau = 0.5
    post = prior.condition(
        Xt, y, np.full(3, tau), Xe, key=11, n_draws=D, tau_eval=np.full(N_EVAL, tau)
    )
    ref_mean, ref_var = _importance_reference(prior, Xt, y, tau, Xe)
    p = post.prob_draws
    assert p.shape == (D, N_EVAL, 3)
    from udbench.priors.gp_classification import _ess_bulk

    ess = _ess_bulk(post.chains().reshape(4, -1, N_EVAL * 3)).reshape(N_EVAL, 3)
    mean, var = p.mean(axis=0), p.var(axis=0)
    mu4 = ((p - mean) ** 4).mean(axis=0)
    assert np.all(np.abs(mean - ref_mean) < 4 * np.sqrt(var / ess)), (mean, ref_mean, ess)
    assert np.all(np.abs(var - ref_var) < 4 * np.sqrt((mu4 - var**2) / ess)), (var, ref_var)
    # the data moved the posterior: at x = 0.3 class 0 is favoured over the prior's 1/3
    assert ref_mean[0, 0] > 0.45 and mean[0, 0] > 0.45
    d = post.diagnostics
    assert d["rhat_max"] < 1.05 and d["n_draws"] == D and d["n_classes"] == 3
    assert d["subiter_mean_kept"] >= 1.0 and 0 < d["theta_abs_mean"] < np.pi
    assert len(d["rhat"]) == N_EVAL * 3 and len(d["rhat_max_per_class"]) == 3
    assert d["reference"] == reference and d["mode_iterations"] >= 1
    if reference == "laplace-full":
        assert d["mode_converged"] and d["mode_grad_max"] < 1e-8 and d["reference_jitter"] == 0
    # the shift Σ_k f_k/√K carries no information: its posterior is its prior N(0, Σ)
    shift = post.latent_eval.sum(axis=2) / np.sqrt(3)
    prior_var = np.diag(prior.gp.covariance(Xe))
    np.testing.assert_allclose(shift.var(axis=0), prior_var, rtol=0.15)


def test_plain_ess_matches_importance_sampling() -> None:
    """``reference="prior"`` (plain ESS) targets the same posterior (looser: it mixes slower)."""
    gp = GPPrior(default_kernel_hyper("rbf", 1), 1.0)
    prior = GPClassificationPrior(gp, 3, "smoke", sampler_kwargs={**SAMPLER, "reference": "prior"})
    Xt, Xe = _inputs()
    y = np.array([0, 0, 2])
    post = prior.condition(Xt, y, np.full(3, 0.5), Xe, 11, D, tau_eval=np.full(N_EVAL, 0.5))
    ref_mean, _ = _importance_reference(prior, Xt, y, 0.5, Xe)
    np.testing.assert_allclose(post.mean_probs, ref_mean, atol=0.04)
    assert post.diagnostics["reference"] == "prior" and post.diagnostics["mode_iterations"] == 0


def test_condition_is_deterministic_in_key() -> None:
    prior = _prior()
    Xt, Xe = _inputs()
    y = np.array([1, 0, 2])
    kw = {"tau_eval": np.ones(N_EVAL)}
    a = prior.condition(Xt, y, np.ones(3), Xe, 5, D, **kw)
    b = prior.condition(Xt, y, np.ones(3), Xe, 5, D, **kw)
    c = prior.condition(Xt, y, np.ones(3), Xe, 6, D, **kw)
    assert a.prob_draws.tobytes() == b.prob_draws.tobytes()
    assert a.latent_train.tobytes() == b.latent_train.tobytes()
    assert a.prob_draws.tobytes() != c.prob_draws.tobytes()


@pytest.mark.parametrize("reference", ["laplace", "laplace-full"])
def test_two_classes_agree_with_binary_sampler_reference(reference: str) -> None:
    """K = 2 runs, and its π₁ agrees with the importance-sampling reference."""
    prior = _prior(n_classes=2, reference=reference)
    Xt, Xe = _inputs()
    y = np.array([1, 1, 0])
    post = prior.condition(Xt, y, np.ones(3), Xe, 2, D, tau_eval=np.ones(N_EVAL))
    assert post.prob_draws.shape == (D, N_EVAL, 2)
    ref_mean, _ = _importance_reference(prior, Xt, y, 1.0, Xe)
    np.testing.assert_allclose(post.mean_probs, ref_mean, atol=0.03)


@pytest.mark.parametrize(
    "reference", [pytest.param("laplace", marks=pytest.mark.slow), "laplace-full"]
)
def test_sbc_latents_smoke(reference: str) -> None:
    """SBC of f* and of π*: 40 replicated tasks at 3 training and 2 evaluation inputs, K = 3.

    The PIT of f*_k(x) among the latent draws (thinned to 100 per replicate, so the ranks are
    close to independent) is uniform (10-bin chi-square) and the central 90 % interval covers
    f* at the nominal rate (binomial test), each at level 1e-3; the same for π*_k(x) =
    softmax(f*/τ) among the draws of π (what a task's stored checks rank,
    docs/classification.md). (``laplace``, ~30 s on a loaded machine, is marked slow.)
    """
    prior = _prior(reference=reference)
    Xt, Xe = _inputs()
    rng = np.random.default_rng(2024)
    tau = np.full(5, 0.7)
    pits, covered, pits_pi, covered_pi = [], [], [], []
    for rep in range(40):
        f_star = prior.sample(np.vstack([Xe, Xt]), key=1000 + rep)[0]
        y = draw_labels(class_probabilities(f_star[N_EVAL:], tau[N_EVAL:]), rng)
        post = prior.condition(Xt, y, tau[N_EVAL:], Xe, 2000 + rep, D, tau_eval=tau[:N_EVAL])
        draws = post.latent_eval[::20]  # (100, m, K)
        truth = f_star[:N_EVAL]
        ranks = (draws < truth[None]).sum(axis=0)
        pits.append((ranks + rng.uniform(size=ranks.shape)) / (draws.shape[0] + 1))
        lo, hi = np.quantile(post.latent_eval, [0.05, 0.95], axis=0)
        covered.append((lo <= truth) & (truth <= hi))
        pi_star = class_probabilities(truth, tau[:N_EVAL])
        probs = post.prob_draws[::20]
        ranks = (probs < pi_star[None]).sum(axis=0)
        pits_pi.append((ranks + rng.uniform(size=ranks.shape)) / (probs.shape[0] + 1))
        lo, hi = np.quantile(post.prob_draws, [0.05, 0.95], axis=0)
        covered_pi.append((lo <= pi_star) & (pi_star <= hi))
    for what, p_list, c_list in (("f*", pits, covered), ("π*", pits_pi, covered_pi)):
        pit = np.concatenate([p.ravel() for p in p_list])
        counts = np.bincount(np.minimum((pit * 10).astype(int), 9), minlength=10)
        assert stats.chisquare(counts).pvalue > 1e-3, (what, counts)
        cov = np.concatenate([c.ravel() for c in c_list])
        assert stats.binomtest(int(cov.sum()), cov.size, 0.9).pvalue > 1e-3, (what, cov.mean())


def _tiny_problem(K: int = 4, n: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(Σ, chol Σ, labels, 1/τ) of a tiny problem with unequal temperatures."""
    rng = np.random.default_rng(0)
    X = rng.random((n, 1))
    gp = GPPrior(default_kernel_hyper("rbf", 1), 1.3)
    Sigma = gp.covariance(X) + 1e-6 * np.eye(n)
    return Sigma, np.linalg.cholesky(Sigma), rng.integers(0, K, n), 1.0 / (0.3 + rng.random(n))


def _full_reference(K: int = 4, n: int = 7):  # type: ignore[no-untyped-def]
    import jax

    from udbench.priors._gpc_sampler import _reference_full
    from udbench.priors.gp_classification import contrast_basis

    Sigma, L, y, inv_tau = _tiny_problem(K, n)
    Q2 = contrast_basis(K)[1:]
    with jax.enable_x64(True):
        out = _reference_full(L, Sigma, y, inv_tau, Q2, 100)
    return (Sigma, y, inv_tau, Q2, *(np.asarray(x) for x in out[:4]), out[4])


def test_newton_mode_is_stationary() -> None:
    """The Newton mode of ``laplace-full`` zeroes the gradient of the log posterior of the
    contrasts, g(m) − Σ⁻¹m with g_i = Q₂(e_y − π_i)/τ_i (finite differences of the
    log-likelihood, Σ⁻¹m by a dense solve): max |∂Ψ/∂v| < 1e-7 (|m| is O(1); Σ has a
    1e-6 nugget, so the solve alone loses ~1e-10)."""
    Sigma, y, inv_tau, Q2, m, alpha, _, _, rec = _full_reference()
    assert rec["mode_converged"] and 1 <= rec["mode_iterations"] < 50

    def loglik(v: np.ndarray) -> float:
        logp = (v @ Q2) * inv_tau[:, None]
        logp = logp - np.logaddexp.reduce(logp, axis=1, keepdims=True)
        return float(logp[np.arange(y.size), y].sum())

    h = 1e-6
    g = np.zeros_like(m)
    for idx in np.ndindex(*m.shape):
        e = np.zeros_like(m)
        e[idx] = h
        g[idx] = (loglik(m + e) - loglik(m - e)) / (2 * h)
    grad = g - np.linalg.solve(Sigma, m)
    assert np.max(np.abs(grad)) < 1e-7, np.max(np.abs(grad))
    assert np.max(np.abs(m)) > 0.1  # the labels moved the mode off 0
    np.testing.assert_allclose(alpha, np.linalg.solve(Sigma, m), atol=1e-7)


def test_full_reference_covariance_is_inverse_precision() -> None:
    """A Aᵀ = (Σ⁻¹ ⊗ I + diag(H_i))⁻¹, the precision built by hand in point-major order
    (index i·(K − 1) + c) with H_i = Q₂(diag π_i − π_iπ_iᵀ)Q₂ᵀ/τ_i² at the mode."""
    Sigma, _, inv_tau, Q2, m, _, A, H, _ = _full_reference()
    n, C = m.shape
    logits = (m @ Q2) * inv_tau[:, None]
    p = softmax(logits, axis=1)
    P = np.kron(np.linalg.inv(Sigma), np.eye(C))
    for i in range(n):
        Hi = Q2 @ (np.diag(p[i]) - np.outer(p[i], p[i])) @ Q2.T * inv_tau[i] ** 2
        np.testing.assert_allclose(H[i], Hi, atol=1e-13)
        P[i * C : (i + 1) * C, i * C : (i + 1) * C] += Hi
    S = np.linalg.inv(P)
    np.testing.assert_allclose(A @ A.T, S, atol=1e-9 * np.abs(S).max())
