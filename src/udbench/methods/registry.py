"""The method registry: a table of data, one row per method (DESIGN.md "one registry per kind").

Each row names a method (the paper's name in lower case), where its class lives
(``module:Class``), its family and its capability flags. Adding a method is one new module
plus one row here; ``udbench methods`` lists it without further edits. A row whose module
cannot be imported (not written yet, or a missing optional dependency) is listed as
unavailable with the import error; nothing else breaks.

A user's own class plugs in by import path, ``package.module:ClassName``, anywhere a
method name is accepted.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import asdict, dataclass
from typing import Any

from udbench._validation import UdbenchError, param_error
from udbench.methods.base import BaseMethod

__all__ = [
    "REGISTRY",
    "MethodInfo",
    "get_method_class",
    "list_methods",
    "make_method",
    "parse_method_spec",
]


@dataclass(frozen=True)
class MethodInfo:
    """One registry row, with whether its class can be imported here.

    Attributes
    ----------
    name : str
        Registry name (``"gp"``), or the import path for a user class.
    target : str
        ``"package.module:ClassName"``.
    family : str
        ``"linear"``, ``"gp"``, ``"trees"`` or ``"nn"`` (SPEC §8 grouping).
    constant_aleatoric : bool
        AU constant in x (its AU correlations are undefined, SPEC §8).
    epistemic_from : str
        ``"closed_form"`` or ``"samples"``.
    description : str
        One line, with the paper section that describes the method.
    available : bool
        Whether the class could be imported.
    error : str or None
        The import error when not available.
    """

    name: str
    target: str
    family: str
    constant_aleatoric: bool
    epistemic_from: str
    description: str
    available: bool = True
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The row as a plain dict (for JSON)."""
        return asdict(self)


#: The registry table: (name, target, family, constant_aleatoric, epistemic_from, description).
REGISTRY: tuple[tuple[str, str, str, bool, str, str], ...] = (
    (
        "blr",
        "udbench.methods.blr:BLR",
        "linear",
        True,
        "closed_form",
        "Bayesian linear regression, evidence maximisation (paper C.1)",
    ),
    (
        "gp",
        "udbench.methods.gp:GP",
        "gp",
        True,
        "closed_form",
        "Exact GP, Matérn-5/2 ARD + linear kernel, type-II ML (paper C.1)",
    ),
    (
        "ngboost-bag",
        "udbench.methods.ngboost_bag:NGBoostBag",
        "trees",
        False,
        "samples",
        "Bagged NGBoost ensemble, Gaussian members (paper C.3)",
    ),
    (
        "catboost-ps",
        "udbench.methods.catboost_ps:CatBoostPS",
        "trees",
        False,
        "samples",
        "CatBoost posterior-sampling members, RMSEWithUncertainty (paper C.3)",
    ),
    (
        "nn-ens",
        "udbench.methods.nn_ens:NNEnsemble",
        "nn",
        False,
        "samples",
        "Deep ensemble on the residual-MLP backbone (paper C.4)",
    ),
)

_COMPONENT = "methods"


