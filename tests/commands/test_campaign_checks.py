"""``udbench campaign``: the records and work folders are checked before any unit runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from udbench._validation import UdbenchError
from udbench.commands._campaign_checks import check_records, check_work, download_note


def _record(folder: Path, uid: str, kind: str) -> None:
    path = folder / f"{uid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"unit_id": uid, "kind": kind, "status": "done"}))


def test_another_campaigns_records_are_refused_for_run_and_noted_for_reading(tmp_path):
    _record(tmp_path, "blr/airfoil__gp__step__ood", "tuning-sweep")
    with pytest.raises(UdbenchError, match=r"'--records' must be this campaign's records folder"):
        check_records("runs", tmp_path, writing=True)
    (note,) = check_records("runs", tmp_path, writing=False)
    assert "1 of kind 'tuning-sweep'" in note and "left out of every count" in note
    assert check_records("tuning", tmp_path, writing=True) == []  # its own
    _record(tmp_path, "untuned/x__gp/blr", "untuned")
    assert "1 of kind 'untuned'" in check_records("tuning", tmp_path, writing=False)[0]
    (tmp_path / "broken.json").write_text("{not json")  # unreadable: the summaries report it
    (tmp_path / "index.json").write_text("[]")  # not a record
    assert check_records("tuning", tmp_path, writing=False) == [
        f"{tmp_path} holds records of other campaigns (1 of kind 'untuned'); left out of "
        "every count"
    ]


def test_every_kind_of_a_campaigns_units_is_its_own(tmp_path):
    """The runs campaign's transfer part also makes ``oracle-fit`` units: their records are
    the campaign's own, so a run goes on and reading notes nothing."""
    _record(tmp_path, "untuned/x__gp/blr", "untuned")
    _record(tmp_path, "oracle-fit/x__gp/gp-rbf", "oracle-fit")
    assert check_records("runs", tmp_path, writing=True) == []
    assert check_records("runs", tmp_path, writing=False) == []
    assert "1 of kind 'oracle-fit'" in check_records("tuning", tmp_path, writing=False)[0]


def test_a_missing_folder_is_noted_and_a_file_is_an_error(tmp_path):
    assert check_records("runs", tmp_path / "new", writing=True) == []
    assert check_records("runs", tmp_path / "new", writing=False) == [
        f"no records folder at {tmp_path / 'new'} yet (`run` makes it)"
    ]
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(UdbenchError, match=r"'--records' must be a folder"):
        check_records("runs", afile, writing=False)
    with pytest.raises(UdbenchError, match=r"'--work' must be a folder"):
        check_work("runs", afile)
    check_work("runs", tmp_path / "not-yet")  # made by the first unit


def test_run_stops_before_any_unit_on_a_bad_records_or_work_folder(tmp_path, capsys):
    from udbench.cli import main

    afile = tmp_path / "afile"
    afile.write_text("x")
    base = ["campaign", "run", "runs", "--nice", "0", "--methods", "blr", "--max-units", "1"]
    assert main([*base, "--records", str(afile), "--work", str(tmp_path / "w")]) == 2
    assert "'--records' must be a folder" in capsys.readouterr().err
    records = tmp_path / "records"
    assert main([*base, "--records", str(records), "--work", str(afile)]) == 2
    assert "'--work' must be a folder" in capsys.readouterr().err
    assert not records.exists()  # nothing was recorded


def test_the_datasets_to_download_are_named(tmp_path, monkeypatch):
    from udbench.campaigns import Unit

    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache"))
    units = [
        Unit(f"untuned/{d}__gp__step__ood__s0/blr", "untuned", {}, {}, dict)
        for d in ("concrete", "diabetes", "concrete")
    ]
    note = download_note(units, tmp_path / "empty")
    assert note is not None and note.startswith("the raw tables of concrete are neither")
    assert "are not run, and write no record" in note  # units do not download
    assert download_note(units[1:2], tmp_path / "empty") is None  # diabetes is embedded


