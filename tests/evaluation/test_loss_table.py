"""The loss table (issue 33, item 4): a loss is one :class:`udbench._losses.Loss` entry.

A toy loss, twice the CRPS, is added as one entry (and nothing else): the evaluation scores
it into its own ``<metric>_crps2`` columns, ``udbench score`` and the leaderboard's
``results_under_loss`` take it, and ``udbench risk decompose`` decomposes with it. Every
metric is a rank statistic, invariant under a positive factor on both sides, so its columns
equal the CRPS ones (to rounding: the factor is applied to float64 terms). The shipped
entries are checked against what the package did before the table (names, help texts).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from _fakes import KnnMethod, MeanMethod, make_fake_task, save_fake_task
from udbench import _losses, risk
from udbench._losses import LOSS_TABLE, Loss, loss_help, loss_names, register_loss
from udbench._validation import UdbenchError
from udbench.evaluation.loss_rescoring import score_results
from udbench.evaluation.losses import (
    LOSS_METRIC_KEYS,
    loss_column,
    loss_columns,
    loss_metrics,
    parse_losses,
    results_under_loss,
)
from udbench.evaluation.runner import run_benchmark
from udbench.evaluation.store import read_results
from udbench.evaluation.transfer import transfer_losses
from udbench.methods.base import Prediction


def _doubled(dec: risk.Decomposition) -> risk.Decomposition:
    return dataclasses.replace(
        dec,
        loss="crps2",
        au=2.0 * dec.au,
        generalized_variance=2.0 * dec.generalized_variance,
        deployment_gap=2.0 * dec.deployment_gap,
        total=2.0 * dec.total,
    )


def crps2_draws(draws, noise_var, pred_mean, pred_var, *, random_state=0):
    return _doubled(
        risk.crps_decomposition(draws, noise_var, pred_mean, pred_var, random_state=random_state)
    )


def crps2_gaussian(post_mean, post_var, noise_var, pred_mean, pred_var):
    return _doubled(
        risk.crps_decomposition_gaussian(post_mean, post_var, noise_var, pred_mean, pred_var)
    )


TOY = Loss(
    "crps2",
    "twice the CRPS (a test's loss)",
    f"{__name__}:crps2_draws",  # by import path, as the shipped entries
    ("draws", "noise_var", "pred_mean", "pred_var"),
    crps2_gaussian,  # or a callable
    ("post_mean", "post_var", "noise_var", "pred_mean", "pred_var"),
    draws_options=("random_state",),
)


@pytest.fixture
def toy(monkeypatch):
    """The toy loss in the table for one test (removed afterwards)."""
    monkeypatch.setitem(LOSS_TABLE, TOY.name, TOY)
    return TOY


def test_shipped_table_is_what_the_package_had():
    assert loss_names() == ("squared", "crps", "log")
    assert loss_names(scored=True) == ("crps", "log")
    assert loss_names("classification") == ("multiclass_log", "brier")
    assert risk.CLASSIFICATION_LOSSES == ("multiclass_log", "brier")
    assert transfer_losses() == ("squared", "crps", "log")
    assert loss_help() == "squared, crps or log"
    assert loss_help(scored=True) == "crps or log"
    # every named function resolves to the udbench.risk function of that name
    for entry in LOSS_TABLE.values():
        assert entry.draws_fn().__name__ == str(entry.draws).rpartition(":")[2]
        if entry.gaussian is not None:
            assert entry.gaussian_fn() is getattr(risk, str(entry.gaussian).rpartition(":")[2])
    with pytest.raises(ValueError, match="no closed-form"):
        LOSS_TABLE["brier"].gaussian_fn()


def test_loss_record_rejects_bad_names_and_duplicates():
    with pytest.raises(ValueError, match="parameter 'name' must be an identifier"):
        dataclasses.replace(TOY, name="crps-2")
    with pytest.raises(ValueError, match="parameter 'kind' must be one of"):
        dataclasses.replace(TOY, kind="ranking")
    with pytest.raises(ValueError, match="a loss named 'crps' exists"):
        register_loss(dataclasses.replace(TOY, name="crps"))


def test_toy_loss_is_scored_by_loss_metrics(toy):
    task = make_fake_task(3, n_train=30)
    rng = np.random.default_rng(5)
    n = task.f_eval.shape[0]
    pred = Prediction(
        task.f_eval + 0.3 * rng.standard_normal(n),
        rng.uniform(0.05, 0.5, n),
        rng.uniform(0.01, 0.4, n),
    )
    for reference in ("draws", "gaussian"):
        got, _ = loss_metrics(task, pred, ("crps", "crps2"), reference=reference)
        assert set(loss_columns("crps2")) == {f"{k}_crps2" for k in LOSS_METRIC_KEYS}
        assert set(loss_columns("crps2")) <= set(got)
        for key in LOSS_METRIC_KEYS:
            a, b = got[loss_column(key, "crps")], got[loss_column(key, "crps2")]
            assert np.isnan(a) == np.isnan(b), key
            if not np.isnan(a):
                assert b == pytest.approx(a, abs=1e-12), key
        assert not np.isnan(got["rho_eu_risk_crps2"])


def test_toy_loss_is_run_scored_and_ranked(toy, tmp_path):
    folder = tmp_path / "tasks"
    save_fake_task(make_fake_task(0, n_train=30), folder)
    save_fake_task(make_fake_task(1, n_train=40, noise="homoscedastic"), folder)
    assert parse_losses("test", "squared,crps2") == ("crps2",)
    methods = [MeanMethod(), KnnMethod(k=4)]
    ran = tmp_path / "ran"
    run_benchmark([folder], methods, ran, workers=0, keep_predictions=True, losses=["crps2"])
    df = read_results(ran)
    assert df["rho_eu_risk_crps2"].notna().any()
    # `udbench score` adds it to a run made without it, with the same values
    plain = tmp_path / "plain"
    run_benchmark([folder], methods, plain, workers=0, keep_predictions=True)
    assert score_results(plain, ["crps", "crps2"]).n_scored == 4
    scored = read_results(plain).sort_values("cell_key").reset_index(drop=True)
    df = df.sort_values("cell_key").reset_index(drop=True)
    for col in loss_columns("crps2"):
        np.testing.assert_allclose(scored[col], df[col], rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            scored[col], scored[col.replace("_crps2", "_crps")], rtol=0, atol=1e-12
        )
    # the leaderboard and the analyses read the loss's columns through results_under_loss
    mapped = results_under_loss(scored, "crps2")
    np.testing.assert_array_equal(mapped["rho_eu_risk"], scored["rho_eu_risk_crps2"])
    assert mapped.attrs["loss"] == "crps2"


def test_toy_loss_in_risk_decompose_and_help(toy, tmp_path):
    from udbench.commands.risk import decompose_arrays

    rng = np.random.default_rng(2)
    n = 7
    arrays = {
        "post_mean": rng.normal(size=n),
        "post_var": rng.uniform(0.1, 1.0, n),
        "noise_var": rng.uniform(0.1, 1.0, n),
        "pred_mean": rng.normal(size=n),
        "pred_var": rng.uniform(0.5, 2.0, n),
    }
    two = decompose_arrays(arrays, "crps2")
    one = decompose_arrays(arrays, "crps")
    np.testing.assert_allclose(two.total, 2.0 * one.total, rtol=1e-15, atol=0)
    assert "; crps2: twice the CRPS (a test's loss)" in loss_help(scored=True, described=True)
    with pytest.raises(UdbenchError, match="parameter 'loss' must be one of"):
        decompose_arrays(arrays, "hinge")


def test_unknown_loss_errors_name_the_table():
    with pytest.raises(UdbenchError, match=r"must be one of \['squared', 'crps', 'log'\]"):
        loss_column("rho_au", "crps2")
    assert _losses.loss_entry("t", "log").positive_noise
