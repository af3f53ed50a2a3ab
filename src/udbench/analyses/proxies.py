"""Agreement of the proxy metrics with the oracle: would a proxy have ranked methods truly?

For each proxy metric of :mod:`udbench.evaluation.proxies` (NLL, CRPS, coverage, …) and each
oracle criterion (``eu``: ρ(EU, EU*_risk); ``au``: ρ(AU, AU*), heteroscedastic noise modes and
heteroscedastic-AU methods), :func:`proxy_agreement_table` ranks the methods by their mean
proxy value and by their mean oracle criterion over the same cells, and reports Kendall's τ-b
between the two rankings — pooled over all instances and at every level of each factor
(prior family, noise mode, coverage, dataset). τ = 1: the proxy orders the methods exactly
as the oracle does; 0: unrelated; −1: reversed.

Choices (docs/metrics.md):

- A proxy is turned so that higher is better (:func:`udbench.evaluation.proxies.oriented`:
  NLL, CRPS, … negated; PICP replaced by −|PICP − nominal|).
- Both means use the cells where proxy and oracle are both defined (for ``au``, the AU
  restriction applies to the proxy too), each method over its own such cells; methods with
  no such cell in a scope are left out, and τ needs at least 3 methods.
- τ-b (ties corrected, as ``scipy.stats.kendalltau``) is written here vectorised over the
  bootstrap replicates, recomputed from both rankings on every replicate of
  :func:`udbench.analyses._common.resampling` (instances within datasets, or whole
  datasets), so that the oracle ranking's own uncertainty counts.
- The interval is the basic (reverse-percentile) bootstrap interval [2τ̂ − τ*_{(1+c)/2},
  2τ̂ − τ*_{(1−c)/2}] clipped to [−1, 1] (Davison & Hinkley 1997, §5.2.1, eq. 5.6), not the
  percentile one: noise in the means can only permute close methods, so τ̂ is biased towards
  0 (low when the orderings agree), and every replicate, re-ranking both orderings with
  more noise, is biased the same way again. The percentile interval repeats that bias (near
  τ = 1 its upper end is τ̂ and it almost never covers the true τ); the basic interval
  reflects the replicates about τ̂ and so corrects it to first order. Its measured coverage
  of the true τ (τ between the population-mean orderings) is in docs/analyses.md
  ("Kendall's τ intervals"): near nominal at τ ≈ 0.5 and at τ = 1 with moderate noise,
  below nominal (about 0.81 for 0.95) where the noise makes τ̂ much lower than 1. The point
  estimate τ̂ is not changed.

References
----------
Davison, A. C. & Hinkley, D. V. (1997). *Bootstrap Methods and their Application*.
Cambridge University Press.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from udbench._resampling import DEFAULT_CONFIDENCE, DEFAULT_N_RESAMPLES
from udbench._validation import check_choice, param_error
from udbench.analyses._common import CRITERIA, Frame, Resampling, analysis_context
from udbench.analyses.tables import FACTORS
from udbench.evaluation.proxies import PROXY_KEYS, PROXY_LABELS, oriented

__all__ = [
    "MIN_METHODS",
    "factor_scopes",
    "kendall_tau_b",
    "proxy_agreement_figure",
    "proxy_agreement_table",
    "proxy_tau_rows",
    "scope_taus",
    "scoped_tau_rows",
]

#: Fewest methods a τ is computed for.
MIN_METHODS = 3
_ORACLE_LABELS = {"eu": "ρ(EU, EU*_risk)", "au": "ρ(AU, AU*)"}


def kendall_tau_b(x: Any, y: Any) -> np.ndarray:
    """Kendall's τ-b between the last axes of ``x`` and ``y`` (broadcast over leading axes).

    τ-b = Σ_{i<j} s_ij t_ij / √(Σ s_ij² · Σ t_ij²), s_ij = sign(x_i − x_j), t_ij = sign(y_i −
    y_j) (Kendall 1945; equal to ``scipy.stats.kendalltau``'s default variant).

    Parameters
    ----------
    x, y : array_like, shape (..., k)
        Scores of k objects (finite).

    Returns
    -------
    ndarray, shape (...)
        τ-b in [−1, 1]; NaN where one side is entirely tied.
    """
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    iu = np.triu_indices(a.shape[-1], k=1)
    s = np.sign(a[..., :, None] - a[..., None, :])[..., iu[0], iu[1]]
    t = np.sign(b[..., :, None] - b[..., None, :])[..., iu[0], iu[1]]
    den = np.sqrt(np.sum(s * s, axis=-1) * np.sum(t * t, axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, np.sum(s * t, axis=-1) / np.where(den > 0, den, 1.0), np.nan)


def factor_scopes(frame: Frame, factors: Sequence[str]) -> list[tuple[str, str, np.ndarray]]:
    """The scopes a τ table is reported on: pooled, then every level of each factor.

    Parameters
    ----------
    frame : Frame
        The instance × method tables (:mod:`udbench.analyses._common`).
    factors : sequence of str
        Columns of ``frame.instances`` (e.g. ``family``, ``noise``, ``coverage``, ``dataset``).

    Returns
    -------
    list of (factor, level, mask)
        ``("all", "all", all-True)`` first; ``mask`` is a bool array of shape
        ``(n_instances,)`` in the order of ``frame.instances``.
    """
    n = len(frame.instances)
    scopes: list[tuple[str, str, np.ndarray]] = [("all", "all", np.ones(n, dtype=bool))]
    for f in factors:
        col = frame.instances[f].to_numpy(dtype=str)
        scopes += [(f, str(level), col == level) for level in np.unique(col)]
    return scopes


def scope_taus(
    pairs: list[tuple[np.ndarray, np.ndarray]], rows: np.ndarray, boot: Resampling
) -> list[dict[str, Any]]:
    """Kendall's τ-b (with bootstrap interval) between the method orderings of every
    (proxy, oracle) table pair, on the instances ``rows``.

    Each table is instances × methods; a method's score is its mean over the scope's
    instances where both tables are finite, and τ-b is taken between the two vectors of
    means, on the original sample and on every replicate of ``boot``. The interval is the
    basic bootstrap interval of τ over those replicates, clipped to [−1, 1]
    (:meth:`udbench.analyses._common.Resampling.basic_interval`; Davison & Hinkley 1997,
    §5.2.1; module notes: why not the percentile interval); an end point within 1e-12 of
    ±1 or τ̂ is set to it (floating-point residue of 2τ̂ − q on τ-b's lattice). The
    replicate means of all pairs come from one matrix product over the scope's instances
    (the numbers of :meth:`Resampling.mean`, without the zero-weight rows).

    Parameters
    ----------
    pairs : list of (ndarray, ndarray)
        ``(proxy, oracle)`` tables, each of shape ``(n_instances, n_methods)``; NaN where a
        cell is missing.
    rows : ndarray of bool, shape (n_instances,)
        The scope (:func:`factor_scopes`).
    boot : Resampling
        The bootstrap over instances (:mod:`udbench.analyses._common`).

    Returns
    -------
    list of dict
        One per pair: ``tau``, ``tau_low``, ``tau_high`` (the basic interval at
        ``boot.confidence``), ``n_methods``,
        ``n_instances`` and ``note`` (why τ is NaN: fewer than :data:`MIN_METHODS` methods
        with both values).
    """
    idx = np.flatnonzero(rows)
    blocks: list[np.ndarray] = []
    width = 0
    shared: dict[tuple[int, bytes], tuple[np.ndarray, np.ndarray]] = {}
    cols: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    outs: list[dict[str, Any]] = []

    def add(block: np.ndarray) -> np.ndarray:
        nonlocal width
        blocks.append(block)
        width += block.shape[1]
        return np.arange(width - block.shape[1], width)

    for proxy, oracle in pairs:
        joint = np.isfinite(proxy[idx]) & np.isfinite(oracle[idx])
        methods = joint.any(axis=0)
        p_cols = add(np.where(joint, proxy[idx], 0.0))
        # the oracle sums and the counts are the same for every proxy defined on the same
        # cells (the usual case): computed once
        key = (id(oracle), np.packbits(joint).tobytes())
        if key not in shared:
            shared[key] = (add(np.where(joint, oracle[idx], 0.0)), add(joint.astype(float)))
        cols.append((p_cols, *shared[key], methods))
        outs.append(
            {
                "tau": np.nan,
                "tau_low": np.nan,
                "tau_high": np.nan,
                "n_methods": int(methods.sum()),
                "n_instances": int(joint.any(axis=1).sum()),
                "note": "",
            }
        )
    if not idx.size or not any(o["n_methods"] >= MIN_METHODS for o in outs):
        for o in outs:
            o["note"] = f"needs >= {MIN_METHODS} methods with both values (have {o['n_methods']})"
        return outs
    stacked = np.concatenate(blocks, axis=1, dtype=float)
    sums = boot.counts[:, idx] @ stacked  # (B, columns)
    full = stacked.sum(axis=0)  # the estimate: every instance once
    for (pc, oc, dc, m), out in zip(cols, outs, strict=True):
        if out["n_methods"] < MIN_METHODS:
            out["note"] = (
                f"needs >= {MIN_METHODS} methods with both values (have {out['n_methods']})"
            )
            continue
        pc, oc, dc = pc[m], oc[m], dc[m]
        with np.errstate(invalid="ignore", divide="ignore"):
            mp, mo = sums[:, pc] / sums[:, dc], sums[:, oc] / sums[:, dc]
            ep, eo = full[pc] / full[dc], full[oc] / full[dc]
        out["tau"] = float(kendall_tau_b(ep, eo))
        reps = kendall_tau_b(mp, mo)
        # a replicate in which some method has no drawn cell is undefined (left out)
        reps = np.where(np.isfinite(mp).all(axis=1), reps, np.nan)
        # basic interval 2τ̂ − q: the replicates repeat the estimate's downward bias (module
        # notes; docs/analyses.md, "Kendall's τ intervals")
        low, high = boot.basic_interval(np.array([out["tau"]]), reps[:, None], (-1.0, 1.0))
        # τ-b takes lattice values, and 2τ̂ − q often lands on one of ±1 or τ̂ itself: an end
        # point within 1e-12 of one is set to it (the floating-point residue would put it a
        # hair inside, e.g. an upper end of 1 − 1e-16 that misses a true τ of 1)
        for snap in (-1.0, 1.0, out["tau"]):
            low = np.where(np.abs(low - snap) < 1e-12, snap, low)
            high = np.where(np.abs(high - snap) < 1e-12, snap, high)
        out["tau_low"], out["tau_high"] = float(low[0]), float(high[0])
        if not np.isfinite(out["tau"]):
            out["note"] = "one ranking has every method tied"
    return outs


def proxy_agreement_table(
    results: pd.DataFrame,
    *,
    proxies: tuple[str, ...] = PROXY_KEYS,
    criteria: tuple[str, ...] = ("eu", "au"),
    factors: tuple[str, ...] = FACTORS,
    bootstrap_unit: str = "instance",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    random_state: int | str = 0,
    _ctx: tuple[Frame, Resampling] | None = None,
) -> pd.DataFrame:
    """Kendall's τ between the method ranking of every proxy and the oracle ranking.

    Parameters
    ----------
    results : DataFrame
        Long-format results (:func:`udbench.evaluation.store.read_results`); rows written
        before udbench stored the proxies have none (those proxies get NaN with a note).
    proxies : tuple of str, default :data:`udbench.evaluation.proxies.PROXY_KEYS`
        The proxy columns compared.
    criteria : tuple of {"eu", "au"}, default ("eu", "au")
        Oracle criteria: ρ(EU, EU*_risk) and ρ(AU, AU*).
    factors : tuple of str, default :data:`udbench.analyses.tables.FACTORS`
        Factors whose levels get their own τ (besides the pooled ``factor="all"``).
    bootstrap_unit, n_resamples, confidence, random_state
        As in :mod:`udbench.analyses.tables`.

    Returns
    -------
    DataFrame
        One row per (criterion, proxy, factor, level): ``criterion, oracle, proxy,
        proxy_label, factor, level, tau, tau_low, tau_high, n_methods, n_instances, note``;
        ``factor == "all"`` (level ``"all"``) is the pooled comparison.

    Raises
    ------
    UdbenchError
        Empty results or no ok cell, an unknown proxy, criterion or factor, bad bootstrap
        settings.
    """
    name = "proxy_agreement_table"
    for p in proxies:
        if p not in PROXY_KEYS:
            raise param_error(name, "proxies", f"name proxies among {', '.join(PROXY_KEYS)}", p)
    for c in criteria:
        check_choice(name, "criteria", c, list(CRITERIA))
    for f in factors:
        check_choice(name, "factors", f, list(FACTORS))
    frame, boot = analysis_context(
        results, name, bootstrap_unit, n_resamples, confidence, random_state, _ctx
    )
    pairs: list[tuple[str, str, np.ndarray, np.ndarray]] = []
    for crit in criteria:
        oracle = frame.wide(CRITERIA[crit])
        pairs += [(crit, p, oriented(p, frame.wide(p)), oracle) for p in proxies]
    return proxy_tau_rows(
        frame,
        boot,
        factor_scopes(frame, factors),
        pairs,
        PROXY_LABELS,
        "not in these results (rows written before proxies were stored)",
    )


def proxy_tau_rows(
    frame: Frame,
    boot: Resampling,
    scopes: list[tuple[str, str, np.ndarray]],
    pairs: list[tuple[str, str, np.ndarray, np.ndarray]],
    labels: Mapping[str, str],
    missing_note: str,
) -> pd.DataFrame:
    """The rows of a proxy-agreement table: τ-b (with its interval) of every (criterion,
    proxy) pair in every scope.

    Parameters
    ----------
    frame, boot
        The analysis context (:func:`udbench.analyses._common` frame and resampling).
    scopes : list of (factor, level, selection)
        From :func:`factor_scopes`.
    pairs : list of (criterion, proxy, proxy values, oracle values)
        Wide (method × instance) arrays, the proxy oriented so that higher is better.
    labels : mapping
        Proxy name → its readable label (the ``proxy_label`` column).
    missing_note : str
        The ``note`` of a proxy that is not a column of ``frame.rows``.

    Returns
    -------
    DataFrame
        ``criterion, oracle, proxy, proxy_label, factor, level`` and the fields of
        :func:`scope_taus`, one row per (pair, scope), pairs first.
    """
    keyed = [
        ({"criterion": c, "oracle": _ORACLE_LABELS[c], "proxy": p, "proxy_label": labels[p]}, v, o)
        for c, p, v, o in pairs
    ]
    rows = scoped_tau_rows(keyed, scopes, boot)
    for row in rows:
        if row["proxy"] not in frame.rows.columns:
            row["note"] = missing_note
    return pd.DataFrame(rows)


def scoped_tau_rows(
    pairs: Sequence[tuple[Mapping[str, Any], np.ndarray, np.ndarray]],
    scopes: list[tuple[str, str, np.ndarray]],
    boot: Resampling,
) -> list[dict[str, Any]]:
    """The rows of a τ table: :func:`scope_taus` of every table pair in every scope.

    Parameters
    ----------
    pairs : sequence of (key, values, reference values)
        ``key`` is the pair's own columns (e.g. criterion and proxy, or loss and criterion);
        the two tables are wide (instances × methods) as :func:`scope_taus` takes them.
    scopes : list of (factor, level, selection)
        From :func:`factor_scopes`.
    boot : Resampling
        The analysis' bootstrap.

    Returns
    -------
    list of dict
        One row per (pair, scope), pairs first: the key's columns, ``factor``, ``level`` and
        the fields of :func:`scope_taus`.
    """
    by_scope = [scope_taus([(v, o) for _, v, o in pairs], sel, boot) for _, _, sel in scopes]
    return [
        {**key, "factor": factor, "level": level, **outs[j]}
        for j, (key, _, _) in enumerate(pairs)
        for (factor, level, _), outs in zip(scopes, by_scope, strict=True)
    ]


def proxy_agreement_figure(table: pd.DataFrame) -> Any:
    """Which proxy would have told you the truth? Pooled τ per proxy with its interval.

    One panel per oracle criterion; proxies sorted by pooled τ (the EU panel's order), dots
    with the bootstrap interval; small grey marks are the τ at each factor level. Proxies
    without a pooled τ are left out. A proxy is labelled by the table's ``proxy_label``
    column (the labels its table shows; e.g. "selective AUC (EU)" for the classification
    proxy ``selective_auc_eu``), else by :data:`udbench.evaluation.proxies.PROXY_LABELS`.
    """
    from udbench.analyses.figures import _figure

    pooled = table[(table["factor"] == "all") & table["tau"].notna()]
    crits = [c for c in ("eu", "au") if (pooled["criterion"] == c).any()]
    first = pooled[pooled["criterion"] == (crits[0] if crits else "eu")]
    order = first.sort_values("tau", kind="stable")["proxy"].tolist()
    order += [p for p in pooled["proxy"].unique() if p not in order]
    labels = dict(PROXY_LABELS)
    if "proxy_label" in table.columns:
        labels.update(zip(table["proxy"], table["proxy_label"].astype(str), strict=True))
    fig = _figure(4.2 * max(len(crits), 1) + 1.0, 0.32 * max(len(order), 3) + 1.3)
    for j, crit in enumerate(crits or ["eu"]):
        ax = fig.add_subplot(1, max(len(crits), 1), j + 1)
        sub = pooled[pooled["criterion"] == crit].set_index("proxy")
        levels = table[
            (table["criterion"] == crit) & (table["factor"] != "all") & table["tau"].notna()
        ]
        for i, p in enumerate(order):
            lv = levels[levels["proxy"] == p]["tau"].to_numpy(dtype=float)
            ax.plot(lv, np.full(lv.size, i), "|", color="#999999", ms=6, alpha=0.6)
            if p in sub.index:
                r = sub.loc[p]
                err = [
                    [max(r["tau"] - r["tau_low"], 0.0) if np.isfinite(r["tau_low"]) else 0.0],
                    [max(r["tau_high"] - r["tau"], 0.0) if np.isfinite(r["tau_high"]) else 0.0],
                ]
                ax.errorbar(r["tau"], i, xerr=err, fmt="o", color="#0072B2", ms=5, capsize=2)
        ax.axvline(0.0, color="#555555", lw=0.8, ls=":")
        ax.axvline(1.0, color="#009E73", lw=0.8, ls="--")
        ax.set_xlim(-1.05, 1.05)
        ax.set_yticks(range(len(order)))
        ax.set_yticklabels([labels.get(p, p) if j == 0 else "" for p in order])
        ax.set_xlabel(f"Kendall's τ with the ranking by {_ORACLE_LABELS[crit]}")
        ax.set_title(f"{crit.upper()} oracle", fontsize="medium")
    fig.suptitle("Which proxy would have told you the truth? (grey: τ per factor level)")
    return fig
