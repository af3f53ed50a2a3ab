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


def hours_text(cpu: float, wall: float, n_unknown: int = 0, fmt: str = ".3g") -> str:
    """``"1.2 CPU-h"``, with the hours measured as wall-clock time said apart (never CPU).

    Parameters
    ----------
    cpu, wall : float
        CPU-hours and wall-clock hours (:func:`split_hours`).
    n_unknown : int, default 0
        Rows with no figure, said as ``" + n unknown"``.
    fmt : str, default ".3g"
        Format of the numbers.

    Returns
    -------
    str
        E.g. ``"0.5 CPU-h + 1.5 h wall-clock (measured elapsed time, not CPU) + 2 unknown"``;
        ``"0 CPU-h"`` when both are zero.
    """
    parts = [f"{cpu:{fmt}} CPU-h"] if cpu or not wall else []
    if wall:
        parts.append(f"{wall:{fmt}} h wall-clock (measured elapsed time, not CPU)")
    return " + ".join(parts) + (f" + {n_unknown} unknown" if n_unknown else "")


def row_hours_text(row: Any) -> str:
    """A row's hours in its clock: ``"0.3 CPU-h"``, ``"0.3 h wall"`` or ``"unknown"``.

    Parameters
    ----------
    row : PlanRow

    Returns
    -------
    str
    """
    if row.cpu_hours is None:
        return "unknown"
    return f"{row.cpu_hours:.3g} " + ("h wall" if row.clock == "wall" else "CPU-h")


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
