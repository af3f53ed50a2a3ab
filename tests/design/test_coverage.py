"""Training-input selection (SPEC §3): quotas, pool, determinism, errors."""

from __future__ import annotations

import numpy as np
import pytest

from udbench._seeding import make_rng
from udbench._validation import UdbenchError
from udbench.data import load_covariates
from udbench.design import COVERAGES, select_training_inputs, shell_quotas


@pytest.fixture(scope="module")
def cov():
    return load_covariates("diabetes")


def test_quotas():
    np.testing.assert_array_equal(shell_quotas("balanced", 150), [30] * 5)
    np.testing.assert_array_equal(shell_quotas("ood", 150), [38, 38, 37, 37, 0])
    np.testing.assert_array_equal(shell_quotas("balanced", 584), [117, 117, 117, 117, 116])


@pytest.mark.parametrize("coverage", COVERAGES)
def test_selection_shares_and_pool(cov, coverage):
    for seed in range(5):
        idx = select_training_inputs(cov, coverage, make_rng("train", "diabetes", coverage, seed))
        assert idx.shape == (150,) and idx.dtype == np.int64
        assert np.unique(idx).size == 150 and np.isin(idx, cov.cand_idx).all()
        assert not np.isin(idx, cov.eval_idx).any()
        counts = np.bincount(cov.shell[idx], minlength=5)
        np.testing.assert_array_equal(counts, shell_quotas(coverage, 150))


def test_determinism_and_seed_sensitivity(cov):
    a = select_training_inputs(cov, "ood", make_rng("train", 0))
    b = select_training_inputs(cov, "ood", make_rng("train", 0))
    c = select_training_inputs(cov, "ood", make_rng("train", 1))
    assert a.tobytes() == b.tobytes()
    assert not np.array_equal(a, c)
    np.testing.assert_array_equal(
        select_training_inputs(cov, "balanced", 4, n=20),
        select_training_inputs(cov, "balanced", 4, n=20),
    )


def test_a_shell_that_cannot_supply_is_a_clear_error(cov):
    per_shell = np.bincount(cov.shell[cov.cand_idx], minlength=5)
    too_many = 4 * int(per_shell[:4].min()) + 4
    with pytest.raises(
        UdbenchError,
        match=rf"parameter 'n' must let shell \d of 'diabetes' supply .* got {too_many}",
    ):
        select_training_inputs(cov, "ood", 0, n=too_many)
    with pytest.raises(UdbenchError, match=r"parameter 'n' must be a positive integer; got 0"):
        select_training_inputs(cov, "balanced", 0, n=0)
    with pytest.raises(UdbenchError, match=r"parameter 'coverage' must be one of .*'outer'"):
        select_training_inputs(cov, "outer", 0)


def test_coverages_are_one_table_of_shell_shares():
    from udbench.data.geometry import N_SHELLS
    from udbench.design import COVERAGE_SHARES, COVERAGE_TABLE

    assert tuple(c.name for c in COVERAGE_TABLE) == COVERAGES
    for row in COVERAGE_TABLE:
        assert len(row.shares) == N_SHELLS and sum(row.shares) == pytest.approx(1.0)
        assert COVERAGE_SHARES[row.name] == row.shares and row.description
    assert COVERAGE_SHARES["ood"][-1] == 0.0  # SPEC §3: none from the outermost shell
