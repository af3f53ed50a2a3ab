"""Two results folders side by side: per-method differences on the cells both hold.

``udbench compare A B`` answers "what changed between these two runs?" — a new udbench
version, another configuration, a re-generated task set. For every method label present in
both, the *common cells* are the task instances that both scored successfully **with the same
task content** (``task_sha256``; rows from before checksums were stored match by task id);
on them, per metric, the mean paired difference B − A with a percentile bootstrap interval
that resamples instances (:func:`udbench.evaluation.metrics.bootstrap_ci`). Pairing removes the
instance-to-instance variation that dominates unpaired intervals: two runs of the same
configuration differ by exactly 0.

A tuned run against a default one (``udbench run --tuned`` labels its cells ``<label>[tuned]``)
pairs ``<label>[tuned]`` in one folder with ``<label>`` in the other where the other has no
``<label>[tuned]`` of its own: the paired difference is then what tuning changed, per
instance (issue 36; :func:`udbench.analyses.tuned_compare.tuned_vs_untuned` compares the two
orderings).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from udbench._resampling import DEFAULT_CONFIDENCE, DEFAULT_N_RESAMPLES
from udbench._validation import UdbenchError, param_error
from udbench.evaluation.leaderboard import select_task_versions
from udbench.evaluation.metrics import bootstrap_ci

__all__ = ["COMPARE_METRICS", "compare_results"]

#: Metrics compared by default (per-instance columns of a results row).
COMPARE_METRICS: tuple[str, ...] = ("rho_eu_risk", "rho_au", "delta_ent_risk", "rmse")


#: Suffix of a tuned cell's label (:func:`udbench.tuning.records.tuned_configurer`).
_TUNED = "[tuned]"


def _label(df: pd.DataFrame) -> str:
    return "method_label" if "method_label" in df.columns else "method"


def _pairs(labels_a: set[str], labels_b: set[str]) -> list[tuple[str, str]]:
    """(label in A, label in B) pairs: the same label, and ``L`` with ``L[tuned]`` where the
    side with ``L`` has no ``L[tuned]`` (a default run against a tuned one, whose
    ``--fallback default`` cells may hold ``L`` too: that pair is kept beside)."""
    pairs = [(x, x) for x in labels_a & labels_b]
    # a tuned run's fallback cells keep the plain label: L[tuned] pairs with L all the same
    for b in labels_b - labels_a:
        a = b.removesuffix(_TUNED)
        if b.endswith(_TUNED) and a in labels_a:
            pairs.append((a, b))
    for a in labels_a - labels_b:
        b = a.removesuffix(_TUNED)
        if a.endswith(_TUNED) and b in labels_b:
            pairs.append((a, b))
    return sorted(pairs, key=lambda ab: (ab[1], ab[0]))


def _ok_rows(df: pd.DataFrame, name: str) -> pd.DataFrame:
    for col in ("task_id", "status"):
        if col not in df.columns:
            raise param_error("compare_results", name, f"have a {col!r} column", list(df.columns))
    df, _ = select_task_versions(df)
    ok = df[df["status"].astype(str) == "ok"].copy()
    ok["_version"] = (
        ok["task_sha256"].astype(object).where(ok["task_sha256"].notna(), "")
        if "task_sha256" in ok.columns
        else ""
    )
    ok["_method"] = ok[_label(ok)].astype(str)
    return ok


def _values(rows: pd.DataFrame, tasks: list[Any], metric: str) -> np.ndarray:
    """The metric on ``tasks`` as floats (NaN where the table lacks the column)."""
    if metric not in rows.columns:
        return np.full(len(tasks), np.nan)
    return pd.to_numeric(rows[metric].reindex(tasks), errors="coerce").to_numpy(dtype=float)


def compare_results(
    a: pd.DataFrame,
    b: pd.DataFrame,
    *,
    metrics: Sequence[str] = COMPARE_METRICS,
    confidence: float = DEFAULT_CONFIDENCE,
    n_resamples: int = DEFAULT_N_RESAMPLES,
) -> pd.DataFrame:
    """Per method, the mean paired difference B − A of each metric on the common cells.

    Parameters
    ----------
    a, b : DataFrame
        Results rows as stored by ``udbench run`` (:func:`udbench.evaluation.store.read_results`).
    metrics : sequence of str
        Per-instance metric columns to compare (default :data:`COMPARE_METRICS`); a metric a
        results table lacks counts as undefined.
    confidence : float, default 0.95
        Nominal coverage of the bootstrap intervals.
    n_resamples : int, default 2000
        Bootstrap replicates per interval.

    Returns
    -------
    DataFrame
        One row per method label present in both (or ``<label>[tuned]`` in one against
        ``<label>`` in the other, module docstring), sorted by B's label: ``method`` (B's
        label), ``method_a`` (A's), ``n_common`` (instances valid in both with the same
        task content), ``n_only_a``, ``n_only_b`` (valid in one only), ``n_changed_task``
        (same task id, other content: not compared), and per metric ``m``: ``m_a``,
        ``m_b`` (means on the common cells), ``m_diff`` (mean of B − A), ``m_low``,
        ``m_high`` (interval of the difference) and ``m_n`` (pairs where both values are
        finite). Differences are in the metric's units (ρ: unitless; RMSE: target units).

    Raises
    ------
    UdbenchError
        An empty table, missing columns, or no method label in common.
    """
    if a is None or len(a) == 0 or b is None or len(b) == 0:
        raise UdbenchError("compare_results: a results table is empty")
    ra, rb = _ok_rows(a, "a"), _ok_rows(b, "b")
    pairs = _pairs(set(a[_label(a)].astype(str)), set(b[_label(b)].astype(str)))
    if not pairs:
        raise param_error(
            "compare_results",
            "b",
            "share at least one method label with a",
            f"a has {sorted(set(a[_label(a)].astype(str)))}, "
            f"b has {sorted(set(b[_label(b)].astype(str)))}",
        )
    rows: list[dict[str, Any]] = []
    for method_a, method in pairs:
        ga = ra[ra["_method"] == method_a].drop_duplicates("task_id").set_index("task_id")
        gb = rb[rb["_method"] == method].drop_duplicates("task_id").set_index("task_id")
        both = ga.index.intersection(gb.index)
        version_a, version_b = ga["_version"].astype(str), gb["_version"].astype(str)
        same = [t for t in both if version_a[t] == version_b[t]]
        row: dict[str, Any] = {
            "method": method,
            "method_a": method_a,
            "n_common": len(same),
            "n_only_a": len(ga.index.difference(gb.index)),
            "n_only_b": len(gb.index.difference(ga.index)),
            "n_changed_task": len(both) - len(same),
        }
        for m in metrics:
            xa, xb = _values(ga, same, m), _values(gb, same, m)
            fin = np.isfinite(xa) & np.isfinite(xb)
            d = xb[fin] - xa[fin]
            est = low = high = math.nan
            if d.size:
                est = float(d.mean())
                if d.size >= 2 and np.ptp(d) > 0:
                    ci = bootstrap_ci(
                        d,
                        n_resamples=n_resamples,
                        confidence=confidence,
                        random_state=f"compare:{method}:{m}",
                    )
                    low, high = ci.low, ci.high
                elif d.size >= 2:  # every pair differs by the same amount: no spread
                    low = high = est
            row.update(
                {
                    f"{m}_a": float(xa[fin].mean()) if d.size else math.nan,
                    f"{m}_b": float(xb[fin].mean()) if d.size else math.nan,
                    f"{m}_diff": est,
                    f"{m}_low": low,
                    f"{m}_high": high,
                    f"{m}_n": int(d.size),
                }
            )
        rows.append(row)
    return pd.DataFrame(rows)
