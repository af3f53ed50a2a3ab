"""The tuned leaderboard beside the untuned one: means, ranks, Kendall's τ, rank moves.

:func:`tuned_vs_untuned` takes the results of a default run and of a ``run --tuned`` run of
the same tasks (labels ``<label>`` and ``<label>[tuned]``), ranks each with
:func:`udbench.evaluation.leaderboard.leaderboard` (the same means, percentile bootstrap
intervals over instances and ranking as ``udbench leaderboard``), pairs the methods by label
and reports Kendall's τ-b between the two orderings (:func:`udbench.evaluation.metrics.
kendall_tau` on the two rank vectors of the methods present in both; Kendall 1945) and the
methods whose rank moved most (issue 36, item 3).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from udbench._resampling import DEFAULT_CONFIDENCE, DEFAULT_N_RESAMPLES
from udbench._validation import UdbenchError, param_error
from udbench.analyses.proxies import MIN_METHODS
from udbench.evaluation.leaderboard import leaderboard
from udbench.evaluation.metrics import kendall_tau

__all__ = ["TUNED_SUFFIX", "TunedComparison", "tuned_vs_untuned"]

#: Suffix ``run --tuned`` gives a method's label (:func:`udbench.tuning.records.tuned_configurer`).
TUNED_SUFFIX = "[tuned]"


@dataclass
class TunedComparison:
    """The result of :func:`tuned_vs_untuned`.

    Attributes
    ----------
    table : DataFrame
        One row per method (label without ``[tuned]``), sorted by tuned rank (methods in one
        run only last): ``method``; per run ``r`` in (``untuned``, ``tuned``): ``mean_r``,
        ``low_r``, ``high_r`` (the ``rank_by`` mean and its interval), ``n_r`` (instances),
        ``rank_r`` (1 = best, among the methods both runs hold, so that a method in one run
        only moves no other method; NaN for that method); ``rank_move`` = ``rank_untuned −
        rank_tuned`` (positive: moved up when tuned; NaN where a run lacks the method).
    tau : float
        Kendall's τ-b between the two orderings of the methods present in both (NaN with
        ``tau_note`` when fewer than three are: with two, τ is ±1 whatever the data).
    tau_note : str or None
    moves : list of dict
        The ``top`` largest absolute rank moves, largest first (ties: by method name):
        ``{"method", "rank_untuned", "rank_tuned", "rank_move"}``.
    rank_by : str
        The metric of the orderings.
    taus : DataFrame or None
        Kendall's τ-b with its bootstrap interval, pooled and per factor level (columns
        ``factor, level, tau, tau_low, tau_high, n_methods, n_instances, note``): on the
        instances both runs hold, a method's mean over the scope's instances where both runs
        have it (:func:`udbench.analyses.proxies.scope_taus`, the τ of ``udbench transfer``);
        the pooled row can differ from ``tau`` where the runs hold different instances.
    undefined : list of dict
        Per (run, method) whose ``rank_by`` is undefined (NaN) on some of its ``ok`` rows,
        which its mean leaves out as ``udbench leaderboard`` does: ``{"run", "method",
        "n_undefined", "n_ok", "reason"}``, the reason the rows' ``metric_notes`` give most
        often (e.g. ``"EU is constant"``: a method whose EU does not vary over the pool has
        no ranking to correlate). A mean over fewer instances than the others is then
        visible beside the table, not only in ``n_<run>``.
    """

    table: pd.DataFrame
    tau: float
    tau_note: str | None
    moves: list[dict[str, Any]] = field(default_factory=list)
    rank_by: str = "rho_eu_risk"
    taus: pd.DataFrame | None = None
    undefined: list[dict[str, Any]] = field(default_factory=list)

    def markdown(self, digits: int = 3) -> str:
        """The table as Markdown, then τ and the largest moves (one line each)."""

        def num(v: Any) -> str:
            return (
                "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"
            )

        def rank(v: Any) -> str:
            return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:g}"

        lines = [
            f"| method | untuned {self.rank_by} [interval] | rank | tuned {self.rank_by} "
            "[interval] | rank | move |",
            "|---|---|---|---|---|---|",
        ]
        for r in self.table.itertuples(index=False):
            move = float(r.rank_move)  # type: ignore[arg-type]
            mv = "–" if math.isnan(move) else f"{move:+g}"
            lines.append(
                f"| {r.method} | {num(r.mean_untuned)} [{num(r.low_untuned)}, "
                f"{num(r.high_untuned)}] | {rank(r.rank_untuned)} | {num(r.mean_tuned)} "
                f"[{num(r.low_tuned)}, {num(r.high_tuned)}] | {rank(r.rank_tuned)} | {mv} |"
            )
        if self.undefined:
            told = "; ".join(
                f"{u['method']} {u['run']}: {u['n_undefined']} of {u['n_ok']}"
                + (f" ({u['reason']})" if u["reason"] else "")
                for u in self.undefined
            )
            lines += [
                "",
                f"{self.rank_by} is undefined on some instances, left out of the method's mean "
                f"(as `udbench leaderboard` does): {told}.",
            ]
        tau = num(self.tau) + (f" ({self.tau_note})" if self.tau_note else "")
        lines += ["", f"Kendall's τ-b between the orderings: {tau}"]
        if self.moves:
            moved = ", ".join(
                f"{m['method']} {rank(m['rank_untuned'])} → {rank(m['rank_tuned'])}"
                for m in self.moves
            )
            lines.append(f"Largest rank moves: {moved}")
        if self.taus is not None and len(self.taus):
            lines += ["", "| factor | level | τ-b [95 % interval] | methods | instances |"]
            lines.append("|---|---|---|---|---|")
            for t in self.taus.to_dict(orient="records"):
                value = f"{num(t['tau'])} [{num(t['tau_low'])}, {num(t['tau_high'])}]"
                if t["note"]:
                    value = f"– ({t['note']})"
                lines.append(
                    f"| {t['factor']} | {t['level']} | {value} | {t['n_methods']} | "
                    f"{t['n_instances']} |"
                )
        return "\n".join(lines)


def _untuned_label(label: str) -> str:
    """``label`` without the ``[tuned]`` suffix ``run --tuned`` gives it."""
    return label[: -len(TUNED_SUFFIX)] if label.endswith(TUNED_SUFFIX) else label


def _labels(results: pd.DataFrame, name: str) -> pd.Series:
    """The rows' method labels as the leaderboard names them, ``[tuned]`` removed."""
    col = "method_label" if "method_label" in results.columns else "method"
    labels = results[col].astype(str)
    return labels.map(_untuned_label) if name == "tuned" else labels


