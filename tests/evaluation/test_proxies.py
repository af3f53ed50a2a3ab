"""Proxy metrics (udbench.evaluation.proxies): hand computations, calibration, determinism."""

from __future__ import annotations

import numpy as np
import pytest
import scoringrules as sr
from scipy import stats

from _fakes import MeanMethod, make_fake_task
from udbench._validation import UdbenchError
from udbench.evaluation.proxies import (
    PROXY_KEYS,
    calibration_curve,
    noisy_targets,
    oriented,
    proxy_metrics,
)
from udbench.evaluation.scoring import score_prediction


def _gauss(n: int, seed: int, sd_scale: float = 1.0):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=n)
    sd = rng.uniform(0.5, 2.0, size=n)
    y = m + sd * rng.standard_normal(n)
    # AU + EU = (sd * scale)²
    return m, 0.7 * (sd * sd_scale) ** 2, 0.3 * (sd * sd_scale) ** 2, y


def test_crps_nll_against_closed_forms():
    m, au, eu, y = _gauss(50, 1)
    out = proxy_metrics(m, au, eu, y)
    s = np.sqrt(au + eu)
    z = (y - m) / s
    crps = s * (z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / np.sqrt(np.pi))
    assert out["crps"] == pytest.approx(np.mean(crps), abs=1e-10)
    nll = 0.5 * np.log(2 * np.pi * s**2) + 0.5 * z**2
    assert out["nll"] == pytest.approx(np.mean(nll), abs=1e-10)
    assert out["crps"] == pytest.approx(float(np.mean(sr.crps_normal(y, m, s))), abs=1e-10)
    assert out["nll"] == pytest.approx(float(np.mean(sr.logs_normal(y, m, s))), abs=1e-10)
    # far in the tail the log score stays finite (scoringrules' log of the density is inf)
    far = proxy_metrics(np.zeros(2), np.full(2, 1e-6), np.zeros(2), np.array([1.0, -1.0]))
    assert far["nll"] == pytest.approx(0.5 * np.log(2 * np.pi * 1e-6) + 0.5 / 1e-6)
    assert out["sharpness"] == pytest.approx(np.sqrt(np.mean(s**2)), rel=1e-12)


def test_interval_metrics_by_hand():
    # two points, sd 1, mean 0: y = 0.5 inside every interval, y = 3 outside every one
    m, var, y = np.zeros(2), np.ones(2), np.array([0.5, 3.0])
    out = proxy_metrics(m, var, np.zeros(2), y)
    for q in (50, 90, 95):
        alpha = 1 - q / 100
        z = stats.norm.ppf(1 - alpha / 2)
        assert out[f"picp_{q}"] == pytest.approx(0.5)
        assert out[f"mpiw_{q}"] == pytest.approx(2 * z)
        winkler = np.mean([2 * z, 2 * z + 2 / alpha * (3.0 - z)])
        assert out[f"winkler_{q}"] == pytest.approx(winkler, rel=1e-12)


def test_picp_of_calibrated_gaussian_is_nominal_within_3_se():
    n, seeds = 1500, 20
    cover = {q: [] for q in (50, 90, 95)}
    for seed in range(seeds):
        m, au, eu, y = _gauss(n, seed)
        out = proxy_metrics(m, au, eu, y)
        for q in cover:
            cover[q].append(out[f"picp_{q}"])
    for q, vals in cover.items():
        p = q / 100
        se = np.sqrt(p * (1 - p) / (n * seeds))
        assert abs(np.mean(vals) - p) < 3 * se, (q, np.mean(vals))


def test_ence_and_miscal_area_separate_calibrated_from_overdispersed():
    m, au, eu, y = _gauss(5000, 3)
    good = proxy_metrics(m, au, eu, y)
    _, au2, eu2, _ = _gauss(5000, 3, sd_scale=2.0)
    wide = proxy_metrics(m, au2, eu2, y)
    assert good["ence"] < 0.08
    # SD doubled: |RMV − RMSE| / RMV ≈ |2 − 1| / 2 per bin
    assert wide["ence"] == pytest.approx(0.5, abs=0.05)
    assert good["miscal_area"] < 0.02
    # closed form of the area for SD ×2: ∫ |(2Φ(z_p/2) − 1) − p| dp
    p = np.linspace(0, 1, 2001)
    obs = 2 * stats.norm.cdf(stats.norm.ppf((1 + np.clip(p, 0, 1 - 1e-12)) / 2) / 2) - 1
    assert wide["miscal_area"] == pytest.approx(np.trapezoid(np.abs(obs - p), p), abs=0.02)
    assert wide["miscal_area"] > 0.1


def test_ause_zero_for_oracle_order_and_tie_invariant():
    rng = np.random.default_rng(5)
    m, y = np.zeros(200), rng.standard_normal(200)
    # uncertainty ordered exactly like the error: no sparsification error
    out = proxy_metrics(m, np.abs(y) + 0.01, np.zeros(200), y)
    assert out["ause"] == pytest.approx(0.0, abs=1e-12)
    assert out["spearman_err_sd"] == pytest.approx(1.0)
    # constant uncertainty: the expected curve is flat at 1, whatever the point order
    flat = proxy_metrics(m, np.ones(200), np.zeros(200), y)
    perm = rng.permutation(200)
    flat2 = proxy_metrics(m, np.ones(200), np.zeros(200), y[perm])
    assert flat["ause"] == pytest.approx(flat2["ause"], abs=1e-12)
    assert flat["ause"] > 0.2
    assert np.isnan(flat["spearman_err_sd"]) and "SD is constant" in flat["nan_reasons"]


