"""``analyze``: every analysis of a results frame, written as tables, figures and HTML.

Layout of the output folder::

    DIR/
      analyses.html              one page with every table and figure, linking the files
      tables/<name>.csv          full precision, every column (estimates, intervals, counts)
      tables/<name>.tex          LaTeX (booktabs) for a paper: "estimate [low, high]" cells
      figures/<name>.png, .svg   every figure as PNG (150 dpi) and SVG

``udbench report`` writes the same files under ``REPORT/analyses/`` and adds the sections to
``report.html``.
"""

from __future__ import annotations

import base64
import html
import io
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from udbench.analyses import figures as fg
from udbench.analyses import proxies as px
from udbench.analyses import tables as tb
from udbench.analyses._common import EU_TARGETS, FAMILY_NAMES, method_families
from udbench.report.html import REPORT_CSS, ReportSection

__all__ = ["Analysis", "analyze", "latex_table"]


#: Column headers of the LaTeX/HTML display tables.
_HEADERS: dict[str, str] = {
    "rho_eu_risk": "ρ(EU, EU*_risk)",
    "rho_eu_var": "ρ(EU, EU*_var)",
    "rho_eu_point": "ρ(EU, EU*_point)",
    "rho_au": "ρ(AU, AU*)",
    "rho_eu_au": "ρ(EU, AU)",
    "mean_rank_eu": "mean rank (EU)",
    "rank_eu": "rank (EU)",
    "mean_rank_au": "mean rank (AU)",
    "rank_au": "rank (AU)",
    "mean_rank_nmse": "mean rank (NMSE)",
    "rank_nmse": "rank (NMSE)",
    "rank_matched": "rank, matched prior",
    "rank_other": "rank, other priors",
    "advantage": "advantage",
    "outer_minus_inner": "shell 4 − shell 0",
    "rmse": "RMSE",
    "nmse": "NMSE",
    "tau": "Kendall's τ",
    "proxy_label": "proxy",
    "n_methods": "methods",
    "n_instances": "instances",
    **{f"rho_star_{t}": f"ρ(EU*_{t}, AU*)" for t in ("risk", "var", "point")},
    **{f"delta_ent_{t}": f"Δ_ent ({t})" for t in ("risk", "var", "point")},
}
_LATEX_SUBS = (
    ("\\", r"\textbackslash{}"),
    ("&", r"\&"),
    ("%", r"\%"),
    ("$", r"\$"),
    ("#", r"\#"),
    ("_", r"\_"),
    ("{", r"\{"),
    ("}", r"\}"),
    ("~", r"\textasciitilde{}"),
    ("^", r"\textasciicircum{}"),
)
_LATEX_SYMBOLS = (("ρ", r"$\rho$"), ("Δ", r"$\Delta$"), ("−", "$-$"), ("↔", r"$\leftrightarrow$"))


def _latex_escape(text: str) -> str:
    for a, b in _LATEX_SUBS:
        text = text.replace(a, b)
    for a, b in _LATEX_SYMBOLS:
        text = text.replace(a, b)
    return text


def _cell(v: Any, lo: Any = None, hi: Any = None, digits: int = 3) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return "–"
    if isinstance(v, float):
        text = f"{v:.{digits}f}"
        if lo is not None and hi is not None and lo == lo and hi == hi:
            text += f" [{lo:.{digits}f}, {hi:.{digits}f}]"
        return text
    return str(v)


def display_table(table: pd.DataFrame, *, digits: int = 3) -> pd.DataFrame:
    """The table for reading: ``stat`` with ``stat_low``/``stat_high`` as "est [low, high]".

    Count columns (``*_n``) and the interval columns are dropped, headers are made readable.
    """
    cols = list(table.columns)
    out: dict[str, list[str]] = {}
    for c in cols:
        if c.endswith(("_low", "_high", "_n")) and c.rsplit("_", 1)[0] in cols:
            continue
        has_ci = f"{c}_low" in cols and f"{c}_high" in cols
        vals = [
            _cell(
                r[c],
                r[f"{c}_low"] if has_ci else None,
                r[f"{c}_high"] if has_ci else None,
                digits,
            )
            for _, r in table.iterrows()
        ]
        out[_HEADERS.get(c, c.replace("_", " "))] = vals
    disp = pd.DataFrame(out, index=table.index)
    if table.index.name is not None or not isinstance(table.index, pd.RangeIndex):
        disp.index = [str(i) for i in table.index]
        disp.index.name = table.index.name
    return disp


