"""The tuning campaign of a classification suite (issue 38, item 3) at tiny size.

The classifier is ``logreg-lap``, the sweep has 3 trials, and the condition's task is the toy
latent-GP classification task (30 training points, :func:`_fakes.toy_gpc_task`) under the
task id of clf-small's first condition, placed in the campaign's work folder (the unit reuses
a task file of its task id instead of generating it), in the classification campaign's
layout (``WORK/gpc-v<N>/tasks``). The shipped records folder is
redirected to ``tmp_path``.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from _fakes import toy_gpc_task
from udbench.campaigns import run_campaign, unit_status
from udbench.campaigns.classification import task_folder
from udbench.campaigns.tuning import compact_record, suite_conditions, tuning_units
from udbench.cli import main
from udbench.evaluation.store import read_results
from udbench.recipes.suites import load_suite

COND = "concrete__gpc-k3-medium__homoscedastic__balanced"
CAMPAIGN = ["campaign", "run", "tuning", "--suite", "clf-small", "-m", "logreg-lap"]


def _toy(seed: int = 0):
    """The toy task under clf-small's first condition at ``seed`` (D = 40, smoke)."""
    spec = suite_conditions(load_suite("clf-small"))[0]
    spec = dataclasses.replace(spec, seed=seed, n_draws=40, fidelity="smoke")
    return toy_gpc_task(3, 20, 30, spec)


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """One unit (logreg-lap on clf-small's first condition) run into a redirected shipped
    folder; returns (its record file, the work folder)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("udbench.tuning.shipped.SHIPPED_ROOT", tmp_path / "shipped")
    work = tmp_path / "work"
    task = _toy()
    task.save(task_folder(work) / f"{task.spec.task_id}.npz")
    args = [*CAMPAIGN, "--trials", "3", "--max-units", "1", "--nice", "0", "--work", str(work)]
    assert main(args) == 0
    path = tmp_path / "shipped" / "clf-small" / "logreg-lap" / f"{COND}.json"
    assert path.is_file() and not (work / "tasks").exists()  # the toy file was used
    return path, work


def test_units_are_the_classifiers_by_condition_never_pruned(tmp_path):
    from udbench.campaigns.classification import CELL_SECONDS
    from udbench.priors import family_numerics_version

    units = tuning_units("clf-small", work_dir=tmp_path, pruner="auto")
    # 11 classifiers x (3 datasets x 4 temperature modes x 2 coverages)
    assert len(units) == 11 * 24 and len({u.settings["condition"] for u in units}) == 24
    assert {u.settings["pruner"] for u in units} == {"none"}  # classifiers: never pruned
    sha = tuning_units("clf-small", work_dir=tmp_path, pruner="sha", methods=["catboost-ve"])
    assert {u.settings["pruner"] for u in sha} == {"none"}
    first = units[0]
    assert first.unit_id == f"logreg-lap/{COND}"  # family tier "linear" first
    assert first.settings["task_id"] == f"{COND}__s0"
    assert first.settings["objective"] == "heldout_categorical_nll"
    assert first.numerics == {"gpc": family_numerics_version("gpc")}
    # no calibration entry for a classifier: 30 trials x the per-cell guess, said so
    assert first.estimate_seconds == 30 * CELL_SECONDS["logreg-lap"]
    assert first.estimate_note == "guessed: no calibration entry"


def test_a_classifier_unit_records_the_sweep_of_plain_tune(shipped, tmp_path, capsys):
    from udbench.campaigns.classification import CELL_SECONDS
    from udbench.tuning.sweep import tune

    path, work = shipped
    rec = json.loads(path.read_text())
    assert rec["status"] == "done" and rec["unit_id"] == f"logreg-lap/{COND}"
    res = rec["result"]
    assert res["task_type"] == "classification"
    assert res["score_name"] == "heldout_categorical_nll"
    assert (res["n_trials"], res["n_complete"], res["n_pruned"], res["n_failed"]) == (3, 3, 0, 0)
    assert res["score"] == min(h["value"] for h in res["history"])
    summary = tune(
        [task_folder(work) / f"{COND}__s0.npz"], ["logreg-lap"], tmp_path / "plain", trials=3,
        in_flight=1, workers=0,
    )  # fmt: skip
    plain = compact_record(json.loads(summary.records[0].read_text()))
    assert plain["tuned_params"] == res["tuned_params"]
    assert plain["score"] == pytest.approx(res["score"], rel=1e-12)

    # a rerun does nothing
    units = tuning_units("clf-small", work_dir=work, methods=["logreg-lap"], trials=3)
    assert unit_status(units[0], path.parents[1])[0] == "done"
    assert run_campaign(units[:1], path.parents[1])["skipped"] == 1
    assert json.loads(path.read_text()) == rec

    capsys.readouterr()
    status = ["campaign", "status", "tuning", "--suite", "clf-small", "-m", "logreg-lap"]
    assert main([*status, "--trials", "3"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "logreg-lap" in x)
    cells = [c.strip() for c in line.strip("│ ").split("│")]
    assert cells[:5] == ["logreg-lap", "1", "0", "0", "23"]
    # the 7 other concrete conditions are projected from the one measured (same dataset and
    # family coordinate); the 16 of airfoil and qsar_fish are still the guess (3 trials)
    left = (7 * float(rec["wall_seconds"]) + 16 * 3 * CELL_SECONDS["logreg-lap"]) / 3600
    shown = "< 0.1" if 0 < left < 0.05 else f"{left:.1f}"  # never a bare 0.0 for work left
    assert cells[6] == f"{shown} (16 guessed: no calibration entry)"
    summ = ["campaign", "summarise", "tuning", "--suite", "clf-small", "-m", "logreg-lap"]
    assert main([*summ, "--trials", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["methods"]["logreg-lap"] | {"cpu_hours": 0} == {
        "sweeps_done": 1, "sweeps": 24, "trials": 3, "complete": 3, "pruned": 0, "failed": 0,
        "cpu_hours": 0,
    }  # fmt: skip
    assert out["sweeps"][0]["score"] == res["score"]


def test_status_says_the_guess_when_nothing_is_measured(tmp_path, capsys):
    from udbench.campaigns.classification import CELL_SECONDS

    status = ["campaign", "status", "tuning", "--suite", "clf-small", "-m", "gpc-lap"]
    assert main([*status, "--records", str(tmp_path / "none")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "gpc-lap" in x)
    hours = 24 * 30 * CELL_SECONDS["gpc-lap"] / 3600
    shown = "< 0.1" if 0 < hours < 0.05 else f"{hours:.1f}"
    assert f"{shown} (24 guessed: no calibration entry)" in line


def test_run_tuned_clf_small_uses_the_shipped_record(shipped, tmp_path):
    path, _ = shipped
    res = json.loads(path.read_text())["result"]
    fresh = _toy(seed=3)
    fresh.save(tmp_path / "fresh" / f"{fresh.spec.task_id}.npz")
    run = ["run", "fresh", "-m", "logreg-lap", "--workers", "0", "--no-progress", "--out", "res"]
    assert main([*run, "--tuned", "clf-small"]) == 0
    df = read_results(tmp_path / "res")
    assert list(df["tuned_record"]) == [f"logreg-lap/{COND}"] and (df["status"] == "ok").all()
    assert json.loads(df["config"].iloc[0])["params"] == res["params"]
    assert df["tuned_score"].iloc[0] == res["score"]


def test_a_gpc_numerics_bump_makes_the_shipped_record_stale(shipped, monkeypatch):
    from udbench.tuning.records import read_tuned_record, shipped_staleness

    path, _ = shipped
    rec = read_tuned_record(path)
    assert shipped_staleness(rec, "logreg-lap") is None
    monkeypatch.setattr("udbench.priors.family_numerics_version", lambda family: 999)
    why = shipped_staleness(rec, "logreg-lap")
    assert why is not None and "gpc prior's numerics changed" in why


def test_run_tuned_clf_small_before_any_record_names_the_campaign(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("udbench.tuning.shipped.SHIPPED_ROOT", tmp_path / "shipped")  # empty
    task = _toy()
    task.save(tmp_path / "t" / f"{task.spec.task_id}.npz")
    capsys.readouterr()
    run = ["run", "t", "-m", "logreg-lap", "--workers", "0", "--no-progress", "--out", "res"]
    assert main([*run, "--tuned", "clf-small"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "no tuned record in the shipped records of clf-small" in err
    assert f"logreg-lap/{COND}" in err and "udbench campaign run tuning --suite clf-small" in err
    assert not (tmp_path / "res").exists()


def test_hours_left_is_never_a_bare_zero_for_unprojected_work():
    from udbench.commands.campaign import _hours_left

    row = {"left": 0.0, "?": 3, "notes": {}}
    assert _hours_left(row) == "? + 3 unmeasured"
    row = {"left": 1.25, "?": 2, "notes": {"guessed: no calibration entry": 4}}
    assert _hours_left(row) == "1.2 + 2 unmeasured (4 guessed: no calibration entry)"
    assert _hours_left({"left": 0.0, "?": 0, "notes": {}}) == "0.0"  # nothing left
