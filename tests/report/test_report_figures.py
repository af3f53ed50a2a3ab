"""Report figures show every method they claim to, each in its own style, with legible labels.

On a real 19-method results folder with kept predictions (fast fake methods under the
paper's names, :func:`_results.kept_predictions_run`), the quickstart's figures: EU against
the oracle and calibration curves as small multiples of every method, the per-shell plot
with a distinct colour and marker per method, captions that name any method left out and
why, and no text of a figure running into another (:func:`udbench.report._figures.no_overlap`).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from _results import PAPER_METHODS, kept_predictions_run
from udbench.evaluation.leaderboard import leaderboard
from udbench.evaluation.store import read_results
from udbench.report._factors import eu_scatter, shell_errorbars
from udbench.report._figures import method_styles, no_overlap
from udbench.report._proxies import calibration_figure, instance_predictions
from udbench.report.html import _shell_plot, shell_table, write_report


@pytest.fixture(scope="module")
def nineteen(tmp_path_factory):
    """(results, results folder, rank order) of the 19 names on two fake instances."""
    _, res = kept_predictions_run(tmp_path_factory.mktemp("k19"))
    df = read_results(res)
    order = [str(m) for m in leaderboard(df, n_resamples=50)["method"]]
    return df, res, order


def _titles(fig) -> list[str]:
    return [ax.get_title() for ax in fig.axes if ax.get_visible()]


def test_eu_scatter_has_a_panel_pair_per_method_and_legible_ticks(nineteen):
    df, res, order = nineteen
    fig, task_id, shown = eu_scatter(df, res, order)
    assert shown == order and len(order) == 19  # all of them, in rank order
    heads = [t.split("\n")[0] for t in _titles(fig) if t]
    assert heads == order
    assert len(fig.axes) == 2 * 19  # values and ranks for each method
    assert task_id in fig.get_suptitle()
    # narrow EU ranges (a fraction of a decade, as gp's in the quickstart) crowded the log
    # axes with minor tick labels; no label of the figure may run into another
    assert no_overlap(fig) == []


def test_calibration_curves_of_every_method_and_why_one_is_missing(nineteen):
    df, res, order = nineteen
    task_id, series = instance_predictions(df, res)
    assert sorted(s[0] for s in series) == sorted(order)
    # one method with a zero predictive variance somewhere: a panel that says so, no curve
    name, mean, var, y = series[0]
    var = var.copy()
    var[:3] = 0.0
    series = [(name, mean, var, y), *series[1:]]
    fig = calibration_figure(series, task_id, order)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert len(shown) == 19
    heads = [ax.get_title().split("\n")[0] for ax in shown]
    assert heads == order
    broken = shown[order.index(name)]
    assert len(broken.get_lines()) == 1  # the diagonal only
    assert any("not drawn" in t.get_text() and "3 of" in t.get_text() for t in broken.texts)
    others = [ax for ax in shown if ax is not broken]
    assert all(len(ax.get_lines()) == 2 and "area" in ax.get_title() for ax in others)
    assert no_overlap(fig) == []


def test_every_method_has_its_own_colour_and_marker():
    styles = method_styles(list(PAPER_METHODS))
    colours = [tuple(np.round(s["color"], 6)) for s in styles.values()]
    assert len(set(colours)) == 19  # 19 colours, none reused
    many = method_styles([f"m{i}" for i in range(140)])
    triples = {(s["color"], s["marker"], s["linestyle"]) for s in many.values()}
    assert len(triples) == 140


def test_shell_plot_styles_every_method_apart(nineteen):
    df, _, order = nineteen
    shells = shell_table(df).reindex(order)
    fig = _shell_plot(shells, shell_errorbars(df, order))
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == order
    bars = [c for c in fig.axes[0].containers if c.get_label() in set(order)]
    lines = [c.lines[0] for c in bars]  # each method's data line (the error bars beside it)
    pairs = {(tuple(np.round(ln.get_color(), 6)), ln.get_marker()) for ln in lines}
    colours = {p[0] for p in pairs}
    assert len(lines) == 19 and len(pairs) == 19 and len(colours) == 19
    assert no_overlap(fig) == []


def _notes(page: str) -> list[str]:
    page = re.sub(r"src='data:image/png;base64,[^']*'", "", page)
    return re.findall(r"<p class='note'>(.*?)</p>", page, re.S)


def test_report_captions_say_which_methods_each_figure_shows(nineteen, tmp_path):
    df, res, order = nineteen
    page = write_report(df, tmp_path / "rep", n_resamples=50, results_dir=res).read_text()
    notes = " ".join(_notes(page))
    for head in ("EU against the oracle on one instance", "Calibration curves"):
        part = page[page.index(f"<h2>{head}</h2>") :]
        assert "All 19 methods, in rank order." in _notes(part)[0], head
    constant = [m for m in order if PAPER_METHODS[m][1]]
    assert len(constant) == 4
    subset = (
        f"15 of the 19 methods, in rank order; not shown: {', '.join(constant)} "
        "(constant AU: undefined, SPEC §8)."
    )
    for head in ("AU quality", "Excess entanglement"):
        part = page[page.index(f"<h2>{head}</h2>") :]
        assert _notes(part)[0] == subset, head
    # rank and mean rank are told apart in one sentence
    assert "mean rank is each method&#x27;s per-instance rank" in notes


def test_au_figures_keep_their_titles_short_and_are_not_drawn_empty(nineteen, tmp_path):
    df, _, _ = nineteen
    out = tmp_path / "rep"
    write_report(df, out, n_resamples=50)
    from PIL import Image

    for name in ("au_rho.png", "entanglement.png", "eu_rho.png"):
        width, _ = Image.open(out / name).size
        assert width < 1000, name  # a title listing left-out methods widened the figure
    # only constant-AU methods: no AU figure, a line that says why
    const = df[df["constant_aleatoric"].astype(bool)]
    page = write_report(const, tmp_path / "c", n_resamples=50).read_text()
    assert not (tmp_path / "c" / "entanglement.png").exists()
    assert not (tmp_path / "c" / "au_rho.png").exists()
    assert "Excess entanglement: not drawn — " in page and "constant AU" in page


@pytest.mark.parametrize("methods", [["gp"], ["vlgp"], ["gp", "blr"], ["vlgp", "nn-ens"]])
def test_report_and_analyses_of_small_results_print_no_warnings(nineteen, tmp_path, methods):
    """A figure that would be empty is left out and said so, not drawn with a warning."""
    from udbench.analyses import analyze

    df, res, _ = nineteen
    small = df[df["method_label"].isin(methods)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        extra = analyze(small, tmp_path / "an", n_resamples=50)
        write_report(small, tmp_path / "rep", n_resamples=50, results_dir=res)
    shown = [f"{w.category.__name__}: {w.message}" for w in caught]
    assert shown == []
    page = (tmp_path / "an" / "analyses.html").read_text()
    if all(PAPER_METHODS[m][1] for m in methods):
        assert not (tmp_path / "an" / "figures" / "entanglement.png").exists()
        assert "Figure entanglement: not drawn — no heteroscedastic-AU method" in page
    assert extra.sections


def test_stability_figure_says_why_a_factor_has_no_point(nineteen):
    from udbench.analyses import figures as fg
    from udbench.analyses import tables as tb

    df, _, _ = nineteen
    table = tb.stability_table(df, n_resamples=50)
    fig = fg.stability_figure(table)
    ax = fig.axes[0]
    names = [t.get_text() for t in ax.get_xticklabels()]
    undefined = {
        names[round(t.get_position()[0])] for t in ax.texts if "W undefined" in t.get_text()
    }
    # one dataset, one prior family, one coverage: W is undefined there, and the figure says
    # so; the noise factor (2 levels) has its points
    assert undefined == {"dataset", "prior family", "coverage"}
    single = table.groupby("factor")["n_levels"].max()
    assert set(single[single < 2].index) == {"dataset", "family", "coverage"}
    assert isinstance(table, pd.DataFrame)
