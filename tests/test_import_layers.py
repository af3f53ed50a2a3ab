"""The package's imports point one way: no upward import, no sibling import, no cycle.

The layers are written once, in :data:`udbench._layers.LAYERS`. The self-tests run the
checker on small synthetic packages so that it cannot pass by seeing nothing.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from udbench._layers import (
    FORBIDDEN,
    LAYERS,
    Forbidden,
    Layer,
    check_layers,
    collect_imports,
    layer_of,
)

SRC = Path(__file__).resolve().parents[1] / "src"


def test_udbench_imports_follow_the_layers() -> None:
    problems = check_layers(SRC, "udbench", LAYERS)
    assert problems == [], "\n".join(problems)


def test_checker_sees_the_whole_package() -> None:
    modules, edges = collect_imports(SRC, "udbench")
    assert {"udbench", "udbench.cli", "udbench.priors.base", "udbench.methods.nn.backbone"} <= set(
        modules
    )
    pairs = {(e.importer, e.target, e.lazy) for e in edges}
    # a module-level import, a lazy one inside a function, and a from-package-import-module
    assert ("udbench.design.coverage", "udbench.data.covariates", False) in pairs
    assert ("udbench.commands.run", "udbench.evaluation.runner", True) in pairs
    assert ("udbench.risk.decompositions", "udbench.risk._checks", False) in pairs
    assert len(edges) > 100


@pytest.mark.parametrize(
    ("module", "layer", "part"),
    [
        ("udbench", "ground", "udbench"),
        ("udbench._validation", "ground", "udbench._validation"),
        ("udbench.execution.executor", "execution", "udbench.execution"),
        ("udbench.data.sources", "foundations", "udbench.data"),
        ("udbench.methods._ensemble", "method toolkit", "udbench.methods._ensemble"),
        ("udbench.methods.nn.training", "method toolkit", "udbench.methods.nn"),
        ("udbench.methods.gp", "methods", "udbench.methods.gp"),
        ("udbench.methods.future_method", "methods", "udbench.methods.future_method"),
        ("udbench.methods", "method registry", "udbench.methods"),
        ("udbench.methods.registry", "method registry", "udbench.methods.registry"),
        ("udbench.recipes.quickstart", "recipes", "udbench.recipes"),
        ("udbench.commands._options", "command helpers", "udbench.commands._options"),
        ("udbench.commands.run", "commands", "udbench.commands.run"),
        ("udbench.cli", "cli", "udbench.cli"),
    ],
)
def test_layer_of_picks_the_most_specific_pattern(module: str, layer: str, part: str) -> None:
    index, found = layer_of(module, "udbench")
    assert (LAYERS[index].name, found) == (layer, part)


# --- self-tests on a synthetic package --------------------------------------------------
TOY_LAYERS = (
    Layer("ground", ("", "_*")),
    Layer("low", ("low",)),
    Layer("mid", ("alpha", "beta"), independent=True),
    Layer("high", ("high",)),
)


def _write(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (path relative to ``root/src`` -> source) and return ``root/src``."""
    src = root / "src"
    for name, text in files.items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return src


CLEAN = {
    "toy/__init__.py": "",
    "toy/_util.py": "X = 1\n",
    "toy/low/__init__.py": "from toy.low.a import A\n",
    "toy/low/a.py": "from toy._util import X\nA = X\n",
    "toy/low/b.py": "from . import a\nfrom .a import A\n",
    "toy/alpha.py": "from toy.low import A\n",
    "toy/beta.py": "import toy.low.b\n",
    "toy/high/__init__.py": "",
    "toy/high/top.py": "from toy import alpha, beta\n\ndef f():\n    from toy.low import b\n",
}


def test_checker_passes_a_clean_synthetic_package(tmp_path: Path) -> None:
    src = _write(tmp_path, CLEAN)
    assert check_layers(src, "toy", TOY_LAYERS) == []
    _, edges = collect_imports(src, "toy")
    # relative imports resolve; `from toy import alpha` names the module toy.alpha
    pairs = {(e.importer, e.target) for e in edges}
    assert {("toy.low.b", "toy.low.a"), ("toy.high.top", "toy.alpha")} <= pairs


