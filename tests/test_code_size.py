"""No module over 1,000 lines, no function over 120 (issue 33, item 6; issue 63, item 3).

The module bound is a warning bound, not a reason to split a coherent module (issue 63 raised
it from 600, which had led to splits by size rather than by job).

A function's size is its body without its docstring and without the functions and classes
nested in it (each of those is measured on its own): typer commands declare their options in
the signature, and a command module's ``register`` holds the commands it defines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "udbench"
MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 120
_FILES = sorted(SRC.rglob("*.py"))


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of ``node``'s body, docstring and nested definitions left out."""
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            body = body[1:]
    if not body:
        return 0
    lines = set(range(body[0].lineno, (node.end_lineno or node.lineno) + 1))
    for child in ast.walk(node):
        if child is not node and isinstance(
            child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        ):
            first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
            lines -= set(range(first, (child.end_lineno or child.lineno) + 1))
    return len(lines)


def test_body_lines_counts_what_it_says() -> None:
    tree = ast.parse(
        "def f():\n"
        '    """Doc.\n\n    More."""\n'
        "    a = 1\n"
        "    @dec\n"
        "    def g():\n"
        "        return 2\n"
        "    return a\n"
    )
    f = tree.body[0]
    assert isinstance(f, ast.FunctionDef)
    assert body_lines(f) == 2  # ``a = 1`` and ``return a``
    g = f.body[2]
    assert isinstance(g, ast.FunctionDef) and body_lines(g) == 1


@pytest.mark.parametrize("path", _FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_module_and_function_sizes(path: Path) -> None:
    text = path.read_text()
    n = len(text.splitlines())
    assert n <= MAX_FILE_LINES, f"{path.relative_to(SRC)}: {n} lines (at most {MAX_FILE_LINES})"
    long = [
        f"{node.name} ({body_lines(node)} lines)"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and body_lines(node) > MAX_FUNCTION_LINES
    ]
    assert not long, f"{path.relative_to(SRC)}: functions over {MAX_FUNCTION_LINES} lines: {long}"
