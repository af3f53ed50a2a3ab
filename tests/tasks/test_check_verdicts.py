"""``udbench check``: a verdict per SPEC §7 check with its threshold, and files/globs as for
``run`` (issue 13, item 6)."""

from __future__ import annotations

import json

import pytest
import scipy.stats

from udbench.cli import main
from udbench.commands.tasks import EXIT_CHECK_FAILED
from udbench.tasks import gate_verdicts, pool_checks
from udbench.tasks.generate import get_prior


def _stats(**kw) -> dict:
    base = {
        "n_instances": 4,
        "coverage_90": 0.9,
        "coverage_90_ci": [0.89, 0.91],
        "coverage_90_expected": 37 / 41,
        "coverage_90_null_range": [0.85, 0.95],
        "coverage_90_p": 0.5,
        "coverage_90_judgeable": True,
        "sbc_max_bin_deviation": 0.004,
        "mcse_var_median": 0.045,
        "mcse_var_p95": 0.06,
        "corr_mean_fstar_median": 0.95,
    }
    return {**base, **kw}


def _instance() -> dict:
    """A hand-made per-instance summary (as acceptance_checks makes it), 10 points, D = 40."""
    return {
        "n_points": 10,
        "n_draws": 40,
        "covered_90": 9,
        "sbc_hist": [1] * 10 + [0] * 10,
        "mcse_var_rel_median": 0.2,
        "mcse_var_rel_p95": 0.3,
        "corr_mean_fstar": 0.9,
    }


def _by_check(stats: dict) -> dict[str, dict[str, str]]:
    return {v["check"]: v for v in gate_verdicts(stats)}


@pytest.mark.parametrize(
    ("p", "judgeable", "verdict"),
    [
        (0.0101, True, "pass"),
        (0.01, True, "FAIL"),  # the level is 1 %: p <= 0.01 fails
        (0.0005, True, "FAIL"),
        (0.0005, False, "too few instances to judge"),  # no outcome could fail: never FAIL
        (None, None, "not judged (no null counts)"),
    ],
)
def test_coverage_verdict_at_its_threshold(p, judgeable, verdict) -> None:
    stats = _stats(coverage_90_p=p, coverage_90_judgeable=judgeable)
    v = _by_check(stats)["coverage 90 %"]
    assert v["verdict"] == verdict
    assert "correct posterior gives" in v["threshold"] and "p > 1%" in v["threshold"]
    assert v["figure"] == "0.900 (correct posterior: 0.902, 99 % range [0.850, 0.950])"


@pytest.mark.parametrize(
    ("n", "n_bad", "verdict"),
    [(1, 0, "pass"), (1, 1, "FAIL"), (24, 2, "pass"), (24, 3, "FAIL"), (960, 17, "pass")],
)
def test_mc_agreement_is_judged_by_the_binomial_count_of_disagreements(n, n_bad, verdict) -> None:
    # each instance of a correct reference disagrees with probability <= 1 % (Bonferroni);
    # FAIL when P(Binomial(n, 0.01) >= n_bad) <= 1 %: 1 of 1, 3 of 24, 18 of 960
    summaries = [{**_instance(), "mc_agree": i >= n_bad} for i in range(n)]
    pooled = pool_checks(summaries, n_boot=10)
    assert pooled["mc_n_disagree"] == n_bad
    assert pooled["mc_disagree_p"] == pytest.approx(scipy.stats.binom.sf(n_bad - 1, n, 0.01))
    found = _by_check(pooled)["MC = exact moments"]
    assert found["verdict"] == verdict
    assert found["figure"] == f"{n - n_bad} / {n} instances agree"
    assert "MC = exact moments" not in _by_check(_stats())  # MCMC families: no exact moments


@pytest.mark.parametrize(
    ("rhat", "gate", "verdict"),
    [
        (1.05, True, "pass"),
        (1.0501, True, "FAIL"),
        (float("nan"), True, "FAIL"),  # no finite R̂ cannot pass a gate
        (1.3, False, "not gated"),  # HBART: recorded, never a gate (SPEC §7)
    ],
)
def test_rhat_verdict_is_a_gate_only_where_the_family_is_gated(rhat, gate, verdict) -> None:
    v = _by_check(_stats(rhat_max=rhat, rhat_gate=gate))["split-R̂ (function space)"]
    assert v["verdict"] == verdict
    assert ("1.05" in v["threshold"]) is gate


