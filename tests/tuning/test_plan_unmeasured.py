"""``udbench.tuning.plan.unmeasured``: the unmeasured figures that hold a study's ``--yes``."""

from __future__ import annotations

from udbench.tuning.plan import PlanRow, unmeasured


def _row(stage: str, key: str, count: int, hours: float | None) -> PlanRow:
    med = None if hours is None else 3600.0 * hours / max(count, 1)
    return PlanRow(stage, key, count, 0 if hours is None else 3, med, hours, ["concrete"])


def test_unmeasured_keeps_work_left_without_a_figure_except_gp_generation() -> None:
    rows = [
        _row("generate", "gp", 24, None),  # seconds per instance: never holds a study back
        _row("generate", "bnn", 24, None),  # MCMC generation: does
        _row("run", "nn-lap", 24, None),
        _row("run", "nn-lap+sn", 0, None),  # nothing left to do
        _row("run", "gp", 24, 0.2),  # measured
        _row("tune", "nn-fsp+sn", 3, None),
    ]
    assert unmeasured(rows) == ["generate bnn", "run nn-lap", "tune nn-fsp+sn"]
    assert unmeasured([]) == []
