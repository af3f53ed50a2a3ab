"""The HTML report of a results table: leaderboard, figures, per-shell EU quality, instances.

``write_report(results, out_dir)`` writes ``out_dir/report.html`` (self-contained: figures are
embedded as base64 PNG) and the same figures as PNG files beside it:

- ``eu_rho.png``: mean Spearman ρ of EU with EU*_risk, EU*_var and EU*_point per method, with
  bootstrap intervals over instances (SPEC §10);
- ``au_rho.png``: mean ρ of AU with AU* per method (heteroscedastic noise modes,
  heteroscedastic-AU methods; SPEC §10);
- ``entanglement.png``: mean excess entanglement Δ_ent = ρ(EU, AU) − ρ(EU*_risk, AU*) per method;
- ``shells.png``: mean ρ(EU, EU*_risk) inside each coverage shell (SPEC §3), inner (0) to
  outermost (4), per method (a colour and marker of its own each,
  :func:`udbench.report._figures.method_styles`);
- ``eu_vs_oracle.png``, ``calibration.png`` (with ``results_dir`` and kept predictions): one
  panel (pair) per method on one instance.

Every figure shows all the methods it claims or its caption names those left out and why; a
figure that would be empty is left out with a line saying why. The leaderboard note says how
``rank`` and ``mean rank`` differ (:data:`udbench.evaluation.leaderboard.RANK_GUIDE`).

- ``tuning.png`` (results of ``udbench run --tuned``, when the tuned records are given): the
  best-so-far held-out NLL of every sweep against the trial number, and a table of the tuned
  configurations (method, condition, score, trials, tuned values).

Rows are split by task type (:func:`udbench.report._task_types.row_task_types`): the
leaderboard, the figures above and the factor tables use the regression rows only; with
classification rows the page gets a "Classification" part, the classifiers' own leaderboard
(:mod:`udbench.report._classification`) followed by the classification sections.

The page also states the task grid (datasets, prior families, noise modes, coverages, seeds,
fidelities) and the udbench version(s) the results were made with. Figures use matplotlib's
Agg backend (no display needed).
"""

from __future__ import annotations

import base64
import html
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from udbench import __version__
from udbench._resampling import DEFAULT_CONFIDENCE, DEFAULT_N_RESAMPLES
from udbench._validation import UdbenchError
from udbench.data import N_SHELLS
from udbench.evaluation.leaderboard import (
    LEADERBOARD_METRICS,
    METRIC_LABELS,
    RANK_GUIDE,
    TaskVersionWarning,
    leaderboard,
    select_task_versions,
)
from udbench.evaluation.ranking import critical_difference
from udbench.report._classification import (
    CLASSIFICATION_METRICS,
    classification_board,
    classification_board_html,
)
from udbench.report._factors import eu_scatter, factor_tables, shell_errorbars
from udbench.report._figures import png
from udbench.report._format import _board_html, _sentence
from udbench.report._plots import _interval_plot, _shell_plot, _tuned_html, _tuning_plot
from udbench.report._proxies import (
    CALIBRATION_GUIDE,
    calibration_figure,
    cd_figure,
    instance_predictions,
)
from udbench.report._task_types import CLASSIFICATION, REGRESSION, rows_of_task_type
from udbench.report._validation import preset_validation_html

__all__ = [
    "CD_METRICS",
    "GRID_COLUMNS",
    "REPORT_CSS",
    "ReportSection",
    "shell_table",
    "task_grid",
    "write_report",
]

#: Metrics whose critical-difference diagram the report draws by default.
CD_METRICS: tuple[str, ...] = ("rho_eu_risk", "crps")

#: Task coordinates summarised as the task grid.
GRID_COLUMNS: tuple[str, ...] = ("dataset", "family", "noise", "coverage", "seed", "fidelity")