def latex_table(table: pd.DataFrame, *, caption: str, label: str, digits: int = 3) -> str:
    """A booktabs LaTeX table of :func:`display_table` (needs ``\\usepackage{booktabs}``).

    Special characters of cells and headers are escaped; ρ, Δ and − become math.
    """
    disp = display_table(table, digits=digits)
    keep_index = not isinstance(table.index, pd.RangeIndex)
    if keep_index:
        disp = disp.reset_index().rename(columns={"index": table.index.name or ""})
    heads = [_latex_escape(str(c)) for c in disp.columns]
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        rf"\caption{{{_latex_escape(caption)}}}",
        rf"\label{{{label}}}",
        rf"\begin{{tabular}}{{l{'r' * (len(heads) - 1)}}}",
        r"\toprule",
        " & ".join(heads) + r" \\",
        r"\midrule",
    ]
    for _, r in disp.iterrows():
        lines.append(" & ".join(_latex_escape(str(v)) for v in r) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)


@dataclass
class Analysis:
    """What :func:`analyze` computed and wrote.

    Attributes
    ----------
    tables : dict
        Name -> DataFrame (``headline``, ``stability``, ``rank_heatmap``,
        ``matched_prior``, ``matched_prior_methods``, ``entanglement``, ``shells``,
        ``accuracy``, ``proxy_agreement`` — pooled τ per proxy —, ``proxy_agreement_levels`` —
        τ per factor level — and, when the results hold other losses, ``loss_agreement``).
    files : list of Path
        Every file written (tables, figures, the HTML page).
    html : Path or None
        ``analyses.html``.
    sections : list of ReportSection
        The HTML sections, links relative to the folder given as ``link_prefix``.
    """

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    html: Path | None = None
    sections: list[ReportSection] = field(default_factory=list)


#: name, title, note (HTML) of every table; in the order written.
_TABLES: tuple[tuple[str, str, str], ...] = (
    (
        "headline",
        "Headline: EU and AU quality per method",
        "Mean Spearman ρ over instances of the EU estimate with EU*_risk, EU*_var and "
        "EU*_point, and of the AU estimate with AU* (heteroscedastic noise modes, "
        "heteroscedastic-AU methods; SPEC §10). Ranks: mean per-instance rank over the "
        "instances on which every method is defined (1 = best).",
    ),
    (
        "stability",
        "Stability of the ranking: Kendall's W",
        "Kendall's W (tie-corrected) of the method ranking across the levels of each factor; "
        "each level ranks the methods by their mean criterion there. 1: every level ranks "
        "alike; about 1/m: unrelated rankings (m levels, dashed in the figure).",
    ),
    (
        "rank_heatmap",
        "Rank per dataset",
        "Rank of every method on each dataset by its mean ρ(EU, EU*_risk) there (the rows "
        "behind W of the dataset factor).",
    ),
    (
        "matched_prior",
        "Matched-prior advantage",
        "Mean rank (EU criterion) of a method family when the oracle prior matches its "
        "inductive bias (GP-based ↔ GP, trees ↔ HBART, NN ↔ BNN) and under the other oracles; "
        "advantage = rank(other) − rank(matched), positive when the family does better under "
        "its own prior. BLR has no matched prior.",
    ),
    ("matched_prior_methods", "Matched-prior advantage per method", ""),
    (
        "entanglement",
        "Entanglement",
        "ρ(EU, AU) of the estimates, the ground truth ρ(EU*, AU*) and Δ_ent = ρ(EU, AU) − "
        "ρ(EU*, AU*) for each EU target (heteroscedastic noise, heteroscedastic-AU methods). "
        "Positive Δ_ent: the estimates are more entangled than the truth.",
    ),
    (
        "shells",
        "EU quality per coverage shell",
        "Mean ρ(EU, EU*_risk) inside each coverage shell, inner (0) to outermost (4).",
    ),
    (
        "accuracy",
        "Accuracy of the point prediction",
        "Mean RMSE and NMSE = mean (â − f*)² / Var(f*) against the ground truth f*; ranks by "
        "NMSE (1 = lowest).",
    ),
    (
        "proxy_agreement",
        "Proxy metrics against the oracle: Kendall's τ of the rankings",
        "For each proxy metric (NLL, CRPS, interval coverage and width, calibration error, "
        "sharpness, AUSE…; docs/metrics.md), Kendall's τ-b between the method ranking by its "
        "mean and the ranking by the oracle criterion (EU: ρ(EU, EU*_risk); AU: ρ(AU, AU*), "
        "heteroscedastic noise, heteroscedastic-AU methods), pooled over all instances; the "
        "same per level of every factor is in proxy_agreement_levels.csv (grey marks in the "
        "figure). τ = 1: the proxy would have ranked the methods as the ground truth does.",
    ),
)
#: The table written when the results hold other losses (udbench run/score --loss).
_LOSS_TABLE: tuple[str, str, str] = (
    "loss_agreement",
    "Other losses: Kendall's τ with the squared-loss ranking",
    "For each other loss stored (CRPS, log score; paper Table 2), Kendall's τ-b between the "
    "method ranking by mean ρ(EU, EU*_risk) under that loss's decomposition and the same "
    "ranking under squared loss, pooled (factor 'all') and per level of every factor, with "
    "bootstrap intervals recomputing both rankings. τ = 1: the loss does not move the "
    "ranking.",
)


