"""The design of the wine OOD study: its constants, instances and red-wine query points."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from udbench._seeding import make_rng
from udbench._validation import param_error
from udbench.priors import DEFAULT_FIDELITY, Fidelity
from udbench.tasks import TaskSpec
from udbench.tasks.generate import QueryPoints

#: Oracle families of the study (paper D.3).
DEFAULT_FAMILIES: tuple[str, ...] = ("gp", "hbart", "bnn")
#: Seeds per family.
DEFAULT_SEEDS: tuple[int, ...] = (0, 1, 2, 3, 4)
#: Red wines queried per instance.
N_QUERY: int = 1500
#: Distance bins of the matched version.
N_BINS: int = 20
#: Neighbours of the kNN reference score.
N_NEIGHBOURS: int = 10
#: Folds of the supervised reference.
N_FOLDS: int = 5
#: The reference scores, as they are named in the tables.
REFERENCE_SCORES: tuple[str, ...] = (
    "ref:mahalanobis",
    "ref:knn10",
    "ref:classifier-cv5",
    "oracle:posterior-var",
)
_COMPONENT = "udbench study wine-ood"


# --------------------------------------------------------------------------- the design
@dataclass(frozen=True)
class WineOODDesign:
    """The instances of the study.

    Attributes
    ----------
    datasets : tuple of str
        In-distribution datasets (default ``("white_wine",)``); each must have the
        covariates of ``ood_dataset``.
    ood_dataset : str
        The table of the query points (positives).
    families : tuple of str
        Oracle prior families.
    seeds : tuple of int
        Grid seeds per family.
    noise, coverage : str
        Noise mode and coverage of every instance (paper: smooth-monotone, balanced).
    fidelity : Fidelity
        Prior preset.
    n_draws : int
        Posterior draws D.
    n_query : int
        Query points drawn from ``ood_dataset`` (at most its row count).
    """

    datasets: tuple[str, ...] = ("white_wine",)
    ood_dataset: str = "red_wine"
    families: tuple[str, ...] = DEFAULT_FAMILIES
    seeds: tuple[int, ...] = DEFAULT_SEEDS
    noise: str = "smooth-monotone"
    coverage: str = "balanced"
    fidelity: Fidelity = DEFAULT_FIDELITY
    n_draws: int = 1000
    n_query: int = N_QUERY

    def specs(self) -> list[TaskSpec]:
        """The task specs of the design (dataset × family × seed)."""
        return [
            TaskSpec(
                d, f, self.noise, self.coverage, s, fidelity=self.fidelity, n_draws=self.n_draws
            )
            for d in self.datasets
            for f in self.families
            for s in self.seeds
        ]


def red_query_points(
    dataset: str = "white_wine",
    ood_dataset: str = "red_wine",
    n_query: int = N_QUERY,
    data_dir: str | None = None,
) -> QueryPoints:
    """The query points: ``n_query`` rows of ``ood_dataset`` in ``dataset``'s covariate frame.

    The OOD table's raw covariates (undoing its own min-max scaling) are min-max scaled with
    ``dataset``'s raw bounds, so values may lie outside [0, 1]. The rows are drawn without
    replacement with a stream named by the two datasets and ``n_query`` (the same rows in
    every instance and every run) and kept in table order.

    Returns
    -------
    QueryPoints

    Raises
    ------
    UdbenchError
        The two tables have other covariates, or ``n_query`` is not in [1, rows of the table].
    """
    from udbench.tasks.generate import get_covariates, source_fingerprint

    ind = get_covariates(dataset, data_dir)
    ood = get_covariates(ood_dataset, data_dir)
    if tuple(ind.feature_names) != tuple(ood.feature_names):
        raise param_error(
            _COMPONENT,
            "datasets",
            f"name datasets with the covariates of {ood_dataset!r} ({list(ood.feature_names)})",
            dataset,
        )
    n_rows = int(ood.X.shape[0])
    if isinstance(n_query, bool) or not 1 <= int(n_query) <= n_rows:
        raise param_error(_COMPONENT, "n_query", f"be an integer in [1, {n_rows}]", n_query)
    lo, hi = np.asarray(ood.bounds, dtype=np.float64)
    raw = np.asarray(ood.X, dtype=np.float64) * (hi - lo) + lo
    w_lo, w_hi = np.asarray(ind.bounds, dtype=np.float64)
    span = np.where(w_hi > w_lo, w_hi - w_lo, 1.0)
    rng = make_rng("wine-ood-query", dataset, ood_dataset, int(n_query))
    idx = np.sort(rng.choice(n_rows, size=int(n_query), replace=False)).astype(np.int64)
    X = (raw[idx] - w_lo) / span
    info = {
        "source": source_fingerprint(ood),
        "scaling": f"min-max with the raw bounds of {dataset!r}",
        "rows": f"{int(n_query)} of {n_rows} drawn without replacement, stream "
        f"('wine-ood-query', {dataset!r}, {ood_dataset!r}, {int(n_query)})",
    }
    return QueryPoints(X=X, idx=idx, name=ood_dataset, info=info)
