"""The quickstart recipe (udbench.recipes.quickstart) and its wiring to `udbench quickstart`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.recipes import quickstart as recipe


def test_quickstart_grid_is_gp_on_diabetes_both_coverages_two_noise_modes() -> None:
    specs = recipe.quickstart_specs()
    assert [(s.dataset, s.family, s.noise, s.coverage, s.seed) for s in specs] == [
        ("diabetes", "gp", "homoscedastic", "balanced", 0),
        ("diabetes", "gp", "homoscedastic", "ood", 0),
        ("diabetes", "gp", "smooth-monotone", "balanced", 0),
        ("diabetes", "gp", "smooth-monotone", "ood", 0),
    ]
    assert {(s.fidelity, s.n_draws) for s in specs} == {("smoke", 200)}


def test_cli_quickstart_runs_the_recipe(tmp_path: Path, monkeypatch, capsys) -> None:
    calls: list[tuple[Path, int | None, tuple[str, ...]]] = []

    def fake(out, *, workers=None, methods=(), console=None, **_):  # type: ignore[no-untyped-def]
        calls.append((Path(out), workers, methods))
        return pd.DataFrame(), Path(out) / "report" / "report.html"

    monkeypatch.setattr(recipe, "quickstart", fake)
    assert main(["quickstart", "--out", str(tmp_path / "qs"), "-w", "0"]) == 0
    assert "report written to" in capsys.readouterr().out
    # --methods: repeatable, or separated by commas or spaces
    args = ["quickstart", "--out", str(tmp_path / "qs"), "-m", "blr,gp", "-m", "nn-ens vlgp"]
    assert main(args) == 0
    assert calls == [
        (tmp_path / "qs", 0, recipe.QUICKSTART_METHODS),
        (tmp_path / "qs", None, ("blr", "gp", "nn-ens", "vlgp")),
    ]


def test_quickstart_rejects_an_unknown_method_before_generating(tmp_path: Path, capsys) -> None:
    assert main(["quickstart", "--out", str(tmp_path / "qs"), "-m", "blr,forest"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "parameter 'name' must be one of" in err and "got 'forest'" in err
    assert not (tmp_path / "qs" / "tasks").exists()  # nothing generated
    with pytest.raises(UdbenchError, match="parameter 'methods' must name at least one method"):
        recipe.quickstart(tmp_path / "qs2", methods=())


def test_quickstart_reuses_only_task_files_of_the_same_instance(tmp_path: Path, monkeypatch):
    """A stale file (other D) is replaced, a matching one reused, a damaged one regenerated."""
    from dataclasses import replace

    import udbench.evaluation.runner as runner
    import udbench.report.html as html
    import udbench.tasks as tasks
    from udbench.tasks import generate_task, read_task_meta

    specs = recipe.quickstart_specs()
    task_dir = tmp_path / "tasks"
    task_dir.mkdir()
    stale = replace(specs[0], n_draws=40)  # the same instance made with another D
    generate_task(stale).save(task_dir / f"{specs[0].task_id}.npz")
    made = []

    def fake_generate(spec, **kwargs):  # type: ignore[no-untyped-def]
        made.append(spec.task_id)
        return generate_task(spec, **kwargs)

    monkeypatch.setattr(tasks, "generate_task", fake_generate)
    ran: list[list[Path]] = []
    monkeypatch.setattr(runner, "run_benchmark", lambda tasks, *a, **k: ran.append(list(tasks)))
    monkeypatch.setattr("udbench.evaluation.store.read_results", lambda p: pd.DataFrame())
    monkeypatch.setattr("udbench.evaluation.leaderboard.leaderboard", lambda df: df)
    monkeypatch.setattr(html, "write_report", lambda df, out, **k: Path(out))
    lines: list[str] = []

    class Console:
        def print(self, text, **_):  # type: ignore[no-untyped-def]
            lines.append(str(text))

    recipe.quickstart(tmp_path, console=Console(), methods=("blr",))
    assert made == [s.task_id for s in specs]  # the stale one too
    assert any("replacing task" in line and "n_draws 40 (asked 200)" in line for line in lines)
    assert read_task_meta(task_dir / f"{specs[0].task_id}.npz")["spec"]["n_draws"] == 200
    made.clear()
    (task_dir / f"{specs[1].task_id}.npz").write_bytes(b"damaged")
    recipe.quickstart(tmp_path, console=Console(), methods=("blr",))
    assert made == [specs[1].task_id]  # only the damaged file; the matching ones are reused
    # the methods run on the recipe's own four files, never on others left in tasks/
    (task_dir / "diabetes__gpc-k3-easy__homoscedastic__balanced__s0.npz").write_bytes(b"other")
    recipe.quickstart(tmp_path, console=Console(), methods=("blr",))
    assert ran[-1] == [task_dir / f"{s.task_id}.npz" for s in specs]
