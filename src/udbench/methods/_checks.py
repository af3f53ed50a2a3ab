"""Checks of method hyperparameters against their ``param_constraints`` declarations.

The declaration format is the contract's (``udbench.methods.base`` on the methods-core
branch): one dict per constructor keyword, e.g. ``{"type": "int", "low": 1}``,
``{"type": "float", "low": 0.0, "low_open": True, "high": 1.0}``, ``{"type": "bool"}``,
``{"type": "categorical", "choices": [...]}``. Errors use the project's one template.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from udbench._validation import param_error

__all__ = ["check_declared"]


def _rule(spec: dict[str, Any]) -> str:
    kind = spec.get("type", "float")
    if kind == "categorical":
        return f"be one of {list(spec['choices'])}"
    if kind == "bool":
        return "be True or False"
    parts = []
    if spec.get("low") is not None:
        parts.append((">" if spec.get("low_open") else ">=") + f" {spec['low']}")
    if spec.get("high") is not None:
        parts.append(("<" if spec.get("high_open") else "<=") + f" {spec['high']}")
    noun = "an integer" if kind == "int" else "a real number"
    return f"be {noun}" + (" " + " and ".join(parts) if parts else "")


def _ok(value: Any, spec: dict[str, Any]) -> bool:
    kind = spec.get("type", "float")
    if kind == "categorical":
        return any(value == c and type(value) is type(c) for c in spec["choices"])
    if kind == "bool":
        return isinstance(value, bool | np.bool_)
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        return False
    if kind == "int" and not isinstance(value, numbers.Integral):
        return False
    v = float(value)
    low, high = spec.get("low"), spec.get("high")
    if not np.isfinite(v):
        return False
    if low is not None and (v <= low if spec.get("low_open") else v < low):
        return False
    return not (high is not None and (v >= high if spec.get("high_open") else v > high))


def check_declared(
    component: str, params: dict[str, Any], constraints: dict[str, dict[str, Any]]
) -> None:
    """Raise :class:`~udbench._validation.UdbenchError` for the first invalid hyperparameter.

    Parameters
    ----------
    component : str
        The method's class name (for the message).
    params : dict
        Current hyperparameter values (``get_params(deep=False)``).
    constraints : dict
        The class's ``param_constraints``.
    """
    for key, spec in constraints.items():
        if key in params and not _ok(params[key], spec):
            raise param_error(component, key, _rule(spec), params[key])
