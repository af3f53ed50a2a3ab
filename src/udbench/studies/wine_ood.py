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

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udbench._seeding import derive_seed, make_rng
from udbench._validation import UdbenchError, param_error
from udbench.priors import DEFAULT_FIDELITY, Fidelity
from udbench.tasks import Task, TaskSpec
from udbench.tasks.generate import QueryPoints

__all__ = [
    "DEFAULT_FAMILIES",
    "DEFAULT_SEEDS",
    "N_BINS",
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


# ------------------------------------------------------------------------- statistics
def auroc(negatives: np.ndarray, positives: np.ndarray) -> float:
    """Area under the ROC curve of a score, positives ranked above negatives.

    Equals the Mann–Whitney probability P(score⁺ > score⁻) + ½ P(tie)
    (:func:`sklearn.metrics.roc_auc_score`). NaN if a class is empty or a score not finite.
    """
    from sklearn.metrics import roc_auc_score

    neg = np.asarray(negatives, dtype=float)
    pos = np.asarray(positives, dtype=float)
    if neg.size == 0 or pos.size == 0:
        return float("nan")
    s = np.concatenate([neg, pos])
    if not np.all(np.isfinite(s)):
        return float("nan")
    y = np.concatenate([np.zeros(neg.size), np.ones(pos.size)])
    return float(roc_auc_score(y, s))


def mahalanobis_distance(X_train: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Mahalanobis distance of the rows of ``X`` to the training inputs.

    d(x) = sqrt((x − μ)ᵀ Σ⁺ (x − μ)), μ and Σ the mean and sample covariance of
    ``X_train`` (n, d), Σ⁺ its pseudo-inverse (a constant covariate contributes nothing).

    Returns
    -------
    ndarray, shape (m,)
    """
    X_train = np.asarray(X_train, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    mu = X_train.mean(axis=0)
    prec = np.linalg.pinv(np.atleast_2d(np.cov(X_train, rowvar=False)), hermitian=True)
    c = X - mu
    return np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", c, prec, c), 0.0))


def knn_distance(X_train: np.ndarray, X: np.ndarray, k: int = N_NEIGHBOURS) -> np.ndarray:
    """Mean Euclidean distance of every row of ``X`` to its ``k`` nearest training inputs."""
    from sklearn.neighbors import NearestNeighbors

    k = min(int(k), int(np.shape(X_train)[0]))
    nn = NearestNeighbors(n_neighbors=k).fit(np.asarray(X_train, dtype=np.float64))
    dist, _ = nn.kneighbors(np.asarray(X, dtype=np.float64))
    return np.asarray(dist.mean(axis=1), dtype=np.float64)


@dataclass(frozen=True)
class Matched:
    """Result of :func:`distance_match`.

    Attributes
    ----------
    negatives, positives : ndarray of int
        Indices (sorted) of the kept points of each class.
    edges : ndarray, shape (n_bins + 1,)
        Bin edges (pooled quantiles).
    """

    negatives: np.ndarray
    positives: np.ndarray
    edges: np.ndarray

    def bins(self, distances: np.ndarray) -> np.ndarray:
        """Bin (0 … n_bins − 1) of every distance under these edges."""
        n_bins = self.edges.size - 1
        inner = self.edges[1:-1]
        return np.clip(np.searchsorted(inner, np.asarray(distances), side="right"), 0, n_bins - 1)


def distance_match(
    d_neg: np.ndarray, d_pos: np.ndarray, n_bins: int = N_BINS, *, rng: Any = 0
) -> Matched:
    """Keep equal numbers of negatives and positives in every distance bin (paper D.3).

    The distances of both classes are pooled and cut into ``n_bins`` bins at the pooled
    quantiles (k/n_bins, k = 0 … n_bins; a point on an inner edge goes to the bin above);
    in every bin the smaller of the two counts is kept of each class, drawn at random
    without replacement. Both classes then have the same distance histogram on these bins.

    Parameters
    ----------
    d_neg, d_pos : ndarray, shape (n,), (m,)
        Distances of the negatives (white) and positives (red).
    n_bins : int, default N_BINS
    rng : int, str or numpy Generator, default 0
        Seed (or stream name) of the draw.

    Returns
    -------
    Matched

    Raises
    ------
    UdbenchError
        ``n_bins`` < 1, empty classes or non-finite distances.
    """
    d_neg = np.asarray(d_neg, dtype=float)
    d_pos = np.asarray(d_pos, dtype=float)
    if isinstance(n_bins, bool) or int(n_bins) < 1:
        raise param_error("distance_match", "n_bins", "be an integer >= 1", n_bins)
    if d_neg.size == 0 or d_pos.size == 0:
        raise param_error("distance_match", "distances", "be non-empty for both classes", 0)
    if not (np.all(np.isfinite(d_neg)) and np.all(np.isfinite(d_pos))):
        raise param_error("distance_match", "distances", "be finite", "NaN or inf values")
    gen = rng if isinstance(rng, np.random.Generator) else make_rng("distance-match", rng)
    edges = np.quantile(np.concatenate([d_neg, d_pos]), np.linspace(0.0, 1.0, int(n_bins) + 1))
    out = Matched(np.zeros(0, np.int64), np.zeros(0, np.int64), edges)
    b_neg, b_pos = out.bins(d_neg), out.bins(d_pos)
    keep_neg: list[np.ndarray] = []
    keep_pos: list[np.ndarray] = []
    for b in range(int(n_bins)):
        i_neg = np.flatnonzero(b_neg == b)
        i_pos = np.flatnonzero(b_pos == b)
        k = min(i_neg.size, i_pos.size)
        if k:
            keep_neg.append(gen.choice(i_neg, size=k, replace=False))
            keep_pos.append(gen.choice(i_pos, size=k, replace=False))
    neg = np.sort(np.concatenate(keep_neg)) if keep_neg else np.zeros(0, np.int64)
    pos = np.sort(np.concatenate(keep_pos)) if keep_pos else np.zeros(0, np.int64)
    return Matched(neg.astype(np.int64), pos.astype(np.int64), edges)


def supervised_auroc(
    X_neg: np.ndarray, X_pos: np.ndarray, n_folds: int = N_FOLDS, random_state: int = 0
) -> float:
    """AUROC of a cross-validated gradient-boosting classifier of positives vs negatives.

    scikit-learn's :class:`~sklearn.ensemble.HistGradientBoostingClassifier` (defaults,
    ``random_state``, one thread) is trained on ``n_folds`` − 1 stratified folds (shuffled with
    ``random_state``) and predicts the probability of "positive" on the held-out fold; the
    AUROC is computed on the out-of-fold probabilities of all points. It bounds how
    separable the two sets are (≈ 1: separable; ≈ 0.5: indistinguishable).

    Returns
    -------
    float
        NaN when a class has fewer than ``n_folds`` points.
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    X_neg = np.asarray(X_neg, dtype=np.float64)
    X_pos = np.asarray(X_pos, dtype=np.float64)
    if min(len(X_neg), len(X_pos)) < n_folds:
        return float("nan")
    X = np.vstack([X_neg, X_pos])
    y = np.concatenate([np.zeros(len(X_neg), int), np.ones(len(X_pos), int)])
    cv = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=random_state)
    clf = HistGradientBoostingClassifier(random_state=random_state)
    from threadpoolctl import threadpool_limits

    # one OpenMP thread: on a shared machine the default (all cores) oversubscribes badly
    # (measured: minutes instead of seconds), and it keeps the study's cells single-threaded
    with threadpool_limits(1):
        proba = cross_val_predict(clf, X, y, cv=cv, method="predict_proba")[:, 1]
    return auroc(proba[y == 0], proba[y == 1])


