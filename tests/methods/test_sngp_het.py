"""SNGP-Het (paper C.2): the precision of β, EU in a gap, AU tracking noise, SN, errors."""

from __future__ import annotations

import numpy as np
import pytest
from _ml_toy import heteroscedastic, noise_var
from scipy.stats import spearmanr

from udbench._seeding import make_rng
from udbench._validation import UdbenchError
from udbench.methods.sngp_het import SNGPHet

PARAMS = {**SNGPHet.smoke_params, "n_epochs": 60}  # enough steps to learn the noise


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    return heteroscedastic(n=300)


@pytest.fixture(scope="module")
def fitted(data) -> SNGPHet:
    return SNGPHet(**PARAMS, random_state=0).fit(*data)


def test_precision_is_the_papers_equation_computed_densely(fitted, data) -> None:
    """Σ⁻¹ = λI + Σᵢ φᵢφᵢᵀ/σ²(xᵢ), and EU = φᵀΣφ by a dense inverse (1e-8)."""
    X = data[0]
    phi, _, var = fitted._outputs((X - fitted.x_loc_) / fitted.x_scale_)
    assert phi.shape == (300, PARAMS["rff_dim"])
    dense = fitted.ridge * np.eye(phi.shape[1])
    for i in range(phi.shape[0]):
        dense += np.outer(phi[i], phi[i]) / var[i]
    np.testing.assert_allclose(fitted.precision_, dense, rtol=1e-10, atol=1e-12)
    Xq = np.array([[0.1], [0.5], [1.5]])
    pq, _, _ = fitted._outputs((Xq - fitted.x_loc_) / fitted.x_scale_)
    eu = np.einsum("ij,jk,ik->i", pq, np.linalg.inv(dense), pq) * fitted.y_scale_**2
    np.testing.assert_allclose(fitted.predict(Xq).epistemic, eu, rtol=1e-8)
    # random features: √(2/D)·cos(·), so φᵀφ averages to 1
    assert 0.8 < float(np.mean((phi**2).sum(1))) < 1.2


def test_aleatoric_tracks_noise_growing_in_x(fitted) -> None:
    x = np.linspace(0.0, 1.0, 101)
    pred = fitted.predict(x[:, None])
    rho = spearmanr(pred.aleatoric, noise_var(x)).statistic
    assert rho > 0.5, f"Spearman rho(AU, sigma^2) = {rho:.3f} (random_state=0)"


def test_eu_in_an_input_gap_exceeds_eu_inside() -> None:
    rng = make_rng("tests", "sngp", "gap")
    x = np.concatenate([rng.uniform(0.0, 0.3, 100), rng.uniform(0.7, 1.0, 100)])
    y = np.sin(4 * x) + 0.1 * rng.standard_normal(200)
    m = SNGPHet(**PARAMS, random_state=0).fit(x[:, None], y)
    inside = m.predict(
        np.concatenate([np.linspace(0.05, 0.25, 20), np.linspace(0.75, 0.95, 20)])[:, None]
    )
    gap = m.predict(np.linspace(0.45, 0.55, 11)[:, None])
    assert np.median(gap.epistemic) > 2 * np.median(inside.epistemic), (
        np.median(gap.epistemic),
        np.median(inside.epistemic),
    )


def test_backbone_is_spectrally_normalised(fitted) -> None:
    assert fitted.model_config_.spectral_norm and fitted.spectral_norm is True
    for w in [fitted.params_["input"]["w"][0]] + [
        b[k][0] for b in fitted.params_["blocks"] for k in ("w1", "w2")
    ]:
        assert np.linalg.svd(np.asarray(w), compute_uv=False)[0] <= fitted.sn_coeff * 1.01


def test_same_random_state_same_bytes(fitted, data) -> None:
    again = SNGPHet(**PARAMS, random_state=0).fit(*data).predict(data[0][:7])
    ref = fitted.predict(data[0][:7])
    assert again.epistemic.tobytes() == ref.epistemic.tobytes()
    assert again.mean.tobytes() == ref.mean.tobytes()


@pytest.mark.parametrize(("param", "value"), [("rff_dim", 0), ("ridge", -1.0), ("sn_coeff", 0.0)])
def test_bad_hyperparameter_names_parameter(param, value) -> None:
    X, y = heteroscedastic(n=20)
    with pytest.raises(UdbenchError, match=f"SNGPHet: parameter '{param}' must .*got"):
        SNGPHet(**{param: value}).fit(X, y)
