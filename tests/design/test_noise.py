"""Noise models (SPEC §4): level, shapes, value-based variance, errors."""

from __future__ import annotations

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.data import load_covariates
from udbench.design import NOISE_MODES, NoiseModel


@pytest.fixture(scope="module")
def cov():
    """The embedded default: available everywhere, no data folder needed."""
    return load_covariates("diabetes")


@pytest.mark.parametrize("mode", NOISE_MODES)
@pytest.mark.parametrize(("strength", "rho"), [(1.0, None), (0.5, 0.1), (2.0, 3.0)])
def test_mean_variance_over_pool_is_rho(cov, mode, strength, rho):
    model = NoiseModel(cov, mode, strength=strength, rho=rho)
    var = model.variance(cov.X_eval)
    target = cov.spec.rho if rho is None else rho
    assert abs(var.mean() - target) < 1e-10
    log_sd = np.log(var).std()
    # h has SD 1 over the pool, so log σ² has SD s (0 when homoscedastic)
    assert abs(log_sd - (0.0 if mode == "homoscedastic" else strength)) < 1e-10


def test_shapes_follow_the_noise_score(cov):
    z = cov.z[cov.eval_idx]
    smooth = np.log(NoiseModel(cov, "smooth-monotone").variance(cov.X_eval))
    slope = np.polyfit(z, smooth, 1)[0]
    np.testing.assert_allclose(slope, 1.0 / z.std(), rtol=1e-10)  # s=1, h = (z − z̄)/sd
    u = np.log(NoiseModel(cov, "u-shaped").variance(cov.X_eval))
    np.testing.assert_allclose(np.polyfit(z**2, u, 1)[0], 1.0 / (z**2).std(), rtol=1e-10)
    # step: two levels; ratio e^{s/sqrt(p(1-p))} with p the share of z > 0 in the pool
    step = NoiseModel(cov, "step", strength=0.7).variance(cov.X_eval)
    p = (z > 0).mean()
    hi, lo = step[z > 0], step[z <= 0]
    np.testing.assert_allclose(hi, hi[0], rtol=1e-12)
    np.testing.assert_allclose(lo, lo[0], rtol=1e-12)
    np.testing.assert_allclose(hi[0] / lo[0], np.exp(0.7 / np.sqrt(p * (1 - p))), rtol=1e-12)


@pytest.mark.parametrize("mode", NOISE_MODES)
def test_variance_depends_only_on_x(cov, mode):
    model = NoiseModel(cov, mode)
    full = model.variance(cov.X)
    rng = np.random.default_rng(3)
    # bitwise, for every row alone and in other batches (the step mode cuts at z = 0)
    for _ in range(3):
        rows = rng.choice(cov.n_rows, size=17, replace=True)
        assert model.variance(cov.X[rows]).tobytes() == full[rows].tobytes()
    for i in range(cov.n_rows):
        assert model.variance(cov.X[i : i + 1]).tobytes() == full[i : i + 1].tobytes()
    assert model.variance(np.asfortranarray(cov.X)).tobytes() == full.tobytes()
    again = NoiseModel(cov, mode).variance(cov.X)
    assert again.tobytes() == full.tobytes()


def test_bad_noise_arguments(cov):
    with pytest.raises(UdbenchError, match=r"NoiseModel: parameter 'mode' must be one of .*'wavy'"):
        NoiseModel(cov, "wavy")
    with pytest.raises(UdbenchError, match=r"parameter 'rho' must be > 0; got 0"):
        NoiseModel(cov, "step", rho=0)
    with pytest.raises(UdbenchError, match=r"parameter 'rho' must be > 0; got -0.3"):
        NoiseModel(cov, "step", rho=-0.3)
    with pytest.raises(UdbenchError, match=r"parameter 'strength' must be >= 0; got -1"):
        NoiseModel(cov, "step", strength=-1)


def test_modes_are_one_table_of_spec_shapes(cov):
    from udbench.design import NOISE_MODE_TABLE

    # the grid (SPEC §4, '--noise all') is the table's in-grid rows; student-t is extra
    assert tuple(m.name for m in NOISE_MODE_TABLE if m.in_grid) == NOISE_MODES
    assert NOISE_MODES == ("homoscedastic", "smooth-monotone", "u-shaped", "step")
    z = np.array([-1.5, 0.0, 2.0])
    spec_shapes = {  # SPEC §4 table, shape before standardisation
        "homoscedastic": None,
        "smooth-monotone": [-1.5, 0.0, 2.0],
        "u-shaped": [2.25, 0.0, 4.0],
        "step": [0.0, 0.0, 1.0],
        "student-t": [-1.5, 0.0, 2.0],  # the variance of smooth-monotone (issue 21)
    }
    for row in NOISE_MODE_TABLE:
        assert row.description
        if spec_shapes[row.name] is None:
            assert row.shape is None
            continue
        np.testing.assert_array_equal(row.shape(z), spec_shapes[row.name])
        # the model is the row's shape standardised over the pool (hand-computed here)
        model = NoiseModel(cov, row.name, strength=0.8)
        raw = row.shape(cov.z[cov.eval_idx])
        h = (raw - raw.mean()) / raw.std()
        want = model.level + 0.8 * h
        np.testing.assert_allclose(np.log(model.variance(cov.X_eval)), want, rtol=0, atol=1e-12)


def test_noise_model_pickles(cov):
    import pickle

    for mode in NOISE_MODES:
        model = NoiseModel(cov, mode)
        again = pickle.loads(pickle.dumps(model))
        np.testing.assert_array_equal(again.variance(cov.X_eval), model.variance(cov.X_eval))
