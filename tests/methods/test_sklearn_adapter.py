"""``SklearnMethod``: scikit-learn regressors with ``predict(return_std=True)`` as methods."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.linear_model import BayesianRidge
from sklearn.neighbors import KNeighborsRegressor

from udbench._validation import UdbenchError
from udbench.methods.blr import BLR
from udbench.methods.conformance import check_method
from udbench.methods.sklearn_adapter import SklearnMethod

#: The toy's noise variance (SD 5), in target units; the targets are scaled by 10, so a
#: wrong mapping back from standardised units would miss it by orders of magnitude.
NOISE_VAR = 25.0


def _toy(linear: bool, seed: int = 0, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n, 2))
    f = 3 * X[:, 0] - 2 * X[:, 1] if linear else np.sin(X[:, 0]) + 0.5 * X[:, 1]
    return X, 10.0 * f + rng.normal(0.0, np.sqrt(NOISE_VAR), n)


@pytest.mark.parametrize(
    ("estimator", "linear", "source", "rel_tol"),
    [
        (None, False, "fitted", 0.15),  # the default GP: its WhiteKernel noise level
        (BayesianRidge(), True, "fitted", 0.15),  # 1 / alpha_
        # no fitted noise exposed (alpha is jitter here): held-out residuals
        (GaussianProcessRegressor(ConstantKernel() * RBF([1.0, 1.0]), alpha=0.1), False,
         "residuals", 0.2),
    ],
)  # fmt: skip
def test_aleatoric_recovers_the_known_noise_variance(estimator, linear, source, rel_tol):
    X, y = _toy(linear)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        method = SklearnMethod(estimator=estimator).fit(X, y)
        pred = method.predict(X)
    assert method.noise_source_ == source
    assert method.noise_variance_ == pytest.approx(NOISE_VAR, rel=rel_tol)
    np.testing.assert_array_equal(pred.aleatoric, method.noise_variance_)
    assert np.all(pred.epistemic >= 0) and np.median(pred.epistemic) < NOISE_VAR
    if estimator is not None:
        assert not hasattr(estimator, "n_features_in_")  # the user's estimator is not fitted


def test_bayesian_ridge_splits_its_predictive_variance_as_blr_does():
    """BayesianRidge's SD² − 1/alpha_ is the linear function's variance: udbench's BLR (the
    same model, its own EU formula xᵀΣx) gives the same AU and EU."""
    X, y = _toy(linear=True)
    ours = SklearnMethod(estimator=BayesianRidge(tol=1e-6)).fit(X, y)
    blr = BLR().fit(X, y)
    a, b = ours.predict(X), blr.predict(X)
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-9)
    np.testing.assert_allclose(a.aleatoric, b.aleatoric, rtol=1e-9)
    np.testing.assert_allclose(a.epistemic, b.epistemic, rtol=1e-8)
    assert ours.noise_variance_ == pytest.approx(blr.noise_variance_, rel=1e-9)


def test_bad_estimators_and_noise_sources_are_one_line_errors():
    X, y = _toy(linear=True, n=40)
    with pytest.raises(UdbenchError, match=r"'estimator' must be a scikit-learn regressor whose"):
        SklearnMethod(estimator=KNeighborsRegressor()).fit(X, y)
    with pytest.raises(UdbenchError, match=r"'noise' must be one of \['auto', 'fitted'"):
        SklearnMethod(noise="white").fit(X, y)
    no_white = GaussianProcessRegressor(ConstantKernel() * RBF(), alpha=0.1)
    with pytest.raises(UdbenchError) as info:
        SklearnMethod(estimator=no_white, noise="fitted").fit(X, y)
    assert "exposes no fitted noise" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "estimator",
    [BayesianRidge(), pytest.param(None, marks=pytest.mark.slow)],  # the default GP: ~20 s
)
def test_conformance_battery_passes(estimator):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        report = check_method(SklearnMethod, params={"estimator": estimator}, timeout=120)
    assert [(r.name, r.status, r.message) for r in report.results if r.status != "passed"] == []
