"""The known temperature of classification tasks (udbench.design.temperature), on diabetes."""

from __future__ import annotations

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.data import load_covariates
from udbench.design import NOISE_MODES
from udbench.design.temperature import TemperatureModel
from udbench.priors.gp_classification import DIFFICULTIES, expected_bayes_error_curve


@pytest.fixture(scope="module")
def cov():
    return load_covariates("diabetes")


def _sd(cov) -> np.ndarray:
    # a latent SD that varies over the pool, as with a kernel that has a linear part
    return 1.0 + 0.3 * cov.X[cov.eval_idx, 0]


@pytest.mark.parametrize("mode", NOISE_MODES)
def test_level_rule_and_strength(cov, mode: str) -> None:
    X_pool = cov.X[cov.eval_idx]
    for name, target in DIFFICULTIES.items():
        tm = TemperatureModel(cov, mode, _sd(cov), 3, name)
        r = _sd(cov) / tm.temperature(X_pool)
        assert abs(expected_bayes_error_curve(r, 3).mean() - target) < 1e-8
        assert tm.pool_bayes_error == pytest.approx(target * (1 - 1 / 3), rel=1e-6)
        log_t2 = 2 * tm.log_temperature(X_pool)
        expected_sd = 0.0 if mode == "homoscedastic" else 1.0  # s = SD of log τ² (default 1)
        assert np.std(log_t2) == pytest.approx(expected_sd, abs=1e-12)
    # a harder task is hotter everywhere
    easy = TemperatureModel(cov, mode, _sd(cov), 3, "easy").temperature(X_pool)
    hard = TemperatureModel(cov, mode, _sd(cov), 3, "hard").temperature(X_pool)
    assert np.all(hard > easy)


def test_temperature_is_a_function_of_each_row(cov) -> None:
    tm = TemperatureModel(cov, "u-shaped", _sd(cov), 2, 0.25, strength=0.5)
    X = cov.X[:50]
    np.testing.assert_array_equal(tm.temperature(X)[10:20], tm.temperature(X[10:20]))
    assert tm.settings()["difficulty"] == 0.25 and tm.settings()["n_classes"] == 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mode": "student-t"}, "mode"),
        ({"difficulty": "impossible"}, "difficulty"),
        ({"difficulty": 1.5}, "difficulty"),
        ({"n_classes": 1}, "n_classes"),
        ({"strength": -1.0}, "strength"),
        ({"latent_sd": np.zeros(3)}, "latent_sd"),
    ],
)
def test_bad_input_one_line_errors(cov, kwargs: dict, match: str) -> None:
    args = {"mode": "step", "latent_sd": _sd(cov)}
    args.update(kwargs)
    with pytest.raises(UdbenchError, match=match) as info:
        TemperatureModel(cov, **args)
    assert "\n" not in str(info.value)
