"""SPEC §7 seed replacement in task generation, and the pooled MCMC diagnostics of
``udbench check``: with a fake MCMC prior (an exact GP posterior whose diagnostics claim a
bad split-R̂ for chosen seeds), so no MCMC runs."""

from __future__ import annotations

import dataclasses
import inspect
import json

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.priors import RHAT_NOT_A_GATE, acceptance, rhat_gates
from udbench.priors.diagnostics import batch_means_mcse_var
from udbench.priors.gp import GPPrior
from udbench.tasks import Task, TaskSpec, acceptance_checks, generate_task, pool_checks
from udbench.tasks import generate as generate_module
from udbench.tasks.checks import mcmc_summary
from udbench.tasks.replacement import (
    MAX_REPLACEMENTS,
    SeedReplacement,
    generate_with_seed_replacement,
    replacement_seed,
)

HYPER = {
    "kernel_family": "matern32",
    "parts": [{"kernel": "matern32", "weight": 1.0, "lengthscale": [1.0] * 10}],
}


def _spec(seed: int, **kw) -> TaskSpec:
    base = {
        "dataset": "diabetes",
        "family": "bnn",
        "noise": "homoscedastic",
        "coverage": "balanced",
        "seed": seed,
        "fidelity": "standard",
        "n_draws": 40,
    }
    return TaskSpec(**{**base, **kw})


class FakeMCMCPrior(GPPrior):
    """Exact GP posterior with MCMC-style diagnostics; R̂ = 1.2 at 3 points for the
    posterior streams of the seeds in ``bad_seeds`` (of the spec ``_spec``), 1.01 else."""

    def __init__(self, bad_seeds: set[int], fidelity: str = "standard", family="bnn") -> None:
        super().__init__(HYPER, scale=1.0)
        self.bad_keys = {
            _spec(s, fidelity=fidelity, family=family).seed_for("posterior") for s in bad_seeds
        }

    def condition(self, X_train, y, noise_var_train, X_eval, key, n_draws):
        post = super().condition(X_train, y, noise_var_train, X_eval, key, n_draws)
        rhat = np.full(X_eval.shape[0], 1.01)
        if key in self.bad_keys:
            rhat[:3] = 1.2
        diag = {
            **post.diagnostics,
            "n_chains": 4,
            "rhat": rhat.tolist(),
            "rhat_max": float(rhat.max()),
            "accept_prob_mean": 0.9,
            "n_divergent": 1,
            "tree_depth_mean": 6.0,
            "share_at_max_tree_depth": 0.25,
        }
        return dataclasses.replace(post, mean=None, var=None, diagnostics=diag)


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("UDBENCH_DATA_DIR", raising=False)  # diabetes is embedded


def _use(monkeypatch, prior: GPPrior) -> None:
    monkeypatch.setattr(generate_module, "get_prior", lambda *args, **kw: prior)


def test_replacement_seed_rule() -> None:
    assert replacement_seed(2, [2]) == 1002
    assert replacement_seed(2, [2, 1002]) == 2002
    assert replacement_seed(0, [0]) == 1000  # never a grid seed (< 1000) nor another slot's


def test_generate_with_seed_replacement_applies_the_one_rule() -> None:
    rejected = {2, 1002}

    def verdict(seed: int) -> tuple[bool, str]:
        return seed not in rejected, f"seed {seed} rejected"

    results, log = generate_with_seed_replacement(lambda s: s, verdict, seeds=range(5))
    # s + 1000·k (the old default rule, "next seed above all taken", gave 5 and then 6)
    assert results[2] == (2002, 2002) and results[3] == (3, 3)
    assert log == [
        SeedReplacement(2, 2, 1002, "seed 2 rejected"),
        SeedReplacement(2, 1002, 2002, "seed 1002 rejected"),
    ]
    # the same seed whether the slot is generated alone or within its grid
    alone, _ = generate_with_seed_replacement(lambda s: s, verdict, seeds=[2])
    assert alone[2] == results[2]
    assert "next_seed" not in inspect.signature(generate_with_seed_replacement).parameters


