"""The analysis table: a new analysis is one entry, and ``analyze``/the report loop over it."""

from __future__ import annotations

import pandas as pd
import pytest

from _results import fabricate_results
from udbench._losses import LOSS_TABLE
from udbench.analyses import analyze, registry
from udbench.analyses.registry import (
    ANALYSES,
    AnalysisInputs,
    AnalysisSpec,
    FigureSpec,
    Requirement,
    TableSpec,
    has_columns,
    min_methods,
    register_analysis,
)
from udbench.cli import main
from udbench.report._figures import figure
from udbench.report.html import write_report

_METHODS = {"blr": ("linear", True), "gp": ("gp", True), "nn-ens": ("nn", False)}

#: The files ``analyze`` writes for the built-in analyses, in order (no proxy metrics in the
#: fabricated frame: no proxy_agreement figure; no other loss: no loss_agreement).
_BUILT_IN_FILES = [
    "tables/headline.csv",
    "tables/headline.tex",
    "figures/headline_eu.png",
    "figures/headline_eu.svg",
    "figures/headline_au.png",
    "figures/headline_au.svg",
    "tables/stability.csv",
    "tables/stability.tex",
    "figures/stability.png",
    "figures/stability.svg",
    "tables/rank_heatmap.csv",
    "tables/rank_heatmap.tex",
    "figures/rank_heatmap.png",
    "figures/rank_heatmap.svg",
    "tables/matched_prior.csv",
    "tables/matched_prior.tex",
    "figures/matched_prior.png",
    "figures/matched_prior.svg",
    "tables/matched_prior_methods.csv",
    "tables/matched_prior_methods.tex",
    "tables/entanglement.csv",
    "tables/entanglement.tex",
    "figures/entanglement.png",
    "figures/entanglement.svg",
    "tables/shells.csv",
    "tables/shells.tex",
    "figures/shells.png",
    "figures/shells.svg",
    "tables/accuracy.csv",
    "tables/accuracy.tex",
    "figures/accuracy.png",
    "figures/accuracy.svg",
    "tables/proxy_agreement.csv",
    "tables/proxy_agreement.tex",
    "tables/proxy_agreement_levels.csv",
    "analyses.html",
]


@pytest.fixture(scope="module")
def small() -> pd.DataFrame:
    return fabricate_results(
        n_datasets=2,
        n_seeds=1,
        priors=("gp", "bnn"),
        noises=("homoscedastic", "smooth-monotone"),
        coverages=("ood",),
        methods=_METHODS,
        random_state=2,
    )


def _ok_cells(i: AnalysisInputs) -> dict[str, pd.DataFrame]:
    ok = i.results[i.results["status"].astype(str) == "ok"]
    table = ok.groupby("method_label").size().rename("n_ok").reset_index()
    return {"toy_cells": table.rename(columns={"method_label": "method"})}


def _toy_figure(i: AnalysisInputs):  # type: ignore[no-untyped-def]
    fig = figure(figsize=(3, 2))
    t = i.tables["toy_cells"]
    fig.add_subplot().bar(t["method"], t["n_ok"])
    return fig


TOY = AnalysisSpec(
    "toy",
    _ok_cells,
    (
        TableSpec(
            "toy_cells",
            "Toy: ok cells per method",
            "Number of ok cells of every method.",
            (FigureSpec("toy_cells", _toy_figure),),
        ),
    ),
)
NEEDY = AnalysisSpec(
    "needy",
    lambda i: {"needy": pd.DataFrame({"x": [1]})},
    (TableSpec("needy", "Needy"),),
    requires=(min_methods(100), Requirement("a unicorn", lambda i: False)),
)


@pytest.fixture
def toy_table(monkeypatch):
    """The built-in analyses plus the toy ones (restored afterwards)."""
    monkeypatch.setattr(registry, "ANALYSES", list(ANALYSES))
    register_analysis(TOY)
    register_analysis(NEEDY)


