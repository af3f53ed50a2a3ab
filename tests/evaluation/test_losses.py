"""Scoring under other losses (issue 21 item 2): CRPS and log-score targets, run/score/board."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scoringrules as sr

from _fakes import BadMethod, KnnMethod, MeanMethod, make_fake_task, save_fake_task
from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.evaluation.loss_rescoring import score_results
from udbench.evaluation.losses import (
    LOSS_METRIC_KEYS,
    gaussian_loss_oracle_targets,
    loss_column,
    loss_columns,
    loss_metrics,
    loss_oracle_targets,
    method_loss_terms,
    parse_losses,
    ranking_agreement,
    results_under_loss,
)
from udbench.evaluation.runner import METRIC_KEYS, run_benchmark
from udbench.evaluation.store import read_results
from udbench.methods.base import Prediction

# Gauss–Hermite (probabilists') nodes: E f(Z), Z ~ N(0, 1), exact for polynomials of degree
# < 2·80; the scores below are smooth in y, so the quadrature error is far below 1e-10
_Z, _W = np.polynomial.hermite_e.hermegauss(80)
_W = _W / _W.sum()


def _expect(fn, mean, sd):
    """E fn(Y) for Y ~ N(mean, sd²), per point (quadrature over the last axis)."""
    y = mean[:, None] + sd[:, None] * _Z[None, :]
    return np.sum(fn(y) * _W[None, :], axis=1)


def _prediction(rng, n):
    return rng.normal(size=n), rng.uniform(0.05, 2.0, n), rng.uniform(0.01, 1.5, n)


# ----------------------------------------------------------------- closed forms vs scoringrules
@pytest.mark.parametrize("loss", ["crps", "log"])
def test_method_terms_match_scoringrules(loss):
    """The method's own AU and EU: expected scores of its Gaussian laws, by scoringrules."""
    rng = np.random.default_rng(11)
    mean, au, eu = _prediction(rng, 25)
    au_l, eu_l = method_loss_terms(mean, au, eu, loss)
    score = sr.crps_normal if loss == "crps" else sr.logs_normal
    sd_au, sd_tot = np.sqrt(au), np.sqrt(au + eu)
    # AU = entropy of the noise law: its expected score against itself
    want_au = _expect(lambda y: score(y, mean[:, None], sd_au[:, None]), mean, sd_au)
    # AU + EU = the method's own predictive scored under itself (its total risk)
    want_total = _expect(lambda y: score(y, mean[:, None], sd_tot[:, None]), mean, sd_tot)
    np.testing.assert_allclose(au_l, want_au, rtol=0, atol=1e-10)
    np.testing.assert_allclose(au_l + eu_l, want_total, rtol=0, atol=1e-10)
    assert np.all(eu_l > 0)


@pytest.mark.parametrize("loss", ["crps", "log"])
def test_pointwise_target_matches_scoringrules(loss):
    """EU*_point = expected score of N(â, AU+EU) under the true law N(f*, σ²), minus AU*."""
    rng = np.random.default_rng(12)
    n, d = 15, 200
    mean, au, eu = _prediction(rng, n)
    f_star = rng.normal(size=n)
    noise = rng.uniform(0.1, 1.0, n)
    draws = f_star + 0.3 * rng.standard_normal((d, n))
    t = loss_oracle_targets(draws, noise, f_star, mean, au + eu, loss)
    score = sr.crps_normal if loss == "crps" else sr.logs_normal
    sd = np.sqrt(au + eu)
    expected = _expect(lambda y: score(y, mean[:, None], sd[:, None]), f_star, np.sqrt(noise))
    np.testing.assert_allclose(t.eu_point + t.au, expected, rtol=0, atol=1e-10)
    # AU* is the noise law's entropy under the loss: σ/√π (CRPS), ½ log(2πeσ²) (log score)
    want_au = np.sqrt(noise / np.pi) if loss == "crps" else 0.5 * np.log(2 * np.pi * np.e * noise)
    np.testing.assert_allclose(t.au, want_au, rtol=1e-13)


