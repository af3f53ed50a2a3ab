"""Simulation-based calibration of the MCMC reference posteriors at smoke fidelity (SPEC §7).

For each replicate: draw 1-d inputs, draw f* from the prior jointly at all of them, add
known noise, condition the same prior, and take the rank of f*(x) among the D posterior
draws at K checkpoints: the training inputs nearest to (k + ½)/K, k = 0..K−1 (far apart,
so their ranks are nearly independent; the posterior there is dominated by the noise, so a
wrong noise level shows). If the posterior is right, the randomised PIT
u = (rank + V)/(D + 1), V ~ U(0, 1), is uniform and the central 90 % interval covers f*
in 90 % of cases. Checks, each at level 1e-2:

- 10-bin chi-square test of the PIT values against uniform;
- coverage of the central 90 % interval: two-sided exact binomial test of 0.90.

A deliberately wrong posterior (noise variance doubled when conditioning) must fail at
least one of them. These runs take minutes (JAX compilation plus the samplers): ``slow``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from udbench.priors.bnn import BNNPrior
from udbench.priors.hbart import HBARTPrior

LEVEL = 1e-2
N_BINS = 10


def _sbc_checks(f_eval: np.ndarray, draws: np.ndarray, rng: np.random.Generator) -> dict:
    """f_eval (R, m), draws (R, D, m) → PIT chi-square p-value and coverage test p-value."""
    D = draws.shape[1]
    ranks = (draws < f_eval[:, None, :]).sum(axis=1)
    pit = (ranks + rng.uniform(size=ranks.shape)) / (D + 1)
    counts = np.bincount(
        np.minimum((pit * N_BINS).astype(int), N_BINS - 1).ravel(), minlength=N_BINS
    )
    lo, hi = np.quantile(draws, [0.05, 0.95], axis=1)
    covered = (lo <= f_eval) & (f_eval <= hi)
    return {
        "chi2_p": float(stats.chisquare(counts).pvalue),
        "coverage": float(covered.mean()),
        "coverage_p": float(stats.binomtest(int(covered.sum()), covered.size, 0.9).pvalue),
        "counts": counts.tolist(),
        "max_bin_dev": float(np.abs(counts / counts.sum() - 1 / N_BINS).max()),
    }


def _passes(res: dict) -> bool:
    return res["chi2_p"] > LEVEL and res["coverage_p"] > LEVEL


N_TRAIN, N_CHECK, NOISE_VAR = 30, 4, 0.05


def _simulate(prior, n_rep: int, seed: int):
    """Inputs (R, n, 1), f* at them (R, n), noisy y (R, n), noise (R, n), checkpoints (R, K)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n_rep, N_TRAIN, 1))
    f = np.stack([prior.sample(X[r], key=seed * 1000 + r)[0] for r in range(n_rep)])
    nv = np.full((n_rep, N_TRAIN), NOISE_VAR)
    y = f + np.sqrt(nv) * rng.standard_normal((n_rep, N_TRAIN))
    targets = (np.arange(N_CHECK) + 0.5) / N_CHECK
    check = np.abs(X[:, :, 0][:, None, :] - targets[None, :, None]).argmin(axis=2)
    return X, f, y, nv, check


def _take(a: np.ndarray, check: np.ndarray) -> np.ndarray:
    """a (R, [D,] n) at the checkpoints (R, K)."""
    if a.ndim == 2:
        return np.take_along_axis(a, check, axis=1)
    return np.take_along_axis(a, check[:, None, :], axis=2)


def _run_hbart(noise_factor: float, n_rep: int) -> dict:
    prior = HBARTPrior(1.0, "smoke")
    X, f, y, nv, check = _simulate(prior, n_rep, seed=17)
    draws = np.stack(
        [
            prior.condition(
                X[r], y[r], noise_factor * nv[r], X[r, :1], key=r, n_draws=80
            ).draws_train
            for r in range(n_rep)
        ]
    )
    return _sbc_checks(_take(f, check), _take(draws, check), np.random.default_rng(0))


def _run_bnn(noise_factor: float, n_rep: int) -> dict:
    X_ref = np.random.default_rng(5).uniform(size=(65, 1))
    prior = BNNPrior(X_ref, 3.0, "smoke")
    X, f, y, nv, check = _simulate(prior, n_rep, seed=23)
    posts = prior.condition_batch(X, y, noise_factor * nv, X[:, :1], key=1, n_draws=100)
    draws = np.stack([p.draws_train for p in posts])
    return _sbc_checks(_take(f, check), _take(draws, check), np.random.default_rng(0))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("family", "runner", "n_rep"),
    [("hbart", _run_hbart, 50), ("bnn", _run_bnn, 80)],
)
def test_sbc_smoke_passes_and_wrong_noise_fails(
    family: str, runner: Callable[[float, int], dict], n_rep: int
) -> None:
    good = runner(1.0, n_rep)
    print(family, "correct", good)
    assert _passes(good), good
    wrong = runner(2.0, n_rep)
    print(family, "noise doubled", wrong)
    assert not _passes(wrong), wrong
    assert wrong["coverage"] > good["coverage"]