def _import_target(target: str, parameter: str) -> type:
    """Import ``module:Class``; raise UdbenchError on a malformed path or a missing class."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr or ":" in attr:
        raise param_error(_COMPONENT, parameter, "be 'package.module:ClassName'", target)
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise UdbenchError(
            f"{_COMPONENT}: cannot import module {module_name!r} for {target!r}: "
            f"{type(err).__name__}: {err}"
        ) from err
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise param_error(
                _COMPONENT, parameter, f"name a class defined in {module_name!r}", target
            )
        obj = getattr(obj, part)
    if not (inspect.isclass(obj) and issubclass(obj, BaseMethod)):
        raise param_error(
            _COMPONENT, parameter, "name a subclass of udbench.methods.BaseMethod", target
        )
    return obj


def _rows() -> dict[str, tuple[str, str, str, bool, str, str]]:
    return {row[0]: row for row in REGISTRY}


def list_methods() -> list[MethodInfo]:
    """All registered methods, in registry order, each with its availability.

    Returns
    -------
    list of MethodInfo
        One per registry row; a row whose module cannot be imported has
        ``available=False`` and the import error in ``error`` (this function never raises
        for such a row).
    """
    out = []
    for name, target, family, const_au, eu_from, desc in REGISTRY:
        try:
            _import_target(target, "name")
            ok, error = True, None
        except Exception as err:  # any import-time failure makes the row unavailable
            ok, error = False, str(err)
        out.append(MethodInfo(name, target, family, const_au, eu_from, desc, ok, error))
    return out


def get_method_class(name_or_import_path: str) -> type[BaseMethod]:
    """Return the class of a registered method, or of a user class given by import path.

    Parameters
    ----------
    name_or_import_path : str
        A registry name (``"gp"``, case-insensitive) or ``"package.module:ClassName"``.

    Returns
    -------
    type
        A subclass of :class:`udbench.methods.BaseMethod`.

    Raises
    ------
    UdbenchError
        Unknown name (the message lists the registered ones), a registered method whose
        module cannot be imported (with the import error), a malformed import path, or a
        class that is not a ``BaseMethod``.
    """
    if not isinstance(name_or_import_path, str) or not name_or_import_path.strip():
        raise param_error(
            _COMPONENT, "name", "be a method name or import path", name_or_import_path
        )
    text = name_or_import_path.strip()
    if ":" in text:
        return _import_target(text, "name")
    rows = _rows()
    key = text.lower()
    if key not in rows:
        raise param_error(_COMPONENT, "name", f"be one of {sorted(rows)} or 'module:Class'", text)
    try:
        return _import_target(rows[key][1], "name")
    except UdbenchError as err:
        raise UdbenchError(f"{_COMPONENT}: method {key!r} is not available here: {err}") from err


def parse_method_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``"name:key=value,key=value"`` into the name and the raw (string) overrides.

    The name may be an import path ``package.module:ClassName`` (then the overrides follow a
    second colon: ``"pkg.mod:MyMethod:alpha=1"``). A registered name before the first colon
    always means the registered method.

    Raises
    ------
    UdbenchError
        A malformed override (no ``=``, empty key, a key given twice).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise param_error(_COMPONENT, "spec", "be 'name[:key=value,...]'", spec)
    text = spec.strip()
    head, sep, rest = text.partition(":")
    first = rest.partition(":")[0]
    if sep and first and "=" not in first and head.lower() not in _rows():
        # import path: module:Class[:overrides]
        cls_part, sep2, rest = rest.partition(":")
        name, overrides_text = f"{head}:{cls_part}", rest if sep2 else ""
    else:
        name, overrides_text = head, rest
    overrides: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in overrides_text.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise param_error(_COMPONENT, "spec", "write overrides as key=value", item)
        if key in overrides:
            raise param_error(_COMPONENT, "spec", "give each hyperparameter once", key)
        overrides[key] = value.strip()
    return name, overrides


def _coerce(cls: type[BaseMethod], key: str, raw: Any, default: Any) -> Any:
    """Convert a string override to the hyperparameter's declared (or default's) type."""
    if not isinstance(raw, str):
        return raw
    spec = cls.param_constraints.get(key) or cls.search_space.get(key) or {}
    kind = spec.get("type")
    low = raw.strip().lower()
    if low in ("none", "null") and (default is None or spec.get("none_ok")):
        return None
    if kind is None:
        if isinstance(default, bool):
            kind = "bool"
        elif isinstance(default, int):
            kind = "int"
        elif isinstance(default, float):
            kind = "float"
        else:
            kind = "str"
    rule = {
        "bool": "be true or false",
        "int": "be an integer",
        "float": "be a real number",
    }.get(kind)
    try:
        if kind == "bool":
            if low in ("true", "1", "yes"):
                return True
            if low in ("false", "0", "no"):
                return False
            raise ValueError(raw)
        if kind == "int":
            value = float(raw)
            if not value.is_integer():
                raise ValueError(raw)
            return int(value)
        if kind == "float":
            return float(raw)
        if kind == "categorical":
            for choice in spec["choices"]:
                if str(choice).lower() == low:
                    return choice
            return raw
    except ValueError:
        raise param_error(cls.__name__, key, rule or "have the declared type", raw) from None
    return raw


def make_method(
    spec: str | type[BaseMethod], random_state: int | None = None, **overrides: Any
) -> BaseMethod:
    """Build a method from ``"name:key=value,..."`` (or a class) with validated hyperparameters.

    Parameters
    ----------
    spec : str or type
        ``"nn-ens:n_members=5,lr=0.01"``, ``"gp"``, ``"pkg.mod:MyMethod:alpha=2"``, or a
        ``BaseMethod`` subclass. String values are converted to the hyperparameter's declared
        type (``int``, ``float``, ``bool``: true/false, ``None``: none).
    random_state : int, optional
        Set on the method when given (every method takes ``random_state``).
    **overrides
        Further hyperparameters (already typed); they win over those in ``spec``.

    Returns
    -------
    BaseMethod
        An unfitted method.

    Raises
    ------
    UdbenchError
        Unknown method, unknown hyperparameter (the message lists the valid ones), a value
        that cannot be converted, or a value outside the declared range.
    """
    if isinstance(spec, type):
        if not issubclass(spec, BaseMethod):
            raise param_error(_COMPONENT, "spec", "be a BaseMethod subclass", spec)
        cls: type[BaseMethod] = spec
        raw: dict[str, Any] = {}
    else:
        name, raw_str = parse_method_spec(spec)
        raw = dict(raw_str)
        cls = get_method_class(name)
    params: dict[str, Any] = {**raw, **overrides}
    if random_state is not None:
        params["random_state"] = random_state
    valid = cls().get_params(deep=False)
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise param_error(
            cls.__name__,
            unknown[0],
            f"be a hyperparameter of {cls.name!r}: {sorted(valid)}",
            params[unknown[0]],
        )
    typed = {k: _coerce(cls, k, v, valid[k]) for k, v in params.items()}
    method = cls(**typed)
    method.validate_hyperparameters()
    return method
