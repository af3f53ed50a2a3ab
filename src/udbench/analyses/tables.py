"""The paper's analyses of a results frame as tables (SPEC §10; paper Section 5, D.1, D.2).

Every public function takes the long-format results frame of ``udbench run``
(:func:`udbench.evaluation.store.read_results`) and returns a :class:`pandas.DataFrame`;
intervals are percentile bootstrap intervals (:mod:`udbench.analyses._common`: instances
resampled within datasets, or whole datasets, ``bootstrap_unit``), estimates are the
statistic on the full data. Common keyword arguments:

bootstrap_unit : {"instance", "dataset"}, default "instance"
    Resample instances within every dataset, or whole datasets.
n_resamples : int, default 2000
    Bootstrap replicates.
confidence : float, default 0.95
    Nominal coverage of the intervals.
random_state : int or str, default 0
    Names the random stream of the resampling (same value, same intervals).

Columns named ``<stat>_low`` / ``<stat>_high`` hold the interval of ``<stat>`` and
``<stat>_n`` the number of instances behind it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from udbench._resampling import DEFAULT_CONFIDENCE, DEFAULT_N_RESAMPLES
from udbench._validation import check_choice
from udbench.analyses._common import (
    CRITERIA,
    EU_TARGETS,
    FAMILY_NAMES,
    MATCHED_PRIOR,
    Frame,
    Resampling,
    analysis_context,
    instance_ranks,
    method_families,
    prepare,
    weighted_kendall_w,
)
from udbench.data import N_SHELLS

__all__ = [
    "FACTORS",
    "accuracy_table",
    "entanglement_table",
    "factor_kendall_w",
    "headline_table",
    "matched_prior_advantage",
    "rank_heatmap_table",
    "shell_table",
    "stability_table",
]

#: Factors whose levels the stability analysis compares (instance coordinates; ``family`` is
#: the oracle prior family).
FACTORS: tuple[str, ...] = ("family", "noise", "coverage", "dataset")


def _summaries(
    values: np.ndarray, boot: Resampling, name: str, rows: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Mean over instances per method (columns of ``values``), its interval and count."""
    vals = values if rows is None else values[rows]
    finite = np.isfinite(vals)
    n = finite.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        est = np.where(n > 0, np.where(finite, vals, 0.0).sum(axis=0) / np.maximum(n, 1), np.nan)
    low, high = boot.interval(boot.mean(values, rows))
    return {name: est, f"{name}_low": low, f"{name}_high": high, f"{name}_n": n}


def _mean_rank(
    values: np.ndarray, boot: Resampling, name: str, higher_is_better: bool = True
) -> dict[str, Any]:
    """Mean per-instance rank (complete instances), its interval, and the rank order."""
    ranks, _, complete = instance_ranks(values, higher_is_better)
    out: dict[str, Any] = dict(_summaries(ranks, boot, f"mean_rank_{name}", complete))
    key = pd.Series(out[f"mean_rank_{name}"])
    out[f"rank_{name}"] = key.rank(method="min", na_option="keep").astype("Int64").array
    return out


def headline_table(
    results: pd.DataFrame,
    *,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    families: Mapping[str, str] | None = None,
    _ctx: tuple[Frame, Resampling] | None = None,
) -> pd.DataFrame:
    """Per method: mean ρ of EU with EU*_risk, EU*_var, EU*_point and of AU with AU*, ranks.

    ρ(AU, AU*) uses the heteroscedastic noise modes and heteroscedastic-AU methods only
    (SPEC §10; NaN for a constant-AU method). Ranks: per instance, methods are ranked by the
    criterion (1 = highest ρ, ties share the average rank) on the instances where every
    ranked method is defined; ``mean_rank_eu`` / ``mean_rank_au`` average them (with
    intervals) and ``rank_eu`` / ``rank_au`` order the mean ranks (1 = best).

    Parameters
    ----------
    results : DataFrame
        Long-format results (one row per cell).
    families : mapping, optional
        Method label -> family, overriding the registry's (see
        :func:`udbench.analyses._common.method_families`).
    bootstrap_unit, n_resamples, confidence, random_state
        See the module notes.

    Returns
    -------
    DataFrame
        One row per method, sorted by ``rank_eu``: ``method, family, constant_au,
        rho_eu_risk, rho_eu_var, rho_eu_point, rho_au`` each with ``_low/_high/_n``, then
        ``mean_rank_eu(_low/_high/_n), rank_eu, mean_rank_au(...), rank_au``.

    Raises
    ------
    UdbenchError
        Empty results or no ok cell, bad bootstrap settings.
    """
    frame, boot = analysis_context(
        results, "headline_table", bootstrap_unit, n_resamples, confidence, random_state, _ctx
    )
    fam = method_families(frame, families)
    cols: dict[str, Any] = {
        "method": frame.methods,
        "family": [fam[m] for m in frame.methods],
        "constant_au": [frame.constant_au[m] for m in frame.methods],
    }
    for metric in (*(f"rho_eu_{t}" for t in EU_TARGETS), "rho_au"):
        cols.update(_summaries(frame.wide(metric), boot, metric))
    for crit, metric in CRITERIA.items():
        cols.update(_mean_rank(frame.wide(metric), boot, crit))
    table = pd.DataFrame(cols)
    return table.sort_values(["rank_eu", "method"], kind="stable").reset_index(drop=True)


