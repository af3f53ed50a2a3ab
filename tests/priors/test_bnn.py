"""BNN prior (SPEC §5): network function, reference-input centring, scale, determinism."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from udbench._seeding import derive_seed
from udbench._validation import UdbenchError
from udbench.priors.bnn import (
    FIDELITY_SETTINGS,
    N_REFERENCE,
    BNNPrior,
    build_prior,
    choose_reference_rows,
    network_u,
    resolve_chain_method,
)


def test_network_function_equals_hand_computed_value() -> None:
    # H = 2, d = 2, x = (0.25, 0.75): 2x − 1 = (−0.5, 0.5);
    # pre_1 = (1·(−0.5) − 1·0.5)/√2 + 0.1 = −0.6071067811865475
    # pre_2 = (0.5·(−0.5) + 2·0.5)/√2 − 0.2 = 0.3303300858899106
    # u = (1.5 tanh(pre_1) − 0.5 tanh(pre_2))/√2 = −0.6876893423333214
    # references (0,0), (1,1): mean u = 0.11367028362686302
    # f = b + a (u − ū_ref) with b = 0.3, a = 2: −1.3027192519203687
    X = np.array([[0.25, 0.75]])
    v = np.array([1.5, -0.5])
    w = np.array([[1.0, -1.0], [0.5, 2.0]])
    c = np.array([0.1, -0.2])
    np.testing.assert_allclose(network_u(X, v, w, c), [-0.6876893423333214], rtol=1e-14)
    prior = BNNPrior(np.array([[0.0, 0.0], [1.0, 1.0]]), scale=2.0, n_hidden=2)
    weights = {"v": v[None], "w": w[None], "c": c[None], "b": np.array([0.3])}
    np.testing.assert_allclose(prior.function(X, weights), [[-1.3027192519203687]], rtol=1e-14)


def test_centring_makes_mean_over_reference_inputs_equal_b() -> None:
    rng = np.random.default_rng(0)
    X_ref = rng.uniform(size=(N_REFERENCE, 4))
    prior = BNNPrior(X_ref, scale=1.3)
    weights = prior.sample_weights(key=3, n_draws=50)
    u = network_u(X_ref, weights["v"], weights["w"], weights["c"])
    assert np.abs(u.mean(axis=1)).max() > 1e-3  # u itself is not centred
    f_ref = prior.function(X_ref, weights)
    # mean over the references of a(u − ū) is 0, so mean f = b
    np.testing.assert_allclose(f_ref.mean(axis=1), weights["b"], rtol=0, atol=1e-13)


def test_prior_variance_of_f_at_reference_mean_is_one() -> None:
    # mean over references of f is b ~ N(0, 1): sample variance of 4000 draws within
    # the chi-square interval at two-sided level 1e-3
    from scipy import stats

    X_ref = np.random.default_rng(1).uniform(size=(N_REFERENCE, 3))
    prior = BNNPrior(X_ref, scale=2.0)
    f = prior.sample(X_ref, key=9, n_draws=4000).mean(axis=1)
    s = np.sum(f**2)
    assert stats.chi2.ppf(5e-4, 4000) < s < stats.chi2.ppf(1 - 5e-4, 4000)


def test_reference_rows_fixed_per_dataset() -> None:
    r1 = choose_reference_rows(1500, "kin8nm")
    r2 = choose_reference_rows(1500, "kin8nm")
    r3 = choose_reference_rows(1500, "abalone")
    assert r1.shape == (65,) and np.unique(r1).size == 65
    assert r1.min() >= 0 and r1.max() < 1500
    np.testing.assert_array_equal(r1, r2)
    assert not np.array_equal(r1, r3)


def test_same_key_same_bytes() -> None:
    X_ref = np.random.default_rng(2).uniform(size=(65, 3))
    prior = BNNPrior(X_ref, 1.0)
    X = np.random.default_rng(3).uniform(size=(20, 3))
    assert prior.sample(X, 4, 3).tobytes() == prior.sample(X, 4, 3).tobytes()
    assert not np.array_equal(prior.sample(X, 4, 3), prior.sample(X, 5, 3))


def test_build_prior_scale_constant() -> None:
    rng = np.random.default_rng(5)
    cov = SimpleNamespace(key="toy", X=rng.uniform(size=(200, 4)), eval_idx=np.arange(100, 200))
    prior = build_prior(cov, "smoke")
    pool = cov.X[100:]
    draws = prior.sample(pool, derive_seed("scale", "toy", "bnn"), 100)
    np.testing.assert_allclose(np.median(draws.std(axis=1)), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(prior.X_ref, pool[choose_reference_rows(100, "toy")])
    s = prior.settings
    assert s["sampler"]["chain_method"] == "auto" and s["sampler"]["dtype"] == "float64"
    assert FIDELITY_SETTINGS["paper"]["n_chains"] == 4
    assert FIDELITY_SETTINGS["paper"]["n_warmup"] == 500
    assert FIDELITY_SETTINGS["paper"]["target_accept"] == 0.9


def test_condition_rejects_bad_input() -> None:
    prior = BNNPrior(np.full((3, 2), 0.5), 1.0, "smoke")
    X = np.full((4, 2), 0.5)
    with pytest.raises(UdbenchError, match="n_draws"):
        prior.condition(X, np.zeros(4), np.ones(4), X, 0, 7)
    with pytest.raises(UdbenchError, match="noise_var_train"):
        prior.condition(X, np.zeros(4), np.zeros(4), X, 0, 8)
    with pytest.raises(UdbenchError, match="columns"):
        prior.sample(np.zeros((3, 5)), 0)


def test_chain_method_parallel_only_with_a_device_per_chain() -> None:
    assert resolve_chain_method("auto", 4, 1) == "vectorized"  # one CPU/GPU device
    assert resolve_chain_method("auto", 4, 4) == "parallel"  # e.g. 4 GPUs
    assert resolve_chain_method("auto", 1, 8) == "vectorized"  # one chain: nothing to spread
    assert resolve_chain_method("sequential", 4, 1) == "sequential"
    with pytest.raises(UdbenchError, match=r"fewer JAX devices \(2\) than chains \(4\)"):
        resolve_chain_method("parallel", 4, 2)
    with pytest.raises(UdbenchError, match="chain_method"):
        resolve_chain_method("pmap", 4, 4)


PARALLEL_SCRIPT = """
import numpy as np, jax
from udbench.priors.bnn import BNNPrior
rng = np.random.default_rng(6)
X = rng.uniform(size=(30, 2))
prior = BNNPrior(X[:10], 1.0, "smoke")
f = prior.sample(X, key=1)[0]
nv = np.full(20, 0.05)
y = f[:20] + np.sqrt(nv) * rng.standard_normal(20)
p = prior.condition(X[:20], y, nv, X[20:], key=2, n_draws=100)
d = p.diagnostics
print(jax.local_device_count(), d["chain_method"], d["rhat_max"],
      np.corrcoef(p.draws_train.mean(0), f[:20])[0, 1])
