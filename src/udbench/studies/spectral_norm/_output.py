"""The written analysis of the spectral-normalisation study: tables, figures, ``study.html``."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udbench._resampling import DEFAULT_N_RESAMPLES
from udbench.studies._writer import HtmlReport, StudyWriter
from udbench.studies.spectral_norm._arms import ARMS, DELTAS
from udbench.studies.spectral_norm._stats import (
    depth_table,
    paired_differences,
    paired_table,
    preservation_table,
    regression_table,
)


# --------------------------------------------------------------------------- written out
@dataclass
class Analysis:
    """The study's tables (name -> DataFrame) and every file written."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    html: Path | None = None


_TITLES: dict[str, str] = {
    "preservation": "Local distance preservation per arm",
    "paired": "Paired differences arm − plain",
    "regression": "Regression of Δρ (dataset fixed effects)",
    "depth": "Depth associations (within-dataset Spearman)",
    "pairs": "Paired differences per instance",
}


def _preservation_figure(t: pd.DataFrame) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 0.6 + 0.45 * max(1, t["method"].nunique())), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    methods = sorted(t["method"].unique())
    for k, arm in enumerate(ARMS):
        s = t[t["arm"] == arm].set_index("method").reindex(methods)
        yv = np.arange(len(methods)) + (k - 1) * 0.22
        est = s["dist_preservation"].to_numpy(dtype=float)
        err = np.vstack(
            [
                est - s["dist_preservation_low"].to_numpy(dtype=float),
                s["dist_preservation_high"].to_numpy(dtype=float) - est,
            ]
        )
        ax.errorbar(est, yv, xerr=np.nan_to_num(err).clip(0), fmt="osD"[k], label=arm, capsize=2)
    ax.set_yticks(np.arange(len(methods)), methods)
    ax.set_xlabel("local distance preservation (mean Spearman ρ, k = 10)")
    fig.legend(loc="outside right upper")
    return fig


def _paired_figure(t: pd.DataFrame) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    methods = list(dict.fromkeys(t["method"]))
    fig = Figure(figsize=(11.0, 0.9 + 0.45 * len(methods)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(DELTAS), sharey=True)
    for ax, (q, label) in zip(axes, DELTAS, strict=True):
        for k, arm in enumerate(ARMS[1:]):
            s = t[t["arm"] == arm].set_index("method").reindex(methods)
            est = s[f"delta_{q}"].to_numpy(dtype=float)
            err = np.vstack(
                [
                    est - s[f"delta_{q}_low"].to_numpy(dtype=float),
                    s[f"delta_{q}_high"].to_numpy(dtype=float) - est,
                ]
            )
            yv = np.arange(len(methods)) + (k - 0.5) * 0.3
            ax.errorbar(est, yv, xerr=np.nan_to_num(err).clip(0), fmt="sD"[k], label=arm, capsize=2)
        ax.axvline(0.0, color="#777777", lw=0.8, ls="--")
        ax.set_xlabel(label)
    axes[0].set_yticks(np.arange(len(methods)), methods)
    fig.legend(*axes[-1].get_legend_handles_labels(), loc="outside right upper")
    return fig


def analyse(
    results: pd.DataFrame,
    out_dir: str | os.PathLike[str],
    *,
    n_resamples: int = DEFAULT_N_RESAMPLES,
    random_state: int | str = 0,
) -> Analysis:
    """Every table of the study as CSV + LaTeX, two figures as PNG + SVG, ``study.html``.

    Tables: ``preservation`` (:func:`preservation_table`), ``paired`` (:func:`paired_table`),
    ``regression`` (:func:`regression_table`), ``depth`` (:func:`depth_table`) and ``pairs``
    (:func:`paired_differences`, CSV only). Figures: ``preservation`` and ``paired``.

    Raises
    ------
    UdbenchError
        No ok study rows, no pair, a broken pairing, bad ``n_resamples``.
    """
    pairs = paired_differences(results)
    t = {
        "preservation": preservation_table(
            results, n_resamples=n_resamples, random_state=random_state
        ),
        "paired": paired_table(pairs, n_resamples=n_resamples, random_state=random_state),
        "regression": regression_table(pairs, n_resamples=n_resamples, random_state=random_state),
        "depth": depth_table(pairs, n_resamples=n_resamples, random_state=random_state),
    }
    res = Analysis(tables={**t, "pairs": pairs})
    writer = StudyWriter(out_dir, res.files)
    setting = (
        f"95% percentile intervals, {n_resamples} bootstrap replicates resampling datasets; "
        f"{pairs['task_id'].nunique()} instances, {pairs['dataset'].nunique()} datasets, "
        f"methods {', '.join(sorted(pairs['method'].unique()))}."
    )
    writer.csv("pairs", pairs)
    report = HtmlReport(
        "udbench study spectral-norm", "Spectral-normalisation study (paper D.4)", setting
    )
    figures = {"preservation": _preservation_figure, "paired": _paired_figure}
    for name, table in t.items():
        writer.table(name, table, caption=f"{_TITLES[name]}. {setting}", label=f"tab:sn-{name}")
        drawn = name in figures and not table.empty
        if drawn:
            writer.figure(name, figures[name](table))
        report.section(_TITLES[name], table, figure=name if drawn else None)
    res.html = writer.html("study.html", report)
    return res
