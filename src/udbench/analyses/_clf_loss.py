"""The loss the classification analyses read (log or Brier) and τ between the two rankings.

Classification rows hold the rank metrics against the oracle targets of the multiclass log
loss (``rho_eu_risk``, ``rho_au``, ``delta_ent_*``, per-shell ρ, …) and the same keys with the
suffix ``_brier`` against the Brier-score targets (docs/classification.md). ``udbench
analyze`` reads one of the two for its classification tables, through the mapping of
``udbench leaderboard --loss``
(:func:`udbench.evaluation.board_loss.results_under_board_loss`); :func:`analysis_losses`
says which loss each task type is analysed under, from ``--loss`` and ``--clf-loss``:

- ``--loss`` takes the regression losses (``squared``, ``crps``, ``log``) and the
  classification ones (``log``, ``brier``); each task type reads it when it is one of its
  own losses and its base loss otherwise (``squared`` for regression rows, ``log`` for
  classification rows). So ``--loss brier`` analyses the Brier columns of the
  classification rows (regression rows, if any, under squared loss) and ``--loss log`` the
  log score and the log loss.
- ``--clf-loss log|brier`` sets the classification loss on its own, for a mixed frame whose
  regression rows are analysed under ``crps`` or ``log`` (``--loss crps --clf-loss brier``).
- A loss that applies to none of the rows is an error (``--loss crps`` on classification
  results only, ``--loss brier`` or ``--clf-loss`` on regression results only), and so is a
  ``--clf-loss`` that contradicts a classification ``--loss``.

:func:`clf_loss_agreement_table` is the classification counterpart of
:func:`udbench.analyses.losses.loss_agreement_table`: Kendall's τ-b between the classifier
ranking by the log-loss criterion and the ranking by the Brier one, with the bootstrap interval
of :func:`udbench.analyses.proxies.scope_taus`. Unlike regression's AU, the AU criterion
differs between the two losses (AU* is the expected entropy under log loss, E_F(1 − ‖π_F‖²)
under the Brier score), so it is compared too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from udbench._losses import loss_names
from udbench._resampling import DEFAULT_CONFIDENCE, DEFAULT_N_RESAMPLES
from udbench._validation import UdbenchError, check_choice, param_error
from udbench.analyses._common import CRITERIA, Frame, Resampling
from udbench.analyses.classification import CLASSIFICATION_FACTORS, classification_context
from udbench.analyses.proxies import factor_scopes, scoped_tau_rows
from udbench.evaluation.board_loss import (
    CLASSIFICATION_BOARD_LOSSES,
    check_board_loss,
    default_board_loss,
)

__all__ = [
    "BRIER",
    "CLASSIFICATION_LOSSES",
    "LEVELS_CSV",
    "NEEDS",
    "TABLE_TEXT",
    "analysis_losses",
    "clf_loss_agreement_table",
    "clf_loss_agreement_tables",
    "holds_brier",
]

#: The losses of the classification analyses, the default (log loss, the stored columns) first.
CLASSIFICATION_LOSSES: tuple[str, ...] = tuple(CLASSIFICATION_BOARD_LOSSES)
#: The classification loss whose columns carry a suffix.
BRIER = "brier"
_CRITERION_LABELS = {"eu": "ρ(EU, EU*_risk)", "au": "ρ(AU, AU*)"}
_COLUMNS = [
    "criterion",
    "criterion_label",
    "factor",
    "level",
    "tau",
    "tau_low",
    "tau_high",
    "n_methods",
    "n_instances",
    "note",
]


def analysis_losses(
    loss: str | None,
    clf_loss: str | None,
    *,
    has_regression: bool,
    has_classification: bool,
    component: str = "analyze",
) -> tuple[str, str]:
    """The loss of the regression rows and the loss of the classification rows.

    Parameters
    ----------
    loss : str or None
        ``--loss``: a regression loss (``squared``, ``crps``, ``log``) or a classification
        one (``log``, ``brier``); None: each task type's base loss.
    clf_loss : {"log", "brier"} or None
        ``--clf-loss``: the classification loss alone; None: from ``loss`` (module
        docstring).
    has_regression, has_classification : bool
        Whether the results hold rows of each task type.
    component : str
        Named in error messages.

    Returns
    -------
    tuple of (str, str)
        ``(regression loss, classification loss)``.

    Raises
    ------
    UdbenchError
        ``loss`` applies to none of the task types the results hold (on regression results
        only: the message of every regression ``--loss``; on classification results only:
        that of ``udbench leaderboard --loss``), ``clf_loss`` not ``log``/``brier`` or given
        for results without classification rows, or ``clf_loss`` contradicting a
        classification ``loss``.
    """
    regression = loss_names("regression")
    if clf_loss is not None:
        check_choice(component, "--clf-loss", clf_loss, CLASSIFICATION_LOSSES)
        if not has_classification:
            raise param_error(
                component,
                "--clf-loss",
                "be left out: the results hold no classification row",
                clf_loss,
            )
    if not has_classification:
        chosen = default_board_loss("regression") if loss is None else loss
        return str(check_choice(component, "--loss", chosen, regression)), CLASSIFICATION_LOSSES[0]
    if loss is not None and not has_regression:
        check_board_loss(component, loss, "classification")
    elif loss is not None and loss not in (*regression, *CLASSIFICATION_LOSSES):
        allowed = list(dict.fromkeys((*regression, *CLASSIFICATION_LOSSES)))
        rule = (
            f"be one of {allowed} (regression: {list(regression)}; classification: "
            f"{list(CLASSIFICATION_LOSSES)})"
        )
        raise param_error(component, "--loss", rule, loss)
    # --loss names the classification loss when it is one and the rows do not read it as a
    # regression loss first (``log`` on a mixed frame is the log score there)
    claims = loss in CLASSIFICATION_LOSSES and (not has_regression or loss not in regression)
    if claims and clf_loss is not None and clf_loss != loss:
        raise param_error(
            component, "--clf-loss", f"agree with --loss {loss!r} or be left out", clf_loss
        )
    reg = loss if loss in regression else default_board_loss("regression")
    clf = clf_loss if clf_loss is not None else loss if loss in CLASSIFICATION_LOSSES else None
    return str(reg), str(clf or default_board_loss("classification"))


def holds_brier(results: pd.DataFrame) -> bool:
    """Whether classification rows hold a Brier-score value (``rho_eu_risk_brier``)."""
    col = f"rho_eu_risk{CLASSIFICATION_BOARD_LOSSES[BRIER]}"
    return col in results.columns and bool(results[col].notna().any())


def clf_loss_agreement_table(
    results: pd.DataFrame,
    *,
    criteria: tuple[str, ...] = ("eu", "au"),
    factors: tuple[str, ...] = CLASSIFICATION_FACTORS,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    _ctx: tuple[Frame, Resampling] | None = None,
) -> pd.DataFrame:
    """Kendall's τ-b between the classifier rankings under log loss and under the Brier score.

    For each criterion (``eu``: ρ(EU, EU*_risk); ``au``: ρ(AU, AU*), heteroscedastic-AU
    classifiers), the classifiers are ranked by their mean criterion against the log-loss
    targets (the plain columns) and by their mean against the Brier-score targets (the
    ``_brier`` columns), over the cells where both are defined; τ-b between the two rankings,
    pooled and per level of every factor, with the bootstrap interval of
    :func:`udbench.analyses.proxies.scope_taus` (both rankings recomputed per replicate; at
    least 3 classifiers), as :func:`udbench.analyses.losses.loss_agreement_table` does for
    the regression losses.

    Parameters
    ----------
    results : DataFrame
        Results with classification rows as stored (the plain columns hold the log-loss
        values: not mapped by :func:`~udbench.evaluation.board_loss.results_under_board_loss`).
    criteria : tuple of {"eu", "au"}, default ("eu", "au")
    factors : tuple of str, default :data:`~udbench.analyses.classification.CLASSIFICATION_FACTORS`
        Factors whose levels get their own τ (besides the pooled ``factor="all"``).
    bootstrap_unit, n_resamples, confidence, random_state
        As in :mod:`udbench.analyses.tables`.

    Returns
    -------
    DataFrame
        One row per (criterion, factor, level): ``criterion, criterion_label, factor, level,
        tau, tau_low, tau_high, n_methods, n_instances, note``; ``factor == "all"`` (level
        ``"all"``) is the pooled comparison.

    Raises
    ------
    UdbenchError
        No classification row or no ok cell, rows without Brier-score values, an unknown
        criterion or factor, bad bootstrap settings.
    """
    name = "clf_loss_agreement_table"
    for c in criteria:
        check_choice(name, "criteria", c, list(CRITERIA))
    for f in factors:
        check_choice(name, "factors", f, list(CLASSIFICATION_FACTORS))
    if results.attrs.get("loss") == BRIER:
        raise param_error(name, "results", "be the rows as stored (not under brier)", "brier")
    if _ctx is None:
        _ctx = classification_context(
            results,
            bootstrap_unit=bootstrap_unit,
            n_resamples=n_resamples,
            confidence=confidence,
            random_state=random_state,
            component=name,
        )
    frame, boot = _ctx
    if not holds_brier(frame.rows):
        raise UdbenchError(f"{name}: the classification rows hold no rho_eu_risk_brier value")
    suffix = CLASSIFICATION_BOARD_LOSSES[BRIER]
    pairs: list[tuple[dict[str, Any], np.ndarray, np.ndarray]] = []
    for crit in criteria:
        log = frame.wide(CRITERIA[crit])
        brier = frame.wide(CRITERIA[crit] + suffix)
        if crit == "au":  # the constant-AU restriction (wide() knows the plain name only)
            brier = np.where(np.isfinite(log), brier, np.nan)
        pairs.append(({"criterion": crit, "criterion_label": _CRITERION_LABELS[crit]}, brier, log))
    rows = scoped_tau_rows(pairs, factor_scopes(frame, factors), boot)
    return pd.DataFrame(rows, columns=_COLUMNS)


#: Title and note of the ``clf_loss_agreement`` section.
TABLE_TEXT = (
    "Classification: log loss against the Brier score (Kendall's τ)",
    "Kendall's τ-b between the classifier ranking by mean ρ against the log-loss oracle "
    "targets and the ranking by mean ρ against the Brier-score targets (EU: ρ(EU, EU*_risk); "
    "AU: ρ(AU, AU*), heteroscedastic-AU classifiers), pooled, with bootstrap intervals "
    "recomputing both rankings; per level of dataset, temperature mode, coverage, K and "
    "difficulty in clf_loss_agreement_levels.csv. τ = 1: the loss does not move the ranking.",
)
#: The per-level table, written as CSV only: (table name, link text).
LEVELS_CSV = ("clf_loss_agreement_levels", "per level (CSV)")
#: What the analysis needs (its skip reason).
NEEDS = "the Brier-score columns in the classification rows (rho_eu_risk_brier)"


def clf_loss_agreement_tables(inputs: Any) -> dict[str, pd.DataFrame]:
    """``clf_loss_agreement`` (pooled) and ``clf_loss_agreement_levels`` of an analysis'
    inputs (:class:`udbench.analyses.registry.AnalysisInputs`: its stored rows, its
    bootstrap options)."""
    opts = {k: inputs.options[k] for k in ("bootstrap_unit", "n_resamples", "confidence")}
    levels = clf_loss_agreement_table(
        inputs.stored, random_state=inputs.options["random_state"], **opts
    )
    pooled = levels[levels["factor"] == "all"].drop(columns=["factor", "level"])
    return {
        "clf_loss_agreement": pooled.reset_index(drop=True),
        "clf_loss_agreement_levels": levels,
    }
