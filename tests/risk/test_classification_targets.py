"""Oracle targets of classifiers (udbench.risk.classification_oracle_targets).

Hand-made posteriors with closed-form values (entropies and divergences written out with
``math.log``), the K = 2 case against binary formulas, the exact zero gap of π̂ = π̄, and
one-line errors for bad input.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.risk import classification_oracle_targets


def _h(p: list[float]) -> float:
    return -sum(x * math.log(x) for x in p if x > 0)


def _kl(p: list[float], q: list[float]) -> float:
    return sum(a * math.log(a / b) for a, b in zip(p, q, strict=True) if a > 0)


# one point, two equally weighted draws
P1, P2 = [0.5, 0.3, 0.2], [0.9, 0.05, 0.05]
PBAR = [(a + b) / 2 for a, b in zip(P1, P2, strict=True)]  # [0.7, 0.175, 0.125]
PHAT = [0.6, 0.25, 0.15]
PSTAR = [0.8, 0.1, 0.1]
DRAWS = np.array([[P1], [P2]])  # (D=2, n=1, K=3)


def test_log_loss_targets_closed_form() -> None:
    t = classification_oracle_targets(DRAWS, np.array([PHAT]), np.array([PSTAR]))
    au = (_h(P1) + _h(P2)) / 2
    mi = (_kl(P1, PBAR) + _kl(P2, PBAR)) / 2
    gap = _kl(PBAR, PHAT)
    assert t.loss == "multiclass_log"
    assert t.au[0] == pytest.approx(au, rel=1e-14)
    assert t.eu_var[0] == pytest.approx(mi, rel=1e-13)
    assert t.eu_var[0] == pytest.approx(_h(PBAR) - au, rel=1e-12)  # I(Y;F) = H(π̄) − E H(π)
    assert t.deployment_gap[0] == pytest.approx(gap, rel=1e-13)
    assert t.eu_risk[0] == pytest.approx(mi + gap, rel=1e-13)
    assert t.eu_point[0] == pytest.approx(_kl(PSTAR, PHAT), rel=1e-13)
    cross_entropy = -sum(a * math.log(b) for a, b in zip(PBAR, PHAT, strict=True))
    assert t.total_risk[0] == pytest.approx(cross_entropy, rel=1e-14)
    assert t.total_risk[0] == pytest.approx(t.au[0] + t.eu_risk[0], rel=1e-13)


def test_brier_targets_closed_form() -> None:
    t = classification_oracle_targets(DRAWS, np.array([PHAT]), np.array([PSTAR]), loss="brier")

    def sq(p: list[float], q: list[float]) -> float:
        return sum((a - b) ** 2 for a, b in zip(p, q, strict=True))

    au = (1 - sq(P1, [0, 0, 0]) + 1 - sq(P2, [0, 0, 0])) / 2
    gv = (sq(P1, PBAR) + sq(P2, PBAR)) / 2
    assert t.au[0] == pytest.approx(au, rel=1e-14)
    assert t.eu_var[0] == pytest.approx(gv, rel=1e-13)
    assert t.deployment_gap[0] == pytest.approx(sq(PBAR, PHAT), rel=1e-13)
    assert t.eu_point[0] == pytest.approx(sq(PSTAR, PHAT), rel=1e-13)
    # total: E_{Y ~ π̄} ‖π̂ − e_Y‖²
    total = sum(PBAR[k] * sq(PHAT, [float(j == k) for j in range(3)]) for k in range(3))
    assert t.total_risk[0] == pytest.approx(total, rel=1e-13)


def test_two_classes_agree_with_binary_formulas() -> None:
    """K = 2: entropies and KLs of Bernoulli(p) written with p alone; Brier = 2(p − q)²."""
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.95, size=(50, 4))  # (D, n) P(class 1)
    q = rng.uniform(0.05, 0.95, size=4)
    s = rng.uniform(0.05, 0.95, size=4)
    draws = np.stack([1 - p, p], axis=-1)

    def hb(x: np.ndarray) -> np.ndarray:
        return -(x * np.log(x) + (1 - x) * np.log(1 - x))

    def klb(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a * np.log(a / b) + (1 - a) * np.log((1 - a) / (1 - b))

    pbar = p.mean(axis=0)
    two = np.stack([1 - q, q], axis=-1)
    star = np.stack([1 - s, s], axis=-1)
    t = classification_oracle_targets(draws, two, star)
    np.testing.assert_allclose(t.au, hb(p).mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(t.eu_var, hb(pbar) - hb(p).mean(axis=0), rtol=1e-9)
    np.testing.assert_allclose(t.deployment_gap, klb(pbar, q), rtol=1e-10)
    np.testing.assert_allclose(t.eu_point, klb(s, q), rtol=1e-10)
    b = classification_oracle_targets(draws, two, star, loss="brier")
    np.testing.assert_allclose(b.au, (2 * p * (1 - p)).mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(b.eu_var, 2 * ((p - pbar) ** 2).mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(b.deployment_gap, 2 * (pbar - q) ** 2, rtol=1e-10)
    np.testing.assert_allclose(b.eu_point, 2 * (s - q) ** 2, rtol=1e-10)


def test_posterior_mean_prediction_has_zero_gap_exactly() -> None:
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((100, 6, 4))
    draws = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
    pbar = draws.mean(axis=0)
    for loss in ("multiclass_log", "brier"):
        t = classification_oracle_targets(draws, pbar, draws[0], loss=loss)
        assert np.all(t.deployment_gap == 0.0)
        assert np.array_equal(t.eu_risk, t.eu_var)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pred_probs": np.array([[0.6, 0.3, 0.2]])}, "pred_probs"),  # sums to 1.1
        ({"pred_probs": np.array([[1.2, -0.1, -0.1]])}, "pred_probs"),  # negative
        ({"pred_probs": np.array([[1.0, 0.0, 0.0]])}, "pred_probs"),  # zero under log loss
        ({"pi_star": np.array([[0.5, 0.5, 0.5]])}, "pi_star"),
        ({"loss": "hinge"}, "loss"),
    ],
)
def test_bad_input_one_line_errors(kwargs: dict, match: str) -> None:
    args = {"prob_draws": DRAWS, "pred_probs": np.array([PHAT]), "pi_star": np.array([PSTAR])}
    args.update(kwargs)
    with pytest.raises(UdbenchError, match=match) as info:
        classification_oracle_targets(**args)
    assert "\n" not in str(info.value)
