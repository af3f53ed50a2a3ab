"""The report's plots: interval plots of the leaderboard, EU quality per shell, tuning curves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from udbench.report._figures import figure, method_styles


def _interval_plot(board: pd.DataFrame, metrics: list[tuple[str, str]], title: str, xlabel: str):
    methods = list(board["method"])
    fig = figure(
        figsize=(7.5, 0.45 * len(methods) * max(1, len(metrics)) ** 0.5 + 1.4),
        layout="constrained",
    )
    ax = fig.add_subplot()
    k = len(metrics)
    offsets = np.linspace(-0.25, 0.25, k) if k > 1 else np.zeros(1)
    ypos = np.arange(len(methods))[::-1]
    for (col, name), off in zip(metrics, offsets, strict=True):
        est = board[col].to_numpy(dtype=float)
        lo = board[f"{col}_low"].to_numpy(dtype=float)
        hi = board[f"{col}_high"].to_numpy(dtype=float)
        err = np.vstack(
            [np.where(np.isfinite(lo), est - lo, 0), np.where(np.isfinite(hi), hi - est, 0)]
        )
        ax.errorbar(est, ypos + off, xerr=err, fmt="o", capsize=3, label=name)
    ax.axvline(0.0, color="#999", lw=0.8)
    ax.set_yticks(ypos, methods)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize="medium")
    if k > 1:
        ax.legend(loc="best", fontsize="small")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _shell_plot(shells: pd.DataFrame, bars: pd.DataFrame | None = None):
    cols = [c for c in shells.columns if c.startswith("shell")]
    styles = method_styles([str(m) for m in shells.index])
    ncol = 1 if len(shells) <= 12 else 2
    fig = figure(figsize=(7.5 + 1.6 * ncol, 4.6), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(cols))
    for i, (method, row) in enumerate(shells[cols].iterrows()):
        off = (i - (len(shells) - 1) / 2) * 0.03  # side by side, so the bars do not overlap
        y = row.to_numpy(dtype=float)
        err = None
        if bars is not None and not bars.empty:
            mine = bars[bars["method"] == method].set_index("shell")["half"]
            err = np.array([mine.get(s, np.nan) for s in range(len(cols))], dtype=float)
            err = np.where(np.isfinite(err), err, 0.0)
        ax.errorbar(x + off, y, yerr=err, ms=4, capsize=2, label=str(method), **styles[str(method)])
    ax.set_xticks(
        x,
        [
            f"{i}" + (" (inner)" if i == 0 else " (outer)" if i == len(cols) - 1 else "")
            for i in range(len(cols))
        ],
    )
    ax.set_xlabel("coverage shell (SPEC §3)")
    ax.set_ylabel("mean Spearman ρ(EU, EU*_risk)")
    ax.set_title("EU quality per shell (bars: mean ± 1.96 SE over instances)")
    ax.axhline(0.0, color="#999", lw=0.8)
    ax.grid(alpha=0.3)
    fig.legend(loc="outside right upper", fontsize="small", ncols=ncol)
    return fig


def _tuning_plot(records: Sequence[dict[str, Any]]):  # type: ignore[no-untyped-def]
    """Best-so-far held-out NLL against trial number, one line per sweep, coloured by method."""
    fig = figure(figsize=(7.5, 4.0))
    ax = fig.add_subplot()
    methods = sorted({str(r.get("method")) for r in records})
    colours = {m: style["color"] for m, style in method_styles(methods).items()}
    for r in records:
        pts = [(h["number"], h["best_so_far"]) for h in r.get("history", [])]
        pts = [(n, v) for n, v in pts if v is not None]
        if pts:
            x, y = zip(*pts, strict=True)
            ax.step(x, y, where="post", color=colours[str(r.get("method"))], alpha=0.7, lw=1)
    for m in methods:
        ax.plot([], [], color=colours[m], label=m)
    ax.set_xlabel("trial")
    ax.set_ylabel("best held-out Gaussian NLL so far")
    ax.set_title("Tuning sweeps (one line per method and condition)")
    ax.legend(fontsize=8)
    return fig


def _tuned_html(records: Sequence[dict[str, Any]]) -> str:
    """The tuned configurations as an HTML table."""
    rows = []
    for r in records:
        params = ", ".join(
            f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in (r.get("tuned_params") or {}).items()
        )
        rows.append(
            {
                "method": r.get("method"),
                "condition": r.get("condition"),
                "NLL": r.get("score"),
                "trials": f"{r.get('n_complete')}/{r.get('n_trials')}",
                "failed": r.get("n_failed"),
                "tuned values": params,
            }
        )
    table = pd.DataFrame(rows).to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="–")
    return (
        "<p class='note'>Tuned configurations (SPEC §9: held-out Gaussian NLL on the first "
        "seed's training sample; the winner is used for every seed of its condition).</p>" + table
    )
