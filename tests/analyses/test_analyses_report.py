"""``udbench analyze`` and the analyses sections of ``udbench report`` on a 19-method frame."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _browser import Browser, artifacts_dir, require_browser
from _results import PAPER_METHODS, fabricate_results, kept_predictions_run
from udbench.analyses import analyze
from udbench.cli import main
from udbench.report.html import write_report

_LINK = re.compile(r"""(?:href|src)=['"]([^'"]+)['"]""")


@pytest.fixture(scope="module")
def results_file(tmp_path_factory) -> Path:
    """A 19-method results table (2 datasets × 3 priors × 4 noise modes × 2 coverages)."""
    df = fabricate_results(n_datasets=2, n_seeds=1, noise_sd=0.2, random_state=4)
    path = tmp_path_factory.mktemp("res") / "results.parquet"
    df.to_parquet(path, index=False)
    return path


@pytest.fixture(scope="module")
def report_dir(results_file, tmp_path_factory) -> Path:
    """The report as ``udbench report`` writes it (fewer bootstrap replicates, for speed)."""
    out = tmp_path_factory.mktemp("report") / "rep"
    df = pd.read_parquet(results_file)
    extra = analyze(df, out / "analyses", n_resamples=200, link_prefix="analyses/")
    write_report(df, out, n_resamples=200, sections=extra.sections)
    return out


@pytest.fixture(scope="module")
def quickstart_report_dir(tmp_path_factory) -> Path:
    """The report of a 19-method run with kept predictions, as the quickstart writes it."""
    from udbench.evaluation.store import read_results

    _, results = kept_predictions_run(tmp_path_factory.mktemp("qs"))
    df = read_results(results)
    out = results.parent / "report"
    extra = analyze(df, out / "analyses", n_resamples=100, link_prefix="analyses/")
    write_report(df, out, n_resamples=100, sections=extra.sections, results_dir=results)
    return out


def _local_links(page: Path) -> list[str]:
    links = _LINK.findall(page.read_text(encoding="utf-8"))
    return [x for x in links if not x.startswith(("data:", "http:", "https:", "#"))]


def test_report_of_19_methods_links_existing_files(report_dir):
    page = report_dir / "report.html"
    text = page.read_text(encoding="utf-8")
    for title in (
        "Headline: EU and AU quality per method",
        "Stability of the ranking: Kendall&#x27;s W",
        "Matched-prior advantage",
        "Entanglement",
        "EU quality per coverage shell",
        "Accuracy of the point prediction",
    ):
        assert f"<h2>{title}</h2>" in text, title
    links = _local_links(page)
    figures = {x for x in links if x.endswith((".png", ".svg"))}
    tables = {x for x in links if x.endswith((".csv", ".tex"))}
    # 9 tables (CSV + LaTeX) and the per-level CSV of the proxy agreement; the fabricated
    # results hold no proxy metrics, so the agreement figure is not drawn
    assert len(figures) == 2 * 8 and len(tables) == 2 * 9 + 1
    for link in links:
        assert (report_dir / link).is_file(), link
    for link in figures:
        data = (report_dir / link).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" if link.endswith(".png") else b"<svg" in data[:2000]
    for name in PAPER_METHODS:  # every method appears in the headline table
        assert f"<td>{name}</td>" in text


def test_cli_analyze_writes_tables_figures_and_page(results_file, tmp_path, capsys):
    out = tmp_path / "an"
    args = ["analyze", str(results_file), "--out", str(out), "--n-resamples", "300"]
    assert main([*args, "--bootstrap-unit", "dataset", "--seed", "3"]) == 0
    said = capsys.readouterr().out
    assert "Kendall's W (eu, family)" in said and "19 methods" in said
    page = out / "analyses.html"
    for link in _local_links(page):
        assert (out / link).is_file(), link
    head = pd.read_csv(out / "tables" / "headline.csv")
    assert len(head) == 19 and head["rank_eu"].min() == 1
    tex = (out / "tables" / "headline.tex").read_text()
    assert r"\toprule" in tex and "whole datasets" in tex
    # the CLI and the Python API give the same numbers for the same settings
    api = analyze(
        pd.read_parquet(results_file),
        tmp_path / "api",
        bootstrap_unit="dataset",
        n_resamples=300,
        random_state=3,
    )
    pd.testing.assert_frame_equal(
        head,
        api.tables["headline"].astype({"rank_eu": float, "rank_au": float}),
        check_dtype=False,
        atol=1e-12,
        rtol=0,
    )


def test_cli_analyze_bad_unit_is_one_line(results_file, tmp_path, capsys):
    code = main(
        ["analyze", str(results_file), "--out", str(tmp_path / "x"), "--bootstrap-unit", "seed"]
    )
    assert code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "'--bootstrap-unit' must be one of" in err and "Traceback" not in err


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium session (skips where none is installed; see tests/_browser.py)."""
    paths = require_browser()
    with Browser(*paths) as session:
        yield session


