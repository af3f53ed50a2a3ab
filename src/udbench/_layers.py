"""The import layers of :mod:`udbench`, written once, and the checker that enforces them.

Every module of the package belongs to one layer of :data:`LAYERS` (listed from the ground
up). The rule, checked by ``tests/test_import_layers.py`` with :func:`check_layers`:

1. A module may import modules of its own layer and of the layers below it, never of a
   layer above (no *upward* import).
2. In a layer marked ``independent`` the parts may not import each other at all (sister
   method modules share helpers through ``methods/_*.py``, not through each other; the
   foundations ``risk``, ``priors`` and ``data`` know nothing of one another).
3. No import cycle between modules, not even within one layer.
4. No import named in :data:`FORBIDDEN`, even downward: a pair of packages that must share
   no code path although the layers would allow it (the methods under test and the prior
   that makes their truths: ``methods -> priors``).

Every ``import``/``from … import`` statement counts wherever it stands: at module level,
inside a function (a *lazy* import, used to keep ``udbench --help`` fast and JAX out of
processes that do not need it), in a class body or under ``if TYPE_CHECKING:``. A lazy
import is a way to defer a cost, not a way around the layers: it may not go upward either.
Imports made by name at run time (``importlib.import_module("udbench.methods.gp")``, the
method and prior registries' tables) are not seen by the checker; the registries sit above
what they name.

Patterns are written relative to the package (``"data"`` is ``udbench.data``; ``""`` is the
package's own ``__init__``) and matched with :func:`fnmatch.fnmatchcase`; a pattern covers
the module it names and all its submodules. When several patterns match a module, the most
specific one (most literal characters) decides its layer: ``"methods._*"`` (the shared method
toolkit) beats ``"methods.*"`` (one method per module), which beats ``"methods"`` (the
package's ``__init__``). A module that no pattern matches is an error: a new top-level
module or package must be given a layer here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

__all__ = [
    "FORBIDDEN",
    "LAYERS",
    "Forbidden",
    "ImportEdge",
    "Layer",
    "check_layers",
    "collect_imports",
    "layer_of",
]


@dataclass(frozen=True)
class Layer:
    """One layer of the package.

    Parameters
    ----------
    name : str
        Shown in error messages.
    patterns : tuple of str
        Module patterns relative to the package (see the module docstring).
    independent : bool, default False
        If True, the parts of this layer may not import each other. A part is what one
        pattern names: the package ``data`` for ``"data"``, one module or subpackage
        ``methods.<name>`` for ``"methods.*"``.
    """

    name: str
    patterns: tuple[str, ...]
    independent: bool = False


#: The layers of :mod:`udbench`, ground first. Read the module docstring for the rule.
LAYERS: tuple[Layer, ...] = (
    # version string, parameter errors, seed streams, the download cache, this file
    Layer("ground", ("", "_*")),
    # the executor of independent jobs (inline or Dask), its cluster set-up and child processes
    Layer("execution", ("execution",)),
    # decompositions of risk | function priors and reference posteriors | covariates
    Layer("foundations", ("risk", "priors", "data"), independent=True),
    Layer("design", ("design",)),  # noise models and training-input coverage (uses data)
    # task specs, generation, task files, grids generated on the executor (priors + data +
    # design + execution)
    Layer("tasks", ("tasks",)),
    # what methods share: the base class, private helpers (methods/_*.py), the NN backbone
    # (methods.classification: the classifier contract, beside the regression one in base)
    Layer("method toolkit", ("methods.base", "methods._*", "methods.nn", "methods.classification")),
    Layer("methods", ("methods.*",), independent=True),  # one method per module
    # the registry, the conformance battery, method specs resolved and hashed (methods.configs)
    Layer(
        "method registry",
        (
            "methods",
            "methods.registry",
            "methods.conformance",
            "methods.configs",
            "methods.classifiers",
            "methods.classifier_conformance",
            "methods.classifier_behaviour",
        ),
    ),
    Layer("evaluation", ("evaluation",)),  # run loop, store, scoring, leaderboard
    Layer("report", ("report",)),
    Layer("analyses and tuning", ("analyses", "tuning")),
    # whole jobs end to end (quickstart; the studies of paper Appendix D)
    Layer("recipes", ("recipes", "studies", "campaigns")),
    Layer("command helpers", ("commands._*",)),  # shared CLI option checks
    Layer("commands", ("commands.*",), independent=True),  # one sub-command group per module
    Layer("cli", ("commands", "cli", "__main__")),
)


@dataclass(frozen=True)
class Forbidden:
    """A downward import the layers would allow but the package forbids.

    Parameters
    ----------
    importer, target : str
        Module patterns relative to the package, as in :class:`Layer` (a pattern covers the
        module it names and all its submodules): no module matching ``importer`` may import
        a module matching ``target``.
    reason : str
        Why, shown in the error message.
    """

    importer: str
    target: str
    reason: str


#: Imports forbidden although they point downward (rule 4 of the module docstring).
FORBIDDEN: tuple[Forbidden, ...] = (
    Forbidden(
        "methods",
        "priors",
        "the methods under test share no code path with the prior that makes their truths; "
        "what both need lives in the ground layer (the L-BFGS-B driver: udbench._optim)",
    ),
)


@dataclass(frozen=True)
class ImportEdge:
    """One import statement's dependency of a module on another module of the package.

    ``target`` is the module actually imported: ``from udbench.methods import base`` names
    ``udbench.methods.base``; ``from udbench.data import N_SHELLS`` names ``udbench.data``.
    """

    importer: str
    target: str
    path: Path
    lineno: int
    lazy: bool


def _module_names(src_root: Path, package: str) -> dict[str, Path]:
    names: dict[str, Path] = {}
    for path in sorted((src_root / package).rglob("*.py")):
        parts = list(path.relative_to(src_root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` starts with (None if outside the package)."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        candidate = ".".join(parts[:k])
        if candidate in modules:
            return candidate
    return None


def collect_imports(src_root: Path, package: str) -> tuple[dict[str, Path], list[ImportEdge]]:
    """Parse every module of ``package`` under ``src_root`` and list its in-package imports.

    Parameters
    ----------
    src_root : Path
        The folder holding the package folder (``src`` in this repository).
    package : str
        Top-level package name.

    Returns
    -------
    modules : dict
        Dotted module name -> file (a package's name maps to its ``__init__.py``).
    edges : list of ImportEdge
        Every import of a module of the package, module-level and lazy ones.
    """
    modules = _module_names(src_root, package)
    edges: list[ImportEdge] = []
    for importer, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        here = importer.split(".")
        if path.name != "__init__.py":
            here = here[:-1]  # the package that relative imports start from
        # walk the tree, remembering whether a node lies inside a function body
        stack: list[tuple[ast.AST, bool]] = [(tree, False)]
        while stack:
            node, lazy = stack.pop()
            names: list[str] = []
            lineno = getattr(node, "lineno", 0)
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here[: len(here) - (node.level - 1)]
                    base = ".".join([*parts, node.module] if node.module else parts)
                names = [f"{base}.{alias.name}" for alias in node.names]
            for name in names:
                target = _resolve(name, modules)
                if target is not None and target != importer:
                    edges.append(ImportEdge(importer, target, path, lineno, lazy))
            inner = lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    edges.sort(key=lambda e: (e.importer, e.lineno, e.target))
    return modules, edges


def _specificity(pattern: str) -> int:
    return sum(ch not in "*?[]" for ch in pattern)


def _matches(relative: str, pattern: str) -> bool:
    return fnmatchcase(relative, pattern) or (
        pattern != "" and fnmatchcase(relative, pattern + ".*")
    )


def _relative(module: str, package: str) -> str:
    return module[len(package) + 1 :] if module != package else ""


def layer_of(module: str, package: str, layers: Sequence[Layer] = LAYERS) -> tuple[int, str]:
    """Index of the layer of ``module`` in ``layers`` and the part of that layer it is in.

    Raises
    ------
    ValueError
        If no pattern matches the module, or two layers' patterns match it equally well.
    """
    relative = _relative(module, package)
    best: list[tuple[int, int, str]] = []  # (specificity, layer index, pattern)
    for index, layer in enumerate(layers):
        for pattern in layer.patterns:
            if _matches(relative, pattern):
                best.append((_specificity(pattern), index, pattern))
    if not best:
        raise ValueError(
            f"module {module} is in no layer: give it one in udbench._layers.LAYERS "
            f"(patterns are relative to {package!r})"
        )
    top = max(s for s, _, _ in best)
    winners = {(i, p) for s, i, p in best if s == top}
    if len({i for i, _ in winners}) > 1:
        raise ValueError(
            f"module {module} matches patterns of several layers equally well: "
            f"{sorted((layers[i].name, p) for i, p in winners)}"
        )
    index, pattern = min(winners)
    n_parts = len(pattern.split(".")) if pattern else 0
    part = ".".join([package, *relative.split(".")][: n_parts + 1]) if relative else package
    return index, part


def _cycles(nodes: Iterable[str], graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop(0)
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def check_layers(
    src_root: str | Path,
    package: str = "udbench",
    layers: Sequence[Layer] = LAYERS,
    forbidden: Sequence[Forbidden] = FORBIDDEN,
) -> list[str]:
    """Every breach of the layer rule in ``package``, one message per import (empty if none).

    Parameters
    ----------
    src_root : str or Path
        The folder holding the package folder (``src`` in this repository).
    package : str, default "udbench"
        Top-level package name.
    layers : sequence of Layer, default :data:`LAYERS`
        The layers, ground first.
    forbidden : sequence of Forbidden, default :data:`FORBIDDEN`
        Downward imports that are forbidden all the same.

    Returns
    -------
    list of str
        ``"<file>:<line>: ..."`` for each upward import, each import between parts of
        an independent layer and each forbidden import, one message per import cycle
        (naming every import in it), and one per module that is in no layer.
    """
    src_root = Path(src_root)
    modules, edges = collect_imports(src_root, package)
    problems: list[str] = []
    placed: dict[str, tuple[int, str]] = {}
    for module in modules:
        try:
            placed[module] = layer_of(module, package, layers)
        except ValueError as err:
            problems.append(f"{_show(modules[module], src_root)}: {err}")

    for edge in edges:
        if edge.importer not in placed or edge.target not in placed:
            continue
        (i, part_i), (j, part_j) = placed[edge.importer], placed[edge.target]
        where = f"{_show(edge.path, src_root)}:{edge.lineno}"
        how = "lazily imports" if edge.lazy else "imports"
        if j > i:
            problems.append(
                f"{where}: upward import: {edge.importer} (layer '{layers[i].name}') {how} "
                f"{edge.target} (layer '{layers[j].name}', above it); a module may import "
                f"only its own layer and the layers below (udbench._layers.LAYERS)"
            )
        elif j == i and layers[i].independent and part_i != part_j:
            problems.append(
                f"{where}: {edge.importer} {how} its sibling {edge.target} in the independent "
                f"layer '{layers[i].name}'; move what both need to a lower layer "
                f"(a shared private module)"
            )
        else:
            source = _relative(edge.importer, package)
            target = _relative(edge.target, package)
            for rule in forbidden:
                if _matches(source, rule.importer) and _matches(target, rule.target):
                    problems.append(
                        f"{where}: forbidden import: {edge.importer} {how} {edge.target}; "
                        f"'{rule.importer}' may not import '{rule.target}': {rule.reason} "
                        f"(udbench._layers.FORBIDDEN)"
                    )

    graph: dict[str, set[str]] = {}
    first: dict[tuple[str, str], ImportEdge] = {}
    for edge in edges:
        graph.setdefault(edge.importer, set()).add(edge.target)
        first.setdefault((edge.importer, edge.target), edge)
    for component in _cycles(modules, graph):
        members = set(component)
        links = [
            f"{_show(e.path, src_root)}:{e.lineno} ({a} -> {b})"
            for (a, b), e in sorted(first.items())
            if a in members and b in members
        ]
        problems.append(f"import cycle between {', '.join(component)}: {'; '.join(links)}")
    return problems


def _show(path: Path, src_root: Path) -> str:
    try:
        return path.relative_to(src_root.parent).as_posix()
    except ValueError:  # pragma: no cover - a path outside src_root's parent
        return path.as_posix()
