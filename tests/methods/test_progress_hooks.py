"""Iterative methods report intermediate predictions to an active reporter (pruned tuning,
issue 35): at the reporter's checkpoints, in target units, and without changing the fit."""

from __future__ import annotations

import numpy as np
import pytest

from udbench.methods import make_method
from udbench.methods._progress import TrainingStopped, current_reporter, reporting
from udbench.methods.registry import get_method_class

REPORTING = {
    # method: (smoke overrides, checkpoints asked for, bit-for-bit equal without a reporter)
    "ngboost-bag": ({"n_regressors": 3}, (1, 2), True),
    "ngboost-nig": ({}, (5, 20), True),
    "catboost-ps": ({"n_regressors": 3, "iterations": 20}, (1, 2), True),
    "dkl": ({}, (10, 30), True),  # optimiser steps (smoke: 60)
    "nn-ens": ({}, (5, 10), False),
    "nn-bag": ({}, (5, 10), False),
    "nn-drop": ({}, (5, 10), False),
    "nn-edl": ({}, (5, 10), False),
}


#: Kept in the default suite (fast); the others run with ``-m slow``.
FAST = ("ngboost-bag", "ngboost-nig", "nn-ens")
CASES = [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in sorted(REPORTING)]


class Recorder:
    """Reports: step -> the intermediate prediction at ``X``; stops at ``stop_at``."""

    def __init__(self, X: np.ndarray, steps: tuple[int, ...], stop_at: int | None = None):
        self.X, self.steps, self.stop_at = X, steps, stop_at
        self.seen: dict[int, object] = {}
        self.asked: list[int] = []

    def checkpoints(self, total: int) -> tuple[int, ...]:
        self.asked.append(total)
        return tuple(s for s in self.steps if s < total)

    def report(self, step: int, predict) -> None:
        self.seen[step] = predict(self.X).validate(self.X.shape[0])
        if step == self.stop_at:
            raise TrainingStopped(step)


def _data():
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(60, 3))
    y = 10.0 + 4.0 * (np.sin(3 * X[:, 0]) + 0.2 * rng.normal(size=60))  # not standardised
    return X, y, rng.uniform(size=(25, 3))


def _method(name: str, overrides: dict, dtype: str | None = None):
    params = {**get_method_class(name).smoke_params, **overrides}
    if dtype is not None:
        params["dtype"] = dtype
    return make_method(name, random_state=3, **params)


@pytest.mark.parametrize("name", CASES)
def test_an_iterative_method_reports_at_the_checkpoints_without_changing_its_fit(name):
    overrides, steps, bitwise = REPORTING[name]
    X, y, Xe = _data()
    dtypes = [None] if bitwise else ["float64", "float32"]
    for dtype in dtypes:
        plain = _method(name, overrides, dtype).fit(X, y).predict(Xe)
        rec = Recorder(Xe, steps)
        with reporting(rec):
            reported = _method(name, overrides, dtype).fit(X, y).predict(Xe)
        est = _method(name, overrides, dtype)
        assert rec.asked == [int(getattr(est, type(est).progress_param))]
        assert sorted(rec.seen) == list(steps)
        # an intermediate prediction is in target units (the targets are around 10, SD ~ 3)
        for pred in rec.seen.values():
            assert 5.0 < float(np.mean(pred.mean)) < 15.0
        for field in ("mean", "aleatoric", "epistemic"):
            a, b = getattr(plain, field), getattr(reported, field)
            if bitwise:
                np.testing.assert_array_equal(a, b)
            else:  # one epoch per call with run-time hyperparameters: rounding only
                rtol = 1e-9 if dtype == "float64" else 1e-3
                np.testing.assert_allclose(b, a, rtol=rtol, atol=rtol * float(np.max(np.abs(a))))


@pytest.mark.parametrize("name", CASES)
def test_a_reporter_can_stop_the_fit(name):
    overrides, steps, _ = REPORTING[name]
    X, y, Xe = _data()
    rec = Recorder(Xe, steps, stop_at=steps[0])
    with reporting(rec), pytest.raises(TrainingStopped) as stopped:
        _method(name, overrides).fit(X, y)
    assert stopped.value.step == steps[0] and list(rec.seen) == [steps[0]]
    assert current_reporter() is None  # the context is left


def test_a_method_without_progress_param_asks_no_reporter():
    X, y, Xe = _data()
    rec = Recorder(Xe, (1, 2))
    with reporting(rec):
        make_method("blr").fit(X, y)
    assert rec.asked == [] and rec.seen == {}