def _level_means(
    values: np.ndarray, levels: np.ndarray, n_levels: int, boot: Resampling | None
) -> np.ndarray:
    """Mean of each column per level: (m, k), or per replicate (B, m, k) with ``boot``."""
    finite = np.isfinite(values)
    v0 = np.where(finite, values, 0.0)
    f0 = finite.astype(float)
    shape = (
        (n_levels, values.shape[1])
        if boot is None
        else (boot.n_resamples, n_levels, values.shape[1])
    )
    num, den = np.zeros(shape), np.zeros(shape)
    for level in range(n_levels):
        idx = levels == level
        if boot is None:
            num[level], den[level] = v0[idx].sum(axis=0), f0[idx].sum(axis=0)
        else:
            c = boot.counts[:, idx]
            num[:, level], den[:, level] = c @ v0[idx], c @ f0[idx]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _level_weights(factor: str, levels: np.ndarray, n_levels: int, boot: Resampling) -> np.ndarray:
    """How often each level counts in each replicate: (B, m)."""
    if factor == "dataset" and boot.group_counts is not None:
        # resampling whole datasets: a dataset drawn twice is a level (rater) counted twice
        # (levels and groups are both the sorted dataset names)
        return boot.group_counts.astype(float)
    onehot = (levels[:, None] == np.arange(n_levels)[None, :]).astype(float)
    return ((boot.counts @ onehot) > 0).astype(float)


def factor_kendall_w(
    values: np.ndarray, frame: Frame, boot: Resampling, factor: str
) -> dict[str, Any]:
    """Kendall's W of the method ranking across the levels of one factor, with its interval.

    The computation behind :func:`stability_table` for one criterion table and one factor
    (any column of ``frame.instances``): each level ranks the methods by their mean over the
    level's instances; methods defined at every level with a value enter.

    Parameters
    ----------
    values : ndarray, shape (n_instances, n_methods)
        The criterion per instance and method (NaN = undefined; higher is better).
    frame : Frame
        Its instances (``frame.instances[factor]`` gives the levels).
    boot : Resampling
        The bootstrap of ``frame``'s instances.
    factor : str
        A column of ``frame.instances``.

    Returns
    -------
    dict
        ``factor, W, W_low, W_high, n_methods, n_levels, levels, n_instances, note``.
    """
    names, levels = np.unique(frame.instances[factor].to_numpy(dtype=str), return_inverse=True)
    means = _level_means(values, levels, len(names), None)
    present = np.isfinite(means).any(axis=1)
    keep_m = np.isfinite(means[present]).all(axis=0) if present.any() else np.zeros(0)
    n_methods, n_levels = int(np.sum(keep_m)), int(present.sum())
    row: dict[str, Any] = {
        "factor": factor,
        "W": np.nan,
        "W_low": np.nan,
        "W_high": np.nan,
        "n_methods": n_methods,
        "n_levels": n_levels,
        "levels": ", ".join(names[present]),
        "n_instances": int(np.isfinite(values).any(axis=1).sum()),
        "note": "",
    }
    if n_levels < 2 or n_methods < 2:
        row["note"] = f"needs >= 2 levels and >= 2 methods (have {n_levels}, {n_methods})"
        return row
    sel = values[:, np.flatnonzero(keep_m)]
    full = means[np.ix_(present, keep_m)]
    row["W"] = float(weighted_kendall_w(full))
    reps = _level_means(sel, levels, len(names), boot)[:, present, :]  # (B, m, k)
    weights = _level_weights(factor, levels, len(names), boot)[:, present]
    w_reps = weighted_kendall_w(reps, weights)
    # a counted level with an undefined mean makes the replicate undefined
    bad = ((weights > 0) & ~np.isfinite(reps).all(axis=-1)).any(axis=-1)
    w_reps = np.where(bad, np.nan, w_reps)
    low, high = boot.interval(w_reps[:, None])
    row["W_low"], row["W_high"] = float(low[0]), float(high[0])
    if not np.isfinite(row["W"]):
        row["note"] = "every level ranks all methods as tied"
    return row


