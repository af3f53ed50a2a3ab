"""NN-Ens (deep ensemble on the shared backbone): sanity, aggregation, determinism, errors."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _ml_toy import heteroscedastic, noise_var
from scipy.stats import spearmanr

from udbench._validation import UdbenchError
from udbench.methods.nn_ens import NNEnsemble

# smoke architecture with enough epochs to learn the noise level; seeded (random_state=0)
PARAMS = {**NNEnsemble.smoke_params, "n_epochs": 60}


@pytest.fixture(scope="module")
def fitted() -> NNEnsemble:
    X, y = heteroscedastic(n=300)
    return NNEnsemble(**PARAMS, random_state=0).fit(X, y)


def test_aleatoric_tracks_true_noise_variance(fitted: NNEnsemble) -> None:
    x = np.linspace(0.0, 1.0, 101)
    pred = fitted.predict(x[:, None])
    rho = spearmanr(pred.aleatoric, noise_var(x)).statistic
    assert rho > 0.6, f"Spearman rho(AU, sigma^2) = {rho:.3f} (random_state=0)"
    # level: mean AU within a factor 2 of the mean true noise variance (0.1008)
    assert 0.5 < pred.aleatoric.mean() / noise_var(x).mean() < 2.0


def test_training_loss_decreases(fitted: NNEnsemble) -> None:
    h = fitted.history_
    assert h.shape == (3, 60)
    assert np.all(h[:, -5:].mean(1) < h[:, :5].mean(1) - 0.3), h[:, [0, -1]]


def test_epistemic_larger_far_from_training_inputs(fitted: NNEnsemble) -> None:
    inside = fitted.predict(np.linspace(0.1, 0.9, 50)[:, None]).epistemic
    far = fitted.predict(np.array([[-2.0], [3.0], [4.0]])).epistemic
    assert far.min() > 10 * np.median(inside), (far, np.median(inside))


def test_prediction_aggregates_members_in_target_units(fitted: NNEnsemble) -> None:
    X = np.array([[0.1], [0.5], [0.9], [2.0]])
    pred = fitted.predict(X)
    means, variances = fitted._predict_members(X)
    loc, s = fitted.y_loc_, fitted.y_scale_
    assert means.shape == (3, 4)
    np.testing.assert_allclose(pred.mean, loc + s * means.mean(0), rtol=1e-12)
    np.testing.assert_allclose(pred.aleatoric, s**2 * variances.mean(0), rtol=1e-12)
    np.testing.assert_allclose(pred.epistemic, s**2 * means.var(0, ddof=0), rtol=1e-12)


def test_same_random_state_same_bytes_other_state_differs(fitted: NNEnsemble) -> None:
    X, y = heteroscedastic(n=300)
    Xq = np.linspace(0, 1, 7)[:, None]
    again = NNEnsemble(**PARAMS, random_state=0).fit(X, y).predict(Xq)
    ref = fitted.predict(Xq)
    assert again.mean.tobytes() == ref.mean.tobytes()
    assert again.epistemic.tobytes() == ref.epistemic.tobytes()
    other = NNEnsemble(**PARAMS, random_state=1).fit(X, y).predict(Xq)
    assert not np.allclose(other.mean, ref.mean)


def test_float64_is_scoped_and_history_recorded() -> None:
    X, y = heteroscedastic(n=40)
    m = NNEnsemble(n_members=2, hidden_dim=4, n_blocks=1, n_epochs=2, batch_size=16)
    m.set_params(dtype="float64").fit(X, y)
    assert m.params_["head"]["w"].dtype == np.float64
    assert not jax.config.jax_enable_x64  # switched on only inside fit/predict
    assert m.predict(X[:3]).mean.dtype == np.float64
    assert m.history_.shape == (2, 2)
    assert m.get_params()["dtype"] == "float64"


@pytest.mark.parametrize(
    ("param", "value"),
    [("hidden_dim", 0), ("n_members", 2.5), ("dropout", 1.0), ("activation", "sigmoidal")],
)
def test_bad_hyperparameter_names_parameter_and_value(param: str, value: object) -> None:
    X, y = heteroscedastic(n=20)
    with pytest.raises(UdbenchError, match=f"NNEnsemble: parameter '{param}' must .*got"):
        NNEnsemble(**{param: value}).fit(X, y)
