"""The leaderboard: per method, mean metrics over instances with bootstrap intervals and a rank.

Per method (one entry per method configuration, labelled as given to ``udbench run``):

- ``rho_eu_risk``, ``rho_eu_var``, ``rho_eu_point``: mean over instances of the Spearman ρ of
  the EU estimate with EU*_risk, EU*_var, EU*_point (SPEC §1, §10);
- ``rho_au``: mean ρ of AU with AU*, over heteroscedastic noise modes only, and only for
  methods with heteroscedastic AU (SPEC §10); NaN for constant-AU methods (SPEC §8);
- ``delta_ent_risk``: mean excess entanglement Δ_ent = ρ(EU, AU) − ρ(EU*_risk, AU*)
  (SPEC §10), under the same restriction as ``rho_au`` (it is undefined when AU or AU* is
  constant);
- ``rmse``: mean RMSE of the point prediction against f*;
- each with a percentile bootstrap interval resampling instances
  (:func:`udbench.evaluation.metrics.bootstrap_ci`, on the values sorted, so that the same
  rows in any order give the same interval; before 2026-12-03 they were resampled in row
  order), and the number of instances behind it;
- ``n_valid`` / ``n_failed`` cells, ``mean_rank`` and ``rank``;
- on request (``metrics=``), any proxy metric of :mod:`udbench.evaluation.proxies` (NLL,
  CRPS, PICP/MPIW/Winkler at 50/90/95 %, miscalibration area, ENCE, sharpness, ρ(|err|, SD),
  AUSE, …); rows written before udbench stored them count as missing (NaN, ``m_n`` = 0).

A proxy ranks by its own direction (:data:`udbench.evaluation.proxies.PROXY_DIRECTIONS`):
lower NLL, CRPS, width, Winkler score, calibration error, AUSE is better, higher ρ(|err|,
SD); a coverage PICP_q ranks by the mean |PICP_q − q| over the common instances (closest to
nominal first), so its ``rank_value`` is that distance, not the mean coverage.

Rank (SPEC §10 "method ranks"): methods are ranked on the *common instances* — those where
every method has a finite value of the ranking metric (``rank_by``, default ρ(EU, EU*_risk))
— by one of two statistics (``rank_stat``), stored as the column ``rank_value``:

- ``"mean"`` (default): the mean of the metric over the common instances. With complete
  results this is the mean shown beside it, so rank and table agree by construction;
- ``"mean_rank"``: the mean per-instance rank (1 = highest ρ, ties share the average rank;
  :func:`udbench.evaluation.metrics.mean_ranks`), the statistic of rank-based analyses.

``mean_rank`` is always reported as well; ``rank`` orders ``rank_value`` (1 = best, ties share
the lower rank). The two statistics can disagree (:data:`RANK_GUIDE` says how to read them).
When no instance has every method, ``rank_value`` falls back to each method's own mean, and
the note says so; a single method is ranked 1 on its own valid instances. A method whose
ranking metric is undefined on every instance (e.g. ρ(AU, AU*) for a method with constant AU)
gets no rank (``<NA>``; ``null`` in JSON) and
is listed last. ``board.attrs["ranking"]`` holds one line saying what ranks and on how many
instances; ``board.attrs["partial"]`` one line when methods have different numbers of valid
instances (partial results: the means use each method's own instances, the ranks only the
common ones), else None.

Classification results (docs/classification.md, rows of ``task_type = "classification"``):
the same ρ and Δ_ent columns (their targets are the log loss's) and, in place of ``rmse``,
the label metrics of :data:`CLASSIFICATION_LABEL_METRICS` (accuracy, higher is better; NLL,
Brier score and ECE, lower is better); the Brier-target columns (``rho_eu_risk_brier``, …;
:data:`udbench.evaluation.classification_cell.BRIER_METRIC_KEYS`) are averaged when named in
``metrics``. ρ(AU, AU*) and Δ_ent use every instance there: AU* =
E_F H(π_F) varies in x under any temperature mode, a constant τ included. A table mixing
regression and classification rows is refused (:func:`results_task_type`): their metrics
do not rank together; filter one family (``--family gpc``) or use separate folders.

Task versions: rows carry the content checksum of the task file they evaluated
(``task_sha256``). When a results folder holds rows of two versions of one task id (the task
was generated again and re-run into the same folder), only the newest version (the one whose
latest row finished last) is used and a :class:`TaskVersionWarning` names the rows set aside
(:func:`select_task_versions`); two versions are never averaged or ranked together. Rows
written before checksums were stored count as one unknown version.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from udbench._resampling import DEFAULT_CONFIDENCE, DEFAULT_N_RESAMPLES
from udbench._validation import UdbenchError, UdbenchWarning, check_choice, param_error
from udbench.evaluation.metrics import mean_ranks
from udbench.evaluation.proxies import PROXY_DIRECTIONS, PROXY_LABELS

__all__ = [
    "CLASSIFICATION_LABEL_METRICS",
    "CLASSIFICATION_LEADERBOARD_METRICS",
    "FILTER_COLUMNS",
    "HOMOSCEDASTIC",
    "LEADERBOARD_METRICS",
    "METRIC_LABELS",
    "RANK_GUIDE",
    "RANK_STATS",
    "TaskVersionWarning",
    "filter_results",
    "leaderboard",
    "leaderboard_records",
    "results_task_type",
    "select_task_versions",
]

#: Metrics shown on the leaderboard, in order.
LEADERBOARD_METRICS: tuple[str, ...] = (
    "rho_eu_risk",
    "rho_eu_var",
    "rho_eu_point",
    "rho_au",
    "delta_ent_risk",
    "rmse",
)
#: The label metrics of a classification leaderboard (in place of ``rmse``), in order.
CLASSIFICATION_LABEL_METRICS: tuple[str, ...] = ("accuracy", "nll", "brier", "ece")
#: Metrics shown on a classification leaderboard, in order.
CLASSIFICATION_LEADERBOARD_METRICS: tuple[str, ...] = (
    *LEADERBOARD_METRICS[:-1],
    *CLASSIFICATION_LABEL_METRICS,
)
#: Classification metrics where lower is better (accuracy: higher).
_LOWER_IS_BETTER = frozenset({"rmse", "nmse", "brier", "ece"})
#: Short readable names of the metrics (terminal, report, notes).
METRIC_LABELS: dict[str, str] = {
    "rho_eu_risk": "ρ(EU, EU*_risk)",
    "rho_eu_var": "ρ(EU, EU*_var)",
    "rho_eu_point": "ρ(EU, EU*_point)",
    "rho_au": "ρ(AU, AU*)",
    "delta_ent_risk": "Δ_ent (risk)",
    "rmse": "RMSE vs f*",
    "nmse": "NMSE vs f*",
    **PROXY_LABELS,
    "accuracy": "accuracy",
    "brier": "Brier score",
    "ece": "ECE",
}
#: How to read ``rank`` beside ``mean rank`` (one sentence, under the report's leaderboard).
RANK_GUIDE = (
    "rank orders the methods by the ranking statistic over the common instances (by default "
    "the mean ρ shown in the table); mean rank is each method's per-instance rank (1 = best "
    "on that instance) averaged over the same instances, which counts a narrow win as much "
    "as a wide one, so a method with a higher mean ρ can have a worse mean rank when it wins "
    "by a lot on a few instances and loses narrowly on many"
)
#: Statistics a leaderboard can rank by (see the module docstring).
RANK_STATS: tuple[str, ...] = ("mean", "mean_rank")
#: Task coordinates (and the method) a results table can be filtered by.
FILTER_COLUMNS: tuple[str, ...] = ("dataset", "family", "noise", "coverage", "method")
#: Metrics restricted to heteroscedastic noise and heteroscedastic-AU methods (SPEC §10).
_AU_METRICS = frozenset({"rho_au", "delta_ent_risk", "delta_ent_var", "delta_ent_point"})
#: The noise mode whose AU* is constant.
HOMOSCEDASTIC = "homoscedastic"


class TaskVersionWarning(UdbenchWarning):
    """Results hold several versions (content checksums) of one task id; older ones unused."""


def select_task_versions(results: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """Keep, per task id, only the rows of its newest task version.

    Parameters
    ----------
    results : DataFrame
        Rows as stored by ``udbench run``; the version of a row is its ``task_sha256``
        (missing or null: rows from before checksums were stored, one unknown version).

    Returns
    -------
    rows : DataFrame
        The rows of the newest version of each task id: the version whose latest
        ``finished_at`` is latest (ties: the one stored last).
    note : str or None
        One line naming the task ids and rows set aside, or None if every task id has one
        version.
    """
    if "task_sha256" not in results.columns or "task_id" not in results.columns:
        return results, None
    version = results["task_sha256"].astype(object).where(results["task_sha256"].notna(), "")
    n_versions = version.groupby(results["task_id"]).nunique()
    mixed = n_versions[n_versions > 1].index
    if len(mixed) == 0:
        return results, None
    if "finished_at" in results.columns:
        when = results["finished_at"].astype(str)
    else:
        when = pd.Series(range(len(results)), index=results.index).astype(str).str.zfill(12)
    frame = pd.DataFrame({"task_id": results["task_id"], "version": version, "when": when})
    latest = frame.groupby(["task_id", "version"], sort=False)["when"].max().reset_index()
    latest = latest.sort_values("when", kind="stable").drop_duplicates("task_id", keep="last")
    newest = dict(zip(latest["task_id"], latest["version"], strict=True))
    keep = frame["version"] == frame["task_id"].map(newest)
    names = sorted(str(t) for t in mixed)
    shown = ", ".join(repr(t) for t in names[:3]) + (", …" if len(names) > 3 else "")
    note = (
        f"results hold more than one version (task files with the same id, different "
        f"content) of {len(names)} task(s) ({shown}): using the newest version of each, "
        f"setting aside {int((~keep).sum())} row(s) of older versions; run each version "
        "into its own results folder to compare them"
    )
    return results[keep.to_numpy()], note


def results_task_type(results: pd.DataFrame) -> str:
    """``"regression"`` or ``"classification"``: the task type of every row of ``results``.

    A row's type is its ``task_type`` column (classification rows have one; a row without
    it is a regression row), except that a failed row with no task coordinates (a worker
    that died before reading the task) counts for neither.

    Raises
    ------
    UdbenchError
        The rows mix both types (the message says how many of each and how to split them).
    """
    if "task_type" not in results.columns:
        return "regression"
    kind = results["task_type"].astype(object).where(results["task_type"].notna(), "regression")
    if "family" in results.columns:
        kind = kind.where(results["family"].notna() | results["task_type"].notna(), None)
    counts = kind.dropna().value_counts()
    if len(counts) > 1:
        shown = ", ".join(f"{int(n)} {k}" for k, n in counts.items())
        raise UdbenchError(
            f"leaderboard: the results mix regression and classification rows ({shown}); "
            "their metrics do not rank together: select one type with --family (e.g. "
            "--family gpc), or run them into separate --out folders"
        )
    return str(counts.index[0]) if len(counts) else "regression"


def _label_column(df: pd.DataFrame) -> str:
    return "method_label" if "method_label" in df.columns else "method"


def _au_mask(df: pd.DataFrame) -> pd.Series:
    hetero = df["noise"].astype(str) != HOMOSCEDASTIC if "noise" in df else True
    if "task_type" in df:  # AU* of a classification task varies in x whatever τ(x) is
        hetero = hetero | (df["task_type"].astype(str) == "classification")
    const = (
        df["constant_aleatoric"].fillna(False).astype(bool)
        if "constant_aleatoric" in df
        else pd.Series(False, index=df.index)
    )
    return pd.Series(hetero, index=df.index) & ~const


def _interval(values: np.ndarray, seed: str, confidence: float, n_resamples: int):
    from udbench.evaluation.metrics import bootstrap_ci

    # sorted: the interval is a function of the values alone, not of the rows' order (a
    # results frame is a set; the bootstrap's resampled indices would otherwise pick other
    # values for another order of the same rows)
    vals = np.sort(values[np.isfinite(values)])
    if vals.size == 0:
        return math.nan, math.nan, math.nan, 0
    if vals.size == 1 or np.all(vals == vals[0]):
        v = float(vals.mean())
        return (
            v,
            (math.nan if vals.size == 1 else v),
            (math.nan if vals.size == 1 else v),
            vals.size,
        )
    res = bootstrap_ci(vals, n_resamples=n_resamples, confidence=confidence, random_state=seed)
    return res.estimate, res.low, res.high, int(vals.size)


def filter_results(results: pd.DataFrame, **levels: Sequence[str] | None) -> pd.DataFrame:
    """Keep the rows whose task coordinates lie in the given levels (the others: any).

    Parameters
    ----------
    results : DataFrame
        Rows as stored by ``udbench run``.
    **levels : sequence of str or None
        Keyword per column of :data:`FILTER_COLUMNS` (``dataset``, ``family`` — the oracle's
        prior family —, ``noise``, ``coverage``, ``method`` — the method label as given to
        ``udbench run``, or the method's registry name): the values to keep, compared as
        strings. None or empty keeps all.

    Returns
    -------
    DataFrame
        The selected rows (a view-safe copy), index unchanged.

    Raises
    ------
    UdbenchError
        An unknown keyword; a column the results do not have; a value that matches no row
        (the message lists the values present), or a selection that leaves no row.
    """
    keep = pd.Series(True, index=results.index)
    for col, wanted in levels.items():
        check_choice("filter_results", "column", col, list(FILTER_COLUMNS))
        if not wanted:
            continue
        columns = [col]
        if col == "method":  # a method's label as given to `udbench run`, or its name
            columns = list(dict.fromkeys([_label_column(results), "method"]))
        missing = [c for c in columns if c not in results.columns]
        if missing:
            raise param_error(
                "filter_results", col, f"be a column of the results ({missing[0]!r})", "absent"
            )
        present = [results[c].astype(str) for c in columns]
        levels_present = sorted(set().union(*(p.unique() for p in present)))
        unknown = [str(w) for w in wanted if str(w) not in levels_present]
        if unknown:
            raise param_error(
                "filter_results",
                col,
                f"name values present in the results ({', '.join(levels_present)})",
                ", ".join(unknown),
            )
        wanted_str = [str(w) for w in wanted]
        match = pd.Series(False, index=results.index)
        for p in present:
            match |= p.isin(wanted_str)
        keep &= match
    if not keep.any():
        raise UdbenchError("filter_results: no results row matches the filters together")
    return results[keep.to_numpy()].copy()


def leaderboard(
    results: pd.DataFrame,
    *,
    metrics: Sequence[str] = LEADERBOARD_METRICS,
    rank_by: str = "rho_eu_risk",
    rank_stat: str = "mean",
    confidence: float = DEFAULT_CONFIDENCE,
    n_resamples: int = DEFAULT_N_RESAMPLES,
) -> pd.DataFrame:
    """Summarise a results table into one leaderboard row per method configuration.

    Parameters
    ----------
    results : DataFrame
        Rows as stored by ``udbench run`` (:func:`udbench.evaluation.store.read_results`).
    metrics : sequence of str
        Per-instance metric columns to average (default :data:`LEADERBOARD_METRICS`). On
        classification results, ``rmse`` and ``nmse`` are replaced by
        :data:`CLASSIFICATION_LABEL_METRICS`.
    rank_by : str, default "rho_eu_risk"
        The metric methods are ranked by (higher is better, except ``rmse``/``nmse`` and the
        proxies' own directions; module docstring). Must be one of ``metrics``.
    rank_stat : {"mean", "mean_rank"}, default "mean"
        The statistic of ``rank_by`` over the common instances that ranks (module docstring).
    confidence : float, default 0.95
        Nominal coverage of the bootstrap intervals.
    n_resamples : int, default 2000
        Bootstrap replicates per interval.

    Returns
    -------
    DataFrame
        Sorted by rank; columns ``method, rank, rank_value, mean_rank, n_valid, n_failed``
        and, per metric ``m``, ``m`` (mean), ``m_low``, ``m_high`` (interval) and ``m_n``
        (instances). ``attrs["ranking"]``, ``attrs["partial"]``: notes (module docstring);
        ``attrs["task_type"]``: ``"regression"`` or ``"classification"``.

    Raises
    ------
    UdbenchError
        Empty table, missing columns, unknown ``rank_by`` or ``rank_stat``, rows of both
        task types (:func:`results_task_type`).
    """
    if results is None or len(results) == 0:
        raise UdbenchError("leaderboard: the results table is empty")
    for col in ("task_id", "status"):
        if col not in results.columns:
            raise param_error("leaderboard", "results", f"have a {col!r} column", list(results))
    task_type = results_task_type(results)
    if task_type == "classification":
        swapped = [m for m in metrics if m not in ("rmse", "nmse")]
        if len(swapped) < len(metrics):
            swapped += [m for m in CLASSIFICATION_LABEL_METRICS if m not in swapped]
        metrics = swapped
    check_choice("leaderboard", "rank_by", rank_by, list(metrics))
    check_choice("leaderboard", "rank_stat", rank_stat, list(RANK_STATS))
    results, note = select_task_versions(results)
    if note:
        warnings.warn(note, TaskVersionWarning, stacklevel=2)
    label = _label_column(results)
    df = results.copy()
    for m in metrics:
        if m not in df.columns:
            df[m] = np.nan
        df[m] = pd.to_numeric(df[m], errors="coerce")
    ok = df["status"].astype(str) == "ok"
    au_ok = _au_mask(df)
    rows: list[dict[str, Any]] = []
    for name, group in df.groupby(label, sort=True):
        valid = group[ok.loc[group.index]]
        row: dict[str, Any] = {
            "method": str(name),
            "n_valid": len(valid),
            "n_failed": int((~ok.loc[group.index]).sum()),
            "constant_aleatoric": bool(
                group["constant_aleatoric"].fillna(False).astype(bool).any()
                if "constant_aleatoric" in group
                else False
            ),
        }
        for m in metrics:
            sel = valid[au_ok.loc[valid.index]] if m in _AU_METRICS else valid
            est, low, high, n = _interval(
                sel[m].to_numpy(dtype=float), f"leaderboard:{name}:{m}", confidence, n_resamples
            )
            row.update({m: est, f"{m}_low": low, f"{m}_high": high, f"{m}_n": n})
        rows.append(row)
    board = pd.DataFrame(rows)
    # the ranking sees the same instances as the metric's mean (AU metrics: heteroscedastic
    # noise modes and heteroscedastic-AU methods only), restricted to the common ones
    rank_rows = ok & au_ok if rank_by in _AU_METRICS else ok
    higher = _higher_is_better(rank_by)
    methods = list(board["method"])
    ranked = df[rank_rows]
    direction = PROXY_DIRECTIONS.get(rank_by, "")
    if direction.startswith("nominal:"):  # coverage: rank by the distance to nominal
        ranked = ranked.assign(**{rank_by: (ranked[rank_by] - float(direction[8:])).abs()})
    common = _common_table(ranked, label, rank_by, methods)
    board["mean_rank"] = np.nan
    board["rank_value"] = np.nan
    n_common = 0 if common is None else len(common)
    name = METRIC_LABELS.get(rank_by, rank_by)
    if direction.startswith("nominal:"):
        name = f"|{name} − {float(direction[8:]):g}|"
    if common is not None:
        cols = [methods.index(m) for m in common.columns]
        board.loc[cols, "mean_rank"] = (
            mean_ranks(common.to_numpy(), higher_is_better=higher) if len(cols) > 1 else 1.0
        )
        if rank_stat == "mean_rank":
            board["rank_value"] = board["mean_rank"]
        else:
            board.loc[cols, "rank_value"] = common.mean(axis=0).to_numpy()
        what = "mean per-instance rank of" if rank_stat == "mean_rank" else "mean"
        if len(common.columns) == 1:
            ranking = (
                f"rank: a single ranked method ({common.columns[0]}), {what} {name} over "
                f"its {n_common} valid instance(s)"
            )
        else:
            ranking = (
                f"rank: {what} {name} over the {n_common} instance(s) where every ranked "
                "method has a value (1 = best)"
            )
    else:
        board["rank_value"] = board[rank_by]
        if direction.startswith("nominal:"):
            board["rank_value"] = (board[rank_by] - float(direction[8:])).abs()
        ranking = (
            f"rank: each method's own mean {name} — no instance has a value for every "
            "method, so the ranks do not compare methods on the same instances"
        )
    ascending = rank_stat == "mean_rank" or not higher
    key = board["rank_value"] if ascending else -board["rank_value"]
    # a method whose ranking metric is undefined everywhere (e.g. ρ(AU, AU*) of a
    # constant-AU method) is left unranked (rank <NA>), not put last
    board["rank"] = key.rank(method="min", na_option="keep").astype("Int64")
    board = board.sort_values(["rank", "method"], kind="stable").reset_index(drop=True)
    first = ["method", "rank", "rank_value", "mean_rank", "n_valid", "n_failed"]
    board = board[first + [c for c in board.columns if c not in first]]
    board.attrs["ranking"] = ranking
    board.attrs["partial"] = _partial_note(board, n_common)
    board.attrs["task_type"] = task_type
    return board


def _higher_is_better(metric: str) -> bool:
    """Whether a larger value of ``metric`` ranks first (coverages: after |PICP − q|)."""
    if metric in _LOWER_IS_BETTER:
        return False
    return PROXY_DIRECTIONS.get(metric, "higher") == "higher"


def _partial_note(board: pd.DataFrame, n_common: int) -> str | None:
    """One line when methods have different numbers of valid instances, else None."""
    counts = dict(zip(board["method"], board["n_valid"], strict=True))
    if len(set(counts.values())) <= 1:
        return None
    most = max(counts.values())
    fewer = sorted((n, m) for m, n in counts.items() if n < most)
    shown = ", ".join(f"{m} {n}" for n, m in fewer[:5]) + (", …" if len(fewer) > 5 else "")
    return (
        f"partial results: {len(fewer)} method(s) have fewer valid instances than the "
        f"{most} of the others ({shown}); "
        f"the means use each method's own valid instances, the ranks only the {n_common} "
        "common to every ranked method"
    )


def _common_table(
    ok: pd.DataFrame, label: str, metric: str, methods: list[str]
) -> pd.DataFrame | None:
    """Instances × methods of ``metric`` where every method defined somewhere has a value.

    Methods whose metric is undefined on every instance are left out (they get no rank);
    None when no method is left or no instance is complete. A single method's common
    instances are its own valid ones.
    """
    if not methods or ok.empty:
        return None
    wide = ok.pivot_table(index="task_id", columns=label, values=metric, aggfunc="mean")
    wide = wide.reindex(columns=methods)
    defined = [m for m in methods if wide[m].notna().any()]
    if not defined:
        return None
    complete = wide[defined].dropna(axis=0, how="any")
    return None if complete.empty else complete


def leaderboard_records(board: pd.DataFrame) -> list[dict[str, Any]]:
    """The leaderboard as a list of JSON-ready objects (NaN → None, numpy → Python)."""
    records: list[dict[str, Any]] = []
    for rec in board.to_dict(orient="records"):
        clean: dict[str, Any] = {}
        for k, v in rec.items():
            if isinstance(v, np.generic):
                v = v.item()
            if v is pd.NA or (isinstance(v, float) and not math.isfinite(v)):
                v = None
            clean[str(k)] = v
        records.append(clean)
    return records
