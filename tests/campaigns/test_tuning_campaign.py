"""The tuning campaign and the shipped tuned records (issue 36, items 1 and 2).

Tiny sizes: the method is ``blr`` (a closed-form fit), the sweep has 3 trials, and the
condition's task is a 40-point fake of a gp-small condition placed in the campaign's work
folder (the unit reuses a task file of its task id instead of generating it). The shipped
records folder is redirected to ``tmp_path`` (no record is shipped by the tests).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _fakes import make_fake_task, save_fake_task
from udbench.campaigns import run_campaign, unit_status
from udbench.campaigns.tuning import compact_record, condition_task_folder, tuning_units
from udbench.cli import main
from udbench.evaluation.store import read_results
from udbench.tuning.records import load_records

COND = "concrete__gp__homoscedastic__balanced"
CAMPAIGN = ["campaign", "run", "tuning", "--suite", "gp-small", "-m", "blr", "--trials", "3"]


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return " ".join(err.split())


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """One campaign unit (blr on the first gp-small condition) run into a redirected
    shipped-records folder; returns (its record file, the work folder)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("udbench.tuning.shipped.SHIPPED_ROOT", tmp_path / "shipped")
    work = tmp_path / "work"
    task = make_fake_task(0, n_train=40, dataset="concrete", noise="homoscedastic")
    save_fake_task(task, condition_task_folder(work, "gp"))
    args = [*CAMPAIGN, "--max-units", "1", "--nice", "0", "--work", str(work)]
    assert main(args) == 0
    path = tmp_path / "shipped" / "gp-small" / "blr" / f"{COND}.json"
    assert path.is_file()
    return path, work


def test_units_are_the_suites_conditions_cheap_methods_first(tmp_path):
    from udbench.priors import family_numerics_version

    units = tuning_units("gp-small", work_dir=tmp_path, methods=["nn-ens", "blr", "gp"])
    # 3 datasets x 4 noise modes x 2 coverages, each method's conditions together
    assert len(units) == 3 * 24
    assert [u.settings["method"] for u in units[::24]] == ["blr", "gp", "nn-ens"]
    first = units[0]
    assert first.unit_id == f"blr/{COND}" and first.kind == "tuning-sweep"
    assert first.settings["task_id"] == f"{COND}__s0"  # the lowest seed of seeds 0-9
    assert first.settings["trials"] == 30 and first.settings["pruner"] == "none"
    assert first.numerics == {"gp": family_numerics_version("gp")}
    assert len({u.settings["condition"] for u in units}) == 24
    with pytest.raises(Exception, match="methods"):
        tuning_units("gp-small", work_dir=tmp_path, methods=["no-such-method"])