"""


@pytest.mark.slow
def test_chains_run_in_parallel_on_several_host_devices() -> None:
    # Two CPU devices (XLA flag, set before JAX starts, hence a subprocess): the two smoke
    # chains run with NumPyro's "parallel" method and give a sound posterior.
    import os
    import subprocess
    import sys

    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    out = subprocess.run(
        [sys.executable, "-c", PARALLEL_SCRIPT], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    n_dev, method, rhat_max, corr = out.stdout.split()[-4:]
    assert (n_dev, method) == ("2", "parallel")
    assert float(rhat_max) < 1.05 and float(corr) > 0.9


@pytest.mark.slow
def test_condition_diagnostics_float64_and_determinism() -> None:
    rng = np.random.default_rng(6)
    X = rng.uniform(size=(30, 2))
    prior = BNNPrior(X[:10], 1.0, "smoke")
    f = prior.sample(X, key=1)[0]
    nv = np.full(20, 0.05)
    y = f[:20] + np.sqrt(nv) * rng.standard_normal(20)
    p1 = prior.condition(X[:20], y, nv, X[20:], key=2, n_draws=100)
    p2 = prior.condition(X[:20], y, nv, X[20:], key=2, n_draws=100)
    assert p1.draws_eval.shape == (100, 10) and p1.draws_eval.dtype == np.float64
    assert p1.draws_eval.tobytes() == p2.draws_eval.tobytes()
    d = p1.diagnostics
    assert d["chain_method"] == "vectorized" and d["n_chains"] == 2
    assert 0.5 < d["accept_prob_mean"] <= 1.0
    assert 1 <= d["tree_depth_max"] <= FIDELITY_SETTINGS["smoke"]["max_tree_depth"]
    assert np.corrcoef(p1.draws_train.mean(0), f[:20])[0, 1] > 0.9


def test_dense_mass_option_reaches_nuts_and_defaults_off() -> None:
    # issue 18: dense mass-matrix adaptation is a sampler setting, off in every preset
    from udbench.priors import bnn

    assert all(p["dense_mass"] is False for p in FIDELITY_SETTINGS.values())
    runner = bnn._nuts_runner(5, 2, 2, 10, 10, 0.9, 6, "vectorized", dense_mass=True)
    assert runner.sampler._dense_mass is True
    assert bnn._nuts_runner(5, 2, 2, 10, 10, 0.9, 6, "vectorized").sampler._dense_mass is False


@pytest.mark.slow
def test_dense_mass_changes_the_run_and_still_conditions() -> None:
    rng = np.random.default_rng(6)
    X = rng.uniform(size=(30, 2))
    kw = {"n_warmup": 150}
    diag = BNNPrior(X[:10], 1.0, "smoke", sampler_kwargs=kw)
    dense = BNNPrior(X[:10], 1.0, "smoke", sampler_kwargs={**kw, "dense_mass": True})
    assert dense.settings["sampler"]["dense_mass"] is True
    f = diag.sample(X, key=1)[0]
    nv = np.full(20, 0.05)
    y = f[:20] + np.sqrt(nv) * rng.standard_normal(20)
    p_diag = diag.condition(X[:20], y, nv, X[20:], key=2, n_draws=100)
    p_dense = dense.condition(X[:20], y, nv, X[20:], key=2, n_draws=100)
    assert p_dense.draws_eval.tobytes() != p_diag.draws_eval.tobytes()
    assert np.corrcoef(p_dense.draws_train.mean(0), f[:20])[0, 1] > 0.9


def test_float32_runs_nuts_in_single_precision_and_agrees_with_float64() -> None:
    # issue 34: dtype is a sampler setting; float32 samples the same posterior: its
    # posterior mean agrees with float64's within Monte Carlo error
    from udbench._validation import UdbenchError
    from udbench.priors.bnn_cost import gradient_seconds

    # paper is SPEC §5's float64; standard runs in float32 since the sweep (issue 34)
    assert {k: p["dtype"] for k, p in FIDELITY_SETTINGS.items()} == {
        "paper": "float64",
        "standard": "float32",
        "smoke": "float64",
    }
    rng = np.random.default_rng(6)
    X = rng.uniform(size=(50, 2))
    kw = {"n_warmup": 100}
    p64 = BNNPrior(X[:10], 1.0, "smoke", sampler_kwargs=kw)
    p32 = BNNPrior(X[:10], 1.0, "smoke", sampler_kwargs={**kw, "dtype": "float32"})
    assert p32.settings["sampler"]["dtype"] == "float32"
    assert p64.settings["sampler"]["dtype"] == "float64"
    f = p64.sample(X, key=1)[0]
    nv = np.full(40, 0.05)
    y = f[:40] + np.sqrt(nv) * rng.standard_normal(40)
    a = p64.condition(X[:40], y, nv, X[40:], key=2, n_draws=200)
    b = p32.condition(X[:40], y, nv, X[40:], key=2, n_draws=200)
    assert b.draws_eval.dtype == np.float64 and np.isfinite(b.draws_eval).all()
    assert b.draws_eval.tobytes() != a.draws_eval.tobytes()
    sd = a.draws_eval.std(axis=0)
    # ~100 effective draws each: the two means differ by ~0.14 SD per point
    assert np.median(np.abs(b.draws_eval.mean(0) - a.draws_eval.mean(0)) / sd) < 0.35
    assert np.median(b.draws_eval.std(0) / sd) == pytest.approx(1.0, abs=0.25)
    with pytest.raises(UdbenchError, match="dtype"):
        BNNPrior(X[:10], 1.0, "smoke", sampler_kwargs={"dtype": "float16"}).condition(
            X[:40], y, nv, X[40:], key=2, n_draws=100
        )
    cost = gradient_seconds(X[:40], nv, X[:10], 1.0, calls=3, repeats=2)
    assert set(cost) == {"float64", "float32"} and all(v > 0 for v in cost.values())
    with pytest.raises(UdbenchError, match="dtypes"):
        gradient_seconds(X[:40], nv, X[:10], 1.0, ("float16",))


def test_real_dataset_prior_scales_and_reference_rows(data_dir) -> None:
    # both MCMC families on a real table (concrete: d = 8, n_eval = 515), through the loader
    from udbench.data import load_covariates
    from udbench.priors.hbart import build_prior as build_hbart

    cov = load_covariates("concrete", data_dir=data_dir)
    pool = cov.X[cov.eval_idx]
    bnn = build_prior(cov, "standard")
    assert bnn.X_ref.shape == (65, 8)
    # every reference input is an evaluation-pool row
    assert all((np.abs(pool - r).sum(axis=1) == 0).any() for r in bnn.X_ref)
    hbart = build_hbart(cov, "standard")
    for prior in (bnn, hbart):
        assert np.isfinite(prior.scale) and prior.scale > 0
        sd = prior.sample(pool, key=0, n_draws=20).std(axis=1)
        assert 0.3 < np.median(sd) < 3.0  # about one unit over the pool (SPEC §5)