@pytest.mark.parametrize("lazy", [False, True])
def test_checker_fails_on_an_upward_import(tmp_path: Path, lazy: bool) -> None:
    line = "from toy.high.top import f" if lazy else "import toy.high.top"
    body = f"A = 1\n\ndef g():\n    {line}\n" if lazy else f"A = 1\n{line}\n"
    src = _write(tmp_path, {**CLEAN, "toy/low/a.py": body})
    problems = check_layers(src, "toy", TOY_LAYERS)
    lineno = 4 if lazy else 2
    upward = [p for p in problems if "upward import" in p]
    assert len(upward) == 1, problems
    assert upward[0].startswith(f"src/toy/low/a.py:{lineno}: upward import: toy.low.a")
    assert "toy.high.top (layer 'high'" in upward[0]
    assert ("lazily imports" in upward[0]) is lazy


def test_checker_fails_on_an_upward_relative_import_in_a_type_checking_block(
    tmp_path: Path,
) -> None:
    body = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..high import top\n"
    src = _write(tmp_path, {**CLEAN, "toy/low/c.py": body})
    problems = check_layers(src, "toy", TOY_LAYERS)
    assert len(problems) == 1 and problems[0].startswith("src/toy/low/c.py:3: upward import")


def test_checker_fails_on_a_sibling_import_in_an_independent_layer(tmp_path: Path) -> None:
    src = _write(tmp_path, {**CLEAN, "toy/beta.py": "import toy.low.b\nfrom toy.alpha import *\n"})
    problems = check_layers(src, "toy", TOY_LAYERS)
    assert len(problems) == 1
    assert problems[0].startswith("src/toy/beta.py:2: toy.beta imports its sibling toy.alpha")


def test_checker_fails_on_a_cycle_within_a_layer(tmp_path: Path) -> None:
    cyclic = {
        **CLEAN,
        "toy/low/a.py": "from toy._util import X\nA = X\n\ndef g():\n    from toy.low.b import a\n",
    }
    problems = check_layers(_write(tmp_path, cyclic), "toy", TOY_LAYERS)
    assert len(problems) == 1
    assert problems[0].startswith("import cycle between toy.low.a, toy.low.b:")
    assert "src/toy/low/a.py:5 (toy.low.a -> toy.low.b)" in problems[0]
    assert "src/toy/low/b.py:1 (toy.low.b -> toy.low.a)" in problems[0]


def test_checker_fails_on_a_cycle_through_a_package_init(tmp_path: Path) -> None:
    # toy.low's __init__ imports toy.low.a, which imports the package back
    src = _write(tmp_path, {**CLEAN, "toy/low/a.py": "import toy.low\nA = 1\n"})
    problems = check_layers(src, "toy", TOY_LAYERS)
    assert len(problems) == 1 and "import cycle between toy.low, toy.low.a" in problems[0]


def test_checker_fails_on_a_module_in_no_layer(tmp_path: Path) -> None:
    src = _write(tmp_path, {**CLEAN, "toy/stray.py": ""})
    problems = check_layers(src, "toy", TOY_LAYERS)
    assert len(problems) == 1
    assert problems[0].startswith("src/toy/stray.py: module toy.stray is in no layer")


def test_upward_import_added_to_the_real_package_is_caught(tmp_path: Path) -> None:
    """A copy of src/udbench with one deliberate upward import (priors -> evaluation)."""
    import shutil

    src = tmp_path / "src"
    shutil.copytree(SRC / "udbench", src / "udbench", ignore=shutil.ignore_patterns("__pycache__"))
    base = src / "udbench" / "priors" / "base.py"
    lines = base.read_text().splitlines()
    lines += ["def _oops():", "    from udbench.evaluation import leaderboard  # upward"]
    base.write_text("\n".join(lines) + "\n")
    problems = check_layers(src, "udbench", LAYERS)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"src/udbench/priors/base.py:{len(lines)}: upward import")


def test_checker_fails_on_a_forbidden_downward_import(tmp_path: Path) -> None:
    # high -> low is allowed by the layers; the rule forbids high.* -> low.b (only)
    rule = Forbidden("high", "low.b", "no reason")
    src = _write(tmp_path, CLEAN)
    problems = check_layers(src, "toy", TOY_LAYERS, forbidden=[rule])
    assert len(problems) == 1, problems
    assert problems[0].startswith(
        "src/toy/high/top.py:4: forbidden import: toy.high.top lazily imports toy.low.b; "
        "'high' may not import 'low.b': no reason"
    )
    assert check_layers(src, "toy", TOY_LAYERS, forbidden=[]) == []


