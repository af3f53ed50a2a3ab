"""The task type of each row of a results frame (regression or classification).

Shared by the report (:mod:`udbench.report.html`, which splits its leaderboard and figures by
task type) and the analyses (:mod:`udbench.analyses`, which give each analysis the rows of its
task type); the report layer sits below the analyses, so the helper lives here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from udbench.priors.base import prior_capabilities

__all__ = ["CLASSIFICATION", "REGRESSION", "row_task_types", "rows_of_task_type"]

#: The task type of regression rows.
REGRESSION = "regression"
#: The task type of classification rows.
CLASSIFICATION = "classification"


def row_task_types(results: pd.DataFrame) -> np.ndarray:
    """The task type of every row: ``"regression"`` or ``"classification"``.

    A row's ``task_type`` column when the results have one (and the row a value there),
    else the ``PriorCapabilities.task_type`` of its prior ``family`` (an unknown or missing
    family counts as regression, as results from before classification existed).

    Returns
    -------
    ndarray of str, shape (len(results),)
    """
    n = len(results)
    if "family" in results.columns:
        fams = results["family"].astype(str).to_numpy()
        by_family = {f: prior_capabilities(f, strict=False).task_type for f in set(fams)}
        out = np.array([by_family[f] for f in fams], dtype=object)
    else:
        out = np.full(n, REGRESSION, dtype=object)
    if "task_type" in results.columns:
        given = results["task_type"]
        out = np.where(given.notna().to_numpy(), given.astype(str).to_numpy(), out)
    return out.astype(str)


def rows_of_task_type(results: pd.DataFrame, task_type: str) -> pd.DataFrame:
    """The rows of ``results`` whose task type (:func:`row_task_types`) is ``task_type``.

    ``results`` itself when every row is of that type (no copy; same object).
    """
    mask = row_task_types(results) == task_type
    return results if mask.all() else results[mask]
