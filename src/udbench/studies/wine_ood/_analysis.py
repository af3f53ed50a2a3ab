"""The analysis of the wine OOD study: per-instance scores, the summary tables, Kendall's W,
the figures and the files written."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udbench._resampling import (
    DEFAULT_CONFIDENCE,
    DEFAULT_N_RESAMPLES,
    check_confidence,
    check_n_resamples,
)
from udbench._seeding import derive_seed, make_rng
from udbench._validation import UdbenchError, param_error
from udbench.studies._writer import StudyWriter
from udbench.studies.wine_ood._design import _COMPONENT, N_BINS, N_FOLDS
from udbench.studies.wine_ood._stats import (
    _boot_mean,
    _bootstrap_counts,
    _interval,
    _median_ratio,
    _summary,
    auroc,
    distance_match,
    knn_distance,
    mahalanobis_distance,
    partial_spearman,
    supervised_auroc,
)
from udbench.tasks import Task


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
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
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
    from udbench.evaluation.store import ResultsStore, read_results
    from udbench.tasks.discovery import find_task_files

    n_resamples = check_n_resamples(_COMPONENT, n_resamples)
    confidence = check_confidence(_COMPONENT, confidence)
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
    writer = StudyWriter(out, result.files)
    for name, tab in result.tables.items():
        index = not isinstance(tab.index, pd.RangeIndex)
        if name == "instances":
            writer.csv(name, tab, index=index)
        else:
            writer.table(name, tab, caption=_NOTES[name], label=f"tab:wine-ood-{name}", index=index)
    oracle_ratio = float(var_table["oracle_var_ratio_matched"].to_numpy(dtype=float)[0])
    writer.figure("auroc", _auroc_figure(table))
    writer.figure("eu_ratio", _ratio_figure(table, oracle_ratio))
    summary = {
        "n_instances": int(n_inst),
        "n_matched_mean": float(per_inst["n_matched"].mean()),
        "benchmark": str(benchmark) if benchmark is not None else "the study's own rows",
        "auroc": json.loads(table.reset_index().to_json(orient="records")),
        "kendall_w": json.loads(w_table.to_json(orient="records")),
        "variance_ratio": json.loads(var_table.reset_index().to_json(orient="records")),
    }
    writer.text("summary.json", json.dumps(summary, indent=1))
    return result