# --------------------------------------------------------- the oracle's own posterior as method
@pytest.mark.parametrize("loss", ["crps", "log"])
def test_oracle_posterior_targets_equal_its_closed_form_terms(loss):
    """A method reporting the reference posterior itself (â = m, EU = σ_f², AU = σ²): the
    draw-based targets equal its closed-form terms within Monte Carlo error.

    The Monte Carlo error is measured: R independent sets of D Gaussian draws with the
    posterior's moments; the mean over sets must lie within 5 standard errors (SD over
    sets / √R) of the closed form, per point."""
    rng = np.random.default_rng(13)
    n, d, reps = 12, 500, 30
    m = rng.normal(size=n)
    v = rng.uniform(0.05, 1.0, n)  # posterior variance σ_f²
    s2 = rng.uniform(0.05, 1.0, n)  # noise variance σ²
    f_star = m + np.sqrt(v) * rng.normal(size=n)
    au_l, eu_l = method_loss_terms(m, s2, v, loss)
    est_au, est_eu, est_var = [], [], []
    for r in range(reps):
        draws = m + np.sqrt(v) * np.random.default_rng(100 + r).standard_normal((d, n))
        t = loss_oracle_targets(draws, s2, f_star, m, s2 + v, loss, random_state=r)
        est_au.append(t.au)
        est_eu.append(t.eu_risk)
        est_var.append(t.eu_var)
    np.testing.assert_allclose(np.mean(est_au, axis=0), au_l, rtol=1e-12)  # exact on both sides
    for est in (est_eu, est_var):  # EU*_risk (gap ≈ 0) and the generalized variance alone
        est = np.asarray(est)
        se = est.std(axis=0, ddof=1) / np.sqrt(reps)
        err = np.abs(est.mean(axis=0) - eu_l)
        assert np.all(err <= 5 * se + 1e-12), (err / se).max()
    # and the per-instance metrics of that method rank EU near-perfectly (D = 2000 draws)
    n = 60
    m, v, s2 = rng.normal(size=n), rng.uniform(0.05, 1.0, n), rng.uniform(0.05, 1.0, n)
    task = SimpleNamespace(
        draws=m + np.sqrt(v) * rng.standard_normal((2000, n)),
        noise_var_eval=s2,
        f_eval=m + np.sqrt(v) * rng.normal(size=n),
        shell_eval=np.arange(n) % 5,
    )
    metrics, _ = loss_metrics(task, Prediction(m, s2, v), (loss,))
    assert metrics[loss_column("rho_eu_var", loss)] > 0.95
    assert metrics[loss_column("rho_eu_risk", loss)] > 0.95
    assert metrics[loss_column("rho_au", loss)] == pytest.approx(1.0)


def test_log_score_zero_aleatoric_is_nan_with_reason():
    task = make_fake_task(0)
    n = task.X_eval.shape[0]
    pred = Prediction(np.zeros(n), np.zeros(n), task.post_var.copy())
    metrics, notes = loss_metrics(task, pred, ("crps", "log"))
    assert np.isfinite(metrics["rho_eu_risk_crps"])  # CRPS of a zero noise is defined
    assert all(np.isnan(metrics[c]) for c in loss_columns("log"))
    assert any(n_.startswith("log: AU is 0 at 60 point(s)") for n_ in notes)


def test_parse_losses_and_columns():
    assert parse_losses("x", "crps, log,squared,crps") == ("crps", "log")
    assert parse_losses("x", "squared") == ()
    with pytest.raises(UdbenchError, match=r"parameter '--loss' must be one of"):
        parse_losses("x", "crps,brier")
    with pytest.raises(UdbenchError, match="--loss"):
        parse_losses("x", " , ")
    assert loss_column("rho_eu_risk", "squared") == "rho_eu_risk"
    assert loss_column("rho_eu_risk_shell3", "log") == "rho_eu_risk_shell3_log"
    assert loss_column("rmse", "crps") == "rmse"  # not loss-dependent
    assert len(loss_columns("crps")) == len(LOSS_METRIC_KEYS)


