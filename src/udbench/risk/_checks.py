"""Argument checks shared by the decompositions (shapes, finiteness, simplex rows)."""

from __future__ import annotations

from typing import Any

import numpy as np

from udbench._validation import check_array, param_error

#: Absolute tolerance on ``sum_k p_k = 1`` for class-probability vectors.
SIMPLEX_ATOL = 1e-6


def regression_draws(component: str, draws: Any, *, finite: bool = True) -> np.ndarray:
    """Check draws of the conditional mean, shape (D, n) with D >= 2."""
    arr = check_array(component, "draws", draws, ndim=2, finite=finite)
    if arr.shape[0] < 2:
        raise param_error(component, "draws", "have at least 2 draws (rows)", f"shape {arr.shape}")
    return arr


def vector(
    component: str,
    name: str,
    value: Any,
    n: int,
    *,
    nonnegative: bool = False,
    positive: bool = False,
) -> np.ndarray:
    """Check a per-point vector of shape (n,); optionally >= 0 or > 0."""
    arr = check_array(component, name, value, shape=(n,), nonnegative=nonnegative or positive)
    if positive and arr.size and np.min(arr) <= 0:
        raise param_error(component, name, "be > 0", f"minimum {float(np.min(arr))!r}")
    return arr


def simplex(
    component: str, name: str, value: Any, shape: tuple[int | None, ...], *, positive: bool = False
) -> np.ndarray:
    """Check class-probability vectors along the last axis: >= 0 (or > 0) and summing to 1."""
    arr = check_array(component, name, value, shape=shape, nonnegative=True)
    if arr.shape[-1] < 2:
        raise param_error(component, name, "have at least 2 classes (last axis)", arr.shape)
    sums = arr.sum(axis=-1)
    worst = float(np.max(np.abs(sums - 1.0))) if sums.size else 0.0
    if worst > SIMPLEX_ATOL:
        raise param_error(
            component,
            name,
            f"sum to 1 along the class axis (atol {SIMPLEX_ATOL:g})",
            f"largest deviation {worst:.3g}",
        )
    if positive and arr.size and np.min(arr) <= 0:
        raise param_error(
            component,
            name,
            "be > 0 in every class (log loss needs the simplex interior)",
            f"minimum {float(np.min(arr))!r}",
        )
    return arr


def raise_nonfinite(component: str, name: str, arr: np.ndarray) -> None:
    """Raise the standard error for an array with NaN/inf entries (or moments that overflow)."""
    n_bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
    raise param_error(
        component,
        name,
        "contain only finite values (of magnitude below 1e150)",
        f"{n_bad} NaN/inf entries" if n_bad else "values whose squares overflow",
    )
