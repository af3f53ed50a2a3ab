"""Hours of a plan in their own clock: CPU-hours and wall-clock hours, never mixed up.

A :class:`udbench.tuning.plan.PlanRow` holds hours of work in one of two clocks
(:attr:`~udbench.tuning.plan.PlanRow.clock`): CPU-hours (a calibrated row, or a row measured
in CPU seconds: a tuning campaign's sweep records, the runs campaign's cell records) or
wall-clock hours of one worker (a row measured in elapsed seconds: the cells of a results
folder, the trials of a ``udbench tune`` folder, generation logs). ``udbench plan`` and the
studies (``udbench study``) print and sum them with these helpers, so a wall-clock figure is
never called CPU time anywhere.

The studies' ``--yes`` gate compares :func:`gate_hours`, the CPU-hours **plus** the
wall-clock hours, with its threshold. A cell runs on one compute thread
(:mod:`udbench._threads`), so its elapsed time is at least its CPU time (more on a loaded
machine): counting a wall-clock hour as a CPU-hour brackets the work from above, and the gate
asks for ``--yes`` no later than it would with CPU seconds measured.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "duration_text",
    "gate_hours",
    "hours_text",
    "row_basis_text",
    "row_hours_text",
    "split_hours",
    "unmeasured",
]


def split_hours(rows: Iterable[Any]) -> tuple[float, float]:
    """The known hours of plan rows, summed per clock.

    Parameters
    ----------
    rows : iterable of PlanRow
        :func:`udbench.tuning.plan.plan_grid` (or ``remaining_rows``) output.

    Returns
    -------
    cpu_hours, wall_hours : float
        Sum over the rows in CPU time (calibrated or measured in CPU seconds), and over the
        rows measured in wall-clock seconds (``clock == "wall"``); unknown rows count in
        neither.
    """
    cpu = wall = 0.0
    for r in rows:
        if r.cpu_hours is None:
            continue
        if r.clock == "wall":
            wall += float(r.cpu_hours)
        else:
            cpu += float(r.cpu_hours)
    return cpu, wall


def gate_hours(cpu_hours: float, wall_hours: float) -> float:
    """The hours a ``--yes`` gate compares with its threshold: CPU-hours + wall-clock hours.

    Parameters
    ----------
    cpu_hours, wall_hours : float
        As :func:`split_hours`.

    Returns
    -------
    float
        Their sum: an upper bracket of the CPU work (a single-threaded cell's elapsed time
        is at least its CPU time; module docstring).
    """
    return float(cpu_hours) + float(wall_hours)


#: From this many hours on, a duration is also said in days.
DAYS_FROM_HOURS = 48.0


def _figures(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures, without exponent, with thousands
    separators."""
    rounded = float(f"{value:.{digits}g}")
    if rounded >= 100 or rounded.is_integer():
        return f"{rounded:,.0f}"
    return f"{rounded:g}"


def duration_text(hours: float, high: float | None = None, *, prefix: str = "") -> str:
    """A duration (or a range of them) for people: ``"1,510 h (≈ 63 days)"``, ``"12 min"``.

    Every duration ``udbench plan`` and the studies' projections print goes through this
    function.

    Parameters
    ----------
    hours : float
        The duration in hours (the low end of a range).
    high : float, optional
        The high end of a range; a range is shown only when its two ends, as printed,
        differ.
    prefix : str, default ""
        Put before the unit, e.g. ``"CPU-"`` for ``"CPU-h"``, ``"CPU-min"``.

    Returns
    -------
    str
        Three significant figures, never an exponent, in the unit of the larger end:
        seconds under a minute, minutes under an hour, hours otherwise, with the days (two
        figures) added in parentheses from :data:`DAYS_FROM_HOURS` hours on; ``"0 h"`` for
        zero.

    Examples
    --------
    >>> duration_text(1510.0, 1510.0)
    '1,510 h (≈ 63 days)'
    >>> duration_text(0.2, prefix="CPU-")
    '12 CPU-min'
    >>> duration_text(1.5, 3.25)
    '1.5–3.25 h'
    """
    low = float(hours)
    top = low if high is None else float(high)
    largest = max(abs(low), abs(top))
    # the unit of the larger end as printed (59.99 min is "1 h", not "60 min")
    if largest == 0 or float(f"{largest * 60:.3g}") >= 60:
        scale, unit = 1.0, "h"
    elif float(f"{largest * 3600:.3g}") >= 60:
        scale, unit = 60.0, "min"
    else:
        scale, unit = 3600.0, "s"

    def span(a: float, b: float, digits: int = 3) -> str:
        left, right = _figures(a, digits), _figures(b, digits)
        return left if left == right else f"{left}–{right}"

    text = f"{span(low * scale, top * scale)} {prefix}{unit}"
    if largest >= DAYS_FROM_HOURS:
        text += f" (≈ {span(low / 24, top / 24, 2)} {prefix}days)"
    return text


