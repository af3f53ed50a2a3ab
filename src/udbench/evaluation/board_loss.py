"""The loss a leaderboard ranks under, for regression and classification (``--loss``).

``udbench leaderboard --loss L`` shows the loss-dependent columns (ρ, Δ_ent; their keys are
:data:`udbench.evaluation.losses.LOSS_METRIC_KEYS`) computed under L and prints Kendall's τ-b
between the ranking under L and the ranking under the task type's base loss. The values of
``--loss`` depend on the task type of the results
(:func:`udbench.evaluation.leaderboard.results_task_type`):

- **regression**: the regression losses of :data:`udbench._losses.LOSS_TABLE` (``squared``,
  the default and base, ``crps``, ``log``); the columns of L are ``<key>_<L>``
  (:func:`udbench.evaluation.losses.results_under_loss`, docs/transfer.md).
- **classification**: ``log`` (the multiclass log loss, the default and base: the columns
  without a suffix) and ``brier`` (the multiclass Brier score: the columns ``<key>_brier``
  that every classification row holds, against the Brier-score oracle targets;
  :data:`udbench.evaluation.classification_cell.BRIER_METRIC_KEYS`, docs/classification.md).

Either way the columns of L replace the plain ones under their plain names, so the board,
``--by`` and ``--columns`` read them unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from udbench._losses import CLASSIFICATION_BOARD_LOSSES, loss_names
from udbench._validation import UdbenchError, check_choice, param_error

__all__ = [
    "CLASSIFICATION_BOARD_LOSSES",
    "board_loss_names",
    "check_board_loss",
    "default_board_loss",
    "leaderboard_under_loss",
    "results_under_board_loss",
]

#: How a board names each task type's losses in its notes.
_LOSS_WORDS = {
    "classification": {"log": "log-loss", "brier": "Brier-score"},
}


def board_loss_names(task_type: str) -> tuple[str, ...]:
    """The values ``--loss`` takes on results of ``task_type``, the default first.

    Parameters
    ----------
    task_type : {"regression", "classification"}
    """
    if task_type == "classification":
        return tuple(CLASSIFICATION_BOARD_LOSSES)
    return loss_names("regression")


def default_board_loss(task_type: str) -> str:
    """The base loss of ``task_type``: ``"squared"`` (regression) or ``"log"`` (classification)."""
    return board_loss_names(task_type)[0]


def check_board_loss(component: str, loss: str, task_type: str) -> str:
    """Return ``loss`` if ``--loss`` may take it on results of ``task_type``.

    Raises
    ------
    UdbenchError
        ``loss`` is not one of :func:`board_loss_names` (the message names ``--loss``, the
        allowed values and, for classification, the task type). On regression results the
        message is that of every regression ``--loss`` option.
    """
    names = board_loss_names(task_type)
    if task_type != "classification":
        return str(check_choice(component, "--loss", loss, names))
    if loss not in names:
        raise param_error(
            component, "--loss", f"be one of {list(names)} for classification results", loss
        )
    return loss


def results_under_board_loss(
    results: pd.DataFrame, loss: str, component: str = "--loss", task_type: str | None = None
) -> pd.DataFrame:
    """``results`` with every loss-dependent metric replaced by its ``loss`` column.

    Parameters
    ----------
    results : DataFrame
        Rows as stored by ``udbench run``, of one task type.
    loss : str
        One of :func:`board_loss_names` for the results' task type.
    component : str
        Named in error messages.
    task_type : {"regression", "classification"}, optional
        Default: read from the rows (:func:`~udbench.evaluation.leaderboard.results_task_type`).

    Returns
    -------
    DataFrame
        ``results`` itself under the base loss; else a copy whose columns
        :data:`~udbench.evaluation.losses.LOSS_METRIC_KEYS` hold the loss's values (NaN where
        the rows lack a loss column), ``attrs["loss"]`` naming it. Regression:
        :func:`udbench.evaluation.losses.results_under_loss`.

    Raises
    ------
    UdbenchError
        ``loss`` not allowed for the task type (:func:`check_board_loss`); classification
        results that hold no ``rho_eu_risk_brier`` value (rows from before the Brier columns);
        the errors of ``results_under_loss``.
    """
    from udbench.evaluation.leaderboard import results_task_type
    from udbench.evaluation.losses import LOSS_METRIC_KEYS, results_under_loss

    kind = results_task_type(results) if task_type is None else task_type
    check_board_loss(component, loss, kind)
    if kind != "classification":
        return results_under_loss(results, loss, component)
    suffix = CLASSIFICATION_BOARD_LOSSES[loss]
    if not suffix:
        return results
    primary = f"rho_eu_risk{suffix}"
    if primary not in results.columns or not results[primary].notna().any():
        raise UdbenchError(
            f"{component}: these classification results hold no {loss} metrics (column "
            f"{primary!r}); rows scored before the Brier-score columns existed lack them: "
            "run the cells again into a new --out folder"
        )
    df = results.copy()
    for k in LOSS_METRIC_KEYS:
        col = f"{k}{suffix}"
        df[k] = df[col] if col in df.columns else np.nan
    df.attrs["loss"] = loss
    return df


def leaderboard_under_loss(
    results: pd.DataFrame,
    loss: str | None = None,
    *,
    component: str = "udbench leaderboard",
    **options: Any,
) -> pd.DataFrame:
    """The leaderboard of ``results`` under ``loss``, with Kendall's τ to the base ranking.

    Parameters
    ----------
    results : DataFrame
        Rows as stored by ``udbench run``, of one task type.
    loss : str, optional
        One of :func:`board_loss_names` for the results' task type; default the base loss
        (:func:`default_board_loss`), which gives :func:`~udbench.evaluation.leaderboard
        .leaderboard` of ``results`` unchanged.
    component : str
        Named in error messages.
    **options
        Passed to :func:`~udbench.evaluation.leaderboard.leaderboard` (``metrics``,
        ``rank_by``, ``rank_stat``, ``n_resamples``, …).

    Returns
    -------
    DataFrame
        The leaderboard of :func:`results_under_board_loss`; ``attrs["loss"]`` names the
        loss. Under a loss other than the base one, ``attrs["ranking"]`` starts with
        ``"loss: L (…)"`` and ends with Kendall's τ-b between the ranking under L and the one
        under the base loss (same ``rank_by`` and ``rank_stat``, methods ranked in both;
        "undefined" with fewer than 2 or a ranking that ties every method);
        ``attrs["loss_tau"]`` and ``attrs["loss_tau_methods"]`` hold τ and that count.

    Raises
    ------
    UdbenchError
        ``loss`` not allowed for the task type, results lacking the loss's columns, and
        the leaderboard's errors (empty results, rows of both task types, …).
    """
    from udbench.evaluation.leaderboard import leaderboard, results_task_type
    from udbench.evaluation.losses import frames_ranking_agreement

    kind = results_task_type(results)
    chosen = default_board_loss(kind) if loss is None else loss
    scored = results_under_board_loss(results, chosen, component, task_type=kind)
    board = leaderboard(scored, **options)
    board.attrs["loss"] = chosen
    if chosen == default_board_loss(kind):
        return board
    rank_by = str(options.get("rank_by", "rho_eu_risk"))
    rank_stat = str(options.get("rank_stat", "mean"))
    tau, n_tau = frames_ranking_agreement(results, scored, rank_by=rank_by, rank_stat=rank_stat)
    shown = "undefined" if tau != tau else f"{tau:.3f}"
    if kind == "classification":
        words = _LOSS_WORDS[kind]
        head = (
            f"loss: {chosen} (ρ and Δ_ent against the {words[chosen]} oracle targets, "
            "docs/classification.md) · "
        )
        base = words[default_board_loss(kind)]
    else:
        head = f"loss: {chosen} (ρ and Δ_ent use the {chosen} decomposition, docs/transfer.md) · "
        base = f"{default_board_loss(kind)}-loss"
    board.attrs["ranking"] = (
        head
        + str(board.attrs.get("ranking") or "")
        + f" · Kendall's τ with the {base} ranking: {shown} ({n_tau} methods)"
    )
    board.attrs["loss_tau"] = tau
    board.attrs["loss_tau_methods"] = n_tau
    return board