#: The style sheet of udbench's HTML pages (the report and ``udbench analyze``'s page). A table
#: wider than the page scrolls in its own box (as GitHub shows Markdown tables); the page never
#: does (tests/analyses/test_analyses_report.py checks it in a browser at 1280 px).
REPORT_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1200px;
margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0;display:block;width:max-content;
max-width:100%;overflow-x:auto}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right}th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}
.note{color:#555;font-size:.9em}img{max-width:100%}.files{font-size:.85em}
.scroll{max-height:36em;overflow:auto}
"""


@dataclass(frozen=True)
class ReportSection:
    """A section that a higher layer adds to the report (e.g. :mod:`udbench.analyses`).

    Attributes
    ----------
    title : str
        The section's heading (plain text; escaped when written).
    body : str
        Its HTML, written as given after the heading; links in it are relative to the
        report's folder.
    task_type : {"regression", "classification"}, default "regression"
        The rows it describes: a classification section goes into the report's
        "Classification" part, after the classifiers' leaderboard.
    """

    title: str
    body: str
    task_type: str = REGRESSION


def task_grid(results: pd.DataFrame) -> dict[str, list[Any]]:
    """The distinct values of every task coordinate present in ``results`` (sorted)."""
    grid: dict[str, list[Any]] = {}
    for col in GRID_COLUMNS:
        if col in results.columns:
            vals = results[col].dropna().unique().tolist()
            grid[col] = sorted(vals, key=lambda v: (str(type(v)), v))
    return grid


def shell_table(results: pd.DataFrame) -> pd.DataFrame:
    """Mean ρ(EU, EU*_risk) per method and shell over valid instances.

    Returns
    -------
    DataFrame
        Index: method label; columns ``shell0`` … ``shell4`` and ``outer_minus_inner``
        (shell 4 minus shell 0).
    """
    label = "method_label" if "method_label" in results.columns else "method"
    ok = results[results["status"].astype(str) == "ok"]
    cols = [f"rho_eu_risk_shell{s}" for s in range(N_SHELLS)]
    present = [c for c in cols if c in ok.columns]
    if ok.empty or not present:
        return pd.DataFrame(columns=[f"shell{s}" for s in range(N_SHELLS)])
    table = ok.groupby(label)[present].mean(numeric_only=True)
    table.columns = [c.replace("rho_eu_risk_", "") for c in present]
    if "shell0" in table and f"shell{N_SHELLS - 1}" in table:
        table["outer_minus_inner"] = table[f"shell{N_SHELLS - 1}"] - table["shell0"]
    table.index.name = "method"
    return table


def _au_subset(board: pd.DataFrame, col: str) -> tuple[pd.DataFrame, str]:
    """The leaderboard rows with a value of the AU metric ``col``, and why the others have none."""
    const = board["constant_aleatoric"].astype(bool)
    has = board[col].notna()
    reasons = []
    constant = [str(m) for m in board.loc[const, "method"]]
    if constant:
        reasons.append(f"{', '.join(constant)} (constant AU: undefined, SPEC §8)")
    missing = [str(m) for m in board.loc[~const & ~has, "method"]]
    if missing:
        reasons.append(f"{', '.join(missing)} (no valid instance with heteroscedastic noise)")
    return board[~const & has], "; ".join(reasons)


def _subset_caption(
    shown: Sequence[str], order: Sequence[str], why: str, ranked: bool = True
) -> str:
    """A figure's caption: all k methods, or k of the m and which are not shown and why."""
    left = [m for m in order if m not in set(shown)]
    how = ", in rank order" if ranked else ""
    if not left:
        return f"All {len(shown)} methods{how}."
    return f"{len(shown)} of the {len(order)} methods{how}; not shown ({why}): {', '.join(left)}."


def write_report(
    results: pd.DataFrame,
    out_dir: str | os.PathLike[str],
    *,
    title: str = "udbench report",
    confidence: float = DEFAULT_CONFIDENCE,
    n_resamples: int = DEFAULT_N_RESAMPLES,
    sections: Sequence[ReportSection] = (),
    results_dir: str | os.PathLike[str] | None = None,
    tuned: Sequence[dict[str, Any]] | None = None,
    cd_metrics: Sequence[str] = CD_METRICS,
) -> Path:
    """Write the HTML report and its PNG figures; return the path of ``report.html``.

    Parameters
    ----------
    results : DataFrame
        Rows as stored by ``udbench run`` (:func:`udbench.evaluation.store.read_results`).
    out_dir : str or Path
        Folder for ``report.html`` and the PNG figures (created if needed).
    title : str
        Page title.
    confidence, n_resamples
        Bootstrap intervals of the leaderboard (:func:`udbench.evaluation.leaderboard.leaderboard`).
    sections : sequence of ReportSection, default ()
        Further sections, written after the figures and before the per-instance table
        (``udbench report`` adds the analyses of :mod:`udbench.analyses` here); those of
        task type ``"classification"`` go into the "Classification" part.
    results_dir : str or Path, optional
        The results folder the rows come from. With it, an instance whose per-point
        predictions were kept (``udbench run --keep-predictions``) gets a figure of each
        method's EU against the oracle EU*_risk (its task file is read for the oracle) and
        of the methods' calibration curves against the task's noisy targets.
    tuned : sequence of dict, optional
        Tuned-configuration records (format: :mod:`udbench.tuning.records`), shown as a table
        and as best-so-far curves.
    cd_metrics : sequence of str, default :data:`CD_METRICS`
        Metrics (columns of the results: ρ metrics, ``rmse``, ``nmse`` or proxies of
        :mod:`udbench.evaluation.proxies`) that get a critical-difference diagram of mean
        ranks (:func:`udbench.evaluation.ranking.critical_difference`; Friedman test and
        Nemenyi CD). A metric without enough values gets a one-line note instead.

    Notes
    -----
    Rows are split by task type (:func:`udbench.report._task_types.row_task_types`): the
    leaderboard, figures and factor tables use the regression rows only; classification rows
    get the "Classification" part (:mod:`udbench.report._classification`: the classifiers'
    leaderboard, then the classification sections). The task grid and the per-instance table
    show every row.

    Raises
    ------
    UdbenchError
        Empty results.
    """
    if results is None or len(results) == 0:
        raise UdbenchError("write_report: the results table is empty")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # one version per task id for every table and figure (the leaderboard's rule)
    results, note = select_task_versions(results)
    if note:
        warnings.warn(note, TaskVersionWarning, stacklevel=2)
    regression = rows_of_task_type(results, REGRESSION)
    classification = rows_of_task_type(results, CLASSIFICATION)
    parts = _page_head(results, title)
    if len(regression):
        here = None if results_dir is None else Path(results_dir)
        parts += _regression_html(
            regression, out, here, tuned, cd_metrics, confidence, n_resamples, len(classification)
        )
    else:
        parts.append(_note("No regression rows: the report has a classification part only."))
    for section in sections:
        if section.task_type != CLASSIFICATION:
            parts += [f"<h2>{html.escape(section.title)}</h2>", section.body]
    if len(classification):
        board = classification_board(classification, confidence=confidence, n_resamples=n_resamples)
        parts += classification_board_html(board, confidence, with_regression=bool(len(regression)))
    for section in sections:
        if section.task_type == CLASSIFICATION:
            parts += [f"<h2>{html.escape(section.title)}</h2>", section.body]
    parts += _instances_html(results, extra=CLASSIFICATION_METRICS if len(classification) else ())
    path = out / "report.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _regression_html(
    results: pd.DataFrame,
    out: Path,
    results_dir: Path | None,
    tuned: Sequence[dict[str, Any]] | None,
    cd_metrics: Sequence[str],
    confidence: float,
    n_resamples: int,
    n_classification: int,
) -> list[str]:
    """The regression part: leaderboard, figures (also written to ``out``), factor tables."""
    board = leaderboard(results, confidence=confidence, n_resamples=n_resamples)
    order = [str(m) for m in board["method"]]
    figures, notes = _report_figures(results, board, order, results_dir, tuned, cd_metrics)
    for fig in figures:
        (out / fig.name).write_bytes(fig.data)
    parts = _leaderboard_html(board, confidence)
    if n_classification:
        parts.insert(
            1,
            _note(
                f"Regression rows only ({len(results)} cells): the {n_classification} "
                "classification cells have their own leaderboard in the Classification part."
            ),
        )
    for fig in figures:
        b64 = base64.b64encode(fig.data).decode()
        parts.append(f"<h2>{html.escape(fig.caption)}</h2>")
        parts.append(f"<img alt='{html.escape(fig.caption)}' src='data:image/png;base64,{b64}'>")
        parts += fig.after
    parts += notes
    parts += _factor_html(results, order)
    return parts


