"""ngboost-cat-bag's categorical distribution: exact natural gradient, bounded logits (issue 38).

The clf-small preview lost 2 of 8 ngboost-cat-bag cells to scikit-learn's "Input y contains
NaN": NGBoost solves F x = g for the natural gradient; once a training point's logits reach
several hundred, the other classes' probabilities are subnormal, F is singular in float64 and
NGBoost's pseudo-inverse fallback returns NaN, the next tree's targets.
"""

from __future__ import annotations

import numpy as np
import pytest
from ngboost.distns import k_categorical
from ngboost.manifold import manifold
from ngboost.scores import LogScore

from udbench._validation import UdbenchError
from udbench.methods import ngboost_cat_bag
from udbench.methods.ngboost_cat_bag import (
    LOGIT_BOUND,
    NGBoostCatBag,
    categorical_natural_gradient,
    ngboost_classifier,
)

#: A member's state at the first NaN of a reproduction (toy data below, random_state 1,
#: member 1, boosting iteration 246): free logits (θ_1, θ_2) and the observed class.
SATURATED = (np.array([[3.97505973], [713.31674397]]), np.array([2]))


def _stock(n_classes: int, params: np.ndarray) -> object:
    return manifold(LogScore, k_categorical(n_classes))(params)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_the_closed_form_is_ngboosts_natural_gradient_where_it_is_well_conditioned(k):
    rng = np.random.default_rng(k)
    theta, y = rng.normal(scale=3.0, size=(k - 1, 40)), rng.integers(0, k, 40)
    stock = _stock(k, theta).grad(y, natural=True)  # NGBoost: solve with the Fisher matrix
    got = categorical_natural_gradient(theta, y)
    scale = np.maximum(1.0, np.abs(stock).max(axis=1, keepdims=True))  # solve's rounding
    assert np.max(np.abs(got - stock) / scale) < 1e-10  # (exact zeros here, 1e-16 there)
    assert np.all(got[y > 0, :][np.arange((y > 0).sum()), y[y > 0] - 1] < 0)


def test_clipped_coordinates_get_the_natural_gradient_of_the_clipped_model():
    rng = np.random.default_rng(0)
    theta, y = rng.normal(scale=2.0, size=(2, 30)), rng.integers(0, 3, 30)
    theta[0, :10], theta[1, 10:20] = 150.0, -150.0  # beyond L = 100
    stock = _stock(3, np.clip(theta, -LOGIT_BOUND, LOGIT_BOUND))
    fisher, grad = stock.metric(), stock.d_score(y)
    want = np.zeros_like(grad)
    for i in range(30):  # solve on the free coordinates only, 0 on the clipped ones
        s = np.flatnonzero(np.abs(theta[:, i]) < LOGIT_BOUND)
        want[i, s] = np.linalg.solve(fisher[i][np.ix_(s, s)], grad[i, s])
    got = categorical_natural_gradient(theta, y)
    scale = np.maximum(1.0, np.abs(want).max(axis=1, keepdims=True))
    assert np.max(np.abs(got - want) / scale) < 1e-10
    assert np.all(want[:10, 0] == 0.0) and np.all(want[10:20, 1] == 0.0)


def test_the_saturated_state_of_the_failure_has_a_finite_gradient():
    params, y = SATURATED
    with np.errstate(all="ignore"):
        assert np.isnan(_stock(3, params).grad(y, natural=True)).all()  # the cause, stock
    member = ngboost_classifier(3, NGBoostCatBag(), seed=0)
    got = manifold(LogScore, member.Dist)(params).grad(y, natural=True)
    # θ_2 = 713 is clipped to L: no gradient; θ_1 free, y = 2 not free: 1/r, r = p_0 + p_2
    z = np.array([0.0, 3.97505973, LOGIT_BOUND])
    p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    np.testing.assert_allclose(got, [[1.0 / (p[0] + p[2]), 0.0]], rtol=1e-15)
    probs = member.Dist(params).class_probs()  # the probabilities of the clipped logits
    np.testing.assert_allclose(probs, p[None], rtol=1e-12)


def _toy(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """200 points in 8-D, π*(x) = softmax(0, 3x_0, 3x_1): a reproduction of the NaN."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(200, 8))
    logits = np.stack([np.zeros(200), 3 * X[:, 0], 3 * X[:, 1]], axis=1)
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return X, np.array([rng.choice(3, p=pi) for pi in p])


@pytest.mark.slow
def test_the_default_configuration_fits_where_ngboost_gave_nan():
    """Untuned defaults, 2 members (member 1 raised "Input y contains NaN" before, measured;
    random_state 2 and 8 of 0–9 too, 3 members); about 10 s."""
    X, y = _toy(1)
    method = NGBoostCatBag(n_classifiers=2, random_state=1).fit(X, y)
    pred = method.predict(X[:20])
    assert np.all(np.isfinite(pred.probs)) and np.all(np.isfinite(pred.epistemic))
    np.testing.assert_allclose(pred.probs.sum(axis=1), 1.0, atol=1e-12)


def test_a_member_whose_gradient_is_not_finite_is_a_udbench_error(monkeypatch):
    X, y = _toy(0)

    def broken(params, y, bound=LOGIT_BOUND):
        return np.full((len(y), params.shape[0]), np.nan)

    monkeypatch.setattr(ngboost_cat_bag, "categorical_natural_gradient", broken)
    method = NGBoostCatBag(n_estimators=2, n_classifiers=2, random_state=0)
    with pytest.raises(UdbenchError, match=r"ngboost-cat-bag: member 0 of 2 failed to fit"):
        method.fit(X, y)