def test_ause_hand_computed_with_two_steps():
    # errors² 4, 1, 0, 9 (sorted by uncertainty 1 < 2 < 3 < 4); remove 0 and 2 of 4 points
    m, y = np.zeros(4), np.array([2.0, 1.0, 0.0, 3.0])
    unc = np.array([1.0, 2.0, 3.0, 4.0])
    out = proxy_metrics(m, unc, np.zeros(4), y, ause_steps=2)
    total = 14 / 4
    curve = np.array([1.0, np.sqrt((4 + 1) / 2 / total)])
    oracle = np.array([1.0, np.sqrt((0 + 1) / 2 / total)])
    assert out["ause"] == pytest.approx(np.trapezoid(curve - oracle, [0, 0.5]), rel=1e-12)


def test_zero_variance_gives_nan_with_reason_and_f_metrics():
    m, y, f = np.zeros(20), np.linspace(-1, 1, 20), np.linspace(-0.5, 0.5, 20)
    out = proxy_metrics(m, np.zeros(20), np.zeros(20), y, f)
    assert all(np.isnan(out[k]) for k in PROXY_KEYS if k != "ause_f")
    assert "nll: predictive variance AU + EU is 0 at 20 of 20 points" in out["nan_reasons"]
    assert "nll_f: EU is 0" in out["nan_reasons"]
    eu = np.full(20, 0.25)
    out = proxy_metrics(m, np.ones(20), eu, y, f)
    assert out["crps_f"] == pytest.approx(float(np.mean(sr.crps_normal(f, m, 0.5))), abs=1e-12)
    assert out["nll_f"] == pytest.approx(float(np.mean(-stats.norm.logpdf(f, 0, 0.5))), rel=1e-12)
    with pytest.raises(UdbenchError, match="aleatoric"):
        proxy_metrics(m, -np.ones(20), eu, y)


def test_noisy_targets_deterministic_and_distributed_as_noise():
    f, var = np.zeros(4000), np.full(4000, 0.25)
    a = noisy_targets("task-a", f, var)
    np.testing.assert_array_equal(a, noisy_targets("task-a", f, var))
    assert not np.allclose(a, noisy_targets("task-b", f, var))
    assert np.std(a) == pytest.approx(0.5, rel=0.05)
    np.testing.assert_array_equal(noisy_targets("t", f, np.zeros(4000)), f)


def test_oracle_predictor_best_on_proper_scores_in_expectation():
    """The oracle predictive N(m_S, σ² + σ_f²) beats shifted / mis-scaled ones on average."""
    n, seeds = 400, 30
    scores: dict[str, dict[str, list[float]]] = {}
    for seed in range(seeds):
        rng = np.random.default_rng(100 + seed)
        m_s = rng.normal(size=n)
        var_f = rng.uniform(0.05, 0.5, n)  # posterior variance of f
        noise = rng.uniform(0.1, 1.0, n)
        f = m_s + np.sqrt(var_f) * rng.standard_normal(n)  # f* drawn from the posterior
        y = noisy_targets(f"seeded-{seed}", f, noise)
        candidates = {
            "oracle": (m_s, noise, var_f),
            "shifted": (m_s + 0.3, noise, var_f),
            "wide": (m_s, 2 * noise, 2 * var_f),
            "narrow": (m_s, 0.5 * noise, 0.5 * var_f),
            "au only": (m_s, noise, np.zeros(n)),
            "flat": (m_s, np.full(n, noise.mean()), np.full(n, var_f.mean())),
        }
        for name, (mu, au, eu) in candidates.items():
            out = proxy_metrics(mu, au, eu, y, f)
            for k in ("nll", "crps", "winkler_50", "winkler_90", "winkler_95"):
                scores.setdefault(k, {}).setdefault(name, []).append(float(out[k]))
    for k, by in scores.items():
        means = {name: np.mean(v) for name, v in by.items()}
        assert min(means, key=means.__getitem__) == "oracle", (k, means)


def test_oriented_turns_every_proxy_higher_is_better():
    assert oriented("nll", [1.0, 2.0]).tolist() == [-1.0, -2.0]
    assert oriented("spearman_err_sd", [0.3]).tolist() == [0.3]
    assert oriented("picp_90", [0.8, 0.95, 0.9]).tolist() == pytest.approx([-0.1, -0.05, 0.0])
    with pytest.raises(UdbenchError, match="key"):
        oriented("rho_eu_risk", [1.0])


def test_calibration_curve_matches_picp():
    m, au, eu, y = _gauss(300, 8)
    _, obs = calibration_curve(m, au + eu, y, [0.0, 0.5, 0.9, 1.0])
    out = proxy_metrics(m, au, eu, y)
    assert obs[0] == 0.0 and obs[-1] == 1.0
    assert obs[1] == pytest.approx(out["picp_50"]) and obs[2] == pytest.approx(out["picp_90"])
    with pytest.raises(UdbenchError, match="variance"):
        calibration_curve(m, np.zeros(300), y)


def test_score_prediction_stores_proxies_against_task_targets():
    task = make_fake_task(2)
    method = MeanMethod().fit(task.X_train, task.y_train)
    pred = method.predict(task.X_eval)
    metrics, _ = score_prediction(task, pred, constant_aleatoric=True)
    y = noisy_targets(task.spec.task_id, task.f_eval, task.noise_var_eval)
    want = proxy_metrics(pred.mean, pred.aleatoric, pred.epistemic, y, task.f_eval)
    for k in PROXY_KEYS:
        np.testing.assert_allclose(metrics[k], want[k], rtol=1e-12, err_msg=k)
    assert np.isfinite(metrics["crps"]) and np.isfinite(metrics["crps_f"])