@pytest.mark.browser
def test_report_loads_cleanly_in_a_headless_browser_at_1280_px(report_dir, browser, tmp_path):
    # every image loads, every table has data, nothing is wider than a 1280 px window, no
    # console error; the screenshot is kept (UDBENCH_TEST_ARTIFACTS in .ci/run)
    shot = artifacts_dir(tmp_path) / "report-19-methods-1280px.png"
    seen = browser.check(report_dir / "report.html", shot, width=1280)
    assert seen.problems() == [], "\n".join(seen.problems())
    assert seen.width == 1280 and seen.n_images >= 8 and seen.n_tables >= 5
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.browser
def test_the_browser_check_names_a_broken_image_an_empty_table_and_overflow(browser, tmp_path):
    # the page check itself can fail, for each reason it names
    import matplotlib.pyplot as plt

    plt.imsave(tmp_path / "ok.png", np.zeros((4, 4, 3)))
    pages = {
        "clean": '<img src="ok.png"><table><tr><td>1</td></tr></table>',
        "image": '<img src="missing.png"><table><tr><td>1</td></tr></table>',
        "table": "<h3>Leaderboard</h3><table><thead><tr><th>method</th></tr></thead></table>",
        "wide": '<div style="width: 2000px">a row of figures</div>',
        # a wide table in a box of its own that scrolls is fine: the page does not overflow
        "scrolls": '<div style="overflow-x: auto"><table style="width: 2000px"><tr><td>1</td>'
        "</tr></table></div>",
    }
    seen = {}
    for name, body in pages.items():
        page = tmp_path / f"{name}.html"
        page.write_text(f"<!doctype html><html><body>{body}</body></html>", encoding="utf-8")
        seen[name] = browser.check(page, tmp_path / f"{name}.png", width=1280)
    assert seen["clean"].problems() == []
    assert seen["image"].broken_images == [(tmp_path / "missing.png").as_uri()]
    assert any("image did not load" in line for line in seen["image"].problems())
    assert seen["table"].empty_tables == ["#0 'Leaderboard'"]
    assert seen["wide"].scroll_width == 2000 + 8  # the body's default 8 px margin
    assert seen["wide"].overflow == ["<div> to 2008 px"]
    assert "horizontal overflow at 1280 px" in seen["wide"].problems()[0]
    assert seen["scrolls"].problems() == [] and seen["scrolls"].scroll_width == 1280


@pytest.mark.browser
def test_quickstart_report_loads_cleanly_and_shows_every_method(browser, request, tmp_path):
    # the 19-method report with kept predictions, made only where a browser will load it
    # (the browser fixture skips first)
    folder = request.getfixturevalue("quickstart_report_dir")
    shot = artifacts_dir(tmp_path) / "report-quickstart-1280px.png"
    seen = browser.check(folder / "report.html", shot, width=1280)
    assert seen.problems() == [], "\n".join(seen.problems())
    page = (folder / "report.html").read_text(encoding="utf-8")
    for figure in ("EU against the oracle on one instance", "Calibration curves"):
        after = page[page.index(f"<h2>{figure}</h2>") :]
        assert "All 19 methods, in rank order." in after[: after.index("<h2>", 5)]
