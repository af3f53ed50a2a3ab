"""Figures of the analyses (matplotlib, Agg canvas: no display, no pyplot state).

Each function takes a table of :mod:`udbench.analyses.tables` and returns a
:class:`matplotlib.figure.Figure`. Methods are sorted (by the table's rank or value),
coloured by method family (:data:`FAMILY_COLOURS`), and legends sit outside the axes, so
that figures stay readable with the paper's 19 methods.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from udbench.analyses._common import FAMILY_NAMES

__all__ = [
    "FAMILY_COLOURS",
    "accuracy_figure",
    "entanglement_figure",
    "headline_figure",
    "matched_prior_figure",
    "rank_heatmap_figure",
    "shell_figure",
    "stability_figure",
]

#: Colour of each method family (colour-blind safe Okabe–Ito colours).
FAMILY_COLOURS: dict[str, str] = {
    "gp": "#0072B2",
    "trees": "#009E73",
    "nn": "#E69F00",
    "linear": "#CC79A7",
    "other": "#777777",
}
_MARKERS = ("o", "s", "D", "^", "v")


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _colour(family: str) -> str:
    return FAMILY_COLOURS.get(family, FAMILY_COLOURS["other"])


def _err(table: pd.DataFrame, col: str) -> np.ndarray:
    est = table[col].to_numpy(dtype=float)
    lo = table[f"{col}_low"].to_numpy(dtype=float)
    hi = table[f"{col}_high"].to_numpy(dtype=float)
    return np.vstack(
        [np.where(np.isfinite(lo), est - lo, 0.0), np.where(np.isfinite(hi), hi - est, 0.0)]
    ).clip(min=0.0)


def _family_legend(fig: Any, families: list[str]) -> None:
    from matplotlib.lines import Line2D

    present = [f for f in FAMILY_COLOURS if f in set(families)]
    handles = [
        Line2D([], [], marker="o", ls="", color=_colour(f), label=FAMILY_NAMES.get(f, f))
        for f in present
    ]
    if handles:
        fig.legend(handles=handles, loc="outside right upper", title="method family")


def _method_axis(ax: Any, methods: list[str], families: list[str]) -> np.ndarray:
    ypos = np.arange(len(methods))[::-1].astype(float)
    ax.set_yticks(ypos, methods)
    for tick, fam in zip(ax.get_yticklabels(), families, strict=False):
        tick.set_color(_colour(fam))
    ax.set_ylim(-0.7, len(methods) - 0.3)
    ax.grid(axis="x", alpha=0.3)
    return ypos


def _points(ax: Any, x: Any, y: Any, xerr: np.ndarray, families: list[str]) -> None:
    """Points with horizontal intervals, one errorbar call per family (coloured by it)."""
    x, y, fams = np.asarray(x, dtype=float), np.asarray(y, dtype=float), np.asarray(families)
    for fam in dict.fromkeys(families):
        sel = fams == fam
        ax.errorbar(x[sel], y[sel], xerr=xerr[:, sel], fmt="o", ms=4, capsize=2, color=_colour(fam))


def headline_figure(table: pd.DataFrame, *, au: bool = False) -> Any:
    """ρ of EU with the three EU targets (or of AU with AU*) per method, with intervals."""
    cols = (
        [("rho_au", "ρ(AU, AU*)")]
        if au
        else [
            ("rho_eu_risk", "ρ(EU, EU*_risk)"),
            ("rho_eu_var", "ρ(EU, EU*_var)"),
            ("rho_eu_point", "ρ(EU, EU*_point)"),
        ]
    )
    t = table
    if au:
        t = table[~table["constant_au"].astype(bool) & table["rho_au"].notna()]
        t = t.sort_values("rho_au", ascending=False, kind="stable")
    methods, fams = list(t["method"]), list(t["family"])
    fig = _figure(3.0 * len(cols) + 2.2, 0.32 * len(methods) + 1.4)
    axes = fig.subplots(1, len(cols), sharey=True, squeeze=False)[0]
    for ax, (col, name) in zip(axes, cols, strict=True):
        ypos = _method_axis(ax, methods, fams)
        _points(ax, t[col], ypos, _err(t, col), fams)
        ax.axvline(0.0, color="#999", lw=0.8)
        ax.set_xlabel(f"mean {name}")
    fig.suptitle("AU quality (heteroscedastic noise)" if au else "EU quality per target")
    _family_legend(fig, fams)
    return fig


def stability_figure(table: pd.DataFrame) -> Any:
    """Kendall's W per factor and criterion, with intervals and the 1/m chance level."""
    fig = _figure(8.5, 3.6)
    ax = fig.add_subplot()
    factors = list(dict.fromkeys(table["factor"]))
    x = np.arange(len(factors), dtype=float)
    for off, (crit, colour) in zip(
        (-0.12, 0.12), (("eu", "#0072B2"), ("au", "#D55E00")), strict=True
    ):
        sub = table[table["criterion"] == crit].set_index("factor").reindex(factors)
        if sub["W"].notna().any():
            ax.errorbar(
                x + off,
                sub["W"],
                yerr=_err(sub, "W"),
                fmt="o",
                capsize=3,
                color=colour,
                label=f"{crit.upper()} criterion",
            )
        for xi, n in zip(x, sub["n_levels"], strict=True):
            if n and n >= 2:
                ax.plot(  # the chance level 1/m of this criterion's m levels
                    [xi + off - 0.1, xi + off + 0.1], [1.0 / n] * 2, color=colour, lw=1, ls="--"
                )
    for xi, f in zip(x, factors, strict=True):
        sub = table[table["factor"] == f]
        if not sub["W"].notna().any():  # say why a factor has no point, never leave it blank
            levels = sub["n_levels"].dropna()
            n = int(levels.max()) if len(levels) else 0
            why = f"{n} level" if n < 2 else "too few\nmethods"
            ax.text(xi, 0.5, f"W undefined\n({why})", ha="center", va="center", fontsize="small")
    labels = {
        "family": "prior family",
        "noise": "noise mode",
        "coverage": "coverage",
        "dataset": "dataset",
    }
    ax.set_xticks(x, [labels.get(f, f) for f in factors])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("Kendall's W")
    ax.set_title("Ranking stability across levels (dashed: 1/m for m levels)")
    ax.grid(axis="y", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        fig.legend(loc="outside right upper")
    return fig


def rank_heatmap_figure(ranks: pd.DataFrame, families: dict[str, str] | None = None) -> Any:
    """Rank of every method (columns) at every dataset (rows), annotated."""
    fam = families or {}
    n_rows, n_cols = ranks.shape
    fig = _figure(0.45 * n_cols + 2.6, 0.35 * n_rows + 1.8)
    ax = fig.add_subplot()
    im = ax.imshow(ranks.to_numpy(dtype=float), cmap="viridis_r", aspect="auto")
    ax.set_xticks(np.arange(n_cols), list(ranks.columns), rotation=60, ha="right")
    ax.set_yticks(np.arange(n_rows), list(ranks.index))
    for tick, m in zip(ax.get_xticklabels(), ranks.columns, strict=True):
        tick.set_color(_colour(fam.get(str(m), "other")))
    vals = ranks.to_numpy(dtype=float)
    middle = np.nanmean(vals) if np.isfinite(vals).any() else 0.0
    for i in range(n_rows):
        for j in range(n_cols):
            if np.isfinite(vals[i, j]):
                ink = "k" if vals[i, j] < middle else "w"  # dark on the bright (good) cells
                ax.text(j, i, f"{vals[i, j]:g}", ha="center", va="center", fontsize=6, color=ink)
    fig.colorbar(im, ax=ax, label="rank (1 = best)")
    ax.set_title(f"Method rank per {ranks.index.name or 'level'}")
    return fig


def matched_prior_figure(by_family: pd.DataFrame, by_method: pd.DataFrame) -> Any:
    """Mean rank under the matched oracle prior vs the others, per family and per method."""
    fig = _figure(11.0, 0.3 * max(len(by_method), 4) + 1.6)
    left, right = fig.subplots(1, 2, width_ratios=[1, 2])
    fams = by_family[by_family["matched_prior"] != ""]
    x = np.arange(len(fams), dtype=float)
    for off, col, marker, name in (
        (-0.1, "rank_matched", "o", "matched prior"),
        (0.1, "rank_other", "s", "other priors"),
    ):
        for i, (_, r) in enumerate(fams.iterrows()):
            left.errorbar(
                x[i] + off,
                r[col],
                yerr=_err(fams.iloc[[i]], col),
                fmt=marker,
                capsize=3,
                color=_colour(r["family"]),
                mfc="white" if marker == "s" else None,
                label=name if i == 0 else None,
            )
    left.set_xticks(
        x,
        [
            f"{name}\n(↔ {str(prior).upper()})"
            for name, prior in zip(fams["family_name"], fams["matched_prior"], strict=True)
        ],
    )
    left.invert_yaxis()
    left.set_ylabel("mean rank (1 = best)")
    left.set_title("per method family")
    left.grid(axis="y", alpha=0.3)
    if len(fams):
        left.legend(loc="best", fontsize="small")
    else:
        left.text(
            0.5,
            0.5,
            "no method family with a\nmatched prior in these results",
            ha="center",
            va="center",
            transform=left.transAxes,
        )
    meth = by_method.sort_values(["family", "advantage"], ascending=[True, False], kind="stable")
    ypos = _method_axis(right, list(meth["method"]), list(meth["family"]))
    _points(right, meth["advantage"], ypos, _err(meth, "advantage"), list(meth["family"]))
    right.axvline(0.0, color="#999", lw=0.8)
    right.set_xlabel("advantage = rank(other priors) − rank(matched prior)")
    right.set_title("per method (positive: better under its matched prior)")
    fig.suptitle("Matched-prior advantage")
    _family_legend(fig, list(by_method["family"]))
    return fig


def entanglement_figure(table: pd.DataFrame, families: dict[str, str] | None = None) -> Any:
    """Δ_ent per method for each EU target, with intervals."""
    fam = families or {}
    methods = list(table["method"])
    fams = [fam.get(m, "other") for m in methods]
    fig = _figure(8.5, 0.36 * max(len(methods), 3) + 1.5)
    ax = fig.add_subplot()
    ypos = _method_axis(ax, methods, fams)
    for off, (t, marker) in zip(
        (-0.2, 0.0, 0.2), (("risk", "o"), ("var", "s"), ("point", "D")), strict=True
    ):
        ax.errorbar(
            table[f"delta_ent_{t}"],
            ypos + off,
            xerr=_err(table, f"delta_ent_{t}"),
            fmt=marker,
            ms=4,
            capsize=2,
            color="#333",
            mfc="white" if t != "risk" else "#333",
            label=f"EU*_{t}",
        )
    ax.axvline(0.0, color="#999", lw=0.8)
    ax.set_xlabel("mean Δ_ent = ρ(EU, AU) − ρ(EU*, AU*)")
    ax.set_title("Excess entanglement per EU target")
    fig.legend(loc="outside right upper", title="EU target")
    return fig


def shell_figure(table: pd.DataFrame, families: dict[str, str] | None = None) -> Any:
    """Mean ρ(EU, EU*_risk) per coverage shell, one line per method."""
    fam = families or {}
    cols = [c for c in table.columns if c.startswith("shell") and c[5:].isdigit()]
    fig = _figure(8.5, 4.2)
    ax = fig.add_subplot()
    x = np.arange(len(cols))
    seen: dict[str, int] = {}
    for _, r in table.iterrows():
        f = fam.get(str(r["method"]), "other")
        k = seen.get(f, 0)
        seen[f] = k + 1
        ax.plot(
            x,
            r[cols].to_numpy(dtype=float),
            marker=_MARKERS[k % len(_MARKERS)],
            ls=("-", "--", ":", "-.")[k // len(_MARKERS) % 4],
            color=_colour(f),
            ms=4,
            label=str(r["method"]),
        )
    ax.set_xticks(
        x,
        [
            f"{i}" + (" (inner)" if i == 0 else " (outer)" if i == len(cols) - 1 else "")
            for i in range(len(cols))
        ],
    )
    ax.set_xlabel("coverage shell (SPEC §3)")
    ax.set_ylabel("mean ρ(EU, EU*_risk)")
    ax.axhline(0.0, color="#999", lw=0.8)
    ax.grid(alpha=0.3)
    ax.set_title("EU quality per coverage shell")
    fig.legend(loc="outside right upper", fontsize="x-small", ncols=1 if len(table) <= 12 else 2)
    return fig


def accuracy_figure(table: pd.DataFrame) -> Any:
    """Mean NMSE against f* per method, with intervals (sorted by rank)."""
    methods, fams = list(table["method"]), list(table["family"])
    fig = _figure(6.5, 0.32 * len(methods) + 1.4)
    ax = fig.add_subplot()
    ypos = _method_axis(ax, methods, fams)
    _points(ax, table["nmse"], ypos, _err(table, "nmse"), fams)
    ax.set_xlabel("mean NMSE vs f* (lower is better)")
    ax.set_title("Accuracy of the point prediction")
    _family_legend(fig, fams)
    return fig
