"""The method registry: one line per method, name -> ``"module:Class"`` (DESIGN.md).

A method's capabilities — ``family``, ``constant_aleatoric``, ``epistemic_from``,
``description``, ``smoke_params``, ``search_space`` — live only on its class
(:class:`udbench.methods.BaseMethod`); the registry holds nothing but where each class
lives, and everything else (``udbench methods``, the quickstart's methods, the benchmark's
candidates, the tables of the README and docs/methods.md) is derived from it. Adding a
method to udbench is one new module (plus its test) and one line in :data:`REGISTRY`. A line
whose module cannot be imported (a missing optional dependency) is listed as unavailable
with the import error; nothing else breaks.

A user's own method plugs in without editing udbench, three ways (docs/methods.md,
"Adding a method"):

- by import path, ``package.module:ClassName``, anywhere a method name is accepted;
- registered under its name for this environment: the environment variable
  ``UDBENCH_METHODS`` (:data:`ENV_VAR`), entries ``name=package.module:ClassName``
  separated by commas or whitespace;
- registered by an installed package: an entry point in the group ``udbench.methods``
  (:data:`ENTRY_POINT_GROUP`), ``name = "package.module:ClassName"`` in its
  ``[project.entry-points."udbench.methods"]`` table.

A registered name must equal the class's ``name`` attribute (results are stored under
it), and a user entry cannot take a name udbench already registers.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import re
from dataclasses import asdict, dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any

from udbench._validation import UdbenchError, param_error, unknown_name_error

if TYPE_CHECKING:  # imported where used: listing methods must not import scikit-learn
    from udbench.methods.base import BaseMethod

__all__ = [
    "ENTRY_POINT_GROUP",
    "ENV_VAR",
    "REGISTRY",
    "MethodInfo",
    "get_method_class",
    "list_methods",
    "make_method",
    "methods_markdown",
    "paper_methods",
    "parse_method_spec",
    "registered_methods",
]

#: udbench's methods, name -> ``"module:Class"``, in the order they are listed. One line per
#: method; everything else about a method is read from its class.
REGISTRY: dict[str, str] = {
    "blr": "udbench.methods.blr:BLR",
    "gp": "udbench.methods.gp:GP",
    "ngboost-bag": "udbench.methods.ngboost_bag:NGBoostBag",
    "catboost-ps": "udbench.methods.catboost_ps:CatBoostPS",
    "catboost-kgb": "udbench.methods.catboost_kgb:CatBoostKGB",
    "nn-ens": "udbench.methods.nn_ens:NNEnsemble",
    "ngboost-nig": "udbench.methods.ngboost_nig:NGBoostNIG",
    "vlgp": "udbench.methods.vlgp:VLGP",
    "dkl": "udbench.methods.dkl:DKL",
    "nn-bag": "udbench.methods.nn_bag:NNBag",
    "nn-drop": "udbench.methods.nn_drop:NNDropout",
    "nn-edl": "udbench.methods.nn_edl:NNEvidential",
    "nn-deup": "udbench.methods.nn_deup:NNDeup",
    "nn-swag": "udbench.methods.nn_swag:NNSwag",
    "sngp-het": "udbench.methods.sngp_het:SNGPHet",
    "nn-lap": "udbench.methods.nn_lap:NNLaplace",
    "nn-lap-sn": "udbench.methods.nn_lap:NNLaplaceSN",
    "nn-fsp": "udbench.methods.nn_fsp:NNFSP",
    "nn-fsp-sn": "udbench.methods.nn_fsp:NNFSPSN",
}

#: Environment variable registering a user's methods: ``name=module:Class`` entries.
ENV_VAR = "UDBENCH_METHODS"
#: Entry-point group in which installed packages register methods (``name = "module:Class"``).
ENTRY_POINT_GROUP = "udbench.methods"

_COMPONENT = "methods"
_NAME = re.compile(r"[a-z0-9][a-z0-9_.+-]*")


@dataclass(frozen=True)
class MethodInfo:
    """One registered method as its class describes it, with whether it can be imported here.

    Attributes
    ----------
    name : str
        Registry name (``"gp"``).
    target : str
        ``"package.module:ClassName"``.
    family : str or None
        ``"linear"``, ``"gp"``, ``"trees"`` or ``"nn"`` (SPEC §8 grouping); the class's
        ``family``. None when the class cannot be imported (the same for the three below).
    constant_aleatoric : bool or None
        AU constant in x (its AU correlations are undefined, SPEC §8).
    epistemic_from : str or None
        ``"closed_form"`` or ``"samples"``.
    description : str or None
        One line, with the paper section that describes the method.
    available : bool
        Whether the class could be imported (and its ``name`` matches the registry's).
    error : str or None
        Why not, when not available.
    source : str
        Where it is registered: ``"udbench"``, ``"UDBENCH_METHODS"`` or
        ``"entry point <distribution>"``.
    """

    name: str
    target: str
    family: str | None
    constant_aleatoric: bool | None
    epistemic_from: str | None
    description: str | None
    available: bool = True
    error: str | None = None
    source: str = "udbench"

    def to_dict(self) -> dict[str, Any]:
        """The row as a plain dict (for JSON)."""
        return asdict(self)


def _import_target(target: str, parameter: str) -> type[BaseMethod]:
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
    from udbench.methods.base import BaseMethod

    if not (inspect.isclass(obj) and issubclass(obj, BaseMethod)):
        raise param_error(
            _COMPONENT, parameter, "name a subclass of udbench.methods.BaseMethod", target
        )
    return obj


def _user_entries() -> list[tuple[str, str, str, str | None]]:
    """The user's registrations: ``(name, target, source, problem)``, entry points first.

    ``problem`` is why the entry cannot be used (a malformed or clashing name), else None.

    Raises
    ------
    UdbenchError
        ``UDBENCH_METHODS`` holds an entry that is not ``name=module:Class``.
    """
    entries: list[tuple[str, str, str]] = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        entries.append((ep.name, ep.value, f"entry point {getattr(dist, 'name', '?')}"))
    for item in os.environ.get(ENV_VAR, "").replace(",", " ").split():
        name, eq, target = item.partition("=")
        if not eq or not name.strip() or ":" not in target:
            raise param_error(ENV_VAR, "entry", "be 'name=package.module:ClassName'", item)
        entries.append((name.strip(), target.strip(), ENV_VAR))
    out: list[tuple[str, str, str, str | None]] = []
    taken: dict[str, str] = {name: "udbench" for name in REGISTRY}
    for name, target, source in entries:
        key = name.lower()
        problem = None
        if not _NAME.fullmatch(key):
            problem = (
                f"{source}: method name {name!r} must be lower case letters, digits and "
                f"'-', '_', '.', '+' (no ':', ',' or '=')"
            )
        elif key in taken:
            problem = f"{source}: method name {key!r} is already registered by {taken[key]}"
        else:
            taken[key] = source
        out.append((key, target, source, problem))
    return out


def registered_methods() -> dict[str, str]:
    """Every usable registration, name -> ``"module:Class"``: udbench's, then the user's.

    Returns
    -------
    dict
        :data:`REGISTRY` followed by the entry points of :data:`ENTRY_POINT_GROUP` and the
        entries of ``$UDBENCH_METHODS`` (a user entry with a malformed name or a name
        already taken is left out; :func:`list_methods` shows why).

    Raises
    ------
    UdbenchError
        ``UDBENCH_METHODS`` is malformed.
    """
    out = dict(REGISTRY)
    out.update({n: t for n, t, _, problem in _user_entries() if problem is None})
    return out


def _load(name: str, target: str) -> type[BaseMethod]:
    """Import a registered class and check that its ``name`` is the registered one."""
    cls = _import_target(target, "name")
    if cls.name != name:
        raise UdbenchError(
            f"{_COMPONENT}: {target} is registered as {name!r} but its class attribute "
            f"'name' is {cls.name!r}; they must agree (results are stored under the name)"
        )
    return cls


def list_methods(*, static: bool = False) -> list[MethodInfo]:
    """All registered methods (udbench's, then the user's), each as its class describes it.

    Parameters
    ----------
    static : bool, default False
        Read each class's capabilities from its source without importing it
        (:mod:`udbench.methods._static`; ``udbench methods`` uses it to answer in well under
        a second instead of importing JAX, GPJax, CatBoost, …). *Available* then means that
        every third-party package the module needs at import is installed. A class whose
        source does not answer statically is imported as usual. Same rows as
        ``static=False`` (tested for every registered method), except that an import error
        other than a missing package shows only with ``static=False``.

    Returns
    -------
    list of MethodInfo
        One per registration; one whose class cannot be imported (or whose ``name``
        disagrees, or whose user name is malformed or taken) has ``available=False``, the
        reason in ``error`` and None for the class's attributes (this function never
        raises for such a row).

    Raises
    ------
    UdbenchError
        ``UDBENCH_METHODS`` is malformed.
    """
    rows = [(n, t, "udbench", None) for n, t in REGISTRY.items()] + _user_entries()
    out = []
    for name, target, source, problem in rows:
        if static and problem is None:
            info = _static_row(name, target, source)
            if info is not None:
                out.append(info)
                continue
        try:
            if problem is not None:
                raise UdbenchError(problem)
            cls = _load(name, target)
        except Exception as err:  # any import-time failure makes the row unavailable
            out.append(MethodInfo(name, target, None, None, None, None, False, str(err), source))
            continue
        out.append(
            MethodInfo(
                name,
                target,
                cls.family,
                bool(cls.constant_aleatoric),
                cls.epistemic_from,
                cls.description,
                True,
                None,
                source,
            )
        )
    return out


_CAPABILITIES = ("name", "family", "constant_aleatoric", "epistemic_from", "description")


@functools.cache
def paper_methods() -> tuple[str, ...]:
    """The paper's methods (SPEC §8), by registry name, in the paper's order.

    Derived from the classes of :data:`REGISTRY`: every one whose ``paper_index`` is set,
    sorted by it (read from the source without importing the method modules where it is a
    literal, :mod:`udbench.methods._static`; else by importing the class).

    Returns
    -------
    tuple of str

    Raises
    ------
    UdbenchError
        Two registered classes with the same ``paper_index``.
    """
    from udbench.methods._static import read_class_statically

    indexed: dict[int, str] = {}
    for name, target in REGISTRY.items():
        info = read_class_statically(target, ("paper_index",))
        if info is not None and "paper_index" in info.attributes:
            index = info.attributes["paper_index"]
        else:
            index = _import_target(target, "name").paper_index
        if index is None:
            continue
        if index in indexed:
            raise param_error(
                _COMPONENT,
                "paper_index",
                f"be unique among the registered methods (also {indexed[index]!r})",
                f"{index} ({name!r})",
            )
        indexed[int(index)] = name
    return tuple(indexed[i] for i in sorted(indexed))


def _static_row(name: str, target: str, source: str) -> MethodInfo | None:
    """The row of :func:`list_methods` read from source, or None to import instead."""
    from udbench.methods._static import read_class_statically

    info = read_class_statically(target, _CAPABILITIES)
    if info is None or info.attributes.get("name") != name:
        return None  # a name mismatch is reported by the import path, with its message
    if info.missing_packages:
        error = (
            f"{_COMPONENT}: cannot import {target!r}: missing package(s) "
            f"{', '.join(info.missing_packages)}"
        )
        return MethodInfo(name, target, None, None, None, None, False, error, source)
    a = info.attributes
    return MethodInfo(
        name,
        target,
        a["family"],
        bool(a["constant_aleatoric"]),
        a["epistemic_from"],
        a["description"],
        True,
        None,
        source,
    )


def methods_markdown(infos: list[MethodInfo] | None = None) -> str:
    """The registered methods as a Markdown table (``udbench methods --markdown``).

    Columns: name, class, family, AU (constant / heteroscedastic), EU source, description.
    The tables of README.md and docs/methods.md are this text (a test compares them).

    Parameters
    ----------
    infos : list of MethodInfo, optional
        Default: :func:`list_methods`.

    Returns
    -------
    str
        The table, one line per method, ending with a newline.
    """
    infos = list_methods() if infos is None else infos
    lines = [
        "| name | class | family | AU | EU | description |",
        "|---|---|---|---|---|---|",
    ]
    for i in infos:
        if not i.available:
            lines.append(f"| `{i.name}` | `{i.target}` | ? | ? | ? | unavailable: {i.error} |")
            continue
        au = "constant" if i.constant_aleatoric else "heteroscedastic"
        eu = (i.epistemic_from or "").replace("_", " ")
        lines.append(f"| `{i.name}` | `{i.target}` | {i.family} | {au} | {eu} | {i.description} |")
    return "\n".join(lines) + "\n"


def get_method_class(name_or_import_path: str) -> type[BaseMethod]:
    """Return the class of a registered method, or of a user class given by import path.

    Parameters
    ----------
    name_or_import_path : str
        A registered name (``"gp"``, case-insensitive; udbench's or the user's, see the
        module docstring) or ``"package.module:ClassName"``.

    Returns
    -------
    type
        A subclass of :class:`udbench.methods.BaseMethod`.

    Raises
    ------
    UdbenchError
        Unknown name (the message lists the registered ones), a registered method whose
        module cannot be imported (with the import error) or whose class's ``name`` differs
        from the registered one, a malformed import path, or a class that is not a
        ``BaseMethod``.
    """
    if not isinstance(name_or_import_path, str) or not name_or_import_path.strip():
        raise param_error(
            _COMPONENT, "name", "be a method name or import path", name_or_import_path
        )
    text = name_or_import_path.strip()
    if ":" in text:
        return _import_target(text, "name")
    key = text.lower()
    rows = REGISTRY if key in REGISTRY else registered_methods()
    if key not in rows:
        raise param_error(_COMPONENT, "name", f"be one of {sorted(rows)} or 'module:Class'", text)
    try:
        return _load(key, rows[key])
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
    if sep and first and "=" not in first and head.lower() not in registered_methods():
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
    for extra in spec.get("also", ()):
        if str(extra).lower() == low:
            return extra
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
        from udbench.methods.base import BaseMethod

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
        raise unknown_name_error(cls.__name__, f"hyperparameter of {cls.name!r}", unknown[0], valid)
    typed = {k: _coerce(cls, k, v, valid[k]) for k, v in params.items()}
    method = cls(**typed)
    method.validate_hyperparameters()
    return method