# ------------------------------------------------------------------ run, score, leaderboard
@pytest.fixture
def task_dir(tmp_path):
    folder = tmp_path / "tasks"
    save_fake_task(make_fake_task(0, n_train=30), folder)
    save_fake_task(make_fake_task(1, n_train=40, noise="homoscedastic"), folder)
    save_fake_task(make_fake_task(2, n_train=35, noise="step"), folder)
    return folder


_METHODS = [MeanMethod(), KnnMethod(k=4), ("knn8", KnnMethod(k=8))]


def _sorted(df):
    return df.sort_values("cell_key").reset_index(drop=True)


def test_default_run_unchanged_and_score_keeps_stored_metrics(task_dir, tmp_path):
    """Squared loss stays bit-identical: a run without --loss has no loss columns and the
    same metrics as a run with it; `score` adds the loss columns (equal to those of
    `run --loss`) and leaves every stored squared-loss metric exactly as it was."""
    plain, lossy = tmp_path / "plain", tmp_path / "lossy"
    methods = [*_METHODS, BadMethod()]  # failed rows too: their text columns hold strings
    run_benchmark([task_dir], methods, plain, workers=0, keep_predictions=True)
    run_benchmark(
        [task_dir], methods, lossy, workers=0, keep_predictions=True, losses=["crps", "log"]
    )
    a, b = _sorted(read_results(plain)), _sorted(read_results(lossy))
    assert (a["status"] == "failed").sum() == 3
    assert not any(c.endswith(("_crps", "_log")) for c in a.columns)
    assert set(loss_columns("crps")) <= set(b.columns)
    shells = [f"rho_eu_{t}_shell{s}" for s in range(5) for t in ("risk", "var")]
    for key in (*METRIC_KEYS, *shells):
        np.testing.assert_array_equal(a[key].to_numpy(float), b[key].to_numpy(float))
    before = a.copy()
    summary = score_results(plain, ["crps", "log"])
    assert (summary.n_ok, summary.n_scored, summary.n_already, summary.skipped) == (9, 9, 0, [])
    after = _sorted(read_results(plain))
    assert not list((plain / "cells" / "quarantine").glob("*"))  # no part set aside
    for col in before.columns:  # every stored value unchanged (notes gain the loss notes)
        if col == "metric_notes":
            continue
        pd.testing.assert_series_equal(before[col], after[col], check_dtype=False)
    for col in (*loss_columns("crps"), *loss_columns("log")):
        np.testing.assert_allclose(
            after[col].to_numpy(float), b[col].to_numpy(float), rtol=0, atol=1e-12
        )
    # a second call finds nothing to do; --force scores again, to the same values
    assert score_results(plain, ["crps"]).n_already == 9
    assert score_results(plain, ["log"], force=True).n_scored == 9
    again = _sorted(read_results(plain))
    np.testing.assert_array_equal(again["rho_eu_risk_log"], after["rho_eu_risk_log"])
    assert again["metric_notes"].tolist() == after["metric_notes"].tolist()  # not doubled


def test_score_without_predictions_says_why(task_dir, tmp_path, capsys):
    out = tmp_path / "res"
    run_benchmark([task_dir], [MeanMethod()], out, workers=0)
    summary = score_results(out, ["crps"])
    assert summary.n_scored == 0 and len(summary.skipped) == 3
    assert all("--keep-predictions" in why for _, why in summary.skipped)
    assert main(["score", str(out), "--loss", "crps"]) == 3
    assert "could not be scored" in capsys.readouterr().out
    assert main(["score", str(out), "--loss", "hinge"]) == 2
    assert "parameter '--loss' must be one of" in capsys.readouterr().err
    assert main(["leaderboard", str(out), "--loss", "crps"]) == 2
    err = capsys.readouterr().err
    assert "udbench leaderboard: these results hold no crps metrics" in err
    assert "udbench score" in err