def _not_drawn(fig_name: str, t: dict[str, pd.DataFrame]) -> str | None:
    """Why figure ``fig_name`` would be empty for tables ``t`` (None: it has something)."""
    hetero = "no heteroscedastic-AU method has a valid instance with heteroscedastic noise"
    if fig_name == "headline_au" and not t["headline"]["rho_au"].notna().any():
        return hetero
    if fig_name == "entanglement":
        ent = t["entanglement"]
        if ent.empty or not ent[[f"delta_ent_{k}" for k in EU_TARGETS]].notna().any().any():
            return hetero
    if fig_name == "rank_heatmap" and t["rank_heatmap"].empty:
        return "no dataset has a mean ρ for the methods"
    if fig_name == "proxy_agreement" and not t["proxy_agreement"]["tau"].notna().any():
        return (
            "no Kendall's τ is defined (proxy metrics absent from these results, e.g. made "
            "before udbench stored them, or fewer than 2 methods)"
        )
    return None


#: table name -> figure names drawn from it
_FIGURES: dict[str, tuple[str, ...]] = {
    "headline": ("headline_eu", "headline_au"),
    "stability": ("stability",),
    "rank_heatmap": ("rank_heatmap",),
    "matched_prior": ("matched_prior",),
    "entanglement": ("entanglement",),
    "shells": ("shells",),
    "accuracy": ("accuracy",),
    "proxy_agreement": ("proxy_agreement",),
}