def _stability_rows(frame: Frame, boot: Resampling, factors: tuple[str, ...]) -> pd.DataFrame:
    """The rows of :func:`stability_table`: :func:`factor_kendall_w` per criterion and factor."""
    rows: list[dict[str, Any]] = []
    for crit, metric in CRITERIA.items():
        values = frame.wide(metric)
        for factor in factors:
            rows.append({"criterion": crit, **factor_kendall_w(values, frame, boot, factor)})
    return pd.DataFrame(rows)


def stability_table(
    results: pd.DataFrame,
    *,
    factors: tuple[str, ...] = FACTORS,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    _ctx: tuple[Frame, Resampling] | None = None,
) -> pd.DataFrame:
    """Kendall's W (tie-corrected) of the method ranking across the levels of each factor.

    For a criterion (``eu``: ρ(EU, EU*_risk); ``au``: ρ(AU, AU*), heteroscedastic noise
    modes and heteroscedastic-AU methods) and a factor (prior family, noise mode, coverage,
    dataset), each level ranks the methods by their mean criterion over the level's
    instances; W measures how much the m levels agree (1 = the same ranking everywhere; about
    1/m for unrelated rankings). Methods defined at every level enter (``n_methods``), the
    levels with a value (``n_levels``). The interval recomputes the level means and W on
    every bootstrap replicate; resampling whole datasets, a dataset drawn twice counts as two
    levels of the dataset factor.

    Parameters
    ----------
    results : DataFrame
        Long-format results.
    factors : tuple of str, default :data:`FACTORS`
        Instance coordinates to compare the levels of.
    bootstrap_unit, n_resamples, confidence, random_state
        See the module notes.

    Returns
    -------
    DataFrame
        One row per (criterion, factor): ``criterion, factor, W, W_low, W_high, n_methods,
        n_levels, levels, n_instances, note`` (``note`` says why W is undefined).

    Raises
    ------
    UdbenchError
        Empty results, an unknown factor, bad bootstrap settings.
    """
    frame, boot = analysis_context(
        results, "stability_table", bootstrap_unit, n_resamples, confidence, random_state, _ctx
    )
    for f in factors:
        check_choice("stability_table", "factors", f, list(FACTORS))
    return _stability_rows(frame, boot, factors)


def rank_heatmap_table(
    results: pd.DataFrame, *, criterion: str = "eu", factor: str = "dataset"
) -> pd.DataFrame:
    """Rank of every method at every level of a factor (the stability analysis' rows).

    Each level ranks the methods by their mean criterion over its instances (1 = highest
    ρ, ties share the average rank); a method without a value at a level has NaN there.

    Returns
    -------
    DataFrame
        Index: the factor's levels; columns: methods, ordered by their mean rank over
        the levels (best first).
    """
    check_choice("rank_heatmap_table", "criterion", criterion, list(CRITERIA))
    check_choice("rank_heatmap_table", "factor", factor, list(FACTORS))
    frame = prepare(results, "rank_heatmap_table")
    values = frame.wide(CRITERIA[criterion])
    names, levels = np.unique(frame.instances[factor].to_numpy(dtype=str), return_inverse=True)
    means = pd.DataFrame(
        _level_means(values, levels, len(names), None), index=names, columns=frame.methods
    )
    means = means.dropna(axis=1, how="all").dropna(axis=0, how="all")
    ranks = means.rank(axis=1, ascending=False, method="average")
    order = ranks.mean(axis=0).sort_values(kind="stable").index
    ranks = ranks[order]
    ranks.index.name = factor
    return ranks


