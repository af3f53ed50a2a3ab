"""udbench.risk: posterior-risk decompositions and oracle targets (SPEC §1, paper Appendix A).

Usable on its own: give it reference-posterior draws (or Gaussian posterior moments) and a
deployed predictor, get AU, generalized variance, deployment gap and total risk per point.
"""

from udbench.risk.classification import (
    CLASSIFICATION_LOSSES,
    ClassificationTargets,
    classification_oracle_targets,
)
from udbench.risk.classification_decompositions import (
    brier_decomposition,
    multiclass_log_decomposition,
)
from udbench.risk.decompositions import (
    Decomposition,
    crps_decomposition,
    crps_decomposition_gaussian,
    fair_mean_abs_difference,
    log_score_decomposition,
    log_score_decomposition_gaussian,
    mean_abs_normal,
    squared_loss_decomposition,
    squared_loss_decomposition_gaussian,
)
from udbench.risk.oracle import OracleTargets, oracle_targets

__all__ = [
    "CLASSIFICATION_LOSSES",
    "ClassificationTargets",
    "Decomposition",
    "OracleTargets",
    "brier_decomposition",
    "classification_oracle_targets",
    "crps_decomposition",
    "crps_decomposition_gaussian",
    "fair_mean_abs_difference",
    "log_score_decomposition",
    "log_score_decomposition_gaussian",
    "mean_abs_normal",
    "multiclass_log_decomposition",
    "oracle_targets",
    "squared_loss_decomposition",
    "squared_loss_decomposition_gaussian",
]
