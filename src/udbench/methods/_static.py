"""A method class's declared capabilities read from its source, without importing it.

``udbench methods`` lists every registered method with its family and flags. Importing the
method modules to read five class attributes costs seconds (JAX, GPJax, CatBoost, NGBoost
load at import), so the listing reads them from the source instead: the class body's
literal assignments (``family: ClassVar[str] = "gp"``), following its base classes through
the module and the modules it imports from, down to :class:`udbench.methods.BaseMethod`.
Whether the method is *available* is answered the same way: every third-party package the
module imports at module level — its own and, transitively, those of the udbench modules it
imports — must be installed (:func:`importlib.util.find_spec`, which locates a package
without running it).

Anything not literal (an attribute computed at class creation, a base class made
dynamically, a star import) makes the reader give up, and the caller imports the class the
ordinary way; a test compares both readings for every registered method.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["StaticClassInfo", "read_class_statically"]

_PACKAGE = "udbench"


@dataclass(frozen=True)
class StaticClassInfo:
    """What the source of a class declares.

    Attributes
    ----------
    attributes : dict
        The requested class attributes found as literals (own or inherited).
    missing_packages : tuple of str
        Third-party top-level packages the module needs at import and that are not
        installed (empty: importable as far as can be told without running it).
    """

    attributes: dict[str, Any]
    missing_packages: tuple[str, ...]


class _GiveUp(Exception):
    """The source does not say statically; import the class instead."""


@cache
def _parse(module: str) -> tuple[ast.Module, str] | None:
    """The AST and file of a udbench module, located by path (None if there is none).

    Located by path, not with :func:`importlib.util.find_spec`, which would import the
    parent packages — the very cost this module avoids.
    """
    parts = module.split(".")
    if parts[0] != _PACKAGE:
        return None
    root = Path(__file__).resolve().parents[1]  # .../udbench
    base = root.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file() and (len(parts) > 1 or path.name == "__init__.py"):
            return ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), str(path)
    return None


def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _module_imports(module: str) -> tuple[dict[str, tuple[str, str]], set[str]]:
    """Names bound by ``from x import y`` (name -> (module, attr)) and all imported modules."""
    parsed = _parse(module)
    if parsed is None:
        return {}, set()
    tree, origin = parsed
    is_package = origin.endswith("__init__.py")
    names: dict[str, tuple[str, str]] = {}
    modules: set[str] = set()
    for node in tree.body:  # module level only: what runs at import
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node, is_package)
            if source == "__future__":
                continue
            modules.add(source)
            for alias in node.names:
                if alias.name == "*":
                    raise _GiveUp(f"star import in {module}")
                names[alias.asname or alias.name] = (source, alias.name)
                modules.add(f"{source}.{alias.name}")  # may be a submodule
    return names, modules


def _third_party_needs(module: str, seen: set[str] | None = None) -> set[str]:
    """Top-level third-party packages imported (transitively through udbench) by ``module``."""
    seen = set() if seen is None else seen
    if module in seen:
        return set()
    seen.add(module)
    _, modules = _module_imports(module)
    needs: set[str] = set()
    for m in modules:
        top = m.split(".")[0]
        if top == _PACKAGE:
            if _parse(m) is not None:
                needs |= _third_party_needs(m, seen)
                # importing a submodule runs its package's __init__ first
                parent = m.rpartition(".")[0]
                while parent:
                    needs |= _third_party_needs(parent, seen)
                    parent = parent.rpartition(".")[0]
        elif top:
            needs.add(top)
    return needs


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError as err:
        raise _GiveUp("not a literal") from err


def _class_attributes(module: str, qualname: str, wanted: tuple[str, ...]) -> dict[str, Any]:
    parsed = _parse(module)
    if parsed is None:
        raise _GiveUp(f"no source for {module}")
    tree = parsed[0]
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    if qualname not in classes:
        names, _ = _module_imports(module)
        if qualname in names:  # re-exported: follow it
            source, attr = names[qualname]
            return _class_attributes(source, attr, wanted)
        raise _GiveUp(f"{qualname} is not a class of {module}")
    node = classes[qualname]
    found: dict[str, Any] = {}
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if stmt.target.id in wanted and stmt.value is not None:
                found[stmt.target.id] = _literal(stmt.value)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name) and target.id in wanted:
                    found[target.id] = _literal(stmt.value)
                elif isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple):
                    for t, v in zip(target.elts, stmt.value.elts, strict=False):
                        if isinstance(t, ast.Name) and t.id in wanted:
                            found[t.id] = _literal(v)
    rest = tuple(a for a in wanted if a not in found)
    if not rest:
        return found
    names, _ = _module_imports(module)
    for base in node.bases:
        if not isinstance(base, ast.Name):
            raise _GiveUp(f"base class of {qualname} is not a plain name")
        if base.id in classes:
            inherited = _class_attributes(module, base.id, rest)
        elif base.id in names:
            source, attr = names[base.id]
            inherited = _class_attributes(source, attr, rest)
        else:
            raise _GiveUp(f"base {base.id} of {qualname} not found")
        for key, value in inherited.items():
            found.setdefault(key, value)
        rest = tuple(a for a in wanted if a not in found)
        if not rest:
            return found
    raise _GiveUp(f"{qualname} does not declare {rest}")


def read_class_statically(target: str, attributes: tuple[str, ...]) -> StaticClassInfo | None:
    """The literal class attributes and missing packages of ``"module:Class"``, or None.

    Parameters
    ----------
    target : str
        ``"package.module:ClassName"``.
    attributes : tuple of str
        Class attributes to read (own or inherited).

    Returns
    -------
    StaticClassInfo or None
        None when the source does not answer statically (see the module docstring): the
        caller then imports the class.
    """
    module, _, qualname = target.partition(":")
    if not module or not qualname or "." in qualname:
        return None
    try:
        found = _class_attributes(module, qualname, attributes)
        needs = _third_party_needs(module)
    except (_GiveUp, SyntaxError, OSError, UnicodeDecodeError):
        return None
    missing = tuple(sorted(p for p in needs if importlib.util.find_spec(p) is None))
    return StaticClassInfo(found, missing)
