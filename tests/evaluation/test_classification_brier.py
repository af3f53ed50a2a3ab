"""The Brier-score columns of a classification row (issue 37, item 3), by hand.

:func:`udbench.evaluation.classification_cell.brier_metrics` on hand-made arrays with K = 2,
where the Brier terms have short closed forms in p = π_0 alone (‖π − e_y‖² summed over two
classes): AU* = mean_d 2 p_d (1 − p_d), EU*_var = mean_d 2 (p_d − p̄)², the deployment gap
2 (p̄ − q)², EU*_point = 2 (p* − q)², q = π̂_0.
"""

from __future__ import annotations

import numpy as np
import pytest

from udbench.evaluation.classification_cell import (
    BRIER_METRIC_KEYS,
    CLASSIFICATION_METRIC_KEYS,
    brier_metrics,
)
from udbench.evaluation.losses import LOSS_METRIC_KEYS
from udbench.evaluation.metrics import spearman
from udbench.methods.classification import ClassPrediction

N, D = 14, 60


def _two_class_problem(seed: int = 3) -> tuple[np.ndarray, np.ndarray, ClassPrediction, np.ndarray]:
    rng = np.random.default_rng(seed)
    centre = rng.uniform(0.1, 0.9, size=N)
    p = np.clip(centre + rng.normal(scale=0.05 + 0.15 * rng.uniform(size=N), size=(D, N)), 0, 1)
    draws = np.stack([p, 1.0 - p], axis=-1)  # (D, N, 2)
    p_star = np.clip(centre + rng.normal(scale=0.05, size=N), 0, 1)
    q = np.clip(centre + rng.normal(scale=0.1, size=N), 0.01, 0.99)
    au, eu = rng.uniform(0.1, 0.7, size=N), rng.uniform(0.0, 0.3, size=N)
    pred = ClassPrediction(np.stack([q, 1.0 - q], axis=1), au, eu)
    shell = np.repeat([0, 1, 2, 4], [6, 4, 2, 2])  # shells 2 and 4 under 3 points; 3 empty
    return draws, np.stack([p_star, 1.0 - p_star], axis=1), pred, shell


def test_the_brier_columns_are_the_regression_loss_columns_with_a_brier_suffix() -> None:
    assert BRIER_METRIC_KEYS == tuple(f"{k}_brier" for k in LOSS_METRIC_KEYS)
    n = len(BRIER_METRIC_KEYS)
    assert CLASSIFICATION_METRIC_KEYS[-n:] == BRIER_METRIC_KEYS
    assert (
        "rho_eu_risk_brier" in BRIER_METRIC_KEYS and "rho_eu_var_shell4_brier" in BRIER_METRIC_KEYS
    )


def test_k2_brier_columns_equal_the_closed_forms() -> None:
    draws, pi_star, pred, shell = _two_class_problem()
    got, notes = brier_metrics(pred, draws, pi_star, shell)
    assert set(got) == set(BRIER_METRIC_KEYS) and notes == []
    p, q = draws[..., 0], pred.probs[:, 0]
    pbar = p.mean(axis=0)
    au_star = (2 * p * (1 - p)).mean(axis=0)
    var = (2 * (p - pbar) ** 2).mean(axis=0)
    star = {"risk": var + 2 * (pbar - q) ** 2, "var": var, "point": 2 * (pi_star[:, 0] - q) ** 2}
    eu, au = pred.epistemic, pred.aleatoric
    assert got["rho_au_brier"] == pytest.approx(spearman(au, au_star).value, abs=1e-12)
    assert got["rho_eu_au_brier"] == pytest.approx(spearman(eu, au).value, abs=1e-12)
    for t, s in star.items():
        rho_star = spearman(s, au_star).value
        assert got[f"rho_eu_{t}_brier"] == pytest.approx(spearman(eu, s).value, abs=1e-12)
        assert got[f"rho_eu_au_star_{t}_brier"] == pytest.approx(rho_star, abs=1e-12)
        want = spearman(eu, au).value - rho_star
        assert got[f"delta_ent_{t}_brier"] == pytest.approx(want, abs=1e-12)
    for t in ("risk", "var"):
        for s, m in ((0, shell == 0), (1, shell == 1)):
            want = spearman(eu[m], star[t][m]).value
            assert got[f"rho_eu_{t}_shell{s}_brier"] == pytest.approx(want, abs=1e-12)
        for s in (2, 3, 4):  # under 3 points
            assert np.isnan(got[f"rho_eu_{t}_shell{s}_brier"])


def test_a_constant_au_is_flagged_in_the_brier_columns_too() -> None:
    draws, pi_star, pred, shell = _two_class_problem(seed=4)
    got, notes = brier_metrics(pred, draws, pi_star, shell, constant_aleatoric=True)
    for key in ("rho_au_brier", "delta_ent_risk_brier", "rho_eu_au_brier"):
        assert np.isnan(got[key])
        assert any(n.startswith(f"{key}: ") and "constant" in n for n in notes), notes
    assert np.isfinite(got["rho_eu_risk_brier"])
