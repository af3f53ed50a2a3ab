"""GP reference prior: kernels, exact conditioning, draws, scale constant, kernel fit."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.linalg
import scipy.stats

from udbench._validation import UdbenchError
from udbench.priors import make_prior, scale_from_unit_draws
from udbench.priors.gp import (
    KERNEL_PARTS,
    GPPrior,
    build_prior,
    fit_kernel,
    kernel_matrix,
    parse_kernel_family,
)

RNG = np.random.default_rng(20261129)


def _hyper(family: str, d: int) -> dict:
    """Hand-set unit-kernel hyperparameters for every part of ``family``."""
    parts = parse_kernel_family(family)
    out = []
    for p in parts:
        e: dict = {"kernel": p, "weight": 1.0 / len(parts)}
        if "lengthscale" in KERNEL_PARTS[p]:
            e["lengthscale"] = list(np.linspace(0.3, 0.8, d))
        if p == "rq":
            e["alpha"] = 1.5
        if p == "powexp":
            e["power"] = 1.3
        if p == "periodic":
            e["period"] = [0.7] * d
        if p == "arccosine":
            e.update(order=1, weight_variance=[1.0] * d, bias_variance=0.5)
        out.append(e)
    return {"kernel_family": family, "parts": out}


@pytest.mark.parametrize("part", sorted(KERNEL_PARTS))
def test_every_kernel_part_is_symmetric_psd(part: str) -> None:
    X = RNG.random((40, 3))
    K = np.asarray(kernel_matrix(_hyper(part, 3), X))
    assert K.dtype == np.float64
    np.testing.assert_allclose(K, K.T, atol=1e-12)
    assert np.linalg.eigvalsh(K).min() > -1e-9 * np.trace(K)


def test_matern32_and_sum_match_hand_formula() -> None:
    X = RNG.random((6, 2))
    ls = np.array([0.3, 0.8])
    r = np.sqrt((((X[:, None, :] - X[None, :, :]) / ls) ** 2).sum(-1))
    m32 = (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)
    hyper = {
        "kernel_family": "matern32+linear",
        "parts": [
            {"kernel": "matern32", "weight": 0.7, "lengthscale": ls.tolist()},
            {"kernel": "linear", "weight": 0.3},
        ],
    }
    np.testing.assert_allclose(kernel_matrix(hyper, X), 0.7 * m32 + 0.3 * X @ X.T, rtol=1e-12)


def test_unknown_kernel_part_is_a_clear_error() -> None:
    with pytest.raises(UdbenchError, match="kernel_family part"):
        parse_kernel_family("rbf+spline")


def _dense_posterior(K, s2, y, ne):
    """Independent reference: SciPy dense solve of the GP posterior (R&W 2006 eq. 2.24)."""
    Kee, Ket, Ktt = K[:ne, :ne], K[:ne, ne:], K[ne:, ne:]
    B = Ktt + np.diag(s2)
    mean = Ket @ scipy.linalg.solve(B, y, assume_a="pos")
    cov = Kee - Ket @ scipy.linalg.solve(B, Ket.T, assume_a="pos")
    mean_t = Ktt @ scipy.linalg.solve(B, y, assume_a="pos")
    cov_t = Ktt - Ktt @ scipy.linalg.solve(B, Ktt, assume_a="pos")
    return mean, cov, mean_t, cov_t


def test_conditioning_matches_dense_scipy_to_1e8() -> None:
    prior = GPPrior(_hyper("rq+linear", 3), scale=1.7)
    Xt, Xe = RNG.random((25, 3)), RNG.random((15, 3))
    s2 = 0.05 + 0.3 * RNG.random(25)
    y = RNG.standard_normal(25)
    post = prior.condition(Xt, y, s2, Xe, key=1, n_draws=50)
    K = prior.covariance(np.vstack([Xe, Xt]))
    mean, cov, _, _ = _dense_posterior(K, s2, y, 15)
    np.testing.assert_allclose(post.mean, mean, atol=1e-8, rtol=0)
    np.testing.assert_allclose(post.var, np.diag(cov), atol=1e-8, rtol=0)
    assert post.draws_eval.shape == (50, 15) and post.draws_train.shape == (50, 25)


@pytest.mark.parametrize("draws_at_train", [True, False])
def test_posterior_draws_match_exact_moments_mc(draws_at_train: bool) -> None:
    """20 000 draws (Matheron joint draws, or eval-only posterior Cholesky): mean within
    4.5 MC SE; variance and train moments likewise."""
    D = 20_000
    prior = GPPrior(_hyper("matern52", 2), scale=1.0, draws_at_train=draws_at_train)
    Xt, Xe = RNG.random((20, 2)), RNG.random((10, 2))
    s2 = 0.1 + 0.2 * RNG.random(20)
    y = RNG.standard_normal(20)
    post = prior.condition(Xt, y, s2, Xe, key=7, n_draws=D)
    K = prior.covariance(np.vstack([Xe, Xt]))
    mean, cov, mean_t, cov_t = _dense_posterior(K, s2, y, 10)
    # mean: SE = sqrt(var / D); variance: SE ≈ var·sqrt(2 / (D-1)); 4.5 SE over 60 checks.
    checks = [(post.draws_eval, mean, cov)]
    if draws_at_train:
        checks.append((post.draws_train, mean_t, cov_t))
    else:
        assert post.draws_train is None
    for draws, m, c in checks:
        v = np.diag(c)
        assert np.all(np.abs(draws.mean(0) - m) < 4.5 * np.sqrt(v / D))
        assert np.all(np.abs(draws.var(0, ddof=1) / v - 1) < 4.5 * np.sqrt(2 / (D - 1)))
    # the joint covariance across eval points is right too (entries within 4.5 SE)
    emp = np.cov(post.draws_eval.T)
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / D)
    assert np.all(np.abs(emp - cov) < 4.5 * se)


def test_prior_draws_have_kernel_covariance_mc() -> None:
    D = 20_000
    prior = GPPrior(_hyper("periodic+linear", 2), scale=0.8)
    X = RNG.random((6, 2))
    draws = prior.sample(X, key=3, n_draws=D)
    K = prior.covariance(X)
    emp = draws.T @ draws / D  # zero-mean prior
    se = np.sqrt((np.outer(np.diag(K), np.diag(K)) + K**2) / D)
    assert np.all(np.abs(emp - K) < 4.5 * se)
    assert np.all(np.abs(draws.mean(0)) < 4.5 * np.sqrt(np.diag(K) / D))


def test_same_key_same_bytes_new_key_new_draws() -> None:
    prior = GPPrior(_hyper("rbf", 2), scale=1.0)
    X = RNG.random((8, 2))
    a, b, c = (prior.sample(X, key=k, n_draws=3) for k in (5, 5, 6))
    assert a.tobytes() == b.tobytes()
    assert not np.allclose(a, c)


def test_condition_rejects_bad_noise() -> None:
    prior = GPPrior(_hyper("rbf", 2), scale=1.0)
    with pytest.raises(UdbenchError, match="noise_var_train"):
        prior.condition(np.zeros((3, 2)), np.zeros(3), [0.1, 0.0, 0.1], np.zeros((2, 2)), 0, 5)
    with pytest.raises(UdbenchError, match="X_eval"):
        prior.condition(np.zeros((3, 2)), np.zeros(3), [0.1] * 3, np.zeros((2, 3)), 0, 5)


def test_scale_from_unit_draws() -> None:
    draws = np.array([[0.0, 2.0], [0.0, 4.0], [0.0, 6.0]])  # SDs 1, 2, 3 -> median 2
    assert scale_from_unit_draws(draws) == pytest.approx(0.5)
    with pytest.raises(UdbenchError):
        scale_from_unit_draws(np.zeros((3, 4)))


def _synthetic_cov(n: int = 160, d: int = 2, family: str = "matern32"):
    rng = np.random.default_rng(11)
    X = rng.random((n, d))
    y = np.sin(5 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    idx = rng.permutation(n)
    return SimpleNamespace(
        key="synthetic",
        spec=SimpleNamespace(kernel_family=family),
        X=X,
        y_real=y,
        eval_idx=np.sort(idx[: n // 2]),
        cand_idx=np.sort(idx[n // 2 :]),
    )


def test_build_prior_scale_gives_median_sd_one_and_is_cached(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path))
    cov = _synthetic_cov()
    prior = make_prior("gp", cov, "smoke")
    files = list((tmp_path / "priors" / "gp").glob("*.json"))
    assert len(files) == 1
    record = json.loads(files[0].read_text())
    assert record["udbench_version"] and record["scale"] == prior.scale
    assert record["lml_final"] > record["lml_initial"]
    # fresh draws (new key): median SD over the pool is 1 within MC error. Per-draw SDs have
    # spread s; SE(median) ≈ 1.2533·s/√N for both the 100-draw estimate of a and this check.
    N = 1000
    sds = prior.sample(cov.X[cov.eval_idx], key=99, n_draws=N).std(axis=1)
    se = 1.2533 * sds.std() * np.sqrt(1 / 100 + 1 / N)
    assert abs(np.median(sds) - 1.0) < 4 * se
    # second build reads the cache (same hyperparameters, no refit)
    again = build_prior(cov, "smoke")
    assert again.scale == prior.scale and again.hyper == prior.hyper


def test_an_edited_gp_fit_cache_is_refitted_not_used(tmp_path, monkeypatch) -> None:
    """Issue 68: a cache whose lengthscales were set to 0.05 was used by ``generate``."""
    from udbench._validation import UdbenchWarning

    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path))
    cov = _synthetic_cov()
    prior = build_prior(cov, "smoke")
    (path,) = (tmp_path / "priors" / "gp").glob("*.json")
    written = path.read_text()
    record = json.loads(written)
    assert len(record["cache_sha256"]) == 64
    lengthscales = [p for p in record["hyperparameters"]["parts"] if "lengthscale" in p]
    assert lengthscales and all(np.min(p["lengthscale"]) > 0.05 for p in lengthscales)
    for part in lengthscales:
        part["lengthscale"] = [0.05] * len(part["lengthscale"])
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")  # still valid JSON
    with pytest.warns(UdbenchWarning, match="does not match its checksum .*refitting"):
        again = build_prior(cov, "smoke")
    assert again.hyper == prior.hyper and again.scale == prior.scale
    assert path.read_text() == written  # refitted and overwritten with the true fit

    # a cache written before checksums were kept: refitted (no warning), then sealed
    del record["cache_sha256"]
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    assert build_prior(cov, "smoke").hyper == prior.hyper
    assert path.read_text() == written


def test_make_prior_unknown_family_or_fidelity() -> None:
    with pytest.raises(UdbenchError, match="family"):
        make_prior("spline", _synthetic_cov(), "smoke")
    with pytest.raises(UdbenchError, match="fidelity"):
        make_prior("gp", _synthetic_cov(), "quick")


def _leaves(h: dict) -> dict[str, np.ndarray]:
    out = {}
    for i, part in enumerate(h["parts"]):
        for k, v in part.items():
            if k not in ("kernel", "order"):
                out[f"{i}.{k}"] = np.atleast_1d(np.asarray(v, dtype=float))
    out["noise_variance"] = np.atleast_1d(h["noise_variance"])
    return out


def test_kernel_fit_on_real_dataset_moves_every_hyperparameter(data_dir) -> None:
    """concrete (rq + linear): fit on 150 candidate rows improves the marginal likelihood
    and leaves no hyperparameter at its initial value."""
    data = pytest.importorskip("udbench.data")
    if not hasattr(data, "load_covariates"):
        pytest.skip("udbench.data.load_covariates not available yet")
    cov = data.load_covariates("concrete", data_dir=data_dir)
    rows = np.random.default_rng(0).choice(cov.cand_idx, 150, replace=False)
    fit = fit_kernel(cov.X[rows], cov.y_real[rows], cov.spec.kernel_family, restarts=1, maxiter=30)
    assert fit.lml_final > fit.lml_initial + 10
    init = _leaves(fit.initial)
    final = _leaves({**fit.hyper, "noise_variance": fit.noise_variance})
    assert init.keys() == final.keys()
    for k in init:
        assert np.all(np.abs(final[k] - init[k]) > 1e-6 * np.abs(init[k])), k


@pytest.mark.slow
@pytest.mark.parametrize(
    "family",
    ["matern12+linear", "rq+linear", "matern52+powexp", "periodic+linear", "arccosine"],
)
def test_fit_every_sum_family_improves_lml(family: str) -> None:
    X = RNG.random((150, 3))
    y = np.sin(6 * X[:, 0]) + X[:, 1] + 0.1 * RNG.standard_normal(150)
    fit = fit_kernel(X, y, family, restarts=2, maxiter=60)
    assert fit.lml_final > fit.lml_initial
    assert sum(p["weight"] for p in fit.hyper["parts"]) == pytest.approx(1.0)


def test_unwritable_cache_warns_and_gives_the_same_prior(tmp_path, monkeypatch) -> None:
    """A cache that cannot be written (here: under a file) costs a refit, not the run."""
    from udbench._validation import UdbenchWarning

    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "ok"))
    cov = _synthetic_cov()
    cached = build_prior(cov, "smoke")
    (tmp_path / "afile").write_text("")
    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "afile" / "cache"))
    with pytest.warns(UdbenchWarning, match="could not cache the GP fit .*UDBENCH_CACHE_DIR"):
        uncached = build_prior(cov, "smoke")
    assert uncached.scale == pytest.approx(cached.scale, rel=1e-12)


@pytest.mark.parametrize("family", ["rq+linear", "matern12", "arccosine"])
def test_moments_without_draws_match_dense_scipy_and_condition(family: str) -> None:
    prior = GPPrior(_hyper(family, 3), scale=1.3)
    Xt, Xe = RNG.random((30, 3)), RNG.random((600, 3))  # > one 512-row diagonal block
    s2 = 0.05 + 0.3 * RNG.random(30)
    y = RNG.standard_normal(30)
    mean, var = prior.moments(Xt, y, s2, Xe)
    K = prior.covariance(np.vstack([Xe, Xt]))
    want_mean, cov, _, _ = _dense_posterior(K, s2, y, 600)
    np.testing.assert_allclose(mean, want_mean, atol=1e-8, rtol=0)
    np.testing.assert_allclose(var, np.diag(cov), atol=1e-8, rtol=0)
    post = prior.condition(Xt, y, s2, Xe, key=0, n_draws=2)
    np.testing.assert_allclose(mean, post.mean, atol=1e-10, rtol=0)
    np.testing.assert_allclose(var, post.var, atol=1e-10, rtol=0)
    with pytest.raises(UdbenchError, match="noise_var_train"):
        prior.moments(Xt, y, np.zeros(30), Xe)


def test_fit_with_known_noise_maximises_the_exact_marginal_likelihood() -> None:
    # data from GP(0, 2.5²·RBF) with known heteroscedastic noise; the fit must use that noise
    # as given (no fitted noise, no standardisation of y): its reported optimum equals
    # log N(y | 0, a²K̃ + diag σ²) at the returned hyperparameters (SciPy, dense)
    rng = np.random.default_rng(3)
    X = rng.random((60, 2))
    truth = GPPrior(
        {
            "kernel_family": "rbf",
            "parts": [{"kernel": "rbf", "weight": 1.0, "lengthscale": [0.4, 0.6]}],
        },
        scale=2.5,
    )
    f = truth.sample(X, key=1)[0]
    s2 = 0.02 + 0.1 * rng.random(60)
    y = f + np.sqrt(s2) * rng.standard_normal(60)
    fit = fit_kernel(X, y, "rbf", seed=0, restarts=1, maxiter=200, noise_var=s2)
    assert np.isnan(fit.noise_variance) and fit.settings["known_noise"] is True
    K = GPPrior(fit.hyper, np.sqrt(fit.total_variance)).covariance(X)
    lml = scipy.stats.multivariate_normal(np.zeros(60), K + np.diag(s2)).logpdf(y)
    assert fit.lml_final == pytest.approx(lml, abs=1e-6)
    assert fit.lml_final >= fit.lml_initial
    # the known-noise likelihood is maximised in a's direction too: a² is of the order of
    # the truth's 6.25 (not the standardised target's 1)
    assert 1.5 < fit.total_variance < 25.0
    with pytest.raises(UdbenchError, match="noise_var"):
        fit_kernel(X, y, "rbf", restarts=1, maxiter=5, noise_var=-s2)


def _near_noise_free() -> tuple[GPPrior, np.ndarray, np.ndarray, np.ndarray]:
    """Noise σ² = 1e-13 (below the nugget ν = 1e-10·a²) and eval points 1e-6 from training
    points: a posterior variance of f without the nugget would be ≈ 1e-13, far below ν."""
    prior = GPPrior(_hyper("matern52", 1), scale=1.0)
    Xt = np.sort(np.random.default_rng(3).random((60, 1)), axis=0)
    return prior, Xt, Xt[::6] + 1e-6, np.full(60, 1e-13)


def test_nugget_is_in_the_exact_moments_so_draws_match_them_near_noise_free() -> None:
    """The white_wine × u-shaped case (docs/tasks.md, "Jitter") in miniature: f* and the
    Matheron draws carry the nugget ν of the joint prior factor, so the exact variance must
    too. Without it the draws' variance was ≈ 2000× the stored one here."""
    prior, Xt, Xe, s2 = _near_noise_free()
    f = prior.sample(np.vstack([Xe, Xt]), key=1)[0]
    y = f[10:] + np.sqrt(s2) * np.random.default_rng(4).standard_normal(60)
    D = 4000
    post = prior.condition(Xt, y, s2, Xe, key=2, n_draws=D)
    nu = post.diagnostics["nugget"]
    assert nu == post.diagnostics["jitter_prior"] == pytest.approx(1e-10, rel=1e-12)
    assert np.all(post.var >= nu)
    # MC variance of the draws: SE ≈ var·sqrt(2 / (D − 1)); 4.5 SE over 10 points
    ratio = post.draws_eval.var(axis=0, ddof=1) / post.var
    assert np.all(np.abs(ratio - 1) < 4.5 * np.sqrt(2 / (D - 1)))
    # the train block (r − ΣB⁻¹r): y pins f there, posterior variance ≈ σ² = 1e-13 ≪ ν.
    # Its draws match the dense posterior of the nugget prior a²K + νI (SciPy, independent)
    K = prior.covariance(np.vstack([Xe, Xt])) + nu * np.eye(70)
    _, _, mean_t, cov_t = _dense_posterior(K, s2, y, 10)
    v_t = np.diag(cov_t)
    assert np.all(np.abs(post.draws_train.mean(axis=0) - mean_t) < 4.5 * np.sqrt(v_t / D))
    ratio_t = post.draws_train.var(axis=0, ddof=1) / v_t
    assert np.all(np.abs(ratio_t - 1) < 4.5 * np.sqrt(2 / (D - 1)))
    # moments() finds the same ν (cached joint factor) and the same moments, and takes ν.
    # The two paths evaluate the kernel separately, and the variance is what is left of a
    # cancellation of O(1) terms with cond(B) ≈ 1e10: agreement to 1e-3 of a variance ≈ 2ν
    mean, var = prior.moments(Xt, y, s2, Xe)
    np.testing.assert_allclose(var, post.var, rtol=1e-3, atol=0)
    np.testing.assert_allclose(mean, post.mean, rtol=0, atol=1e-6)
    _, var0 = prior.moments(Xt, y, s2, Xe, nugget=0.0)
    assert np.all(var0 < 0.01 * nu)  # the old, nugget-free variance
    with pytest.raises(UdbenchError, match="nugget"):
        prior.moments(Xt, y, s2, Xe, nugget=-1.0)