@dataclass(frozen=True)
class _Figure:
    """A figure of the report: file name, heading, PNG bytes, the HTML written below it."""

    name: str
    caption: str
    data: bytes
    after: tuple[str, ...] = ()


def _note(text: str) -> str:
    return f"<p class='note'>{html.escape(text)}</p>"


def _report_figures(
    results: pd.DataFrame,
    board: pd.DataFrame,
    order: list[str],
    results_dir: Path | None,
    tuned: Sequence[dict[str, Any]] | None,
    cd_metrics: Sequence[str],
) -> tuple[list[_Figure], list[str]]:
    """Every figure of the report in page order, and the notes (HTML) on those not drawn."""
    figures, notes = _rho_figures(board)
    figures += _shell_figures(results, order)
    scatter = eu_scatter(results, results_dir, order)
    if scatter is not None:
        figures.append(
            _Figure(
                "eu_vs_oracle.png",
                "EU against the oracle on one instance",
                png(scatter[0]),
                (
                    _note(
                        _subset_caption(
                            scatter[2], order, "no valid kept prediction on this instance"
                        )
                    ),
                    f"<p class='note'>Instance {html.escape(scatter[1])}: for each method, "
                    "top, its EU against EU*_risk (log10 of both); bottom, their ranks — the "
                    "Spearman ρ in the leaderboard is the correlation of the bottom panel.</p>",
                ),
            )
        )
    if tuned:
        figures.append(
            _Figure("tuning.png", "Tuning", png(_tuning_plot(tuned)), (_tuned_html(tuned),))
        )
    cd_figs, cd_notes = _cd_figures(results, cd_metrics, order)
    figures += cd_figs
    calib = instance_predictions(results, results_dir)
    if calib is not None:
        caption = f"Instance {calib[0]}. " + _subset_caption(
            [s[0] for s in calib[1]], order, "no valid kept prediction on this instance"
        )
        figures.append(
            _Figure(
                "calibration.png",
                "Calibration curves",
                png(calibration_figure(calib[1], calib[0], order)),
                (_note(caption), _note(CALIBRATION_GUIDE)),
            )
        )
    if scatter is None:
        notes.append(
            "<p class='note'>EU against the oracle on one instance: not shown — run with "
            "<code>udbench run --keep-predictions</code> and give the results folder to "
            "<code>udbench report</code> to see it.</p>"
        )
    return figures, notes + cd_notes