def partial_spearman(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> float:
    """Partial Spearman correlation of ``x`` and ``y`` given ``z``.

    The Pearson partial correlation of the average ranks:
    (r_xy − r_xz r_yz) / sqrt((1 − r_xz²)(1 − r_yz²)), r the Spearman correlations
    (Kendall & Stuart; Conover 1999, §5.4). NaN when a variable is constant or z explains
    x or y entirely.
    """
    from scipy.stats import rankdata

    arrs = [np.asarray(a, dtype=float) for a in (x, y, z)]
    if len({a.size for a in arrs}) != 1 or arrs[0].size < 3:
        raise param_error(
            "partial_spearman", "x, y, z", "have one length >= 3", [a.size for a in arrs]
        )
    if not all(np.all(np.isfinite(a)) for a in arrs):
        return float("nan")
    r = [rankdata(a) for a in arrs]
    if any(np.ptp(a) == 0 for a in r):
        return float("nan")
    c = np.corrcoef(np.vstack(r))
    rxy, rxz, ryz = c[0, 1], c[0, 2], c[1, 2]
    den = (1.0 - rxz**2) * (1.0 - ryz**2)
    if not den > 1e-15:
        return float("nan")
    return float((rxy - rxz * ryz) / np.sqrt(den))


def _median_ratio(num: np.ndarray, den: np.ndarray) -> float:
    if num.size == 0 or den.size == 0:
        return float("nan")
    d = float(np.median(den))
    return float(np.median(num)) / d if d > 0 else float("nan")


# ---------------------------------------------------------------------- running the study
def _design_query(
    spec: TaskSpec, ood_dataset: str, n_query: int, data_dir: str | None
) -> QueryPoints:
    """The red query points of one instance (a module-level function: it pickles for Dask)."""
    return red_query_points(spec.dataset, ood_dataset, n_query, data_dir)


def generate_tasks(
    design: WineOODDesign,
    out: str | os.PathLike[str],
    *,
    data_dir: str | None = None,
    workers: int | None = 0,
    scheduler: str | None = None,
    cluster_config: str | os.PathLike[str] | None = None,
    on_task: Callable[[str, str], None] | None = None,
) -> tuple[int, list[tuple[str, str]]]:
    """Generate the design's instances (with their red query points) into ``out``.

    :func:`udbench.tasks.grid.generate_grid`, the pipeline of ``udbench generate``, with
    the query points: a file already holding the instance, made from the same data with the
    same query points, is kept (a re-run resumes); any other is made again (the folder is
    the study's own). A failed instance is reported and the others go on. ``workers``: 0 or
    1 generate in this process, N > 1 on N local Dask workers, None on one worker per
    usable core.

    Returns
    -------
    n_generated : int
    failures : list of (task id, error)
    """
    import functools

    from udbench.tasks.grid import GridProgress, generate_grid

    class Progress(GridProgress):
        def instance_done(self, spec: Any, error: str) -> None:
            if on_task is not None:
                on_task(spec.task_id, error)

    result = generate_grid(
        design.specs(),
        out,
        data_dir=data_dir,
        workers=workers,
        scheduler=scheduler,
        cluster_config=cluster_config,
        query=functools.partial(
            _design_query,
            ood_dataset=design.ood_dataset,
            n_query=design.n_query,
            data_dir=data_dir,
        ),
        overwrite=True,
        component=_COMPONENT,
        progress=Progress(),
    )
    return len(result.generated), list(result.failures)


def run_cells(
    tasks: str | os.PathLike[str],
    methods: Sequence[str],
    out: str | os.PathLike[str],
    *,
    tuned: str | os.PathLike[str] | None = None,
    **run_kwargs: Any,
) -> Any:
    """Run every method on the study's instances through :func:`run_benchmark`.

    Cells are the benchmark's (same key, same method seed for the same task id and
    configuration); predictions are kept (``keep_predictions=True``), including those at the
    query points. With ``tuned`` (a ``udbench tune --out`` folder), each method gets its
    condition's tuned record where one exists and its configuration as given elsewhere
    (``fallback="default"``); the records used are copied into ``out/tuned``.

    Returns
    -------
    udbench.evaluation.runner.RunSummary
    """
    from udbench.evaluation.runner import run_benchmark
    from udbench.methods.configs import resolve_methods
    from udbench.tasks.discovery import find_task_files
    from udbench.tuning.records import tuned_configurer

    configure = None
    if tuned is not None:
        specs = [Task.load(p).spec for p in find_task_files([tasks])]
        configure = tuned_configurer(
            tuned, resolve_methods(list(methods)), specs, fallback="default"
        )
        configure.copy_to(Path(out) / "tuned")
    return run_benchmark(
        [str(tasks)], list(methods), out, keep_predictions=True, configure=configure, **run_kwargs
    )


# ----------------------------------------------------------------------------- analysis
def _base_name(label: str) -> str:
    return label.removesuffix("[tuned]")


def _instance_rows(
    task: Task, cells: pd.DataFrame, store: Any, n_bins: int, n_folds: int
) -> list[dict[str, Any]]:
    """Every score's figures on one instance (methods from ``cells``, plus the references)."""
    q = task.query()
    if q is None:
        raise UdbenchError(f"{_COMPONENT}: task {task.spec.task_id!r} has no query points")
    X_train = np.asarray(task.X_train)
    X_w, X_r = np.asarray(task.X_eval), q["X_query"]
    dm_w, dm_r = mahalanobis_distance(X_train, X_w), mahalanobis_distance(X_train, X_r)
    match = distance_match(dm_w, dm_r, n_bins, rng=make_rng("wine-ood-match", task.spec.task_id))
    mw, mr = match.negatives, match.positives
    var_w, var_r = np.asarray(task.post_var), q["post_var_query"]
    dist_all = np.concatenate([dm_w, dm_r])
    var_all = np.concatenate([var_w, var_r])
    base = {
        "task_id": task.spec.task_id,
        "dataset": task.spec.dataset,
        "family": task.spec.family,
        "seed": task.spec.seed,
        "n_white": int(X_w.shape[0]),
        "n_red": int(X_r.shape[0]),
        "n_matched": int(mw.size),
        "oracle_var_ratio_matched": _median_ratio(var_r[mr], var_w[mw]),
        "oracle_var_ratio_all": _median_ratio(var_r, var_w),
    }
    seed = derive_seed("wine-ood-classifier", task.spec.task_id, bits=31)
    scores: list[tuple[str, str, np.ndarray, np.ndarray]] = [
        ("ref:mahalanobis", "reference", dm_w, dm_r),
        ("ref:knn10", "reference", knn_distance(X_train, X_w), knn_distance(X_train, X_r)),
        ("oracle:posterior-var", "oracle", var_w, var_r),
    ]
    rows = []
    for name, kind, s_w, s_r in scores:
        rows.append(
            {
                **base,
                "score": name,
                "kind": kind,
                "auroc_all": auroc(s_w, s_r),
                "auroc_matched": auroc(s_w[mw], s_r[mr]),
                "eu_ratio_matched": _median_ratio(s_r[mr], s_w[mw]),
                "partial_spearman": (
                    partial_spearman(np.concatenate([s_w, s_r]), var_all, dist_all)
                    if kind != "oracle"
                    else float("nan")
                ),
            }
        )
    rows.append(
        {
            **base,
            "score": "ref:classifier-cv5",
            "kind": "reference",
            "auroc_all": supervised_auroc(X_w, X_r, n_folds, seed),
            "auroc_matched": supervised_auroc(X_w[mw], X_r[mr], n_folds, seed),
            "eu_ratio_matched": float("nan"),
            "partial_spearman": float("nan"),
        }
    )
    for _, cell in cells.iterrows():
        pred = store.read_predictions(str(cell["cell_key"]), points="all")
        if "point_set" not in pred.columns:
            continue
        eu_w = pred.loc[pred["point_set"] == "eval", "epistemic"].to_numpy(dtype=float)
        eu_r = pred.loc[pred["point_set"] == "query", "epistemic"].to_numpy(dtype=float)
        if eu_w.size != X_w.shape[0] or eu_r.size != X_r.shape[0]:
            continue
        rows.append(
            {
                **base,
                "score": str(cell["method_label"]),
                "kind": "method",
                "auroc_all": auroc(eu_w, eu_r),
                "auroc_matched": auroc(eu_w[mw], eu_r[mr]),
                "eu_ratio_matched": _median_ratio(eu_r[mr], eu_w[mw]),
                "partial_spearman": partial_spearman(
                    np.concatenate([eu_w, eu_r]), var_all, dist_all
                ),
            }
        )
    return rows


def _bootstrap_counts(n: int, n_resamples: int, random_state: int | str) -> np.ndarray:
    rng = make_rng("wine-ood-bootstrap", random_state)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=int(n_resamples)).astype(float)