def test_replacement_budget_defaults_to_max_replacements() -> None:
    tried: list[int] = []

    def run(seed: int) -> int:
        tried.append(seed)
        return seed

    with pytest.raises(UdbenchError, match=f"within {MAX_REPLACEMENTS} replacements"):
        generate_with_seed_replacement(run, lambda s: (False, "no"), [7])
    assert tried == [7 + 1000 * k for k in range(MAX_REPLACEMENTS + 1)]
    with pytest.raises(UdbenchError, match="within 0 replacements"):
        generate_with_seed_replacement(run, lambda s: (False, "no"), [7], max_replacements=0)


def test_the_unused_replacement_rule_is_gone() -> None:
    import udbench.priors.diagnostics as diagnostics

    for name in ("next_unused_seed", "generate_with_seed_replacement", "SeedReplacement"):
        assert not hasattr(diagnostics, name)


def test_rejected_seed_is_replaced_and_recorded(monkeypatch) -> None:
    # seed 2 and its first replacement 1002 fail → 2002 is used
    _use(monkeypatch, FakeMCMCPrior({2, 1002}))
    task = generate_task(_spec(2))
    assert task.spec == _spec(2) and task.spec.task_id.endswith("__s2")
    rec = task.diagnostics["seed_replacement"]
    assert rec["requested_seed"] == 2 and rec["used_seed"] == 2002 and rec["gated"]
    assert [(r["rejected"], r["replacement"]) for r in rec["log"]] == [(2, 1002), (1002, 2002)]
    assert rec["log"][0]["reason"] == "rhat_max=1.2000 > 1.05 at 3 inputs"
    used = _spec(2002)
    assert task.diagnostics["seeds"] == {
        c: used.seed_for(c) for c in ("train", "f_star", "noise", "posterior")
    }
    assert max(task.diagnostics["sampler"]["rhat"]) == pytest.approx(1.01)
    # the MCSE used the 4 chains the sampler reported
    assert task.diagnostics["checks"]["n_draws"] == 40
    # an accepted seed is kept as is
    ok = generate_task(_spec(3))
    assert ok.diagnostics["seed_replacement"]["used_seed"] == 3
    assert ok.diagnostics["seed_replacement"]["log"] == []
    with pytest.raises(UdbenchError, match="replacements"):
        generate_task(_spec(2), max_replacements=1)
    with pytest.raises(UdbenchError, match="seed"):
        generate_task(_spec(1000))


class FakeHBARTPrior(FakeMCMCPrior):
    """:class:`FakeMCMCPrior` with HBART's gate setting: R̂ recorded, never a gate."""

    rhat_gate = False

    def condition(self, X_train, y, noise_var_train, X_eval, key, n_draws):
        post = super().condition(X_train, y, noise_var_train, X_eval, key, n_draws)
        rhat = np.asarray(post.diagnostics["rhat"])
        rhat[rhat > 1.05] = 1.3
        diag = {**post.diagnostics, "rhat": rhat.tolist(), "rhat_max": float(rhat.max())}
        diag.update(rhat_gate=False, rhat_iid_max=1.02)
        return dataclasses.replace(post, diagnostics=diag)


