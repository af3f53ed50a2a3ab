"""``run --tuned``, ``tune-summary`` and ``plan`` (issue 17, items 3 and 4)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from _fakes import make_fake_task, save_fake_task
from udbench.cli import main
from udbench.evaluation.store import read_results
from udbench.tuning.records import load_records


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return " ".join(err.split())


@pytest.fixture
def grid(tmp_path, monkeypatch):
    """Two conditions (noise modes) with seeds 0 and 1; blr tuned on one of them only."""
    monkeypatch.chdir(tmp_path)
    for noise in ("smooth-monotone", "homoscedastic"):
        for seed in (0, 1):
            save_fake_task(make_fake_task(seed, n_train=40, noise=noise), tmp_path / "tasks")
    save_fake_task(make_fake_task(0, n_train=40), tmp_path / "tuned-tasks")
    args = ["tune", "tuned-tasks", "-m", "blr", "--trials", "4", "--workers", "0"]
    assert main([*args, "--out", "tuning", "--no-progress"]) == 0
    return tmp_path


def test_run_tuned_uses_each_conditions_record_and_stores_which(grid, capsys):
    capsys.readouterr()
    args = ["run", "tasks", "-m", "blr", "--workers", "0", "--no-progress", "--out", "res"]
    assert main([*args, "--tuned", "tuning"]) == 2
    err = _err(capsys)
    assert "no tuned record" in err and "blr/toy__gp__homoscedastic__balanced" in err
    assert "smooth-monotone" not in err.split("for ", 1)[1].split(";")[0]
    assert len(err.splitlines()) == 1
    assert not (grid / "res").exists()  # nothing ran

    assert main([*args, "--tuned", "tuning", "--fallback", "default"]) == 0
    # the fallback is said, naming the conditions without a record
    warned = [line for line in capsys.readouterr().err.splitlines() if "no tuned record" in line]
    assert len(warned) == 1 and warned[0].startswith("warning: udbench run --tuned")
    assert "blr/toy__gp__homoscedastic__balanced: those cells run with the" in warned[0]
    df = read_results(grid / "res").sort_values("task_id")
    (rec,) = load_records(grid / "tuning")
    tuned = df[df["noise"] == "smooth-monotone"]
    assert len(tuned) == 2 and set(tuned["tuned_record"]) == {
        rec["method"] + "/" + rec["condition"]
    }
    assert set(tuned["config_hash"]) == {rec["config_hash"]}
    assert json.loads(tuned["config"].iloc[0])["params"] == rec["params"]
    default = df[df["noise"] == "homoscedastic"]
    assert default["tuned_record"].isna().all() and len(default) == 2
    # a [tuned] entry holds tuned cells only: the fallback cells keep the label as given
    assert set(tuned["method_label"]) == {"blr[tuned]"} and set(default["method_label"]) == {"blr"}
    assert (df["status"] == "ok").all()

    # the results folder carries the records it used; the report shows them and their curves
    assert load_records(grid / "res" / "tuned")[0]["params"] == rec["params"]
    assert main(["report", "res", "--out", "rep"]) == 0
    page = (grid / "rep" / "report.html").read_text()
    assert "Tuned configurations" in page and "toy__gp__smooth-monotone__balanced" in page
    assert (grid / "rep" / "tuning.png").stat().st_size > 1000


def test_a_record_of_another_search_space_is_a_one_line_error(grid, capsys):
    (path,) = (grid / "tuning").glob("*/*.json")
    rec = json.loads(path.read_text())
    rec["search_space_hash"] = "000000000000"
    path.write_text(json.dumps(rec))
    capsys.readouterr()
    args = ["run", "tuned-tasks", "-m", "blr", "--workers", "0", "--no-progress", "--out", "r"]
    assert main([*args, "--tuned", "tuning", "--fallback", "default"]) == 2
    err = _err(capsys)
    assert "another search space" in err and "tune it again" in err
    assert len(err.splitlines()) == 1


def test_tune_summary_lists_the_sweeps(grid, capsys):
    capsys.readouterr()
    assert main(["tune-summary", "tuning", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["method"] == "blr" and row["n_trials"] == 4 and row["status"] == "ok"
    assert row["condition"] == "toy__gp__smooth-monotone__balanced"
    assert set(row["tuned_params"]) == {"alpha_1", "alpha_2", "lambda_1", "lambda_2"}


def test_plan_counts_and_projects_from_measurements_only(grid, capsys):
    args = ["run", "tuned-tasks", "-m", "blr", "--workers", "0", "--no-progress", "--out", "res"]
    assert main(args) == 0
    capsys.readouterr()
    plan = ["plan", "--datasets", "diabetes", "--families", "gp,hbart", "--noise", "all"]
    plan += ["--coverage", "all", "--seeds", "0-2", "-m", "blr,gp", "--trials", "5"]
    plan += ["--no-calibration"]  # measured figures only (the calibration is tested apart)
    assert main([*plan, "--measured", "res", "--measured", "tuning", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # 1 dataset x 2 families x 4 noise modes x 2 coverages = 16 conditions, x 3 seeds
    assert out["counts"] == {
        "instances": 48, "conditions": 16, "methods": 2, "sweeps": 32, "trials": 160, "fits": 96
    }  # fmt: skip
    rows = {(r["stage"], r["key"]): r for r in out["rows"]}
    ran = read_results(grid / "res")
    secs = float((ran["fit_time_s"] + ran["predict_time_s"]).median())
    run_blr = rows[("run", "blr")]
    assert run_blr["n_measured"] == 1 and run_blr["count"] == 48
    # a results folder holds wall-clock seconds: wall hours, never called CPU-hours
    assert run_blr["clock"] == "wall" and run_blr["cpu_hours"] is None
    assert run_blr["wall_hours"] == pytest.approx(48 * secs / 3600, rel=1e-9)
    (rec,) = load_records(grid / "tuning")
    trial_s = pd.Series([h["fit_time_s"] + h["predict_time_s"] for h in rec["history"]])
    tune_blr = rows[("tune", "blr")]
    assert tune_blr["n_measured"] == 4 and tune_blr["count"] == 80
    assert tune_blr["clock"] == "wall" and tune_blr["cpu_hours"] is None
    assert tune_blr["wall_hours"] == pytest.approx(80 * trial_s.median() / 3600, rel=1e-9)
    assert out["cpu_hours"] == 0.0
    assert out["wall_clock_hours"] == pytest.approx(
        run_blr["wall_hours"] + tune_blr["wall_hours"], rel=1e-9
    )
    # nothing measured: unknown, not guessed
    assert rows[("run", "gp")]["cpu_hours"] is None and rows[("run", "gp")]["n_measured"] == 0
    assert rows[("generate", "gp")]["cpu_hours"] is None


def test_missing_records_name_the_caller_and_its_own_remedy(grid):
    """A caller without --fallback (the spectral-norm study) must not suggest it."""
    from udbench._validation import UdbenchError
    from udbench.methods.configs import resolve_methods
    from udbench.tasks import read_task_meta
    from udbench.tasks.spec import TaskSpec
    from udbench.tuning.records import tuned_configurer

    specs = [TaskSpec(**read_task_meta(p)["spec"]) for p in sorted((grid / "tasks").glob("*.npz"))]
    mcs = resolve_methods(["blr"])
    with pytest.raises(UdbenchError) as default:
        tuned_configurer(grid / "tuning", mcs, specs)
    assert str(default.value).startswith("udbench run --tuned: no tuned record")
    assert "--fallback default" in str(default.value)
    with pytest.raises(UdbenchError) as own:
        tuned_configurer(grid / "tuning", mcs, specs, command="udbench study x", remedy="tune more")
    text = str(own.value)
    assert text.startswith("udbench study x: no tuned record") and text.endswith("; tune more")
    assert "fallback" not in text and "blr/toy__gp__homoscedastic__balanced" in text


def test_tune_takes_several_methods_after_one_m(tmp_path, monkeypatch):
    """``tune TASKS -m blr gp``: click gives -m one value; gp arrives as a task argument and
    must be moved back to the methods (as run does), not read as a missing task path."""
    from udbench.commands._options import split_tasks_and_methods

    monkeypatch.chdir(tmp_path)
    save_fake_task(make_fake_task(0, n_train=40), tmp_path / "tasks")
    assert split_tasks_and_methods(["tasks", "gp"], ["blr"]) == (["tasks"], ["blr", "gp"])
    assert split_tasks_and_methods(["tasks", "no-such"], ["blr"]) == (["tasks", "no-such"], ["blr"])
    args = ["tune", "tasks", "-m", "blr", "gp", "--trials", "1", "--workers", "0"]
    assert main([*args, "--out", "tuning", "--no-progress"]) == 0
    assert sorted(r["method"] for r in load_records(tmp_path / "tuning")) == ["blr", "gp"]


def test_a_results_folder_given_as_tuned_is_named_as_such(tmp_path) -> None:
    """issue 68, item 4: not "no tuned record", but what the folder is."""
    from udbench._validation import UdbenchError
    from udbench.evaluation.store import ResultsStore
    from udbench.tuning.shipped import resolve_tuned

    results = tmp_path / "results"
    ResultsStore(results).cells_dir.mkdir(parents=True)
    with pytest.raises(UdbenchError) as err:
        resolve_tuned(results, "udbench run --tuned")
    assert str(err.value) == (
        "udbench run --tuned: --tuned must be a tuning folder (udbench tune --out: "
        "<method>/<condition>.json records) or a suite with shipped records; "
        f"{str(results)!r} is a results folder (udbench run --out), which holds no tuned "
        "configuration"
    )
    (tmp_path / "tuning" / "blr").mkdir(parents=True)  # a tuning folder is taken as it is
    assert resolve_tuned(tmp_path / "tuning", "udbench run --tuned") == (tmp_path / "tuning", None)
