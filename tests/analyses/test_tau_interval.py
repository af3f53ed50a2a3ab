"""The interval of Kendall's τ between two re-ranked orderings (``scope_taus``).

The interval is the basic bootstrap interval 2τ̂ − q, clipped to [−1, 1] (Davison & Hinkley
1997, §5.2.1), because τ̂ and its replicates are both biased towards 0 (docs/analyses.md,
"Kendall's τ intervals"). The simulation tests check its coverage of the true τ (τ between
the population-mean orderings) on simulated instance × method tables.
"""

from __future__ import annotations

import numpy as np
import pytest

from udbench.analyses._common import Resampling
from udbench.analyses.proxies import kendall_tau_b, scope_taus


def _boot(counts: np.ndarray, confidence: float) -> Resampling:
    n = counts.shape[1]
    return Resampling(counts, None, np.zeros(n, dtype=int), ["d"], "instance", confidence)


def test_tau_interval_is_the_clipped_basic_interval_of_known_replicates() -> None:
    # oracle a > b > c on every instance; the proxy agrees on instances 0 and 1 and puts
    # c far ahead on instance 2. τ̂ (every instance once): proxy means 7/3, 2, 11/3 ->
    # c > a > b, one concordant pair of three, τ̂ = −1/3.
    oracle = np.array([[3.0, 2.0, 1.0]] * 3)
    proxy = np.array([[3.0, 2.0, 1.0], [3.0, 2.0, 1.0], [1.0, 2.0, 9.0]])
    counts = np.array(
        [
            [1, 1, 1],  # the sample: τ = −1/3
            [3, 0, 0],  # instance 2 not drawn: τ = 1
            [2, 1, 0],  # τ = 1
            [1, 2, 0],  # τ = 1
            [0, 1, 2],  # means 5/3, 2, 19/3: c > b > a, τ = −1
        ],
        dtype=float,
    )
    (out,) = scope_taus([(proxy, oracle)], np.ones(3, dtype=bool), _boot(counts, 0.5))
    assert out["tau"] == pytest.approx(-1 / 3, abs=1e-12)
    # replicates −1, −1/3, 1, 1, 1: 25 % and 75 % quantiles −1/3 and 1 (linear
    # interpolation); basic [2τ̂ − 1, 2τ̂ + 1/3] = [−5/3, −1/3], clipped to [−1, −1/3]. (The
    # percentile interval would be [−1/3, 1].)
    assert (out["tau_low"], out["tau_high"]) == pytest.approx((-1.0, -1 / 3), abs=1e-12)
    again = scope_taus([(proxy, oracle)], np.ones(3, dtype=bool), _boot(counts, 0.5))
    assert again == [out]  # deterministic


def _coverage(true_tau: float, sd: float, n_sim: int, seed: int) -> tuple[float, float]:
    """Share of simulations whose basic (and percentile) 95 % interval covers the true τ.

    k = 12 methods with population means μ_A = 0, 1/11, …, 1 under table A and a permutation
    of them under table B (the identity for τ = 1; for τ ≈ 0.5 one with τ = 32/66 = 0.485); n = 120
    instances, per-instance scores μ + N(0, sd²), B's noise correlated 0.5 with A's; B = 400
    instance resamples, shared by both tables.
    """
    k, n, n_boot = 12, 120, 400
    mu_a = np.linspace(0.0, 1.0, k)
    if true_tau == 1.0:
        perm = np.arange(k)
    else:  # a fixed permutation of τ-b = 0.485 (17 discordant pairs of 66)
        perm = np.array([4, 5, 1, 0, 6, 3, 2, 8, 11, 7, 10, 9])
    mu_b = mu_a[perm]
    tau = float(kendall_tau_b(mu_a, mu_b))
    assert tau == pytest.approx(true_tau, abs=0.02)
    rng = np.random.default_rng(seed)
    basic = percentile = 0
    for _ in range(n_sim):
        ea = rng.normal(0.0, sd, (n, k))
        eb = 0.5 * ea + np.sqrt(0.75) * rng.normal(0.0, sd, (n, k))
        counts = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(float)
        boot = _boot(counts, 0.95)
        (out,) = scope_taus([(mu_a + ea, mu_b + eb)], np.ones(n, dtype=bool), boot)
        basic += out["tau_low"] <= tau <= out["tau_high"]
        # the percentile interval of the same replicates, for contrast
        means = counts @ np.concatenate([mu_a + ea, mu_b + eb], axis=1) / n
        low, high = boot.interval(kendall_tau_b(means[:, :k], means[:, k:])[:, None])
        percentile += low[0] <= tau <= high[0]
    return basic / n_sim, percentile / n_sim


def test_tau_interval_covers_true_tau_one_fast() -> None:
    # the fast representative of the simulation below: 40 simulations at τ = 1, sd = 0.6
    # (τ̂ averages 0.945). Basic: 37 of 40 cover; the percentile interval 16 of 40.
    basic, percentile = _coverage(1.0, 0.6, 40, seed=1)
    assert basic >= 0.85 and percentile <= 0.5


@pytest.mark.slow
@pytest.mark.parametrize(
    ("true_tau", "sd", "low", "high"),
    [
        # measured here 0.913 (300 simulations; Monte Carlo SE 0.016): asserted within
        # nominal − 0.07 (the percentile interval: 0.283)
        (1.0, 0.6, 0.88, 1.0),
        # measured here 0.870: the basic interval runs short at τ ≈ 0.5 (docs/analyses.md);
        # asserted within [nominal − 0.12, nominal + 0.02] (the percentile interval: 1.000)
        (0.485, 0.6, 0.83, 0.97),
    ],
)
def test_tau_interval_coverage_near_one_and_one_half(
    true_tau: float, sd: float, low: float, high: float
) -> None:
    basic, _ = _coverage(true_tau, sd, 300, seed=2)
    assert low <= basic <= high