def _require_labels(results: pd.DataFrame, name: str) -> None:
    """Refuse rows without a method label (``method_label``, else ``method``): udbench
    writes one on every row, and a row without one cannot be paired across the runs."""
    col = "method_label" if "method_label" in results.columns else "method"
    if len(results) == 0:
        return  # refused as empty by its leaderboard
    if col not in results.columns:
        have = sorted(map(str, results.columns))
        raise param_error("tuned_vs_untuned", name, "have a 'method_label' column", have)
    blank = results[col].isna() | (results[col].astype(str).str.strip() == "")
    if blank.any():
        first = results.loc[blank].iloc[0]
        raise param_error(
            "tuned_vs_untuned",
            name,
            f"have a method label ({col!r}) on every row",
            f"{int(blank.sum())} row(s) without one (first: task {first.get('task_id')!r})",
        )


def _board(results: pd.DataFrame, name: str, rank_by: str, **kw: Any) -> pd.DataFrame:
    if results is None or len(results) == 0:
        raise UdbenchError(f"tuned_vs_untuned: the {name} results table is empty")
    board = leaderboard(results, metrics=[rank_by], rank_by=rank_by, **kw)
    out = pd.DataFrame(
        {
            "method": board["method"].astype(str),
            "mean": pd.to_numeric(board[rank_by], errors="coerce").astype(float),
            "low": pd.to_numeric(board[f"{rank_by}_low"], errors="coerce").astype(float),
            "high": pd.to_numeric(board[f"{rank_by}_high"], errors="coerce").astype(float),
            "n": board[f"{rank_by}_n"],
            "rank": pd.to_numeric(board["rank"], errors="coerce").astype(float),
        }
    )
    if name == "tuned":
        out["method"] = out["method"].map(_untuned_label)
    if out["method"].duplicated().any():
        dup = sorted(set(out["method"][out["method"].duplicated()]))
        raise param_error("tuned_vs_untuned", name, "hold one configuration per method label", dup)
    return out.set_index("method")