def test_eval_only_draws_carry_the_nugget_near_noise_free() -> None:
    """``draws_at_train=False``: ν is :meth:`GPPrior.nugget` (or given), and the eval-only
    posterior covariance a²K_ee + νI − AᵀA gives draws with the exact variance."""
    _, Xt, Xe, s2 = _near_noise_free()
    prior = GPPrior(_hyper("matern52", 1), scale=1.0, draws_at_train=False)
    y = np.random.default_rng(6).standard_normal(60) * 0.01
    D = 4000
    post = prior.condition(Xt, y, s2, Xe, key=3, n_draws=D)
    nu = post.diagnostics["nugget"]
    assert nu == prior.nugget(Xe, Xt) == pytest.approx(1e-10, rel=1e-12)
    assert post.draws_train is None and np.all(post.var >= nu)
    ratio = post.draws_eval.var(axis=0, ddof=1) / post.var
    assert np.all(np.abs(ratio - 1) < 4.5 * np.sqrt(2 / (D - 1)))
    given = prior.condition(Xt, y, s2, Xe, key=3, n_draws=2, nugget=4e-10)
    assert given.diagnostics["nugget"] == 4e-10 and np.all(given.var > 4e-10)
    with pytest.raises(UdbenchError, match="nugget"):
        prior.condition(Xt, y, s2, Xe, key=3, n_draws=2, nugget=float("nan"))


