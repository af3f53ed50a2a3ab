"""A method's declared search space, as Optuna suggestions, and its hash.

The search space is declared on the method class (``search_space``, format in
:mod:`udbench.methods.base`). Each entry becomes one Optuna suggestion, in declaration order:

- ``{"type": "float", "low": a, "high": b, "log": True, "step": s}`` ->
  ``trial.suggest_float`` (``log`` and ``step`` optional);
- ``{"type": "int", "low": a, "high": b, "log": ..., "step": ...}`` -> ``trial.suggest_int``;
- ``{"type": "categorical", "choices": [...]}`` -> ``trial.suggest_categorical``;
- ``{"type": "bool"}`` -> ``trial.suggest_categorical(name, [True, False])``.

An entry with a single value (one choice, or ``low == high``) is fixed, as in the paper's
tables. **Conditional entries**: ``"when": {"other": value}`` (or a list of values) makes
the entry sampled only when the hyperparameter ``other``, declared before it, took one of
those values; otherwise the method's own value (default or override) is used. Optuna's
define-by-run trials handle this natively (the TPE sampler models each parameter over the
trials in which it was sampled).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from udbench._validation import param_error

__all__ = ["check_search_space", "search_space_hash", "suggest"]


def _rule_error(method: str, key: str, rule: str, value: Any) -> Exception:
    return param_error(f"{method} search_space", key, rule, value)


def check_search_space(method: str, space: Mapping[str, Mapping[str, Any]]) -> None:
    """Check that every entry can be sampled (bounded ranges, known types, valid ``when``).

    Parameters
    ----------
    method : str
        The method's name (for the message).
    space : mapping
        The class's ``search_space``.

    Raises
    ------
    UdbenchError
        An empty space, a float/int entry without both bounds or with ``low > high``, a
        ``log`` range with ``low <= 0``, a categorical without choices, an unknown type, a
        ``when`` naming a hyperparameter not declared before the entry.
    """
    if not space:
        raise _rule_error(method, "search_space", "declare at least one hyperparameter", {})
    seen: list[str] = []
    for key, spec in space.items():
        kind = spec.get("type", "float")
        if kind in ("float", "int"):
            low, high = spec.get("low"), spec.get("high")
            if low is None or high is None:
                raise _rule_error(method, key, "have both 'low' and 'high' to be tuned", spec)
            if low > high:
                raise _rule_error(method, key, "have low <= high", spec)
            if spec.get("log") and low <= 0:
                raise _rule_error(method, key, "have low > 0 on a log scale", spec)
        elif kind == "categorical":
            if not spec.get("choices"):
                raise _rule_error(method, key, "list at least one choice", spec)
        elif kind != "bool":
            raise _rule_error(method, key, "have type float, int, categorical or bool", kind)
        for other in spec.get("when", {}) or {}:
            if other not in seen:
                raise _rule_error(
                    method, key, "condition ('when') on a hyperparameter declared before it", other
                )
        seen.append(key)


def search_space_hash(method: str, space: Mapping[str, Mapping[str, Any]]) -> str:
    """12-hex-digit BLAKE2b hash of the method name and its search space (canonical JSON).

    A tuned record stores it; a record whose hash differs from the method's current space is
    stale (the space changed since the sweep).
    """
    text = json.dumps(
        {"method": method, "space": space}, sort_keys=True, separators=(",", ":"), default=repr
    )
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def _active(spec: Mapping[str, Any], chosen: Mapping[str, Any]) -> bool:
    for other, wanted in (spec.get("when") or {}).items():
        values = wanted if isinstance(wanted, list | tuple) else [wanted]
        if other not in chosen or chosen[other] not in values:
            return False
    return True


def suggest(trial: Any, space: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Draw one configuration from ``space`` with an Optuna trial (define-by-run).

    Parameters
    ----------
    trial : optuna.trial.Trial
        A trial from ``study.ask()``.
    space : mapping
        A search space that passed :func:`check_search_space`.

    Returns
    -------
    dict
        The sampled hyperparameters (inactive conditional entries left out).
    """
    chosen: dict[str, Any] = {}
    for key, spec in space.items():
        if not _active(spec, chosen):
            continue
        kind = spec.get("type", "float")
        if kind == "float":
            chosen[key] = trial.suggest_float(
                key,
                float(spec["low"]),
                float(spec["high"]),
                log=bool(spec.get("log", False)),
                step=spec.get("step"),
            )
        elif kind == "int":
            chosen[key] = trial.suggest_int(
                key,
                int(spec["low"]),
                int(spec["high"]),
                log=bool(spec.get("log", False)),
                step=int(spec.get("step", 1)),
            )
        elif kind == "bool":
            chosen[key] = trial.suggest_categorical(key, [True, False])
        else:
            chosen[key] = trial.suggest_categorical(key, list(spec["choices"]))
    return chosen