def tuned_vs_untuned(
    untuned: pd.DataFrame,
    tuned: pd.DataFrame,
    *,
    rank_by: str = "rho_eu_risk",
    confidence: float = DEFAULT_CONFIDENCE,
    n_resamples: int = DEFAULT_N_RESAMPLES,
    top: int = 5,
    factors: Sequence[str] = ("dataset", "noise", "coverage"),
) -> TunedComparison:
    """The tuned-vs-untuned comparison table of two results tables.

    Parameters
    ----------
    untuned, tuned : DataFrame
        Results rows as stored by ``udbench run`` and ``udbench run --tuned``
        (:func:`udbench.evaluation.store.read_results`); tuned labels may carry the
        ``[tuned]`` suffix, which is removed to pair the methods.
    rank_by : str, default "rho_eu_risk"
        The per-instance metric that orders the methods (as ``udbench leaderboard``: higher
        is better except ``rmse``/``nmse``).
    confidence, n_resamples
        Of the bootstrap intervals of the means (resampling instances).
    top : int, default 5
        How many of the largest rank moves to list.
    factors : sequence of str, default ("dataset", "noise", "coverage")
        Factors whose levels get a τ-b of their own (``TunedComparison.taus``), besides the
        pooled one; a factor the results lack is skipped.

    Returns
    -------
    TunedComparison

    Raises
    ------
    UdbenchError
        An empty table, a missing column, a row without a method label, two configurations
        of one method label in one table, or ``top < 0``.
    """
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise param_error("tuned_vs_untuned", "top", "be an integer >= 0", top)
    kw = {"confidence": confidence, "n_resamples": n_resamples}
    for name, frame in (("untuned", untuned), ("tuned", tuned)):
        if not isinstance(frame, pd.DataFrame):
            raise param_error(
                "tuned_vs_untuned", name, "be a results DataFrame (read_results(folder))", frame
            )
        _require_labels(frame, name)
    a = _board(untuned, "untuned", rank_by, **kw)
    b = _board(tuned, "tuned", rank_by, **kw)
    common = a.index.intersection(b.index)
    if len(common) and (len(common) < len(a) or len(common) < len(b)):
        # ranks among the methods both runs hold: a method in one run only would shift the
        # other methods' ranks in that run and show moves that tuning did not make
        ranked = {
            n: _board(f[_labels(f, n).isin(common)], n, rank_by, **kw)["rank"]
            for n, f in (("untuned", untuned), ("tuned", tuned))
        }
        a["rank"] = ranked["untuned"].reindex(a.index)
        b["rank"] = ranked["tuned"].reindex(b.index)
    table = a.add_suffix("_untuned").join(b.add_suffix("_tuned"), how="outer")
    table["rank_move"] = table["rank_untuned"] - table["rank_tuned"]
    table = table.reset_index().rename(columns={"index": "method"})
    table = table.sort_values(["rank_tuned", "rank_untuned", "method"], na_position="last")
    table = table.reset_index(drop=True)
    both = table.dropna(subset=["rank_untuned", "rank_tuned"])
    res = kendall_tau(both["rank_untuned"].to_numpy(float), both["rank_tuned"].to_numpy(float))
    tau, tau_note = float(res.value), res.reason
    if len(both) < MIN_METHODS:  # as the per-factor τ (udbench.analyses.proxies)
        tau = math.nan
        tau_note = f"needs >= {MIN_METHODS} methods with both values (have {len(both)})"
    order = both.assign(_abs=both["rank_move"].abs()).sort_values(
        ["_abs", "method"], ascending=[False, True]
    )
    moves: list[dict[str, Any]] = []
    for rec in order.head(top).to_dict(orient="records"):
        if float(rec["rank_move"]) != 0:
            moves.append(
                {
                    "method": str(rec["method"]),
                    "rank_untuned": float(rec["rank_untuned"]),
                    "rank_tuned": float(rec["rank_tuned"]),
                    "rank_move": float(rec["rank_move"]),
                }
            )
    taus = _taus(untuned, tuned, rank_by, confidence, n_resamples, factors)
    undefined = _undefined(untuned, "untuned", rank_by) + _undefined(tuned, "tuned", rank_by)
    return TunedComparison(table, tau, tau_note, moves, rank_by, taus, undefined)