def _rho_figures(board: pd.DataFrame) -> tuple[list[_Figure], list[str]]:
    """EU quality, AU quality and excess entanglement per method; notes (HTML) on the others."""
    eu = [("rho_eu_risk", "EU*_risk"), ("rho_eu_var", "EU*_var"), ("rho_eu_point", "EU*_point")]
    plot = _interval_plot(
        board, eu, "Mean Spearman ρ of EU with each EU target", "mean ρ over instances"
    )
    figures = [
        _Figure(
            "eu_rho.png",
            "EU quality",
            png(plot),
            (_note(f"All {len(board)} methods, in rank order."),),
        )
    ]
    notes: list[str] = []
    for col, fname, caption, title, xlabel in (
        (
            "rho_au",
            "au_rho.png",
            "AU quality",
            "Mean Spearman ρ of AU with AU* (heteroscedastic noise)",
            "mean ρ over instances",
        ),
        (
            "delta_ent_risk",
            "entanglement.png",
            "Excess entanglement",
            "Excess entanglement ρ(EU, AU) − ρ(EU*_risk, AU*)",
            "mean Δ_ent over instances",
        ),
    ):
        shown, why = _au_subset(board, col)
        if shown.empty:
            notes.append(_note(f"{caption}: not drawn — {why}."))
            continue
        text = (
            f"{len(shown)} of the {len(board)} methods, in rank order; not shown: {why}."
            if why
            else f"All {len(shown)} methods, in rank order."
        )
        data = png(_interval_plot(shown, [(col, caption)], title, xlabel))
        figures.append(_Figure(fname, caption, data, (_note(text),)))
    return figures, notes


def _shell_figures(results: pd.DataFrame, order: list[str]) -> list[_Figure]:
    """EU quality per shell with its table, methods in rank order (none without shells)."""
    shells = shell_table(results)
    shells = shells.reindex([m for m in order if m in set(shells.index)])
    if shells.empty:
        return []
    bars = shell_errorbars(results, order)
    return [
        _Figure(
            "shells.png",
            "EU quality per shell",
            png(_shell_plot(shells, bars)),
            (
                _note(_subset_caption(list(shells.index), order, "no valid per-shell ρ")),
                "<p class='note'>Mean ρ(EU, EU*_risk) inside each coverage shell; "
                "outer_minus_inner = shell 4 − shell 0.</p>",
                shells.to_html(float_format=lambda v: f"{v:.3f}", na_rep="–"),
            ),
        )
    ]