def test_hbart_is_not_gated_by_rhat_and_records_it(tmp_path, monkeypatch, capsys) -> None:
    # SPEC §7 (issue 18): an HBART instance with max R̂ 1.3 is kept, its R̂ recorded
    _use(monkeypatch, FakeHBARTPrior({2}, family="hbart"))
    task = generate_task(_spec(2, family="hbart"))
    rec = task.diagnostics["seed_replacement"]
    assert rec["used_seed"] == 2 and rec["log"] == [] and not rec["gated"]
    assert rec["accepted"] and rec["reason"] == RHAT_NOT_A_GATE
    assert task.diagnostics["sampler"]["rhat_max"] == pytest.approx(1.3)
    assert task.diagnostics["checks"]["rhat_max"] == pytest.approx(1.3)
    out = tmp_path / "tasks"
    task.save(out / f"{task.spec.task_id}.npz")
    assert main(["check", str(out), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)["families"]["hbart"]
    assert r["rhat_max"] == pytest.approx(1.3) and r["n_rhat_above_1_05"] == 1
    assert r["rhat_iid_max"] == pytest.approx(1.02) and r["rhat_gate"] is False
    assert r["seed_replacements"] == [] and r["n_seed_replacements"] == 0
    assert "standard" in r["preset_validation"]
    assert main(["check", str(out)]) == 0
    table = capsys.readouterr().out
    assert "MCMC diagnostics" in table and "1.3000" in table and "gate" in table
    assert "Preset validation by warm-up sensitivity" in table


def test_acceptance_respects_the_family_gate() -> None:
    from udbench.priors.bnn import BNNPrior
    from udbench.priors.hbart import HBARTPrior

    bad = {"rhat": [1.01, 1.3]}
    assert acceptance({**bad, "rhat_gate": False}) == (True, RHAT_NOT_A_GATE)
    assert acceptance({**bad, "rhat_gate": True})[0] is False
    assert acceptance(bad)[0] is False  # old task files without the key: gated
    assert not rhat_gates(HBARTPrior(1.0, "standard"))
    assert rhat_gates(BNNPrior(np.zeros((2, 1)), 1.0, "standard"))
    assert rhat_gates(GPPrior(HYPER, scale=1.0))  # exact: nothing to reject


def test_smoke_fidelity_records_verdict_without_replacing(monkeypatch) -> None:
    _use(monkeypatch, FakeMCMCPrior({2}, fidelity="smoke"))
    rec = generate_task(_spec(2, fidelity="smoke")).diagnostics["seed_replacement"]
    assert rec["used_seed"] == 2 and rec["log"] == [] and not rec["gated"]
    assert not rec["accepted"] and rec["reason"].startswith("rhat_max=1.2000")


def test_cli_replaced_instance_is_named_by_grid_seed_skipped_and_checked(
    tmp_path, monkeypatch, capsys
) -> None:
    _use(monkeypatch, FakeMCMCPrior({2}))
    out = tmp_path / "tasks"
    args = ["generate", "--families", "bnn", "--noise", "homoscedastic"]
    args += ["--coverage", "balanced", "--seeds", "1-2", "--draws", "40", "--out", str(out)]
    assert main(args) == 0
    files = sorted(out.glob("*.npz"))
    assert [f.name for f in files] == [
        "diabetes__bnn__homoscedastic__balanced__s1.npz",
        "diabetes__bnn__homoscedastic__balanced__s2.npz",
    ]
    mtimes = [f.stat().st_mtime_ns for f in files]
    assert main(args) == 0  # the replaced instance is found under its grid seed: skipped
    assert [f.stat().st_mtime_ns for f in files] == mtimes
    assert Task.load(files[1]).diagnostics["seed_replacement"]["used_seed"] == 1002
    capsys.readouterr()
    assert main(["check", str(out), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)["families"]["bnn"]
    assert r["seed_replacements"] == [
        {
            "task_id": "diabetes__bnn__homoscedastic__balanced__s2",
            "rejected": 2,
            "replacement": 1002,
            "reason": "rhat_max=1.2000 > 1.05 at 3 inputs",
        }
    ]
    assert r["n_seed_replacements"] == 1 and r["n_instances_replaced"] == 1
    assert r["rhat_max"] == pytest.approx(1.01) and r["rhat_share_above_1_05"] == 0.0
    assert r["n_divergent"] == 2 and r["accept_rate_mean"] == pytest.approx(0.9)
    assert main(["check", str(out)]) == 0
    table = capsys.readouterr().out
    assert "MCMC diagnostics" in table and "Seed replacements" in table and "1002" in table
    # --max-replacements 0: a rejected instance fails at once (reported, exit 2), the
    # accepted one is written
    out0 = tmp_path / "fail-fast"
    args0 = [*args[:-1], str(out0), "--max-replacements", "0"]
    assert main(args0) == 2
    assert [f.name for f in out0.glob("*.npz")] == [
        "diabetes__bnn__homoscedastic__balanced__s1.npz"
    ]
    assert "failed diabetes__bnn__homoscedastic__balanced__s2" in capsys.readouterr().err
    assert main([*args0[:-1], "-1"]) == 2
    assert (
        "parameter '--max-replacements' must be an integer from 0 to 100" in capsys.readouterr().err
    )


def test_mcmc_summary_and_pooling_hand_computed() -> None:
    nan = float("nan")
    bnn = {
        "sampler": {
            "rhat": [1.0, 1.06, nan, 1.2],
            "rhat_max": 1.2,
            "accept_prob_mean": 0.8,
            "n_divergent": 3,
            "tree_depth_mean": 7.0,
            "share_at_max_tree_depth": 0.5,
        },
        "seed_replacement": {"requested_seed": 1, "used_seed": 1001, "log": [{}]},
    }
    s1 = mcmc_summary(bnn)
    assert s1 == {
        "rhat_max": 1.2,
        "rhat_n_above": 2,
        "rhat_n_points": 3,
        "accept_rate": 0.8,
        "n_divergent": 3,
        "tree_depth_mean": 7.0,
        "share_at_max_tree_depth": 0.5,
        "n_seed_replacements": 1,
        "seed_replaced": True,
    }
    hbart = {"sampler": {"rhat_max": 1.03, "accept_rate_kept": 0.4}}  # scalar R̂ only
    assert mcmc_summary(hbart) == {"rhat_max": 1.03, "accept_rate": 0.4}
    hbart["sampler"]["rhat_iid_max"] = 1.02  # reference R̂ of the chain layout, passed on
    assert mcmc_summary(hbart)["rhat_iid_max"] == 1.02
    assert mcmc_summary({"sampler": {"jitter_eval": 0.0}}) == {}  # GP
    base = {
        "covered_90": 9,
        "n_points": 10,
        "sbc_hist": [1] * 10,
        "mcse_var_rel_median": 0.05,
        "mcse_var_rel_p95": 0.07,
        "corr_mean_fstar": 0.8,
    }
    s2 = {
        "rhat_max": 1.01,
        "rhat_iid_max": 1.02,
        "rhat_n_above": 0,
        "rhat_n_points": 5,
        "accept_rate": 0.9,
        "n_divergent": 0,
        "tree_depth_mean": 5.0,
        "share_at_max_tree_depth": 0.0,
        "n_seed_replacements": 0,
        "seed_replaced": False,
    }
    pooled = pool_checks([{**base, **s1}, {**base, **s2}], n_boot=10)
    assert pooled["rhat_max"] == 1.2 and pooled["n_rhat_above_1_05"] == 1
    assert pooled["rhat_iid_max"] == 1.02  # largest over the instances that carry it
    assert pooled["rhat_n_points"] == 8 and pooled["rhat_share_above_1_05"] == 2 / 8
    assert pooled["n_divergent"] == 3
    assert pooled["accept_rate_mean"] == pytest.approx(0.85)
    assert pooled["tree_depth_mean"] == 6.0 and pooled["share_at_max_tree_depth"] == 0.25
    assert pooled["n_seed_replacements"] == 1 and pooled["n_instances_replaced"] == 1
    # no finite R̂ anywhere (e.g. 2 draws per chain): NaN max, no share, no warning
    blind = {**base, "rhat_max": nan, "rhat_n_above": 0, "rhat_n_points": 0}
    pooled = pool_checks([blind], n_boot=10)
    assert np.isnan(pooled["rhat_max"]) and pooled["rhat_share_above_1_05"] is None


def test_acceptance_checks_mcse_batches_respect_chains() -> None:
    rng = np.random.default_rng(0)
    draws = rng.standard_normal((100, 7))  # 50 chains × 2 draws, chain-major
    f = rng.standard_normal(7)
    _, per_point = acceptance_checks(f, draws, n_chains=50)
    expected = batch_means_mcse_var(draws.reshape(50, 2, 7)) / draws.var(axis=0, ddof=1)
    np.testing.assert_allclose(per_point["mcse_var_rel"], expected, rtol=1e-12)
    _, iid = acceptance_checks(f, draws)  # one chain: 20 segments of 5 draws
    expected = batch_means_mcse_var(draws[None]) / draws.var(axis=0, ddof=1)
    np.testing.assert_allclose(iid["mcse_var_rel"], expected, rtol=1e-12)
    with pytest.raises(UdbenchError, match="n_chains"):
        acceptance_checks(f, draws, n_chains=3)
