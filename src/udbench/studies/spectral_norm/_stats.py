"""The statistics of the spectral-normalisation study: pairing, the dataset bootstrap and
the tables of paper D.4."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from udbench._resampling import (
    DEFAULT_CONFIDENCE,
    DEFAULT_N_RESAMPLES,
    check_n_resamples,
    cluster_counts,
    percentile_interval,
)
from udbench._seeding import make_rng
from udbench._validation import UdbenchError, param_error
from udbench.studies.spectral_norm._arms import ARMS, COMPONENT, DELTAS


# ------------------------------------------------------------------------------ analysis
def _config_value(config: str, key: str) -> float:
    import json

    try:
        value = json.loads(config)["params"][key]
    except (KeyError, TypeError, ValueError):
        return float("nan")
    return float(value) if isinstance(value, int | float) else float("nan")


def paired_differences(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (task, method, arm ≠ plain): the arm's and the plain arm's values, Δ.

    Only ok rows of the study (``sn_arm`` set) enter. The pairing is checked on the stored
    rows: the arm and the plain row of a (task, method) must hold the same task file
    (``task_sha256``) and the same training seed (``method_seed``).

    Returns
    -------
    DataFrame
        ``task_id, dataset, family, seed, method, arm, method_seed, n_train``, for each
        quantity q of :data:`DELTAS` ``q_plain``, ``q_arm`` and ``delta_q``; the plain
        network's ``depth`` (``n_blocks``), ``width`` (``hidden_dim``), ``epochs``
        (``n_epochs``) and ``steps`` (epochs × ⌈n_train / min(batch, n_train)⌉), the arm's
        ``depth_arm`` and ``delta_depth``, and ``sn`` (1 for the SN arm).

    Raises
    ------
    UdbenchError
        No study rows, or a pair whose task or seed differ.
    """
    if "sn_arm" not in results.columns:
        raise UdbenchError(f"{COMPONENT}: the results hold no study rows (column sn_arm)")
    ok = results[(results["status"] == "ok") & results["sn_arm"].notna()].copy()
    if ok.empty:
        raise UdbenchError(f"{COMPONENT}: the results hold no ok study cell")
    nmse = ok["nmse"].astype(float).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        ok["log_nmse"] = np.where(nmse > 0, np.log(np.where(nmse > 0, nmse, 1.0)), np.nan)
    if "dist_preservation" not in ok.columns:
        ok["dist_preservation"] = np.nan
    for key, col in (("n_blocks", "depth"), ("hidden_dim", "width"), ("n_epochs", "epochs")):
        ok[col] = [_config_value(c, key) for c in ok["config"]]
    batch = np.array([_config_value(c, "batch_size") for c in ok["config"]])
    n = ok["n_train"].astype(float).to_numpy()
    ok["steps"] = ok["epochs"].to_numpy() * np.ceil(n / np.minimum(batch, n))
    plain = ok[ok["sn_arm"] == "plain"].set_index(["task_id", "sn_base"])
    if plain.index.duplicated().any():
        dup = plain.index[plain.index.duplicated()][0]
        raise UdbenchError(f"{COMPONENT}: two plain rows for task {dup[0]} and method {dup[1]}")
    rows = []
    for _, r in ok[ok["sn_arm"] != "plain"].iterrows():
        pair = (r["task_id"], r["sn_base"])
        if pair not in plain.index:
            continue
        p: Any = plain.loc[pair]
        if r["task_sha256"] != p["task_sha256"] or int(r["method_seed"]) != int(p["method_seed"]):
            raise UdbenchError(
                f"{COMPONENT}: arm {r['sn_arm']} of {r['sn_base']} on task {r['task_id']} is not "
                f"paired with its plain cell (task checksum {str(r['task_sha256'])[:12]} vs "
                f"{str(p['task_sha256'])[:12]}, training seed {r['method_seed']} vs "
                f"{p['method_seed']})"
            )
        row = {
            "task_id": r["task_id"],
            "dataset": r["dataset"],
            "family": r["family"],
            "seed": r["seed"],
            "method": r["sn_base"],
            "arm": r["sn_arm"],
            "method_seed": int(r["method_seed"]),
            "n_train": r["n_train"],
        }
        for q, _ in DELTAS:
            row[f"{q}_plain"] = float(p[q])
            row[f"{q}_arm"] = float(r[q])
            row[f"delta_{q}"] = float(r[q]) - float(p[q])
        for col in ("depth", "width", "epochs", "steps"):
            row[col] = float(p[col])
        row["depth_arm"] = float(r["depth"])
        row["delta_depth"] = row["depth_arm"] - row["depth"]
        row["sn"] = 1.0 if r["sn_arm"] == "sn" else 0.0
        rows.append(row)
    if not rows:
        raise UdbenchError(f"{COMPONENT}: no arm row has its plain row (nothing to pair)")
    return pd.DataFrame(rows).sort_values(["method", "arm", "task_id"]).reset_index(drop=True)


