"""Intermediate values during a fit: the hook that pruned tuning listens to.

An *iterative* method (boosting iterations, training epochs, optimiser steps, members of a
bag) declares the hyperparameter that counts its steps (``progress_param`` on the class,
e.g. ``"n_epochs"``) and, while a :class:`ProgressReporter` is active (:func:`reporting`),
stops at the reporter's checkpoints to hand it a prediction function for the model as
trained so far. The reporter scores it (tuning: the held-out Gaussian NLL of SPEC §9) and
may end the fit by raising :class:`TrainingStopped` (tuning: Optuna's pruner said so). With
no reporter active nothing changes: methods take their ordinary code path.

The reporter is held in a :mod:`contextvars` variable, so it is seen by the fit running in
the thread that installed it and by no other.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import numpy as np

__all__ = ["ProgressReporter", "TrainingStopped", "current_reporter", "reporting"]


class TrainingStopped(Exception):
    """Raised by a reporter to end a fit early (a pruned tuning trial).

    Attributes
    ----------
    step : int
        The step at which the fit was stopped.
    """

    def __init__(self, step: int) -> None:
        super().__init__(f"training stopped at step {step}")
        self.step = int(step)


class ProgressReporter(Protocol):
    """What an iterative method reports to while it fits."""

    def checkpoints(self, total: int) -> tuple[int, ...]:
        """Steps in [1, total) after which the method should report (sorted)."""
        ...

    def report(self, step: int, predict: Callable[[np.ndarray], Any]) -> None:
        """Score the model after ``step`` steps; ``predict(X)`` returns its
        :class:`~udbench.methods.base.Prediction` at raw inputs X (n, d), target units.
        May raise :class:`TrainingStopped`."""
        ...


_CURRENT: contextvars.ContextVar[ProgressReporter | None] = contextvars.ContextVar(
    "udbench_progress_reporter", default=None
)


def current_reporter() -> ProgressReporter | None:
    """The active reporter of this thread, or None."""
    return _CURRENT.get()


@contextmanager
def reporting(reporter: ProgressReporter | None) -> Iterator[None]:
    """Make ``reporter`` the active reporter inside the block (None: none)."""
    token = _CURRENT.set(reporter)
    try:
        yield
    finally:
        _CURRENT.reset(token)
