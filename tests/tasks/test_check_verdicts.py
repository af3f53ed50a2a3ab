"""``udbench check``: a verdict per SPEC §7 check with its threshold, and files/globs as for
``run`` (issue 13, item 6)."""

from __future__ import annotations

import json

import pytest

from udbench.cli import main
from udbench.commands.tasks import EXIT_CHECK_FAILED
from udbench.tasks import gate_verdicts
from udbench.tasks.generate import get_prior


def _stats(**kw) -> dict:
    base = {
        "coverage_90": 0.9,
        "coverage_90_ci": [0.89, 0.91],
        "sbc_max_bin_deviation": 0.004,
        "mcse_var_median": 0.045,
        "mcse_var_p95": 0.06,
        "corr_mean_fstar_median": 0.95,
    }
    return {**base, **kw}


def _by_check(stats: dict) -> dict[str, dict[str, str]]:
    return {v["check"]: v for v in gate_verdicts(stats)}


@pytest.mark.parametrize(
    ("ci", "verdict"),
    [
        ([0.89, 0.90], "pass"),  # nominal on the upper edge
        ([0.90, 0.91], "pass"),  # ... and on the lower edge
        ([0.9001, 0.91], "FAIL"),
        ([0.85, 0.8999], "FAIL"),
    ],
)
def test_coverage_verdict_at_its_threshold(ci, verdict) -> None:
    v = _by_check(_stats(coverage_90_ci=ci))["coverage 90 %"]
    assert v["verdict"] == verdict
    assert "0.90 inside" in v["threshold"]


def test_mc_agreement_needs_every_instance() -> None:
    assert _by_check(_stats(mc_agree_fraction=1.0))["MC = exact moments"]["verdict"] == "pass"
    failed = _by_check(_stats(mc_agree_fraction=0.95))["MC = exact moments"]
    assert failed["verdict"] == "FAIL" and failed["figure"] == "95% of instances"
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


def test_warmup_validation_verdicts() -> None:
    ok = {"passed": True, "coverage_change": 0.001, "sd_change_median": 0.02}
    bad = {"passed": False, "coverage_change": -0.007, "sd_change_median": 0.02}
    other = {**ok, "settings_match": False}
    found = _by_check(
        _stats(rhat_max=1.2, preset_validation={"smoke": None, "fast": ok, "standard": bad})
    )
    assert found["warm-up sensitivity (smoke)"]["verdict"] == "not validated"
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
    stats = _stats(coverage_90_ci=[0.5, 0.6], mc_agree_fraction=0.5)
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
    assert "Verdicts (SPEC §7)" in out and "not gated" in out and "0.90 inside" in out

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
