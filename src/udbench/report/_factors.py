"""Report sections that break the results down by factor and show what ρ means on one instance.

- :func:`factor_tables`: mean ρ(EU, EU*_risk) per method at every level of each task factor
  with more than one level (dataset, oracle family, noise mode, coverage — balanced and ood
  apart), with the number of instances behind each mean.
- :func:`shell_errorbars`: the per-shell means with 95 % normal intervals (mean ± 1.96 SE over
  instances), so a difference between shells can be read against its noise.
- :func:`eu_scatter`: for one instance, every method's EU against the oracle EU*_risk, on
  log10 axes and as ranks (what a Spearman ρ of 0.3 or 0.8 looks like), one panel pair per
  method. Needs the per-point predictions (``udbench run --keep-predictions``) and the task
  files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from udbench.report._figures import figure

__all__ = ["FACTORS", "eu_scatter", "factor_tables", "shell_errorbars"]

#: Task factors the report breaks the results down by (results column, heading).
FACTORS: tuple[tuple[str, str], ...] = (
    ("dataset", "dataset"),
    ("family", "oracle prior family"),
    ("noise", "noise mode"),
    ("coverage", "coverage (balanced vs ood)"),
)


def _label(df: pd.DataFrame) -> str:
    return "method_label" if "method_label" in df.columns else "method"


def factor_tables(results: pd.DataFrame, order: list[str]) -> list[tuple[str, pd.DataFrame]]:
    """Per factor with ≥ 2 levels: methods × levels of mean ρ(EU, EU*_risk) as ``"0.512 (n)"``.

    Parameters
    ----------
    results : DataFrame
        Results rows; only ``status == "ok"`` rows count.
    order : list of str
        Method labels in the order to list them (the leaderboard's rank order).

    Returns
    -------
    list of (heading, DataFrame)
        Text cells, index = method label, columns = the factor's levels.
    """
    ok = results[results["status"].astype(str) == "ok"]
    label = _label(ok)
    out: list[tuple[str, pd.DataFrame]] = []
    for col, heading in FACTORS:
        if col not in ok.columns or ok[col].nunique() < 2:
            continue
        values = pd.to_numeric(ok["rho_eu_risk"], errors="coerce")
        frame = pd.DataFrame(
            {"m": ok[label].astype(str), "level": ok[col].astype(str), "v": values}
        )
        mean = frame.pivot_table(index="m", columns="level", values="v", aggfunc="mean")
        count = frame.pivot_table(index="m", columns="level", values="v", aggfunc="count")
        mean = mean.reindex([m for m in order if m in mean.index])
        count = count.reindex(mean.index)
        text = mean.copy().astype(object)
        values_arr, counts_arr = mean.to_numpy(dtype=float), count.to_numpy(dtype=float)
        for i, r in enumerate(mean.index):
            for j, c in enumerate(mean.columns):
                v, n = values_arr[i, j], counts_arr[i, j]
                text.at[r, c] = "–" if not np.isfinite(v) else f"{v:.3f} ({int(n)})"
        text.index.name = "method"
        out.append((heading, text))
    return out


def shell_errorbars(results: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Long table: method, shell, mean ρ(EU, EU*_risk) and half-width of a 95 % interval.

    The interval is mean ± 1.96·SD/√n over the method's valid instances (normal
    approximation; NaN half-width for n < 2).
    """
    ok = results[results["status"].astype(str) == "ok"]
    label = _label(ok)
    rows = []
    for m in order:
        g = ok[ok[label].astype(str) == m]
        for s in range(5):
            col = f"rho_eu_risk_shell{s}"
            if col not in g.columns:
                continue
            v = pd.to_numeric(g[col], errors="coerce").to_numpy(dtype=float)
            v = v[np.isfinite(v)]
            if v.size == 0:
                continue
            half = 1.96 * v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else np.nan
            rows.append({"method": m, "shell": s, "mean": v.mean(), "half": half, "n": v.size})
    return pd.DataFrame(rows, columns=["method", "shell", "mean", "half", "n"])


def _load_instance(results: pd.DataFrame, results_dir: Path) -> tuple[str, list[Any]] | None:
    """The instance with kept predictions of the most methods, and (label, EU, EU*) per method."""
    from udbench.evaluation.store import ResultsStore
    from udbench.risk import oracle_targets
    from udbench.tasks import Task

    store = ResultsStore(results_dir)
    ok = results[results["status"].astype(str) == "ok"]
    label = _label(ok)
    kept = ok[[store.prediction_path(str(k)).is_file() for k in ok["cell_key"]]]
    if kept.empty:
        return None
    task_id = str(kept.groupby("task_id").size().sort_values(ascending=False).index[0])
    rows = kept[kept["task_id"] == task_id]
    path = Path(str(rows["task_path"].iloc[0]))
    if not path.is_file():
        return None
    task = Task.load(path)
    series = []
    for _, row in rows.iterrows():
        pred = store.read_predictions(str(row["cell_key"]))
        targets = oracle_targets(
            pred["mean"].to_numpy(),
            np.asarray(task.post_mean),
            np.asarray(task.post_var),
            np.asarray(task.noise_var_eval),
            np.asarray(task.f_eval),
        )
        series.append((str(row[label]), pred["epistemic"].to_numpy(), targets.eu_risk))
    return task_id, series


def eu_scatter(results: pd.DataFrame, results_dir: Path | None, order: list[str]) -> Any:
    """Figure of EU against EU*_risk on one instance, or None with no kept predictions.

    Every method with a valid kept prediction on the instance gets its panels (small
    multiples, at most five methods a row, in rank order): on top its EU against EU*_risk
    (log10 of both, so a range of less than a decade gets readable ticks too), below their
    ranks.

    Returns
    -------
    (Figure, str, list of str) or None
        The matplotlib figure, the instance's task id and the methods shown (in order).
    """
    from matplotlib.ticker import MaxNLocator

    from udbench.report._figures import grid_shape

    if results_dir is None or "cell_key" not in results.columns:
        return None
    loaded = _load_instance(results, results_dir)
    if loaded is None:
        return None
    task_id, series = loaded
    rank_of = {m: i for i, m in enumerate(order)}
    series = sorted(series, key=lambda s: rank_of.get(s[0], len(order)))
    rows, cols = grid_shape(len(series))
    fig = figure(figsize=(2.5 * cols + 0.4, 4.6 * rows + 0.5), layout="constrained")
    grid = fig.add_gridspec(2 * rows, cols)
    floor = np.finfo(float).tiny
    for j, (name, eu, eu_star) in enumerate(series):
        r, c = divmod(j, cols)
        rho = stats.spearmanr(eu, eu_star).statistic
        top = fig.add_subplot(grid[2 * r, c])
        top.plot(
            np.log10(np.maximum(eu_star, floor)),
            np.log10(np.maximum(eu, floor)),
            ".",
            ms=2,
            alpha=0.5,
        )
        top.set_title(f"{name}\nρ = {rho:.2f}", fontsize="small")
        top.set_xlabel("log10 EU*_risk", fontsize="x-small")
        if c == 0:
            top.set_ylabel("log10 EU (method)", fontsize="x-small")
        bottom = fig.add_subplot(grid[2 * r + 1, c])
        bottom.plot(stats.rankdata(eu_star), stats.rankdata(eu), ".", ms=2, alpha=0.5)
        bottom.set_xlabel("rank of EU*_risk", fontsize="x-small")
        if c == 0:
            bottom.set_ylabel("rank of EU", fontsize="x-small")
        for ax in (top, bottom):
            ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
            ax.yaxis.set_major_locator(MaxNLocator(nbins=4))
            ax.tick_params(which="both", labelsize="xx-small")
    fig.suptitle(f"EU against the oracle on one instance: {task_id}", fontsize="small")
    return fig, task_id, [s[0] for s in series]
