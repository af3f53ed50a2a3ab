"""VLGP: reference values (exact GP when the noise GP is constant; GPJax's ELBO), AU in x."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from udbench._seeding import make_rng
from udbench._validation import UdbenchError
from udbench.methods.gp import GP
from udbench.methods.vlgp import VLGP, collapsed_bound, optimal_signal_q, vlgp_family


def _constant_noise_params(gp: GP, m: int) -> dict:
    """VLGP parameters with the GP's kernel and a noise GP held at log σ_n² (k_g ≈ 0)."""
    return {
        "ls_f": gp.lengthscale_,
        "var_f": gp.signal_variance_,
        "lin_f": gp.linear_variance_,
        "ls_g": np.ones(gp.lengthscale_.size),
        "var_g": 1e-14,  # the noise GP is the constant μ₀: prior variance ~0
        "mu0": np.log(gp.noise_variance_std_),
        "a": np.zeros(m),
        "B": np.eye(m),
    }


def test_vlgp_with_constant_noise_gp_equals_exact_gp():
    # Noise GP held at the constant log σ_n², inducing inputs = all training inputs: the
    # collapsed q(f) is the exact GP posterior, so GPJax's heteroscedastic family predicts
    # the exact GP's mean and latent variance at the same hyperparameters to 1e-4, and the
    # bound is its log marginal likelihood. The jitter on K_zz is 1e-9 here: with Z = X the
    # method's 1e-6 (GPJax's default) makes Q = K(K + εI)⁻¹K differ from K by up to 1.5e-4
    # (relative to sd(y)) in the mean on this problem.
    import jax
    import jax.numpy as jnp

    rng = make_rng("tests", "methods", "vlgp-exact")
    X = rng.uniform(-1, 1, size=(30, 2))
    y = np.sin(3 * X[:, 0]) + X[:, 1] + 0.2 * rng.standard_normal(30)
    X_test = rng.uniform(-1.5, 1.5, size=(15, 2))
    gp = GP(max_iter=50).fit(X, y)
    ref = gp.predict(X_test)
    Z = gp._transform(X)
    with jax.enable_x64(True):
        c = {
            k: jnp.asarray(v, dtype=jnp.float64) for k, v in _constant_noise_params(gp, 30).items()
        }
        Zj, yj = jnp.asarray(Z), jnp.asarray((y - gp.y_loc_) / gp.y_scale_)
        q_f = optimal_signal_q(c, Zj, yj, Zj, 1e-9)
        family = vlgp_family(c, Zj, q_f, 1e-9)
        mean_f, var_f, mean_g, var_g = family.predict(jnp.asarray(gp._transform(X_test)))
        var_f, var_g = np.asarray(var_f) - 1e-9, np.asarray(var_g) - 1e-9  # GPJax's jitter
        bound = float(collapsed_bound(c, Zj, yj, Zj, 1e-9))
    mean = np.asarray(mean_f).ravel() * gp.y_scale_ + gp.y_loc_
    eu = np.asarray(var_f).ravel() * gp.y_scale_**2
    au = np.exp(np.asarray(mean_g).ravel() + 0.5 * np.asarray(var_g).ravel()) * gp.y_scale_**2
    np.testing.assert_allclose(mean, ref.mean, rtol=0, atol=1e-4 * np.std(y))
    np.testing.assert_allclose(eu, ref.epistemic, rtol=1e-4, atol=1e-4 * ref.epistemic.max())
    np.testing.assert_allclose(au, ref.aleatoric, rtol=1e-4)
    assert bound == pytest.approx(gp.log_marginal_likelihood_, abs=1e-3)


def test_collapsed_bound_equals_gpjax_heteroscedastic_elbo():
    # At the optimal q(u_f), the collapsed bound is GPJax's (uncollapsed) heteroscedastic
    # ELBO of the same q(g); any other q(u_f) gives GPJax a smaller ELBO. Jitter 1e-12:
    # GPJax adds it to the predictive variances inside its ELBO as well as to K_zz.
    import gpjax as gpx
    import jax
    import jax.numpy as jnp

    rng = make_rng("tests", "methods", "vlgp-elbo")
    n, m, d = 40, 12, 2
    X, y = rng.standard_normal((n, d)), rng.standard_normal(n)
    with jax.enable_x64(True):
        B = np.tril(rng.standard_normal((m, m))) * 0.2 + np.eye(m) * 0.7
        c = {
            "ls_f": jnp.asarray([0.8, 1.5]),
            "var_f": jnp.asarray(0.9),
            "lin_f": jnp.asarray(0.2),
            "ls_g": jnp.asarray([1.1, 0.6]),
            "var_g": jnp.asarray(0.4),
            "mu0": jnp.asarray(-1.3),
            "a": jnp.asarray(0.3 * rng.standard_normal(m)),
            "B": jnp.asarray(B),
        }
        Xj, yj, Z = jnp.asarray(X), jnp.asarray(y), jnp.asarray(X[:m])
        ours = float(collapsed_bound(c, Xj, yj, Z, 1e-12))
        q_f = optimal_signal_q(c, Xj, yj, Z, 1e-12)
        data = gpx.Dataset(X=Xj, y=yj[:, None])
        theirs = float(gpx.objectives.heteroscedastic_elbo(vlgp_family(c, Z, q_f, 1e-12), data))
        worse = vlgp_family(c, Z, (q_f[0] + 0.1, q_f[1]), 1e-12)
        theirs_worse = float(gpx.objectives.heteroscedastic_elbo(worse, data))
    assert ours == pytest.approx(theirs, rel=1e-8)
    assert theirs_worse < theirs


