"""Input standardisation has one home (BaseMethod): a relative floor, and a column constant in
training handled explicitly (replaced by 0 at fit and at prediction) for every method."""

from __future__ import annotations

import numpy as np
import pytest

from udbench.methods import make_method
from udbench.methods.base import INPUT_SCALE_RTOL, standardise_inputs


def _data(n: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 2))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    return X, y, rng.uniform(size=(12, 2))


def _near_constant(c: float, n: int = 40, seed: int = 1) -> np.ndarray:
    """c plus up to ±20 rounding units: 3.7 gives np.std ≈ 5e-15."""
    steps = np.random.default_rng(seed).integers(-20, 21, n)
    return c + steps * np.spacing(c)


def test_ordinary_columns_are_numpys_mean_and_sd_bit_for_bit():
    X = np.random.default_rng(2).normal(3.0, 2.0, size=(50, 4))
    loc, scale, constant = standardise_inputs(X)
    assert loc.tobytes() == X.mean(axis=0).tobytes()
    assert scale.tobytes() == X.std(axis=0).tobytes()
    assert not constant.any()


@pytest.mark.parametrize(
    ("column", "is_constant"),
    [
        (np.full(40, 3.7), True),
        (_near_constant(3.7), True),  # sd ≈ 5e-15 = 1.4e-15 · max|x|
        (np.full(40, 1e6 + 0.3), True),
        (_near_constant(1e6 + 0.3), True),
        (np.zeros(40), True),
        (3.7 + 1e-9 * np.random.default_rng(3).standard_normal(40), False),  # 2.7e-10 relative
        (1e-20 * np.random.default_rng(4).standard_normal(40), False),  # scale-free: tiny units
    ],
)
def test_relative_floor_decides_which_columns_are_constant(column, is_constant):
    loc, scale, constant = standardise_inputs(column[:, None])
    assert bool(constant[0]) is is_constant
    if is_constant:
        assert (loc[0], scale[0]) == (0.0, 1.0)
    else:
        assert scale[0] == np.std(column) and scale[0] > INPUT_SCALE_RTOL * np.max(np.abs(column))


def test_huge_inputs_do_not_overflow():
    u = np.random.default_rng(5).uniform(-1, 1, 30)
    loc, scale, constant = standardise_inputs((1e306 * u)[:, None])
    assert np.isfinite(loc).all() and np.isfinite(scale).all() and not constant[0]
    np.testing.assert_allclose(scale[0], 1e306 * np.std(u), rtol=1e-12)
    np.testing.assert_allclose(loc[0], 1e306 * np.mean(u), rtol=1e-10, atol=1e294)


@pytest.mark.parametrize("name", ["blr", "catboost-ps", "gp"])
@pytest.mark.parametrize("c", [3.7, 1e6 + 0.3])
def test_constant_column_is_ignored_as_if_absent(name, c):
    # The GP divided a column 3.7 ± rounding by its SD 5e-15 (median EU 3e12 at 3.8; 4.8e24 in
    # the example); BLR's EU grew with (x - c)². Now every method sees the column as 0:
    # bit for bit the outputs of a fit with an all-zero column, at any value of it.
    X, y, Xt = _data()
    method = make_method(name, random_state=0)
    method.set_params(**type(method).smoke_params)
    with_col = method.fit(np.column_stack([X, _near_constant(c)]), y)
    assert with_col.input_constant_.tolist() == [False, False, True]
    preds = [with_col.predict(np.column_stack([Xt, np.full(len(Xt), v)])) for v in (c, c + 1.0)]
    zero = make_method(name, random_state=0)
    zero.set_params(**type(zero).smoke_params)
    ref = zero.fit(np.column_stack([X, np.zeros(len(X))]), y).predict(
        np.column_stack([Xt, np.zeros(len(Xt))])
    )
    for pred in preds:
        for field in ("mean", "aleatoric", "epistemic"):
            assert getattr(pred, field).tobytes() == getattr(ref, field).tobytes(), field
    assert np.median(ref.epistemic) < np.var(y)  # sane: the column added nothing


def test_all_columns_constant_predicts_the_training_mean():
    _, y, _ = _data()
    method = make_method("gp", max_iter=50).fit(np.full((len(y), 2), 3.7), y)
    pred = method.predict(np.array([[3.7, 3.7], [5.0, -1.0]]))
    np.testing.assert_allclose(pred.mean, np.mean(y), atol=0.05 * np.std(y))
    assert pred.mean[0] == pred.mean[1] and pred.epistemic[0] == pred.epistemic[1]
    np.testing.assert_allclose(pred.total, np.var(y), rtol=0.25)
