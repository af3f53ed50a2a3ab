"""Transfer tests: does a method ranking survive a misspecified oracle? (docs/transfer.md)

:func:`transfer_tables` compares the method ranking under the benchmark's oracle (the stored
results) with the ranking under an alternative oracle (the rows of
:func:`udbench.evaluation.transfer_rescoring.rescore_cells`), for each Spearman metric (default
ρ(EU, EU*_risk) and ρ(EU, EU*_var)), pooled and at every level of each factor (prior family,
noise mode, coverage, dataset):

- the mean metric of every method under each oracle, its rank under each (1 = best, ties
  averaged) and its **rank shift** = rank(alternative) − rank(correct) (positive: the method
  looks worse under the alternative oracle);
- **Kendall's τ-b** between the two orderings of the methods, with a basic bootstrap
  interval (2τ̂ − the replicate quantiles, clipped to [−1, 1]; Davison & Hinkley 1997, §5.2.1;
  docs/analyses.md, "Kendall's τ intervals") that resamples instances (within datasets, or
  whole datasets), recomputing both orderings on every replicate
  (:func:`udbench.analyses.proxies.scope_taus`, the code of the proxy-agreement table).

Both oracles are compared on the same cells: those rescored under the alternative
(``oracle_status == "ok"``). :func:`run_transfer` is the whole of ``udbench transfer``:
rescoring, tables and files.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from udbench._losses import LOSS_TABLE
from udbench._resampling import DEFAULT_CONFIDENCE, DEFAULT_N_RESAMPLES
from udbench._validation import UdbenchError, check_choice, param_error
from udbench.analyses._common import prepare, resampling
from udbench.analyses.proxies import factor_scopes, scope_taus
from udbench.analyses.tables import FACTORS
from udbench.evaluation.losses import LOSS_METRIC_KEYS, loss_column
from udbench.evaluation.transfer import (
    OWN_PREFIX,
    SCORED_KEYS,
    OracleSpec,
    parse_oracle,
    transfer_losses,
)
from udbench.evaluation.transfer_rescoring import TaskCallback, rescore_cells
from udbench.report.html import ReportSection

__all__ = [
    "TRANSFER_DIR",
    "TRANSFER_METRICS",
    "TransferResult",
    "run_transfer",
    "transfer_sections",
    "transfer_tables",
]

#: Spearman metrics compared by default (SPEC §10's EU criteria that depend on the posterior).
TRANSFER_METRICS: tuple[str, ...] = ("rho_eu_risk", "rho_eu_var")
#: Folder, inside the results folder, that ``udbench transfer`` writes to by default.
TRANSFER_DIR = "transfer"


def _ranks(means: np.ndarray) -> np.ndarray:
    """Rank 1 = highest mean, ties averaged; NaN where the mean is NaN."""
    out = np.full(means.shape, np.nan)
    ok = np.isfinite(means)
    if ok.any():
        out[ok] = stats.rankdata(-means[ok], method="average")
    return out


def transfer_tables(
    correct: pd.DataFrame,
    alternative: pd.DataFrame,
    *,
    metrics: Sequence[str] = TRANSFER_METRICS,
    factors: Sequence[str] = FACTORS,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Kendall's τ between the method orderings under two oracles, and every rank shift.

    Parameters
    ----------
    correct : DataFrame
        Results rows scored against the task's own oracle (``udbench run``).
    alternative : DataFrame
        The same cells scored against the alternative oracle, keyed by ``cell_key`` (rows
        with ``oracle_status`` other than ``"ok"``, or ``status`` not ``"ok"``, are left out,
        and so are their cells under the correct oracle).
    metrics : sequence of str, default :data:`TRANSFER_METRICS`
        Metric columns (higher is better) that order the methods.
    factors : sequence of str, default :data:`udbench.analyses.tables.FACTORS`
        Factors with a comparison per level, besides the pooled one (``factor = "all"``).
    bootstrap_unit, n_resamples, confidence, random_state
        The bootstrap of :func:`udbench.analyses._common.resampling` (instances within
        datasets, or whole datasets).

    Returns
    -------
    tau : DataFrame
        One row per (metric, factor, level): ``metric, factor, level, tau, tau_low,
        tau_high, n_methods, n_instances, note``.
    ranks : DataFrame
        One row per (metric, factor, level, method): ``metric, factor, level, method,
        mean_correct, mean_alternative, rank_correct, rank_alternative, rank_shift,
        n_cells``; means over the cells where the metric is defined under both oracles.

    Raises
    ------
    UdbenchError
        Missing ``cell_key``, no cell ok under both oracles, an unknown factor or metric,
        bad bootstrap settings.
    """
    name = "transfer_tables"
    for df, what in ((correct, "correct"), (alternative, "alternative")):
        if "cell_key" not in df.columns:
            raise param_error(name, what, "have a 'cell_key' column", list(df.columns)[:8])
    for f in factors:
        check_choice(name, "factors", f, list(FACTORS))
    for m in metrics:
        if m not in correct.columns:
            raise param_error(name, "metrics", "name columns of the results", m)
    alt_ok = alternative["status"].astype(str) == "ok"
    if "oracle_status" in alternative.columns:
        alt_ok &= alternative["oracle_status"].astype(str) == "ok"
    keys = set(alternative.loc[alt_ok, "cell_key"].astype(str))
    keys &= set(correct.loc[correct["status"].astype(str) == "ok", "cell_key"].astype(str))
    if not keys:
        raise UdbenchError(f"{name}: no cell is scored under both oracles")
    frame_c = prepare(correct[correct["cell_key"].astype(str).isin(keys)], name)
    frame_a = prepare(alternative[alternative["cell_key"].astype(str).isin(keys)], name)
    if list(frame_c.instances.index) != list(frame_a.instances.index) or (
        frame_c.methods != frame_a.methods
    ):  # pragma: no cover - the same cells give the same instances and methods
        raise UdbenchError(f"{name}: the two tables hold different instances or methods")
    boot = resampling(
        frame_c,
        unit=bootstrap_unit,
        n_resamples=n_resamples,
        confidence=confidence,
        random_state=random_state,
        component=name,
    )
    scopes = factor_scopes(frame_c, factors)
    tau_rows: list[dict[str, Any]] = []
    rank_rows: list[dict[str, Any]] = []
    for metric in metrics:
        wc, wa = frame_c.wide(metric), frame_a.wide(metric)
        for factor, level, sel in scopes:
            (out,) = scope_taus([(wa, wc)], sel, boot)
            tau_rows.append({"metric": metric, "factor": factor, "level": level, **out})
            rank_rows += _rank_rows(frame_c.methods, wc, wa, sel, metric, factor, level)
    return pd.DataFrame(tau_rows), pd.DataFrame(rank_rows)


