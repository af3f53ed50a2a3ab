"""Report figures of the proxy metrics: critical-difference diagrams and calibration curves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udbench.evaluation.ranking import CriticalDifference
from udbench.report._figures import figure

__all__ = ["CALIBRATION_GUIDE", "calibration_figure", "cd_figure", "instance_predictions"]

#: How to read the calibration curves (printed under the figure).
CALIBRATION_GUIDE = (
    "Each curve plots, for every nominal level p, the fraction of noisy targets y that fall in "
    "the method's central p-interval of N(â, AU + EU) (observed) against p (expected). On the "
    "diagonal: calibrated. Below it: intervals too narrow (over-confident); above it: too wide "
    "(under-confident). The area between a curve and the diagonal is the miscalibration area "
    "of the leaderboard (--metrics miscal_area). Calibration says nothing about sharpness: a "
    "method that predicts the marginal spread everywhere is calibrated and uninformative."
)


def cd_figure(cd: CriticalDifference, label: str | None = None) -> Any:
    """The critical-difference diagram of Demšar (2006): mean ranks on an axis, CD bar, cliques.

    Methods sit at their mean rank (1 = best, left); a thick bar joins methods whose mean
    ranks differ by less than CD (not significantly different by Nemenyi's test).
    """
    k = len(cd.methods)
    half = (k + 1) // 2
    n_bars = len(cd.cliques)
    bar_gap = 0.45  # rows between clique bars (1 row = 0.25 in)
    first = 1.0 + n_bars * bar_gap  # first label row below the axis
    rows_total = first + half + 1.5
    fig = figure(figsize=(8.0, 0.25 * rows_total + 0.6))
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0 - 0.45 / (0.25 * rows_total + 0.6)))
    ax.axis("off")
    ax.set_xlim(1 - 0.45 * k, k + 0.45 * k)
    ax.set_ylim(-(first + half + 0.3), 1.6)
    ax.hlines(0, 1, k, color="black", lw=1)
    for r in range(1, k + 1):
        ax.vlines(r, 0, 0.25, color="black", lw=1)
        ax.text(r, 0.35, str(r), ha="center", va="bottom", fontsize="small")
    for i, (m, r) in enumerate(zip(cd.methods, cd.mean_ranks, strict=True)):
        left = i < half
        y = -(first + (i if left else k - 1 - i))
        x_end = 1 - 0.1 * k if left else k + 0.1 * k
        ax.plot([r, r, x_end], [0, y, y], color="#333333", lw=0.8)
        ax.text(
            x_end + (-0.05 if left else 0.05),
            y,
            f"{m} ({r:.2f})",
            ha="right" if left else "left",
            va="center",
            fontsize="small",
        )
    for j, clique in enumerate(cd.cliques):
        lo, hi = cd.mean_ranks[clique[0]], cd.mean_ranks[clique[-1]]
        y = -(0.6 + j * bar_gap)
        ax.hlines(y, lo - 0.05, hi + 0.05, color="#D55E00", lw=3)
    ax.hlines(1.2, 1, 1 + cd.cd, color="#0072B2", lw=2)
    ax.vlines([1, 1 + cd.cd], 1.1, 1.3, color="#0072B2", lw=1)
    ax.text(1 + cd.cd + 0.1, 1.2, f"CD = {cd.cd:.2f}", va="center", fontsize="small")
    p = "n/a" if not np.isfinite(cd.friedman_p) else f"{cd.friedman_p:.2g}"
    fig.suptitle(
        f"Mean rank by {label or cd.metric} over {cd.n_instances} instances "
        f"(1 = best; Friedman p = {p}; Nemenyi α = {cd.alpha:g})",
        fontsize="small",
    )
    return fig


def instance_predictions(
    results: pd.DataFrame, results_dir: Path | None
) -> tuple[str, list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]] | None:
    """The instance with kept predictions of the most methods: (task id, per method (label,
    mean, total variance, noisy y)), or None when no prediction was kept or the task file is
    gone. y is :func:`udbench.evaluation.proxies.noisy_targets` of the task, as scored."""
    from udbench.evaluation.proxies import noisy_targets
    from udbench.evaluation.store import ResultsStore
    from udbench.tasks import Task

    if results_dir is None or "cell_key" not in results.columns:
        return None
    store = ResultsStore(results_dir)
    ok = results[results["status"].astype(str) == "ok"]
    label = "method_label" if "method_label" in ok.columns else "method"
    kept = ok[[store.prediction_path(str(k)).is_file() for k in ok["cell_key"]]]
    if kept.empty or "task_path" not in kept.columns:
        return None
    task_id = str(kept.groupby("task_id").size().sort_values(ascending=False).index[0])
    rows = kept[kept["task_id"] == task_id]
    path = Path(str(rows["task_path"].iloc[0]))
    if not path.is_file():
        return None
    task = Task.load(path)
    y = noisy_targets(task.spec.task_id, task.f_eval, task.noise_var_eval)
    series = []
    for _, row in rows.iterrows():
        pred = store.read_predictions(str(row["cell_key"]))
        var = pred["aleatoric"].to_numpy() + pred["epistemic"].to_numpy()
        series.append((str(row[label]), pred["mean"].to_numpy(), var, y))
    return task_id, series


def calibration_figure(
    series: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]], task_id: str, order: list[str]
) -> Any:
    """Calibration curves (observed vs expected central-interval coverage), a panel per method.

    Small multiples in ``order`` (at most five a row), every method of ``series`` shown: a
    method whose predictive variance is zero somewhere (degenerate intervals) gets a panel
    that says so instead of a curve.
    """
    from udbench.evaluation.proxies import calibration_curve
    from udbench.report._figures import grid_shape

    rank_of = {m: i for i, m in enumerate(order)}
    series = sorted(series, key=lambda s: rank_of.get(s[0], len(order)))
    rows, cols = grid_shape(len(series))
    fig = figure(figsize=(2.3 * cols + 0.4, 2.5 * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True, sharey=True)
    for k, ax in enumerate(axes.flat):
        if k >= len(series):
            ax.set_visible(False)
            continue
        name, mean, var, y = series[k]
        ax.plot([0, 1], [0, 1], color="black", lw=0.8, ls="--")
        ax.fill_between([0, 1], [0, 1], [0, 0], color="#D55E00", alpha=0.05)
        zero = int(np.sum(~(var > 0)))
        if zero:
            ax.text(
                0.5,
                0.5,
                f"not drawn:\nAU + EU = 0 at\n{zero} of {var.size} points",
                ha="center",
                va="center",
                fontsize="x-small",
                transform=ax.transAxes,
            )
            ax.set_title(name, fontsize="small")
        else:
            p, obs = calibration_curve(mean, var, y)
            area = float(np.trapezoid(np.abs(obs - p), p))
            ax.plot(p, obs, lw=1.4, color="#0072B2")
            ax.set_title(f"{name}\narea {area:.3f}", fontsize="small")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
        ax.set_xticks([0, 0.5, 1])
        ax.set_yticks([0, 0.5, 1])
        ax.tick_params(labelsize="xx-small")
    fig.supxlabel("expected coverage p of the central interval", fontsize="small")
    fig.supylabel("observed fraction of y inside", fontsize="small")
    fig.suptitle(
        f"Calibration on instance {task_id} (dashed: calibrated; below it, shaded: over-confident)",
        fontsize="small",
    )
    return fig
