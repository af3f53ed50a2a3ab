"""The classifier contract, its battery, the registry and the four first classifiers.

Reference behaviour per method, on toys with known label noise (π* = softmax of linear
functions at a known temperature):

- LogReg-Lap: its MAP is scikit-learn's ``LogisticRegression`` optimum of the same objective;
  with many rows π̂ → π* and AU → H(π*), and EU shrinks as n grows (a Laplace posterior
  concentrates);
- GPC-Lap: π̂ agrees with the library's ``predict_proba``;
- CatBoost-VE: AU and AU + EU equal CatBoost's own ``TotalUncertainty`` (data and total
  uncertainty of the virtual ensemble);
- NN-Ens-Softmax: accuracy near the Bayes classifier's on the toy.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from udbench._validation import UdbenchError
from udbench.methods.base import MethodOutputError
from udbench.methods.classification import (
    ClassPrediction,
    embed_present_classes,
    sample_decomposition,
)
from udbench.methods.classifier_conformance import CLASSIFIER_CHECKS, check_classifier
from udbench.methods.classifiers import CLASSIFIERS, list_classifiers, make_classifier
from udbench.risk import brier_decomposition, multiclass_log_decomposition

W_TRUE = np.array([[2.0, -1.0], [-1.0, 2.0], [0.0, 0.0]])
TAU = 0.5


def _toy(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X in [0, 1]², π* = softmax(W(2x − 1)/τ), labels drawn from π*."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 2))
    pi = softmax(((2 * X - 1) @ W_TRUE.T) / TAU, axis=1)
    y = (rng.random(n)[:, None] >= np.cumsum(pi, axis=1)).sum(axis=1)
    return X, np.minimum(y, 2), pi


def _entropy(p: np.ndarray) -> np.ndarray:
    return -(p * np.log(p)).sum(axis=1)


@pytest.mark.parametrize("name", list(CLASSIFIERS))
def test_conformance_battery_passes(name: str) -> None:
    report = check_classifier(name)
    assert report.n_failed == 0, [(r.name, r.message) for r in report.failed()]
    assert report.n_passed + report.n_skipped == len(CLASSIFIER_CHECKS)
    assert report.n_passed >= len(CLASSIFIER_CHECKS) - 1  # only constant_aleatoric_flag skips


def test_registry_is_separate_from_regression_methods() -> None:
    from udbench.methods import REGISTRY

    rows = list_classifiers()
    assert [r.name for r in rows] == list(CLASSIFIERS)
    assert all(r.available and r.task_type == "classification" for r in rows)
    assert not set(CLASSIFIERS) & set(REGISTRY)
    assert not any(t in REGISTRY.values() for t in CLASSIFIERS.values())
    with pytest.raises(UdbenchError, match="keyword"):
        make_classifier("logreg-lap", bogus=1)


def test_sample_decomposition_equals_the_risk_decompositions() -> None:
    rng = np.random.default_rng(0)
    p = softmax(rng.standard_normal((40, 7, 4)) * 2, axis=2)
    pbar = p.mean(axis=0)
    log = sample_decomposition(p, "multiclass_log")
    ref = multiclass_log_decomposition(p, pbar)
    np.testing.assert_allclose(log.probs, pbar, rtol=1e-15)
    np.testing.assert_allclose(log.aleatoric, ref.au, rtol=1e-13)
    np.testing.assert_allclose(log.epistemic, ref.generalized_variance, rtol=1e-12)
    brier = sample_decomposition(p, "brier")
    ref_b = brier_decomposition(p, pbar)
    np.testing.assert_allclose(brier.aleatoric, ref_b.au, rtol=1e-13)
    np.testing.assert_allclose(brier.epistemic, ref_b.generalized_variance, rtol=1e-12)
    one = sample_decomposition(p[:1], "multiclass_log")
    assert np.all(one.epistemic == 0.0)


@pytest.mark.parametrize(
    ("probs", "match"),
    [
        (np.array([[0.5, 0.6]]), "sum"),
        (np.array([[1.2, -0.2]]), ">= 0"),
        (np.array([[np.nan, 0.5]]), "NaN"),
    ],
)
def test_prediction_off_the_simplex_is_a_one_line_error(probs: np.ndarray, match: str) -> None:
    pred = ClassPrediction(probs, np.zeros(1), np.zeros(1))
    with pytest.raises(MethodOutputError, match=match) as info:
        pred.validate()
    assert "\n" not in str(info.value)


def test_embed_present_classes_rule_of_succession() -> None:
    p = np.array([[[0.25, 0.75]]])
    out = embed_present_classes(p, np.array([0, 2]), 3, n_train=8)
    np.testing.assert_allclose(out[0, 0], [0.25 * 0.9, 0.1, 0.75 * 0.9], rtol=1e-15)


def test_logreg_map_is_sklearns_and_laplace_concentrates() -> None:
    from sklearn.linear_model import LogisticRegression

    X, y, _ = _toy(3000, 1)
    method = make_classifier("logreg-lap", prior_precision=0.5, n_samples=400).fit(X, y)
    Phi = np.hstack([(X - method.x_loc_) / method.x_scale_, np.ones((len(X), 1))])
    sk = LogisticRegression(C=2.0, fit_intercept=False, tol=1e-12, max_iter=5000).fit(Phi, y)
    np.testing.assert_allclose(method.coef_, sk.coef_, atol=2e-4)
    X_test, _, pi_test = _toy(400, 2)
    pred = method.predict(X_test)
    assert np.mean(np.abs(pred.probs - pi_test)) < 0.02
    # entropy amplifies the probability error near the simplex edges: 0.05 nats
    assert np.mean(np.abs(pred.aleatoric - _entropy(pi_test))) < 0.05
    small = make_classifier("logreg-lap", prior_precision=0.5, n_samples=400).fit(X[:100], y[:100])
    eu_small = small.predict(X_test).epistemic.mean()
    assert pred.epistemic.mean() < 0.2 * eu_small  # ~1/n shrinkage: 30× the data


def test_gpc_probabilities_agree_with_sklearn() -> None:
    X, y, _ = _toy(80, 3)
    X_test, _, _ = _toy(30, 4)
    for K in (2, 3):
        yy = np.minimum(y, K - 1)
        method = make_classifier("gpc-lap", n_samples=4000).fit(X, yy, n_classes=K)
        Xs = (X_test - method.x_loc_) / method.x_scale_
        ref = method.gpc_.predict_proba(Xs)
        got = method.predict(X_test).probs
        assert np.max(np.abs(got - ref)) < (0.02 if K == 2 else 0.05), K


def test_catboost_matches_its_total_uncertainty() -> None:
    X, y, _ = _toy(300, 5)
    X_test, _, _ = _toy(40, 6)
    method = make_classifier("catboost-ve", iterations=200, depth=4).fit(X, y)
    pred = method.predict(X_test)
    tu = np.asarray(
        method.model_.virtual_ensembles_predict(
            X_test, prediction_type="TotalUncertainty", virtual_ensembles_count=method._count()
        )
    )
    # CatBoost's columns: data uncertainty E H(π_v), total uncertainty H(π̄)
    np.testing.assert_allclose(pred.aleatoric, tu[:, 0], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(pred.aleatoric + pred.epistemic, tu[:, 1], rtol=1e-6, atol=1e-9)


def test_nn_ensemble_learns_the_toy() -> None:
    X, y, _ = _toy(1000, 7)
    X_test, _, pi_test = _toy(300, 8)
    method = make_classifier("nn-ens-softmax", smoke=True, n_epochs=60).fit(X, y)
    pred = method.predict(X_test)
    agree = np.mean(pred.probs.argmax(axis=1) == pi_test.argmax(axis=1))
    assert agree > 0.9, agree
    assert np.mean(np.abs(pred.probs - pi_test)) < 0.08


def test_ngboost_bag_tracks_label_noise_and_disagrees_between_the_blobs() -> None:
    """ngboost-cat-bag on the label-noise blobs of test_nn_classifiers.py (n = 400, 8 members,
    smoke boosting). Measured AU near / h(ρ) = 1.08 (ρ = 0.05), 0.91 (ρ = 0.2); EU in the gap
    between the blobs / EU near = 1.6, 1.3 (1.2–3.9 over random_state 0–2 at n = 300). Trees
    are not distance-aware (a far point falls in an edge leaf), so EU is checked in the gap,
    where the members' split thresholds differ. Tolerances: AU within 25 % of h(ρ), AU(0.2) >
    1.8·AU(0.05), EU gap > 1.15 × near, probabilities on the simplex."""

    def _blobs(n: int, rho: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(seed)
        c = rng.integers(0, 2, n)
        X = rng.normal(size=(n, 2)) * 0.5
        X[:, 0] += np.where(c == 0, -3.0, 3.0)
        return X, np.where(rng.random(n) < rho, 1 - c, c)

    def _h(r: float) -> float:
        return float(-(r * np.log(r) + (1 - r) * np.log(1 - r)))

    X_NEAR = _blobs(200, 0.0, 99)[0]
    gap = np.c_[np.linspace(-1.5, 1.5, 50), np.zeros(50)]
    au = {}
    for rho in (0.05, 0.2):
        X, y = _blobs(400, rho, 1)
        method = make_classifier("ngboost-cat-bag", smoke=True, n_classifiers=8)
        method.fit(X, y, n_classes=2)
        near, between = method.predict(X_NEAR), method.predict(gap)
        np.testing.assert_allclose(between.probs.sum(axis=1), 1.0, atol=1e-12)
        au[rho] = float(near.aleatoric.mean())
        assert abs(au[rho] - _h(rho)) < 0.25 * _h(rho), (rho, au[rho], _h(rho))
        assert between.epistemic.mean() > 1.15 * near.epistemic.mean(), rho
    assert au[0.2] > 1.8 * au[0.05], au


def test_gpc_lap_counts_bound_hyperparameters_instead_of_warning() -> None:
    """Labels that are a step in x0 alone: the two other length scales and the constant
    end at their upper bounds in each of the 3 one-vs-rest problems (3 × 3 library warnings),
    which the fit counts rather than prints (the quickstart printed dozens of them)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 0] > 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        method = make_classifier("gpc-lap", smoke=True).fit(X, y, n_classes=3)
    assert not [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert method.n_at_bound_ == 9
    one_class = make_classifier("gpc-lap", smoke=True).fit(X, np.zeros(60, int), n_classes=3)
    assert one_class.n_at_bound_ == 0