def _rank_rows(
    methods: list[str],
    wc: np.ndarray,
    wa: np.ndarray,
    sel: np.ndarray,
    metric: str,
    factor: str,
    level: str,
) -> list[dict[str, Any]]:
    joint = np.isfinite(wc[sel]) & np.isfinite(wa[sel])
    n = joint.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mc = np.where(joint, wc[sel], 0.0).sum(axis=0) / n
        ma = np.where(joint, wa[sel], 0.0).sum(axis=0) / n
    mc[n == 0] = np.nan
    ma[n == 0] = np.nan
    rc, ra = _ranks(mc), _ranks(ma)
    return [
        {
            "metric": metric,
            "factor": factor,
            "level": level,
            "method": m,
            "mean_correct": float(mc[j]),
            "mean_alternative": float(ma[j]),
            "rank_correct": float(rc[j]),
            "rank_alternative": float(ra[j]),
            "rank_shift": float(ra[j] - rc[j]),
            "n_cells": int(n[j]),
        }
        for j, m in enumerate(methods)
    ]


# ------------------------------------------------------------------------------ the job
@dataclass
class TransferResult:
    """What :func:`run_transfer` computed and wrote, per oracle (keyed by its spec text).

    Attributes
    ----------
    cells : dict of str to DataFrame
        The rescored rows (:func:`udbench.evaluation.transfer_rescoring.rescore_cells`).
    tau, ranks : dict of str to DataFrame
        The tables of :func:`transfer_tables` (with a leading ``oracle`` column).
    folders : dict of str to Path
        Where each oracle's files are.
    """

    cells: dict[str, pd.DataFrame] = field(default_factory=dict)
    tau: dict[str, pd.DataFrame] = field(default_factory=dict)
    ranks: dict[str, pd.DataFrame] = field(default_factory=dict)
    folders: dict[str, Path] = field(default_factory=dict)