def dataset_bootstrap(
    datasets: Sequence[str], n_resamples: int = DEFAULT_N_RESAMPLES, random_state: int | str = 0
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Resample whole datasets with replacement (paper D.4).

    Parameters
    ----------
    datasets : sequence of str, length n
        The dataset of every row.
    n_resamples : int, default 2000
        Replicates B.
    random_state : int or str
        Names the stream (:func:`udbench._seeding.make_rng`).

    Returns
    -------
    names : list of str
        The G datasets (sorted).
    codes : ndarray, shape (n,)
        Index of each row's dataset in ``names``.
    weights : ndarray, shape (B, n)
        How often each row is drawn in each replicate: the number of times its *dataset*
        was drawn (G draws per replicate, uniform), so all rows of a dataset share a weight.

    Raises
    ------
    UdbenchError
        ``n_resamples`` not an integer >= 1, or no row.
    """
    b = check_n_resamples(COMPONENT, n_resamples)
    if len(datasets) == 0:
        raise param_error(COMPONENT, "datasets", "hold at least one row", 0)
    names, codes = np.unique(np.asarray(datasets, dtype=str), return_inverse=True)
    rng = make_rng("study-spectral-norm-bootstrap", random_state)
    _, weights = cluster_counts(rng, codes, b, len(names))
    return [str(x) for x in names], codes, weights


def _mean_ci(
    values: np.ndarray, weights: np.ndarray, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, float, float, int]:
    """Mean of the finite values and the percentile interval of the weighted replicate means."""
    finite = np.isfinite(values)
    if not finite.any():
        return float("nan"), float("nan"), float("nan"), 0
    v = np.where(finite, values, 0.0)
    num = weights @ v
    den = weights @ finite.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    lo, hi = percentile_interval(reps, confidence)
    return float(values[finite].mean()), float(lo), float(hi), int(finite.sum())


def preservation_table(
    results: pd.DataFrame, *, n_resamples: int = DEFAULT_N_RESAMPLES, random_state: int | str = 0
) -> pd.DataFrame:
    """Mean local distance preservation per method and arm, dataset-bootstrap intervals."""
    ok = results[(results["status"] == "ok") & results.get("sn_arm", pd.Series()).notna()]
    if ok.empty or "dist_preservation" not in ok.columns:
        raise UdbenchError(f"{COMPONENT}: no ok study cell with a distance preservation")
    _, _, w = dataset_bootstrap(ok["dataset"].astype(str).tolist(), n_resamples, random_state)
    out = []
    groups: dict[Any, Any] = ok.groupby(["sn_base", "sn_arm"]).indices
    for (base, arm), idx in groups.items():
        vals = np.full(len(ok), np.nan)
        vals[idx] = ok["dist_preservation"].to_numpy(dtype=float)[idx]
        est, lo, hi, n = _mean_ci(vals, w)
        out.append(
            {
                "method": base,
                "arm": arm,
                "dist_preservation": est,
                "dist_preservation_low": lo,
                "dist_preservation_high": hi,
                "dist_preservation_n": n,
            }
        )
    t = pd.DataFrame(out)
    t["arm"] = pd.Categorical(t["arm"], ARMS)
    return t.sort_values(["method", "arm"]).reset_index(drop=True).astype({"arm": str})


def paired_table(
    pairs: pd.DataFrame, *, n_resamples: int = DEFAULT_N_RESAMPLES, random_state: int | str = 0
) -> pd.DataFrame:
    """Mean paired differences arm − plain per method and arm (and over all methods).

    Point estimate: the mean over the (task, method) pairs; interval: 95 % percentile of the
    same mean over :func:`dataset_bootstrap` replicates.
    """
    _, _, w = dataset_bootstrap(pairs["dataset"].astype(str).tolist(), n_resamples, random_state)
    out = []
    groups = [(m, a) for m in sorted(pairs["method"].unique()) for a in ARMS[1:]]
    if pairs["method"].nunique() > 1:
        groups += [("all", a) for a in ARMS[1:]]
    for method, arm in groups:
        mask = (pairs["arm"] == arm).to_numpy().copy()
        if method != "all":
            mask &= (pairs["method"] == method).to_numpy()
        if not mask.any():
            continue
        row: dict[str, Any] = {"method": method, "arm": arm}
        for q, _ in DELTAS:
            vals = np.where(mask, pairs[f"delta_{q}"].to_numpy(dtype=float), np.nan)
            est, lo, hi, n = _mean_ci(vals, w)
            row.update(
                {f"delta_{q}": est, f"delta_{q}_low": lo, f"delta_{q}_high": hi, f"delta_{q}_n": n}
            )
        out.append(row)
    return pd.DataFrame(out)


def _wls(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted least squares β = argmin Σ wᵢ (yᵢ − xᵢᵀβ)²; NaN where β_j is not identified.

    Solved as ordinary least squares of (√w y) on (√w X) (``numpy.linalg.lstsq``). A
    coefficient is identified when the unit vector e_j lies in the row space of √w X, i.e.
    (X⁺X)_jj = 1 (X⁺ the pseudo-inverse); otherwise (a constant or collinear predictor)
    it is NaN.
    """
    keep = w > 0
    sw = np.sqrt(w[keep])[:, None]
    A = X[keep] * sw
    b = y[keep] * sw[:, 0]
    beta = np.linalg.lstsq(A, b, rcond=None)[0]
    proj = np.linalg.pinv(A) @ A
    ident = np.abs(np.diag(proj) - 1.0) < 1e-8
    return np.where(ident, beta, np.nan)


def regression_table(
    pairs: pd.DataFrame,
    *,
    n_resamples: int = DEFAULT_N_RESAMPLES,
    random_state: int | str = 0,
    confidence: float = DEFAULT_CONFIDENCE,
) -> pd.DataFrame:
    """D.4's regressions of the gain in ρ, with dataset fixed effects.

    ``pooled`` (both arms, all methods), for each target t ∈ {risk, var}::

        Δρ_t = β_pres Δpres + β_fit Δlog NMSE + β_SN 1[SN] + β_depth Δdepth + α_dataset + ε

    ``sn_only`` (SN arm rows), standardised (every variable z-scored over those rows)::

        Δρ_t = β_pres Δpres + β_fit Δlog NMSE + α_dataset + ε

    Fitted by least squares with one indicator per dataset and no intercept
    (:func:`_wls`); rows with a missing value are left out. Intervals: percentile
    intervals of the coefficients refitted on :func:`dataset_bootstrap` replicates (row
    weights = how often the row's dataset was drawn; a dataset drawn twice counts twice,
    with one fixed effect). A coefficient that is not identified (e.g. Δdepth = 0 on every
    row, or a single dataset with one arm) is NaN with a note.

    Returns
    -------
    DataFrame
        ``model, target, term, coef, coef_low, coef_high, n, n_datasets, note``.
    """
    specs = [
        ("pooled", t, ["delta_dist_preservation", "delta_log_nmse", "sn", "delta_depth"], None)
        for t in ("risk", "var")
    ] + [
        ("sn_only", t, ["delta_dist_preservation", "delta_log_nmse"], "sn") for t in ("risk", "var")
    ]
    terms = {
        "delta_dist_preservation": "Δ preservation",
        "delta_log_nmse": "Δ log NMSE",
        "sn": "1[SN]",
        "delta_depth": "Δ depth",
    }
    out = []
    for model, target, cols, only in specs:
        d = pairs if only is None else pairs[pairs["arm"] == only]
        ycol = f"delta_rho_eu_{target}"
        d = d[np.isfinite(d[[ycol, *cols]].to_numpy(dtype=float)).all(axis=1)]
        if d.empty:
            continue
        X = d[cols].to_numpy(dtype=float)
        y = d[ycol].to_numpy(dtype=float)
        if model == "sn_only":  # standardised
            sd = X.std(axis=0)
            X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
            X[:, sd == 0] = 0.0
            y = (y - y.mean()) / (y.std() if y.std() > 0 else 1.0)
        names, codes, w = dataset_bootstrap(
            d["dataset"].astype(str).tolist(), n_resamples, random_state
        )
        D = np.eye(len(names))[codes]
        Z = np.hstack([X, D])
        beta = _wls(Z, y, np.ones(len(y)))[: len(cols)]
        reps = np.array([_wls(Z, y, wb)[: len(cols)] for wb in w])
        lo, hi = percentile_interval(reps, confidence)  # all-NaN replicates: NaN, noted
        for j, c in enumerate(cols):
            note = (
                ""
                if np.isfinite(beta[j])
                else "not identified (no variation apart from the other terms)"
            )
            out.append(
                {
                    "model": model,
                    "target": target,
                    "term": terms[c],
                    "coef": float(beta[j]),
                    "coef_low": float(lo[j]),
                    "coef_high": float(hi[j]),
                    "n": len(y),
                    "n_datasets": len(names),
                    "note": note,
                }
            )
    return pd.DataFrame(out)


def within_dataset_spearman(
    x: np.ndarray, y: np.ndarray, codes: np.ndarray, weights: np.ndarray | None = None
) -> float:
    """Spearman's ρ within datasets: ranks with their dataset means removed, then Pearson.

    Both variables are ranked over all rows (average ranks for ties); from each rank the
    mean rank of its dataset is subtracted; ρ = Σ w e_x e_y / √(Σ w e_x² · Σ w e_y²) with row
    weights w (default 1; a bootstrap replicate's dataset counts). NaN when either centred
    rank is zero everywhere (no variation within datasets).
    """
    from scipy.stats import rankdata

    rx, ry = rankdata(x), rankdata(y)
    g = int(codes.max()) + 1
    cnt = np.bincount(codes, minlength=g).astype(float)
    ex = rx - (np.bincount(codes, rx, g) / cnt)[codes]
    ey = ry - (np.bincount(codes, ry, g) / cnt)[codes]
    w = np.ones(len(x)) if weights is None else weights
    den = math.sqrt(float(np.sum(w * ex * ex)) * float(np.sum(w * ey * ey)))
    return float(np.sum(w * ex * ey) / den) if den > 0 else float("nan")


def depth_table(
    pairs: pd.DataFrame,
    *,
    n_resamples: int = DEFAULT_N_RESAMPLES,
    random_state: int | str = 0,
    confidence: float = DEFAULT_CONFIDENCE,
) -> pd.DataFrame:
    """D.4's depth associations (Table 14): within-dataset Spearman ρ, dataset bootstrap.

    The plain network's tuned depth, width, epochs and gradient steps against its
    preservation (one row per (task, method), from the pairs of the SN arm, or of the WD
    arm if there is no SN pair), and its depth against the SN gains Δρ(EU, EU*_risk) and
    Δρ(EU, EU*_var) (:func:`within_dataset_spearman`).
    """
    arm = "sn" if (pairs["arm"] == "sn").any() else "wd"
    base = pairs[pairs["arm"] == arm]
    sn = pairs[pairs["arm"] == "sn"]
    specs = [
        (base, x, "dist_preservation_plain", f"plain {x} ↔ plain preservation")
        for x in ("depth", "width", "epochs", "steps")
    ] + [
        (sn, "depth", f"delta_rho_eu_{t}", f"plain depth ↔ SN gain Δρ(EU, EU*_{t})")
        for t in ("risk", "var")
    ]
    out = []
    for d, xc, yc, label in specs:
        d = d[np.isfinite(d[[xc, yc]].to_numpy(dtype=float)).all(axis=1)]
        if len(d) < 3:
            out.append(
                {
                    "association": label,
                    "spearman": float("nan"),
                    "spearman_low": float("nan"),
                    "spearman_high": float("nan"),
                    "n": len(d),
                }
            )
            continue
        _, codes, w = dataset_bootstrap(
            d["dataset"].astype(str).tolist(), n_resamples, random_state
        )
        x, y = d[xc].to_numpy(dtype=float), d[yc].to_numpy(dtype=float)
        est = within_dataset_spearman(x, y, codes)
        reps = np.array([within_dataset_spearman(x, y, codes, wb) for wb in w])
        lo, hi = percentile_interval(reps, confidence)  # all-NaN replicates: NaN
        out.append(
            {
                "association": label,
                "spearman": est,
                "spearman_low": float(lo),
                "spearman_high": float(hi),
                "n": len(d),
            }
        )
    return pd.DataFrame(out)