def _cd_figures(
    results: pd.DataFrame, cd_metrics: Sequence[str], order: list[str]
) -> tuple[list[_Figure], list[str]]:
    """A critical-difference diagram per metric; notes (HTML) on the metrics without one."""
    figures: list[_Figure] = []
    notes: list[str] = []
    for metric in cd_metrics:
        label = METRIC_LABELS.get(metric, metric)
        try:
            cd = critical_difference(results, metric)
        except UdbenchError as err:
            notes.append(_note(f"Critical-difference diagram of {label}: not drawn ({err})."))
            continue
        text = (
            f"Mean per-instance rank by {label} (1 = best) over the {cd.n_instances} instances "
            "where every method has a value. Friedman's test of equal ranks and Nemenyi's "
            f"critical difference CD = {cd.cd:.2f} at α = {cd.alpha:g} (Demšar 2006): methods "
            "joined by a bar differ by less than CD in mean rank, not significantly. "
            "Instances of one dataset are not independent, so the test is optimistic. "
            + _subset_caption(cd.methods, order, f"no value of {label}", ranked=False)
        )
        figures.append(
            _Figure(
                f"cd_{metric}.png",
                f"Critical difference: {label}",
                png(cd_figure(cd, label)),
                (_note(text),),
            )
        )
    return figures, notes


def _page_head(results: pd.DataFrame, title: str) -> list[str]:
    """The page's head, its summary line, the task grid and the preset validation."""
    grid = task_grid(results)
    versions = (
        sorted(results["udbench_version"].dropna().astype(str).unique())
        if "udbench_version" in results
        else []
    )
    n_inst = results["task_id"].nunique()
    ok = results["status"].astype(str) == "ok"
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{REPORT_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p class='note'>{len(results)} cells ({int(ok.sum())} valid, "
        f"{int((~ok).sum())} failed) on {n_inst} task instances; results made with udbench "
        f"{html.escape(', '.join(versions) or '?')}; report made with udbench "
        f"{html.escape(__version__)} on "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.</p>",
        "<h2>Task grid</h2><table>",
    ]
    for col, vals in grid.items():
        parts.append(f"<tr><th>{col}</th><td>{html.escape(', '.join(map(str, vals)))}</td></tr>")
    parts.append("</table>")
    parts.extend(preset_validation_html(results))
    return parts


def _leaderboard_html(board: pd.DataFrame, confidence: float) -> list[str]:
    """The leaderboard's heading, notes and table."""
    parts = [
        "<h2>Leaderboard</h2>",
        "<p class='note'>Means over instances with "
        f"{confidence:.0%} percentile bootstrap intervals (resampling instances). ρ(AU, AU*) and "
        "Δ_ent use heteroscedastic noise modes and heteroscedastic-AU methods only. "
        f"{html.escape(_sentence(board.attrs['ranking']))}; figures list the methods "
        f"in rank order. {html.escape(_sentence(RANK_GUIDE))}.</p>",
    ]
    if board.attrs.get("partial"):
        parts.append(
            f"<p class='note'><b>{html.escape(_sentence(board.attrs['partial']))}.</b></p>"
        )
    parts.append(_board_html(board))
    return parts


def _factor_html(results: pd.DataFrame, order: list[str]) -> list[str]:
    """Mean ρ(EU, EU*_risk) per method at each level of every task factor."""
    by_factor = factor_tables(results, order)
    if not by_factor:
        return []
    parts = [
        "<h2>By factor</h2>",
        "<p class='note'>Mean ρ(EU, EU*_risk) per method at each level of a task factor "
        "(number of valid instances in brackets); methods in rank order.</p>",
    ]
    for heading, table in by_factor:
        parts.append(f"<h3>{html.escape(heading)}</h3>")
        parts.append(table.to_html(escape=True))
    return parts


def _instances_html(results: pd.DataFrame, extra: Sequence[str] = ()) -> list[str]:
    """The per-instance results table (``extra``: more metric columns) and the page's end."""
    metrics = [*LEADERBOARD_METRICS, *(m for m in extra if m not in LEADERBOARD_METRICS)]
    inst_cols = [
        c
        for c in ("task_id", "method_label", "status", *metrics, "fit_time_s", "error")
        if c in results.columns
    ]
    inst = results[inst_cols].sort_values(
        [c for c in ("task_id", "method_label") if c in inst_cols]
    )
    if "error" in inst.columns:  # an ok cell has no error: an empty cell, not "None"
        inst["error"] = inst["error"].astype(object).where(inst["error"].notna(), "")
    return [
        "<h2>Per-instance results</h2><div class='scroll'>",
        inst.to_html(index=False, float_format=lambda v: f"{v:.3f}", na_rep="–"),
        "</div></body></html>",
    ]