def test_nugget_is_the_jitter_the_joint_factor_used() -> None:
    """When the joint factor at (eval, train) needed more than the first jitter, nugget()
    returns what it used (the cached factor's), not the first value."""
    prior, Xt, Xe, _ = _near_noise_free()
    first = prior.nugget(Xe, Xt)  # nothing cached: JITTER_START·mean diag
    assert first == pytest.approx(1e-10, rel=1e-12)
    prior.sample(np.vstack([Xe, Xt]), key=0)
    fp, (L, _, K) = prior._chol_cache  # as if the factorisation had escalated ×100
    prior._chol_cache = (fp, (L, 100 * first, K))
    assert prior.nugget(Xe, Xt) == 100 * first
    assert prior.nugget(Xe[:5], Xt) == pytest.approx(1e-10, rel=1e-12)  # other inputs


def test_f_star_is_calibrated_under_the_exact_moments_near_noise_free() -> None:
    """Simulation-based calibration of the whole reference: f* drawn with the prior's
    nugget, conditioned exactly, gives z = (f* − m_S)/σ_f with E z² = 1. 300 replications ×
    10 points; z² has variance 2, so the mean of z² is within 0.25 of 1 even if the ten
    points of a replication were fully dependent (SE ≤ sqrt(2/300) = 0.08; 3 SE)."""
    prior, Xt, Xe, s2 = _near_noise_free()
    rng = np.random.default_rng(5)
    z2 = []
    for k in range(300):
        f = prior.sample(np.vstack([Xe, Xt]), key=100 + k)[0]
        y = f[10:] + np.sqrt(s2) * rng.standard_normal(60)
        mean, var = prior.moments(Xt, y, s2, Xe)
        z2.append((f[:10] - mean) ** 2 / var)
    assert abs(float(np.mean(z2)) - 1.0) < 0.25
