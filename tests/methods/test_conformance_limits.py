"""The conformance battery ends on a hanging method, and rejects bad inputs before running
(issue 11 #7)."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.methods import BaseMethod, Prediction, check_method

RELEASE = threading.Event()


class Hangs(BaseMethod):
    """Valid, except that ``fit`` waits until the test releases it (at most 60 s)."""

    name: ClassVar[str] = "hangs"
    family: ClassVar[str] = "other"
    constant_aleatoric: ClassVar[bool] = True
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {"level": {"type": "float"}}

    def __init__(self, level: float = 0.0, random_state: int | None = 0) -> None:
        self.level = level
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        RELEASE.wait(60.0)
        self.mean_ = float(np.mean(y))

    def _predict(self, X: np.ndarray) -> Prediction:
        n = X.shape[0]
        return Prediction(np.full(n, self.mean_), np.ones(n), np.full(n, 0.1))


@pytest.fixture
def release():
    RELEASE.clear()
    yield
    RELEASE.set()  # let the abandoned check thread finish


def test_hanging_check_fails_with_timeout_and_the_rest_are_skipped(release) -> None:
    report = check_method(
        Hangs, checks=("clone", "fit_returns_self", "determinism", "clone"), timeout=0.2
    )
    assert [r.status for r in report.results] == ["passed", "failed", "skipped", "skipped"]
    assert report.results[1].message == "timeout: the check did not finish within 0.2 s"
    assert "'fit_returns_self' timed out" in report.results[2].message
    assert not report.ok and report.n_failed == 1


def test_a_check_within_the_limit_passes(release) -> None:
    RELEASE.set()
    report = check_method(Hangs, checks=("fit_returns_self", "determinism"), timeout=60)
    assert report.ok and report.n_passed == 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"random_state": -1}, "parameter 'random_state' must be an integer >= 0; got -1"),
        ({"random_state": 1.5}, "parameter 'random_state'"),
        ({"timeout": 0}, "parameter 'timeout' must be a number of seconds"),
        ({"timeout": float("nan")}, "parameter 'timeout'"),
        ({"params": {"alpha_1": -1.0}}, "'alpha_1'"),
        ({"params": {"no_such": 1}}, "no_such"),
    ],
)
def test_bad_inputs_are_one_error_not_failed_checks(kwargs, match) -> None:
    with pytest.raises(UdbenchError, match=match):
        check_method("blr", **kwargs)


def test_method_with_invalid_defaults_is_reported_by_the_battery() -> None:
    class BadDefault(Hangs):
        def __init__(self, level: float = float("nan"), random_state: int | None = 0) -> None:
            super().__init__(level, random_state)

    BadDefault.param_constraints = {"level": {"type": "float", "low": 0.0}}
    report = check_method(BadDefault, checks=("hyperparameter_declarations",), timeout=30)
    assert report.results[0].status == "failed"  # the method's fault, not the caller's


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["--random-state", "-1"], "'--random-state'"),
        (["--timeout", "0"], "'--timeout'"),
        (["--timeout", "-5"], "'--timeout'"),
        (["--timeout", "1e308"], "'--timeout'"),  # overflowed the timers: OverflowError
        (["--params", "alpha_1=-1"], "alpha_1"),
    ],
)
def test_cli_check_method_bad_options_exit_2(capsys, args, what) -> None:
    assert main(["check-method", "blr", *args]) == 2
    err = capsys.readouterr().err
    assert what in err and len(err.strip().splitlines()) <= 2 and "passed" not in err