def _undefined(results: pd.DataFrame, name: str, rank_by: str) -> list[dict[str, Any]]:
    """Per method of one run: its ``ok`` rows whose ``rank_by`` is NaN, with the reason the
    rows' ``metric_notes`` give most often (``"<metric>: <reason>; …"``); methods without
    such rows are not listed."""
    import warnings

    from udbench.evaluation.leaderboard import _AU_METRICS, _au_mask, select_task_versions

    if rank_by not in results.columns or "status" not in results.columns:
        return []
    with warnings.catch_warnings():  # the leaderboard has warned of mixed versions already
        warnings.simplefilter("ignore")
        results, _ = select_task_versions(results)  # the rows the leaderboard's means use
    ok = results[results["status"].astype(str) == "ok"]
    if rank_by in _AU_METRICS:  # as the leaderboard: heteroscedastic AU rows only
        ok = ok[_au_mask(ok)]
    ok = ok[ok["method_label" if "method_label" in ok.columns else "method"].notna()]
    finite = np.isfinite(pd.to_numeric(ok[rank_by], errors="coerce").astype(float))
    out: list[dict[str, Any]] = []
    labels = _labels(ok, name)
    for method in sorted(set(labels)):
        mine = labels == method
        bad = mine & ~finite
        if not bad.any():
            continue
        reasons: dict[str, int] = {}
        notes = ok.loc[bad, "metric_notes"] if "metric_notes" in ok.columns else []
        for text in notes:
            for part in str(text or "").split(";"):
                key, sep, why = part.strip().partition(":")
                if sep and key.strip() == rank_by:
                    reasons[why.strip()] = reasons.get(why.strip(), 0) + 1
        reason = max(sorted(reasons), key=lambda r: reasons[r]) if reasons else ""
        out.append(
            {
                "run": name,
                "method": method,
                "n_undefined": int(bad.sum()),
                "n_ok": int(mine.sum()),
                "reason": reason,
            }
        )
    return out


def _taus(
    untuned: pd.DataFrame,
    tuned: pd.DataFrame,
    rank_by: str,
    confidence: float,
    n_resamples: int,
    factors: Sequence[str],
) -> pd.DataFrame | None:
    """τ-b of the two orderings with bootstrap intervals, pooled and per factor level, on the
    instances and methods both runs hold (None when they share no instance)."""
    from udbench.analyses._common import prepare, resampling
    from udbench.analyses.proxies import factor_scopes, scope_taus  # the same layer

    if rank_by not in untuned.columns or rank_by not in tuned.columns:
        return None
    strip = tuned.copy()
    col = "method_label" if "method_label" in strip.columns else "method"
    strip[col] = _labels(tuned, "tuned")
    ok = {str(t) for t in untuned.loc[untuned["status"].astype(str) == "ok", "task_id"]}
    ok &= {str(t) for t in strip.loc[strip["status"].astype(str) == "ok", "task_id"]}
    if not ok:
        return None
    fu = prepare(untuned[untuned["task_id"].astype(str).isin(ok)], "tuned_vs_untuned")
    ft = prepare(strip[strip["task_id"].astype(str).isin(ok)], "tuned_vs_untuned")
    # τ-b of the two orderings is the same whichever direction is better (both flip)
    wu = fu.wide(rank_by)
    wt = (
        pd.DataFrame(ft.wide(rank_by), index=ft.instances.index, columns=ft.methods)
        .reindex(index=fu.instances.index, columns=fu.methods)
        .to_numpy(dtype=float)
    )
    boot = resampling(
        fu, n_resamples=n_resamples, confidence=confidence, component="tuned_vs_untuned"
    )
    rows = []
    present = [f for f in factors if f in untuned.columns and f in tuned.columns]
    for factor, level, sel in factor_scopes(fu, present):
        (out,) = scope_taus([(wt, wu)], sel, boot)
        rows.append({"factor": factor, "level": level, **out})
    return pd.DataFrame(rows)
