"""The leaderboard as a terminal table: compact by default, every value whole at 80 columns.

A value is shown as ``mean±h``, h the half-width of its 95 % percentile bootstrap interval
((high − low)/2; the interval itself, which need not be symmetric, with ``--intervals``).
Columns are chosen with ``--columns`` from :data:`BOARD_COLUMNS`; the default set
(:data:`DEFAULT_COLUMNS`) fits an 80-column terminal with method names of up to 14
characters (longer names fold onto a second line, never cut).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from udbench._validation import param_error
from udbench.evaluation.proxies import PROXY_KEYS, PROXY_LABELS

__all__ = [
    "BOARD_COLUMNS",
    "BRIER_COLUMNS",
    "CLASSIFICATION_COLUMNS",
    "DEFAULT_COLUMNS",
    "board_table",
    "parse_columns",
    "parse_metrics",
    "print_board",
]

#: Column key -> (header, leaderboard column); ``#`` is the rank. ``n`` shows valid cells
#: (and failed, if any);
#: ρ(AU, AU*) and Δ_ent rest on the heteroscedastic ones only (a note says on how many).
BOARD_COLUMNS: dict[str, tuple[str, str]] = {
    "rank": ("#", "rank"),
    "method": ("method", "method"),
    "rank_value": ("ranked on", "rank_value"),
    "mean_rank": ("mean rank", "mean_rank"),
    "rho_eu_risk": ("ρ EU·risk", "rho_eu_risk"),
    "rho_eu_var": ("ρ EU·var", "rho_eu_var"),
    "rho_eu_point": ("ρ EU·point", "rho_eu_point"),
    "rho_au": ("ρ AU·AU*", "rho_au"),
    "delta_ent_risk": ("Δ_ent", "delta_ent_risk"),
    "rmse": ("RMSE", "rmse"),
    "n": ("valid", "n_valid"),
    # proxy metrics (udbench.evaluation.proxies), shown with --metrics or --columns
    **{k: (PROXY_LABELS[k].replace(" vs f* (EU)", "·f*"), k) for k in PROXY_KEYS},
    # classification label metrics (udbench.evaluation.classification); nll is shared
    "accuracy": ("acc.", "accuracy"),
    "brier": ("Brier", "brier"),
    "ece": ("ECE", "ece"),
    # classification: the rank metrics against the Brier-score oracle targets
    # (udbench.evaluation.classification_cell.BRIER_METRIC_KEYS), shown with --columns
    "rho_eu_risk_brier": ("ρ EU·risk B", "rho_eu_risk_brier"),
    "rho_eu_var_brier": ("ρ EU·var B", "rho_eu_var_brier"),
    "rho_eu_point_brier": ("ρ EU·point B", "rho_eu_point_brier"),
    "rho_au_brier": ("ρ AU·AU* B", "rho_au_brier"),
    "delta_ent_risk_brier": ("Δ_ent B", "delta_ent_risk_brier"),
}
#: The Brier-score columns of a classification leaderboard (``--columns`` names them; the
#: leaderboard then averages them too).
BRIER_COLUMNS: tuple[str, ...] = tuple(k for k in BOARD_COLUMNS if k.endswith("_brier"))
#: The default columns (``rank`` and ``method`` are always shown).
DEFAULT_COLUMNS: tuple[str, ...] = ("rho_eu_risk", "rho_au", "delta_ent_risk", "rmse", "n")
#: The default columns of a classification leaderboard (``task_type`` classification).
CLASSIFICATION_COLUMNS: tuple[str, ...] = (
    "rho_eu_risk",
    "rho_au",
    "delta_ent_risk",
    "accuracy",
    "nll",
    "n",
)
_AU_COLUMNS = frozenset({"rho_au", "delta_ent_risk", "rho_au_brier", "delta_ent_risk_brier"})
#: Legend lines that differ on a classification leaderboard.
_CLASSIFICATION_LEGEND = {
    "rho_au": "ρ AU·AU* = ρ(AU, AU*) (log loss: AU* = E_F H(π_F))",
    "accuracy": "acc. = accuracy on labels drawn from π* at the evaluation points",
    "nll": "NLL, Brier, ECE: of π̂ against those labels (lower is better)",
    "rho_eu_risk_brier": (
        "… B = the same ρ and Δ_ent against the Brier-score oracle targets (the method's AU "
        "and EU stay its log-loss terms: orderings only)"
    ),
}
#: Legend lines that differ on a classification leaderboard under ``--loss brier``.
_BRIER_LEGEND = {
    "rho_au": (
        "ρ AU·AU* = ρ(AU, AU*) (Brier score: AU* = E_F(1 − ‖π_F‖²); the method's AU and EU "
        "stay its log-loss terms: orderings only)"
    ),
}
_LEGEND = {
    "rho_eu_risk": "ρ EU·risk = Spearman ρ(EU, EU*_risk)",
    "rho_eu_var": "ρ EU·var = ρ(EU, EU*_var)",
    "rho_eu_point": "ρ EU·point = ρ(EU, EU*_point)",
    "rho_au": "ρ AU·AU* = ρ(AU, AU*) (heteroscedastic noise)",
    "delta_ent_risk": "Δ_ent = ρ(EU, AU) − ρ(EU*_risk, AU*)",
    "rmse": "RMSE of the prediction vs f* (target units)",
    "mean_rank": (
        "mean rank = a method's per-instance rank (1 = best) averaged over the common "
        "instances; rank orders the ranking statistic (--rank-stat), the mean ρ by default"
    ),
    "nll": "NLL, CRPS, Winkler: of N(â, AU + EU) at noisy y (lower is better)",
    "picp_50": "PICP q% = coverage of the central q% interval (nominal q)",
    "mpiw_50": "MPIW q% = its mean width",
    "ence": "ENCE: 10 equal-count SD bins",
    "ause": "AUSE: area under the sparsification error curve",
    "nll_f": "·f* = N(â, EU) scored at f*",
}
#: Columns whose legend line is another column's (one line per group).
_GROUP: dict[str, str] = {
    "crps": "nll",
    "winkler_50": "nll",
    "winkler_90": "nll",
    "winkler_95": "nll",
    "picp_90": "picp_50",
    "picp_95": "picp_50",
    "mpiw_90": "mpiw_50",
    "mpiw_95": "mpiw_50",
    "crps_f": "nll_f",
    "ause_f": "nll_f",
    "brier": "nll",
    "ece": "nll",
    **{k: "rho_eu_risk_brier" for k in BRIER_COLUMNS},
}


#: Columns in target units or unbounded: shown to 3 significant digits, like RMSE.
_SCALED = frozenset(
    {"rmse", "nll", "crps", "sharpness", "nll_f", "crps_f"}
    | {f"{p}_{q}" for p in ("mpiw", "winkler") for q in (50, 90, 95)}
)


def parse_columns(text: str | None) -> list[str]:
    """The columns named in ``--columns`` (comma-separated keys of :data:`BOARD_COLUMNS`).

    ``rank`` and ``method`` come first whether named or not; None gives the default set.

    Raises
    ------
    UdbenchError
        An unknown column name (the message lists the known ones).
    """
    if text is None:
        chosen = list(DEFAULT_COLUMNS)
    else:
        chosen = [c.strip() for c in text.split(",") if c.strip()]
        unknown = [c for c in chosen if c not in BOARD_COLUMNS]
        if unknown or not chosen:
            raise param_error(
                "udbench leaderboard",
                "--columns",
                f"be comma-separated names among {', '.join(BOARD_COLUMNS)}",
                text,
            )
    return ["rank", "method"] + [c for c in dict.fromkeys(chosen) if c not in ("rank", "method")]


def parse_metrics(text: str | None) -> list[str]:
    """The proxy metrics named in ``--metrics`` (comma-separated; ``all`` for every one).

    Raises
    ------
    UdbenchError
        An unknown name (the message lists the proxies).
    """
    if text is None:
        return []
    chosen = [c.strip() for c in text.split(",") if c.strip()]
    if chosen == ["all"]:
        return list(PROXY_KEYS)
    unknown = [c for c in chosen if c not in PROXY_KEYS]
    if unknown or not chosen:
        raise param_error(
            "udbench leaderboard",
            "--metrics",
            f"be 'all' or comma-separated names among {', '.join(PROXY_KEYS)}",
            text,
        )
    return list(dict.fromkeys(chosen))


def _finite(v: Any) -> bool:
    """True for a finite number (Python or NumPy); False for None, NaN, ±inf and pandas.NA."""
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


#: Decimals of a bounded column (ρ, Δ_ent, coverages, calibration errors): 0.484, −0.123.
_BOUNDED_DECIMALS = 3
#: Most decimals a column in target units is shown with.
_MAX_DECIMALS = 6


def _decimals(values: Any, halves: Any = ()) -> int:
    """Decimals of a column in target units, one count for the whole column.

    3 significant digits of the column's median value, but no more than one digit past the
    leading digit of its median interval half-width (a mean is not shown finer than its
    uncertainty); at most :data:`_MAX_DECIMALS`. So the numbers of a column line up and
    compare at a glance.
    """

    def median_exponent(a: Any) -> int | None:
        v = np.abs(np.asarray(a, dtype=float))
        v = v[np.isfinite(v) & (v > 0)]
        return None if v.size == 0 else int(np.floor(np.log10(np.median(v))))

    value = median_exponent(values)
    if value is None:
        return _BOUNDED_DECIMALS
    decimals = 2 - value
    half = median_exponent(halves)
    if half is not None:
        decimals = min(decimals, 1 - half)
    return int(min(max(decimals, 0), _MAX_DECIMALS))


def _number(v: float, decimals: int) -> str:
    return f"{v:.{decimals}f}"


def _half(h: float, decimals: int) -> str:
    """A half-width to the column's decimals; one too small to show is ``<0.001``, never 0."""
    if h > 0 and round(h, decimals) == 0:
        return f"<{10.0**-decimals:.{decimals}f}"
    return f"{h:.{decimals}f}"