def analyze(
    results: pd.DataFrame,
    out_dir: str | os.PathLike[str],
    *,
    bootstrap_unit: str = "instance",
    n_resamples: int = 2000,
    confidence: float = 0.95,
    random_state: int | str = 0,
    families: Mapping[str, str] | None = None,
    link_prefix: str = "",
    write_html: bool = True,
    loss: str = "squared",
) -> Analysis:
    """Run every analysis on a results frame; write CSV/LaTeX tables, PNG/SVG figures, HTML.

    Parameters
    ----------
    results : DataFrame
        Long-format results (:func:`udbench.evaluation.store.read_results`).
    out_dir : str or Path
        Output folder (created): ``tables/``, ``figures/`` and ``analyses.html``.
    bootstrap_unit : {"instance", "dataset"}, default "instance"
        Resample instances within datasets, or whole datasets (:mod:`udbench.analyses.tables`).
    n_resamples : int, default 2000
        Bootstrap replicates, shared by every interval (paired).
    confidence : float, default 0.95
        Nominal coverage of the intervals.
    random_state : int or str, default 0
        Names the resampling stream.
    families : mapping, optional
        Method label -> method family, overriding the registry's.
    link_prefix : str, default ""
        Prefix of the links in :attr:`Analysis.sections` (``"analyses/"`` when the sections
        go into a page one folder up, as in ``udbench report``).
    write_html : bool, default True
        Write ``analyses.html``.
    loss : {"squared", "crps", "log"}, default "squared"
        The loss whose AU/EU decomposition every analysis uses
        (:func:`udbench.evaluation.losses.results_under_loss`; needs the results scored
        under it). Whatever the loss, when the results hold other losses the table
        ``loss_agreement`` (:func:`udbench.analyses.losses.loss_agreement_table`) gives
        Kendall's τ between the squared-loss ranking and each other loss's ranking.

    Returns
    -------
    Analysis

    Raises
    ------
    UdbenchError
        Empty results or no ok cell, bad bootstrap settings.
    """
    from udbench.analyses.losses import loss_agreement_table, stored_losses
    from udbench.evaluation.losses import results_under_loss

    stored = results
    results = results_under_loss(stored, loss, "analyze")
    ctx = tb._context(
        results, "analyze", bootstrap_unit, n_resamples, confidence, random_state, None
    )
    frame = ctx[0]
    fam = method_families(frame, families)
    t: dict[str, pd.DataFrame] = {}
    t["headline"] = tb.headline_table(results, families=fam, _ctx=ctx)
    t["stability"] = tb.stability_table(results, _ctx=ctx)
    t["rank_heatmap"] = tb.rank_heatmap_table(results)
    t["matched_prior"] = tb.matched_prior_advantage(results, families=fam, _ctx=ctx)
    t["matched_prior_methods"] = tb.matched_prior_advantage(
        results, by="method", families=fam, _ctx=ctx
    )
    ent = tb.entanglement_table(results, _ctx=ctx)
    ent.insert(1, "family", [fam[m] for m in ent["method"]])
    t["entanglement"] = ent
    shells = tb.shell_table(results, _ctx=ctx)
    shells.insert(1, "family", [fam[m] for m in shells["method"]])
    order = t["headline"]["method"].tolist()
    t["shells"] = shells.set_index("method").loc[order].reset_index()
    acc = tb.accuracy_table(results, _ctx=ctx)
    acc.insert(1, "family", [fam[m] for m in acc["method"]])
    t["accuracy"] = acc
    levels = px.proxy_agreement_table(results, _ctx=ctx)
    t["proxy_agreement"] = levels[levels["factor"] == "all"].drop(columns=["factor", "level"])
    t["proxy_agreement"] = t["proxy_agreement"].reset_index(drop=True)
    extra_tables: list[tuple[str, str, str]] = []
    if stored_losses(stored):
        t["loss_agreement"] = loss_agreement_table(
            stored,
            bootstrap_unit=bootstrap_unit,
            n_resamples=n_resamples,
            confidence=confidence,
            random_state=random_state,
        )
        extra_tables.append(_LOSS_TABLE)

    draw: dict[str, Callable[[], Any]] = {
        "headline_eu": lambda: fg.headline_figure(t["headline"]),
        "headline_au": lambda: fg.headline_figure(t["headline"], au=True),
        "stability": lambda: fg.stability_figure(t["stability"]),
        "rank_heatmap": lambda: fg.rank_heatmap_figure(t["rank_heatmap"], fam),
        "matched_prior": lambda: fg.matched_prior_figure(
            t["matched_prior"], t["matched_prior_methods"]
        ),
        "entanglement": lambda: fg.entanglement_figure(t["entanglement"], fam),
        "shells": lambda: fg.shell_figure(t["shells"], fam),
        "accuracy": lambda: fg.accuracy_figure(t["accuracy"]),
        "proxy_agreement": lambda: px.proxy_agreement_figure(levels),
    }
    out = Path(out_dir)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    result = Analysis(tables=t)
    setting = (
        f"{confidence:.0%} percentile bootstrap intervals, {n_resamples} replicates resampling "
        + ("instances within datasets" if bootstrap_unit == "instance" else "whole datasets")
        + f"; {len(frame.instances)} instances, {len(frame.methods)} methods."
    )
    if loss != "squared":
        setting += f" Loss: {loss} (ρ and Δ_ent use its AU/EU decomposition)."
    for name, title, note in (*_TABLES, *extra_tables):
        table = t[name]
        csv = out / "tables" / f"{name}.csv"
        table.to_csv(csv, index=not isinstance(table.index, pd.RangeIndex))
        tex = out / "tables" / f"{name}.tex"
        tex.write_text(
            latex_table(table, caption=f"{title}. {setting}", label=f"tab:udbench-{name}"),
            encoding="utf-8",
        )
        result.files += [csv, tex]
        body = [f"<p class='note'>{html.escape(note)} {html.escape(setting)}</p>"] if note else []
        links = [
            f"<a href='{link_prefix}tables/{name}.csv'>CSV</a>",
            f"<a href='{link_prefix}tables/{name}.tex'>LaTeX</a>",
        ]
        for fig_name in _FIGURES.get(name, ()):
            why = _not_drawn(fig_name, t)
            if why:  # a figure is never drawn empty: the page says why it is missing
                body.append(
                    f"<p class='note'>Figure {fig_name}: not drawn — {html.escape(why)}.</p>"
                )
                continue
            fig = draw[fig_name]()
            png = _save(fig, out / "figures" / f"{fig_name}.png", "png")
            svg_path = out / "figures" / f"{fig_name}.svg"
            _save(fig, svg_path, "svg")
            result.files += [out / "figures" / f"{fig_name}.png", svg_path]
            b64 = base64.b64encode(png).decode()
            body.append(
                f"<p><a href='{link_prefix}figures/{fig_name}.svg'>"
                f"<img alt='{html.escape(title)}' src='data:image/png;base64,{b64}'></a></p>"
            )
            links += [
                f"<a href='{link_prefix}figures/{fig_name}.png'>{fig_name}.png</a>",
                f"<a href='{link_prefix}figures/{fig_name}.svg'>{fig_name}.svg</a>",
            ]
        if name == "proxy_agreement":
            extra = out / "tables" / "proxy_agreement_levels.csv"
            levels.to_csv(extra, index=False)
            result.files.append(extra)
            result.tables["proxy_agreement_levels"] = levels
            links.append(f"<a href='{link_prefix}tables/{extra.name}'>per level (CSV)</a>")
        body.append(f"<p class='files'>Files: {' · '.join(links)}</p>")
        body.append(display_table(table).to_html(index=not isinstance(table.index, pd.RangeIndex)))
        result.sections.append(ReportSection(title, "\n".join(body)))
    if write_html:
        page = out / "analyses.html"
        parts = [
            "<!doctype html><html><head><meta charset='utf-8'>",
            f"<title>udbench analyses</title><style>{REPORT_CSS}</style></head><body>",
            "<h1>udbench analyses</h1>",
            f"<p class='note'>{html.escape(setting)} Method families: "
            + html.escape(", ".join(f"{m} ({FAMILY_NAMES.get(f, f)})" for m, f in fam.items()))
            + "</p>",
        ]
        if link_prefix:  # the page sits in out_dir: links must not carry the prefix
            sections = analyze_sections_relinked(result.sections, link_prefix)
        else:
            sections = result.sections
        for s in sections:
            parts += [f"<h2>{html.escape(s.title)}</h2>", s.body]
        parts.append("</body></html>")
        page.write_text("\n".join(parts), encoding="utf-8")
        result.files.append(page)
        result.html = page
    return result


def analyze_sections_relinked(sections: list[ReportSection], prefix: str) -> list[ReportSection]:
    """The sections with the link prefix removed (for the page inside the output folder)."""
    return [ReportSection(s.title, s.body.replace(f"href='{prefix}", "href='")) for s in sections]


def _save(fig: Any, path: Path, fmt: str) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=150)  # constrained layout: no tight-bbox pass needed
    data = buf.getvalue()
    path.write_bytes(data)
    return data
