"""The report splits a mixed results frame by task type: regression part, Classification part."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from _classification_results import METHODS, classification_rows
from _results import fabricate_results
from udbench.report._classification import CLASSIFICATION_LABELS, classification_board
from udbench.report._task_types import row_task_types
from udbench.report.html import ReportSection, write_report

_N = 40  # bootstrap replicates: fast, and the same in every report compared
_REG_SECTION = ReportSection("A regression analysis", "<p>regression body</p>")
_CLF_SECTION = ReportSection(
    "Classification: an analysis", "<p>classification body</p>", task_type="classification"
)


@pytest.fixture(scope="module")
def regression() -> pd.DataFrame:
    return fabricate_results(
        n_datasets=2,
        n_seeds=1,
        priors=("gp",),
        noises=("homoscedastic", "step"),
        coverages=("ood",),
        methods={"blr": ("linear", True), "gp": ("gp", True)},
        random_state=3,
    )


@pytest.fixture(scope="module")
def reports(regression, tmp_path_factory) -> dict[str, Path]:
    """The reports of the regression rows, the mixed frame and the classification rows."""
    root = tmp_path_factory.mktemp("clf-report")
    mixed = pd.concat([regression, classification_rows()], ignore_index=True)
    frames = {"regression": regression, "mixed": mixed, "classification": classification_rows()}
    # the sections ``analyze`` would give: no classification one without classification rows
    sections = {
        "regression": [_REG_SECTION],
        "mixed": [_CLF_SECTION, _REG_SECTION],
        "classification": [_CLF_SECTION],
    }
    return {
        name: write_report(frame, root / name, n_resamples=_N, sections=sections[name]).parent
        for name, frame in frames.items()
    }


def _page(folder: Path) -> str:
    return (folder / "report.html").read_text(encoding="utf-8")


def _table_after(page: str, heading: str) -> str:
    start = page.index(heading)
    return page[page.index("<table", start) : page.index("</table>", start)]


def _methods(table: str) -> list[str]:
    return re.findall(r"<tr><td>[^<]*</td><td>([^<]*)</td>", table)


def _headings(page: str) -> list[str]:
    return re.findall(r"<h2>([^<]*)</h2>", page)


def test_the_regression_part_is_that_of_the_regression_rows_alone(reports):
    reg, mixed = _page(reports["regression"]), _page(reports["mixed"])
    board = _table_after(mixed, "<h2>Leaderboard</h2>")
    assert board == _table_after(reg, "<h2>Leaderboard</h2>")
    assert _methods(board) and not set(_methods(board)) & set(METHODS)
    # the figures are drawn from the regression rows alone: the same PNG bytes
    pngs = sorted(p.name for p in reports["regression"].glob("*.png"))
    assert "eu_rho.png" in pngs
    assert pngs == sorted(p.name for p in reports["mixed"].glob("*.png"))
    for name in pngs:
        assert (reports["mixed"] / name).read_bytes() == (reports["regression"] / name).read_bytes()
    assert "Regression rows only" in mixed and "Regression rows only" not in reg


def test_the_classification_part_lists_the_classifiers_only(reports):
    page = _page(reports["mixed"])
    part = page.index("<h2>Classification</h2>")
    table = _table_after(page, "<h2>Classification</h2>")
    assert sorted(_methods(table)) == sorted(METHODS)
    for label in CLASSIFICATION_LABELS.values():
        assert f"<th>{label}</th>" in table
    assert "(n=4)" in table  # ρ(AU, AU*) on every temperature mode, homoscedastic included
    # sections: regression ones in the regression part, classification ones after the board
    assert page.index("A regression analysis") < part < page.index("Classification: an analysis")


def test_a_regression_only_report_has_the_sections_it_had(reports):
    reg, mixed = _headings(_page(reports["regression"])), _headings(_page(reports["mixed"]))
    assert "Classification" not in reg and "Classification: an analysis" not in reg
    assert reg == [h for h in mixed if not h.startswith("Classification")]
    assert "accuracy" not in _table_after(_page(reports["regression"]), "Per-instance results")


def test_a_classification_only_report_has_no_regression_leaderboard(reports):
    page = _page(reports["classification"])
    heads = _headings(page)
    assert "Leaderboard" not in heads and "Classification" in heads
    assert "No regression rows" in page
    assert not list(reports["classification"].glob("*.png"))
    assert "accuracy" in _table_after(page, "Per-instance results")


def test_the_classification_board_ranks_by_rho_and_keeps_every_temperature_mode():
    rows = classification_rows(constant=("C",))
    assert set(row_task_types(rows)) == {"classification"}
    board = classification_board(rows, confidence=0.9, n_resamples=_N).set_index("method")
    # pooled mean ρ(EU, EU*_risk): A .5, B .55, C .25
    assert board["rank"].to_dict() == {"B": 1, "A": 2, "C": 3}
    assert board.loc["A", "rho_au_n"] == 4 and board.loc["B", "accuracy"] == pytest.approx(0.8)
    assert board.loc["C", "rho_au_n"] == 0  # constant AU: no ρ(AU, AU*)
    assert board.loc["C", "nll"] == pytest.approx(3.0)
