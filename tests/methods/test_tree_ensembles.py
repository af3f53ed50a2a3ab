"""NGBoost-Bag and CatBoost-PS: sanity on heteroscedastic data, aggregation, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from _ml_toy import heteroscedastic, noise_var
from scipy.stats import spearmanr

from udbench._seeding import make_rng
from udbench._validation import UdbenchError
from udbench.methods._ensemble import bagging_rows
from udbench.methods.base import BaseMethod
from udbench.methods.catboost_ps import CatBoostPS
from udbench.methods.ngboost_bag import NGBoostBag

METHODS = [NGBoostBag, CatBoostPS]
X_GRID = np.linspace(0.0, 1.0, 101)[:, None]


@pytest.fixture(scope="module", params=METHODS, ids=lambda c: c.name)
def fitted(request: pytest.FixtureRequest) -> BaseMethod:
    X, y = heteroscedastic(n=300)
    return request.param(**request.param.smoke_params, random_state=0).fit(X, y)


def test_aleatoric_tracks_true_noise_variance(fitted: BaseMethod) -> None:
    pred = fitted.predict(X_GRID)
    rho = spearmanr(pred.aleatoric, noise_var(X_GRID[:, 0])).statistic
    assert rho > 0.6, f"{fitted.name}: Spearman rho(AU, sigma^2) = {rho:.3f} (random_state=0)"


def test_aleatoric_is_a_variance_not_a_standard_deviation(fitted: BaseMethod) -> None:
    """Homoscedastic noise SD 0.5: mean AU near 0.25 (an SD would read near 0.5)."""
    rng = make_rng("tests", "methods", "homoscedastic")
    x = rng.uniform(size=400)
    y = np.sin(4 * x) + 0.5 * rng.standard_normal(400)
    m = type(fitted)(**type(fitted).smoke_params).fit(x[:, None], y)
    au = m.predict(X_GRID).aleatoric.mean()
    assert 0.15 < au < 0.35, au


def test_prediction_aggregates_members_in_target_units(fitted: BaseMethod) -> None:
    pred = fitted.predict(X_GRID[:5])
    means, variances = fitted._predict_members(X_GRID[:5])  # type: ignore[attr-defined]
    assert means.shape == (3, 5)
    assert not np.allclose(means[0], means[1])  # members differ
    loc, s = fitted.y_loc_, fitted.y_scale_
    np.testing.assert_allclose(pred.mean, loc + s * means.mean(0), rtol=1e-12)
    np.testing.assert_allclose(pred.aleatoric, s**2 * variances.mean(0), rtol=1e-12)
    np.testing.assert_allclose(pred.epistemic, s**2 * means.var(0), rtol=1e-12)
    assert np.all(pred.epistemic > 0)


def test_same_random_state_same_bytes(fitted: BaseMethod) -> None:
    X, y = heteroscedastic(n=300)
    cls = type(fitted)
    again = cls(**cls.smoke_params, random_state=0).fit(X, y).predict(X_GRID)
    ref = fitted.predict(X_GRID)
    assert again.mean.tobytes() == ref.mean.tobytes()
    assert again.aleatoric.tobytes() == ref.aleatoric.tobytes()
    other = cls(**cls.smoke_params, random_state=1).fit(X, y).predict(X_GRID)
    assert not np.allclose(other.mean, ref.mean)


def test_unstandardised_members_report_target_units(fitted: BaseMethod) -> None:
    """standardize_y=False fits members in target units; outputs stay in target units."""
    X, y = heteroscedastic(n=300)
    cls = type(fitted)
    pred = cls(**cls.smoke_params, standardize_y=False).fit(X, 10.0 * y + 5.0).predict(X_GRID)
    ref = fitted.predict(X_GRID)
    # same data up to units: the fitted function agrees to a fraction of the noise SD
    assert np.sqrt(np.mean((pred.mean - (10 * ref.mean + 5)) ** 2)) < 10 * 0.2
    assert 0.5 < pred.aleatoric.mean() / (100 * ref.aleatoric.mean()) < 2.0


@pytest.mark.parametrize("cls", METHODS, ids=lambda c: c.name)
def test_constant_target_gives_that_constant_and_zero_variances(cls: type[BaseMethod]) -> None:
    X = np.linspace(0, 1, 20)[:, None]
    pred = cls(**cls.smoke_params).fit(X, np.full(20, 3.0)).predict(X[:4])
    np.testing.assert_array_equal(pred.mean, 3.0)
    np.testing.assert_array_equal(pred.aleatoric + pred.epistemic, 0.0)


def test_ngboost_epistemic_larger_in_a_gap_of_the_training_inputs() -> None:
    rng = make_rng("tests", "methods", "gap")
    x = np.concatenate([rng.uniform(0.0, 0.4, 150), rng.uniform(0.6, 1.0, 150)])
    y = np.sin(4 * x) + 0.5 * rng.standard_normal(300)
    pred = NGBoostBag(**NGBoostBag.smoke_params).fit(x[:, None], y).predict(X_GRID)
    gap = pred.epistemic[45:56].mean()
    inside = np.concatenate([pred.epistemic[10:31], pred.epistemic[70:91]]).mean()
    assert gap > 2 * inside, (gap, inside)


def test_bagging_rows_sizes_and_replacement() -> None:
    rng = np.random.default_rng(0)
    rows = bagging_rows(100, 0.775, False, rng)
    assert rows.size == 77 and np.unique(rows).size == 77
    boot = bagging_rows(1000, 0.8, True, rng)
    assert boot.size == 800
    # bootstrap of 800 from 1000: expected distinct fraction 1 - exp(-0.8) = 0.551
    assert abs(np.unique(boot).size / 1000 - (1 - np.exp(-0.8))) < 0.05


@pytest.mark.parametrize(
    ("cls", "param", "value"),
    [
        (NGBoostBag, "sample_fraction", 1.5),
        (NGBoostBag, "n_regressors", 0),
        (NGBoostBag, "replace", "yes"),
        (CatBoostPS, "bagging_frac", 0.0),
        (CatBoostPS, "thread_count", 0),
        (CatBoostPS, "random_state", -1),
    ],
)
def test_bad_hyperparameter_names_parameter_and_value(
    cls: type[BaseMethod], param: str, value: object
) -> None:
    X, y = heteroscedastic(n=20)
    with pytest.raises(UdbenchError, match=f"{cls.__name__}: parameter '{param}' must .*got"):
        cls(**{param: value}).fit(X, y)


def test_outputs_follow_an_affine_change_of_target_units(fitted: BaseMethod) -> None:
    """y -> 100 y - 50 maps the mean the same way and the variances by 1e4 (rtol 1e-6)."""
    X, y = heteroscedastic(n=300)
    cls = type(fitted)
    moved = cls(**cls.smoke_params, random_state=0).fit(X, 100.0 * y - 50.0).predict(X_GRID)
    ref = fitted.predict(X_GRID)
    np.testing.assert_allclose(moved.mean, 100.0 * ref.mean - 50.0, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(moved.aleatoric, 1e4 * ref.aleatoric, rtol=1e-6)
    np.testing.assert_allclose(moved.epistemic, 1e4 * ref.epistemic, rtol=1e-6)
