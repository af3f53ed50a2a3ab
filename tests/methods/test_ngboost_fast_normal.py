"""``FastNormal``: ngboost's Normal without a SciPy frozen distribution per object, same bits."""

from __future__ import annotations

import numpy as np
import pytest
from _ml_toy import assert_patch_keeps_bits
from scipy.stats import norm

from udbench.methods import _ngboost
from udbench.methods._ngboost import FrozenNormal


def test_frozen_normal_gives_scipys_frozen_values_bit_for_bit() -> None:
    rng = np.random.default_rng(3)
    loc, scale = rng.normal(size=50), np.exp(rng.normal(size=50))
    x, q = rng.normal(size=50) * 3, rng.uniform(size=50)
    ours, theirs = FrozenNormal(loc, scale), norm(loc=loc, scale=scale)
    for name in ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"):
        np.testing.assert_array_equal(getattr(ours, name)(x), getattr(theirs, name)(x))
    np.testing.assert_array_equal(ours.ppf(q), theirs.ppf(q))
    for name in ("mean", "var", "std", "median", "entropy"):
        np.testing.assert_array_equal(getattr(ours, name)(), getattr(theirs, name)())
    np.testing.assert_array_equal(ours.interval(0.9)[1], theirs.interval(0.9)[1])
    np.testing.assert_array_equal(
        ours.rvs(random_state=np.random.default_rng(1)),
        theirs.rvs(random_state=np.random.default_rng(1)),
    )
    assert "logpdf" in dir(ours)
    with pytest.raises(AttributeError):
        ours.no_such_method  # noqa: B018


def test_ngboost_bag_with_fast_normal_is_bitwise_the_stock_normal(monkeypatch) -> None:
    from ngboost.distns import Normal

    from udbench.methods import make_method

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(60, 3))
    y = np.sin(3 * X[:, 0]) + 0.2 * rng.normal(size=60)
    Xe = rng.uniform(size=(40, 3))
    spec = "ngboost-bag:n_regressors=2,n_estimators=25,max_depth=2"
    assert make_method(spec).fit(X, y).members_[0].Dist.__name__ == "FastNormal"
    assert_patch_keeps_bits(monkeypatch, spec, _ngboost, "FastNormal", Normal, X, y, Xe)


def test_a_fitted_ngboost_bag_with_fast_normal_pickles() -> None:
    import pickle

    from udbench.methods import make_method

    rng = np.random.default_rng(1)
    X, y = rng.uniform(size=(40, 2)), rng.normal(size=40)
    est = make_method("ngboost-bag:n_regressors=1,n_estimators=5,max_depth=2").fit(X, y)
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.predict(X).mean, est.predict(X).mean)
    obj = _ngboost.FastNormal(np.array([[0.0, 1.0], [0.0, 0.5]]))
    copy = pickle.loads(pickle.dumps(obj))
    np.testing.assert_array_equal(copy.scale, obj.scale)
