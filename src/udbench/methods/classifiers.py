"""The classifier registry: name -> ``"module:Class"``, apart from the regression methods.

:data:`CLASSIFIERS` lists udbench's classifiers (:class:`udbench.methods.classification.
BaseClassifier` subclasses, ``task_type = "classification"``). It is a separate table from
:data:`udbench.methods.REGISTRY` on purpose: the regression runner, suites, tuning and
quickstart read only that one, so no classifier is ever run on a regression task. The
classification runner (pending the pipeline refactor, docs/classification.md) and
``udbench tune`` read this one: :func:`classifier_spec_name` tells a classifier's spec from a
regression method's, and :func:`resolve_classifier` turns it into the same
:class:`~udbench.methods.configs.MethodConfig` a regression spec resolves to.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from udbench._validation import UdbenchError, check_choice, param_error, unknown_name_error

if TYPE_CHECKING:
    from udbench.methods.classification import BaseClassifier
    from udbench.methods.configs import MethodConfig

__all__ = [
    "CLASSIFIERS",
    "ClassifierInfo",
    "classifier_class_of",
    "classifier_spec_name",
    "get_classifier_class",
    "list_classifiers",
    "make_classifier",
    "resolve_classifier",
]

#: udbench's classifiers, name -> ``"module:Class"``, one line each.
CLASSIFIERS: dict[str, str] = {
    "logreg-lap": "udbench.methods.logreg_lap:LogRegLaplace",
    "gpc-lap": "udbench.methods.gpc_lap:GPCLaplace",
    "nn-ens-softmax": "udbench.methods.nn_ens_softmax:NNEnsembleSoftmax",
    "catboost-ve": "udbench.methods.catboost_ve:CatBoostVE",
    "nn-drop-softmax": "udbench.methods.nn_drop_softmax:NNDropoutSoftmax",
    "nn-bag-softmax": "udbench.methods.nn_bag_softmax:NNBagSoftmax",
    "nn-edl-dirichlet": "udbench.methods.nn_edl_dirichlet:NNEvidentialDirichlet",
    "nn-lap-softmax": "udbench.methods.nn_lap_softmax:NNLaplaceSoftmax",
    "sngp-softmax": "udbench.methods.sngp_softmax:SNGPSoftmax",
    "nn-swag-softmax": "udbench.methods.nn_swag_softmax:NNSwagSoftmax",
    "ngboost-cat-bag": "udbench.methods.ngboost_cat_bag:NGBoostCatBag",
}


@dataclass(frozen=True)
class ClassifierInfo:
    """One registered classifier as its class describes it.

    Attributes
    ----------
    name, target : str
        Registry name and ``"module:Class"``.
    family, epistemic_from, description, task_type : str or None
        The class's capabilities (None when it cannot be imported).
    constant_aleatoric : bool or None
    available : bool
    error : str or None
    """

    name: str
    target: str
    family: str | None
    constant_aleatoric: bool | None
    epistemic_from: str | None
    description: str | None
    task_type: str | None
    available: bool = True
    error: str | None = None


def get_classifier_class(name: str) -> type[BaseClassifier]:
    """The class of the registered classifier ``name``.

    Raises
    ------
    UdbenchError
        Unknown name, an import failure, or a class that is not a ``BaseClassifier`` or
        whose ``name`` disagrees.
    """
    check_choice("classifiers", "name", name, CLASSIFIERS)
    module_name, _, attr = CLASSIFIERS[name].partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except ImportError as err:
        raise UdbenchError(f"classifiers: cannot import {CLASSIFIERS[name]!r}: {err}") from err
    from udbench.methods.classification import BaseClassifier

    if not (inspect.isclass(cls) and issubclass(cls, BaseClassifier)) or cls.name != name:
        raise param_error("classifiers", "name", "name a BaseClassifier of that name", name)
    return cls


def classifier_class_of(cls_or_name: Any, where: str) -> tuple[type[BaseClassifier], str]:
    """The class and report label of ``cls_or_name`` (a registered name or a subclass).

    The label is the name itself, or ``"module:Qualname"`` for a class; the checks and
    behaviour batteries report under it.

    Raises
    ------
    UdbenchError
        ``cls_or_name`` neither a name of :data:`CLASSIFIERS` nor a ``BaseClassifier``
        subclass (the message starts with ``where``); see :func:`get_classifier_class`.
    """
    from udbench.methods.classification import BaseClassifier

    if isinstance(cls_or_name, str):
        return get_classifier_class(cls_or_name), cls_or_name
    if isinstance(cls_or_name, type) and issubclass(cls_or_name, BaseClassifier):
        return cls_or_name, f"{cls_or_name.__module__}:{cls_or_name.__qualname__}"
    raise param_error(
        where,
        "cls_or_name",
        f"be a BaseClassifier subclass or one of {list(CLASSIFIERS)}",
        cls_or_name,
    )


def _static_info(name: str, target: str) -> ClassifierInfo | None:
    """The row of :func:`list_classifiers` read from source, or None to import instead."""
    from udbench.methods._static import read_class_statically

    keys = ("name", "family", "constant_aleatoric", "epistemic_from", "description")
    info = read_class_statically(target, keys)
    if info is None or info.attributes.get("name") != name:
        return None
    if info.missing_packages:
        why = f"classifiers: cannot import {target!r}: missing package(s) "
        why += ", ".join(info.missing_packages)
        return ClassifierInfo(name, target, None, None, None, None, None, False, why)
    a = info.attributes
    return ClassifierInfo(
        name,
        target,
        a["family"],
        bool(a["constant_aleatoric"]),
        a["epistemic_from"],
        a["description"],
        "classification",
    )


def list_classifiers(*, static: bool = False) -> list[ClassifierInfo]:
    """Every registered classifier, read from its class (never raises for a bad row).

    Parameters
    ----------
    static : bool, default False
        Read the capabilities from the source without importing the modules (as
        :func:`udbench.methods.registry.list_methods` does; ``udbench methods`` uses it);
        a class whose source does not answer statically is imported.
    """
    out = []
    for name, target in CLASSIFIERS.items():
        if static:
            row = _static_info(name, target)
            if row is not None:
                out.append(row)
                continue
        try:
            cls = get_classifier_class(name)
        except Exception as err:  # an unavailable row, with the reason
            out.append(ClassifierInfo(name, target, None, None, None, None, None, False, str(err)))
            continue
        out.append(
            ClassifierInfo(
                name,
                target,
                cls.family,
                bool(cls.constant_aleatoric),
                cls.epistemic_from,
                cls.description,
                cls.task_type,
            )
        )
    return out


def make_classifier(
    name: str, *, smoke: bool = False, random_state: int | None = 0, **params: Any
) -> BaseClassifier:
    """An instance of the classifier ``name`` (its smoke configuration with ``smoke``).

    Raises
    ------
    UdbenchError
        Unknown name or keyword (a hyperparameter value is checked at ``fit``).
    """
    cls = get_classifier_class(name)
    allowed = set(inspect.signature(cls.__init__).parameters) - {"self"}
    merged = {**(cls.smoke_params if smoke else {}), **params, "random_state": random_state}
    for key in merged:
        if key not in allowed:
            raise param_error(name, "keyword", f"be one of {sorted(allowed)}", key)
    return cls(**merged)


def classifier_spec_name(spec: Any) -> str | None:
    """The registered classifier a method spec names (``"logreg-lap:prior_precision=2"``
    names ``"logreg-lap"``), or None: a regression method's spec, an instance, anything else.

    A :class:`~udbench.methods.classification.BaseClassifier` instance gives its ``name``.
    Never raises (a malformed spec is None here and refused by whoever resolves it).
    """
    from udbench.methods.classification import BaseClassifier

    if isinstance(spec, BaseClassifier):
        return str(type(spec).name)
    if not isinstance(spec, str):
        return None
    name = spec.strip().partition(":")[0].strip()
    return name if name in CLASSIFIERS else None


def resolve_classifier(spec: str | BaseClassifier, label: str | None = None) -> MethodConfig:
    """A classifier spec (``"name"`` or ``"name:key=value,..."``, or an unfitted instance) as
    a :class:`~udbench.methods.configs.MethodConfig`, as
    :func:`udbench.methods.configs.resolve_method` resolves a regression method's.

    String overrides are converted to the hyperparameter's declared type as for
    :func:`udbench.methods.make_method`; the instance gets ``random_state = 0`` (each cell or
    trial sets its own). ``params`` holds every hyperparameter but ``random_state`` and
    ``config_hash`` is :func:`~udbench.methods.configs.config_hash` of them.

    Raises
    ------
    UdbenchError
        An unknown classifier or hyperparameter, a value that cannot be converted or is out
        of its declared range, a malformed override.
    """
    from sklearn.base import clone

    from udbench.methods.classification import BaseClassifier
    from udbench.methods.configs import MethodConfig, config_hash
    from udbench.methods.registry import _coerce, parse_method_spec

    if isinstance(spec, BaseClassifier):
        est = clone(spec)
        name = str(type(est).name)
        text = name
    else:
        if not isinstance(spec, str) or classifier_spec_name(spec) is None:
            raise param_error("classifiers", "spec", f"name one of {sorted(CLASSIFIERS)}", spec)
        text = spec.strip().replace(" ", "")
        name, raw = parse_method_spec(text)
        cls = get_classifier_class(name)
        valid = cls().get_params(deep=False)
        unknown = sorted(set(raw) - set(valid))
        if unknown:
            kind = f"hyperparameter of {name!r}"
            raise unknown_name_error(cls.__name__, kind, unknown[0], valid)
        # the registry's string conversion reads only the class's declarations
        typed = {k: _coerce(cast(Any, cls), k, v, valid[k]) for k, v in raw.items()}
        est = cls(**typed)
    est.set_params(random_state=0)
    est.validate_hyperparameters()
    params = dict(est.get_params(deep=False))
    params.pop("random_state", None)
    # MethodConfig is typed for regression methods; a classifier has the same interface
    # (get_params/set_params, search_space, validate_hyperparameters)
    return MethodConfig(
        label=label or text,
        name=name,
        estimator=cast(Any, est),
        params=params,
        config_hash=config_hash(name, params),
    )
