"""The search-space check (issue 61, item 1): a knob that moves the held-out NLL by more than
the seed-to-seed spread matters; a knob made a no-op is caught."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from _fakes import make_fake_task
from udbench._validation import UdbenchError
from udbench.methods import BaseMethod, Prediction
from udbench.tuning.space_check import KnobEnds, knob_ends, search_space_check


class KnobbedRidge(BaseMethod):
    """Ridge regression with two knobs: ``alpha`` (the penalty: it matters), ``decay`` (a
    weight decay multiplied by zero, as an inert knob is: it does nothing), and a seed-driven
    jitter of the predicted mean of size ``jitter`` (the seed-to-seed spread)."""

    name = "knobbed-ridge"
    family = "linear"
    constant_aleatoric = True
    search_space: ClassVar[dict] = {
        "alpha": {"type": "float", "low": 1e-3, "high": 1e3, "log": True},
        "decay": {"type": "float", "low": 1e-6, "high": 1e-2, "log": True},
        "basis": {"type": "categorical", "choices": ["linear", "quadratic"]},
        "power": {"type": "float", "low": 0.5, "high": 2.0, "when": {"basis": "quadratic"}},
    }

    def __init__(self, alpha=1.0, decay=1e-4, basis="linear", power=1.0, jitter=0.01,
                 random_state=None) -> None:  # fmt: skip
        self.alpha, self.decay, self.basis, self.power = alpha, decay, basis, power
        self.jitter, self.random_state = jitter, random_state

    def _features(self, X: np.ndarray) -> np.ndarray:
        if self.basis == "quadratic":
            return np.hstack([X, np.abs(X) ** (2 * self.power)])
        return X

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        F = self._features(X)
        penalty = self.alpha * np.eye(F.shape[1]) + 0.0 * self.decay  # the no-op knob
        self.w_ = np.linalg.solve(F.T @ F + penalty, F.T @ y)
        self.au_ = float(np.mean((y - F @ self.w_) ** 2)) + 1e-3
        self.shift_ = float(np.random.default_rng(self.random_state).normal(0, self.jitter))

    def _predict(self, X: np.ndarray) -> Prediction:
        n = X.shape[0]
        return Prediction(
            self._features(X) @ self.w_ + self.shift_, np.full(n, self.au_), np.full(n, 1e-3)
        )


@pytest.fixture(scope="module")
def task_path(tmp_path_factory) -> str:
    task = make_fake_task(0, n_train=120)
    return str(task.save(tmp_path_factory.mktemp("space-check") / f"{task.spec.task_id}.npz"))


def test_knob_ends_of_numeric_categorical_and_conditional_entries() -> None:
    ends = knob_ends(KnobbedRidge.search_space)
    assert ends["alpha"] == KnobEnds(1e-3, 1e3, {})
    assert ends["basis"] == KnobEnds("linear", "quadratic", {})
    assert ends["power"] == KnobEnds(0.5, 2.0, {"basis": "quadratic"})
    one = {"k": {"type": "int", "low": 3, "high": 3}, "c": {"type": "categorical", "choices": [1]}}
    assert knob_ends(one) == {}  # nothing to move


def test_a_no_op_knob_is_caught_and_real_knobs_pass(task_path) -> None:
    table = search_space_check(KnobbedRidge(), task_path, seeds=(0, 1, 2)).set_index("param")
    assert list(table.index) == ["alpha", "decay", "basis", "power"]
    # the no-op: the same objective at both ends, seed for seed (effect exactly 0)
    assert table.loc["decay", "effect"] == 0.0 and not table.loc["decay", "matters"]
    assert (
        table.loc["alpha", "matters"]
        and table.loc["alpha", "effect"] > table.loc["alpha", "spread"]
    )
    assert table.loc["basis", "matters"] and table.loc["power", "matters"]
    assert table.loc["alpha", "spread"] > 0  # the seeds' jitter
    assert (table["error"] == "").all()
    # the spread is the range of the objective at the configuration as given over the seeds
    from udbench.tuning.objective import TrialJob, evaluate_trial

    vals = [
        evaluate_trial(TrialJob("k/s", 0, task_path, KnobbedRidge(), {}, seed=s)).value
        for s in (0, 1, 2)
    ]
    assert table.loc["alpha", "spread"] == pytest.approx(max(vals) - min(vals), rel=1e-12)
    assert table.loc["alpha", "nll_given"] == pytest.approx(np.mean(vals), rel=1e-12)


def test_a_knob_within_the_seed_spread_does_not_matter(task_path) -> None:
    """A large jitter drowns the penalty's effect over a narrow range: not a real effect."""
    est = KnobbedRidge(jitter=2.0)
    narrow = type("NarrowRidge", (KnobbedRidge,), {"search_space": {
        "alpha": {"type": "float", "low": 0.9, "high": 1.1}}})  # fmt: skip
    table = search_space_check(narrow(jitter=2.0), task_path, seeds=(0, 1, 2))
    assert not table.loc[0, "matters"] and table.loc[0, "effect"] < table.loc[0, "spread"]
    with pytest.raises(UdbenchError, match=r"parameter 'seeds' must hold at least 2 seeds"):
        search_space_check(est, task_path, seeds=(0,))
    with pytest.raises(UdbenchError, match=r"parameter 'params' must name entries"):
        search_space_check(est, task_path, params=["alphaa"])


def test_blrs_gamma_hyperprior_knobs_are_inert(task_path) -> None:
    """blr's search space (the Gamma hyperpriors of BayesianRidge over [1e-8, 1e-4]) moves its
    held-out NLL by far less than MIN_EFFECT: the check says so (a finding of issue 61)."""
    from udbench.methods import get_method_class
    from udbench.tuning.space_check import MIN_EFFECT

    table = search_space_check(get_method_class("blr")(), task_path, seeds=(0, 1))
    assert list(table["param"]) == ["alpha_1", "alpha_2", "lambda_1", "lambda_2"]
    assert (table["spread"] == 0.0).all()  # deterministic
    assert (table["effect"] < MIN_EFFECT / 100).all() and not table["matters"].any()
