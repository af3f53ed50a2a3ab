"""``udbench analyze`` and the analyses sections of ``udbench report`` on a 19-method frame."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

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


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


#: A page that loads the report in a frame and lists every image as the browser decoded it.
_PROBE = """<!doctype html><html><body>
<iframe id="f" src="report.html" style="width:1280px;height:3000px;border:0"></iframe>
<script>
document.getElementById("f").addEventListener("load", function () {
  var out;
  try {
    out = Array.prototype.map.call(document.getElementById("f").contentDocument.images,
      function (i) { return [i.alt, i.complete, i.naturalWidth, i.width]; });
  } catch (e) { out = "error: " + e; }
  var p = document.createElement("pre");
  p.id = "probe";
  p.textContent = JSON.stringify(out);
  document.body.appendChild(p);
});
</script></body></html>
"""


@pytest.mark.browser
@pytest.mark.parametrize("which", ["fabricated", "quickstart"])
def test_report_loads_in_a_headless_browser_without_console_errors(which, request, tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip(
            "no headless browser installed (Debian: apt-get install chromium); "
            "the report's links are checked by test_report_of_19_methods_links_existing_files"
        )
    # the reports are made only where a browser will load them
    folder = request.getfixturevalue(
        "report_dir" if which == "fabricated" else "quickstart_report_dir"
    )
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu"]
    shot = tmp_path / "report.png"
    proc = subprocess.run(
        [
            *flags,
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,4000",
            f"--screenshot={shot}",
            (folder / "report.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = [
        line
        for line in proc.stderr.splitlines()
        if ("CONSOLE" in line and ("ERROR" in line or "Uncaught" in line)) or "net::ERR_" in line
    ]
    assert not bad, "\n".join(bad)
    # every figure decoded by the browser, none shrunk below 70 % in a 1280-pixel window (text
    # stays legible), and the quickstart's figures are all there
    probe = folder / "probe.html"
    probe.write_text(_PROBE, encoding="utf-8")
    dump = ["--allow-file-access-from-files", "--virtual-time-budget=20000", "--dump-dom"]
    dom = subprocess.run(
        [*flags, *dump, probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    images = json.loads(html.unescape(found.group(1)))
    assert isinstance(images, list) and images, images
    for alt, complete, natural, shown in images:
        assert complete and natural > 0, alt
        assert shown >= 0.7 * natural, (alt, natural, shown)
    alts = {alt for alt, *_ in images}
    if which == "quickstart":
        for figure in ("EU against the oracle on one instance", "Calibration curves"):
            assert figure in alts
        page = (folder / "report.html").read_text(encoding="utf-8")
        for figure in ("EU against the oracle on one instance", "Calibration curves"):
            after = page[page.index(f"<h2>{figure}</h2>") :]
            assert "All 19 methods, in rank order." in after[: after.index("<h2>", 5)]
