"""The ground layer's L-BFGS-B driver (:mod:`udbench._optim`), shared by GP prior and methods."""

from __future__ import annotations

import numpy as np
import pytest

from udbench._optim import LBFGSBObjective
from udbench.priors.gp import fit


def test_the_gp_prior_fit_re_exports_the_ground_driver() -> None:
    assert fit.LBFGSBObjective is LBFGSBObjective


def test_lbfgsb_objective_finds_a_quadratic_minimum_and_keeps_the_best_point() -> None:
    # f(x) = ½ (x − c)ᵀ A (x − c): minimum c, value 0
    A = np.array([[3.0, 1.0], [1.0, 2.0]])
    c = np.array([0.3, -0.7])
    calls: list[np.ndarray] = []

    def value_and_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
        calls.append(np.array(x))
        r = x - c
        return 0.5 * r @ A @ r, A @ r

    x0 = np.array([2.0, 2.0])
    obj = LBFGSBObjective(value_and_grad, penalty=lambda best: best + 1.0, x0=x0)
    res = obj.minimize(x0, [(None, None)] * 2, 100)
    np.testing.assert_allclose(res.x, c, atol=1e-6)
    assert obj.best_value == pytest.approx(0.0, abs=1e-10)
    np.testing.assert_allclose(obj.best_x, c, atol=1e-6)
    assert obj.best_x is not x0 and np.all(x0 == 2.0)  # the start is copied, not aliased


def test_lbfgsb_objective_penalises_a_non_finite_point_with_a_zero_gradient() -> None:
    def value_and_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
        if x[0] > 1.0:
            return np.nan, np.array([np.nan, 1.0])
        return float(x[0] ** 2), np.array([2 * x[0], 0.0])

    x0 = np.array([0.5, 0.0])
    obj = LBFGSBObjective(value_and_grad, penalty=lambda best: best + 10.0, x0=x0)
    # before any finite value the penalty sees inf; the best point is still the start
    v, g = obj(np.array([2.0, 0.0]))
    assert v == np.inf and np.array_equal(g, [0.0, 0.0])
    np.testing.assert_array_equal(obj.best_x, x0)
    assert obj(np.array([0.5, 0.0]))[0] == 0.25
    v, g = obj(np.array([3.0, 0.0]))
    assert v == 10.25 and g.dtype == np.float64 and np.array_equal(g, [0.0, 0.0])
    assert obj.best_value == 0.25
