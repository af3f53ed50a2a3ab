"""MCMCPrior (shared by HBART and BNN) and the typed diagnostics records.

The key sets, settings and seed rules are the ones the task files held before the base class
existed (issue 12 item 5): the refactor must not change the task file format.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from udbench._seeding import derive_seed
from udbench._validation import UdbenchError
from udbench.priors.bnn import FIDELITY_SETTINGS as BNN_PRESETS
from udbench.priors.bnn import BNNPrior
from udbench.priors.hbart import FIDELITY_SETTINGS as HBART_PRESETS
from udbench.priors.hbart import HBARTPrior
from udbench.priors.mcmc import HBARTDiagnostics, MCMCDiagnostics, MCMCPrior, NUTSDiagnostics

CONVERGENCE = {
    "rhat_max": 1.01,
    "rhat_median": 1.0,
    "rhat_n_above": 0,
    "rhat_threshold": 1.05,
    "rhat": [1.0, 1.01],
    "rhat_iid_median": 1.0,
    "rhat_iid_max": 1.02,
    "mcse_var_max_rel": 0.1,
    "mcse_var_median_rel": 0.05,
    "mcse_n_batches": 20,
    "mcse_var": [0.01, 0.02],
}
COMMON = {
    "sampler": "s",
    "fidelity": "smoke",
    "n_chains": 2,
    "n_warmup": 10,
    "draws_per_chain": 5,
    "n_draws": 10,
    "rhat_max_train": 1.02,
    "rhat_train": [1.02, 1.0, float("nan")],
    "wall_seconds": 2.0,
    "chain_iterations_per_second": 15.0,
}
#: The keys of the HBART and BNN diagnostics dicts before the typed records.
OLD_HBART_KEYS = {
    *COMMON,
    *CONVERGENCE,
    "thin",
    "accept_rate_warmup",
    "accept_rate_kept",
    "error_precision_kept_max_abs_dev",
    "decision_nodes_per_tree_mean",
    "temperature_levels",
}
OLD_BNN_KEYS = {
    *COMMON,
    *CONVERGENCE,
    "chain_method",
    "target_accept",
    "max_tree_depth",
    "accept_prob_mean",
    "accept_prob_per_chain",
    "n_divergent",
    "tree_depth_mean",
    "tree_depth_max",
    "share_at_max_tree_depth",
    "leapfrog_steps_mean",
    "step_size_per_chain",
    "n_datasets_in_run",
}


def _hbart_record() -> HBARTDiagnostics:
    return HBARTDiagnostics(
        **COMMON,
        convergence=dict(CONVERGENCE),
        thin=3,
        accept_rate_warmup=0.4,
        accept_rate_kept=0.3,
        error_precision_kept_max_abs_dev=0.0,
        decision_nodes_per_tree_mean=1.5,
        temperature_levels=[3.0, 1.0],
    )


def test_record_to_dict_is_the_flat_dict_of_the_task_files() -> None:
    rec = _hbart_record()
    d = rec.to_dict()
    # issue 18: plus "rhat_gate" (False: HBART's R̂ is recorded, never a gate, SPEC §7)
    assert set(d) == OLD_HBART_KEYS | {"rhat_gate"} and "convergence" not in d
    assert d["rhat_gate"] is False
    assert {k: d[k] for k in CONVERGENCE} == CONVERGENCE
    assert d["thin"] == 3 and d["temperature_levels"] == [3.0, 1.0]
    assert d["n_draws"] == 10 and d["rhat_max_train"] == 1.02
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.n_draws = 11  # type: ignore[misc]


def test_nuts_record_has_the_old_bnn_keys() -> None:
    names = {f.name for f in dataclasses.fields(NUTSDiagnostics)} - {"convergence"}
    assert names | set(CONVERGENCE) == OLD_BNN_KEYS
    base = {f.name for f in dataclasses.fields(MCMCDiagnostics)} - {"convergence"}
    assert base == set(COMMON)
    assert NUTSDiagnostics.rhat_gate is True and MCMCDiagnostics.rhat_gate is True


def test_settings_are_unchanged_for_both_families() -> None:
    hb = HBARTPrior(2.0, "smoke", dataset="toy", sampler_kwargs={"thin": 2})
    assert hb.settings == {
        "family": "hbart",
        "dataset": "toy",
        "scale": 2.0,
        "n_trees": 200,
        "max_depth": 6,
        "split_base": 0.95,
        "split_power": 2.0,
        "n_thresholds": 255,
        "leaf_sd": 2.0 / np.sqrt(200),
        "fidelity": "smoke",
        "sampler_overrides": ["thin"],
        "sampler": {"engine": "bartz", **HBART_PRESETS["smoke"], "thin": 2},
    }
    X_ref = np.array([[0.1, 0.2], [0.3, 0.4]])
    bn = BNNPrior(X_ref, 0.5, "standard", dataset="toy")
    assert bn.settings == {
        "family": "bnn",
        "dataset": "toy",
        "scale": 0.5,
        "n_hidden": 50,
        "n_reference": 2,
        "X_ref": X_ref.tolist(),
        "fidelity": "standard",
        "sampler_overrides": [],
        "sampler": {
            "engine": "numpyro NUTS",
            "chain_method": "auto",
            "dtype": "float64",
            **BNN_PRESETS["standard"],
        },
    }


@pytest.mark.parametrize(
    ("prior", "bits"),
    [(HBARTPrior(1.0, "smoke"), 31), (BNNPrior(np.zeros((2, 2)), 1.0, "smoke"), 32)],
)
def test_seed_streams_follow_the_family_rule(prior: MCMCPrior, bits: int) -> None:
    fam = prior.family
    assert prior._sampler_seed(7) == derive_seed(f"{fam}-mcmc", 7, bits=bits)
    assert prior._sampler_seed(7) < 2**bits
    ref = np.random.default_rng(derive_seed(f"{fam}-prior", 7)).standard_normal(4)
    np.testing.assert_array_equal(prior._prior_rng(7).standard_normal(4), ref)


def test_prior_draws_use_the_family_prior_stream() -> None:
    # BNN weights: v, w, c, b in this order from the ("bnn-prior", key) stream
    prior = BNNPrior(np.zeros((3, 2)), 1.0, "smoke", n_hidden=4)
    w = prior.sample_weights(5, n_draws=2)
    rng = np.random.default_rng(derive_seed("bnn-prior", 5))
    np.testing.assert_array_equal(w["v"], rng.standard_normal((2, 4)))
    np.testing.assert_array_equal(w["w"], rng.standard_normal((2, 4, 2)))


@pytest.mark.parametrize(
    "prior",
    [HBARTPrior(1.0, "smoke"), BNNPrior(np.full((2, 2), 0.5), 1.0, "smoke")],
)
def test_draws_must_be_a_multiple_of_the_chains(prior: MCMCPrior) -> None:
    n_chains = prior.sampler_settings["n_chains"]
    assert prior._chain_layout("c", 3 * n_chains) == (n_chains, 3)
    for bad in (n_chains + 1, n_chains - 1, 0):
        with pytest.raises(UdbenchError, match=f"positive multiple of n_chains={n_chains}"):
            prior._chain_layout("c", bad)
    X = np.full((4, 2), 0.5)
    with pytest.raises(UdbenchError, match="n_draws"):
        prior.condition(X, np.zeros(4), np.ones(4), X, 0, n_chains + 1)
    with pytest.raises(UdbenchError, match="noise_var_train"):
        prior.condition(X, np.zeros(4), np.array([1.0, 0.0, 1.0, 1.0]), X, 0, n_chains)


def test_scale_constant_from_the_pool_is_one_over_the_median_sd() -> None:
    rng = np.random.default_rng(2)
    X_pool = rng.uniform(size=(40, 2))
    unit = HBARTPrior(1.0, "smoke", dataset="toy")
    a = unit._scale_from_pool(X_pool)
    draws = unit.sample(X_pool, derive_seed("scale", "toy", "hbart"), 100)
    assert a == 1.0 / float(np.median(np.std(draws, axis=1)))