def _boot_mean(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Replicate means (B, k) of the columns of ``values`` (n, k; NaN = missing)."""
    finite = np.isfinite(values)
    num = counts @ np.where(finite, values, 0.0)
    den = counts @ finite.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _interval(reps: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    import warnings

    a = (1.0 - confidence) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        q = np.nanquantile(reps, [a, 1.0 - a], axis=0)
    return q[0], q[1]


def _summary(
    inst: pd.DataFrame, columns: Sequence[str], counts: np.ndarray, confidence: float
) -> pd.DataFrame:
    """Mean over instances per score, with bootstrap intervals over instances."""
    tasks = sorted(inst["task_id"].unique())
    scores = list(dict.fromkeys(inst["score"]))
    out = pd.DataFrame(index=pd.Index(scores, name="score"))
    out["kind"] = [str(inst.loc[inst["score"] == s, "kind"].iloc[0]) for s in scores]
    for col in columns:
        pivot = inst.pivot_table(index="task_id", columns="score", values=col, dropna=False)
        wide = pivot.reindex(index=tasks, columns=scores).to_numpy(dtype=float)
        lo, hi = _interval(_boot_mean(wide, counts), confidence)
        finite = np.isfinite(wide)
        n_ok = finite.sum(axis=0)
        total = np.where(finite, wide, 0.0).sum(axis=0)
        out[col] = np.where(n_ok > 0, total / np.maximum(n_ok, 1), np.nan)
        out[f"{col}_low"], out[f"{col}_high"] = lo, hi
        out[f"{col}_n"] = np.isfinite(wide).sum(axis=0)
    return out


def _benchmark_means(bench: pd.DataFrame) -> pd.DataFrame:
    """Mean ρ(EU, EU*_t) per method base name over the benchmark's ok rows."""
    from udbench.evaluation.leaderboard import select_task_versions

    ok = bench[bench["status"].astype(str) == "ok"]
    ok, _ = select_task_versions(ok)
    label = "method_label" if "method_label" in ok.columns else "method"
    cols = [c for c in ("rho_eu_risk", "rho_eu_var", "rho_eu_point") if c in ok.columns]
    means = ok.groupby(ok[label].astype(str).map(_base_name))[cols].mean()
    means.index.name = "method"
    return means


def _kendall_table(
    inst: pd.DataFrame,
    bench_means: pd.DataFrame,
    counts: np.ndarray,
    confidence: float,
) -> pd.DataFrame:
    """W between the OOD ranking and the benchmark ranking, per EU target and version."""
    from udbench.analyses._common import weighted_kendall_w

    meth = inst[inst["kind"] == "method"].copy()
    meth["method"] = meth["score"].astype(str).map(_base_name)
    tasks = sorted(inst["task_id"].unique())
    rows = []
    for version in ("all", "matched"):
        wide = meth.pivot_table(index="task_id", columns="method", values=f"auroc_{version}")
        wide = wide.reindex(index=tasks)
        for target in ("risk", "var", "point"):
            col = f"rho_eu_{target}"
            if col not in bench_means.columns:
                continue
            bench_col = dict(
                zip(bench_means.index, bench_means[col].to_numpy(dtype=float), strict=True)
            )
            common = [
                m
                for m in wide.columns
                if np.isfinite(bench_col.get(m, np.nan))
                and np.isfinite(wide[m].to_numpy(dtype=float)).any()
            ]
            row: dict[str, Any] = {"target": f"EU*_{target}", "version": version}
            row["n_methods"] = len(common)
            if len(common) < 2:
                row.update(kendall_w=np.nan, kendall_w_low=np.nan, kendall_w_high=np.nan)
                rows.append(row)
                continue
            v = wide[common].to_numpy(dtype=float)
            bench_row = bench_means.loc[common, col].to_numpy(dtype=float)
            est = np.nanmean(v, axis=0)
            w = float(weighted_kendall_w(np.vstack([est, bench_row])))
            reps = _boot_mean(v, counts)  # (B, k)
            ok = np.all(np.isfinite(reps), axis=1)
            stack = np.stack([reps[ok], np.broadcast_to(bench_row, reps[ok].shape)], axis=1)
            w_reps = weighted_kendall_w(stack) if ok.any() else np.full(1, np.nan)
            lo, hi = _interval(np.asarray(w_reps)[:, None], confidence)
            row.update(kendall_w=w, kendall_w_low=float(lo[0]), kendall_w_high=float(hi[0]))
            rows.append(row)
    return pd.DataFrame(rows)


@dataclass
class WineOODResult:
    """What :func:`analyse` computed and wrote.

    Attributes
    ----------
    tables : dict of DataFrame
        ``instances`` (one row per instance × score), ``auroc`` (per score: mean AUROC on all
        and matched points, EU ratio, partial Spearman, with intervals), ``variance_ratio``
        (per oracle family: oracle posterior-variance ratio red/white on matched points),
        ``kendall_w``.
    files : list of Path
    """

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)


