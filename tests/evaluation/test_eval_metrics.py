"""Tests of the benchmark's metrics (SPEC §10) against hand-worked values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from udbench._validation import UdbenchError
from udbench.evaluation.metrics import (
    auroc,
    bootstrap_ci,
    excess_entanglement,
    instance_metrics,
    kendall_tau,
    kendall_w,
    mean_ranks,
    spearman,
)
from udbench.methods.base import Prediction
from udbench.risk import oracle_targets


def test_spearman_with_ties_hand_value():
    # midranks x: [1, 2.5, 2.5, 4], y: [1, 3, 2, 4]; ρ = 4.5 / sqrt(4.5 · 5)
    res = spearman([1, 2, 2, 3], [1, 3, 2, 4])
    assert res.defined and res.reason is None
    assert res.value == pytest.approx(4.5 / np.sqrt(22.5), rel=1e-12)


def test_spearman_constant_input_is_nan_with_reason_and_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = spearman([1.0, 2.0, 3.0], [5.0, 5.0, 5.0], names=("EU", "AU"))
        short = spearman([1.0, 2.0], [2.0, 1.0])
    assert np.isnan(res.value) and res.reason == "AU is constant"
    assert np.isnan(short.value) and "fewer than 3" in short.reason


def test_spearman_bad_input():
    with pytest.raises(UdbenchError, match="'y'"):
        spearman([1, 2, 3], [1, 2])
    with pytest.raises(UdbenchError, match="'x'"):
        spearman([1, np.nan, 3], [1, 2, 3])


def test_kendall_tau_hand_value():
    # concordant 5, discordant 1 of 6 pairs → τ = 4/6
    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]).value == pytest.approx(2 / 3)
    assert np.isnan(kendall_tau([1, 2, 3], [1, 1, 1]).value)


def test_kendall_w_identical_rankings_is_one():
    table = np.tile([0.3, 0.1, 0.9, 0.5], (5, 1))
    assert kendall_w(table).value == pytest.approx(1.0)


def test_kendall_w_hand_worked_table_with_ties():
    # rows (levels) rank 4 methods; row 2 ties methods 1-2, row 3 ties methods 3-4.
    # rank sums 4.5, 4.5, 9.5, 11.5; S = 38; T = 6 + 6; W = 12·38 / (9·60 − 3·12) = 19/21
    table = [[1, 2, 3, 4], [1, 1, 3, 4], [2, 1, 4, 4]]
    assert kendall_w(table).value == pytest.approx(19 / 21, rel=1e-12)
    # the direction of ranking does not change W
    assert kendall_w(-np.asarray(table, dtype=float)).value == pytest.approx(19 / 21)


def test_kendall_w_two_rankings_equals_one_plus_spearman_over_two():
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.permutation(7), rng.permutation(7)
        rho = stats.spearmanr(a, b).statistic
        assert kendall_w([a, b]).value == pytest.approx((1 + rho) / 2, rel=1e-12)


def test_kendall_w_undefined_cases():
    assert np.isnan(kendall_w([[1, 1, 1], [2, 2, 2]]).value)
    assert kendall_w([[1, 2, 3]]).reason is not None
    with pytest.raises(UdbenchError, match="'table'"):
        kendall_w([[1.0, np.nan], [1.0, 2.0]])


def test_mean_ranks_hand_value():
    table = [[0.9, 0.5, 0.5], [0.1, 0.8, 0.3]]
    # higher is better: row 1 ranks [1, 2.5, 2.5], row 2 ranks [3, 1, 2]
    np.testing.assert_allclose(mean_ranks(table), [2.0, 1.75, 2.25])
    np.testing.assert_allclose(mean_ranks(table, higher_is_better=False), [2.0, 2.25, 1.75])


def test_auroc_hand_value_and_single_class():
    assert auroc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]).value == pytest.approx(0.75)
    assert np.isnan(auroc([0.1, 0.2], [1, 1]).value)
    with pytest.raises(UdbenchError, match="'labels'"):
        auroc([0.1, 0.2], [0, 2])


def test_bootstrap_covers_known_mean_at_nominal_rate():
    # 300 seeded data sets of 30 N(1, 1) values; 95 % percentile intervals (999 resamples).
    # Binomial SD of the coverage ≈ 0.013; percentile intervals under-cover slightly at n = 30,
    # so we accept [0.89, 0.99].
    rng = np.random.default_rng(42)
    hits = 0
    for rep in range(300):
        x = 1.0 + rng.standard_normal(30)
        res = bootstrap_ci(x, n_resamples=999, random_state=rep)
        hits += res.low <= 1.0 <= res.high
    assert 0.89 <= hits / 300 <= 0.99


def test_grouped_bootstrap_covers_with_group_effects():
    # 200 data sets of 15 groups x 8 values, group effect SD 1, noise SD 0.5, true mean 0.
    # Resampling instances ignores the group effect and under-covers badly; groups do not.
    rng = np.random.default_rng(7)
    groups = np.repeat(np.arange(15), 8)
    hit_g = hit_i = 0
    for rep in range(200):
        x = rng.standard_normal(15)[groups] + 0.5 * rng.standard_normal(groups.size)
        g = bootstrap_ci(x, groups=groups, n_resamples=400, random_state=rep)
        i = bootstrap_ci(x, n_resamples=400, random_state=rep)
        hit_g += g.low <= 0.0 <= g.high
        hit_i += i.low <= 0.0 <= i.high
        assert g.unit == "groups" and g.n_units == 15
    assert 0.85 <= hit_g / 200 <= 0.99
    assert hit_i / 200 < 0.7


def test_bootstrap_is_deterministic_and_checks_input():
    x = np.arange(10.0)
    a, b = bootstrap_ci(x, random_state=1), bootstrap_ci(x, random_state=1)
    assert (a.low, a.high) == (b.low, b.high)
    assert bootstrap_ci(x, statistic=np.median).estimate == pytest.approx(4.5)
    with pytest.raises(UdbenchError, match="'confidence'"):
        bootstrap_ci(x, confidence=1.5)
    with pytest.raises(UdbenchError, match="'groups'"):
        bootstrap_ci(x, groups=np.zeros(3))


def test_excess_entanglement_hand_value():
    eu, au = [1, 2, 3, 4], [1, 2, 4, 3]  # ρ = 0.8
    eu_s, au_s = [1, 2, 3, 4], [4, 3, 2, 1]  # ρ = −1
    assert excess_entanglement(eu, au, eu_s, au_s).value == pytest.approx(1.8)
    res = excess_entanglement(eu, au, eu_s, [1, 1, 1, 1])
    assert np.isnan(res.value) and res.reason == "AU* is constant"


def test_instance_metrics_values_and_reasons():
    n = 6
    f_star = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    mean = f_star + np.array([0.5, -0.5, 0.5, -0.5, 0.5, -0.5])
    post_var = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    noise = np.linspace(0.2, 0.7, n)
    targets = oracle_targets(mean, f_star, post_var, noise, f_star)
    pred = Prediction(mean=mean, aleatoric=np.full(n, 0.3), epistemic=targets.eu_risk.copy())
    out = instance_metrics(pred, targets)
    assert out["rho_eu_risk"] == pytest.approx(1.0)
    assert out["rho_eu_var"] == pytest.approx(1.0)  # eu_risk = post_var + 0.25 here
    assert np.isnan(out["rho_eu_point"])  # EU*_point constant (0.25)
    assert np.isnan(out["rho_au"]) and np.isnan(out["delta_ent_risk"])
    assert out["rmse"] == pytest.approx(0.5)
    assert out["nmse"] == pytest.approx(0.25 / np.var(f_star))
    assert "rho_au: AU is constant" in out["nan_reasons"]
    assert "rho_eu_point: EU*_point is constant" in out["nan_reasons"]
    keys = {"rho_eu_risk", "rho_eu_var", "rho_eu_point", "rho_au", "delta_ent_risk"}
    parts = {"rho_eu_au", "rho_eu_au_star_risk", "rho_eu_au_star_var", "rho_eu_au_star_point"}
    assert keys | parts | {
        "delta_ent_var",
        "delta_ent_point",
        "rmse",
        "nmse",
        "nan_reasons",
    } == set(out)
    # the parts of Δ_ent: ρ(EU, AU) undefined (AU constant), ρ(EU*_t, AU*) defined
    assert np.isnan(out["rho_eu_au"])
    assert out["rho_eu_au_star_var"] == pytest.approx(1.0)  # post_var and noise both increase
    # heteroscedastic AU estimate equal to AU*: ρ_AU = 1 and Δ_ent defined
    pred2 = Prediction(mean=mean, aleatoric=noise * 2, epistemic=post_var[::-1].copy())
    out2 = instance_metrics(pred2, targets)
    assert out2["rho_au"] == pytest.approx(1.0)
    assert out2["delta_ent_var"] == pytest.approx(-1.0 - 1.0)
    assert out2["delta_ent_var"] == pytest.approx(
        out2["rho_eu_au"] - out2["rho_eu_au_star_var"], abs=1e-15
    )
    assert (
        out2["nan_reasons"]
        == "rho_eu_point: EU*_point is constant; delta_ent_point: EU* is constant; "
        "rho_eu_au_star_point: EU*_point is constant"
    )


def test_flagged_constant_au_and_rounding_noise_are_not_ranked():
    n = 5
    f_star = np.arange(n, dtype=float)
    targets = oracle_targets(
        f_star + 0.1, f_star, np.linspace(0.1, 0.5, n), np.linspace(1, 2, n), f_star
    )
    noisy_flat = 0.3 + np.array([0, 1, -1, 2, 0]) * 1e-17  # a "constant" AU with rounding noise
    pred = Prediction(mean=f_star + 0.1, aleatoric=noisy_flat, epistemic=np.linspace(1, 2, n))
    assert np.isnan(instance_metrics(pred, targets)["rho_au"])
    pred2 = Prediction(mean=f_star + 0.1, aleatoric=np.linspace(1, 3, n), epistemic=np.ones(n) * 2)
    out = instance_metrics(pred2, targets, constant_aleatoric=True)
    assert np.isnan(out["rho_au"]) and np.isnan(out["delta_ent_var"])
    assert "rho_au: method's AU is constant in x (flagged)" in out["nan_reasons"]


def test_instance_metrics_rejects_mismatched_prediction():
    t = oracle_targets([0.0, 1.0, 2.0], [0.0, 1.0, 2.0], [1, 1, 1], [1, 1, 1], [0, 1, 2])
    with pytest.raises(UdbenchError, match=r"'prediction\.epistemic'"):
        instance_metrics(Prediction(np.zeros(3), np.ones(3), np.ones(2)), t)


def test_bootstrap_rejects_bad_n_resamples_and_nan_statistics():
    # review fix: 2.5 was silently truncated to 2, 0.5 gave SciPy's/NumPy's own error
    x = np.arange(10.0)
    groups = np.repeat([0, 1], 5)
    for bad in (0.5, 2.5, 0, True):
        with pytest.raises(UdbenchError, match=r"'n_resamples' must be an integer >= 1"):
            bootstrap_ci(x, n_resamples=bad)
        with pytest.raises(UdbenchError, match=r"'n_resamples' must be an integer >= 1"):
            bootstrap_ci(x, groups=groups, n_resamples=bad)
    assert bootstrap_ci(x, n_resamples=np.int64(50)).n_resamples == 50
    # review fix: a statistic that is NaN gave a NaN interval (a warning at most)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for kwargs in ({}, {"groups": groups}):
            with pytest.raises(UdbenchError, match=r"'statistic' must return a finite value"):
                bootstrap_ci(x, statistic=lambda a: np.nan, **kwargs)
            # finite on the data, NaN on the resamples that miss value 9 (or group 1)
            with pytest.raises(UdbenchError, match=r"on every resample; got 'NaN/inf on \d+ of"):
                bootstrap_ci(x, statistic=lambda a: 1.0 if 9.0 in a else np.nan, **kwargs)


def test_spearman_constant_check_with_equal_names():
    # review fix: the names were dict keys, so equal names skipped the check of the first input
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0], names=("v", "v"))
    assert np.isnan(res.value) and res.reason == "v is constant"
