"""What every analysis shares: the cleaned results frame, wide metric tables, the bootstrap.

The analyses work on the long-format results frame of ``udbench run`` (one row per task ×
method cell). :func:`prepare` keeps the newest version of every task
(:func:`udbench.evaluation.leaderboard.select_task_versions`) and the ``ok`` cells; an
*instance* is one task id (SPEC §6), a *method* one ``method_label``.

The bootstrap is vectorised: one matrix of resampling counts ``C`` (replicates × instances)
is drawn once and shared by every statistic of an analysis, so that replicate ``b`` of every
statistic sees the same resampled instances (paired intervals). A replicate mean of a wide
table ``V`` (instances × methods, NaN where undefined) is ``(C @ V₀) / (C @ 1[V finite])``,
one matrix product for all replicates and methods. Two resampling units (Davison & Hinkley
1997, §3.8):

- ``"instance"``: within every dataset, its instances are drawn with replacement (a
  stratified bootstrap: every replicate keeps each dataset's number of instances);
- ``"dataset"``: whole datasets are drawn with replacement, each bringing all its instances
  (a cluster bootstrap; with one dataset every replicate equals the data, a zero-width
  interval).

Intervals are percentile intervals of the replicates (:meth:`Resampling.interval`), except
Kendall's τ between two orderings that are both re-ranked on every replicate, whose
interval is the basic one (:meth:`Resampling.basic_interval`; docs/analyses.md, "Kendall's
τ intervals"); a replicate in which a statistic is undefined (e.g. a level with no drawn
instance) is left out of its quantiles.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from udbench._resampling import (
    BOOTSTRAP_UNITS,
    DEFAULT_CONFIDENCE,
    DEFAULT_N_RESAMPLES,
    BootstrapSettings,
    basic_interval,
    check_confidence,
    check_n_resamples,
    cluster_counts,
    percentile_interval,
    stratified_counts,
)
from udbench._seeding import make_rng
from udbench._validation import UdbenchError, check_choice, param_error
from udbench.evaluation.leaderboard import HOMOSCEDASTIC, TaskVersionWarning, select_task_versions
from udbench.priors.base import FAMILY_CAPABILITIES

# the row-type helpers live one layer down (the report splits by task type too); importable
# here as before
from udbench.report._task_types import row_task_types as row_task_types
from udbench.report._task_types import rows_of_task_type as rows_of_task_type

#: EU targets (SPEC §1), in the order tables show them.
EU_TARGETS: tuple[str, ...] = ("risk", "var", "point")
#: The two ranking criteria: EU quality (ρ(EU, EU*_risk)) and AU quality (ρ(AU, AU*)).
CRITERIA: dict[str, str] = {"eu": "rho_eu_risk", "au": "rho_au"}
#: Metrics restricted to heteroscedastic noise modes and heteroscedastic-AU methods (SPEC §10).
AU_METRICS = frozenset(
    {
        "rho_au",
        "rho_eu_au",
        *(f"delta_ent_{t}" for t in EU_TARGETS),
        *(f"rho_eu_au_star_{t}" for t in EU_TARGETS),
    }
)
#: Method families (the registry classes' ``family``) and how tables name them.
FAMILY_NAMES: dict[str, str] = {"gp": "GP-based", "trees": "Trees", "nn": "NN", "linear": "BLR"}
#: The oracle prior family matching each method family's inductive bias (paper Section 5): the
#: prior family whose ``PriorCapabilities.matched_method_family`` it is (None: no such family).
MATCHED_PRIOR: dict[str, str | None] = {
    method_family: next(
        (
            f
            for f, caps in FAMILY_CAPABILITIES.items()
            if caps.matched_method_family == method_family
        ),
        None,
    )
    for method_family in FAMILY_NAMES
}
#: Instance coordinates kept beside the wide tables.
COORDINATES: tuple[str, ...] = ("dataset", "family", "noise", "coverage", "seed")


@dataclass(frozen=True)
class Frame:
    """The ok cells of a results frame, with its instances and methods in a fixed order.

    Attributes
    ----------
    rows : DataFrame
        ``ok`` cells of the newest task versions; column ``label`` is the method label.
    instances : DataFrame
        One row per instance (task id, sorted), its coordinates (``dataset``, ``family`` =
        prior family, ``noise``, ``coverage``, ``seed``; missing ones are ``"?"``).
    methods : list of str
        Method labels, sorted.
    constant_au : dict
        Label -> whether the method's AU is constant in x (SPEC §8).
    """

    rows: pd.DataFrame
    instances: pd.DataFrame
    methods: list[str]
    constant_au: dict[str, bool]

    def wide(self, metric: str) -> np.ndarray:
        """Instances × methods table of ``metric`` (NaN where undefined or not a cell).

        AU metrics (:data:`AU_METRICS`) are NaN on homoscedastic instances and for
        constant-AU methods (SPEC §10).
        """
        if metric not in self.rows.columns:
            return np.full((len(self.instances), len(self.methods)), np.nan)
        values = pd.to_numeric(self.rows[metric], errors="coerce")
        table = (
            pd.DataFrame(
                {"task_id": self.rows["task_id"], "label": self.rows["label"], "v": values}
            )
            .pivot_table(index="task_id", columns="label", values="v", aggfunc="mean")
            .reindex(index=self.instances.index, columns=self.methods)
        )
        out = table.to_numpy(dtype=float, copy=True)
        if metric in AU_METRICS:
            out[self.au_undefined(), :] = np.nan
            const = np.array([self.constant_au[m] for m in self.methods], dtype=bool)
            out[:, const] = np.nan
        return out

    def au_undefined(self) -> np.ndarray:
        """Instances on which the AU metrics are undefined: the homoscedastic ones, shape (n,)."""
        return self.instances["noise"].astype(str).to_numpy() == HOMOSCEDASTIC


def prepare(results: pd.DataFrame, component: str = "analyses") -> Frame:
    """Check a results frame and return its ok cells as a :class:`Frame`.

    Raises
    ------
    UdbenchError
        Empty frame, missing ``task_id``/``status``/``method`` columns, or no ok cell.
    """
    if not isinstance(results, pd.DataFrame) or len(results) == 0:
        raise UdbenchError(f"{component}: the results table is empty")
    for col in ("task_id", "status", "method"):
        if col not in results.columns:
            raise param_error(component, "results", f"have a {col!r} column", list(results))
    results, note = select_task_versions(results)
    if note:
        warnings.warn(note, TaskVersionWarning, stacklevel=3)
    rows = results[results["status"].astype(str) == "ok"].copy()
    if rows.empty:
        raise UdbenchError(f"{component}: the results table has no ok cell")
    label = "method_label" if "method_label" in rows.columns else "method"
    rows["label"] = rows[label].astype(str)
    rows["task_id"] = rows["task_id"].astype(str)
    coords = {c: rows[c].astype(str) if c in rows else "?" for c in COORDINATES}
    inst = pd.DataFrame({"task_id": rows["task_id"], **coords})
    instances = inst.groupby("task_id", sort=True).first()
    methods = sorted(rows["label"].unique())
    if "constant_aleatoric" in rows:
        const_col = rows["constant_aleatoric"].astype("boolean").fillna(False).astype(bool)
    else:
        const_col = pd.Series(False, index=rows.index)
    constant = const_col.groupby(rows["label"]).any()
    return Frame(rows, instances, methods, {m: bool(constant[m]) for m in methods})


def method_families(frame: Frame, families: Mapping[str, str] | None = None) -> dict[str, str]:
    """Label -> method family (``"gp"``, ``"trees"``, ``"nn"``, ``"linear"`` or ``"other"``).

    In order of precedence: ``families`` (by label), the ``method_family`` column that
    ``udbench run`` stores with every row, the ``family`` attribute of the method's
    registered class (read from source; :func:`udbench.methods.get_method_class` for a
    user's class); ``"other"`` when the class cannot be imported (results from before the
    column was stored, of a user's class not importable here).
    """
    from udbench.methods.registry import get_method_class, list_methods

    given = dict(families or {})
    # registered methods: read from source, no import (udbench.methods._static)
    registered = {i.name: i.family for i in list_methods(static=True) if i.family}
    out: dict[str, str] = {}
    first = frame.rows.groupby("label", sort=True).first()
    for label in frame.methods:
        if label in given:
            out[label] = str(given[label])
            continue
        row = first.loc[label]
        col = row.get("method_family") if "method_family" in first.columns else None
        if isinstance(col, str) and col:
            out[label] = col
            continue
        name = str(row["method"])
        if name in registered:
            out[label] = str(registered[name])
            continue
        try:
            out[label] = str(get_method_class(name).family)
        except Exception:  # a user's class that is not importable here: said in the docs
            out[label] = "other"
    return out


@dataclass(frozen=True)
class Resampling:
    """Bootstrap resampling counts shared by the statistics of one analysis.

    Attributes
    ----------
    counts : ndarray, shape (B, n)
        How often each instance is drawn in each replicate.
    group_counts : ndarray, shape (B, G) or None
        With ``unit="dataset"``: how often each dataset is drawn.
    groups : ndarray, shape (n,)
        Dataset code of every instance (index into ``group_names``).
    group_names : list of str
        The datasets.
    unit : str
        ``"instance"`` (within datasets) or ``"dataset"``.
    confidence : float
        Nominal coverage of the intervals.
    """

    counts: np.ndarray
    group_counts: np.ndarray | None
    groups: np.ndarray
    group_names: list[str]
    unit: str
    confidence: float

    @property
    def n_resamples(self) -> int:
        """Number of replicates B."""
        return int(self.counts.shape[0])

    def interval(self, reps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Percentile interval along axis 0 of ``reps`` (NaN replicates left out)."""
        return percentile_interval(reps, self.confidence)

    def basic_interval(
        self,
        estimate: np.ndarray,
        reps: np.ndarray,
        bounds: tuple[float, float] = (-np.inf, np.inf),
    ) -> tuple[np.ndarray, np.ndarray]:
        """Basic (reverse-percentile) interval of ``estimate`` from the replicates along axis
        0 of ``reps``, clipped to ``bounds`` (:func:`udbench._resampling.basic_interval`;
        Davison & Hinkley 1997, §5.2.1)."""
        return basic_interval(estimate, reps, self.confidence, bounds)

    def mean(self, values: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Replicate means of the columns of ``values`` (n × k, NaN = not observed): (B, k).

        ``rows`` (boolean, shape (n,)) restricts the instances.
        """
        finite = np.isfinite(values)
        if rows is not None:  # mask, not index: no copy of the (B, n) counts
            finite &= np.asarray(rows, dtype=bool)[:, None]
        num = self.counts @ np.where(finite, values, 0.0)
        den = self.counts @ finite.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def resampling(
    frame: Frame,
    *,
    unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    component: str = "analyses",
    settings: BootstrapSettings | None = None,
) -> Resampling:
    """Draw the resampling counts of ``frame``'s instances (see the module notes).

    ``unit="instance"`` draws with :func:`udbench._resampling.stratified_counts` (instances
    within their dataset), ``unit="dataset"`` with :func:`udbench._resampling.cluster_counts`,
    from the stream ``make_rng("analyses-bootstrap", unit, random_state)``. A ``settings``
    object, when given, replaces ``unit``, ``n_resamples``, ``confidence`` and
    ``random_state``.

    Raises
    ------
    UdbenchError
        Unknown ``unit``, ``n_resamples`` not an integer >= 1, ``confidence`` not in (0, 1).
    """
    if settings is not None:
        unit, n_resamples = settings.unit, settings.n_resamples
        confidence, random_state = settings.confidence, settings.random_state
    check_choice(component, "bootstrap_unit", unit, list(BOOTSTRAP_UNITS))
    b = check_n_resamples(component, n_resamples)
    conf = check_confidence(component, confidence)
    rng = make_rng("analyses-bootstrap", unit, random_state)
    names, codes = np.unique(frame.instances["dataset"].to_numpy(dtype=str), return_inverse=True)
    n_groups = len(names)
    group_counts = None
    if unit == "dataset":
        group_counts, counts = cluster_counts(rng, codes, b, n_groups)
    else:
        counts = stratified_counts(rng, codes, b, n_groups)
    return Resampling(counts, group_counts, codes, [str(x) for x in names], unit, conf)


def analysis_context(
    results: pd.DataFrame,
    component: str,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    ctx: tuple[Frame, Resampling] | None = None,
    prepare_frame: Callable[[pd.DataFrame, str], Frame] = prepare,
) -> tuple[Frame, Resampling]:
    """The frame and bootstrap that the tables of one analysis share.

    Every table takes the results frame and the bootstrap keywords (``bootstrap_unit``,
    ``n_resamples``, ``confidence``, ``random_state``; see :func:`resampling`), or a ready
    ``ctx`` (what this returned for an earlier table: then the same instances and the same
    replicates, paired intervals).

    Parameters
    ----------
    results : DataFrame
        Long-format results.
    component : str
        Names the caller in error messages.
    bootstrap_unit, n_resamples, confidence, random_state
        As in :func:`resampling` (``bootstrap_unit`` is its ``unit``).
    ctx : tuple of (Frame, Resampling), optional
        Returned as it is when given (nothing is checked or drawn).
    prepare_frame : callable, default :func:`prepare`
        ``(results, component) -> Frame``: the cells an analysis reads (e.g. the
        classification ones).

    Returns
    -------
    tuple of (Frame, Resampling)
        ``prepare_frame(results, component)`` and the resampling of its instances.

    Raises
    ------
    UdbenchError
        The checks of ``prepare_frame`` first, then those of :func:`resampling`.
    """
    if ctx is not None:
        return ctx
    frame = prepare_frame(results, component)
    boot = resampling(
        frame,
        unit=bootstrap_unit,
        n_resamples=n_resamples,
        confidence=confidence,
        random_state=random_state,
        component=component,
    )
    return frame, boot


def instance_ranks(
    values: np.ndarray, higher_is_better: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-instance ranks of the methods that have the metric somewhere.

    Parameters
    ----------
    values : ndarray, shape (n, k)
        Metric per instance and method (NaN = undefined).
    higher_is_better : bool
        Rank 1 goes to the highest value (Spearman ρ) or the lowest (RMSE).

    Returns
    -------
    ranks : ndarray, shape (n, k)
        Average ranks (ties share them; 1 = best) on *complete* instances (every ranked
        method defined) and NaN elsewhere and for unranked methods.
    ranked : ndarray of bool, shape (k,)
        Methods defined on at least one instance (at least two are needed to rank).
    complete : ndarray of bool, shape (n,)
        Instances on which every ranked method is defined.
    """
    finite = np.isfinite(values)
    ranked = finite.any(axis=0)
    ranks = np.full(values.shape, np.nan)
    if ranked.sum() < 2:
        return ranks, ranked, np.zeros(values.shape[0], dtype=bool)
    complete = finite[:, ranked].all(axis=1)
    sub = values[np.ix_(complete, ranked)]
    if sub.size:
        r = stats.rankdata(-sub if higher_is_better else sub, axis=1, method="average")
        ranks[np.ix_(complete, ranked)] = r
    return ranks, ranked, complete


def weighted_kendall_w(tables: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Kendall's W with the tie correction for a stack of tables, rows weighted.

    Parameters
    ----------
    tables : ndarray, shape (..., m, k)
        Scores of k methods (columns) at m levels (rows, the "raters"); finite where the
        row's weight is positive.
    weights : ndarray, shape (..., m), optional
        How often each row counts (a row drawn twice by a bootstrap counts twice); default 1.

    Returns
    -------
    ndarray, shape (...)
        W = 12 S / (M² (k³ − k) − M Σ_i w_i T_i), with M = Σ w_i levels, R_j = Σ_i w_i r_ij
        the (weighted) rank sums, S = Σ_j (R_j − M (k+1)/2)² and T_i = Σ (t³ − t) over the
        tie groups of row i (Kendall & Babington Smith 1939; tie correction as in Legendre
        2005). T_i is computed from the row's average ranks with the identity
        Σ_j (r_ij − (k+1)/2)² = (k³ − k − T_i)/12. NaN where fewer than 2 levels count or
        every counted row is entirely tied. With unit weights this equals
        :func:`udbench.evaluation.metrics.kendall_w`.
    """
    t = np.asarray(tables, dtype=float)
    k = t.shape[-1]
    w = np.ones(t.shape[:-1]) if weights is None else np.asarray(weights, dtype=float)
    ranks = stats.rankdata(np.where(np.isfinite(t), t, 0.0), axis=-1, method="average")
    centre = (k + 1) / 2.0
    ties = (k**3 - k) - 12.0 * np.sum((ranks - centre) ** 2, axis=-1)  # T_i per row
    m = w.sum(axis=-1)
    rank_sums = np.einsum("...i,...ij->...j", w, ranks)
    s = np.sum((rank_sums - m[..., None] * centre) ** 2, axis=-1)
    denom = m**2 * (k**3 - k) - m * np.sum(w * ties, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(
            (m >= 2) & (denom > 1e-9), 12.0 * s / np.where(denom > 0, denom, 1.0), np.nan
        )
    return out