_NOTES = {
    "auroc": (
        "Wine OOD detection (red positive, held-out white negative): AUROC of each method's EU "
        "and of the reference scores, on all points and on distance-matched points; median "
        "EU ratio red/white on matched points; partial Spearman of EU with the oracle "
        "posterior variance given the Mahalanobis distance. Means over instances, 95% "
        "bootstrap intervals over instances."
    ),
    "variance_ratio": (
        "Oracle posterior variance: median at matched red over median at matched white "
        "wines, per oracle family (mean over seeds, bootstrap interval over instances)."
    ),
    "kendall_w": (
        "Kendall's W (tie-corrected) between the method ranking by mean EU-AUROC and the "
        "benchmark ranking by mean Spearman rho of EU with each EU target; 95% bootstrap "
        "intervals over wine instances with the benchmark ranking fixed."
    ),
}


def _auroc_figure(table: pd.DataFrame) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    t = table.sort_values("auroc_all")
    fig = Figure(figsize=(7.0, 0.32 * len(t) + 1.4), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    y = np.arange(len(t))
    for col, off, mark, name in (
        ("auroc_all", -0.15, "o", "all points"),
        ("auroc_matched", 0.15, "s", "distance-matched"),
    ):
        est = t[col].to_numpy(dtype=float)
        lo = t[f"{col}_low"].to_numpy(dtype=float)
        hi = t[f"{col}_high"].to_numpy(dtype=float)
        err = np.vstack([np.nan_to_num(est - lo), np.nan_to_num(hi - est)]).clip(min=0)
        ax.errorbar(est, y + off, xerr=err, fmt=mark, capsize=2, label=name)
    ax.axvline(0.5, color="grey", ls="--", lw=0.8)
    ax.set_yticks(y, list(t.index))
    ax.set_xlabel("AUROC, red (positive) vs held-out white")
    ax.legend(loc="lower right", fontsize="small")
    return fig


def _ratio_figure(table: pd.DataFrame, oracle: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    t = table[table["kind"] == "method"].sort_values("eu_ratio_matched")
    fig = Figure(figsize=(7.0, 0.32 * max(len(t), 1) + 1.4), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    y = np.arange(len(t))
    est = t["eu_ratio_matched"].to_numpy(dtype=float)
    lo = t["eu_ratio_matched_low"].to_numpy(dtype=float)
    hi = t["eu_ratio_matched_high"].to_numpy(dtype=float)
    err = np.vstack([np.nan_to_num(est - lo), np.nan_to_num(hi - est)]).clip(min=0)
    ax.errorbar(est, y, xerr=err, fmt="o", capsize=2)
    if np.isfinite(oracle):
        ax.axvline(oracle, color="black", ls="--", lw=0.8, label="oracle posterior variance")
        ax.legend(loc="lower right", fontsize="small")
    ax.axvline(1.0, color="grey", ls=":", lw=0.8)
    ax.set_xscale("log")
    ax.set_yticks(y, list(t.index))
    ax.set_xlabel("median EU ratio, matched red / matched white")
    return fig


def analyse(
    results: str | os.PathLike[str],
    tasks: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    benchmark: str | os.PathLike[str] | None = None,
    n_bins: int = N_BINS,
    n_folds: int = N_FOLDS,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    random_state: int | str = 0,
) -> WineOODResult:
    """Compute the study's figures from its results and task folders; write them to ``out``.

    Parameters
    ----------
    results : str or Path
        The study's results folder (:func:`run_cells`; predictions kept).
    tasks : str or Path
        The study's task folder (instances with query points).
    out : str or Path
        Output folder: ``tables/<name>.csv`` and ``.tex``, ``figures/<name>.png`` and
        ``.svg``, ``summary.json``.
    benchmark : str or Path, optional
        Results folder of the benchmark whose ranking W compares with (mean ρ of EU with each
        EU target over all its rows); default the study's own rows (the white-wine
        instances scored against the oracle at the evaluation pool).
    n_bins, n_folds : int
        Bins of the matching; folds of the supervised reference.
    n_resamples : int, default 2000
        Bootstrap replicates (over instances).
    confidence : float, default 0.95
    random_state : int or str
        Seed of the bootstrap.

    Returns
    -------
    WineOODResult

    Raises
    ------
    UdbenchError
        No readable task with query points, ``n_resamples`` < 1, ``confidence`` not in (0, 1).
    """
    from udbench.analyses.analyze import latex_table
    from udbench.evaluation.store import ResultsStore, read_results
    from udbench.tasks.discovery import find_task_files

    if isinstance(n_resamples, bool) or int(n_resamples) < 1:
        raise param_error(_COMPONENT, "n_resamples", "be an integer >= 1", n_resamples)
    if not 0 < float(confidence) < 1:
        raise param_error(_COMPONENT, "confidence", "be in (0, 1)", confidence)
    store = ResultsStore(results)
    rows_df = read_results(results) if Path(results).exists() else pd.DataFrame()
    if not rows_df.empty:
        rows_df = rows_df[rows_df["status"].astype(str) == "ok"]
    inst_rows: list[dict[str, Any]] = []
    for path in find_task_files([tasks]):
        task = Task.load(path)
        if not task.has_query:
            continue
        cells = (
            rows_df[rows_df["task_sha256"].astype(str) == str(task.content_sha256)]
            if not rows_df.empty and "task_sha256" in rows_df.columns
            else pd.DataFrame(columns=["cell_key", "method_label"])
        )
        cells = cells[[store.prediction_path(str(k)).is_file() for k in cells["cell_key"]]]
        inst_rows.extend(_instance_rows(task, cells, store, n_bins, n_folds))
    if not inst_rows:
        raise param_error(_COMPONENT, "tasks", "hold task files with query points", str(tasks))
    inst = pd.DataFrame(inst_rows)
    n_inst = inst["task_id"].nunique()
    counts = _bootstrap_counts(n_inst, int(n_resamples), random_state)
    cols = ("auroc_all", "auroc_matched", "eu_ratio_matched", "partial_spearman")
    table = _summary(inst, cols, counts, float(confidence))
    # the oracle's variance ratio per family (instance level), with its interval
    var_rows = []
    per_inst = inst.drop_duplicates("task_id")
    for fam, g in [("all", per_inst), *per_inst.groupby("family")]:
        v = g["oracle_var_ratio_matched"].to_numpy(dtype=float)[:, None]
        c = _bootstrap_counts(len(v), int(n_resamples), f"{random_state}-{fam}")
        lo, hi = _interval(_boot_mean(v, c), float(confidence))
        var_rows.append(
            {
                "family": fam,
                "oracle_var_ratio_matched": float(np.nanmean(v)),
                "oracle_var_ratio_matched_low": float(lo[0]),
                "oracle_var_ratio_matched_high": float(hi[0]),
                "oracle_var_ratio_all": float(np.nanmean(g["oracle_var_ratio_all"])),
                "n_matched_mean": float(g["n_matched"].mean()),
                "n_instances": len(g),
            }
        )
    var_table = pd.DataFrame(var_rows).set_index("family")
    bench_df = read_results(benchmark) if benchmark is not None else rows_df
    bench_means = (
        _benchmark_means(bench_df)
        if not bench_df.empty
        else pd.DataFrame(columns=["rho_eu_risk", "rho_eu_var", "rho_eu_point"])
    )
    w_table = _kendall_table(inst, bench_means, counts, float(confidence))
    result = WineOODResult(
        tables={
            "instances": inst,
            "auroc": table,
            "variance_ratio": var_table,
            "kendall_w": w_table,
        }
    )
    root = Path(out)
    (root / "tables").mkdir(parents=True, exist_ok=True)
    (root / "figures").mkdir(parents=True, exist_ok=True)
    for name, tab in result.tables.items():
        csv = root / "tables" / f"{name}.csv"
        tab.to_csv(csv, index=not isinstance(tab.index, pd.RangeIndex))
        result.files.append(csv)
        if name == "instances":
            continue
        tex = root / "tables" / f"{name}.tex"
        tex.write_text(
            latex_table(tab, caption=_NOTES[name], label=f"tab:wine-ood-{name}"), encoding="utf-8"
        )
        result.files.append(tex)
    oracle_ratio = float(var_table["oracle_var_ratio_matched"].to_numpy(dtype=float)[0])
    for name, fig in (
        ("auroc", _auroc_figure(table)),
        ("eu_ratio", _ratio_figure(table, oracle_ratio)),
    ):
        for fmt in ("png", "svg"):
            path = root / "figures" / f"{name}.{fmt}"
            fig.savefig(path, format=fmt, dpi=150)
            result.files.append(path)
    summary = {
        "n_instances": int(n_inst),
        "n_matched_mean": float(per_inst["n_matched"].mean()),
        "benchmark": str(benchmark) if benchmark is not None else "the study's own rows",
        "auroc": json.loads(table.reset_index().to_json(orient="records")),
        "kendall_w": json.loads(w_table.to_json(orient="records")),
        "variance_ratio": json.loads(var_table.reset_index().to_json(orient="records")),
    }
    path = root / "summary.json"
    path.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    result.files.append(path)
    return result
