"""Local distance preservation (paper D.4): Spearman ρ of d_in and d_feat over k = 10 neighbours."""

from __future__ import annotations

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.methods.nn import distance_preservation, local_distance_preservation
from udbench.methods.nn.distance import member_features
from udbench.methods.nn_ens import NNEnsemble


def _points(n: int = 300, d: int = 2, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, d))


def test_identity_and_isometries_preserve_distances_exactly() -> None:
    X = _points()
    assert local_distance_preservation(X, X) == pytest.approx(1.0, abs=1e-12)
    theta = 0.7
    R = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    assert local_distance_preservation(X, 3.0 * X @ R + 5.0) == pytest.approx(1.0, abs=1e-12)
    # an embedding into more dimensions (zero-padded) keeps every distance
    H = np.concatenate([X, np.zeros((len(X), 5))], axis=1)
    assert local_distance_preservation(X, H) == pytest.approx(1.0, abs=1e-12)


def test_folding_maps_lower_the_measure() -> None:
    X = _points()
    fold = local_distance_preservation(X, np.abs(X))  # folds both axes at 0: 0.94
    many = local_distance_preservation(X, np.sin(12.0 * X))  # a fold every ~0.26: 0.60
    finer = local_distance_preservation(X, np.sin(40.0 * X))  # folds finer than k-NN: -0.04
    noise = local_distance_preservation(X, np.random.default_rng(1).normal(size=X.shape))
    assert finer < many < fold < 1.0
    assert many < 0.8 and abs(finer) < 0.2 and abs(noise) < 0.2  # no order left: ~0
    # a 1-D fold: points near the crease see neighbours from the other side at distance ~0
    x = np.linspace(-1, 1, 201)[:, None]
    assert local_distance_preservation(x, np.abs(x)) < 1.0


def test_neighbours_exclude_the_point_itself_also_with_duplicates() -> None:
    X = np.repeat(_points(50), 2, axis=0)  # every point twice
    assert local_distance_preservation(X, 2.0 * X) == pytest.approx(1.0, abs=1e-12)


def test_bad_input_names_the_parameter() -> None:
    X = _points(20)
    with pytest.raises(UdbenchError, match="'k' must be an int in"):
        local_distance_preservation(X, X, k=20)
    with pytest.raises(UdbenchError, match="'H' must have 20 rows"):
        local_distance_preservation(X, X[:5])
    with pytest.raises(UdbenchError, match="'H' must vary within some neighbourhood"):
        local_distance_preservation(X, np.zeros((20, 3)))
    with pytest.raises(UdbenchError, match="'method' must be a fitted neural method"):
        distance_preservation(NNEnsemble(), X)


def test_fitted_network_is_measured_in_its_standardised_input_space() -> None:
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(80, 2)) * np.array([1.0, 100.0])  # very different column scales
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.standard_normal(80)
    m = NNEnsemble(n_members=2, hidden_dim=8, n_blocks=1, n_epochs=5, batch_size=32).fit(X, y)
    Xs = (X - m.x_loc_) / m.x_scale_
    H = member_features(m.params_, Xs, m.model_config_)
    assert H.shape == (2, 80, 8)
    expected = np.mean([local_distance_preservation(Xs, h, 10) for h in H])
    assert distance_preservation(m, X) == pytest.approx(expected, rel=1e-12)
    assert -1.0 <= expected <= 1.0
    with pytest.raises(UdbenchError, match="'X' must have 2 columns"):
        distance_preservation(m, X[:, :1])
