"""Range checks of method hyperparameters, raising the project's one error template."""

from __future__ import annotations

import numpy as np

from udbench._validation import param_error

__all__ = ["check_bool", "check_float", "check_int"]


def check_int(
    component: str, parameter: str, value: object, low: int, high: int | None = None
) -> int:
    """Return ``value`` as int if it is an integer in ``[low, high]`` (``high`` None: no bound)."""
    rule = f"be an int in [{low}, {high}]" if high is not None else f"be an int >= {low}"
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise param_error(component, parameter, rule, value)
    if value < low or (high is not None and value > high):
        raise param_error(component, parameter, rule, value)
    return int(value)


def check_float(
    component: str,
    parameter: str,
    value: object,
    low: float,
    high: float | None = None,
    *,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
) -> float:
    """Return ``value`` as float if it is finite and within the stated interval."""
    lb = "[" if low_inclusive else "("
    rb = "]" if high_inclusive else ")"
    rule = f"be a real number in {lb}{low}, {high if high is not None else 'inf'}{rb}"
    if isinstance(value, bool):
        raise param_error(component, parameter, rule, value)
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise param_error(component, parameter, rule, value) from None
    ok = np.isfinite(v) and (v >= low if low_inclusive else v > low)
    if high is not None:
        ok = ok and (v <= high if high_inclusive else v < high)
    if not ok:
        raise param_error(component, parameter, rule, value)
    return v


def check_bool(component: str, parameter: str, value: object) -> bool:
    """Return ``value`` if it is a bool (or numpy bool)."""
    if not isinstance(value, bool | np.bool_):
        raise param_error(component, parameter, "be True or False", value)
    return bool(value)
