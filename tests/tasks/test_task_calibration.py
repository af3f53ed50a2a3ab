"""SBC and coverage over many small seeded GP tasks (SPEC §7): the exact posterior passes,
a wrong posterior (noise variances doubled when conditioning) fails."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from udbench.priors.gp import GPPrior
from udbench.tasks import TaskSpec, make_task, pool_checks

HYPER = {
    "kernel_family": "matern32",
    "parts": [{"kernel": "matern32", "weight": 1.0, "lengthscale": [0.05]}],
}
N_TASKS = 200
D = 99  # ranks 0..99 -> 100 values, 5 per SBC bin


class DoubledNoiseGP(GPPrior):
    """A wrong reference posterior: conditions with twice the true noise variances."""

    def condition(self, X_train, y, noise_var_train, X_eval, key, n_draws):
        return super().condition(X_train, y, 2 * noise_var_train, X_eval, key, n_draws)


def _run(prior) -> tuple[dict, np.ndarray]:
    """200 tasks; 5 evaluation points 0.2 apart (nearly independent: correlation < 1e-4),
    two training inputs within 0.02 of each; noise variance 0.2 + 0.2·x."""
    e = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    summaries, ranks = [], []
    for seed in range(N_TASKS):
        rng = np.random.default_rng(seed)
        t = np.concatenate([e - rng.uniform(0.005, 0.02, 5), e + rng.uniform(0.005, 0.02, 5)])
        X = np.concatenate([e, t])[:, None]
        spec = TaskSpec("synthetic", "gp", "smooth-monotone", "balanced", seed, n_draws=D)
        task = make_task(
            spec, prior, X, np.arange(5), np.arange(5, 15), 0.2 + 0.2 * e, 0.2 + 0.2 * t
        )
        summaries.append(task.diagnostics["checks"])
        ranks.append(task.sbc_rank)
    return pool_checks(summaries, n_boot=1000), np.concatenate(ranks)


def test_exact_gp_posterior_passes_sbc_and_coverage() -> None:
    pooled, ranks = _run(GPPrior(HYPER, scale=1.0))
    # 1000 nearly independent ranks, uniform on 0..99: chi-square over 20 bins, level 0.001
    counts = np.bincount(ranks * 20 // (D + 1), minlength=20)
    assert scipy.stats.chisquare(counts).pvalue > 1e-3
    # coverage: binomial 99.9 % interval around 0.90 for 1000 points is ±0.031
    assert abs(pooled["coverage_90"] - 0.90) < 3.29 * np.sqrt(0.09 / 1000)
    lo, hi = pooled["coverage_90_ci"]
    assert lo < 0.90 < hi
    assert pooled["corr_mean_fstar_median"] > 0.5
    assert pooled["mc_agree_fraction"] > 0.95


def test_doubled_noise_posterior_fails_sbc_and_coverage() -> None:
    pooled, ranks = _run(DoubledNoiseGP(HYPER, scale=1.0))
    counts = np.bincount(ranks * 20 // (D + 1), minlength=20)
    assert scipy.stats.chisquare(counts).pvalue < 1e-3
    assert pooled["coverage_90_ci"][0] > 0.90  # over-dispersed posterior over-covers


@pytest.mark.parametrize("seed", [0, 1])
def test_pool_checks_hand_computed(seed: int) -> None:
    s = {
        "covered_90": 9,
        "n_points": 10,
        "sbc_hist": [1] * 10,
        "mcse_var_rel_median": 0.05,
        "mcse_var_rel_p95": 0.07,
        "corr_mean_fstar": 0.8,
    }
    pooled = pool_checks([s, {**s, "covered_90": 7}], n_boot=200, seed=seed)
    assert pooled["coverage_90"] == pytest.approx(16 / 20)
    assert pooled["coverage_90_ci"][0] >= 0.7 and pooled["coverage_90_ci"][1] <= 0.9
    assert pooled["sbc_max_bin_deviation"] == pytest.approx(0.0)
    assert pooled["n_instances"] == 2
    assert "rhat_max" not in pooled
    mcmc = pool_checks([{**s, "rhat_max": 1.01}, {**s, "rhat_max": 1.2}], n_boot=10)
    assert mcmc["rhat_max"] == 1.2 and mcmc["n_rhat_above_1_05"] == 1