def test_a_run_without_the_raw_tables_writes_no_record_and_exits_1(tmp_path, monkeypatch, capsys):
    """gp-small's tables neither in --data-dir nor in the cache: the units are not run (a
    failure record each would be committed with the campaign's records), the table is named
    once in full, and the exit status asks the user to act."""
    from udbench.cli import main

    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "empty").mkdir()
    records = tmp_path / "records"
    args = ["campaign", "run", "runs", "--suite", "gp-small", "--methods", "blr", "--nice", "0"]
    args += ["--records", str(records), "--work", str(tmp_path / "w")]
    args += ["--data-dir", str(tmp_path / "empty"), "--max-units", "3"]
    assert main(args) == 1
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert "not run, no record written: load_covariates: parameter 'key' must name a" in out
    assert re.search(r"Run `udbench datasets download (airfoil|concrete|qsar_fish)`", out)
    assert "not run (an input is missing on this machine, see above)" in out
    assert not list(records.rglob("*.json"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--methods", "foo"], "'--methods' must name registered methods"),
        (["--methods", " , "], "'--methods' must name at least one method spec"),
        (["--suite", "clf-small"], "must be a regression suite (quickstart, "),
        (["--trials", "0"], "'--trials' must be left out (a tuning option); got 0"),
        (["--trials", "30"], "'--trials' must be left out (a tuning option); got 30"),
        (["--pruner", "bogus"], "'--pruner' must be left out (a tuning option); got 'bogus'"),
    ],
)
def test_options_of_the_runs_campaign_are_named_in_its_errors(tmp_path, capsys, args, message):
    from udbench.cli import main

    base = ["campaign", "status", "runs", "--records", str(tmp_path / "r")]
    assert main([*base, "--work", str(tmp_path / "w"), *args]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-1"])
def test_finish_within_must_be_positive(tmp_path, capsys, value):
    from udbench.cli import main

    args = ["campaign", "run", "mcmc", "--nice", "0", "--records", str(tmp_path / "r")]
    assert main([*args, "--work", str(tmp_path / "w"), "--finish-within", value]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"parameter 'finish-within' must be > 0; got {float(value)}" in err
    assert not (tmp_path / "r").exists()


def test_summarise_runs_refuses_a_results_folder_with_results_before_printing(tmp_path, capsys):
    from udbench.cli import main

    out = tmp_path / "out"
    (out / "tuned").mkdir(parents=True)
    (out / "tuned" / "results.parquet").write_bytes(b"")
    base = ["campaign", "summarise", "runs", "--methods", "blr", "--records", str(tmp_path / "r")]
    assert main([*base, "--work", str(tmp_path / "w"), "--results", str(out)]) == 2
    captured = capsys.readouterr()
    assert "summarise: parameter '--results' must be a new folder" in captured.err
    assert "Progress" not in captured.out  # nothing printed before the error


def test_hours_left_use_the_mean_cpu_of_finished_units_of_the_same_shape():
    """One mean of CPU seconds per shape (kind, layout, run, dataset, family, method), made
    once per status call; a unit without finished units of its shape keeps its own estimate
    and note."""
    from udbench.campaigns import Unit
    from udbench.commands._campaign_estimates import (
        _estimate,
        _shape_means,
        wall_projection,
    )
    from udbench.tuning._measured import record_cpu_seconds

    def rec(task: str, method: str, cpu: float | None) -> dict:
        return {
            "kind": "untuned",
            "settings": {"task_id": task, "method": method},
            "wall_seconds": 3.0 * (cpu or 10.0),  # a loaded machine: wall is not the cost
            "cpu_seconds": cpu,
        }

    done = [
        rec("concrete__gp__step__ood__s0", "blr", 10.0),
        rec("concrete__gp__u-shaped__balanced__s1", "blr", 30.0),  # same dataset and family
        rec("airfoil__gp__step__ood__s0", "blr", 100.0),
        rec("concrete__gp__step__ood__s0", "gp", 7.0),
        rec("concrete__gp__step__ood__s0", "nn-lap", None),  # no CPU clock: its wall seconds
    ]
    means = _shape_means(done)
    assert means[("untuned", None, None, "concrete", "gp", "nn-lap", None)] == 30.0
    unit = Unit(
        "untuned/concrete__gp__step__ood__s5/blr",
        "untuned",
        {"task_id": "concrete__gp__step__ood__s5", "method": "blr"},
        {},
        dict,
        99.0,
        "guessed",
    )
    assert _estimate(unit, means) == (20.0, None)
    # run --finish-within projects wall time (the deadline is wall-clock): 3x the CPU here
    assert wall_projection(done)(unit) == 60.0
    # a tuning sweep resumed from its journal counts its earlier trials' CPU too
    sweep = {"kind": "tuning-sweep", "cpu_seconds": 30.0, "wall_seconds": 40.0}
    sweep["result"] = {"resumed_trials": 2, "resumed_trials_cpu_seconds": 14.0}
    assert record_cpu_seconds(sweep) == 44.0
    sweep["result"]["resumed_trials_cpu_seconds"] = None  # unknown: the last process's only
    assert record_cpu_seconds(sweep) == 30.0
    sweep["settings"] = {"method": "nn-lap"}  # ... and not averaged into a projection
    assert _shape_means([sweep]) == {}
    # nor into --finish-within's wall means (its wall seconds time the last process too): a
    # unit of its shape is projected from its estimate, not from 40 s
    same = Unit("tuning/x", "tuning-sweep", {"method": "nn-lap"}, {}, dict, 500.0)
    assert wall_projection([sweep])(same) == 500.0 * 40.0 / 30.0
    assert record_cpu_seconds({"kind": "untuned", "cpu_seconds": None}) is None
    other = Unit(
        "untuned/qsar_fish__gp__step__ood__s5/blr",
        "untuned",
        {"task_id": "qsar_fish__gp__step__ood__s5", "method": "blr"},
        {},
        dict,
        99.0,
        "guessed",
    )
    assert _estimate(other, means) == (99.0, "guessed")
    # --finish-within: a unit without records of its shape has its CPU estimate scaled by
    # the records' median wall / CPU ratio (3 here), the load they ran under
    assert wall_projection(done)(other) == 99.0 * 3.0


def test_a_runs_cell_without_measured_cells_of_its_part_takes_the_other_parts_mean():
    """A tuned cell costs about what the same method's untuned cells do (0.9-1.4x on gp-small),
    the calibration table was up to 2.9x off: the other part's measured mean comes first, then
    the unit's own estimate; the same order for --finish-within's wall projection."""
    from udbench.campaigns import Unit
    from udbench.commands._campaign_estimates import (
        SIBLING_NOTE,
        _estimate,
        _shape_means,
        estimate_ratios,
        wall_projection,
    )

    task = "concrete__gp__step__ood__s0"
    done = [
        {
            "kind": "untuned",
            "settings": {"task_id": task, "method": "dkl"},
            "cpu_seconds": cpu,
            "wall_seconds": 2 * cpu,
        }
        for cpu in (10.0, 20.0)
    ]
    means = _shape_means(done)

    def unit(kind: str, method: str = "dkl") -> Unit:
        settings = {"task_id": "concrete__gp__u-shaped__ood__s1", "method": method}
        return Unit(f"{kind}/x/{method}", kind, settings, {}, dict, 4.0, None)

    assert _estimate(unit("tuned"), means) == (15.0, SIBLING_NOTE)
    assert _estimate(unit("untuned"), means) == (15.0, None)  # its own shape's mean
    assert _estimate(unit("tuned", "vlgp"), means) == (4.0, None)  # nothing measured: estimate
    # other campaigns' kinds have no sibling
    mf = Unit("multi-family/x", "multi-family", {"task_id": task, "method": "dkl"}, {}, dict, 4.0)
    assert _estimate(mf, means) == (4.0, None)
    project = wall_projection(done)
    assert project(unit("tuned")) == 30.0  # the untuned cells' mean wall seconds
    assert project(unit("tuned", "vlgp")) == 4.0 * 2.0  # estimate x the records' wall / CPU
    # measured / estimated per part: sum over sum, units without an estimate left out
    pairs = [("untuned", 30.0, 10.0), ("untuned", 10.0, 10.0), ("tuned", 5.0, 0.0)]
    assert estimate_ratios(pairs) == {"untuned": (2.0, 2)}


def test_default_records_folders_are_the_checkouts_from_any_current_folder(tmp_path, monkeypatch):
    """From another folder, `campaign status runs` showed 0 done: its default was relative."""
    from udbench.commands.campaign import _records

    monkeypatch.chdir(tmp_path)
    repo = Path(__file__).resolve().parents[2]
    assert _records("runs", None) == repo / "docs" / "validation" / "runs" / "gp-small"
    assert _records("mcmc", None) == repo / "docs" / "validation" / "mcmc"
    assert _records("mcmc", None).is_dir()  # committed records are there
    assert _records("runs", tmp_path / "r") == tmp_path / "r"  # --records wins


def test_work_left_that_rounds_to_zero_is_not_shown_as_none():
    from udbench.commands._campaign_estimates import _hours_left

    assert _hours_left({"?": 0, "left": 0.04, "notes": {}}) == "< 0.1"  # 96 blr sweeps
    assert _hours_left({"?": 0, "left": 0.0, "notes": {}}) == "0.0"  # nothing left
    assert _hours_left({"?": 2, "left": 0.0, "notes": {}}) == "? + 2 unmeasured"
    assert _hours_left({"?": 0, "left": 1.26, "notes": {"guessed": 3}}) == "1.3 (3 guessed)"


def test_only_selects_units_by_glob_in_campaign_order_and_refuses_a_pattern_matching_none():
    from types import SimpleNamespace

    from udbench.commands._campaign_checks import select_units

    ids = ["bnn-sweep/d9", "bnn-sweep/d10", "multi-family/concrete__gp__step__ood__s0"]
    ids += ["multi-family/concrete__bnn__step__ood__s0"]
    units = [SimpleNamespace(unit_id=i) for i in ids]
    assert select_units("c", units, None) is units
    got = select_units("c", units, "multi-family/*__gp__*, bnn-sweep/d10")
    assert [u.unit_id for u in got] == [ids[1], ids[2]]  # campaign order, not pattern order
    with pytest.raises(UdbenchError, match=r"'--only' must hold patterns that match unit ids"):
        select_units("c", units, "bnn-sweep/d1")  # a typo would otherwise run nothing
    with pytest.raises(UdbenchError, match="at least one glob pattern"):
        select_units("c", units, " , ")


def test_status_with_only_counts_the_selected_units(tmp_path, capsys):
    from udbench.cli import main

    args = ["campaign", "status", "mcmc", "--records", str(tmp_path / "r")]
    assert main([*args, "--work", str(tmp_path / "w"), "--only", "multi-family/*__gp__*"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "multi-family" in line)
    assert row.split("│")[5].strip() == "32"  # missing: 2 datasets x 4 modes x 2 x 2 seeds
    assert "bnn-sweep" not in out and "hbart" not in out


def test_run_with_an_only_pattern_matching_nothing_stops_before_any_unit(tmp_path, capsys):
    from udbench.cli import main

    args = ["campaign", "run", "mcmc", "--nice", "0", "--records", str(tmp_path / "r")]
    assert main([*args, "--work", str(tmp_path / "w"), "--only", "multifamily/*"]) == 2
    assert "'--only' must hold patterns that match unit ids" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