def test_a_unit_records_the_sweep_of_plain_tune(shipped, tmp_path, capsys):
    from udbench.tuning.sweep import tune

    path, work = shipped
    rec = json.loads(path.read_text())
    assert rec["status"] == "done" and rec["kind"] == "tuning-sweep"
    assert rec["unit_id"] == f"blr/{COND}" and rec["cpu_seconds"] > 0
    assert rec["code"]["udbench"] and rec["settings"]["method_spec"] == "blr"
    res = rec["result"]
    assert res["method"] == "blr" and res["condition"] == COND and res["status"] == "ok"
    assert res["resumed_trials"] == 0  # one process ran the whole sweep
    assert res["resumed_trials_cpu_seconds"] == 0.0
    assert all(h["cpu_time_s"] > 0 for h in res["history"])  # each trial's own CPU clock
    assert (res["n_trials"], res["n_complete"], res["n_pruned"], res["n_failed"]) == (3, 3, 0, 0)
    assert res["search_space_hash"] == rec["settings"]["search_space_hash"]
    values = [h["value"] for h in res["history"]]
    assert res["score"] == min(values) and len(values) == 3
    # the same sweep run by `udbench tune` (sequential, same seed) gives the same record
    task_file = condition_task_folder(work, "gp") / f"{COND}__s0.npz"
    summary = tune(
        [task_file], ["blr"], tmp_path / "plain", trials=3, in_flight=1, workers=0,
    )  # fmt: skip
    plain = compact_record(json.loads(summary.records[0].read_text()))
    assert plain["tuned_params"] == res["tuned_params"]
    assert plain["score"] == pytest.approx(res["score"], rel=1e-12)
    assert plain["sampler_seed"] == res["sampler_seed"]

    # resumable: a second run skips the finished unit
    units = tuning_units("gp-small", work_dir=work, methods=["blr"], trials=3)
    assert run_campaign(units[:1], path.parents[1])["skipped"] == 1

    # status and summarise read the records
    capsys.readouterr()
    status = ["campaign", "status", "tuning", "--suite", "gp-small", "-m", "blr", "--trials", "3"]
    assert main(status) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "blr" in x)
    cells = [c.strip() for c in line.strip("│ ").split("│")]
    assert cells[:5] == ["blr", "1", "0", "0", "23"]
    summ = ["campaign", "summarise", "tuning", "--suite", "gp-small", "-m", "blr"]
    assert main([*summ, "--trials", "3", "--json"]) == 0

    def strict(token):
        raise AssertionError(f"not JSON: {token}")

    out = json.loads(capsys.readouterr().out, parse_constant=strict)  # no NaN tokens
    choices = {c["param"]: c for c in out["choices"]}
    assert set(choices) == set(res["tuned_params"]) and choices["alpha_1"]["share_mode"] is None
    assert out["methods"]["blr"] | {"cpu_hours": 0} == {
        "sweeps_done": 1, "sweeps": 24, "trials": 3, "complete": 3, "pruned": 0, "failed": 0,
        "cpu_hours": 0,
    }  # fmt: skip
    assert out["sweeps"][0]["score"] == res["score"]
    # tune-summary reads the shipped set by name; plan measures trial times from it
    assert main(["tune-summary", "gp-small", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["method"] == "blr" and row["condition"] == COND and row["score"] == res["score"]
    from udbench.tuning.plan import collect_measurements

    found = collect_measurements([path.parents[1]])
    # a campaign record measured CPU: the sweep's cpu_seconds over its 3 finished trials, one
    # value per sweep; no wall-clock trial times are taken from it
    per_trial = json.loads(path.read_text())["cpu_seconds"] / 3
    assert found.cpu_seconds[("tune", "blr")] == pytest.approx([per_trial], rel=1e-12)
    assert ("tune", "blr") not in found.seconds


def test_run_tuned_finds_the_shipped_record_on_a_fresh_task(shipped, tmp_path, capsys):
    path, _ = shipped
    res = json.loads(path.read_text())["result"]
    fresh = make_fake_task(3, n_train=40, dataset="concrete", noise="homoscedastic")
    save_fake_task(fresh, tmp_path / "fresh")
    run = ["run", "fresh", "-m", "blr", "--workers", "0", "--no-progress", "--out", "res"]
    assert main([*run, "--tuned", "gp-small"]) == 0
    df = read_results(tmp_path / "res")
    assert list(df["tuned_record"]) == [f"blr/{COND}"] and (df["status"] == "ok").all()
    assert json.loads(df["config"].iloc[0])["params"] == res["params"]
    assert df["tuned_score"].iloc[0] == res["score"]
    # the results folder carries the record used, as a plain tuned record
    (copied,) = load_records(tmp_path / "res" / "tuned")
    assert copied["format"] == "udbench-tuned-config" and copied["params"] == res["params"]
    assert "_campaign" not in json.loads(Path(copied["_path"]).read_text())

    # a condition without a shipped record: one line naming it and the campaign
    other = make_fake_task(0, n_train=40, dataset="concrete", noise="homoscedastic",
                           coverage="ood")  # fmt: skip
    save_fake_task(other, tmp_path / "other")
    capsys.readouterr()
    run = ["run", "other", "-m", "blr", "--workers", "0", "--no-progress", "--out", "res2"]
    assert main([*run, "--tuned", "gp-small"]) == 2
    err = _err(capsys)
    assert "shipped records of gp-small" in err and "blr/concrete__gp__homoscedastic__ood" in err
    assert "udbench campaign run tuning --suite gp-small" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "res2").exists()

    # a condition gp-small's campaign never tunes (another dataset): no campaign suggested
    outside = make_fake_task(0, n_train=40, dataset="diabetes", noise="homoscedastic")
    save_fake_task(outside, tmp_path / "outside")
    run = ["run", "outside", "-m", "blr", "--workers", "0", "--no-progress", "--out", "res3"]
    assert main([*run, "--tuned", "gp-small"]) == 2
    err = _err(capsys)
    assert "gp-small's tuning campaign tunes its own 24 conditions only, not diabetes__gp__" in err
    assert "udbench campaign run tuning" not in err and "tune those with udbench tune" in err
    # both kinds missing: both remedies, the campaign for the grid's condition
    run = ["run", "outside", "other", "-m", "blr", "--workers", "0", "--no-progress"]
    assert main([*run, "--out", "res4", "--tuned", "gp-small"]) == 2
    err = _err(capsys)
    assert "the tuning campaign makes those of gp-small's grid (udbench campaign run tuning" in err
    assert "not diabetes__gp__homoscedastic__balanced: tune those with udbench tune" in err


def test_a_stale_shipped_record_is_refused_in_one_line(shipped, tmp_path, monkeypatch, capsys):
    from udbench.methods import get_method_class

    path, work = shipped
    fresh = make_fake_task(3, n_train=40, dataset="concrete", noise="homoscedastic")
    save_fake_task(fresh, tmp_path / "fresh")
    cls = get_method_class("blr")
    space = {k: dict(v) for k, v in cls.search_space.items()}
    first = next(iter(space))
    space[first]["high"] = space[first]["high"] / 10  # the method's space changed
    monkeypatch.setattr(cls, "search_space", space)
    run = ["run", "fresh", "-m", "blr", "--workers", "0", "--no-progress", "--out", "res"]
    for extra in ([], ["--fallback", "default"]):  # never used silently
        capsys.readouterr()
        assert main([*run, "--tuned", "gp-small", *extra]) == 2
        err = _err(capsys)
        assert len(err.splitlines()) == 1
        assert f"record blr/{COND} is stale" in err and "search space changed" in err
        assert "--methods blr" in err
    assert not (tmp_path / "res").exists()
    # the campaign sees it stale too (and would redo it)
    units = tuning_units("gp-small", work_dir=work, methods=["blr"], trials=3)
    assert unit_status(units[0], path.parents[1])[0] == "stale"


def test_a_changed_base_configuration_is_stale(shipped, tmp_path, monkeypatch, capsys):
    path, _ = shipped
    rec = json.loads(path.read_text())
    rec["result"]["base_config"] = rec["result"]["base_config"].replace("300", "301")
    path.write_text(json.dumps(rec))
    save_fake_task(make_fake_task(3, n_train=40, dataset="concrete", noise="homoscedastic"),
                   tmp_path / "fresh")  # fmt: skip
    capsys.readouterr()
    run = ["run", "fresh", "-m", "blr", "--workers", "0", "--no-progress", "--out", "res"]
    assert main([*run, "--tuned", "gp-small"]) == 2
    err = _err(capsys)
    assert f"blr/{COND} is stale" in err and "default configuration changed" in err


def test_tuned_accepts_only_a_folder_or_a_suite(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    save_fake_task(make_fake_task(0, n_train=40), tmp_path / "t")
    capsys.readouterr()
    run = ["run", "t", "-m", "blr", "--workers", "0", "--no-progress", "--out", "res"]
    assert main([*run, "--tuned", "no-such-thing"]) == 2
    err = _err(capsys)
    assert "'no-such-thing'" in err and "gp-small" in err and len(err.splitlines()) == 1


def test_suite_passes_a_shipped_name_to_run(tmp_path):
    from udbench.commands.suite import stage_commands
    from udbench.recipes.suites import load_suite

    argv = stage_commands(load_suite("gp-small"), tmp_path, tuned=Path("gp-small"))
    run = argv["run"]
    assert run[run.index("--tuned") + 1] == "gp-small" and "--fallback" in run


def test_generated_pages_name_the_records_folder_relative_to_the_repository(
    tmp_path, monkeypatch
) -> None:
    from udbench.commands.campaign import _shown

    inside = tmp_path / "src" / "udbench" / "tuning" / "shipped" / "gp-small"
    inside.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert _shown(inside) == "src/udbench/tuning/shipped/gp-small"
    outside = tmp_path.parent / "elsewhere"
    assert _shown(outside) == str(outside)


def test_auto_pruner_keeps_the_pruner_of_a_methods_existing_records(tmp_path) -> None:
    from udbench.campaigns.tuning import pruner_of_records

    records = tmp_path / "records"
    assert pruner_of_records(records, "ngboost-nig") is None  # no folder: no records
    folder = records / "ngboost-nig"
    folder.mkdir(parents=True)
    rec = {"unit_id": f"ngboost-nig/{COND}", "status": "done", "settings": {"pruner": "none"}}
    (folder / f"{COND}.json").write_text(json.dumps(rec))
    (folder / "broken.json").write_text("{not json")  # unreadable: not counted
    assert pruner_of_records(records, "ngboost-nig") == "none"

    def pruners(**kw):
        units = tuning_units(
            "gp-small", work_dir=tmp_path, methods=["ngboost-nig", "catboost-ps"], **kw
        )
        return {u.settings["method"]: u.settings["pruner"] for u in units}

    # auto without records: udbench tune's per-method default (both pruned by sha)
    assert pruners(pruner="auto") == {"ngboost-nig": "sha", "catboost-ps": "sha"}
    # with them: ngboost-nig's unpruned records stay current; catboost-ps has none, so sha
    assert pruners(pruner="auto", records=records) == {"ngboost-nig": "none", "catboost-ps": "sha"}
    # an explicit pruner is what it says, records or not
    assert pruners(pruner="sha", records=records) == {"ngboost-nig": "sha", "catboost-ps": "sha"}
    assert pruners(pruner="none") == {"ngboost-nig": "none", "catboost-ps": "none"}


def test_condition_task_folder_carries_the_numerics_version(tmp_path, monkeypatch) -> None:
    from udbench.priors import family_numerics_version
    from udbench.priors.gp import GPPrior

    now = family_numerics_version("gp")
    assert condition_task_folder(tmp_path, "gp") == tmp_path / f"gp-v{now}" / "tasks"
    # a bump points at a new folder: a file made under the old draws is never reused
    monkeypatch.setattr(GPPrior, "numerics_version", now + 1)
    assert condition_task_folder(tmp_path, "gp") == tmp_path / f"gp-v{now + 1}" / "tasks"


def test_summary_names_sweeps_resumed_from_their_journal():
    """A record times its last process only: a sweep whose finished trials took more than
    1.5x its wall seconds was resumed, and the summary says its CPU-h undercounts."""
    from udbench.campaigns.tuning import _resumed_sweeps

    def rec(uid: str, wall: float, trials: list[float]) -> dict:
        hist = [{"state": "complete", "fit_time_s": t, "predict_time_s": 0.5} for t in trials]
        hist.append({"state": "interrupted", "fit_time_s": 99.0})  # not a finished trial
        return {
            "unit_id": uid,
            "wall_seconds": wall,
            "cpu_seconds": wall,
            "result": {"history": hist},
        }

    done = [rec("a/c", 20.0, [9.5, 9.5]), rec("b/c", 20.0, [29.5, 9.5])]  # 20 s; 40 s > 30 s
    assert _resumed_sweeps(done) == [("b/c", 40.0, 20.0)]
    # a record that kept its resumed trials' count is read by it, not by the 1.5x rule
    done[0]["result"]["resumed_trials"], done[1]["result"]["resumed_trials"] = 1, 0
    assert _resumed_sweeps(done) == [("a/c", 20.0, 20.0)]
    # one whose earlier trials kept their CPU clocks is counted in full, not named
    done[0]["result"]["resumed_trials_cpu_seconds"] = 9.0
    assert _resumed_sweeps(done) == []
