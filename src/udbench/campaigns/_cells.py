"""One benchmark cell as a campaign unit's work (the classification and runs campaigns)."""

from __future__ import annotations

from typing import Any

from udbench.campaigns.engine import UnitFailed, jsonable


def cell_unit_result(cell: Any, *, keep_predictions: bool = False) -> tuple[dict[str, Any], Any]:
    """Evaluate one planned cell and return its record's result.

    Parameters
    ----------
    cell : udbench.evaluation.runner.Cell
        One cell of :func:`udbench.evaluation.runner.plan_cells`.
    keep_predictions : bool, default False
        Also return the per-point predictions frame.

    Returns
    -------
    (result, predictions) : tuple
        ``result``: ``{"row", "fit_time_s", "predict_time_s"}`` with the results row made
        JSON-ready (:func:`~udbench.campaigns.engine.jsonable`); ``predictions``: the
        DataFrame, or None when not kept.

    Raises
    ------
    UnitFailed
        When the cell failed (its row's ``status`` is not ``"ok"``): the record keeps the
        failed row, so the failure is counted by the summaries and retried by the next run.
    """
    from udbench.evaluation.cell import evaluate_cell

    outcome = evaluate_cell(cell, keep_predictions=keep_predictions)
    row = jsonable(outcome.row)
    if row["status"] != "ok":
        raise UnitFailed(f"cell failed: {row['error']}", {"row": row})
    result = {"row": row, "fit_time_s": row["fit_time_s"], "predict_time_s": row["predict_time_s"]}
    return result, outcome.predictions if keep_predictions else None