def test_cli_run_loss_then_leaderboard_and_tau(task_dir, tmp_path, capsys):
    out = tmp_path / "res"
    args = ["run", str(task_dir), "-m", "_fakes:KnnMethod", "-m", "_fakes:MeanMethod"]
    args += ["-m", "_fakes:KnnMethod:k=8", "-o", str(out), "-w", "0", "--no-progress"]
    assert main([*args, "--loss", "crps,log", "--keep-predictions"]) == 0
    capsys.readouterr()
    df = read_results(out)
    assert df["rho_eu_risk_crps"].notna().all() and df["rho_eu_risk_log"].notna().all()
    assert main(["leaderboard", str(out), "--loss", "log", "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    mapped = results_under_loss(df, "log")
    for rec in board:
        rows = mapped[mapped["method_label"] == rec["method"]]
        assert rec["rho_eu_risk"] == pytest.approx(rows["rho_eu_risk_log"].mean())
    assert main(["leaderboard", str(out), "--loss", "crps"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    tau, n = ranking_agreement(df, "crps")
    assert n == 3
    assert f"Kendall's τ with the squared-loss ranking: {tau:.3f} (3 methods)" in text
    # a second run with --loss over finished cells points at `udbench score`
    assert main([*args, "--loss", "crps"]) == 0
    assert f"udbench score {out} --loss crps" in " ".join(capsys.readouterr().out.split())


# --------------------------------------------------------- Kendall's τ on fabricated rankings
def _fabricated(sq, other):
    """Results of 4 methods on 3 instances with given mean ρ per method (both losses)."""
    rows = []
    for t in range(3):
        for m, (a, b) in enumerate(zip(sq, other, strict=True)):
            rows.append(
                {
                    "cell_key": f"t{t}|m{m}",
                    "task_id": f"d{t % 2}__gp__step__balanced__s{t}",
                    "dataset": f"d{t % 2}",
                    "family": "gp",
                    "noise": "step",
                    "coverage": "balanced",
                    "seed": t,
                    "method": f"m{m}",
                    "method_label": f"m{m}",
                    "status": "ok",
                    "constant_aleatoric": False,
                    "rho_eu_risk": a + 0.01 * t,
                    "rho_eu_risk_crps": b + 0.01 * t,
                }
            )
    return pd.DataFrame(rows)


def test_ranking_agreement_known_tau():
    # squared ranks m0 > m1 > m2 > m3; CRPS swaps m1 and m2: one discordant pair of six
    df = _fabricated([0.9, 0.7, 0.5, 0.3], [0.8, 0.4, 0.6, 0.1])
    tau, n = ranking_agreement(df, "crps")
    assert n == 4 and tau == pytest.approx((5 - 1) / 6)
    rev = _fabricated([0.9, 0.7, 0.5, 0.3], [0.1, 0.3, 0.5, 0.7])
    assert ranking_agreement(rev, "crps")[0] == pytest.approx(-1.0)

    from udbench.analyses.losses import loss_agreement_table

    table = loss_agreement_table(df, n_resamples=200)
    pooled = table[table["factor"] == "all"].iloc[0]
    assert pooled["loss"] == "crps" and pooled["tau"] == pytest.approx(4 / 6)
    assert pooled["tau_low"] <= pooled["tau"] <= pooled["tau_high"]
    # every replicate keeps the same orders here (offsets per instance are shared): width 0
    assert pooled["tau_low"] == pytest.approx(4 / 6) and pooled["tau_high"] == pytest.approx(4 / 6)
    assert set(table["factor"]) == {"all", "family", "noise", "coverage", "dataset"}


def test_analyze_with_loss(task_dir, tmp_path):
    from udbench.analyses import analyze

    out = tmp_path / "res"
    run_benchmark([task_dir], _METHODS, out, workers=0, losses=["crps"])
    df = read_results(out)
    res = analyze(df, tmp_path / "an", n_resamples=50, loss="crps")
    head = res.tables["headline"].set_index("method")
    mapped = results_under_loss(df, "crps")
    for m, rows in mapped.groupby("method_label"):
        assert head.loc[m, "rho_eu_risk"] == pytest.approx(rows["rho_eu_risk_crps"].mean())
    agree = res.tables["loss_agreement"]
    assert (agree["loss"] == "crps").all()
    assert (tmp_path / "an" / "tables" / "loss_agreement.csv").is_file()
    plain = analyze(df.drop(columns=list(loss_columns("crps"))), tmp_path / "an2", n_resamples=50)
    assert "loss_agreement" not in plain.tables  # results without other losses: no table
    with pytest.raises(UdbenchError, match="no log metrics"):
        analyze(df, tmp_path / "an3", n_resamples=50, loss="log")


def test_log_score_cache_gives_the_same_targets():
    """`udbench score` computes the method-independent log-score term once per task."""
    rng = np.random.default_rng(14)
    n = 30
    draws = rng.normal(size=n) + 0.4 * rng.standard_normal((300, n))
    noise, f_star = rng.uniform(0.1, 1.0, n), rng.normal(size=n)
    cache: dict = {}
    for _ in range(3):  # three methods on one task
        mean, au, eu = _prediction(rng, n)
        fresh = loss_oracle_targets(draws, noise, f_star, mean, au + eu, "log")
        cached = loss_oracle_targets(draws, noise, f_star, mean, au + eu, "log", cache=cache)
        for name in ("au", "eu_risk", "eu_var", "eu_point", "total_risk"):
            np.testing.assert_allclose(
                getattr(cached, name), getattr(fresh, name), rtol=0, atol=1e-13
            )
    assert len(cache) == 1


@pytest.mark.parametrize("loss", ["crps", "log"])
def test_gaussian_targets_agree_with_draw_targets_within_mc_error(loss):
    """``udbench transfer --loss`` takes the targets in closed form from posterior moments:
    for a method that is not the posterior (â ≠ m, its own variances), the draw-based
    targets of R independent sets of D Gaussian draws average to the closed form within 5
    standard errors per point; AU* and EU*_point do not use the posterior at all."""
    rng = np.random.default_rng(29)
    n, d, reps = 12, 500, 30
    m = rng.normal(size=n)
    v, s2 = rng.uniform(0.05, 1.0, n), rng.uniform(0.05, 1.0, n)
    f_star = m + np.sqrt(v) * rng.normal(size=n)
    mu, pv = m + 0.7 * rng.normal(size=n), rng.uniform(0.1, 2.0, n)  # a deployed predictive
    exact = gaussian_loss_oracle_targets(m, v, s2, f_star, mu, pv, loss)
    est = {"eu_risk": [], "eu_var": []}
    for r in range(reps):
        draws = m + np.sqrt(v) * np.random.default_rng(300 + r).standard_normal((d, n))
        t = loss_oracle_targets(draws, s2, f_star, mu, pv, loss, random_state=r)
        np.testing.assert_allclose(t.eu_point, exact.eu_point, rtol=1e-12)
        if loss == "crps":  # the log score's AU term is the mixture entropy minus I(Y; F)
            np.testing.assert_allclose(t.au, exact.au, rtol=1e-12)
        for k in est:
            est[k].append(getattr(t, k))
    for k, vals in est.items():
        vals = np.asarray(vals)
        se = vals.std(axis=0, ddof=1) / np.sqrt(reps)
        err = np.abs(vals.mean(axis=0) - getattr(exact, k))
        assert np.all(err <= 5 * se + 1e-12), (k, (err / se).max())
    with pytest.raises(UdbenchError, match="loss"):
        gaussian_loss_oracle_targets(m, v, s2, f_star, mu, pv, "squared")
