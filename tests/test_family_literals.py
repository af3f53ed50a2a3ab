"""No module outside ``udbench.priors`` compares a prior family's name with a string literal.

What the pipeline asks of a family is its capability record
(:class:`udbench.priors.base.PriorCapabilities`, read with ``prior_capabilities``), so a new
family is its module and its entries in the family tables, with no ``if family == "..."``
elsewhere (issue 33). The check parses every module with :mod:`ast`: a comparison (``==``,
``!=``, ``in``, ``not in``, ``is``) with a family name as a literal operand, or inside a
literal tuple, list or set operand, and a ``match`` case on such a literal, are reported.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from udbench.priors.base import FAMILY_CAPABILITIES, PRIOR_FAMILIES

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "udbench"


def family_names(package: Path) -> set[str]:
    """The registered family names and every ``family = "..."`` of a class in ``priors/``."""
    names = set(PRIOR_FAMILIES) | set(FAMILY_CAPABILITIES)
    for path in (package / "priors").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    target = value = None
                    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                        target, value = stmt.targets[0], stmt.value
                    elif isinstance(stmt, ast.AnnAssign):
                        target, value = stmt.target, stmt.value
                    if (
                        isinstance(target, ast.Name)
                        and target.id == "family"
                        and isinstance(value, ast.Constant)
                        and isinstance(value.value, str)
                    ):
                        names.add(value.value)
    return names


def _literals(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for elt in node.elts for s in _literals(elt)]
    return []


def family_literal_comparisons(package: Path, names: set[str], skip: str = "priors") -> list[str]:
    """``"<file>:<line>: <source>"`` for each comparison of a family name with a literal in
    ``package`` outside its subpackage ``skip``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if rel.parts[0] == skip:
            continue
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            hits: list[str] = []
            if isinstance(node, ast.Compare):
                for operand in (node.left, *node.comparators):
                    hits += [s for s in _literals(operand) if s in names]
            elif isinstance(node, ast.match_case):
                hits += [
                    s
                    for sub in ast.walk(node.pattern)
                    if isinstance(sub, ast.MatchValue)
                    for s in _literals(sub.value)
                    if s in names
                ]
            if hits:
                where = node.pattern if isinstance(node, ast.match_case) else node
                line = where.lineno
                segment = ast.get_source_segment(text, where) or ""
                found.append(f"{rel}:{line}: {segment.splitlines()[0] if segment else hits}")
    return found


def test_family_names_include_every_registered_family() -> None:
    names = family_names(PACKAGE)
    assert {"gp", "hbart", "bnn"} <= names
    assert "gpc" in names  # the latent-GP classification prior's class, not yet registered


def test_no_family_name_literal_is_compared_outside_priors() -> None:
    found = family_literal_comparisons(PACKAGE, family_names(PACKAGE))
    assert found == [], "ask prior_capabilities(...) instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        'if spec.family == "gp":',
        'if "hbart" != getattr(prior, "family", None):',
        'if family in ("hbart", "bnn"):',
        'if family not in {"gp"}:',
        'x = 1 if fam == "bnn" else 2\nif x:',
    ],
)
def test_the_check_finds_a_family_literal(tmp_path: Path, line: str) -> None:
    pkg = tmp_path / "toy"
    (pkg / "priors").mkdir(parents=True)
    (pkg / "priors" / "base.py").write_text('if family == "gp":\n    pass\n')  # allowed there
    (pkg / "tasks.py").write_text(textwrap.dedent(f"{line}\n    pass\n"))
    found = family_literal_comparisons(pkg, {"gp", "hbart", "bnn"})
    assert len(found) == 1 and found[0].startswith("tasks.py:"), found


def test_the_check_finds_a_match_case_and_ignores_other_literals(tmp_path: Path) -> None:
    pkg = tmp_path / "toy"
    pkg.mkdir()
    (pkg / "a.py").write_text(
        'match family:\n    case "bnn":\n        pass\nif kind == "nn":\n    pass\n'
        'FAMILIES = ("gp", "hbart")\nget("gp")\n'
    )
    found = family_literal_comparisons(pkg, {"gp", "hbart", "bnn"})
    assert found == ['a.py:2: "bnn"'], found
