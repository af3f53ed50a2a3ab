"""Cleaning a raw table exactly per SPEC §2: match the registry's columns, drop missing rows,
min-max scale the covariates.

Used by :mod:`udbench.data.covariates` (loading) and :mod:`udbench.data.sources` (a download
is cached only if it cleans to SPEC's shape); it imports neither, so the two do not import
each other.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from udbench._validation import UdbenchError, param_error
from udbench.data.registry import DatasetSpec

__all__ = ["NEAR_CONSTANT_RTOL", "clean_table", "is_near_constant", "normalise_name"]

#: A covariate whose range over the kept rows is at most this share of its largest magnitude,
#: ``max - min <= NEAR_CONSTANT_RTOL * max(|min|, |max|)``, counts as constant: min-max scaling
#: would blow its rounding-level differences (a column 1 and 1 + 1e-12) up into a full-range
#: covariate. 1e-9 is about 10⁷ float64 rounding units (2.2e-16), so a column that varies only
#: by the rounding of a text round trip or a unit conversion falls under it; a column that
#: varies in its 9th significant digit is kept when its offset is subtracted first. The shipped
#: datasets' smallest relative range is 0.0136 (red_wine's density), far above it.
NEAR_CONSTANT_RTOL = 1e-9


def is_near_constant(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Which covariates count as constant, from their minimum and maximum over the rows.

    Parameters
    ----------
    low, high : array_like of shape (d,)
        Each covariate's minimum and maximum.

    Returns
    -------
    numpy.ndarray of bool, shape (d,)
        True where ``high - low <= NEAR_CONSTANT_RTOL * max(|low|, |high|)``
        (:data:`NEAR_CONSTANT_RTOL`): an exactly constant column (zero too) and one whose
        range is rounding-level relative to its magnitude.

    Examples
    --------
    >>> is_near_constant(np.array([1.0, 1.0, 0.0, 1e-12]), np.array([1.0, 1.0 + 1e-12, 0.0, 5e-12]))
    array([ True,  True,  True, False])
    """
    lo = np.asarray(low, dtype=np.float64)
    hi = np.asarray(high, dtype=np.float64)
    scale = np.maximum(np.abs(lo), np.abs(hi))
    return np.asarray(hi - lo <= NEAR_CONSTANT_RTOL * scale)


def normalise_name(name: str) -> str:
    """Column-name key used for matching: parenthesised units removed, case and punctuation
    ignored (``"Temperature(°C)"`` → ``"temperature"``, ``"fixed_acidity"`` →
    ``"fixed_acidity"``, ``"fixed acidity"`` → ``"fixed_acidity"``)."""
    stripped = re.sub(r"\([^)]*\)", " ", str(name))
    return re.sub(r"[^0-9a-z]+", "_", stripped.lower()).strip("_")


def _to_float(frame: pd.DataFrame, column: str, key: str) -> np.ndarray:
    values = frame[column]
    if not pd.api.types.is_numeric_dtype(values):
        converted = pd.to_numeric(values, errors="coerce")
        bad = values[converted.isna() & values.notna()]
        if len(bad):
            raise param_error(
                f"load_covariates({key!r})",
                f"column {column}",
                "hold numbers (or be empty/'?' where missing)",
                bad.iloc[0],
            )
        values = converted
    return values.to_numpy(dtype=np.float64)


def clean_table(
    frame: pd.DataFrame, spec: DatasetSpec
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Clean a raw table exactly per SPEC §2.

    Keeps the registry's covariates (matched by :func:`normalise_name`), drops every row
    with a missing covariate or target (no target if ``spec.target`` is empty), and min-max
    scales each covariate to [0, 1] over the kept rows.

    Parameters
    ----------
    frame : pandas.DataFrame
        The raw table (any column order, extra columns ignored).
    spec : DatasetSpec
        The dataset's registry entry.

    Returns
    -------
    X : ndarray of shape (N, d), float64 in [0, 1]
    y_real : ndarray of shape (N,), float64, in the source's target units
        (all NaN when ``spec.target`` is empty: a user dataset added without a target)
    bounds : ndarray of shape (2, d)
        Raw minimum and maximum of every covariate over the kept rows.

    Raises
    ------
    UdbenchError
        A covariate or target column is missing or renamed, a value is not numeric or is
        infinite, a covariate is constant or near-constant (:func:`is_near_constant`), or the
        cleaned (N, d) differs from SPEC.
    """
    component = f"load_covariates({spec.key!r})"
    by_name: dict[str, list[str]] = {}
    for column in frame.columns:
        by_name.setdefault(normalise_name(column), []).append(str(column))
    columns: list[str] = []
    wanted_columns = (*spec.covariates, spec.target) if spec.target else spec.covariates
    for wanted in wanted_columns:
        found = by_name.get(normalise_name(wanted), [])
        if len(found) != 1:
            rule = (
                f"contain exactly one column matching {wanted!r}"
                if found
                else f"contain the column {wanted!r} (case, punctuation and units ignored)"
            )
            # The template, without shortening: the full column list is what helps here.
            raise UdbenchError(
                f"{component}: parameter 'table columns' must {rule}; "
                f"got {[str(c) for c in frame.columns]!r}"
            )
        columns.append(found[0])
    values = np.column_stack([_to_float(frame, c, spec.key) for c in columns])
    values = values[~np.isnan(values).any(axis=1)]
    infinite = np.flatnonzero(np.isinf(values).any(axis=0))
    if infinite.size:  # min-max scaling would turn these into NaN without a word
        j = int(infinite[0])
        raise param_error(
            component,
            f"column {columns[j]}",
            "hold finite numbers (or be empty/'?' where missing)",
            float(values[np.isinf(values[:, j]), j][0]),
        )
    if spec.target:
        X, y_real = values[:, :-1], values[:, -1].copy()
    else:  # a user dataset added without a target column: no real target at all
        X, y_real = values, np.full(values.shape[0], np.nan)
    if X.shape != (spec.n_rows, spec.n_features):
        raise param_error(
            component,
            "table",
            f"clean to SPEC's (N, d) = ({spec.n_rows}, {spec.n_features}) (is it the full table?)",
            f"shape {X.shape}",
        )
    low, high = X.min(axis=0), X.max(axis=0)
    constant = np.flatnonzero(is_near_constant(low, high))
    if constant.size:
        j = int(constant[0])
        raise param_error(
            component,
            f"covariate {spec.covariates[j]}",
            "vary over the kept rows by more than rounding (min-max scaling needs max - min > "
            f"{NEAR_CONSTANT_RTOL:g} × max(|min|, |max|))",
            f"the constant value {float(low[j])!r}"
            if high[j] == low[j]
            else f"min {float(low[j])!r}, max {float(high[j])!r}",
        )
    X = (X - low) / (high - low)
    return X, y_real, np.vstack([low, high])