def test_an_rhat_failure_that_independent_draws_would_share_says_so() -> None:
    """A smoke BNN layout fails the gate by estimator noise alone (iid max R̂ 1.119 here):
    the verdict says so; with enough draws per chain (iid max 1.01), or an R̂ far above the
    iid figure, it is a plain FAIL."""
    short = _by_check(_stats(rhat_max=1.109, rhat_gate=True, rhat_iid_max=1.1187))
    assert short["split-R̂ (function space)"]["verdict"] == (
        "FAIL (independent draws in this chain layout give max R̂ ≈ 1.119: too few draws per "
        "chain to judge)"
    )
    long = _by_check(_stats(rhat_max=1.109, rhat_gate=True, rhat_iid_max=1.01))
    assert long["split-R̂ (function space)"]["verdict"] == "FAIL"
    # chains that disagree far beyond what independent draws give: a plain FAIL too
    apart = _by_check(_stats(rhat_max=1.5, rhat_gate=True, rhat_iid_max=1.06))
    assert apart["split-R̂ (function space)"]["verdict"] == "FAIL"


def test_warmup_validation_verdicts() -> None:
    ok = {"passed": True, "coverage_change": 0.001, "sd_change_median": 0.02}
    bad = {"passed": False, "coverage_change": -0.007, "sd_change_median": 0.02}
    other = {**ok, "settings_match": False}
    found = _by_check(
        _stats(rhat_max=1.2, preset_validation={"smoke": None, "fast": ok, "standard": bad})
    )
    assert found["warm-up sensitivity (smoke)"]["verdict"] == "not validated"
    # a family gated per instance by R̂ (BNN) needs no preset record
    gated = _by_check(
        _stats(rhat_max=1.01, rhat_gate=True, preset_validation={"smoke": None, "fast": bad})
    )
    assert gated["warm-up sensitivity (smoke)"]["verdict"] == (
        "not required (split-R̂ gate per instance, SPEC §7)"
    )
    # and a record of it is information: never a FAIL that --strict would count
    assert gated["warm-up sensitivity (fast)"]["verdict"] == "not a gate (FAIL)"
    # a record that names no numerics version (or another) says so beside its verdict
    unversioned = {**ok, "numerics_match": None, "numerics_version": None}
    old = {**ok, "numerics_match": False, "numerics_version": 0}
    versions = _by_check(_stats(preset_validation={"a": unversioned, "b": old}))
    assert versions["warm-up sensitivity (a)"]["verdict"] == (
        "pass (record names no numerics version)"
    )
    assert versions["warm-up sensitivity (b)"]["verdict"] == (
        "pass (record made under numerics version 0)"
    )
    assert found["warm-up sensitivity (fast)"]["verdict"] == "pass"
    assert found["warm-up sensitivity (standard)"]["verdict"] == "FAIL"
    assert found["warm-up sensitivity (standard)"]["figure"] == "Δcov -0.0070, ΔSD 0.020"
    assert "0.005" in found["warm-up sensitivity (fast)"]["threshold"]
    caveat = _by_check(_stats(preset_validation={"fast": other}))["warm-up sensitivity (fast)"]
    assert caveat["verdict"].startswith("pass (record made with other")


def test_figures_without_a_spec_threshold_are_marked_not_gated() -> None:
    found = _by_check(_stats(sbc_max_bin_deviation=0.5, corr_mean_fstar_median=-0.9))
    for check in ("SBC largest bin deviation", "MCSE σ_f² relative (median / p95)"):
        assert found[check]["verdict"] == "not gated"
    assert found["corr(mean, f*) median"] == {
        "check": "corr(mean, f*) median",
        "figure": "-0.900",
        "threshold": "none",
        "verdict": "not gated",
    }


