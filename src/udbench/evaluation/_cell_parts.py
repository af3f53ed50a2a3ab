"""Small helpers shared by the cell evaluators (:mod:`udbench.evaluation.cell` and
:mod:`udbench.evaluation.classification_cell`): timestamps, one-line errors, the stage an
error came from."""

from __future__ import annotations

from datetime import UTC, datetime


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _one_line(err: BaseException, *, with_type: bool = True) -> str:
    text = " ".join(str(err).split())
    if not with_type:
        return text or type(err).__name__
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


class _Stage(Exception):
    """Wraps an error with the stage (fit/predict) it came from."""

    def __init__(self, stage: str, err: BaseException) -> None:
        super().__init__(stage)
        self.stage = stage
        self.err = err