def matched_prior_advantage(
    results: pd.DataFrame,
    *,
    by: str = "family",
    criterion: str = "eu",
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    families: Mapping[str, str] | None = None,
    _ctx: tuple[Frame, Resampling] | None = None,
) -> pd.DataFrame:
    """Mean rank of a method family when the oracle prior matches its inductive bias, and not.

    Per instance the methods are ranked by the criterion (1 = best; complete instances, as
    in :func:`headline_table`). A family's rank on an instance is the mean rank of its
    methods. The matched prior of a family is :data:`~udbench.analyses._common.MATCHED_PRIOR`
    (GP-based ↔ GP, trees ↔ HBART, NN ↔ BNN; BLR and others have none). ``rank_matched``
    averages over instances drawn from the matched prior, ``rank_other`` over the other
    oracle families, and ``advantage = rank_other − rank_matched`` (positive: the family
    ranks better under its own prior), each with a paired bootstrap interval.

    Parameters
    ----------
    by : {"family", "method"}
        One row per method family, or per method (with its family).
    criterion : {"eu", "au"}
        Rank by ρ(EU, EU*_risk) or ρ(AU, AU*).
    families : mapping, optional
        Method label -> family, overriding the registry's.

    Returns
    -------
    DataFrame
        ``family, family_name, matched_prior`` (and ``method`` with ``by="method"``),
        ``n_methods``, ``rank_<prior>`` for every oracle prior family present, and
        ``rank_matched, rank_other, advantage`` each with ``_low/_high/_n``.
    """
    check_choice("matched_prior_advantage", "by", by, ["family", "method"])
    check_choice("matched_prior_advantage", "criterion", criterion, list(CRITERIA))
    frame, boot = analysis_context(
        results,
        "matched_prior_advantage",
        bootstrap_unit,
        n_resamples,
        confidence,
        random_state,
        _ctx,
    )
    fam = method_families(frame, families)
    ranks, ranked, complete = instance_ranks(frame.wide(CRITERIA[criterion]))
    prior = frame.instances["family"].to_numpy(dtype=str)
    priors = sorted(set(prior[complete]))
    groups: list[tuple[dict[str, Any], np.ndarray]] = []
    if by == "family":
        for f in sorted({fam[m] for m, r in zip(frame.methods, ranked, strict=True) if r}):
            idx = np.array([fam[m] == f and r for m, r in zip(frame.methods, ranked, strict=True)])
            groups.append(({"family": f, "n_methods": int(idx.sum())}, idx))
    else:
        for j, m in enumerate(frame.methods):
            if ranked[j]:
                idx = np.zeros(len(frame.methods), dtype=bool)
                idx[j] = True
                groups.append(({"method": m, "family": fam[m], "n_methods": 1}, idx))
    rows: list[dict[str, Any]] = []
    for head, idx in groups:
        f = head["family"]
        match = MATCHED_PRIOR.get(f)
        g = np.where(complete, ranks[:, idx].mean(axis=1) if idx.any() else np.nan, np.nan)
        row: dict[str, Any] = {
            **head,
            "family_name": FAMILY_NAMES.get(f, f),
            "matched_prior": match or "",
        }
        for p in priors:
            row.update(_scalar(g, boot, f"rank_{p}", complete & (prior == p)))
        is_m = complete & (prior == match) if match else np.zeros_like(complete)
        is_o = complete & (prior != match) if match else np.zeros_like(complete)
        row.update(_scalar(g, boot, "rank_matched", is_m))
        row.update(_scalar(g, boot, "rank_other", is_o))
        if match and is_m.any() and is_o.any():
            reps = boot.mean(g[:, None], is_o)[:, 0] - boot.mean(g[:, None], is_m)[:, 0]
            low, high = boot.interval(reps[:, None])
            row.update(
                {
                    "advantage": row["rank_other"] - row["rank_matched"],
                    "advantage_low": float(low[0]),
                    "advantage_high": float(high[0]),
                }
            )
        else:
            row.update({"advantage": np.nan, "advantage_low": np.nan, "advantage_high": np.nan})
        rows.append(row)
    table = pd.DataFrame(rows)
    first = ["method"] if by == "method" else []
    first += ["family", "family_name", "matched_prior", "n_methods"]
    return table[first + [c for c in table.columns if c not in first]]


def _scalar(g: np.ndarray, boot: Resampling, name: str, rows: np.ndarray) -> dict[str, Any]:
    """Mean of the vector ``g`` over ``rows`` with its interval and count."""
    if not rows.any():
        return {name: np.nan, f"{name}_low": np.nan, f"{name}_high": np.nan, f"{name}_n": 0}
    out = _summaries(g[:, None], boot, name, rows)
    return {k: (v[0].item() if hasattr(v[0], "item") else v[0]) for k, v in out.items()}


