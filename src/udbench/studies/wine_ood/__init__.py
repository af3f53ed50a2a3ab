"""Red-vs-white wine OOD detection (paper Appendix D.3): does OOD detection rank like EU?

Design (:class:`WineOODDesign`): the benchmark's white-wine instances with balanced
coverage and smooth-monotone noise for the three oracle families, five seeds each; each
instance also carries 1,500 red wines as *query points* (``docs/tasks.md``, "Query
points"): the shared ``red_wine`` table, the same eleven features, min-max scaled with the
white-wine ranges, drawn once without replacement (:func:`red_query_points`). The
reference posterior is stored there as at the evaluation pool. Every method is fitted as
in the benchmark (:func:`~udbench.evaluation.runner.run_benchmark`: same cell key, same
training seed, the tuned record where one is given) and queried at the 1,500 held-out
white wines (the evaluation pool, never used for training) and at the red wines.

Analysis (:func:`analyse`), per instance and averaged over instances with percentile
bootstrap intervals over instances:

- AUROC of each method's EU for red (positive) vs held-out white (negative), on all points
  and on the **distance-matched** points (:func:`distance_match`: Mahalanobis distance to
  the white training inputs, 20 bins at the pooled quantiles, in each bin the same number
  of red and white points, the smaller count, drawn at random);
- three reference scores: the Mahalanobis distance, the mean distance to the 10 nearest
  training inputs, and a 5-fold cross-validated gradient-boosting classifier of red vs
  white (:func:`supervised_auroc`), which bounds how separable the two sets are; the
  oracle posterior variance itself as a fourth score;
- the ratio of the median oracle posterior variance at matched red and matched white
  wines, and the same ratio of each method's EU;
- the partial Spearman correlation of EU with the oracle posterior variance given the
  Mahalanobis distance (:func:`partial_spearman`), over the pooled white and red points;
- Kendall's W (tie-corrected) between the OOD ranking (mean EU-AUROC) and the benchmark
  ranking (mean ρ between EU and each EU target), with a bootstrap over the wine instances
  holding the benchmark ranking fixed.

Everything is written as CSV and LaTeX tables and PNG/SVG figures, as ``udbench analyze``
writes its own (:func:`udbench.analyses.analyze.latex_table`).
"""

from __future__ import annotations

from udbench.studies.wine_ood._analysis import WineOODResult, analyse
from udbench.studies.wine_ood._design import (
    DEFAULT_FAMILIES,
    DEFAULT_SEEDS,
    N_BINS,
    N_FOLDS,
    N_NEIGHBOURS,
    N_QUERY,
    REFERENCE_SCORES,
    WineOODDesign,
    red_query_points,
)
from udbench.studies.wine_ood._runs import generate_tasks, run_cells
from udbench.studies.wine_ood._stats import (
    Matched,
    auroc,
    distance_match,
    knn_distance,
    mahalanobis_distance,
    partial_spearman,
    supervised_auroc,
)

__all__ = [
    "DEFAULT_FAMILIES",
    "DEFAULT_SEEDS",
    "N_BINS",
    "N_FOLDS",
    "N_NEIGHBOURS",
    "N_QUERY",
    "REFERENCE_SCORES",
    "Matched",
    "WineOODDesign",
    "WineOODResult",
    "analyse",
    "auroc",
    "distance_match",
    "generate_tasks",
    "knn_distance",
    "mahalanobis_distance",
    "partial_spearman",
    "red_query_points",
    "run_cells",
    "supervised_auroc",
]