def _rmse_scale(board: Any) -> int:
    """Power of ten the RMSE column is shown in: 0 unless its values are huge or tiny.

    Positional numbers stay short for 1e-4 ≤ RMSE < 1e5; outside, the column shows
    RMSE / 10^k (header ``RMSE/1ek``) so the values stay short instead of ``1.62e+10±4.6e+09``.
    """
    values = np.abs(np.asarray(board["rmse"], dtype=float))
    values = values[np.isfinite(values) & (values > 0)]
    if values.size == 0:
        return 0
    k = int(np.floor(np.log10(values.max())))
    return k if (k >= 5 or k <= -4) else 0


def _column_decimals(board: Any, key: str, rmse_scale: int = 0) -> int:
    """The decimals every number of column ``key`` is shown with (see :func:`_decimals`)."""
    if key == "mean_rank":
        return 2
    col = BOARD_COLUMNS[key][1]
    if key not in _SCALED or col not in board.columns:
        return _BOUNDED_DECIMALS
    values = np.asarray(board[col], dtype=float)
    halves = np.asarray(board[f"{col}_high"], dtype=float) - np.asarray(
        board[f"{col}_low"], dtype=float
    )
    if key == "rmse" and rmse_scale:
        values, halves = values / 10.0**rmse_scale, halves / 10.0**rmse_scale
    return _decimals(values, halves / 2.0)


