"""Do method rankings survive another loss? Kendall's τ between squared loss and CRPS / log score.

For every other loss stored in the results (``udbench run/score --loss``;
:mod:`udbench.evaluation.losses`), :func:`loss_agreement_table` ranks the methods by their mean
criterion under that loss (EU: ρ(EU_ℓ, EU*_ℓ,risk) of the loss's decomposition) and by the
same criterion under squared loss, over the same cells, and reports Kendall's τ-b between the
two rankings with a bootstrap interval — pooled over all instances and at every level of each
factor (prior family, noise mode, coverage, dataset). It reuses the machinery of the proxy
agreement (:mod:`udbench.analyses.proxies`): the same means over jointly defined cells, the
same τ-b vectorised over the replicates of :func:`udbench.analyses._common.resampling`, so the
interval counts the uncertainty of both rankings.

The AU criterion is not compared: ρ(AU, AU*) is the same under the three losses (each loss's
AU is an increasing function of the variance, and ρ is a rank correlation), so its τ is 1 by
construction.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from udbench._losses import loss_names
from udbench._resampling import DEFAULT_CONFIDENCE, DEFAULT_N_RESAMPLES
from udbench._validation import check_choice
from udbench.analyses._common import CRITERIA, Frame, Resampling, analysis_context
from udbench.analyses.proxies import factor_scopes, scoped_tau_rows
from udbench.analyses.tables import FACTORS
from udbench.evaluation.losses import loss_column

__all__ = ["loss_agreement_table", "stored_losses"]

_CRITERION_LABELS = {"eu": "ρ(EU, EU*_risk)", "au": "ρ(AU, AU*)"}


def stored_losses(results: pd.DataFrame) -> tuple[str, ...]:
    """The other losses (CRPS, log, …: the loss table's scored ones) whose metrics the
    results hold a value of."""
    out = []
    for loss in loss_names("regression", scored=True):
        col = loss_column("rho_eu_risk", loss)
        if col in results.columns and results[col].notna().any():
            out.append(loss)
    return tuple(out)


def loss_agreement_table(
    results: pd.DataFrame,
    *,
    losses: tuple[str, ...] | None = None,
    criteria: tuple[str, ...] = ("eu",),
    factors: tuple[str, ...] = FACTORS,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    _ctx: tuple[Frame, Resampling] | None = None,
) -> pd.DataFrame:
    """Kendall's τ between the squared-loss method ranking and the ranking under each loss.

    Parameters
    ----------
    results : DataFrame
        Long-format results with the squared-loss columns and ``<metric>_<loss>`` columns
        (not mapped by :func:`udbench.evaluation.losses.results_under_loss`).
    losses : tuple of {"crps", "log"}, optional
        Default: every other loss the results hold (:func:`stored_losses`).
    criteria : tuple of {"eu", "au"}, default ("eu",)
        Ranking criteria (``au`` gives τ = 1 by construction; module docstring).
    factors : tuple of str, default :data:`udbench.analyses.tables.FACTORS`
        Factors whose levels get their own τ (besides the pooled ``factor="all"``).
    bootstrap_unit, n_resamples, confidence, random_state
        As in :mod:`udbench.analyses.tables`.

    Returns
    -------
    DataFrame
        One row per (loss, criterion, factor, level): ``loss, criterion, criterion_label,
        factor, level, tau, tau_low, tau_high, n_methods, n_instances, note``; ``factor ==
        "all"`` (level ``"all"``) is the pooled comparison. Empty (those columns) when the
        results hold no other loss.

    Raises
    ------
    UdbenchError
        Empty results or no ok cell, an unknown loss, criterion or factor, bad bootstrap
        settings.
    """
    name = "loss_agreement_table"
    use = stored_losses(results) if losses is None else tuple(losses)
    for loss in use:
        check_choice(name, "losses", loss, loss_names("regression", scored=True))
    for c in criteria:
        check_choice(name, "criteria", c, list(CRITERIA))
    for f in factors:
        check_choice(name, "factors", f, list(FACTORS))
    columns = [
        "loss",
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
    if not use:
        return pd.DataFrame(columns=columns)
    frame, boot = analysis_context(
        results, name, bootstrap_unit, n_resamples, confidence, random_state, _ctx
    )
    scopes = factor_scopes(frame, factors)
    pairs: list[tuple[dict[str, Any], np.ndarray, np.ndarray]] = []
    for crit in criteria:
        squared = frame.wide(CRITERIA[crit])
        for loss in use:
            other = frame.wide(loss_column(CRITERIA[crit], loss))
            if crit == "au":  # the AU restriction of SPEC §10 (wide() knows the squared name)
                other = np.where(np.isfinite(squared), other, np.nan)
            key = {"loss": loss, "criterion": crit, "criterion_label": _CRITERION_LABELS[crit]}
            pairs.append((key, other, squared))
    return pd.DataFrame(scoped_tau_rows(pairs, scopes, boot), columns=columns)