def entanglement_table(
    results: pd.DataFrame,
    *,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    _ctx: tuple[Frame, Resampling] | None = None,
) -> pd.DataFrame:
    """Per method: ρ(EU, AU), the ground truth ρ(EU*, AU*) and Δ_ent for each EU target.

    Δ_ent = ρ(EU, AU) − ρ(EU*, AU*) per instance (SPEC §10, paper Section 4); positive: the
    method's EU and AU depend on each other more than the ground truths do. All on
    heteroscedastic noise modes and for heteroscedastic-AU methods (AU* or AU constant makes
    them undefined). ρ(EU*_var, AU*) depends on the task only; EU*_risk and EU*_point contain
    the method's own prediction, so their ground truth differs between methods. Results
    written before udbench stored the two parts (``rho_eu_au``, ``rho_eu_au_star_*``) have
    NaN there; Δ_ent itself is always stored.

    Returns
    -------
    DataFrame
        One row per heteroscedastic-AU method, sorted by |Δ_ent (risk)|: ``method,
        rho_eu_au`` and, per target t, ``rho_star_t`` and ``delta_ent_t``, each with
        ``_low/_high/_n``.
    """
    frame, boot = analysis_context(
        results, "entanglement_table", bootstrap_unit, n_resamples, confidence, random_state, _ctx
    )
    cols: dict[str, Any] = {"method": frame.methods}
    cols.update(_summaries(frame.wide("rho_eu_au"), boot, "rho_eu_au"))
    for t in EU_TARGETS:
        cols.update(_summaries(frame.wide(f"rho_eu_au_star_{t}"), boot, f"rho_star_{t}"))
        cols.update(_summaries(frame.wide(f"delta_ent_{t}"), boot, f"delta_ent_{t}"))
    table = pd.DataFrame(cols)
    table = table[[not frame.constant_au[m] for m in frame.methods]]
    order = table["delta_ent_risk"].abs().fillna(np.inf).to_numpy().argsort(kind="stable")
    return table.iloc[order].reset_index(drop=True)


def shell_table(
    results: pd.DataFrame,
    *,
    target: str = "risk",
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    _ctx: tuple[Frame, Resampling] | None = None,
) -> pd.DataFrame:
    """Per method and coverage shell: mean ρ(EU, EU*_target) inside the shell (SPEC §3).

    Parameters
    ----------
    target : {"risk", "var"}
        The EU target (the per-shell ρ stored per cell).

    Returns
    -------
    DataFrame
        One row per method: ``shell0 … shell4`` (inner to outermost) each with
        ``_low/_high/_n``, and ``outer_minus_inner`` (shell 4 − shell 0, paired interval).
    """
    check_choice("shell_table", "target", target, ["risk", "var"])
    frame, boot = analysis_context(
        results, "shell_table", bootstrap_unit, n_resamples, confidence, random_state, _ctx
    )
    cols: dict[str, Any] = {"method": frame.methods}
    for s in range(N_SHELLS):
        cols.update(_summaries(frame.wide(f"rho_eu_{target}_shell{s}"), boot, f"shell{s}"))
    inner = frame.wide(f"rho_eu_{target}_shell0")
    outer = frame.wide(f"rho_eu_{target}_shell{N_SHELLS - 1}")
    cols.update(_summaries(outer - inner, boot, "outer_minus_inner"))
    return pd.DataFrame(cols)


def accuracy_table(
    results: pd.DataFrame,
    *,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    _ctx: tuple[Frame, Resampling] | None = None,
) -> pd.DataFrame:
    """Per method: mean RMSE and NMSE of the point prediction against f* (SPEC §10), ranks.

    NMSE = mean (â − f*)² / Var(f*) per instance, so that instances of different scale
    average fairly. Ranks by NMSE (1 = lowest), as in :func:`headline_table`.

    Returns
    -------
    DataFrame
        Sorted by ``rank_nmse``: ``method, rmse, nmse`` with ``_low/_high/_n``,
        ``mean_rank_nmse(...)``, ``rank_nmse``.
    """
    frame, boot = analysis_context(
        results, "accuracy_table", bootstrap_unit, n_resamples, confidence, random_state, _ctx
    )
    cols: dict[str, Any] = {"method": frame.methods}
    cols.update(_summaries(frame.wide("rmse"), boot, "rmse"))
    cols.update(_summaries(frame.wide("nmse"), boot, "nmse"))
    cols.update(_mean_rank(frame.wide("nmse"), boot, "nmse", higher_is_better=False))
    table = pd.DataFrame(cols)
    return table.sort_values(["rank_nmse", "method"], kind="stable").reset_index(drop=True)