def _cell(
    r: dict[str, Any], key: str, intervals: bool, rmse_scale: int = 0, decimals: int = 3
) -> str:
    col = BOARD_COLUMNS[key][1]
    v: Any = r.get(col)
    if key == "rmse" and rmse_scale:
        r = {
            k: (float(r[k]) / 10.0**rmse_scale if _finite(r.get(k)) else r.get(k))
            for k in ("rmse", "rmse_low", "rmse_high")
        }
        v = r["rmse"]
    if key == "rank":
        return "–" if not _finite(v) else str(int(v))
    if key == "method":
        return str(v)
    if key == "n":
        failed = int(r.get("n_failed") or 0)  # type: ignore[arg-type]
        return f"{int(v)}" + (f" ({failed}✗)" if failed else "")
    if key in _AU_COLUMNS and r.get("constant_aleatoric"):
        return "const."
    if not _finite(v):
        return "–"
    text = _number(float(v), decimals)
    lo: Any = r.get(f"{col}_low")
    hi: Any = r.get(f"{col}_high")
    if key == "rank_value":
        return f"{float(v):.2f}" if r.get("rank_value") == r.get("mean_rank") else text
    if key == "mean_rank" or not (_finite(lo) and _finite(hi)):
        return text
    if intervals:
        return f"{text} [{_number(float(lo), decimals)}, {_number(float(hi), decimals)}]"
    return f"{text}±{_half((float(hi) - float(lo)) / 2.0, decimals)}"


