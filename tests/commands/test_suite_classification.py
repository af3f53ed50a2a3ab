"""``udbench suite`` for classification: the ``clf-small`` / ``clf-all`` presets resolve to
their stated grids, and a one-instance classification suite goes generate → check → run →
report (the report's Classification part) and prints its leaderboard; its plan is not printed
(``udbench plan`` has no classification projection)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from udbench._validation import UdbenchError
from udbench.commands.suite import stage_commands
from udbench.methods.classifiers import CLASSIFIERS
from udbench.recipes.suites import (
    classification_options,
    load_suite,
    method_specs,
    suite_grid,
    suite_task_type,
)

TINY = """
datasets = "diabetes"
families = "gpc"
classes = "3"
difficulty = "medium"
noise = "homoscedastic"
coverage = "balanced"
seeds = "0"
fidelity = "smoke"
draws = 40
methods = "logreg-lap,catboost-ve"
method_params = "smoke"
"""


def _grid(suite):  # type: ignore[no-untyped-def]
    return suite_grid(suite)


@pytest.mark.parametrize(
    ("name", "n_tasks", "n_datasets", "settings"),
    [
        ("clf-small", 120, 3, {(3, "medium")}),
        ("clf-all", 5760, 12, {(k, d) for k in (2, 3) for d in ("easy", "medium", "hard")}),
    ],
)
def test_classification_presets_resolve_to_their_grids(name, n_tasks, n_datasets, settings):  # type: ignore[no-untyped-def]
    suite = load_suite(name)
    assert suite_task_type(suite) == "classification"
    specs = _grid(suite)
    assert len(specs) == n_tasks
    assert len({s.dataset for s in specs}) == n_datasets
    assert {(s.n_classes, s.difficulty) for s in specs} == settings
    assert {s.family for s in specs} == {"gpc"}
    assert len({s.noise for s in specs}) == 4 and len({s.coverage for s in specs}) == 2
    assert {s.fidelity.value if hasattr(s.fidelity, "value") else s.fidelity for s in specs} == {
        "standard"
    }
    assert method_specs(suite) == list(CLASSIFIERS) and len(CLASSIFIERS) == 11
    gen = stage_commands(suite, Path("suite-out"))["generate"]
    assert gen[gen.index("--classes") + 1] == suite["classes"]
    assert gen[gen.index("--difficulty") + 1] == suite["difficulty"]


def test_regression_suites_keep_their_settings_and_mixed_families_are_refused(tmp_path) -> None:
    gp_small = load_suite("gp-small")
    assert suite_task_type(gp_small) == "regression" and classification_options(gp_small) == {}
    assert "--classes" not in stage_commands(gp_small, tmp_path)["generate"]
    with pytest.raises(UdbenchError, match="not both"):
        suite_task_type({**gp_small, "families": "gp,gpc"})
    path = tmp_path / "mine.toml"
    path.write_text(TINY.replace('classes = "3"', "classes = 3"))
    with pytest.raises(UdbenchError, match="classes"):
        load_suite(str(path))
    smoke = method_specs({"methods": "classifiers", "method_params": "smoke"})
    assert len(smoke) == 11 and smoke[0].startswith("logreg-lap:")


def test_tiny_classification_suite_produces_a_report_and_leaderboard(tmp_path, capsys) -> None:
    from udbench.cli import main

    suite_file = tmp_path / "tiny.toml"
    suite_file.write_text(TINY)
    out = tmp_path / "out"
    assert main(["suite", str(suite_file), "--out", str(out), "--workers", "0"]) == 0
    assert "no classification projection" in capsys.readouterr().err
    assert len(list((out / "tasks").glob("*.npz"))) == 1
    report = json.loads((out / "check.json").read_text())
    assert set(report["families"]) == {"gpc"}
    rows = pd.concat(pd.read_parquet(p) for p in (out / "results").rglob("*.parquet"))
    assert set(rows["task_type"]) == {"classification"} and len(rows) == 2
    assert {m.split(":")[0] for m in rows["method"]} == {"logreg-lap", "catboost-ve"}
    page = out / "report" / "report.html"
    html = page.read_text()
    assert "<h2>Classification</h2>" in html  # the report's Classification part
    assert "logreg-lap" in html and "catboost-ve" in html
    written = page.stat().st_mtime_ns
    # resuming does no work: every stage skips, the report too
    assert main(["suite", str(suite_file), "--out", str(out), "--workers", "0"]) == 0
    assert "results unchanged since reported, skipped" in capsys.readouterr().err
    assert page.stat().st_mtime_ns == written
    assert main(["leaderboard", str(out / "results")]) == 0
    board = capsys.readouterr().out
    assert "logreg-lap" in board and "catboost-ve" in board and "NLL" in board