def test_an_approximate_reference_is_never_gated() -> None:
    stats = _stats(coverage_90_p=1e-4, mc_n_disagree=2, mc_disagree_p=1e-4)
    found = gate_verdicts(stats, approximate=True)
    assert {v["verdict"] for v in found} == {"not gated (approximate reference)"}
    # the same checks and figures are shown, only the verdicts change
    plain = gate_verdicts(stats)
    assert [(v["check"], v["figure"]) for v in found] == [(v["check"], v["figure"]) for v in plain]
    assert {v["verdict"] for v in plain} >= {"FAIL"}


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("UDBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    mp.delenv("UDBENCH_DATA_DIR", raising=False)  # diabetes is embedded
    get_prior.cache_clear()
    out = tmp_path_factory.mktemp("tasks")
    args = ["generate", "--datasets", "diabetes", "--families", "gp", "--noise", "homoscedastic"]
    args += ["--coverage", "balanced", "--seeds", "0-2", "--draws", "60", "--fidelity", "smoke"]
    assert main([*args, "--out", str(out)]) == 0
    yield out
    get_prior.cache_clear()
    mp.undo()


def test_check_takes_files_and_globs_like_run(task_dir, capsys) -> None:
    files = sorted(task_dir.glob("*.npz"))
    assert main(["check", str(files[0]), str(task_dir / "*s2.npz"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    gp = report["families"]["gp"]
    assert gp["n_instances"] == 2
    assert {v["check"] for v in gp["verdicts"]} >= {"coverage 90 %", "MC = exact moments"}
    # the same file named twice (file and glob) counts once
    assert main(["check", str(files[0]), str(task_dir / "*s0.npz"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["families"]["gp"]["n_instances"] == 1
    assert main(["check", str(task_dir / "*s9.npz")]) == 2
    err = capsys.readouterr().err
    assert "udbench check" in err and "glob" in err


def test_check_table_shows_thresholds_and_strict_exit(task_dir, capsys, monkeypatch) -> None:
    assert main(["check", str(task_dir)]) == 0
    out = capsys.readouterr().out
    assert "Verdicts (SPEC §7)" in out and "not gated" in out and "correct posterior" in out

    def failing(stats, **kw):
        return [{"check": "coverage 90 %", "figure": "0.5", "threshold": "t", "verdict": "FAIL"}]

    monkeypatch.setattr("udbench.tasks.gate_verdicts", failing)
    assert main(["check", str(task_dir)]) == 0  # a failed verdict is shown, not an error
    assert "failed: gp coverage 90 %" in capsys.readouterr().out
    assert main(["check", str(task_dir), "--strict"]) == EXIT_CHECK_FAILED
    assert main(["check", str(task_dir), "--strict", "--json"]) == EXIT_CHECK_FAILED


def test_check_lists_gp_files_made_before_the_nugget(task_dir, tmp_path, capsys) -> None:
    from udbench.tasks import Task

    assert main(["check", str(task_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["before_nugget"] == []  # fresh files have ν
    # a file as udbench wrote it before the exact moments included the nugget
    task = Task.load(sorted(task_dir.glob("*.npz"))[0])
    assert task.diagnostics["sampler"]["nugget"] > 0
    del task.diagnostics["sampler"]["nugget"]
    old = task.save(tmp_path / "old" / f"{task.spec.task_id}.npz")
    assert main(["check", str(old), "--json"]) == 0  # still valid: listed, not rejected
    report = json.loads(capsys.readouterr().out)
    assert report["before_nugget"] == [
        {"task_id": task.spec.task_id, "path": str(old), "mc_agree": True}
    ]
    assert report["invalid"] == [] and report["families"]["gp"]["n_instances"] == 1
    assert main(["check", str(old)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "note: 1 GP task file(s) were made before the exact moments included" in out
    assert "0 of them fail MC = exact" in out


@pytest.fixture(scope="module")
def d40_dir(task_dir, tmp_path_factory):
    """The grid of issue 31: diabetes, all noise modes and coverages, seeds 0-2, D = 40 (24
    exact GP instances; the prior is cached by ``task_dir``)."""
    out = tmp_path_factory.mktemp("d40")
    args = ["generate", "--datasets", "diabetes", "--noise", "all", "--coverage", "all"]
    args += ["--seeds", "0-2", "--fidelity", "smoke", "--draws", "40", "--out", str(out)]
    assert main(args) == 0
    return out


def _coverage_verdict(report: dict) -> dict:
    gp = report["families"]["gp"]
    return {v["check"]: v for v in gp["verdicts"]}["coverage 90 %"]


def test_check_passes_exact_gp_posteriors_at_small_d(d40_dir, capsys) -> None:
    # before issue 31: "0.856 [0.830, 0.881] FAIL" (interpolated quantiles cover ≈ 0.854
    # at D = 40, judged against 0.90)
    assert main(["check", str(d40_dir), "--json", "--strict"]) == 0
    report = json.loads(capsys.readouterr().out)
    gp = report["families"]["gp"]
    assert gp["n_instances"] == 24
    assert gp["coverage_90_expected"] == pytest.approx(37 / 41)
    lo, hi = gp["coverage_90_null_range"]
    assert lo < gp["coverage_90"] < hi and lo < 37 / 41 < hi
    assert _coverage_verdict(report)["verdict"] == "pass"
    # one instance at D = 40 cannot be judged at 1 %: said so, never FAIL
    one = sorted(d40_dir.glob("*.npz"))[0]
    assert main(["check", str(one), "--json", "--strict"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert _coverage_verdict(report)["verdict"] == "too few instances to judge"
    assert report["families"]["gp"]["coverage_90_ci"] is None
    assert main(["check", str(one)]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and "failed:" not in out


def test_check_recomputes_the_coverage_of_files_made_before_the_rule(d40_dir, tmp_path, capsys):
    # a file whose stored checks come from before issue 31 (interpolated quantiles, no null
    # counts): udbench check judges it from its arrays by the current rule
    from udbench.tasks import Task

    paths = sorted(d40_dir.glob("*.npz"))[:6]
    for path in paths:
        task = Task.load(path)
        checks = task.diagnostics["checks"]
        for key in ("covered_90_null", "coverage_90_expected"):
            del checks[key]
        checks["covered_90"] = 0  # a figure the check must not use
        task.save(tmp_path / path.name)
    assert main(["check", str(tmp_path), "--json"]) == 0
    old = json.loads(capsys.readouterr().out)["families"]["gp"]
    assert main(["check", *map(str, paths), "--json"]) == 0
    new = json.loads(capsys.readouterr().out)["families"]["gp"]
    # the same rule on float32-rounded values: equal up to ties the rounding makes
    assert old["coverage_90"] == pytest.approx(new["coverage_90"], abs=2e-3)
    assert old["coverage_90_expected"] == new["coverage_90_expected"]
    assert old["coverage_90_p"] is not None


def test_stuck_chains_by_the_ess_the_mcse_implies() -> None:
    from udbench._validation import UdbenchError
    from udbench.tasks.checks import stuck_chains

    # ESS = 2 / m²: m = 0.30 -> 22.2 draws from 20 chains (protein u-shaped, lean), flagged
    flag = stuck_chains(0.30, 20)
    assert flag == pytest.approx({"ess_implied": 2 / 0.09, "ess_per_chain": 2 / 0.09 / 20})
    assert stuck_chains(0.088, 20) is None  # the worst healthy lean instance: ESS 258
    assert stuck_chains(0.045, 1) is None  # D = 1000 independent draws: ESS ≈ 1000
    assert stuck_chains((2 / 30) ** 0.5 * 1.001, 20) is not None  # ESS just below 1.5 x 20
    assert stuck_chains((2 / 30) ** 0.5 * 0.999, 20) is None  # just above
    assert stuck_chains(0.0, 20) is None and stuck_chains(float("nan"), 20) is None
    assert stuck_chains(None, 20) is None and stuck_chains(0.9, None) is None  # not recorded
    # fewer chains than the 20 batches: batches are chain segments, frozen chains do not give
    # ESS ~ n_chains (4 frozen chains gave ~11 per chain in a simulation): not judged
    assert stuck_chains(0.9, 4) is None and stuck_chains(0.9, 19) is None
    assert stuck_chains(0.9, 20) is not None
    with pytest.raises(UdbenchError, match="'n_chains' must be >= 1"):
        stuck_chains(0.3, 0)


def test_the_ess_an_mcse_implies() -> None:
    """ESS = 2 / m² (the one formula of stuck_chains and the MCMC summary's table)."""
    from udbench.tasks.checks import mcse_implied_ess

    assert mcse_implied_ess(0.1) == pytest.approx(200.0)
    assert mcse_implied_ess((2 / 1000) ** 0.5) == pytest.approx(1000.0)  # D iid draws
    assert mcse_implied_ess(0.0) is None and mcse_implied_ess(float("nan")) is None
    assert mcse_implied_ess(float("inf")) is None and mcse_implied_ess(None) is None


def test_check_names_instances_with_stuck_chains(task_dir, tmp_path, capsys) -> None:
    """An HBART-like instance (R̂ not a gate) with m = 0.30 over 20 chains is listed and
    warned about; the same with m = 0.09 is not; verdicts and exit status are unchanged."""
    from udbench.tasks import Task

    task = Task.load(sorted(task_dir.glob("*.npz"))[0])
    task.diagnostics["sampler"].update({"rhat_gate": False, "n_chains": 20})
    for name, m in (("ok", 0.09), ("stuck", 0.30)):
        task.diagnostics["checks"]["mcse_var_rel_median"] = m
        task.save(tmp_path / name / f"{task.spec.task_id}.npz")
    assert main(["check", str(tmp_path / "ok"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stuck_chains"] == []
    assert main(["check", str(tmp_path / "stuck"), "--json", "--strict"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["stuck_chains"]
    assert entry["task_id"] == task.spec.task_id and entry["ess_per_chain"] == pytest.approx(
        2 / 0.09 / 20
    )
    # an R̂-gated family (BNN) with the same figures, or a file without chains: not listed
    for name, update in (("gated", {"rhat_gate": True}), ("nochains", {"n_chains": None})):
        task.diagnostics["sampler"].update({"rhat_gate": False, "n_chains": 20, **update})
        if update.get("n_chains", 0) is None:
            del task.diagnostics["sampler"]["n_chains"]
        task.save(tmp_path / name / f"{task.spec.task_id}.npz")
        assert main(["check", str(tmp_path / name), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["stuck_chains"] == [], name
    assert main(["check", str(tmp_path / "stuck")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "warning: 1 instance(s) whose R̂ is not a gate look like stuck chains" in out
    assert f"(e.g. {task.spec.task_id}: 1.11)" in out
