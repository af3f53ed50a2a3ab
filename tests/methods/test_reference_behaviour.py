"""Issue 31, item 6: methods that drift from their reference behaviour, each measured on a toy
with known noise (``_ml_toy.known_noise``: d = 5, noise SD 0.25, held-out y), as the 90 %
interval coverage of held-out y within a stated band — or the documented deviation, asserted
so that a change of the method shows here and in docs/methods.md ("Reference behaviour on a toy
with known noise"), where every number below was measured. Slow: default configurations."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _ml_toy import KNOWN_NOISE_SD, coverage90, known_noise

from udbench.methods import make_method

pytestmark = pytest.mark.slow


def _measure(spec: str, seed: int, **toy: Any) -> dict[str, Any]:
    X, y, X_test, y_test = known_noise(seed=seed, **toy)
    method = make_method(spec, random_state=seed).fit(X, y)
    pred = method.predict(X_test)
    mse = float(np.mean((y_test - pred.mean) ** 2))
    return {
        "method": method,
        "pred": pred,
        "X_test": X_test,
        "var_y": float(np.var(y)),
        "coverage": coverage90(pred.mean, pred.total, y_test),
        "total_over_mse": float(np.mean(pred.total)) / mse,
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ngboost_nig_validated_iterations_cover_90_percent(seed):
    # Measured (n = 300): coverage 0.894 / 0.934 / 0.906, total/MSE 1.02 / 1.28 / 1.06,
    # 113-125 of the 500 iterations kept. Before issue 31 (all 500): coverage 0.25.
    got = _measure("ngboost-nig", seed, n=300)
    assert 0.85 <= got["coverage"] <= 0.96
    assert 0.8 <= got["total_over_mse"] <= 1.5
    assert got["method"].n_estimators_ < 250


def test_ngboost_nig_without_validation_overfits_the_variance():
    # The documented reason for the split: the variance collapses long before the mean
    # (measured: coverage 0.249, total/MSE 0.038 at 500 iterations).
    got = _measure("ngboost-nig:validation_fraction=0", 0, n=300)
    assert got["coverage"] < 0.4 and got["total_over_mse"] < 0.1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_catboost_kgb_default_sigma_covers_conservatively(seed):
    # The space's lowest iteration counts and samples (for time), defaults otherwise.
    # Measured: coverage 0.913 / 0.967 / 0.904, total/MSE 1.18 / 1.97 / 1.15, EU 0.07-0.09
    # (var(y) 0.71-0.87). Over-dispersed by design: AU is the held-out MSE of the mean, which
    # already holds the mean's error, and EU adds it again (paper C.3).
    quick = "posterior_iterations=200,prior_iterations=50,n_regressors=5"
    got = _measure(f"catboost-kgb:{quick}", seed, n=300)
    assert 0.88 <= got["coverage"] <= 0.99
    assert 1.0 <= got["total_over_mse"] <= 2.5
    assert np.mean(got["pred"].epistemic) < 0.15 * got["var_y"]


def test_catboost_kgb_range_centre_sigma_samples_the_prior():
    # sigma = 0.158 (the former default): prior functions of ~2x var(y), the samples interpolate
    # the data and EU is most of var(y) (measured: EU 0.61 = 0.79 var(y), coverage 0.980).
    quick = "posterior_iterations=200,prior_iterations=50,n_regressors=5,sigma=0.158"
    got = _measure(f"catboost-kgb:{quick}", 0, n=300)
    assert np.mean(got["pred"].epistemic) > 0.5 * got["var_y"]


def test_nn_edl_matches_the_reference_and_is_overconfident_on_clean_data():
    # Documented deviation: the NIG loss and outputs are Amini et al.'s reference formulas, and
    # with the shared backbone's 200 epochs the Student-t narrows on the training rows
    # (measured: coverage 0.452 / 0.342 / 0.337, total/MSE 0.18 / 0.09 / 0.09).
    for seed in (0, 1, 2):
        got = _measure("nn-edl", seed, n=400)
        assert 0.25 <= got["coverage"] <= 0.6
        assert got["total_over_mse"] < 0.3


def test_nn_edl_outliers_drive_alpha_to_one_and_the_variance_up():
    # Documented deviation: six ±10 outliers (lr 1e-2) make the Student-t heavy-tailed at some
    # inputs, α → 1 and AU = β/(α − 1) explodes there while the rest stays overconfident
    # (measured: coverage 0.449 / 0.449 / 0.406; max AU / median AU 5.2e4 / 1.4e4 / 1.3e9).
    for seed in (0, 1, 2):
        got = _measure("nn-edl:lr=0.01", seed, n=400, outliers=6)
        alpha = got["method"].predict_nig(got["X_test"])["alpha"]
        au = got["pred"].aleatoric
        assert got["coverage"] < 0.55
        assert np.max(au) / np.median(au) > 1e3 and np.min(alpha) - 1.0 < 1e-2


def test_dkl_learned_noise_collapses():
    # Documented deviation (Ober et al. 2021): the paper's DKL at the centre of its space
    # learns a noise far below the true one (measured: 0.0114 against 0.0625, coverage 0.365,
    # total/MSE 0.080).
    got = _measure("dkl", 0, n=300)
    assert got["method"].noise_variance_ < 0.5 * KNOWN_NOISE_SD**2
    assert got["coverage"] < 0.8
