"""UQ methods: the contract, the registry, the conformance battery (docs/methods.md).

Every method is a :class:`BaseMethod` (scikit-learn conventions) whose ``predict`` returns a
:class:`Prediction` (mean, aleatoric and epistemic variances in target units). Methods are
looked up by the paper's names in lower case (:data:`REGISTRY`, plus a user's registrations),
or by import path for a user's own class.

Names are loaded on first use (``lazy_loader``, Scientific Python SPEC 1): importing this
package does not import scikit-learn or any method, so ``udbench methods`` answers fast.
"""

from typing import TYPE_CHECKING

import lazy_loader as _lazy

__getattr__, __dir__, _names = _lazy.attach(
    __name__,
    submod_attrs={
        "base": [
            "BaseMethod",
            "MethodOutputError",
            "NotFittedError",
            "Prediction",
            "check_hyperparameter",
        ],
        "conformance": [
            "CHECKS",
            "CheckResult",
            "ConformanceCheck",
            "ConformanceReport",
            "check_method",
            "parametrize_with_checks",
        ],
        "registry": [
            "REGISTRY",
            "MethodInfo",
            "get_method_class",
            "list_methods",
            "make_method",
            "methods_markdown",
            "parse_method_spec",
            "registered_methods",
        ],
        "sklearn_adapter": ["SklearnMethod"],
    },
)

if TYPE_CHECKING:  # the same names, for type checkers
    from udbench.methods.base import (
        BaseMethod,
        MethodOutputError,
        NotFittedError,
        Prediction,
        check_hyperparameter,
    )
    from udbench.methods.conformance import (
        CHECKS,
        CheckResult,
        ConformanceCheck,
        ConformanceReport,
        check_method,
        parametrize_with_checks,
    )
    from udbench.methods.registry import (
        REGISTRY,
        MethodInfo,
        get_method_class,
        list_methods,
        make_method,
        methods_markdown,
        parse_method_spec,
        registered_methods,
    )
    from udbench.methods.sklearn_adapter import SklearnMethod

__all__ = [
    "CHECKS",
    "REGISTRY",
    "BaseMethod",
    "CheckResult",
    "ConformanceCheck",
    "ConformanceReport",
    "MethodInfo",
    "MethodOutputError",
    "NotFittedError",
    "Prediction",
    "SklearnMethod",
    "check_hyperparameter",
    "check_method",
    "get_method_class",
    "list_methods",
    "make_method",
    "methods_markdown",
    "parametrize_with_checks",
    "parse_method_spec",
    "registered_methods",
]
