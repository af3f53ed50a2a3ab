"""The coverage and MC = exact gates pass a correct posterior at their stated rate (issue 31,
item 1): the central interval of D draws is judged against what a correct posterior gives at
that D (exactly, from the rank statistics), with a test valid for any number of instances.

On the rule before (0.90 inside a bootstrap interval of the pooled coverage of interpolated
5 %/95 % quantiles) exact posteriors at D = 40 failed nearly always (coverage ≈ 0.854) and a
single instance could only fail.
"""

from __future__ import annotations

import numpy as np
import pytest

from udbench.priors.gp import GPPrior
from udbench.tasks import TaskSpec, acceptance_checks, gate_verdicts, make_task, pool_checks
from udbench.tasks.checks import (
    GATE_LEVEL,
    coverage_counts,
    coverage_rank_bounds,
    expected_coverage,
    sbc_expected_shares,
    sbc_ranks,
)


@pytest.mark.parametrize(
    ("D", "k", "expected"),
    [(40, 2, 37 / 41), (200, 10, 181 / 201), (199, 10, 180 / 200), (1000, 50, 901 / 1001)],
)
def test_expected_coverage_is_the_order_statistic_closed_form(D, k, expected) -> None:
    # k = max(1, floor(0.05 (D + 1) + 1/2)); P(k <= rank <= D - k) = (D + 1 - 2k) / (D + 1)
    assert coverage_rank_bounds(D) == (k, D - k)
    assert expected_coverage(D) == pytest.approx(expected, abs=1e-15)


def test_expected_coverage_agrees_with_monte_carlo() -> None:
    # 20000 exchangeable (f*, 40 draws) sets: the share inside the interval is the closed
    # form within 4 binomial standard errors (the old interpolated rule gave 0.854)
    rng = np.random.default_rng(0)
    values = rng.standard_normal((41, 20000))
    covered, _ = coverage_counts(values[0], values[1:])
    p0 = expected_coverage(40)
    assert abs(covered / 20000 - p0) < 4 * np.sqrt(p0 * (1 - p0) / 20000)
    old = np.quantile(values[1:], [0.05, 0.95], axis=0)
    old_share = np.mean((values[0] >= old[0]) & (values[0] <= old[1]))
    assert abs(old_share - 0.854) < 0.01  # the bias the rule removes


def test_coverage_counts_match_the_ranks_and_average_exactly() -> None:
    rng = np.random.default_rng(1)
    D, m = 40, 300
    f, draws = rng.standard_normal(m), rng.standard_normal((D, m))
    covered, null = coverage_counts(f, draws)
    lo, hi = coverage_rank_bounds(D)
    ranks = sbc_ranks(f, draws)
    assert covered == int(np.sum((ranks >= lo) & (ranks <= hi)))
    assert null.shape == (D,) and null.dtype == np.int64
    # draw j as the truth: its rank among the other D values decides, as for f*
    j = 7
    others = np.delete(np.vstack([f, draws]), j + 1, axis=0)
    r_j = np.sum(others < draws[j], axis=0)
    assert null[j] == int(np.sum((r_j >= lo) & (r_j <= hi)))
    # the D + 1 counts average exactly p0 * m (each point covers D + 1 - 2k of D + 1 values)
    assert (covered + null.sum()) / (D + 1) == pytest.approx(expected_coverage(D) * m, abs=1e-9)


def test_sbc_expected_shares_are_exact_at_small_d() -> None:
    shares = sbc_expected_shares(40)  # 41 ranks in 20 bins: 19 bins of 2, one of 3
    assert shares.sum() == pytest.approx(1.0)
    assert sorted(np.round(shares * 41).astype(int).tolist()) == [2] * 19 + [3]
    assert np.allclose(sbc_expected_shares(99), 0.05)  # 100 ranks: 5 per bin


def _posterior(m: int = 30, lengthscale: float = 0.15) -> tuple[np.ndarray, np.ndarray]:
    """Mean and Cholesky factor of a correlated Gaussian posterior at m points on [0, 1]."""
    x = np.linspace(0.0, 1.0, m)
    K = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / lengthscale**2) + 1e-8 * np.eye(m)
    return np.sin(6 * x), np.linalg.cholesky(K)


def _verdicts(rng, D: int, k: int, sd: float = 1.0, var_factor: float = 1.0) -> dict[str, str]:
    """Gate verdicts of k instances whose f* is drawn from N(mu, Σ) and whose D draws from
    N(mu, sd² Σ) (sd = 1: an exact posterior), moments given as (mu, var_factor · diag Σ)."""
    mu, L = _posterior()
    var = np.sum(L**2, axis=1)
    summaries = []
    for _ in range(k):
        f = mu + L @ rng.standard_normal(mu.size)
        draws = mu + sd * rng.standard_normal((D, mu.size)) @ L.T
        summaries.append(acceptance_checks(f, draws, mu, var_factor * var)[0])
    return {v["check"]: v["verdict"] for v in gate_verdicts(pool_checks(summaries))}