def test_methods_may_not_import_priors() -> None:
    assert [(r.importer, r.target) for r in FORBIDDEN] == [("methods", "priors")]
    _, edges = collect_imports(SRC, "udbench")
    # the GP methods and the GP prior share the ground layer's L-BFGS-B driver
    pairs = {(e.importer, e.target) for e in edges}
    assert ("udbench.methods.gp", "udbench._optim") in pairs
    assert ("udbench.priors.gp.fit", "udbench._optim") in pairs


@pytest.mark.parametrize(
    ("module", "line"),
    [
        ("methods/vlgp.py", "    from udbench.priors.gp.fit import LBFGSBObjective"),
        ("methods/conformance.py", "    from udbench.priors import GPPrior"),
    ],
)
def test_methods_to_priors_import_added_to_the_real_package_is_caught(
    tmp_path: Path, module: str, line: str
) -> None:
    import shutil

    src = tmp_path / "src"
    shutil.copytree(SRC / "udbench", src / "udbench", ignore=shutil.ignore_patterns("__pycache__"))
    path = src / "udbench" / module
    lines = [*path.read_text().splitlines(), "def _oops():", line]
    path.write_text("\n".join(lines) + "\n")
    problems = check_layers(src, "udbench", LAYERS)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"src/udbench/{module}:{len(lines)}: forbidden import: ")
    assert "'methods' may not import 'priors'" in problems[0]


def _public_api_breaches(src: Path, package: str, layer_name: str) -> list[str]:
    """Imports by modules of ``layer_name`` of a *submodule* of a lower layer's part
    (``udbench.priors.base`` instead of ``udbench.priors``), the ground layer excepted."""
    index = [layer.name for layer in LAYERS].index(layer_name)
    _, edges = collect_imports(src, package)
    out = []
    for edge in edges:
        i, _ = layer_of(edge.importer, package)
        j, part = layer_of(edge.target, package)
        if i == index and 0 < j < index and edge.target != part:
            out.append(f"{edge.importer}:{edge.lineno} imports {edge.target}, not {part}")
    return out


def test_the_task_layer_uses_only_the_public_api_of_lower_layers() -> None:
    # issue 18: tasks import priors, data and design through their packages' exports
    assert _public_api_breaches(SRC, "udbench", "tasks") == []
    import udbench.priors as priors

    for name in ("acceptance", "rhat_gates", "RHAT_THRESHOLD", "batch_means_mcse_var"):
        assert name in priors.__all__ and hasattr(priors, name)


def test_public_api_check_catches_a_private_import(tmp_path: Path) -> None:
    import shutil

    src = tmp_path / "src"
    shutil.copytree(SRC / "udbench", src / "udbench")
    extra = src / "udbench" / "tasks" / "extra.py"
    extra.write_text("from udbench.priors.diagnostics import acceptance\n")
    assert _public_api_breaches(src, "udbench", "tasks") == [
        "udbench.tasks.extra:1 imports udbench.priors.diagnostics, not udbench.priors"
    ]


def test_the_execution_layer_sits_under_tasks_and_imports_only_the_ground() -> None:
    # issue 33: the executor moved out of evaluation so that the task layer's grid pipeline
    # (tasks.grid.generate_grid) can use it without reaching up
    names = [layer.name for layer in LAYERS]
    assert names.index("ground") < names.index("execution") < names.index("tasks")
    _, edges = collect_imports(SRC, "udbench")
    pairs = {(e.importer, e.target) for e in edges}
    assert ("udbench.tasks.grid", "udbench.execution") in pairs
    assert ("udbench.evaluation.runner", "udbench.execution.executor") in pairs
    below = {
        layer_of(e.target, "udbench")[0]
        for e in edges
        if e.importer.startswith("udbench.execution")
        and not e.target.startswith("udbench.execution")
    }
    assert below <= {names.index("ground")}


def test_an_execution_module_importing_the_evaluation_layer_is_caught(tmp_path: Path) -> None:
    import shutil

    src = tmp_path / "src"
    shutil.copytree(SRC / "udbench", src / "udbench", ignore=shutil.ignore_patterns("__pycache__"))
    path = src / "udbench" / "execution" / "executor.py"
    lines = [*path.read_text().splitlines(), "def _oops():", "    import udbench.evaluation.store"]
    path.write_text("\n".join(lines) + "\n")
    problems = check_layers(src, "udbench", LAYERS)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"src/udbench/execution/executor.py:{len(lines)}: upward import")
