"""The analyses of classification results (docs/spec.md §11; docs/analyses.md, "Classification").

The classification rows of a results frame (:func:`udbench.report._task_types.row_task_types`:
their ``task_type`` column, else their prior family's task type, e.g. ``gpc``) carry the keys of
:func:`udbench.evaluation.classification.classification_instance_metrics` (``rho_eu_risk``,
``rho_eu_var``, ``rho_eu_point``, ``rho_au``, ``delta_ent_*``, ``rho_eu_au``, ``accuracy``,
``nll``, ``brier``, ``ece``, …) with the id columns of regression rows (``task_id``,
``method``, ``dataset``, ``family``, ``noise`` — the temperature mode —, ``coverage``,
``seed``) and ``n_classes``, ``difficulty``. The analyses reuse the regression machinery of
:mod:`udbench.analyses.tables` (the paired bootstrap of :mod:`udbench.analyses._common`):

- :func:`classification_headline_table`: mean ρ per EU target and of AU, ranks, and the mean
  label metrics;
- :func:`classification_stability_table`: Kendall's W of the method ranking across the levels
  of dataset, temperature mode, coverage, K and difficulty;
- :func:`classification_entanglement_table`: ρ(EU, AU), ρ(EU*, AU*) and Δ_ent per EU target;
- :func:`classification_proxy_table`: Kendall's τ-b between the ranking by each label-based
  proxy (accuracy, NLL, Brier, ECE, selective-prediction AUC) and the oracle ranking;
- :func:`classification_shell_table`: per-shell EU quality (the runner's per-shell columns).

One difference from regression: AU* = E_F H(π_F(x)) varies with x even at a constant
temperature (the "homoscedastic" mode; paper A.7), so the AU criteria are kept on every
temperature mode; only constant-AU methods lose them (:class:`ClassificationFrame`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

import numpy as np
import pandas as pd

from udbench._resampling import DEFAULT_CONFIDENCE, DEFAULT_N_RESAMPLES
from udbench._validation import UdbenchError, check_choice, param_error
from udbench.analyses._common import (
    CRITERIA,
    Frame,
    Resampling,
    analysis_context,
    prepare,
)
from udbench.analyses.proxies import factor_scopes, proxy_tau_rows
from udbench.analyses.tables import (
    _stability_rows,
    _summaries,
    entanglement_table,
    headline_table,
    shell_table,
)
from udbench.data import N_SHELLS
from udbench.report._task_types import rows_of_task_type

__all__ = [
    "CLASSIFICATION",
    "CLASSIFICATION_FACTORS",
    "CLASSIFICATION_PROXIES",
    "LABEL_METRICS",
    "PROXY_NOTE",
    "ClassificationFrame",
    "classification_context",
    "classification_entanglement_table",
    "classification_headline_table",
    "classification_proxy_table",
    "classification_shell_table",
    "classification_stability_table",
    "prepare_classification",
]

#: The task type these analyses read.
CLASSIFICATION = "classification"
#: Factors whose levels the stability analysis compares (``noise`` is the temperature mode,
#: ``n_classes`` is K).
CLASSIFICATION_FACTORS: tuple[str, ...] = (
    "dataset",
    "noise",
    "coverage",
    "n_classes",
    "difficulty",
)
#: Label metrics of :func:`udbench.evaluation.classification.label_metrics` summarised per method.
LABEL_METRICS: tuple[str, ...] = ("accuracy", "nll", "brier", "ece")
#: Label-based proxies compared with the oracle: column -> (label, higher is better). The two
#: ``selective_auc_*`` columns come from :func:`udbench.evaluation.selective.selective_columns`.
CLASSIFICATION_PROXIES: dict[str, tuple[str, bool]] = {
    "accuracy": ("accuracy", True),
    "nll": ("NLL", False),
    "brier": ("Brier", False),
    "ece": ("ECE", False),
    "selective_auc_eu": ("selective AUC (EU)", True),
    "selective_auc_total": ("selective AUC (AU + EU)", True),
}

#: The note of the ``clf_proxy_agreement`` section (``udbench analyze``).
PROXY_NOTE = (
    "For each label-based proxy (accuracy, NLL, Brier, top-label ECE against labels drawn from "
    "π*, and the selective-prediction AUC rejecting by EU or by AU + EU), Kendall's τ-b between "
    "the classifier ranking by its mean and the ranking by the oracle criterion (EU: ρ(EU, "
    "EU*_risk); AU: ρ(AU, AU*)), pooled; per level of dataset, temperature mode, coverage, K "
    "and difficulty in clf_proxy_agreement_levels.csv."
)


@dataclass(frozen=True)
class ClassificationFrame(Frame):
    """A :class:`~udbench.analyses._common.Frame` of classification cells.

    Its instances also carry ``n_classes`` and ``difficulty`` (``"?"`` where missing), and
    :meth:`wide` keeps the AU metrics on every temperature mode (AU* varies with x at a
    constant temperature too); they are NaN for constant-AU methods only.
    """

    def au_undefined(self) -> np.ndarray:
        """No instance: AU* varies with x at every temperature mode, shape (n,)."""
        return np.zeros(len(self.instances), dtype=bool)


def prepare_classification(
    results: pd.DataFrame, component: str = "classification analyses"
) -> ClassificationFrame:
    """The ok classification cells of a results frame as a :class:`ClassificationFrame`.

    Raises
    ------
    UdbenchError
        No classification row, or the checks of :func:`udbench.analyses._common.prepare`.
    """
    if not isinstance(results, pd.DataFrame) or len(results) == 0:
        raise UdbenchError(f"{component}: the results table is empty")
    rows = rows_of_task_type(results, CLASSIFICATION)
    if len(rows) == 0:
        raise UdbenchError(f"{component}: the results table has no classification row")
    base = prepare(rows, component)
    inst = base.instances.copy()
    for col in ("n_classes", "difficulty"):
        if col in base.rows.columns:
            raw = base.rows[col]
            text = raw.map(lambda v: "?" if pd.isna(v) else str(int(v)) if _is_int(v) else str(v))
            inst[col] = text.groupby(base.rows["task_id"]).first().reindex(inst.index)
        else:
            inst[col] = "?"
    return ClassificationFrame(base.rows, inst, base.methods, base.constant_au)


def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) or (isinstance(v, float) and float(v).is_integer())


#: :func:`~udbench.analyses._common.analysis_context` of the classification cells.
_context = partial(analysis_context, prepare_frame=prepare_classification)


def classification_context(
    results: pd.DataFrame,
    *,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    component: str = "classification analyses",
) -> tuple[ClassificationFrame, Resampling]:
    """The frame and bootstrap every classification table of one analysis shares.

    The resampling is :func:`udbench.analyses._common.resampling` of the classification
    instances (instances within datasets, or whole datasets).
    """
    frame, boot = _context(
        results, component, bootstrap_unit, n_resamples, confidence, random_state, None
    )
    return cast(ClassificationFrame, frame), boot


def classification_headline_table(
    results: pd.DataFrame,
    *,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    families: Mapping[str, str] | None = None,
    _ctx: tuple[Frame, Resampling] | None = None,
) -> pd.DataFrame:
    """Per classifier: the columns of :func:`udbench.analyses.headline_table`, then the mean
    label metrics ``accuracy, nll, brier, ece`` (each with ``_low/_high/_n``).

    ρ(AU, AU*) is kept on every temperature mode (:class:`ClassificationFrame`). Rows are
    sorted by ``rank_eu``.

    Raises
    ------
    UdbenchError
        No classification row or no ok cell, bad bootstrap settings.
    """
    name = "classification_headline_table"
    frame, boot = _context(
        results, name, bootstrap_unit, n_resamples, confidence, random_state, _ctx
    )
    table = headline_table(results, families=families, _ctx=(frame, boot))
    order = table["method"].tolist()
    idx = [frame.methods.index(m) for m in order]
    for metric in LABEL_METRICS:
        summ = _summaries(frame.wide(metric), boot, metric)
        for key, vals in summ.items():
            table[key] = np.asarray(vals)[idx]
    return table


def classification_stability_table(
    results: pd.DataFrame,
    *,
    factors: tuple[str, ...] = CLASSIFICATION_FACTORS,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    _ctx: tuple[Frame, Resampling] | None = None,
) -> pd.DataFrame:
    """Kendall's W (tie-corrected) of the classifier ranking across the levels of each factor.

    As :func:`udbench.analyses.stability_table` (the same computation,
    :func:`udbench.analyses.tables.factor_kendall_w`) with the factors
    :data:`CLASSIFICATION_FACTORS`: dataset, temperature mode (``noise``), coverage, K
    (``n_classes``) and difficulty. Criteria: ``eu`` (ρ(EU, EU*_risk)) and ``au`` (ρ(AU,
    AU*), every temperature mode, heteroscedastic-AU methods).

    Returns
    -------
    DataFrame
        One row per (criterion, factor): ``criterion, factor, W, W_low, W_high, n_methods,
        n_levels, levels, n_instances, note``.

    Raises
    ------
    UdbenchError
        No classification row, an unknown factor, bad bootstrap settings.
    """
    name = "classification_stability_table"
    for f in factors:
        check_choice(name, "factors", f, list(CLASSIFICATION_FACTORS))
    frame, boot = _context(
        results, name, bootstrap_unit, n_resamples, confidence, random_state, _ctx
    )
    return _stability_rows(frame, boot, factors)


def classification_entanglement_table(
    results: pd.DataFrame,
    *,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    _ctx: tuple[Frame, Resampling] | None = None,
) -> pd.DataFrame:
    """Per heteroscedastic-AU classifier: ρ(EU, AU), ρ(EU*, AU*) and Δ_ent per EU target.

    The columns and bootstrap intervals of :func:`udbench.analyses.entanglement_table`, on
    every temperature mode. Rows without ``rho_eu_au_star_*`` (the ground-truth part, which
    the runner adds beside ``classification_instance_metrics``' keys) have NaN
    ``rho_star_*``; Δ_ent is stored per cell.
    """
    name = "classification_entanglement_table"
    ctx = _context(results, name, bootstrap_unit, n_resamples, confidence, random_state, _ctx)
    return entanglement_table(results, _ctx=ctx)


def classification_shell_table(
    results: pd.DataFrame,
    *,
    target: str = "risk",
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    _ctx: tuple[Frame, Resampling] | None = None,
) -> pd.DataFrame:
    """Per classifier and coverage shell: mean ρ(EU, EU*_target) inside the shell.

    As :func:`udbench.analyses.shell_table`; it reads the per-shell columns
    ``rho_eu_<target>_shell0`` … ``_shell4`` of the classification rows, which the runner
    stores (:func:`udbench.evaluation.classification_cell.evaluate_classification`: Spearman
    ρ over the evaluation points of each coverage shell, NaN below 3 points); results written
    before those columns existed lack them.

    Raises
    ------
    UdbenchError
        The rows hold no per-shell column.
    """
    name = "classification_shell_table"
    frame, boot = _context(
        results, name, bootstrap_unit, n_resamples, confidence, random_state, _ctx
    )
    needed = [f"rho_eu_{target}_shell{s}" for s in range(N_SHELLS)]
    if not any(c in frame.rows.columns for c in needed):
        raise param_error(name, "results", f"hold the columns {needed}", "none of them")
    return shell_table(results, target=target, _ctx=(frame, boot))


def classification_proxy_table(
    results: pd.DataFrame,
    *,
    proxies: tuple[str, ...] = tuple(CLASSIFICATION_PROXIES),
    criteria: tuple[str, ...] = ("eu", "au"),
    factors: tuple[str, ...] = CLASSIFICATION_FACTORS,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    _ctx: tuple[Frame, Resampling] | None = None,
) -> pd.DataFrame:
    """Kendall's τ-b between the classifier ranking by each label-based proxy and the oracle's.

    For each proxy of :data:`CLASSIFICATION_PROXIES` (turned so that higher is better: NLL,
    Brier and ECE negated) and each oracle criterion (``eu``: ρ(EU, EU*_risk); ``au``: ρ(AU,
    AU*)), the methods are ranked by their mean proxy and by their mean criterion over the
    cells where both are defined, and τ-b is taken between the two rankings, pooled and per
    level of every factor, with the bootstrap interval of
    :func:`udbench.analyses.proxies.scope_taus` (both rankings recomputed per replicate; at
    least 3 methods).

    Returns
    -------
    DataFrame
        One row per (criterion, proxy, factor, level): ``criterion, oracle, proxy,
        proxy_label, factor, level, tau, tau_low, tau_high, n_methods, n_instances, note``
        (``factor == "all"``: pooled).

    Raises
    ------
    UdbenchError
        No classification row, an unknown proxy, criterion or factor, bad bootstrap settings.
    """
    name = "classification_proxy_table"
    for p in proxies:
        check_choice(name, "proxies", p, list(CLASSIFICATION_PROXIES))
    for c in criteria:
        check_choice(name, "criteria", c, list(CRITERIA))
    for f in factors:
        check_choice(name, "factors", f, list(CLASSIFICATION_FACTORS))
    frame, boot = _context(
        results, name, bootstrap_unit, n_resamples, confidence, random_state, _ctx
    )
    pairs: list[tuple[str, str, np.ndarray, np.ndarray]] = []
    for crit in criteria:
        oracle = frame.wide(CRITERIA[crit])
        for p in proxies:
            sign = 1.0 if CLASSIFICATION_PROXIES[p][1] else -1.0
            pairs.append((crit, p, sign * frame.wide(p), oracle))
    return proxy_tau_rows(
        frame,
        boot,
        factor_scopes(frame, factors),
        pairs,
        {p: label for p, (label, _) in CLASSIFICATION_PROXIES.items()},
        "not in these results (the runner did not store this column)",
    )
