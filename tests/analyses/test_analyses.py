"""The analyses of udbench.analyses: Kendall's W, bootstrap units, matched prior, entanglement."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from _fakes import make_fake_task
from _results import fabricate_results
from udbench._validation import UdbenchError
from udbench.analyses import (
    accuracy_table,
    entanglement_table,
    headline_table,
    latex_table,
    matched_prior_advantage,
    rank_heatmap_table,
    shell_table,
    stability_table,
    weighted_kendall_w,
)
from udbench.analyses._common import prepare, resampling
from udbench.evaluation.metrics import kendall_w
from udbench.evaluation.scoring import score_prediction
from udbench.methods.base import Prediction
from udbench.risk import oracle_targets

# -- Kendall's W ------------------------------------------------------------------------


def test_kendall_w_identical_rankings_is_one():
    row = np.array([0.9, 0.1, 0.5, 0.3, 0.7])
    for m in (2, 3, 13):
        assert weighted_kendall_w(np.tile(row, (m, 1))) == pytest.approx(1.0, abs=1e-12)
    # scores on different scales, same order: still 1
    table = np.vstack([row, 10 * row - 3, row**3])
    assert weighted_kendall_w(table) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("m", [2, 3, 5])
def test_kendall_w_independent_rankings_mean_near_one_over_m(m):
    # E[W] = 1/m for m independent uniformly random rankings (Kendall & Babington Smith)
    rng = np.random.default_rng(20261130 + m)
    k, n_seeds = 7, 4000
    tables = rng.permuted(np.tile(np.arange(k, dtype=float), (n_seeds, m, 1)), axis=-1)
    w = weighted_kendall_w(tables)
    assert w.shape == (n_seeds,)
    se = w.std() / math.sqrt(n_seeds)
    assert abs(w.mean() - 1.0 / m) < 4 * se + 1e-3, (w.mean(), 1.0 / m, se)
    assert w.mean() < 1.0 / m + 0.02  # far from the identical-rankings value 1


def test_stability_w_of_unrelated_levels_is_near_one_over_m():
    # every method equally good: each noise level (m = 4) ranks the methods by noise alone
    equal = dict.fromkeys(("a", "b", "c", "d", "e", "f"), 0.5)
    methods = {m: ("gp", False) for m in equal}
    ws = []
    for seed in range(40):
        df = fabricate_results(
            n_datasets=1,
            n_seeds=2,
            methods=methods,
            quality=equal,
            noise_sd=0.1,
            random_state=seed,
        )
        stab = stability_table(df, factors=("noise",), n_resamples=20, random_state=seed)
        ws.append(float(stab.set_index("criterion").loc["eu", "W"]))
    ws_arr = np.array(ws)
    se = ws_arr.std() / math.sqrt(len(ws_arr))
    assert abs(ws_arr.mean() - 0.25) < 4 * se + 0.01, (ws_arr.mean(), se)


def test_kendall_w_tie_correction_hand_worked():
    # three levels rank four methods (row 2 ties two methods):
    #   ranks  [1, 2, 3, 4], [1, 2.5, 2.5, 4], [2, 1, 3, 4]
    #   rank sums R = [4, 5.5, 8.5, 12], mean m(k+1)/2 = 7.5, S = 12.25+4+1+20.25 = 37.5
    #   ties T = 2³ − 2 = 6; W = 12·37.5 / (9·60 − 3·6) = 450/522 = 25/29
    #   (without the correction: 450/540 = 0.8333)
    table = np.array([[1, 2, 3, 4], [1, 2.5, 2.5, 4], [2, 1, 3, 4]], dtype=float)
    assert weighted_kendall_w(table) == pytest.approx(25 / 29, abs=1e-12)
    assert kendall_w(table).value == pytest.approx(25 / 29, abs=1e-12)
    # scores, not ranks, with the same tie: same W
    scores = np.array([[9, 7, 5, 1], [9, 6, 6, 1], [7, 9, 5, 1]], dtype=float)
    assert weighted_kendall_w(scores) == pytest.approx(25 / 29, abs=1e-12)
    # a weight of 2 is the row written twice
    twice = np.vstack([table, table[:1]])
    assert weighted_kendall_w(table, np.array([2.0, 1, 1])) == pytest.approx(
        kendall_w(twice).value, abs=1e-12
    )
    # every row entirely tied: undefined
    assert math.isnan(weighted_kendall_w(np.ones((3, 4))))


def test_kendall_w_stack_matches_scalar_version():
    rng = np.random.default_rng(7)
    tables = rng.integers(0, 4, size=(50, 4, 6)).astype(float)  # many ties
    w = weighted_kendall_w(tables)
    for i in range(50):
        ref = kendall_w(tables[i])
        assert (math.isnan(w[i]) and not ref.defined) or w[i] == pytest.approx(ref.value, abs=1e-12)


def test_stability_table_w_is_kendall_w_of_level_means():
    df = fabricate_results(n_datasets=3, n_seeds=2, noise_sd=0.3, random_state=3)
    stab = stability_table(df, n_resamples=200).set_index(["criterion", "factor"])
    ok = df.assign(v=df["rho_eu_risk"])
    means = ok.pivot_table(index="noise", columns="method", values="v", aggfunc="mean")
    row = stab.loc[("eu", "noise")]
    assert row["W"] == pytest.approx(kendall_w(means.to_numpy()).value, abs=1e-12)
    assert (row["n_methods"], row["n_levels"]) == (19, 4)
    assert row["W_low"] <= row["W_high"]
    # AU criterion: homoscedastic level and constant-AU methods are left out
    au = stab.loc[("au", "noise")]
    assert au["n_levels"] == 3 and au["n_methods"] == 15
    assert "homoscedastic" not in au["levels"]
    # rank heatmap rows are the per-dataset rankings behind W(dataset)
    heat = rank_heatmap_table(df)
    assert heat.shape == (3, 19)
    assert np.allclose(np.sort(heat.to_numpy(), axis=1), np.arange(1, 20))


# -- bootstrap units --------------------------------------------------------------------


def test_dataset_bootstrap_resamples_whole_datasets():
    df = fabricate_results(n_datasets=4, n_seeds=1, coverages=("balanced",))
    frame = prepare(df)
    boot = resampling(frame, unit="dataset", n_resamples=300, random_state=1)
    codes = boot.groups
    for g in range(4):
        block = boot.counts[:, codes == g]
        assert np.all(block == block[:, :1])  # a dataset is drawn whole
    assert np.all(boot.group_counts.sum(axis=1) == 4)
    inst = resampling(frame, unit="instance", n_resamples=300, random_state=1)
    for g in range(4):  # within-dataset: every replicate keeps each dataset's size
        assert np.all(inst.counts[:, codes == g].sum(axis=1) == np.sum(codes == g))


def test_dataset_bootstrap_with_one_dataset_has_zero_width():
    df = fabricate_results(n_datasets=1, n_seeds=3, noise_sd=0.2)
    head = headline_table(df, bootstrap_unit="dataset", n_resamples=300)
    for col in ("rho_eu_risk", "rho_eu_var", "rho_au", "mean_rank_eu"):
        vals = head[[col, f"{col}_low", f"{col}_high"]].dropna()
        assert len(vals)
        assert np.all(vals[f"{col}_low"] == vals[f"{col}_high"])
        np.testing.assert_allclose(vals[f"{col}_low"], vals[col], rtol=0, atol=1e-12)
    stab = stability_table(df, bootstrap_unit="dataset", n_resamples=100).set_index(
        ["criterion", "factor"]
    )
    fam = stab.loc[("eu", "family")]
    assert fam["W_low"] == fam["W_high"] == pytest.approx(fam["W"], abs=1e-12)
    assert math.isnan(stab.loc[("eu", "dataset"), "W"])  # one level: W undefined
    # resampling instances within the one dataset gives a real interval
    inst = headline_table(df, bootstrap_unit="instance", n_resamples=300)
    assert np.all(inst["rho_eu_risk_high"] - inst["rho_eu_risk_low"] > 0)


# -- headline ---------------------------------------------------------------------------


def _cell(task, method, noise, prior="gp", dataset="d0", **metrics):
    return {
        "cell_key": f"{task}|{method}|h",
        "task_id": task,
        "method": method,
        "method_label": method,
        "method_family": metrics.pop("fam", "gp"),
        "constant_aleatoric": metrics.pop("const", False),
        "status": metrics.pop("status", "ok"),
        "dataset": dataset,
        "family": prior,
        "noise": noise,
        "coverage": "balanced",
        "seed": 0,
        **metrics,
    }


def test_headline_means_restrictions_and_ranks_by_hand():
    rows = [
        _cell("t1", "A", "u-shaped", rho_eu_risk=0.6, rho_au=0.4),
        _cell("t2", "A", "homoscedastic", rho_eu_risk=0.2, rho_au=0.9),
        _cell("t3", "A", "step", rho_eu_risk=0.4, rho_au=0.2),
        _cell("t1", "B", "u-shaped", rho_eu_risk=0.7, rho_au=0.1, const=True),
        _cell("t2", "B", "homoscedastic", rho_eu_risk=0.1, rho_au=0.1, const=True),
        _cell("t3", "B", "step", rho_eu_risk=np.nan, status="failed", const=True),
        _cell("t1", "C", "u-shaped", rho_eu_risk=0.1, rho_au=0.8, fam="nn"),
        _cell("t2", "C", "homoscedastic", rho_eu_risk=0.0, rho_au=0.3, fam="nn"),
        _cell("t3", "C", "step", rho_eu_risk=0.3, rho_au=0.6, fam="nn"),
    ]
    head = headline_table(pd.DataFrame(rows), n_resamples=200).set_index("method")
    assert head.loc["A", "rho_eu_risk"] == pytest.approx(0.4)
    assert (
        head.loc["B", "rho_eu_risk"] == pytest.approx(0.4) and head.loc["B", "rho_eu_risk_n"] == 2
    )
    # ρ(AU, AU*): heteroscedastic instances only; B has constant AU
    assert head.loc["A", "rho_au"] == pytest.approx(0.3) and head.loc["A", "rho_au_n"] == 2
    assert math.isnan(head.loc["B", "rho_au"]) and head.loc["C", "rho_au"] == pytest.approx(0.7)
    # EU ranks on complete instances t1, t2: t1 B>A>C, t2 A>B>C -> A 1.5, B 1.5, C 3
    assert head.loc["A", "mean_rank_eu"] == pytest.approx(1.5)
    assert head.loc["C", "mean_rank_eu"] == pytest.approx(3.0)
    assert head.loc["A", "rank_eu"] == head.loc["B", "rank_eu"] == 1
    # AU ranks among A and C on t1, t3: C, then A on t1; C, then A on t3
    assert (head.loc["C", "mean_rank_au"], head.loc["A", "mean_rank_au"]) == (1.0, 2.0)
    assert head.loc["B", "rank_au"] is pd.NA
    assert list(head["family"]) == ["gp", "gp", "nn"]


# -- matched prior ----------------------------------------------------------------------


def _matched_frame(rng: np.random.Generator) -> pd.DataFrame:
    # filler linear methods l1 > l2 > l3 sit just above g (GP-based), t (trees), n (NN):
    # under its matched prior a family's method gains 0.08 and passes its filler: one rank
    base = {"l1": 0.90, "g": 0.85, "l2": 0.70, "t": 0.65, "l3": 0.50, "n": 0.45}
    fams = {"l1": "linear", "l2": "linear", "l3": "linear", "g": "gp", "t": "trees", "n": "nn"}
    match = {"g": "gp", "t": "hbart", "n": "bnn"}
    rows = []
    for ds in ("d0", "d1", "d2"):
        for prior in ("gp", "hbart", "bnn"):
            for seed in range(4):
                task = f"{ds}-{prior}-{seed}"
                for m, q in base.items():
                    v = q + rng.uniform(-0.01, 0.01) + (0.08 if match.get(m) == prior else 0.0)
                    rows.append(
                        _cell(
                            task, m, "u-shaped", prior=prior, dataset=ds, rho_eu_risk=v, fam=fams[m]
                        )
                    )
    return pd.DataFrame(rows)


def test_matched_prior_advantage_recovers_a_one_rank_effect():
    df = _matched_frame(np.random.default_rng(11))
    fam = matched_prior_advantage(df, n_resamples=300).set_index("family")
    for f, prior in (("gp", "gp"), ("trees", "hbart"), ("nn", "bnn")):
        row = fam.loc[f]
        assert row["matched_prior"] == prior
        assert row["advantage"] == pytest.approx(1.0, abs=1e-12)
        assert row["advantage_low"] == pytest.approx(1.0) and row[
            "advantage_high"
        ] == pytest.approx(1.0)
        assert row["rank_matched_n"] == 12 and row["rank_other_n"] == 24
    assert fam.loc["gp", "rank_matched"] == pytest.approx(1.0)
    assert fam.loc["gp", "rank_other"] == pytest.approx(2.0)
    assert fam.loc["gp", "rank_gp"] == pytest.approx(1.0)
    assert fam.loc["gp", "rank_bnn"] == pytest.approx(2.0)
    assert math.isnan(fam.loc["linear", "advantage"]) and fam.loc["linear", "matched_prior"] == ""
    by_method = matched_prior_advantage(df, by="method", n_resamples=100).set_index("method")
    assert by_method.loc["t", "advantage"] == pytest.approx(1.0)
    # l1 loses first place to g under the GP oracle only
    assert by_method.loc["l1", "rank_gp"] == pytest.approx(2.0)
    assert by_method.loc["l1", "rank_hbart"] == pytest.approx(1.0)


def test_matched_prior_advantage_with_noise_covers_the_effect():
    # a 50 % chance of the boost per instance: expected advantage 0.5, interval covers it
    rng = np.random.default_rng(5)
    df = _matched_frame(rng)
    g_matched = (df["method"] == "g") & (df["family"] == "gp")
    lose = g_matched & (rng.uniform(size=len(df)) < 0.5)
    df.loc[lose, "rho_eu_risk"] -= 0.08
    row = matched_prior_advantage(df, n_resamples=1000).set_index("family").loc["gp"]
    assert row["advantage_low"] <= 0.5 <= row["advantage_high"]
    assert 0.0 < row["advantage"] < 1.0


# -- entanglement -----------------------------------------------------------------------


def test_entanglement_of_an_oracle_is_exactly_zero():
    rows = []
    for seed, noise in enumerate(("smooth-monotone", "u-shaped", "step", "smooth-monotone")):
        task = make_fake_task(seed, noise=noise, dataset=f"d{seed % 2}")
        mean = np.asarray(task.post_mean)
        targets = oracle_targets(
            mean, task.post_mean, task.post_var, task.noise_var_eval, task.f_eval
        )
        for t in ("risk", "var", "point"):
            eu = np.asarray(getattr(targets, f"eu_{t}"))
            pred = Prediction(mean, np.asarray(task.noise_var_eval).copy(), eu.copy())
            metrics, _ = score_prediction(task, pred)
            assert metrics[f"delta_ent_{t}"] == 0.0  # exactly
            assert metrics["rho_eu_au"] == metrics[f"rho_eu_au_star_{t}"]
            rows.append(
                _cell(task.spec.task_id, f"oracle-{t}", noise, dataset=task.spec.dataset, **metrics)
            )
    ent = entanglement_table(pd.DataFrame(rows), n_resamples=200).set_index("method")
    for t in ("risk", "var", "point"):
        row = ent.loc[f"oracle-{t}"]
        assert (row[f"delta_ent_{t}"], row[f"delta_ent_{t}_low"], row[f"delta_ent_{t}_high"]) == (
            0.0,
            0.0,
            0.0,
        )
        assert row[f"delta_ent_{t}_n"] == 4
        assert row["rho_eu_au"] == pytest.approx(row[f"rho_star_{t}"], abs=1e-15)
    # ρ(EU*_var, AU*) depends on the task only: the same for every method
    assert ent["rho_star_var"].nunique() == 1


def test_entanglement_parts_add_up():
    df = fabricate_results(n_datasets=2, n_seeds=2)
    ent = entanglement_table(df, n_resamples=100)
    assert len(ent) == 15  # constant-AU methods are left out
    for t in ("risk", "var", "point"):
        np.testing.assert_allclose(
            ent[f"delta_ent_{t}"], ent["rho_eu_au"] - ent[f"rho_star_{t}"], atol=1e-12
        )
        assert (ent[f"delta_ent_{t}_n"] == 2 * 3 * 3 * 2 * 2).all()  # heteroscedastic only


# -- shells, accuracy, LaTeX, errors ------------------------------------------------------


def test_shell_and_accuracy_tables():
    df = fabricate_results(n_datasets=2, n_seeds=2)
    sh = shell_table(df, n_resamples=100).set_index("method")
    gp = df[df["method"] == "gp"]
    assert sh.loc["gp", "shell3"] == pytest.approx(gp["rho_eu_risk_shell3"].mean())
    assert sh.loc["gp", "outer_minus_inner"] == pytest.approx(
        (gp["rho_eu_risk_shell4"] - gp["rho_eu_risk_shell0"]).mean()
    )
    acc = accuracy_table(df, n_resamples=100)
    assert acc.iloc[0]["rank_nmse"] == 1
    assert acc.set_index("method").loc["gp", "nmse"] == pytest.approx(gp["nmse"].mean())
    assert (acc["nmse_low"] <= acc["nmse"] + 1e-12).all()


def test_latex_table_is_booktabs_and_escaped():
    table = pd.DataFrame(
        {
            "method": ["nn_x&y"],
            "rho_eu_risk": [0.5],
            "rho_eu_risk_low": [0.4],
            "rho_eu_risk_high": [0.6],
            "rho_eu_risk_n": [3],
        }
    )
    tex = latex_table(table, caption="A 95% table", label="tab:x")
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    assert r"nn\_x\&y & 0.500 [0.400, 0.600] \\" in tex
    assert r"$\rho$(EU, EU*\_risk)" in tex and r"95\%" in tex


def test_bad_settings_are_clear_errors():
    df = fabricate_results(n_datasets=1, n_seeds=1)
    with pytest.raises(UdbenchError, match="'bootstrap_unit' must be one of"):
        headline_table(df, bootstrap_unit="task")
    with pytest.raises(UdbenchError, match="'n_resamples' must be an integer >= 1"):
        headline_table(df, n_resamples=0)
    with pytest.raises(UdbenchError, match="'confidence' must be a number in"):
        headline_table(df, confidence=1.5)
    with pytest.raises(UdbenchError, match="no ok cell"):
        headline_table(df.assign(status="failed"))
    with pytest.raises(UdbenchError, match="results table is empty"):
        stability_table(df.iloc[:0])