def _au_counts_note(board: Any, cols: list[str]) -> str | None:
    """What the AU columns average over, when it is not every row's ``valid`` count.

    ρ(AU, AU*) and Δ_ent are means over the instances with heteroscedastic noise only
    (SPEC §10): with homoscedastic instances in the results they rest on fewer instances
    than the ``valid`` column counts, and the note says on how many. On a classification
    board (``board.attrs["task_type"]``) every instance counts (AU* varies in x whatever the
    temperature mode), and the counts differ only where a method's estimate is constant.
    """
    shown = [c for c in cols if c in _AU_COLUMNS]
    rows = board[~board["constant_aleatoric"].astype(bool)]
    if not shown or rows.empty:
        return None
    counts: set[int] = set()
    differs = False
    for r in rows.to_dict(orient="records"):
        for c in shown:
            n = r.get(f"{BOARD_COLUMNS[c][1]}_n")
            if _finite(n):
                counts.add(int(n))
                differs |= int(n) != int(r["n_valid"])
    if not differs:
        return None
    names = " and ".join(BOARD_COLUMNS[c][0] for c in shown)
    if board.attrs.get("task_type") == "classification":  # AU* varies whatever τ(x) is
        low, high = min(counts), max(counts)
        many = f"{high}" if low == high else f"{low}–{high}"
        return (
            f"{names}: means over the {many} valid instance(s) where they are defined (a "
            "method whose AU or EU is constant on an instance has no rank correlation there)"
        )
    if counts == {0}:
        return (
            f"{names}: undefined here, no valid instance has heteroscedastic noise "
            "(AU* is constant under homoscedastic noise, SPEC §10)"
        )
    low, high = min(counts - {0} or {0}), max(counts)
    many = f"{high}" if low == high else f"{low}–{high}"
    return (
        f"{names}: means over the {many} valid instance(s) with heteroscedastic noise only "
        "(AU* is constant under homoscedastic noise, SPEC §10), not every valid one"
    )


