"""The quickstart recipe (udbench.recipes.quickstart) and its wiring to `udbench quickstart`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

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
    calls: list[tuple[Path, int | None]] = []

    def fake(out, *, workers=None, console=None, **_):  # type: ignore[no-untyped-def]
        calls.append((Path(out), workers))
        return pd.DataFrame(), Path(out) / "report" / "report.html"

    monkeypatch.setattr(recipe, "quickstart", fake)
    assert main(["quickstart", "--out", str(tmp_path / "qs"), "-w", "0"]) == 0
    assert calls == [(tmp_path / "qs", 0)]
    assert "report written to" in capsys.readouterr().out