def hours_text(cpu: float, wall: float, n_unknown: int = 0) -> str:
    """``"1.2 CPU-h"``, with the hours measured as wall-clock time said apart (never CPU).

    Parameters
    ----------
    cpu, wall : float
        CPU-hours and wall-clock hours (:func:`split_hours`).
    n_unknown : int, default 0
        Rows with no figure, said as ``" + n unknown"``.

    Returns
    -------
    str
        E.g. ``"30 CPU-min + 1.5 h wall-clock (measured elapsed time, not CPU) + 2 unknown"``
        (each figure by :func:`duration_text`); ``"0 CPU-h"`` when both are zero.
    """
    parts = [duration_text(cpu, prefix="CPU-")] if cpu or not wall else []
    if wall:
        parts.append(f"{duration_text(wall)} wall-clock (measured elapsed time, not CPU)")
    return " + ".join(parts) + (f" + {n_unknown} unknown" if n_unknown else "")


def row_hours_text(row: Any) -> str:
    """A row's hours in its clock: ``"18 CPU-min"``, ``"1.5 h wall"`` or ``"unknown"``.

    Parameters
    ----------
    row : PlanRow

    Returns
    -------
    str
    """
    if row.cpu_hours is None:
        return "unknown"
    if row.clock == "wall":
        return f"{duration_text(row.cpu_hours)} wall"
    return duration_text(row.cpu_hours, prefix="CPU-")


def row_basis_text(row: Any) -> str:
    """Where a row's figure comes from: ``"measured CPU (12)"``, ``"measured wall (3)"``,
    ``"calibrated"`` or ``"unknown"`` (with the pruning ratio of a calibrated tune row).

    Parameters
    ----------
    row : PlanRow

    Returns
    -------
    str
    """
    basis = "unknown" if row.basis is None else str(row.basis)
    if row.basis == "measured":
        basis += f" {'wall' if row.clock == 'wall' else 'CPU'} ({row.n_measured})"
    if row.pruning_ratio is not None:
        basis += f" × {row.pruning_ratio:.2f} ({row.pruner})"
    return basis


def unmeasured(rows: Sequence[Any]) -> list[str]:
    """The ``"stage key"`` of every plan row with work left and no measurement, the figures a
    study's ``--yes`` gate waits for, the generation of a family with quick instances
    (``PriorCapabilities.quick_instances``) excepted: a GP instance takes seconds
    (docs/tasks.md), so an unmeasured ``generate gp`` does not hold a study back.

    Parameters
    ----------
    rows : sequence of PlanRow
        :func:`udbench.tuning.plan.plan_grid` (or :func:`~udbench.tuning.plan.remaining_rows`)
        output.

    Returns
    -------
    list of str
        E.g. ``["run nn-lap", "tune nn-lap+sn"]``, in row order.
    """
    from udbench.priors.base import prior_capabilities

    def quick(r: Any) -> bool:  # the generation of a family whose instances are quick
        return r.stage == "generate" and prior_capabilities(r.key, strict=False).quick_instances

    return [f"{r.stage} {r.key}" for r in rows if r.cpu_hours is None and r.count and not quick(r)]
