"""Method configurations: a method spec resolved once, its canonical text and its hash.

A *method spec* is what a user names on the command line or in Python: a registry name
(``"gp"``), a name with hyperparameter overrides (``"nn-ens:n_members=5"``), an import path
(``"pkg.mod:Cls"``), an unfitted :class:`~udbench.methods.base.BaseMethod` instance, or a
``(label, spec)`` pair. An unfitted
:class:`~udbench.methods.classification.BaseClassifier` resolves too (a classifier's name,
``"logreg-lap"``, by :func:`udbench.methods.classifiers.resolve_classifier`): its
:attr:`MethodConfig.task_type` is ``"classification"``, and a cell whose task is of the
other type is a failed row (:mod:`udbench.evaluation.cell`).
:func:`resolve_method` turns it into a :class:`MethodConfig`: the estimator, all its
hyperparameters (defaults included) and :func:`config_hash`, which keys results with the
task id (``udbench.evaluation.store.cell_key``). Used by ``udbench run`` and, later, by
tuning.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from udbench._validation import as_list, param_error
from udbench.methods.base import BaseMethod
from udbench.methods.registry import make_method

if TYPE_CHECKING:
    from udbench.methods.classification import BaseClassifier

__all__ = ["MethodConfig", "canonical_config", "config_hash", "resolve_method", "resolve_methods"]


def _jsonable(value: Any) -> Any:
    """Map a hyperparameter value to a JSON-serialisable, order-stable form."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def canonical_config(method: str, params: Mapping[str, Any]) -> str:
    """Return the canonical JSON text of a method configuration (sorted keys, no spaces).

    ``random_state`` is excluded: the seed is derived per cell, it is not part of the
    configuration.
    """
    clean = {k: _jsonable(v) for k, v in params.items() if k != "random_state"}
    return json.dumps({"method": method, "params": clean}, sort_keys=True, separators=(",", ":"))


def config_hash(method: str, params: Mapping[str, Any]) -> str:
    """Return a 12-hex-digit BLAKE2b hash of :func:`canonical_config` (stable across platforms).

    Parameters
    ----------
    method : str
        The method's name.
    params : mapping
        All of its hyperparameters (defaults included), as ``get_params(deep=False)`` gives.

    Returns
    -------
    str
        Identical for identical configurations; any changed hyperparameter changes it.
    """
    text = canonical_config(method, params)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


@dataclass(frozen=True)
class MethodConfig:
    """A method with one configuration, resolved once before a run.

    Attributes
    ----------
    label : str
        How the configuration is shown in results and leaderboards (the spec as given,
        e.g. ``"nn-ens:n_members=5"``).
    name : str
        Registry name (or import path) of the method.
    estimator : BaseMethod or BaseClassifier
        The unfitted estimator; each cell gets a clone with its own ``random_state``.
    params : dict
        All hyperparameters (``get_params(deep=False)``), defaults included.
    config_hash : str
        :func:`config_hash` of ``name`` and ``params``.
    """

    label: str
    name: str
    estimator: BaseMethod | BaseClassifier
    params: dict[str, Any]
    config_hash: str

    @property
    def config(self) -> str:
        """Canonical JSON text of the configuration (stored with every row)."""
        return canonical_config(self.name, self.params)

    @property
    def constant_aleatoric(self) -> bool:
        """Whether the method's AU is constant in x (SPEC §8)."""
        return bool(type(self.estimator).constant_aleatoric)

    @property
    def family(self) -> str:
        """The method's family (``linear``, ``gp``, ``trees``, ``nn``, …; its class attribute)."""
        return str(type(self.estimator).family)

    @property
    def task_type(self) -> str:
        """``"regression"`` (a :class:`BaseMethod`) or ``"classification"`` (a classifier)."""
        return str(getattr(type(self.estimator), "task_type", "regression"))


def _override_text(est: BaseMethod | BaseClassifier) -> str:
    """``"k=v,..."`` for the hyperparameters that differ from the class defaults."""
    try:
        defaults = type(est)().get_params(deep=False)
    except Exception:
        return ""
    items = []
    for k, v in sorted(est.get_params(deep=False).items()):
        if k == "random_state":
            continue
        if k not in defaults or repr(defaults[k]) != repr(v):
            items.append(f"{k}={v}")
    return ",".join(items)