def run_transfer(
    results: str | os.PathLike[str],
    oracles: Sequence[str | OracleSpec],
    *,
    out: str | os.PathLike[str] | None = None,
    task_dirs: Sequence[str | os.PathLike[str]] = (),
    data_dir: str | os.PathLike[str] | None = None,
    metrics: Sequence[str] = TRANSFER_METRICS,
    factors: Sequence[str] = FACTORS,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    loss: str = "squared",
    on_task: TaskCallback | None = None,
    fit_settings: dict[str, int] | None = None,
) -> TransferResult:
    """``udbench transfer``: rescore the kept predictions under each oracle and compare.

    For each oracle, writes to ``OUT/<slug>/`` (``OUT`` default ``RESULTS/transfer``):
    ``cells.parquet`` (the rescored rows, keyed like the results by ``cell_key``),
    ``tau.csv`` / ``tau.parquet`` and ``ranks.csv`` / ``ranks.parquet`` (the tables of
    :func:`transfer_tables`) and ``oracles/`` (the per-task moments, reused by a re-run).

    Under another ``loss`` (``crps``, ``log``) the four tables go to ``OUT/<slug>/<loss>/``
    (the moments cache stays shared), the metrics are the loss's columns
    (``rho_eu_risk_crps``, …), and the "correct" ordering is the one against the task's own
    posterior moments by the same Gaussian closed form as the oracle's (columns
    ``own_<key>_<loss>`` of the rescored rows; :mod:`udbench.evaluation.transfer`), not the
    draw-based columns of ``udbench score --loss``, so that the identity oracle gives τ = 1
    exactly.

    Parameters
    ----------
    results : str or Path
        A results folder of ``udbench run --keep-predictions``.
    oracles : sequence of str or OracleSpec
        ``gp:KERNEL``, ``gp:prior``, ``family:FAMILY`` (:func:`parse_oracle`).
    out : str or Path, optional
        Output folder (default ``RESULTS/transfer``).
    task_dirs, data_dir, loss, on_task, fit_settings
        As in :func:`udbench.evaluation.transfer_rescoring.rescore_cells`.
    metrics, factors, bootstrap_unit, n_resamples, confidence, random_state
        As in :func:`transfer_tables`; under another loss ``metrics`` are the squared-loss
        names (keys of :data:`udbench.evaluation.losses.LOSS_METRIC_KEYS`), compared as
        ``<metric>_<loss>``.

    Returns
    -------
    TransferResult

    Raises
    ------
    UdbenchError
        ``results`` not a results folder; no oracle; a bad oracle spec; no kept
        predictions at all; bad table settings.
    """
    from udbench.evaluation.leaderboard import select_task_versions
    from udbench.evaluation.store import read_results

    name = "udbench transfer"
    root = Path(results)
    if not root.is_dir():
        raise param_error(name, "RESULTS", "be a results folder (udbench run --out)", str(root))
    specs = [o if isinstance(o, OracleSpec) else parse_oracle(o, name) for o in oracles]
    if not specs:
        raise param_error(name, "--oracle", "be given at least once", [])
    df, _ = select_task_versions(read_results(root))
    df = df[df["status"].astype(str) == "ok"]
    if df.empty:
        raise UdbenchError(f"{name}: {str(root)!r} has no ok cell")
    check_choice(name, "--loss", loss, transfer_losses())
    base = LOSS_TABLE[loss].base  # its columns carry no suffix; its tables no loss folder
    for m in metrics:
        if not base:
            if m not in LOSS_METRIC_KEYS:
                raise param_error(
                    name, "--metric", f"name a metric scored under {loss} (LOSS_METRIC_KEYS)", m
                )
        elif m not in SCORED_KEYS:  # a column that is not rescored would give τ = 1
            raise param_error(
                name, "--metric", "name a metric column that transfer rescores (SCORED_KEYS)", m
            )
        elif m not in df.columns:
            raise param_error(name, "--metric", "name a metric column of the results", m)
    out_root = Path(out) if out is not None else root / TRANSFER_DIR
    res = TransferResult()
    for spec in specs:
        folder = out_root / spec.slug
        folder.mkdir(parents=True, exist_ok=True)
        cells = rescore_cells(
            df,
            root,
            spec,
            cache_dir=folder / "oracles",
            task_dirs=task_dirs,
            data_dir=data_dir,
            loss=loss,
            on_task=on_task,
            fit_settings=fit_settings,
        )
        if (cells["oracle_status"] == "no-predictions").all():
            raise UdbenchError(
                f"{name}: no cell of {str(root)!r} kept its predictions; run it with "
                "'udbench run --keep-predictions' (a folder written by 'udbench campaign "
                "summarise runs --results' takes them from the campaign's --work folder, on "
                "the machine that ran its cells)"
            )
        tables_dir = folder if base else folder / loss
        tables_dir.mkdir(parents=True, exist_ok=True)
        _write_parquet(cells, tables_dir / "cells.parquet")
        res.cells[spec.text] = cells
        res.folders[spec.text] = tables_dir
        if not (cells["oracle_status"] == "ok").any():
            first = cells["oracle_error"].dropna().astype(str)
            why = first.iloc[0] if len(first) else "unknown"
            raise UdbenchError(f"{name}: no cell could be rescored under {spec.text}: {why}")
        correct, compared = df, list(metrics)
        if not base:
            compared = [loss_column(m, loss) for m in metrics]
            own = cells.set_index(cells["cell_key"].astype(str))
            correct = df.copy()
            keys = correct["cell_key"].astype(str)
            for col in compared:
                correct[col] = keys.map(own[OWN_PREFIX + col]).astype(float)
        tau, ranks = transfer_tables(
            correct,
            cells,
            metrics=compared,
            factors=factors,
            bootstrap_unit=bootstrap_unit,
            n_resamples=n_resamples,
            confidence=confidence,
            random_state=random_state,
        )
        tau.insert(0, "oracle", spec.text)
        ranks.insert(0, "oracle", spec.text)
        for table, stem in ((tau, "tau"), (ranks, "ranks")):
            _write_parquet(table, tables_dir / f"{stem}.parquet")
            table.to_csv(tables_dir / f"{stem}.csv", index=False)
        res.tau[spec.text], res.ranks[spec.text] = tau, ranks
    return res


