"""Oracle targets of SPEC §1, checked against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.risk import oracle_targets, squared_loss_decomposition_gaussian


def test_oracle_targets_hand_values():
    # â = [1, 0], m = [0.5, 0], σ_f² = [0.2, 1], σ² = [0.1, 0.3], f* = [2, -1]
    t = oracle_targets([1.0, 0.0], [0.5, 0.0], [0.2, 1.0], [0.1, 0.3], [2.0, -1.0])
    np.testing.assert_allclose(t.au, [0.1, 0.3])
    np.testing.assert_allclose(t.eu_var, [0.2, 1.0])
    np.testing.assert_allclose(t.eu_risk, [0.2 + 0.25, 1.0])
    np.testing.assert_allclose(t.eu_point, [1.0, 1.0])
    np.testing.assert_allclose(t.total_risk, [0.55, 1.3])
    assert t.n == 2
    dec = squared_loss_decomposition_gaussian([0.5, 0.0], [0.2, 1.0], [0.1, 0.3], [1.0, 0.0])
    np.testing.assert_allclose(t.total_risk, dec.total, rtol=1e-15)
    np.testing.assert_allclose(t.eu_risk, dec.eu, rtol=1e-15)


def test_eu_point_averages_to_eu_risk_when_f_star_is_a_posterior_draw():
    # f* ~ N(m, σ_f²) ⇒ E (â − f*)² = σ_f² + (â − m)²; 200000 draws, tolerance 5 SE
    rng = np.random.default_rng(0)
    m, v, a = 0.3, 0.7, 1.1
    f_star = m + np.sqrt(v) * rng.standard_normal(200_000)
    k = f_star.size
    t = oracle_targets(np.full(k, a), np.full(k, m), np.full(k, v), np.full(k, 0.5), f_star)
    se = t.eu_point.std() / np.sqrt(k)
    assert abs(t.eu_point.mean() - t.eu_risk[0]) < 5 * se


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"post_mean": [0.0]}, "post_mean"),
        ({"post_var": [-1.0, 1.0]}, "post_var"),
        ({"noise_var": [np.nan, 1.0]}, "noise_var"),
        ({"f_star": [0.0, np.inf]}, "f_star"),
        ({"pred_mean": [[0.0, 1.0]]}, "pred_mean"),
    ],
)
def test_oracle_targets_bad_input(kwargs, argument):
    args = {
        "pred_mean": [0.0, 1.0],
        "post_mean": [0.0, 1.0],
        "post_var": [1.0, 1.0],
        "noise_var": [1.0, 1.0],
        "f_star": [0.0, 1.0],
    }
    args.update(kwargs)
    with pytest.raises(UdbenchError, match=f"oracle_targets: parameter '{argument}'"):
        oracle_targets(**args)
