"""Every method hyperparameter is declared and a value outside its rule is refused (issue 33).

As scikit-learn's ``check_param_validation``: for every registered method, regression and
classification, each constructor keyword has a ``param_constraints`` entry, and each probe value
that breaks it (:func:`udbench.methods.base.invalid_hyperparameter_values`) is rejected by
``validate_hyperparameters`` with the one message template
``"<Class>: parameter '<name>' must <rule>; got <value>"``. One probe per method goes through
``fit`` too, which must refuse it before any training.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.methods.base import check_hyperparameter, invalid_hyperparameter_values
from udbench.methods.classifiers import CLASSIFIERS, get_classifier_class
from udbench.methods.registry import REGISTRY, get_method_class

_ALL = {
    **{n: ("regression", n) for n in REGISTRY},
    **{n: ("classification", n) for n in CLASSIFIERS},
}


def _cls(name: str) -> type:
    kind, _ = _ALL[name]
    return get_method_class(name) if kind == "regression" else get_classifier_class(name)


def _template(cls: type, key: str) -> re.Pattern[str]:
    return re.compile(
        rf"^{re.escape(cls.__name__)}: parameter {re.escape(repr(key))} must .+; got .+$"
    )


@pytest.mark.parametrize("name", sorted(_ALL))
def test_every_hyperparameter_has_a_constraint_and_probes_are_refused(name: str) -> None:
    cls = _cls(name)
    params = cls().get_params(deep=False)
    undeclared = sorted(k for k in params if k not in cls.param_constraints and k != "random_state")
    assert undeclared == [], f"{name}: hyperparameters without a constraint: {undeclared}"
    n_probes = 0
    for key, spec in cls.param_constraints.items():
        for bad in invalid_hyperparameter_values(spec):
            with pytest.raises(UdbenchError, match=_template(cls, key)):
                cls(**{key: bad}).validate_hyperparameters()
            n_probes += 1
    assert n_probes >= len(cls.param_constraints)
    cls().validate_hyperparameters()  # the defaults pass


@pytest.mark.parametrize("name", sorted(_ALL))
def test_fit_refuses_a_bad_hyperparameter_before_training(name: str) -> None:
    cls = _cls(name)
    key, spec = next(iter(cls.param_constraints.items()))
    bad = invalid_hyperparameter_values(spec)[-1]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    y: Any = rng.integers(0, 2, size=12) if _ALL[name][0] == "classification" else X[:, 0]
    with pytest.raises(UdbenchError, match=_template(cls, key)):
        cls(**{key: bad}).fit(X, y)


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "float", "low": 0.0, "low_open": True},
        {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
        {"type": "int", "low": 1, "high": 8},
        {"type": "int", "low": 1, "high": 8, "high_open": True},
        {"type": "bool"},
        {"type": "str"},
        {"type": "categorical", "choices": ["a", "b"]},
        {"type": "float", "low": 0.0, "none_ok": True},
        {"type": "float", "low": 0.0, "low_open": True, "also": ["marglik"]},
    ],
)
def test_probe_values_break_their_declaration(spec: dict[str, Any]) -> None:
    probes = invalid_hyperparameter_values(spec)
    assert probes
    for bad in probes:
        with pytest.raises(UdbenchError, match=r"^M: parameter 'p' must .+; got "):
            check_hyperparameter("M", "p", bad, spec)
    if spec.get("none_ok"):
        assert None not in probes
        check_hyperparameter("M", "p", None, spec)
    for value in spec.get("also", ()):
        check_hyperparameter("M", "p", value, spec)
