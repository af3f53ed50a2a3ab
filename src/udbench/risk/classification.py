"""Oracle targets of a classification task from reference-posterior draws of π (docs/spec.md §11).

The classification analogue of :func:`udbench.risk.oracle_targets` (SPEC §1): for a deployed
class-probability vector π̂(x), the reference-posterior draws π_F(x) and the ground truth
π*(x), under the multiclass log loss (paper A.5) or the Brier score (paper A.6, Table 2)::

    | target | log loss | Brier score |
    |---|---|---|
    | AU* | E_F H(π_F) | E_F (1 − ‖π_F‖²) |
    | EU*_var | I(Y; F) = E_F KL(π_F ‖ π̄) | E_F ‖π_F − π̄‖² |
    | EU*_risk | EU*_var + KL(π̄ ‖ π̂) | EU*_var + ‖π̄ − π̂‖² |
    | EU*_point | KL(π* ‖ π̂) | ‖π* − π̂‖² |

π̄ = E_F π_F is the posterior predictive (the centroid). EU*_point is the pointwise excess
risk E_{Y~π*}[ℓ(π̂, Y) − ℓ(π*, Y)], the loss's divergence between π* and π̂. The first three
come from :func:`~udbench.risk.multiclass_log_decomposition` /
:func:`~udbench.risk.brier_decomposition`, the one place those formulas are written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import rel_entr

from udbench._losses import LOSS_TABLE, loss_names, resolve
from udbench._validation import check_choice
from udbench.risk import _checks

__all__ = [
    "CLASSIFICATION_LOSSES",
    "ClassificationTargets",
    "classification_oracle_targets",
    "kl_divergence",
    "squared_distance",
]

#: The losses of a classification task, in the names of :class:`udbench.risk.Decomposition`
#: (the classification losses of :data:`udbench._losses.LOSS_TABLE` at import).
CLASSIFICATION_LOSSES: tuple[str, ...] = loss_names("classification")


def kl_divergence(pi_star: np.ndarray, pred_probs: np.ndarray) -> np.ndarray:
    """KL(π* ‖ π̂) per row, nats: the log loss's EU*_point (paper A.5). Shapes (n, K) -> (n,)."""
    return np.asarray(rel_entr(pi_star, pred_probs).sum(axis=-1), dtype=np.float64)


def squared_distance(pi_star: np.ndarray, pred_probs: np.ndarray) -> np.ndarray:
    """‖π* − π̂‖² per row: the Brier score's EU*_point (paper A.6). Shapes (n, K) -> (n,)."""
    return np.asarray(((pi_star - pred_probs) ** 2).sum(axis=-1), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class ClassificationTargets:
    """Ground-truth uncertainty targets of a classifier at n evaluation points.

    Attributes
    ----------
    loss : str
        ``"multiclass_log"`` (nats) or ``"brier"`` (Brier scale, [0, 2]).
    au : ndarray, shape (n,)
        AU*: posterior expected Bayes risk (expected entropy / expected Gini impurity).
    eu_var : ndarray, shape (n,)
        EU*_var: the generalized variance (mutual information / expected squared spread).
    eu_risk : ndarray, shape (n,)
        EU*_risk = EU*_var + deployment gap (posterior excess risk; the primary EU target).
    eu_point : ndarray, shape (n,)
        EU*_point: the loss's divergence from π* to π̂ (pointwise excess risk).
    deployment_gap : ndarray, shape (n,)
        D(π̄ ‖ π̂); exactly 0 where π̂ = π̄.
    total_risk : ndarray, shape (n,)
        Posterior risk R_S(π̂; x), computed directly (= AU* + EU*_risk to rounding).
    pi_star : ndarray, shape (n, K)
        The ground truth π*(x) (kept for accuracy metrics).
    """

    loss: str
    au: np.ndarray
    eu_var: np.ndarray
    eu_risk: np.ndarray
    eu_point: np.ndarray
    deployment_gap: np.ndarray
    total_risk: np.ndarray
    pi_star: np.ndarray

    @property
    def n(self) -> int:
        """Number of evaluation points."""
        return int(self.au.shape[0])


def classification_oracle_targets(
    prob_draws: Any, pred_probs: Any, pi_star: Any, loss: str = "multiclass_log"
) -> ClassificationTargets:
    """Oracle targets of a classifier's π̂ from reference draws of π (module table).

    Parameters
    ----------
    prob_draws : array_like, shape (D, n, K)
        Reference-posterior draws of π_F(x), rows on the simplex (atol 1e-6), D >= 2.
    pred_probs : array_like, shape (n, K)
        The method's π̂(x); every entry > 0 for the log loss.
    pi_star : array_like, shape (n, K)
        The ground truth π*(x), rows on the simplex.
    loss : {"multiclass_log", "brier"}, default "multiclass_log"

    Returns
    -------
    ClassificationTargets
        Arrays of shape (n,), float64.

    Raises
    ------
    UdbenchError
        Unknown loss; wrong shapes; NaN/inf; negative entries or rows not summing to 1;
        a zero entry of π̂ under the log loss (each message names the argument).
    """
    name = "classification_oracle_targets"
    check_choice(name, "loss", loss, loss_names("classification"))
    entry = LOSS_TABLE[loss]
    dec = entry.draws_fn()(prob_draws, pred_probs)
    q = np.asarray(pred_probs, dtype=np.float64)
    star = _checks.simplex(name, "pi_star", pi_star, q.shape)
    if entry.divergence is None:
        raise ValueError(f"{name}: loss {loss!r} declares no divergence (its EU*_point)")
    eu_point = resolve(entry.divergence)(star, q)
    return ClassificationTargets(
        loss=loss,
        au=dec.au,
        eu_var=dec.generalized_variance,
        eu_risk=dec.eu,
        eu_point=np.asarray(eu_point, dtype=np.float64),
        deployment_gap=dec.deployment_gap,
        total_risk=dec.total,
        pi_star=star.copy(),
    )
