"""``--pruner auto`` (issue 35, item 3): successive halving for the methods whose pruned sweeps
lost no more than the seed-to-seed spread, none for the others; the CLI default; journals and
records hold the resolved pruner; ``udbench plan`` applies the measured CPU ratio; the tuning
campaign stays unpruned (its committed records were made so)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _fakes import StepQuadMethod, make_fake_task, save_fake_task, strip_clock
from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.tuning.pruning import (
    AUTO_SHA_METHODS,
    methods_within_spread,
    pruner_spec,
    resolve_pruner,
)
from udbench.tuning.records import load_records
from udbench.tuning.sweep import plan_sweeps, tune

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = ROOT / "docs" / "validation" / "pruning" / "summary.json"


@pytest.fixture
def tasks(tmp_path):
    folder = tmp_path / "tasks"
    save_fake_task(make_fake_task(0, n_train=50), folder)
    return folder


def test_the_auto_methods_are_those_the_measurement_passed():
    summary = json.loads(SUMMARY.read_text())
    assert methods_within_spread(summary, "sha") == AUTO_SHA_METHODS
    assert AUTO_SHA_METHODS == {"catboost-ps", "dkl", "ngboost-bag", "ngboost-nig"}
    # the rule: |d| <= spread on both measures (equal passes; the sign does not matter)
    fake = {
        "sha": {
            "methods": {
                "a": {"dnll": 0.1, "drho": -0.2, "spread_nll": 0.1, "spread_rho": 0.2},
                "b": {"dnll": 0.1, "drho": 0.3, "spread_nll": 0.5, "spread_rho": 0.2},
                "c": {"dnll": -0.6, "drho": 0.0, "spread_nll": 0.5, "spread_rho": 0.2},
            }
        }
    }
    assert methods_within_spread(fake) == {"a"}
    with pytest.raises(UdbenchError, match="pruner"):
        methods_within_spread(fake, "median")


def test_auto_resolves_per_method():
    from udbench.methods import make_method

    for name in ("catboost-ps", "dkl", "ngboost-bag", "ngboost-nig"):
        assert resolve_pruner("auto", name) == "sha"
    # a network that failed the rule, a method with no steps, a classifier, an unknown name
    for name in ("nn-ens", "gp", "logreg-lap", "fake-step-quad"):
        assert resolve_pruner("auto", name) == "none"
    for kind in ("none", "sha", "hyperband", "median"):
        assert resolve_pruner(kind, "nn-ens") == kind
    with pytest.raises(UdbenchError, match="pruner"):
        resolve_pruner("asha", "nn-ens")
    # DKL reports its optimiser steps; auto prunes it exactly when its measured sha sweeps
    # passed the rule (the committed summary)
    passed = "dkl" in methods_within_spread(json.loads(SUMMARY.read_text()), "sha")
    assert resolve_pruner("auto", "dkl") == ("sha" if passed else "none")
    spec = pruner_spec("auto", make_method("ngboost-nig"))
    assert spec is not None and spec.kind == "sha" and spec.param == "n_estimators"
    assert pruner_spec("auto", make_method("nn-ens")) is None


def test_plan_sweeps_hold_the_resolved_pruner(tasks):
    plans = plan_sweeps([tasks], ["ngboost-nig", "nn-ens", "blr"], trials=2)
    assert [(p.method.name, p.pruner) for p in plans] == [
        ("ngboost-nig", "sha"),
        ("nn-ens", "none"),
        ("blr", "none"),
    ]
    assert [p.pruner for p in plan_sweeps([tasks], ["ngboost-nig"], pruner="none")] == ["none"]


def test_a_classifier_is_not_pruned_under_auto():
    from udbench.methods.classifiers import resolve_classifier

    mc = resolve_classifier("logreg-lap")
    assert resolve_pruner("auto", mc.name) == "none"
    assert pruner_spec("auto", mc.estimator) is None


def test_the_cli_default_is_auto_and_pruner_none_is_the_unpruned_sweep(
    tasks, tmp_path, monkeypatch, capsys
):
    # the fake iterative method stands in for a method of the auto list
    monkeypatch.setattr("udbench.tuning.pruning.AUTO_SHA_METHODS", frozenset({StepQuadMethod.name}))
    spec = "_fakes:StepQuadMethod"
    base = ["tune", str(tasks), "-m", spec, "--trials", "24", "--workers", "0", "--no-progress"]
    assert main([*base, "--out", str(tmp_path / "auto")]) == 0
    (auto,) = load_records(tmp_path / "auto")
    assert auto["pruner"]["kind"] == "sha" and auto["n_pruned"] > 0  # resolved, not "auto"
    tune([tasks], [StepQuadMethod()], tmp_path / "sha", trials=24, pruner="sha", workers=0)
    (sha,) = load_records(tmp_path / "sha")
    assert strip_clock(auto) == strip_clock(sha)

    assert main([*base, "--out", str(tmp_path / "none"), "--pruner", "none"]) == 0
    (none,) = load_records(tmp_path / "none")
    assert none["pruner"] is None and none["n_pruned"] == 0 and none["n_complete"] == 24
    tune([tasks], [StepQuadMethod()], tmp_path / "py", trials=24, pruner="none", workers=0)
    (py,) = load_records(tmp_path / "py")
    assert strip_clock(none) == strip_clock(py)


def test_a_journal_of_the_resolved_pruner_resumes_under_auto(tasks, tmp_path, monkeypatch):
    monkeypatch.setattr("udbench.tuning.pruning.AUTO_SHA_METHODS", frozenset({StepQuadMethod.name}))
    tune([tasks], [StepQuadMethod()], tmp_path / "t", trials=8, pruner="sha", workers=0)
    resumed = tune([tasks], [StepQuadMethod()], tmp_path / "t", trials=12, workers=0)
    assert resumed.n_resumed_trials == 8 and resumed.n_trials_run == 4
    # an unpruned journal of a method auto prunes: auto resumes it unpruned (its 4 trials kept)
    tune([tasks], [StepQuadMethod()], tmp_path / "u", trials=4, pruner="none", workers=0)
    (before,) = load_records(tmp_path / "u")
    resumed = tune([tasks], [StepQuadMethod()], tmp_path / "u", trials=6, workers=0)
    assert resumed.n_resumed_trials == 4 and resumed.n_trials_run == 2
    (rec,) = load_records(tmp_path / "u")
    assert rec["pruner"] is None and rec["n_pruned"] == 0 and rec["n_complete"] == 6
    assert all(not h["intermediate"] for h in rec["history"])  # nothing reported: unpruned
    kept = sorted(strip_clock(before)["history"], key=lambda h: h["number"])
    assert sorted(strip_clock(rec)["history"], key=lambda h: h["number"])[:4] == kept
    # an explicit pruner is never swapped: the journal's is named in the error
    with pytest.raises(UdbenchError, match="pass --pruner none to resume it"):
        tune([tasks], [StepQuadMethod()], tmp_path / "u", trials=8, pruner="sha", workers=0)


def test_the_shipped_table_holds_the_measured_ratios():
    from udbench.tuning.calibration import load_calibration

    table = load_calibration()
    sha = json.loads(SUMMARY.read_text())["sha"]["methods"]
    for method in AUTO_SHA_METHODS:
        want = sha[method]["cpu_pruned"] / sha[method]["cpu_none"]
        assert table.pruning_ratio(method, "sha") == pytest.approx(want, rel=1e-12)
        assert table.pruning_ratio(method, "median") is None  # measured with sha only
    assert table.pruning_ratio("nn-ens") is None


def _plan_table():
    from udbench.tuning.calibration import CalibrationTable

    law = {"fit": {"coef": 1e-3, "exponent": 1.0}, "predict": {"coef": 2e-4, "exponent": 1.0}}
    entries = {
        f"method:{m}": {"law": law, "first_call_s": 0.5, "new_config_s": 0.1}
        for m in ("ngboost-nig", "nn-ens", "blr")
    }
    entries["tune-pruning:ngboost-nig"] = {"cpu_ratio": 0.25, "pruner": "sha"}
    entries["tune-pruning:nn-ens"] = {"cpu_ratio": 0.5, "pruner": "sha"}
    return CalibrationTable(entries, {}, source="test")


def test_plan_projects_auto_with_the_measured_ratio():
    from udbench.tasks.grid import expand_grid
    from udbench.tuning.plan import Measurements, plan_grid

    specs = expand_grid(
        "concrete,airfoil", "gp", "homoscedastic,step", "balanced", "0-1", "standard", 1000
    )
    methods = ["ngboost-nig", "nn-ens", "blr"]

    def tune_rows(pruner: str) -> dict:
        _, rows = plan_grid(specs, methods, 5, Measurements(), _plan_table(), pruner=pruner)
        return {r.key: r for r in rows if r.stage == "tune"}

    def trials_s(r) -> float:  # the trials' seconds, without the per-worker first calls
        return 3600.0 * r.cpu_hours - r.overhead_s

    auto, none, sha = tune_rows("auto"), tune_rows("none"), tune_rows("sha")
    assert auto["ngboost-nig"].pruner == "sha" and auto["ngboost-nig"].pruning_ratio == 0.25
    assert trials_s(auto["ngboost-nig"]) == pytest.approx(0.25 * trials_s(none["ngboost-nig"]))
    for m in ("nn-ens", "blr"):  # not pruned under auto
        assert auto[m].cpu_hours == none[m].cpu_hours and auto[m].pruning_ratio is None
    assert trials_s(sha["nn-ens"]) == pytest.approx(0.5 * trials_s(none["nn-ens"]))
    assert sha["blr"].cpu_hours == none["blr"].cpu_hours  # no ratio measured: unpruned
    median = tune_rows("median")  # the table's ratios are sha's
    assert median["ngboost-nig"].cpu_hours == none["ngboost-nig"].cpu_hours
    with pytest.raises(UdbenchError, match="pruner"):
        tune_rows("asha")


def test_plan_cli_defaults_to_auto(tmp_path, capsys):
    table = tmp_path / "table.json"
    _plan_table().write(table)
    args = ["plan", "--datasets", "concrete", "--families", "gp", "--noise", "homoscedastic",
            "--coverage", "balanced", "--seeds", "0", "-m", "ngboost-nig,blr", "--trials", "5",
            "--calibration", str(table), "--workers", "1", "--json"]  # fmt: skip
    assert main(args) == 0
    rows = {(r["stage"], r["key"]): r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows[("tune", "ngboost-nig")]["pruner"] == "sha"
    assert rows[("tune", "ngboost-nig")]["pruning_ratio"] == 0.25
    assert rows[("tune", "blr")]["pruner"] == "none"
    assert main([*args, "--pruner", "none"]) == 0
    rows = {(r["stage"], r["key"]): r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows[("tune", "ngboost-nig")]["pruning_ratio"] is None
    assert main([*args, "--pruner", "asha"]) != 0
    assert "pruner" in capsys.readouterr().err


def test_the_tuning_campaign_stays_unpruned_and_its_records_current(tmp_path):
    from udbench.campaigns.tuning import tuning_units

    units = tuning_units("gp-small", work_dir=tmp_path, methods=["ngboost-nig", "blr"])
    assert {u.settings["pruner"] for u in units} == {"none"}  # pinned: records are unpruned
    shipped = ROOT / "src" / "udbench" / "tuning" / "shipped" / "gp-small" / "ngboost-nig"
    by_id = {u.unit_id: u for u in units}
    for path in sorted(shipped.glob("*.json")):
        rec = json.loads(path.read_text())
        assert by_id[rec["unit_id"]].settings["pruner"] == rec["settings"]["pruner"] == "none"
    auto = tuning_units(
        "gp-small", work_dir=tmp_path, methods=["ngboost-nig", "blr"], pruner="auto"
    )
    got = {u.settings["method"]: u.settings["pruner"] for u in auto}
    assert got == {"ngboost-nig": "sha", "blr": "none"}  # resolved per method, never "auto"
