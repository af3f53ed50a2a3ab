"""The report's "Classification" part: the classifiers' own leaderboard (docs/spec.md §11).

:func:`udbench.report.html.write_report` splits a results frame by task type
(:func:`udbench.report._task_types.row_task_types`): its leaderboard, figures and factor tables
use the regression rows only, and when the frame holds classification rows the page gets a
"Classification" part: the leaderboard of :func:`classification_board` (its columns:
:data:`CLASSIFICATION_METRICS`) followed by the report sections of task type
``"classification"`` (``udbench report`` adds the classification analyses of
:mod:`udbench.analyses.classification` there).

One difference from the regression leaderboard: AU* = E_F H(π_F(x)) varies with x at a
constant temperature too (paper A.7), so ρ(AU, AU*) and Δ_ent use every temperature mode (the
``noise`` column of classification rows); only constant-AU classifiers lose them.
"""

from __future__ import annotations

import html
from collections.abc import Hashable, Mapping
from typing import Any

import pandas as pd

from udbench.evaluation.leaderboard import METRIC_LABELS, RANK_GUIDE, leaderboard
from udbench.report._format import _fmt, _sentence

__all__ = [
    "CLASSIFICATION_LABELS",
    "CLASSIFICATION_METRICS",
    "classification_board",
    "classification_board_html",
]

#: Metrics of the classification leaderboard, in column order: ρ of EU with each EU target,
#: ρ(AU, AU*), Δ_ent (risk) and the label metrics of
#: :func:`udbench.evaluation.classification.label_metrics`.
CLASSIFICATION_METRICS: tuple[str, ...] = (
    "rho_eu_risk",
    "rho_eu_var",
    "rho_eu_point",
    "rho_au",
    "delta_ent_risk",
    "accuracy",
    "nll",
    "brier",
    "ece",
)
#: Column headings of the classification leaderboard.
CLASSIFICATION_LABELS: dict[str, str] = {
    **{m: METRIC_LABELS[m] for m in CLASSIFICATION_METRICS[:5]},
    "accuracy": "accuracy",
    "nll": "NLL",
    "brier": "Brier",
    "ece": "ECE",
}
#: Metrics a constant-AU classifier has no value of (SPEC §8).
_AU_COLUMNS = frozenset({"rho_au", "delta_ent_risk"})


def classification_board(
    rows: pd.DataFrame, *, confidence: float, n_resamples: int
) -> pd.DataFrame:
    """The leaderboard of classification rows: one row per classifier, ranked by ρ(EU, EU*_risk).

    :func:`udbench.evaluation.leaderboard.leaderboard` with ``metrics`` =
    :data:`CLASSIFICATION_METRICS`, its bootstrap intervals and ranking rule, on every
    temperature mode: the rows are given to it without their ``noise`` column, so that its
    restriction of the AU metrics to heteroscedastic noise modes (a regression rule: AU* is
    constant under homoscedastic noise) does not apply; constant-AU classifiers still have
    no AU value.

    Parameters
    ----------
    rows : DataFrame
        Classification rows of a results frame (:func:`udbench.report._task_types.
        rows_of_task_type`).
    confidence, n_resamples
        Bootstrap intervals, as in :func:`~udbench.evaluation.leaderboard.leaderboard`.

    Returns
    -------
    DataFrame
        The leaderboard's columns for :data:`CLASSIFICATION_METRICS`.

    Raises
    ------
    UdbenchError
        As :func:`~udbench.evaluation.leaderboard.leaderboard` (empty rows, bad settings).
    """
    every_mode = rows.drop(columns=["noise"], errors="ignore")
    return leaderboard(
        every_mode,
        metrics=CLASSIFICATION_METRICS,
        confidence=confidence,
        n_resamples=n_resamples,
    )


def _cell(r: Mapping[Hashable, Any], m: str) -> str:
    if m in _AU_COLUMNS and r.get("constant_aleatoric"):
        return "n/a (constant AU)"
    text = _fmt(r[m], r[f"{m}_low"], r[f"{m}_high"])
    if m in _AU_COLUMNS and text != "–":
        text += f" (n={r[f'{m}_n']})"
    return text


def classification_board_html(
    board: pd.DataFrame, confidence: float, *, with_regression: bool = True
) -> list[str]:
    """The "Classification" part's heading, notes and leaderboard table (HTML pieces);
    ``with_regression``: whether the page has a regression part above it (its note says the
    leaderboard and figures above use the regression rows only then)."""
    heads = [
        "rank",
        "method",
        "mean rank",
        *(CLASSIFICATION_LABELS[m] for m in CLASSIFICATION_METRICS),
        "valid",
        "failed",
    ]
    parts = [
        "<h2>Classification</h2>",
        "<p class='note'>The classifiers, on the classification rows only"
        + (
            " (the leaderboard and figures above use the regression rows)"
            if with_regression
            else ""
        )
        + ". Means over instances with "
        f"{confidence:.0%} percentile bootstrap intervals (resampling instances). ρ(AU, AU*) "
        "and Δ_ent use every temperature mode (AU* varies with x at a constant temperature "
        "too) and heteroscedastic-AU classifiers only; NLL, Brier and ECE: lower is better. "
        f"{html.escape(_sentence(board.attrs['ranking']))}. "
        f"{html.escape(_sentence(RANK_GUIDE))}.</p>",
    ]
    if board.attrs.get("partial"):
        parts.append(
            f"<p class='note'><b>{html.escape(_sentence(board.attrs['partial']))}.</b></p>"
        )
    out = ["<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in heads) + "</tr>"]
    for r in board.to_dict(orient="records"):
        cells = ["–" if r["rank"] is pd.NA else str(r["rank"]), html.escape(str(r["method"]))]
        cells.append(_fmt(r["mean_rank"]) if pd.notna(r["mean_rank"]) else "–")
        cells += [_cell(r, m) for m in CLASSIFICATION_METRICS]
        cells += [str(r["n_valid"]), str(r["n_failed"])]
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    parts.append("\n".join(out))
    return parts
