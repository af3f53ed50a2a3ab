"""SPEC §7 MCMC diagnostics: function-space split-R̂, batch-means MCSE, the acceptance verdict
(the seed-replacement rule is tested in tests/tasks/test_seed_replacement.py)."""

from __future__ import annotations

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.priors.diagnostics import (
    acceptance,
    batch_means_mcse_var,
    function_space_rhat,
    is_accepted,
    rhat_iid_reference,
    summarise_function_draws,
)


def test_rhat_iid_chains_near_one_and_shifted_chain_flagged() -> None:
    rng = np.random.default_rng(0)
    draws = rng.standard_normal((4, 500, 10))
    r = function_space_rhat(draws)
    assert r.shape == (10,) and np.all(r < 1.02)
    draws[0] += 1.0  # one chain stuck elsewhere
    assert np.all(function_space_rhat(draws) > 1.05)


def test_rhat_iid_reference_short_chains_exceed_threshold_long_chains_do_not() -> None:
    # The paper's HBART layout (250 chains x 4 draws): over 400 inputs the largest R̂ of
    # independent draws already exceeds 1.05; 4 chains x 250 draws stay near 1.
    med_short, max_short = rhat_iid_reference(250, 4, 400)
    med_long, max_long = rhat_iid_reference(4, 250, 400)
    assert 1.005 < med_short < 1.03 and max_short > 1.05
    assert med_long < 1.003 and max_long < 1.02
    assert rhat_iid_reference(250, 4, 400) == (med_short, max_short)  # seeded
    with pytest.raises(UdbenchError, match="draws per chain"):
        rhat_iid_reference(4, 1, 10)
    # the rejection reason explains a layout that cannot pass
    rng = np.random.default_rng(5)
    diag = summarise_function_draws(rng.standard_normal((250, 4, 400)))
    assert diag["rhat_iid_max"] == max_short
    ok, reason = acceptance(diag)
    assert not ok and "independent draws in this chain layout" in reason


def test_batch_means_mcse_matches_iid_theory() -> None:
    # iid N(0, σ²): SE of the sample variance is σ²√(2/N). 20 batches give each MCSE
    # with ~16 % relative error; averaged over 400 inputs the mean is within 5 %.
    rng = np.random.default_rng(1)
    sigma2 = 2.5
    draws = np.sqrt(sigma2) * rng.standard_normal((4, 250, 400))
    mcse = batch_means_mcse_var(draws)
    theory = sigma2 * np.sqrt(2 / 1000)
    assert abs(mcse.mean() / theory - 1) < 0.05
    # whole-chain batches when there are at least 20 chains
    draws40 = np.sqrt(sigma2) * rng.standard_normal((40, 25, 400))
    assert abs(batch_means_mcse_var(draws40).mean() / theory - 1) < 0.05


def test_batch_means_mcse_detects_autocorrelation() -> None:
    # AR(1) with φ = 0.9 inflates the variance of averages by (1+φ)/(1−φ) = 19 for g = f²
    # roughly (1+φ²)/(1−φ²) ≈ 9.5: the MCSE must be well above the iid value
    rng = np.random.default_rng(2)
    phi, n = 0.9, 2000
    e = rng.standard_normal((4, n, 50))
    x = np.zeros_like(e)
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + np.sqrt(1 - phi**2) * e[:, t]
    iid = np.sqrt(2 / (4 * n))
    assert batch_means_mcse_var(x).mean() > 2.5 * iid


def test_summary_and_acceptance() -> None:
    rng = np.random.default_rng(3)
    good = summarise_function_draws(rng.standard_normal((4, 200, 6)))
    assert good["rhat_n_above"] == 0 and is_accepted(good)
    bad_draws = rng.standard_normal((4, 200, 6))
    bad_draws[1, :, 2] += 3.0
    bad = summarise_function_draws(bad_draws)
    assert bad["rhat_n_above"] >= 1 and not is_accepted(bad)
    ok, reason = acceptance(bad)
    assert not ok and reason.startswith("rhat_max=") and "> 1.05 at" in reason
    assert acceptance(good) == (True, "")
    assert is_accepted({})  # exact families carry no R̂


def test_bad_shapes_raise() -> None:
    with pytest.raises(UdbenchError, match="draws"):
        function_space_rhat(np.zeros((10, 3)))
    with pytest.raises(UdbenchError, match="n_batches"):
        batch_means_mcse_var(np.zeros((2, 10, 3)), n_batches=1)


def test_rhat_undefined_everywhere_is_rejected_not_silently_accepted() -> None:
    # split-R̂ needs >= 4 draws per chain; with fewer, every value is NaN and the gate
    # must reject rather than pass without checking anything
    nan_only = {"rhat": [float("nan")] * 5}
    assert not is_accepted(nan_only)
    ok, reason = acceptance(nan_only)
    assert not ok and "undefined at every input" in reason
    # a few NaN inputs (f constant there) among finite values are still ignored
    assert is_accepted({"rhat": [1.01, float("nan"), 1.02]})
    assert not is_accepted({"rhat": [1.01, float("nan"), 1.2]})
