"""The analyses of ``udbench analyze`` and ``udbench report``, declared once.

Each :class:`AnalysisSpec` record says what one analysis is: its name, the function that
computes its table(s) from the results frame and the options (an :class:`AnalysisInputs`),
what it needs of the results (:class:`Requirement`; it is skipped, with the reason kept in
:attr:`udbench.analyses.analyze.Analysis.skipped`, when they are missing), and the tables
(:class:`TableSpec`) and figures (:class:`FigureSpec`) it writes. :data:`ANALYSES` holds them
in the order of the page; :func:`udbench.analyses.analyze.analyze` (and with it ``udbench report``,
which adds ``analyze``'s sections to ``report.html``) loops over it. A new analysis is one
entry (:func:`register_analysis`) plus its tests; docs/analyses.md shows an example.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from udbench.analyses import _clf_loss as cl
from udbench.analyses import classification as clf
from udbench.analyses import figures as fg
from udbench.analyses import proxies as px
from udbench.analyses import tables as tb
from udbench.analyses._common import EU_TARGETS

__all__ = [
    "ANALYSES",
    "CLASSIFICATION_ANALYSES",
    "OTHER_LOSSES",
    "AnalysisInputs",
    "AnalysisSpec",
    "FigureSpec",
    "Requirement",
    "TableSpec",
    "has_columns",
    "min_methods",
    "register_analysis",
]


@dataclass(frozen=True)
class AnalysisInputs:
    """What every analysis is computed from.

    Attributes
    ----------
    results : DataFrame
        The results frame under the analysed loss
        (:func:`udbench.evaluation.losses.results_under_loss`).
    stored : DataFrame
        The results frame as given, with every loss's columns.
    ctx : tuple
        The shared bootstrap context of :mod:`udbench.analyses.tables` (frame, resampling
        plan): every interval is paired across analyses.
    families : dict
        Method label -> method family.
    options : dict
        ``bootstrap_unit``, ``n_resamples``, ``confidence``, ``random_state``, ``loss``.
    tables : dict
        Name -> DataFrame of the analyses computed so far (filled in table order, so an
        analysis may read the tables of those before it).
    """

    results: pd.DataFrame
    stored: pd.DataFrame
    ctx: tuple[Any, ...]
    families: dict[str, str]
    options: Mapping[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def n_methods(self) -> int:
        """Number of methods with an ok cell."""
        return len(self.ctx[0].methods)


@dataclass(frozen=True)
class Requirement:
    """What an analysis needs of its inputs.

    Parameters
    ----------
    needs : str
        What is needed, as the skip reason says it ("results scored under another loss").
    check : callable
        ``check(inputs) -> bool``: True when the inputs have it.
    """

    needs: str
    check: Callable[[AnalysisInputs], bool]


def _other_losses(inputs: AnalysisInputs) -> bool:
    from udbench.analyses.losses import stored_losses

    return bool(stored_losses(inputs.stored))


#: The results hold the columns of a loss other than the base one (``udbench run/score --loss``).
OTHER_LOSSES = Requirement(
    "results scored under another loss (udbench run/score --loss)", _other_losses
)


def min_methods(k: int) -> Requirement:
    """The results hold at least ``k`` methods with an ok cell."""
    return Requirement(f"at least {k} methods", lambda inputs: inputs.n_methods >= k)


def has_columns(*columns: str) -> Requirement:
    """The results (under the analysed loss) hold every column of ``columns``."""
    return Requirement(
        f"the results columns {', '.join(columns)}",
        lambda inputs: all(c in inputs.results.columns for c in columns),
    )


@dataclass(frozen=True)
class FigureSpec:
    """One figure an analysis draws (written as ``figures/<name>.png`` and ``.svg``).

    Parameters
    ----------
    name : str
        File stem.
    draw : callable
        ``draw(inputs) -> matplotlib.figure.Figure`` (reads ``inputs.tables``).
    not_drawn : callable, optional
        ``not_drawn(inputs) -> str | None``: why the figure would be empty (the page says it
        instead of drawing it), None when it has something to show.
    """

    name: str
    draw: Callable[[AnalysisInputs], Any]
    not_drawn: Callable[[AnalysisInputs], str | None] = lambda inputs: None


@dataclass(frozen=True)
class TableSpec:
    """One table an analysis writes: ``tables/<name>.csv``, ``.tex`` and an HTML section.

    Parameters
    ----------
    name : str
        The table's key in :attr:`udbench.analyses.analyze.Analysis.tables` and file stem.
    title : str
        Section heading and LaTeX caption.
    note : str, default ""
        The section's explanation (plain text; the bootstrap setting is appended).
    figures : tuple of FigureSpec, default ()
        Figures shown in this table's section.
    also_csv : tuple of (str, str), default ()
        Further tables written as CSV only and linked from this section: (table name, link
        text).
    """

    name: str
    title: str
    note: str = ""
    figures: tuple[FigureSpec, ...] = ()
    also_csv: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class AnalysisSpec:
    """One analysis: how its tables are computed and which tables and figures it writes.

    Parameters
    ----------
    name : str
        Its name (unique in :data:`ANALYSES`).
    compute : callable
        ``compute(inputs) -> dict[str, DataFrame]``: every table named in ``tables`` (and in
        their ``also_csv``), computed from ``inputs`` (:class:`AnalysisInputs`).
    tables : tuple of TableSpec
        The tables written, each with its section, in page order.
    requires : tuple of Requirement, default ()
        What it needs of the inputs; when one is missing the analysis is skipped (no file,
        no section) and the reason is recorded.
    task_type : {"regression", "classification"}, default "regression"
        The rows it reads: its ``inputs`` hold only the results rows of that task type
        (:func:`udbench.report._task_types.row_task_types`); when the results have none it is
        skipped ("needs classification rows").
    """

    name: str
    compute: Callable[[AnalysisInputs], dict[str, pd.DataFrame]]
    tables: tuple[TableSpec, ...]
    requires: tuple[Requirement, ...] = ()
    task_type: str = "regression"

    def skip_reason(self, inputs: AnalysisInputs) -> str | None:
        """Why the analysis is not run on ``inputs`` (None: it is run)."""
        missing = [r.needs for r in self.requires if not r.check(inputs)]
        return f"needs {' and '.join(missing)}" if missing else None


_HETERO = "no heteroscedastic-AU method has a valid instance with heteroscedastic noise"


def _with_family(table: pd.DataFrame, fam: Mapping[str, str]) -> pd.DataFrame:
    table.insert(1, "family", [fam[m] for m in table["method"]])
    return table


def _headline(i: AnalysisInputs) -> dict[str, pd.DataFrame]:
    return {"headline": tb.headline_table(i.results, families=i.families, _ctx=i.ctx)}


def _stability(i: AnalysisInputs) -> dict[str, pd.DataFrame]:
    return {"stability": tb.stability_table(i.results, _ctx=i.ctx)}


def _rank_heatmap(i: AnalysisInputs) -> dict[str, pd.DataFrame]:
    return {"rank_heatmap": tb.rank_heatmap_table(i.results)}


def _matched_prior(i: AnalysisInputs) -> dict[str, pd.DataFrame]:
    adv = tb.matched_prior_advantage
    return {
        "matched_prior": adv(i.results, families=i.families, _ctx=i.ctx),
        "matched_prior_methods": adv(i.results, by="method", families=i.families, _ctx=i.ctx),
    }


def _entanglement(i: AnalysisInputs) -> dict[str, pd.DataFrame]:
    return {"entanglement": _with_family(tb.entanglement_table(i.results, _ctx=i.ctx), i.families)}


def _shells(i: AnalysisInputs) -> dict[str, pd.DataFrame]:
    shells = _with_family(tb.shell_table(i.results, _ctx=i.ctx), i.families)
    order = i.tables["headline"]["method"].tolist()  # the headline's method order
    return {"shells": shells.set_index("method").loc[order].reset_index()}


def _accuracy(i: AnalysisInputs) -> dict[str, pd.DataFrame]:
    return {"accuracy": _with_family(tb.accuracy_table(i.results, _ctx=i.ctx), i.families)}


def _proxy_agreement(i: AnalysisInputs) -> dict[str, pd.DataFrame]:
    levels = px.proxy_agreement_table(i.results, _ctx=i.ctx)
    pooled = levels[levels["factor"] == "all"].drop(columns=["factor", "level"])
    return {"proxy_agreement": pooled.reset_index(drop=True), "proxy_agreement_levels": levels}


def _loss_agreement(i: AnalysisInputs) -> dict[str, pd.DataFrame]:
    from udbench.analyses.losses import loss_agreement_table

    opts = {k: i.options[k] for k in ("bootstrap_unit", "n_resamples", "confidence")}
    table = loss_agreement_table(i.stored, random_state=i.options["random_state"], **opts)
    return {"loss_agreement": table}


def _no_au(i: AnalysisInputs) -> str | None:
    return None if i.tables["headline"]["rho_au"].notna().any() else _HETERO


def _no_entanglement(i: AnalysisInputs) -> str | None:
    ent = i.tables["entanglement"]
    if ent.empty or not ent[[f"delta_ent_{k}" for k in EU_TARGETS]].notna().any().any():
        return _HETERO
    return None


def _no_heatmap(i: AnalysisInputs) -> str | None:
    return "no dataset has a mean ρ for the methods" if i.tables["rank_heatmap"].empty else None


def _no_tau(i: AnalysisInputs) -> str | None:
    if i.tables["proxy_agreement"]["tau"].notna().any():
        return None
    return (
        "no Kendall's τ is defined (proxy metrics absent from these results, e.g. made "
        "before udbench stored them, or fewer than 2 methods)"
    )


def _clf_tables(i: AnalysisInputs) -> dict[str, pd.DataFrame]:
    ctx = i.ctx
    levels = clf.classification_proxy_table(i.results, _ctx=ctx)
    pooled = levels[levels["factor"] == "all"].drop(columns=["factor", "level"])
    ent = clf.classification_entanglement_table(i.results, _ctx=ctx)
    return {
        "clf_headline": clf.classification_headline_table(i.results, families=i.families, _ctx=ctx),
        "clf_stability": clf.classification_stability_table(i.results, _ctx=ctx),
        "clf_entanglement": _with_family(ent, i.families),
        "clf_proxy_agreement": pooled.reset_index(drop=True),
        "clf_proxy_agreement_levels": levels,
    }


def _clf_shells(i: AnalysisInputs) -> dict[str, pd.DataFrame]:
    shells = clf.classification_shell_table(i.results, _ctx=i.ctx)
    return {"clf_shells": _with_family(shells, i.families)}


def _clf_no_entanglement(i: AnalysisInputs) -> str | None:
    ent = i.tables["clf_entanglement"]
    if ent.empty or not ent[[f"delta_ent_{k}" for k in EU_TARGETS]].notna().any().any():
        return "no heteroscedastic-AU classifier has a Δ_ent"
    return None


def _clf_no_tau(i: AnalysisInputs) -> str | None:
    if i.tables["clf_proxy_agreement"]["tau"].notna().any():
        return None
    return "no Kendall's τ is defined (fewer than 3 classifiers, or no proxy column)"


#: The classification analyses (rows of task type "classification"; docs/spec.md §11).
CLASSIFICATION_ANALYSES: list[AnalysisSpec] = [
    AnalysisSpec(
        "classification",
        _clf_tables,
        (
            TableSpec(
                "clf_headline",
                "Classification: EU and AU quality per classifier",
                "Mean Spearman ρ over classification instances of the EU estimate with "
                "EU*_risk, EU*_var and EU*_point and of the AU estimate with AU* (every "
                "temperature mode: AU* varies with x at a constant temperature too; "
                "heteroscedastic-AU classifiers), mean ranks, and the mean accuracy, NLL, "
                "Brier score and ECE against labels drawn from π*.",
                (
                    FigureSpec(
                        "clf_headline_eu", lambda i: fg.headline_figure(i.tables["clf_headline"])
                    ),
                ),
            ),
            TableSpec(
                "clf_stability",
                "Classification: stability of the ranking (Kendall's W)",
                "Kendall's W (tie-corrected) of the classifier ranking across the levels of "
                "dataset, temperature mode (noise), coverage, K (n_classes) and difficulty.",
                (
                    FigureSpec(
                        "clf_stability", lambda i: fg.stability_figure(i.tables["clf_stability"])
                    ),
                ),
            ),
            TableSpec(
                "clf_entanglement",
                "Classification: entanglement",
                "ρ(EU, AU), ρ(EU*, AU*) and Δ_ent = ρ(EU, AU) − ρ(EU*, AU*) per EU target "
                "(heteroscedastic-AU classifiers, every temperature mode).",
                (
                    FigureSpec(
                        "clf_entanglement",
                        lambda i: fg.entanglement_figure(i.tables["clf_entanglement"], i.families),
                        _clf_no_entanglement,
                    ),
                ),
            ),
            TableSpec(
                "clf_proxy_agreement",
                "Classification: label-based proxies against the oracle (Kendall's τ)",
                clf.PROXY_NOTE,
                (
                    FigureSpec(
                        "clf_proxy_agreement",
                        lambda i: px.proxy_agreement_figure(i.tables["clf_proxy_agreement_levels"]),
                        _clf_no_tau,
                    ),
                ),
                also_csv=(("clf_proxy_agreement_levels", "per level (CSV)"),),
            ),
        ),
        task_type="classification",
    ),
    AnalysisSpec(
        "classification_shells",
        _clf_shells,
        (
            TableSpec(
                "clf_shells",
                "Classification: EU quality per coverage shell",
                "Mean ρ(EU, EU*_risk) of the classifiers inside each coverage shell.",
            ),
        ),
        requires=(
            Requirement(
                "per-shell ρ in the classification rows (rho_eu_risk_shell0 … 4)",
                lambda i: (
                    "rho_eu_risk_shell0" in i.results
                    and bool(i.results["rho_eu_risk_shell0"].notna().any())
                ),
            ),
        ),
        task_type="classification",
    ),
    AnalysisSpec(
        "classification_loss_agreement",
        cl.clf_loss_agreement_tables,
        (TableSpec("clf_loss_agreement", *cl.TABLE_TEXT, also_csv=(cl.LEVELS_CSV,)),),
        requires=(Requirement(cl.NEEDS, lambda i: cl.holds_brier(i.stored)),),
        task_type="classification",
    ),
]


#: Every analysis, in page order (:func:`udbench.analyses.analyze.analyze` loops over it).
ANALYSES: list[AnalysisSpec] = [
    AnalysisSpec(
        "headline",
        _headline,
        (
            TableSpec(
                "headline",
                "Headline: EU and AU quality per method",
                "Mean Spearman ρ over instances of the EU estimate with EU*_risk, EU*_var and "
                "EU*_point, and of the AU estimate with AU* (heteroscedastic noise modes, "
                "heteroscedastic-AU methods; SPEC §10). Ranks: mean per-instance rank over the "
                "instances on which every method is defined (1 = best).",
                (
                    FigureSpec("headline_eu", lambda i: fg.headline_figure(i.tables["headline"])),
                    FigureSpec(
                        "headline_au",
                        lambda i: fg.headline_figure(i.tables["headline"], au=True),
                        _no_au,
                    ),
                ),
            ),
        ),
    ),
    AnalysisSpec(
        "stability",
        _stability,
        (
            TableSpec(
                "stability",
                "Stability of the ranking: Kendall's W",
                "Kendall's W (tie-corrected) of the method ranking across the levels of each "
                "factor; each level ranks the methods by their mean criterion there. 1: every "
                "level ranks alike; about 1/m: unrelated rankings (m levels, dashed in the "
                "figure).",
                (FigureSpec("stability", lambda i: fg.stability_figure(i.tables["stability"])),),
            ),
        ),
    ),
    AnalysisSpec(
        "rank_heatmap",
        _rank_heatmap,
        (
            TableSpec(
                "rank_heatmap",
                "Rank per dataset",
                "Rank of every method on each dataset by its mean ρ(EU, EU*_risk) there (the "
                "rows behind W of the dataset factor).",
                (
                    FigureSpec(
                        "rank_heatmap",
                        lambda i: fg.rank_heatmap_figure(i.tables["rank_heatmap"], i.families),
                        _no_heatmap,
                    ),
                ),
            ),
        ),
    ),
    AnalysisSpec(
        "matched_prior",
        _matched_prior,
        (
            TableSpec(
                "matched_prior",
                "Matched-prior advantage",
                "Mean rank (EU criterion) of a method family when the oracle prior matches its "
                "inductive bias (GP-based ↔ GP, trees ↔ HBART, NN ↔ BNN) and under the other "
                "oracles; advantage = rank(other) − rank(matched), positive when the family "
                "does better under its own prior. BLR has no matched prior.",
                (
                    FigureSpec(
                        "matched_prior",
                        lambda i: fg.matched_prior_figure(
                            i.tables["matched_prior"], i.tables["matched_prior_methods"]
                        ),
                    ),
                ),
            ),
            TableSpec("matched_prior_methods", "Matched-prior advantage per method"),
        ),
    ),
    AnalysisSpec(
        "entanglement",
        _entanglement,
        (
            TableSpec(
                "entanglement",
                "Entanglement",
                "ρ(EU, AU) of the estimates, the ground truth ρ(EU*, AU*) and Δ_ent = ρ(EU, AU) "
                "− ρ(EU*, AU*) for each EU target (heteroscedastic noise, heteroscedastic-AU "
                "methods). Positive Δ_ent: the estimates are more entangled than the truth.",
                (
                    FigureSpec(
                        "entanglement",
                        lambda i: fg.entanglement_figure(i.tables["entanglement"], i.families),
                        _no_entanglement,
                    ),
                ),
            ),
        ),
    ),
    AnalysisSpec(
        "shells",
        _shells,
        (
            TableSpec(
                "shells",
                "EU quality per coverage shell",
                "Mean ρ(EU, EU*_risk) inside each coverage shell, inner (0) to outermost (4).",
                (FigureSpec("shells", lambda i: fg.shell_figure(i.tables["shells"], i.families)),),
            ),
        ),
    ),
    AnalysisSpec(
        "accuracy",
        _accuracy,
        (
            TableSpec(
                "accuracy",
                "Accuracy of the point prediction",
                "Mean RMSE and NMSE = mean (â − f*)² / Var(f*) against the ground truth f*; "
                "ranks by NMSE (1 = lowest).",
                (FigureSpec("accuracy", lambda i: fg.accuracy_figure(i.tables["accuracy"])),),
            ),
        ),
    ),
    AnalysisSpec(
        "proxy_agreement",
        _proxy_agreement,
        (
            TableSpec(
                "proxy_agreement",
                "Proxy metrics against the oracle: Kendall's τ of the rankings",
                "For each proxy metric (NLL, CRPS, interval coverage and width, calibration "
                "error, sharpness, AUSE…; docs/metrics.md), Kendall's τ-b between the method "
                "ranking by its mean and the ranking by the oracle criterion (EU: ρ(EU, "
                "EU*_risk); AU: ρ(AU, AU*), heteroscedastic noise, heteroscedastic-AU methods), "
                "pooled over all instances; the same per level of every factor is in "
                "proxy_agreement_levels.csv (grey marks in the figure). τ = 1: the proxy would "
                "have ranked the methods as the ground truth does.",
                (
                    FigureSpec(
                        "proxy_agreement",
                        lambda i: px.proxy_agreement_figure(i.tables["proxy_agreement_levels"]),
                        _no_tau,
                    ),
                ),
                also_csv=(("proxy_agreement_levels", "per level (CSV)"),),
            ),
        ),
    ),
    AnalysisSpec(
        "loss_agreement",
        _loss_agreement,
        (
            TableSpec(
                "loss_agreement",
                "Other losses: Kendall's τ with the squared-loss ranking",
                "For each other loss stored (CRPS, log score; paper Table 2), Kendall's τ-b "
                "between the method ranking by mean ρ(EU, EU*_risk) under that loss's "
                "decomposition and the same ranking under squared loss, pooled (factor 'all') "
                "and per level of every factor, with bootstrap intervals recomputing both "
                "rankings. τ = 1: the loss does not move the ranking.",
            ),
        ),
        requires=(OTHER_LOSSES,),
    ),
    *CLASSIFICATION_ANALYSES,
]


def register_analysis(spec: AnalysisSpec, *, replace: bool = False) -> AnalysisSpec:
    """Append ``spec`` to :data:`ANALYSES` (an analysis defined outside udbench, or a test's).

    With ``replace=True`` an analysis of the same name is replaced where it stands.

    Raises
    ------
    ValueError
        An analysis of that name exists and ``replace`` is False, or one of its table names
        is already written by another analysis.
    """
    names = [a.name for a in ANALYSES]
    if spec.name in names and not replace:
        raise ValueError(
            f"register_analysis: an analysis named {spec.name!r} exists (replace=True)"
        )
    taken = {t.name for a in ANALYSES if a.name != spec.name for t in a.tables}
    clash = sorted(taken & {t.name for t in spec.tables})
    if clash:
        raise ValueError(f"register_analysis: table(s) {clash} are written by another analysis")
    if spec.name in names:
        ANALYSES[names.index(spec.name)] = spec
    else:
        ANALYSES.append(spec)
    return spec