def board_table(
    board: Any, columns: list[str] | None = None, *, intervals: bool = False
) -> tuple[Table, list[str]]:
    """The rich table of a leaderboard and the note lines printed under it.

    Parameters
    ----------
    board : DataFrame
        From :func:`udbench.evaluation.leaderboard.leaderboard` (its ``attrs`` notes are used).
    columns : list of str, optional
        Keys of :data:`BOARD_COLUMNS` (:func:`parse_columns`); default the compact set. The
        ranking statistic's column (``ranked on``) is added when it is not the mean shown
        (mean-rank ranking, or partial results).
    intervals : bool, default False
        Show ``mean [low, high]`` instead of ``mean±half-width``.
    """
    cols = parse_columns(None) if columns is None else list(columns)
    if len(board) == 0 or "method" not in board.columns:
        empty = Table(title="udbench leaderboard · no results")
        return empty, []
    ranking = str(board.attrs.get("ranking") or "")
    partial = board.attrs.get("partial")
    by_mean_rank = "mean per-instance rank" in ranking
    if (by_mean_rank or partial) and "rank_value" not in cols and "mean_rank" not in cols:
        cols.insert(2, "rank_value")
    table = Table(
        title="udbench leaderboard · mean over instances"
        + (" [95% interval]" if intervals else " ± half 95% interval"),
        box=None,
        header_style="bold underline",
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
    )
    widest = max([len(str(m)) for m in board["method"]] + [6])
    scale = _rmse_scale(board) if "rmse" in cols else 0
    for key in cols:
        header = BOARD_COLUMNS[key][0]
        if key == "rmse" and scale:
            header = f"RMSE/1e{scale}"
        if key == "rank_value":  # the statistic that ranks, named by what it is
            header = "mean rank" if by_mean_rank else "common"
        if key == "method":
            table.add_column(header, justify="left", overflow="fold", min_width=min(widest, 14))
        else:
            table.add_column(header, justify="right", no_wrap=True)
    decimals = {key: _column_decimals(board, key, scale) for key in cols}
    if "rank_value" in cols:
        values = np.abs(np.asarray(board["rank_value"], dtype=float))
        bounded = bool(np.all(values[np.isfinite(values)] <= 1.0))
        decimals["rank_value"] = (
            2 if by_mean_rank else _BOUNDED_DECIMALS if bounded else _decimals(values)
        )
    for r in board.to_dict(orient="records"):
        table.add_row(*(_cell(r, key, intervals, scale, decimals[key]) for key in cols))
    notes = [ranking] if ranking else []
    if partial:
        notes.append(str(partial))
    au_note = _au_counts_note(board, cols)
    if au_note:
        notes.append(au_note)
    groups = dict.fromkeys(_GROUP.get(c, c) for c in cols)
    legend_of = _LEGEND
    if board.attrs.get("task_type") == "classification":
        legend_of = {**_LEGEND, **_CLASSIFICATION_LEGEND}
        if board.attrs.get("loss") == "brier":
            legend_of.update(_BRIER_LEGEND)
    legend = [legend_of[c] for c in groups if c in legend_of]
    if any(c in _AU_COLUMNS for c in cols) and bool(board["constant_aleatoric"].any()):
        legend.append("const. = constant-AU method: ρ(AU, AU*) and Δ_ent undefined (SPEC §8)")
    if "rank_value" in cols and not by_mean_rank:
        legend.append("common = mean over the instances common to every method (ranks)")
    if "n" in cols:
        failed = bool((board["n_failed"] > 0).any())
        legend.append("valid = instances scored" + ("; (k✗) = k failed cells" if failed else ""))
    if legend:
        notes.append(" · ".join(legend))
    return table, notes


def print_board(
    board: Any, console: Console, columns: list[str] | None = None, *, intervals: bool = False
) -> None:
    """Print :func:`board_table` and its notes (soft-wrapped lines, never cut).

    Written to a terminal, the table fits its width (Rich shrinks the columns); written to
    a file or a pipe, it is printed at its own full width, so that no column is dropped or
    cut whatever ``--columns`` asks for (a pipe has no width to fit).
    """
    from rich.measure import Measurement

    table, notes = board_table(board, columns, intervals=intervals)
    if console.is_terminal:
        console.print(table)
    else:
        wide = console.options.update_width(10_000)
        natural = Measurement.get(console, wide, table).maximum
        width = console.width
        console.width = max(width, natural)
        try:
            console.print(table)
        finally:
            console.width = width
    for line in notes:
        console.print(line, highlight=False, markup=False, style="dim")
