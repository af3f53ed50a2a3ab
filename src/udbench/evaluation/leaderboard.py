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
  (:func:`udbench.evaluation.metrics.bootstrap_ci`), and the number of instances behind it;
- ``n_valid`` / ``n_failed`` cells, ``mean_rank`` and ``rank``.

Rank: on every instance where all methods have a finite ρ(EU, EU*_risk), methods are ranked
(1 = highest ρ, ties share the average rank); ``mean_rank`` is the mean over those instances
(:func:`udbench.evaluation.metrics.mean_ranks`) and ``rank`` orders the mean ranks (1 = best,
ties share the lower rank). When no instance has every method, ``rank`` orders the mean ρ.
A method whose ranking metric is undefined on every instance (e.g. ρ(AU, AU*) for a method
with constant AU) gets no rank (``<NA>``; ``null`` in JSON) and is listed last.

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

from udbench._validation import UdbenchError, UdbenchWarning, check_choice, param_error

__all__ = [
    "HOMOSCEDASTIC",
    "LEADERBOARD_METRICS",
    "TaskVersionWarning",
    "leaderboard",
    "leaderboard_records",
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


def _label_column(df: pd.DataFrame) -> str:
    return "method_label" if "method_label" in df.columns else "method"


def _au_mask(df: pd.DataFrame) -> pd.Series:
    hetero = df["noise"].astype(str) != HOMOSCEDASTIC if "noise" in df else True
    const = (
        df["constant_aleatoric"].fillna(False).astype(bool)
        if "constant_aleatoric" in df
        else pd.Series(False, index=df.index)
    )
    return pd.Series(hetero, index=df.index) & ~const


def _interval(values: np.ndarray, seed: str, confidence: float, n_resamples: int):
    from udbench.evaluation.metrics import bootstrap_ci

    vals = values[np.isfinite(values)]
    if vals.size == 0:
        return math.nan, math.nan, math.nan, 0
    if vals.size == 1 or np.all(vals == vals[0]):
        v = float(vals.mean())
        return v, (math.nan if vals.size == 1 else v), (math.nan if vals.size == 1 else v), 1
    res = bootstrap_ci(vals, n_resamples=n_resamples, confidence=confidence, random_state=seed)
    return res.estimate, res.low, res.high, int(vals.size)


def leaderboard(
    results: pd.DataFrame,
    *,
    metrics: Sequence[str] = LEADERBOARD_METRICS,
    rank_by: str = "rho_eu_risk",
    confidence: float = 0.95,
    n_resamples: int = 2000,
) -> pd.DataFrame:
    """Summarise a results table into one leaderboard row per method configuration.

    Parameters
    ----------
    results : DataFrame
        Rows as stored by ``udbench run`` (:func:`udbench.evaluation.store.read_results`).
    metrics : sequence of str
        Per-instance metric columns to average (default :data:`LEADERBOARD_METRICS`).
    rank_by : str, default "rho_eu_risk"
        The metric methods are ranked by (higher is better, except ``rmse``/``nmse``).
    confidence : float, default 0.95
        Nominal coverage of the bootstrap intervals.
    n_resamples : int, default 2000
        Bootstrap replicates per interval.

    Returns
    -------
    DataFrame
        Sorted by rank; columns ``method, rank, mean_rank, n_valid, n_failed`` and, per
        metric ``m``, ``m`` (mean), ``m_low``, ``m_high`` (interval) and ``m_n`` (instances).

    Raises
    ------
    UdbenchError
        Empty table, missing columns, unknown ``rank_by``.
    """
    if results is None or len(results) == 0:
        raise UdbenchError("leaderboard: the results table is empty")
    for col in ("task_id", "status"):
        if col not in results.columns:
            raise param_error("leaderboard", "results", f"have a {col!r} column", list(results))
    check_choice("leaderboard", "rank_by", rank_by, list(metrics))
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
    # noise modes and heteroscedastic-AU methods only)
    rank_rows = ok & au_ok if rank_by in _AU_METRICS else ok
    board["mean_rank"] = _mean_ranks(df[rank_rows], label, rank_by, list(board["method"]))
    higher = rank_by not in ("rmse", "nmse")
    if board["mean_rank"].notna().any():
        key = board["mean_rank"]
    else:
        key = -board[rank_by] if higher else board[rank_by]
    # a method whose ranking metric is undefined everywhere (e.g. ρ(AU, AU*) of a
    # constant-AU method) is left unranked (rank <NA>), not put last
    board["rank"] = key.rank(method="min", na_option="keep").astype("Int64")
    board = board.sort_values(["rank", "method"], kind="stable").reset_index(drop=True)
    first = ["method", "rank", "mean_rank", "n_valid", "n_failed"]
    return board[first + [c for c in board.columns if c not in first]]


def _mean_ranks(ok: pd.DataFrame, label: str, metric: str, methods: list[str]) -> pd.Series:
    """Mean per-instance rank of each method over instances where every method has a value."""
    from udbench.evaluation.metrics import mean_ranks

    out = pd.Series(np.nan, index=range(len(methods)))
    if len(methods) < 2 or ok.empty:
        return out
    wide = ok.pivot_table(index="task_id", columns=label, values=metric, aggfunc="mean")
    wide = wide.reindex(columns=methods)
    # rank only the methods for which the metric is defined somewhere
    defined = [i for i, m in enumerate(methods) if wide[m].notna().any()]
    if len(defined) < 2:
        return out
    complete = wide.iloc[:, defined].dropna(axis=0, how="any")
    if complete.empty:
        return out
    ranks = mean_ranks(complete.to_numpy(), higher_is_better=metric not in ("rmse", "nmse"))
    out.iloc[defined] = pd.Series(np.asarray(ranks, dtype=float), index=out.index[defined])
    return out


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