def _fail_counts(n_sets: int, ds, ks) -> dict[tuple[int, int], dict[str, int]]:
    found: dict[tuple[int, int], dict[str, int]] = {}
    for D in ds:
        for k in ks:
            rng = np.random.default_rng(1000 * D + k)
            verdicts = [_verdicts(rng, D, k) for _ in range(n_sets)]
            found[D, k] = {
                check: sum(v[check] == "FAIL" for v in verdicts)
                for check in ("coverage 90 %", "MC = exact moments")
            }
            found[D, k]["too few"] = sum(
                v["coverage 90 %"] == "too few instances to judge" for v in verdicts
            )
    return found


def _assert_stated_rate(found: dict, n_sets: int) -> None:
    """FAILs of a correct posterior: at most GATE_LEVEL per check, up to binomial noise."""
    for check in ("coverage 90 %", "MC = exact moments"):
        total = sum(c[check] for c in found.values())
        n = n_sets * len(found)
        bound = GATE_LEVEL * n + 3 * np.sqrt(GATE_LEVEL * n) + 1
        assert total <= bound, (check, total, n, found)


def test_exact_posteriors_pass_at_the_stated_rate() -> None:
    n_sets = 8
    found = _fail_counts(n_sets, (40, 200, 1000), (1, 2, 24))
    _assert_stated_rate(found, n_sets)
    # one instance at D = 40: no outcome is improbable enough at 1 %, never a FAIL
    assert found[40, 1]["too few"] == n_sets
    assert found[1000, 24]["too few"] == 0


@pytest.mark.slow
def test_exact_posteriors_pass_at_the_stated_rate_many_sets() -> None:
    # 100 sets per (D, instances): P(>= 7 FAILs of 100 | rate 1 %) ≈ 1e-4
    n_sets = 100
    found = _fail_counts(n_sets, (40, 200, 1000), (1, 2, 3, 6, 12, 24))
    _assert_stated_rate(found, n_sets)
    for counts in found.values():
        assert counts["coverage 90 %"] <= 6 and counts["MC = exact moments"] <= 6, found


@pytest.mark.parametrize(("sd", "var_factor"), [(0.7, 1.0), (1.4, 1.0), (1.0, 1.3)])
def test_a_wrong_posterior_fails(sd, var_factor) -> None:
    # under-dispersed draws under-cover, over-dispersed over-cover; both fail coverage with
    # 24 instances at D = 200. Moments off by 30 % fail MC = exact at D = 1000.
    rng = np.random.default_rng(5)
    if var_factor == 1.0:
        verdicts = [_verdicts(rng, 200, 24, sd=sd)["coverage 90 %"] for _ in range(5)]
        assert verdicts.count("FAIL") >= 4, verdicts
    else:
        verdicts = [_verdicts(rng, 1000, 3, var_factor=var_factor) for _ in range(3)]
        assert all(v["MC = exact moments"] == "FAIL" for v in verdicts), verdicts
        assert all(v["coverage 90 %"] != "FAIL" for v in verdicts)  # the draws are right


HYPER = {
    "kernel_family": "matern32",
    "parts": [{"kernel": "matern32", "weight": 1.0, "lengthscale": [0.3]}],
}


@pytest.mark.parametrize("D", [40, 200, 1000])
def test_exact_gp_tasks_pass(D) -> None:
    # real GP tasks (make_task: Matheron draws, nugget, the stored checks), 1 and 12
    # instances of 20 correlated evaluation points: pass, or too few to judge; never FAIL
    prior = GPPrior(HYPER, scale=1.0)
    e = np.linspace(0.02, 0.98, 20)
    summaries = []
    for seed in range(12):
        t = np.random.default_rng(seed).uniform(0.0, 1.0, 8)
        spec = TaskSpec("synthetic", "gp", "smooth-monotone", "balanced", seed, n_draws=D)
        X = np.concatenate([e, t])[:, None]
        task = make_task(
            spec, prior, X, np.arange(20), np.arange(20, 28), 0.1 + 0.1 * e, 0.1 + 0.1 * t
        )
        summaries.append(task.diagnostics["checks"])
    for group in (summaries[:1], summaries):
        pooled = pool_checks(group)
        assert pooled["coverage_90_expected"] == pytest.approx(expected_coverage(D))
        found = {v["check"]: v["verdict"] for v in gate_verdicts(pooled)}
        assert found["coverage 90 %"] in ("pass", "too few instances to judge"), pooled
        assert found["MC = exact moments"] == "pass"
    assert pool_checks(summaries)["coverage_90_judgeable"]
    assert pool_checks(summaries[:1])["coverage_90_ci"] is None  # no bootstrap of one
