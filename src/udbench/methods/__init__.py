"""UQ methods: the contract, the registry, the conformance battery (docs/methods.md).

Every method is a :class:`BaseMethod` (scikit-learn conventions) whose ``predict`` returns a
:class:`Prediction` (mean, aleatoric and epistemic variances in target units). Methods are
looked up by the paper's names in lower case (:data:`REGISTRY`, plus a user's registrations),
or by import path for a user's own class.
"""

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