def _write_parquet(df: pd.DataFrame, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)


# ------------------------------------------------------------------------------ report
def _fmt(v: Any, digits: int = 3) -> str:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return "–"
    return "–" if not np.isfinite(x) else f"{x:.{digits}f}"


def transfer_sections(results_dir: str | os.PathLike[str]) -> list[ReportSection]:
    """Report section of the transfer tests found under ``RESULTS/transfer`` (none if absent).

    One table per oracle: pooled τ per metric with its interval, and the methods with the
    largest absolute rank shift (pooled, first metric), with how to read them.
    """
    folder = Path(results_dir) / TRANSFER_DIR
    taus = sorted(folder.glob("*/tau.parquet")) if folder.is_dir() else []
    if not taus:
        return []
    parts = [
        "<p class='note'>Each method's stored predictions rescored against an alternative "
        "reference posterior conditioned on the same training sample with the same known "
        "noise (<code>udbench transfer</code>, docs/transfer.md). τ: Kendall's τ-b between "
        "the method orderings by the mean metric under the task's own oracle and under the "
        "alternative, with a 95 % bootstrap interval over instances; rank shift = rank "
        "under the alternative − rank under the correct oracle (positive: looks worse).</p>"
    ]
    for path in taus:
        try:
            tau = pd.read_parquet(path)
            ranks = pd.read_parquet(path.with_name("ranks.parquet"))
        except (OSError, ValueError) as err:
            parts.append(f"<p class='note'>{html.escape(str(path))}: unreadable ({err})</p>")
            continue
        oracle = str(tau["oracle"].iloc[0]) if len(tau) else path.parent.name
        pooled = tau[tau["factor"] == "all"]
        rows = "".join(
            f"<tr><td>{html.escape(str(r['metric']))}</td><td>{_fmt(r['tau'])}</td>"
            f"<td>[{_fmt(r['tau_low'])}, {_fmt(r['tau_high'])}]</td>"
            f"<td>{int(r['n_methods'])}</td><td>{int(r['n_instances'])}</td></tr>"
            for r in pooled.to_dict(orient="records")
        )
        levels = tau[(tau["factor"] != "all") & tau["tau"].notna()]
        first_metric = (
            levels[levels["metric"] == levels["metric"].iloc[0]] if len(levels) else levels
        )
        lv = ", ".join(
            html.escape(f"{r['factor']}={r['level']}") + f": {_fmt(r['tau'], 2)}"
            for r in first_metric.to_dict(orient="records")
        )
        first = ranks[(ranks["factor"] == "all") & (ranks["metric"] == ranks["metric"].iloc[0])]
        first = first.reindex(first["rank_shift"].abs().sort_values(ascending=False).index)
        shifts = "".join(
            f"<tr><td>{html.escape(str(r['method']))}</td><td>{_fmt(r['mean_correct'])}</td>"
            f"<td>{_fmt(r['mean_alternative'])}</td><td>{_fmt(r['rank_correct'], 1)}</td>"
            f"<td>{_fmt(r['rank_alternative'], 1)}</td><td>{_fmt(r['rank_shift'], 1)}</td></tr>"
            for r in first.head(10).to_dict(orient="records")
        )
        parts.append(
            f"<h3>Alternative oracle <code>{html.escape(oracle)}</code></h3>"
            "<table><tr><th>metric</th><th>τ (pooled)</th><th>95 % interval</th>"
            f"<th>methods</th><th>instances</th></tr>{rows}</table>"
            + (f"<p class='note'>τ per factor level: {lv}</p>" if lv else "")
            + "<table><tr><th>method</th><th>mean (correct)</th><th>mean (alternative)</th>"
            "<th>rank (correct)</th><th>rank (alternative)</th><th>shift</th></tr>"
            f"{shifts}</table>"
        )
    return [ReportSection("Transfer: rankings under alternative oracles", "".join(parts))]
