"""How the report writes numbers, sentences and the regression leaderboard's table."""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pandas as pd

from udbench.evaluation.leaderboard import LEADERBOARD_METRICS


def _fmt(v: Any, lo: Any = None, hi: Any = None) -> str:
    """``v`` to 3 decimals (``–`` if missing), with its interval ``[lo, hi]`` when finite."""
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "–"
    text = f"{v:.3f}" if isinstance(v, float) else str(v)
    if lo is not None and hi is not None and np.isfinite(lo) and np.isfinite(hi):
        text += f" [{lo:.3f}, {hi:.3f}]"
    return text


def _sentence(text: Any) -> str:
    """``text`` with its first letter upper-cased (str.capitalize would lower the rest)."""
    text = str(text)
    return text[:1].upper() + text[1:]


def _board_html(board: pd.DataFrame) -> str:
    heads = [
        "rank",
        "method",
        "mean rank",
        "ρ(EU, EU*_risk)",
        "ρ(EU, EU*_var)",
        "ρ(EU, EU*_point)",
        "ρ(AU, AU*)",
        "Δ_ent (risk)",
        "RMSE vs f*",
        "valid",
        "failed",
    ]
    out = ["<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in heads) + "</tr>"]
    for r in board.to_dict(orient="records"):
        cells = ["–" if r["rank"] is pd.NA else str(r["rank"]), html.escape(str(r["method"]))]
        cells.append(_fmt(r["mean_rank"], None, None) if pd.notna(r["mean_rank"]) else "–")
        for m in LEADERBOARD_METRICS:
            if m in ("rho_au", "delta_ent_risk") and r.get("constant_aleatoric"):
                cells.append("n/a (constant AU)")
            else:
                text = _fmt(r[m], r[f"{m}_low"], r[f"{m}_high"])
                if m in ("rho_au", "delta_ent_risk") and text != "–":
                    text += f" (n={r[f'{m}_n']})"
                cells.append(text)
        cells += [str(r["n_valid"]), str(r["n_failed"])]
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)