def test_the_built_in_analyses_write_the_same_files_in_order(small, tmp_path):
    res = analyze(small, tmp_path / "an", n_resamples=30)
    assert [f.relative_to(tmp_path / "an").as_posix() for f in res.files] == _BUILT_IN_FILES
    regression = [a for a in ANALYSES if a.task_type == "regression"]
    assert list(res.tables) == [
        *(t.name for a in regression if a.name != "loss_agreement" for t in a.tables),
        "proxy_agreement_levels",
    ]
    assert res.skipped == {
        "loss_agreement": "needs results scored under another loss (udbench run/score --loss)",
        "classification": "needs classification rows",
        "classification_shells": "needs classification rows",
        "classification_loss_agreement": "needs classification rows",
    }
    page = res.html.read_text(encoding="utf-8")
    assert "Figure proxy_agreement: not drawn" in page


def test_bootstrap_settings_give_the_same_tables_as_the_keywords(small, tmp_path):
    from udbench._resampling import BootstrapSettings

    kw = analyze(
        small,
        tmp_path / "kw",
        bootstrap_unit="dataset",
        n_resamples=30,
        random_state=4,
        write_html=False,
    )
    settings = BootstrapSettings(n_resamples=30, random_state=4, unit="dataset")
    st = analyze(small, tmp_path / "st", n_resamples=5, settings=settings, write_html=False)
    assert list(kw.tables) == list(st.tables)
    for name, table in kw.tables.items():
        pd.testing.assert_frame_equal(table, st.tables[name])


def test_a_toy_analysis_is_one_entry_in_analyze_and_the_report(small, tmp_path, toy_table):
    out = tmp_path / "rep"
    res = analyze(small, out / "analyses", n_resamples=30, link_prefix="analyses/")
    # its table file, figure and section, after the built-in ones
    assert res.tables["toy_cells"]["n_ok"].tolist() == [8, 8, 8]
    for name in ("tables/toy_cells.csv", "tables/toy_cells.tex", "figures/toy_cells.png"):
        assert (out / "analyses" / name).is_file()
    assert res.sections[-1].title == "Toy: ok cells per method"
    assert "href='analyses/tables/toy_cells.csv'" in res.sections[-1].body
    page = res.html.read_text(encoding="utf-8")
    assert "<h2>Toy: ok cells per method</h2>" in page and "href='tables/toy_cells.csv'" in page
    # an analysis whose inputs are missing is skipped, and says why
    assert res.skipped["needy"] == "needs at least 100 methods and a unicorn"
    assert "needy" not in res.tables and not (out / "analyses" / "tables" / "needy.csv").exists()
    # the report shows the section (as udbench report passes analyze's sections)
    report = write_report(small, out, n_resamples=30, sections=res.sections).read_text()
    assert "<h2>Toy: ok cells per method</h2>" in report
    assert "<title>udbench report</title>" in report  # not a figure's title (an old slip)


def test_udbench_report_shows_a_registered_analysis(small, tmp_path, toy_table):
    results = tmp_path / "results.parquet"
    small.to_parquet(results, index=False)
    assert main(["report", str(results), "--out", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert "<h2>Toy: ok cells per method</h2>" in page
    assert (tmp_path / "rep" / "analyses" / "tables" / "toy_cells.csv").is_file()


def test_register_analysis_refuses_a_taken_name_or_table(toy_table):
    with pytest.raises(ValueError, match="an analysis named 'toy' exists"):
        register_analysis(TOY)
    clash = AnalysisSpec("other", _ok_cells, (TableSpec("headline", "H"),))
    with pytest.raises(ValueError, match=r"\['headline'\] are written by another analysis"):
        register_analysis(clash)
    n = len(registry.ANALYSES)
    register_analysis(TOY, replace=True)  # in place
    assert len(registry.ANALYSES) == n and registry.ANALYSES[-2] is TOY


def test_requirements_say_what_is_missing(small):
    inputs = AnalysisInputs(small, small, (None,), {}, {})
    spec = AnalysisSpec("x", _ok_cells, (), requires=(has_columns("rmse", "no_such"),))
    assert spec.skip_reason(inputs) == "needs the results columns rmse, no_such"
    assert (
        AnalysisSpec("y", _ok_cells, (), requires=(has_columns("rmse"),)).skip_reason(inputs)
        is None
    )


def test_the_base_loss_is_read_from_the_loss_table():
    assert [n for n, loss in LOSS_TABLE.items() if loss.base and loss.kind == "regression"] == [
        "squared"
    ]
