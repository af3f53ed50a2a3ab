"""Per-instance classifier metrics (udbench.evaluation.classification), hand-computed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.evaluation.classification import (
    classification_instance_metrics,
    expected_calibration_error,
    label_metrics,
)
from udbench.risk import classification_oracle_targets

PROBS = np.array([[0.93, 0.07], [0.62, 0.38], [0.26, 0.74], [0.57, 0.43]])
LABELS = np.array([0, 1, 1, 0])


def test_label_metrics_by_hand() -> None:
    out = label_metrics(PROBS, LABELS)
    assert out["accuracy"] == 0.75  # rows 0, 2, 3 right
    nll = -(math.log(0.93) + math.log(0.38) + math.log(0.74) + math.log(0.57)) / 4
    assert out["nll"] == pytest.approx(nll, rel=1e-14)
    brier = (2 * 0.07**2 + 2 * 0.62**2 + 2 * 0.26**2 + 2 * 0.43**2) / 4
    assert out["brier"] == pytest.approx(brier, rel=1e-14)


def test_ece_by_hand() -> None:
    """Confidences 0.93 (right), 0.62 (wrong), 0.74 (right), 0.57 (right) fall in four
    different bins of 10: ECE = (|1−0.93| + |0−0.62| + |1−0.74| + |1−0.57|)/4."""
    ece = expected_calibration_error(PROBS, LABELS, n_bins=10)
    assert ece == pytest.approx((0.07 + 0.62 + 0.26 + 0.43) / 4, rel=1e-13)
    # one bin: |accuracy − mean confidence|
    one = expected_calibration_error(PROBS, LABELS, n_bins=1)
    assert one == pytest.approx(abs(0.75 - (0.93 + 0.62 + 0.74 + 0.57) / 4), rel=1e-13)
    # a perfectly calibrated hard classifier
    assert expected_calibration_error(np.eye(3), np.arange(3)) == 0.0


def test_instance_metrics_on_oracle_uncertainty() -> None:
    """A method reporting AU*, EU*_var as its AU, EU ranks them perfectly: ρ = 1, Δ_ent = 0."""
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((200, 30, 3)) * rng.uniform(0.2, 3.0, size=(1, 30, 1))
    logits += rng.standard_normal((1, 30, 3)) * 2
    draws = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
    pbar = draws.mean(axis=0)
    star = draws[7]
    t = classification_oracle_targets(draws, pbar, star)
    labels = rng.integers(0, 3, size=30)
    out = classification_instance_metrics(pbar, t.au, t.eu_var, t, labels)
    assert out["rho_au"] == pytest.approx(1.0)
    assert out["rho_eu_var"] == pytest.approx(1.0)
    assert out["rho_eu_risk"] == pytest.approx(1.0)  # gap 0: EU*_risk = EU*_var
    assert out["delta_ent_var"] == pytest.approx(0.0, abs=1e-12)
    assert out["accuracy"] == pytest.approx(np.mean(pbar.argmax(1) == labels))
    assert out["accuracy_bayes"] == pytest.approx(np.mean(star.argmax(1) == labels))
    assert out["loss"] == "multiclass_log" and out["nan_reasons"] == ""
    flagged = classification_instance_metrics(
        pbar, np.ones(30), t.eu_var, t, labels, constant_aleatoric=True
    )
    assert math.isnan(flagged["rho_au"]) and "constant" in flagged["nan_reasons"]


@pytest.mark.parametrize(
    ("probs", "labels", "match"),
    [
        (PROBS, np.array([0, 1, 2, 0]), "labels"),
        (PROBS, np.array([0.0, 1.0, 1.0, 0.0]), "labels"),
        (PROBS * 1.1, LABELS, "probs"),
        (-PROBS, LABELS, "probs"),
    ],
)
def test_bad_input_one_line_errors(probs, labels, match: str) -> None:
    with pytest.raises(UdbenchError, match=match) as info:
        label_metrics(probs, labels)
    assert "\n" not in str(info.value)