def resolve_method(
    spec: str | BaseMethod | BaseClassifier, label: str | None = None
) -> MethodConfig:
    """Resolve a method spec (``"name"``, ``"name:k=v,k2=v2"``, an import path, or an instance).

    Parameters
    ----------
    spec : str, BaseMethod or BaseClassifier
        A registry name or import path with optional hyperparameter overrides (parsed by
        :func:`udbench.methods.make_method`), or an unfitted estimator instance (a
        classifier too; a classifier's *name* is resolved by
        :func:`udbench.methods.classifiers.resolve_classifier`, which
        :func:`udbench.evaluation.runner.run_benchmark` calls first).
    label : str, optional
        How to show it in results; default the spec as given (for an instance: its name
        plus the hyperparameters that differ from the class defaults).

    Returns
    -------
    MethodConfig

    Raises
    ------
    UdbenchError
        Unknown method, override of a hyperparameter the method does not have, a value of
        the wrong type, or an object that is neither a :class:`BaseMethod` nor a
        classifier.
    """
    from udbench.methods.classification import BaseClassifier

    est: BaseMethod | BaseClassifier
    if isinstance(spec, BaseMethod | BaseClassifier):
        est = spec
        extra = _override_text(est)
    elif isinstance(spec, str):
        text = spec.strip()
        if not text:
            raise param_error("udbench run", "methods", "be a non-empty method spec", spec)
        est = make_method(text, random_state=0)
        extra = None
    else:
        raise param_error(
            "udbench run", "methods", "be a method spec string, a BaseMethod or a classifier", spec
        )
    cls_name = str(type(est).name or "")
    if cls_name and cls_name != "base":
        name = cls_name
    else:
        name = f"{type(est).__module__}:{type(est).__qualname__}"
    if label is None:
        label = (f"{name}:{extra}" if extra else name) if extra is not None else str(spec).strip()
        label = label.replace(" ", "")
    params = dict(est.get_params(deep=False))
    params.pop("random_state", None)
    return MethodConfig(
        label=label, name=name, estimator=est, params=params, config_hash=config_hash(name, params)
    )


def resolve_methods(
    specs: Iterable[
        str | BaseMethod | BaseClassifier | tuple[str, str | BaseMethod | BaseClassifier]
    ],
) -> list[MethodConfig]:
    """Resolve several method specs; identical configurations are kept once.

    Parameters
    ----------
    specs : str, BaseMethod or iterable
        Each a spec string, an instance, or a ``(label, spec)`` pair; one string or
        instance is one method (not a sequence of characters).

    Returns
    -------
    list of MethodConfig
        Labels are unique: a label shared by two configurations gets ``#<config hash>``.

    Raises
    ------
    UdbenchError
        If no method is given, ``specs`` is neither a method nor a sequence of them, or one
        cannot be resolved (see :func:`resolve_method`).
    """
    from udbench.methods.classification import BaseClassifier

    specs = as_list(
        "udbench run",
        "methods",
        specs,
        (str, BaseMethod, BaseClassifier, tuple),
        what="method specs (str), BaseMethod instances or (label, spec) pairs",
    )
    out: dict[tuple[str, str], MethodConfig] = {}
    for spec in specs:
        if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
            mc = resolve_method(spec[1], label=spec[0])
        else:
            mc = resolve_method(spec)  # type: ignore[arg-type]
        out.setdefault((mc.name, mc.config_hash), mc)
    if not out:
        raise param_error("udbench run", "methods", "name at least one method", [])
    resolved = list(out.values())
    counts: dict[str, int] = {}
    for mc in resolved:
        counts[mc.label] = counts.get(mc.label, 0) + 1
    return [
        mc
        if counts[mc.label] == 1
        else MethodConfig(
            f"{mc.label}#{mc.config_hash[:6]}", mc.name, mc.estimator, mc.params, mc.config_hash
        )
        for mc in resolved
    ]
