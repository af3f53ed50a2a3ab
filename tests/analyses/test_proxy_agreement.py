"""Agreement of proxy metrics with the oracle ranking (udbench.analyses.proxies)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from _results import fabricate_results
from udbench._validation import UdbenchError
from udbench.analyses import analyze, proxy_agreement_table
from udbench.analyses.proxies import kendall_tau_b

METHODS = {f"m{i}": ("gp" if i % 2 else "nn", i == 0) for i in range(6)}


@pytest.fixture(scope="module")
def results() -> pd.DataFrame:
    df = fabricate_results(n_datasets=3, n_seeds=2, methods=METHODS, noise_sd=0.02, random_state=1)
    rng = np.random.default_rng(0)
    # a proxy identical (up to a monotone, lower-is-better map) to the oracle criterion
    df["crps"] = 1.0 - df["rho_eu_risk"]
    # a proxy reversing the oracle order, and one unrelated to it
    df["nll"] = df["rho_eu_risk"]
    df["ence"] = rng.uniform(size=len(df))
    # AU: sharpness ordered like ρ(AU, AU*) (lower = better)
    df["sharpness"] = -df["rho_au"].fillna(0.0)
    return df


def _pooled(table: pd.DataFrame, crit: str, proxy: str) -> pd.Series:
    sel = table[
        (table["criterion"] == crit) & (table["proxy"] == proxy) & (table["factor"] == "all")
    ]
    assert len(sel) == 1
    return sel.iloc[0]


def test_tau_b_matches_scipy_with_ties():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, size=(50, 7)).astype(float)
    y = rng.integers(0, 4, size=(50, 7)).astype(float)
    got = kendall_tau_b(x, y)
    for i in range(50):
        want = stats.kendalltau(x[i], y[i]).statistic
        if np.isnan(want):
            assert np.isnan(got[i])
        else:
            assert got[i] == pytest.approx(want, abs=1e-12)


def test_identical_proxy_has_tau_one_reversed_minus_one(results):
    table = proxy_agreement_table(
        results, proxies=("crps", "nll", "ence", "sharpness"), n_resamples=200
    )
    same = _pooled(table, "eu", "crps")
    assert same["tau"] == pytest.approx(1.0)
    assert same["tau_low"] == pytest.approx(1.0) and same["tau_high"] == pytest.approx(1.0)
    assert same["n_methods"] == 6
    assert _pooled(table, "eu", "nll")["tau"] == pytest.approx(-1.0)
    # every factor level of the identical proxy: τ = 1 too
    levels = table[(table["criterion"] == "eu") & (table["proxy"] == "crps")]
    assert set(levels["factor"]) == {"all", "family", "noise", "coverage", "dataset"}
    assert np.allclose(levels["tau"], 1.0)
    unrelated = _pooled(table, "eu", "ence")
    assert abs(unrelated["tau"]) < 0.9 and unrelated["tau_low"] < unrelated["tau_high"]
    # AU criterion: the constant-AU method m0 is left out; sharpness agrees exactly
    au = _pooled(table, "au", "sharpness")
    assert au["n_methods"] == 5 and au["tau"] == pytest.approx(1.0)
    # homoscedastic level of the AU criterion: no value, a note
    homo = table[
        (table["criterion"] == "au")
        & (table["proxy"] == "sharpness")
        & (table["level"] == "homoscedastic")
    ].iloc[0]
    assert np.isnan(homo["tau"]) and "needs >= 3 methods" in homo["note"]


def test_old_results_without_proxies_give_nan_with_note(results):
    old = results.drop(columns=["crps", "nll", "ence", "sharpness"])
    table = proxy_agreement_table(old, proxies=("crps",), criteria=("eu",), n_resamples=50)
    assert table["tau"].isna().all()
    assert table["note"].str.contains("rows written before proxies were stored").all()


def test_bad_proxy_is_an_error(results):
    with pytest.raises(UdbenchError, match="proxies"):
        proxy_agreement_table(results, proxies=("rho_eu_risk",))


def test_analyze_writes_agreement_table_levels_and_figure(results, tmp_path):
    res = analyze(results, tmp_path, n_resamples=50)
    pooled = res.tables["proxy_agreement"]
    row = pooled[(pooled["criterion"] == "eu") & (pooled["proxy"] == "crps")].iloc[0]
    assert row["tau"] == pytest.approx(1.0)
    assert (tmp_path / "tables" / "proxy_agreement.csv").is_file()
    assert (tmp_path / "tables" / "proxy_agreement_levels.csv").is_file()
    assert (tmp_path / "figures" / "proxy_agreement.png").is_file()
    assert "proxy_agreement_levels.csv" in (tmp_path / "analyses.html").read_text()


def test_batched_bootstrap_equals_direct_resampling(results):
    """Shared columns and per-scope products give the numbers of Resampling.mean."""
    from udbench.analyses._common import analysis_context
    from udbench.evaluation.proxies import oriented

    df = results.copy()
    df.loc[df.index[::7], "ence"] = np.nan  # other cells than the oracle's: no sharing
    ctx = analysis_context(df, "t", "instance", 300, 0.9, 0, None)
    frame, boot = ctx
    table = proxy_agreement_table(df, proxies=("crps", "ence"), criteria=("eu",), _ctx=ctx)
    oracle = frame.wide("rho_eu_risk")
    for proxy in ("crps", "ence"):
        values = oriented(proxy, frame.wide(proxy))
        for factor, level in (("all", "all"), ("dataset", "ds01")):
            rows = np.ones(len(frame.instances), dtype=bool)
            if factor != "all":
                rows = frame.instances[factor].to_numpy(dtype=str) == level
            joint = np.isfinite(values) & np.isfinite(oracle) & rows[:, None]
            p, o = np.where(joint, values, np.nan), np.where(joint, oracle, np.nan)
            reps = kendall_tau_b(boot.mean(p, rows), boot.mean(o, rows))
            est = kendall_tau_b(np.nanmean(p[rows], axis=0), np.nanmean(o[rows], axis=0))
            # the basic interval 2τ̂ − q of the directly resampled replicates, clipped
            q_low, q_high = np.nanquantile(reps, [0.05, 0.95])
            low = np.clip([2 * est - q_high], -1.0, 1.0)
            high = np.clip([2 * est - q_low], -1.0, 1.0)
            if proxy == "ence":
                assert low[0] < high[0]  # a proxy with a real interval
            got = table[(table["proxy"] == proxy) & (table["level"] == level)].iloc[0]
            assert got["tau"] == pytest.approx(float(est), abs=1e-12)
            assert got["tau_low"] == pytest.approx(float(low[0]), abs=1e-12)
            assert got["tau_high"] == pytest.approx(float(high[0]), abs=1e-12)
