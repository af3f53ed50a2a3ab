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
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from udbench._losses import LOSS_TABLE
from udbench._resampling import DEFAULT_CONFIDENCE, DEFAULT_N_RESAMPLES, BootstrapSettings
from udbench.analyses import registry
from udbench.analyses._common import FAMILY_NAMES, analysis_context, method_families
from udbench.analyses.classification import ClassificationFrame
from udbench.analyses.registry import AnalysisInputs, TableSpec
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
        τ per factor level — and, when the results hold other losses, ``loss_agreement``; with
        classification rows also ``clf_headline``, ``clf_stability``, ``clf_entanglement``,
        ``clf_proxy_agreement``, ``clf_proxy_agreement_levels`` and, when stored per shell,
        ``clf_shells``: :mod:`udbench.analyses.classification`).
    files : list of Path
        Every file written (tables, figures, the HTML page).
    html : Path or None
        ``analyses.html``.
    sections : list of ReportSection
        The HTML sections, links relative to the folder given as ``link_prefix``; each
        carries its analysis' task type (``udbench report`` writes the classification ones
        in its "Classification" part).
    skipped : dict
        Analysis name -> why it was not run (its inputs are missing, e.g. ``loss_agreement``
        on results without other losses; ``requires`` of
        :class:`udbench.analyses.registry.AnalysisSpec`).
    """

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    html: Path | None = None
    sections: list[ReportSection] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def analyze(
    results: pd.DataFrame,
    out_dir: str | os.PathLike[str],
    *,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    families: Mapping[str, str] | None = None,
    link_prefix: str = "",
    write_html: bool = True,
    loss: str | None = None,
    settings: BootstrapSettings | None = None,
    clf_loss: str | None = None,
) -> Analysis:
    """Run every analysis on a results frame; write CSV/LaTeX tables, PNG/SVG figures, HTML.

    The analyses are the records of :data:`udbench.analyses.registry.ANALYSES`, run in
    order, each on the rows of its task type (``AnalysisSpec.task_type``: regression rows
    under the regression loss, classification rows under the classification loss, both
    chosen by ``loss`` and ``clf_loss``); one whose inputs are missing is skipped
    (:attr:`Analysis.skipped` says why).

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
    loss : {"squared", "crps", "log", "brier"}, optional
        The loss whose AU/EU decomposition the regression analyses use
        (:func:`udbench.evaluation.losses.results_under_loss`; needs the results scored
        under it), and, when it is a classification loss (``log``, ``brier``), the oracle
        targets the classification analyses read
        (:func:`udbench.evaluation.board_loss.results_under_board_loss`). Each task type
        takes ``loss`` when it is one of its losses and its base loss otherwise (squared;
        log); a loss that applies to none of the rows raises
        (:func:`udbench.analyses._clf_loss.analysis_losses`). Default: the base losses.
        Whatever the loss, when the results hold other losses the table ``loss_agreement``
        (:func:`udbench.analyses.losses.loss_agreement_table`) gives Kendall's τ between the
        squared-loss ranking and each other loss's ranking, and when classification rows hold
        the Brier columns ``clf_loss_agreement``
        (:func:`udbench.analyses._clf_loss.clf_loss_agreement_table`) gives τ between the
        log-loss and the Brier-score rankings of the classifiers.
    settings : udbench._resampling.BootstrapSettings, optional
        The bootstrap in one validated object; when given it replaces ``bootstrap_unit``
        (its ``unit``), ``n_resamples``, ``confidence`` and ``random_state``.
    clf_loss : {"log", "brier"}, optional
        The classification loss alone (``udbench analyze --clf-loss``), e.g. with a
        regression ``loss`` of ``crps``; default: ``loss`` if it is a classification loss,
        else log. Raises when it contradicts a classification ``loss`` or the results hold no
        classification row.

    Returns
    -------
    Analysis

    Raises
    ------
    UdbenchError
        Empty results or no ok cell, bad bootstrap settings, a loss that does not apply,
        classification rows without the Brier columns under ``brier``.
    """
    if settings is not None:
        bootstrap_unit, n_resamples = settings.unit, settings.n_resamples
        confidence, random_state = settings.confidence, settings.random_state
    options = {
        "bootstrap_unit": bootstrap_unit,
        "n_resamples": n_resamples,
        "confidence": confidence,
        "random_state": random_state,
    }
    by_type = _inputs_by_task_type(results, loss, clf_loss, options, families)
    written: list[tuple[TableSpec, AnalysisInputs]] = []
    skipped: dict[str, str] = {}
    for spec in registry.ANALYSES:  # read now: a test may swap the table
        inputs = by_type.get(spec.task_type)
        if inputs is None:
            skipped[spec.name] = f"needs {spec.task_type} rows"
            continue
        why = spec.skip_reason(inputs)
        if why is not None:
            skipped[spec.name] = why
            continue
        inputs.tables.update(spec.compute(inputs))
        written += [(t, inputs) for t in spec.tables]
    first = next(iter(by_type.values()))
    out = Path(out_dir)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    # the tables with a section first, in page order, then those written as CSV only
    shown = {t.name: first.tables[t.name] for t, _ in written}
    result = Analysis(tables={**shown, **first.tables}, skipped=skipped)
    settings_of = {id(i): _setting(i) for i in by_type.values()}
    type_of = {id(i): t for t, i in by_type.items()}
    for table, inputs in written:
        section = _write_table(table, inputs, out, settings_of[id(inputs)], link_prefix, result)
        result.sections.append(replace(section, task_type=type_of[id(inputs)]))
    if write_html:
        fam = {m: f for i in by_type.values() for m, f in i.families.items()}
        setting = settings_of[id(first)]
        result.html = _write_page(result.sections, fam, out, setting, link_prefix)
        result.files.append(result.html)
    return result


def _inputs_by_task_type(
    results: pd.DataFrame,
    loss: str | None,
    clf_loss: str | None,
    options: dict[str, Any],
    families: Mapping[str, str] | None,
) -> dict[str, AnalysisInputs]:
    """The inputs of the analyses of each task type the results hold (they share ``tables``).

    Regression rows are read under the regression loss (:func:`udbench.evaluation.losses.
    results_under_loss`), classification rows under the classification one
    (:func:`udbench.evaluation.board_loss.results_under_board_loss`; log: as stored), both
    from :func:`udbench.analyses._clf_loss.analysis_losses`; ``options`` gets ``loss`` and
    ``clf_loss``. Results without an ok classification cell give the regression inputs of
    the whole frame (as before classification rows existed: its checks raise on bad
    results).
    """
    from udbench.analyses import classification as clf
    from udbench.analyses._clf_loss import analysis_losses
    from udbench.evaluation.board_loss import results_under_board_loss
    from udbench.evaluation.losses import results_under_loss
    from udbench.report._task_types import rows_of_task_type

    boot = {k: options[k] for k in ("bootstrap_unit", "n_resamples", "confidence")}
    seed = options["random_state"]
    tables: dict[str, pd.DataFrame] = {}
    out: dict[str, AnalysisInputs] = {}
    clf_rows = rows_of_task_type(results, clf.CLASSIFICATION)
    has_clf = "status" in clf_rows and (clf_rows["status"].astype(str) == "ok").any()
    regression = rows_of_task_type(results, "regression") if has_clf else results
    has_reg = bool(len(regression)) or not has_clf
    loss, clf_loss = analysis_losses(
        loss, clf_loss, has_regression=has_reg, has_classification=bool(has_clf)
    )
    options.update(loss=loss, clf_loss=clf_loss)
    if has_reg:
        under = results_under_loss(regression, loss, "analyze")
        ctx = analysis_context(under, "analyze", random_state=seed, **boot)
        fam = method_families(ctx[0], families)
        out["regression"] = AnalysisInputs(under, regression, ctx, fam, options, tables)
    if has_clf:
        clf_under = results_under_board_loss(clf_rows, clf_loss, "analyze", clf.CLASSIFICATION)
        cctx = clf.classification_context(clf_under, random_state=seed, component="analyze", **boot)
        fam = method_families(cctx[0], families)
        out[clf.CLASSIFICATION] = AnalysisInputs(clf_under, clf_rows, cctx, fam, options, tables)
    return out


def _setting(inputs: AnalysisInputs) -> str:
    """The bootstrap setting (and the loss, unless the base one) every caption states."""
    opts = inputs.options
    frame = inputs.ctx[0]
    setting = (
        f"{opts['confidence']:.0%} percentile bootstrap intervals, {opts['n_resamples']} "
        "replicates resampling "
        + (
            "instances within datasets"
            if opts["bootstrap_unit"] == "instance"
            else "whole datasets"
        )
        + f"; {len(frame.instances)} instances, {len(frame.methods)} methods."
    )
    if isinstance(frame, ClassificationFrame):
        setting = setting.replace(" instances,", " classification instances,", 1)
        if opts["clf_loss"] == "brier":
            setting += " Loss: brier (ρ and Δ_ent against the Brier-score oracle targets)."
    elif not LOSS_TABLE[opts["loss"]].base:
        setting += f" Loss: {opts['loss']} (ρ and Δ_ent use its AU/EU decomposition)."
    return setting


def _write_table(
    spec: TableSpec,
    inputs: AnalysisInputs,
    out: Path,
    setting: str,
    link_prefix: str,
    result: Analysis,
) -> ReportSection:
    """Write one table's CSV, LaTeX, figures and further CSVs; return its section."""
    name, title, note = spec.name, spec.title, spec.note
    table = inputs.tables[name]
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
    for fig_spec in spec.figures:
        fig_name = fig_spec.name
        why = fig_spec.not_drawn(inputs)
        if why:  # a figure is never drawn empty: the page says why it is missing
            body.append(f"<p class='note'>Figure {fig_name}: not drawn — {html.escape(why)}.</p>")
            continue
        fig = fig_spec.draw(inputs)
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
    for extra_name, link_text in spec.also_csv:
        extra = out / "tables" / f"{extra_name}.csv"
        inputs.tables[extra_name].to_csv(extra, index=False)
        result.files.append(extra)
        links.append(f"<a href='{link_prefix}tables/{extra.name}'>{html.escape(link_text)}</a>")
    body.append(f"<p class='files'>Files: {' · '.join(links)}</p>")
    body.append(display_table(table).to_html(index=not isinstance(table.index, pd.RangeIndex)))
    return ReportSection(title, "\n".join(body))


def _write_page(
    sections: list[ReportSection],
    fam: Mapping[str, str],
    out: Path,
    setting: str,
    link_prefix: str,
) -> Path:
    """Write ``analyses.html`` (every section, links relative to ``out``); return its path."""
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
        sections = analyze_sections_relinked(sections, link_prefix)
    for s in sections:
        parts += [f"<h2>{html.escape(s.title)}</h2>", s.body]
    parts.append("</body></html>")
    page.write_text("\n".join(parts), encoding="utf-8")
    return page


def analyze_sections_relinked(sections: list[ReportSection], prefix: str) -> list[ReportSection]:
    """The sections with the link prefix removed (for the page inside the output folder)."""
    return [replace(s, body=s.body.replace(f"href='{prefix}", "href='")) for s in sections]


def _save(fig: Any, path: Path, fmt: str) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=150)  # constrained layout: no tight-bbox pass needed
    data = buf.getvalue()
    path.write_bytes(data)
    return data