def test_vlgp_aleatoric_varies_with_the_noise():
    rng = make_rng("tests", "methods", "vlgp-au")
    X = rng.uniform(-1, 1, size=(150, 1))
    sigma = 0.05 + 0.225 * (X[:, 0] + 1)
    y = np.sin(3 * X[:, 0]) + sigma * rng.standard_normal(150)
    m = VLGP(**VLGP.smoke_params).fit(X, y)
    grid = np.linspace(-0.9, 0.9, 50)[:, None]
    pred = m.predict(grid)
    rho = spearmanr(pred.aleatoric, (0.05 + 0.225 * (grid[:, 0] + 1)) ** 2)[0]
    assert rho > 0.9
    assert m.num_inducing_ == 32
    # EU grows away from the data
    assert m.predict(np.array([[3.0]])).epistemic[0] > 5 * np.median(pred.epistemic)


def test_vlgp_bad_hyperparameter_is_one_line_error():
    X = np.zeros((5, 1))
    with pytest.raises(UdbenchError, match="parameter 'num_inducing' must be an integer >= 1"):
        VLGP(num_inducing=0).fit(X, np.arange(5.0))
    with pytest.raises(UdbenchError, match="init_noise_std"):
        VLGP(init_noise_std=-1.0).fit(X, np.arange(5.0))


def test_the_whitened_noise_moments_equal_gpjax_and_replace_them_where_not_finite(monkeypatch):
    """The noise GP's marginals in the whitened form (the bound's) equal GPJax's conditional
    on a fitted toy; where GPJax's come out NaN (an ill-conditioned K_zz: tuned VLGP on
    gp-small gave NaN variances on 4 of 240 instances) predict uses the whitened ones, and
    AU is the same as the finite path's."""
    import jax
    import jax.numpy as jnp

    import udbench.methods.vlgp as vlgp

    rng = make_rng("tests", "methods", "vlgp-whitened")
    X = rng.uniform(-1, 1, size=(120, 2))
    y = np.sin(3 * X[:, 0]) + (0.05 + 0.2 * (X[:, 1] + 1)) * rng.standard_normal(120)
    m = VLGP(**VLGP.smoke_params).fit(X, y)
    grid = rng.uniform(-1.5, 1.5, size=(40, 2))
    with jax.enable_x64(True):
        _, _, g_mean, g_var = vlgp._compiled("predict")(m.family_, jnp.asarray(m._transform(grid)))
    ref_mean = np.asarray(g_mean).reshape(-1)
    ref_var = np.maximum(np.asarray(g_var).reshape(-1) - m._JITTER, 0.0)
    mean_w, var_w = m._noise_marginals_whitened(grid)
    np.testing.assert_allclose(mean_w, ref_mean, rtol=0, atol=1e-8)
    np.testing.assert_allclose(var_w, ref_var, rtol=1e-6, atol=1e-8)
    assert var_w.min() > 0 and np.ptp(mean_w) > 0.1  # a real noise GP, not a constant
    finite = m.predict(grid)
    real = vlgp._compiled("predict")

    def nan_variance(family, X_test):
        f_mean, f_var, g_mean, g_var = real(family, X_test)
        return f_mean, f_var, g_mean, g_var * jnp.nan

    monkeypatch.setitem(vlgp._COMPILED, "predict", nan_variance)
    fallback = m.predict(grid)
    assert np.all(np.isfinite(fallback.aleatoric))
    np.testing.assert_allclose(fallback.aleatoric, finite.aleatoric, rtol=1e-6)
    np.testing.assert_array_equal(fallback.mean, finite.mean)  # the signal GP is untouched
    np.testing.assert_array_equal(fallback.epistemic, finite.epistemic)
    # neither form finite: a clear error, not a NaN AU
    monkeypatch.setattr(
        vlgp, "_noise_marginals", lambda c, X, Z, j: (jnp.nan * X[:, 0], jnp.nan * X[:, 0], 0, 0)
    )
    with pytest.raises(UdbenchError, match=r"not finite in either form .* 40 of 40 points"):
        m.predict(grid)
    # ... unless k_g's variance has underflowed to 0: then q(g) is exactly its mean μ₀
    m.params_["var_g"] = np.asarray(0.0)
    got = m._predict(grid)
    np.testing.assert_allclose(got.aleatoric, np.exp(float(m.params_["mu0"])), rtol=1e-12)
