"""The suite-run campaign (issue 36, items 3–4) on a tiny regression suite of fake tasks:
units are method-major, tuned cells exist only where a tuning record does, records hold the
``udbench run`` rows, predictions go to the work folder, a re-tuned record stales its cells,
and the exported results folders give the summary's figures."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from _fakes import fake_concrete_generate, tiny_runs_suite
from udbench.campaigns import run_campaign, runs, unit_status
from udbench.campaigns.engine import record_file
from udbench.campaigns.tuning import condition_task_folder
from udbench.priors import family_numerics_version

SUITE = tiny_runs_suite("tiny-runs", seeds="0-2", methods="blr,ngboost-nig")
COND = "concrete__gp__homoscedastic__balanced"
LABEL = "blr:max_iter=100"  # the suite's smoke spec of blr


_generate = fake_concrete_generate


pytestmark = pytest.mark.usefixtures("runs_env")


def _units(work: Path, tuning: Path, **kw):
    kw.setdefault("parts", runs.ROW_PARTS)  # the transfer part: test_runs_transfer.py
    return runs.campaign_units(work_dir=work, suite=SUITE, records=tuning, generate=_generate, **kw)


def test_units_are_method_major_and_tuned_cells_wait_for_records(tmp_path, tuning) -> None:
    units = _units(tmp_path / "work", tuning, parts=runs.PARTS)
    ids = [u.unit_id for u in units]
    blr = [f"{p}/{COND}__s{s}/blr" for p in ("untuned", "tuned", "transfer") for s in range(3)]
    # blr (cheaper by the calibration table) first, its untuned, tuned, then transfer units;
    # no tuned nor transfer ngboost-nig unit (no record)
    assert ids == blr + [f"untuned/{COND}__s{s}/ngboost-nig" for s in range(3)]
    tuned = units[3]
    assert tuned.kind == "tuned" and tuned.settings["tuned_record"] == f"blr/{COND}"
    # the suite's smoke spec of blr, labelled as udbench run --tuned labels it
    assert units[0].settings["method_label"] == LABEL
    assert tuned.settings["method_label"] == f"{LABEL}[tuned]"
    assert tuned.numerics == {"gp": family_numerics_version("gp")}
    rec = json.loads((tuning / "blr" / f"{COND}.json").read_text())
    for k, v in rec["tuned_params"].items():
        assert tuned.settings["config"][k] == v
    assert units[0].settings["config_hash"] != tuned.settings["config_hash"]
    from udbench.methods.configs import resolve_methods

    _, waiting = runs.tuned_configurations(
        "tiny-runs", resolve_methods(["blr", "ngboost-nig"]), runs.instance_specs(SUITE), tuning
    )
    assert waiting == ["ngboost-nig: 1 of 1 conditions wait for a tuning record"]


def test_cells_record_rows_keep_predictions_and_resume(tmp_path, tuning) -> None:
    from udbench.evaluation.cell import evaluate_cell
    from udbench.evaluation.runner import plan_cells
    from udbench.methods.configs import resolve_methods

    work = tmp_path / "work"
    units = _units(work, tuning, methods=["blr"])
    records = tmp_path / "records"
    assert run_campaign(units, records) == {
        "skipped": 0,
        "done": 6,
        "failed": 0,
        "left": 0,
        "unavailable": 0,
        "busy": 0,
    }
    rec = json.loads(record_file(records, units[0].unit_id).read_text())
    row = rec["result"]["row"]
    assert row["status"] == "ok" and row["method"] == "blr" and row["method_label"] == "blr"
    trow = json.loads(record_file(records, units[3].unit_id).read_text())["result"]["row"]
    assert trow["method_label"] == "blr[tuned]" and trow["tuned_record"] == f"blr/{COND}"
    # the row is udbench run's: the same cell evaluated directly gives the same figures
    task = condition_task_folder(work, "gp") / f"{COND}__s0.npz"
    (cell,), _ = plan_cells([task], resolve_methods(["blr"]))
    direct = evaluate_cell(cell).row
    assert row["cell_key"] == direct["cell_key"] and row["method_seed"] == direct["method_seed"]
    for k in ("rho_eu_risk", "rho_au", "rmse"):
        assert row[k] == pytest.approx(direct[k], rel=1e-12, nan_ok=True)
    preds = runs.predictions_path(work, "untuned", f"{COND}__s0", "blr", row["config_hash"])
    import hashlib

    import pandas as pd

    assert len(pd.read_parquet(preds)) == 60  # the fake's 60 evaluation points
    assert rec["result"]["predictions_sha256"] == hashlib.sha256(preds.read_bytes()).hexdigest()
    assert run_campaign(units, records) == {
        "skipped": 6,
        "done": 0,
        "failed": 0,
        "left": 0,
        "unavailable": 0,
        "busy": 0,
    }
    record_file(records, units[4].unit_id).unlink()
    said: list[str] = []
    assert run_campaign(units, records, progress=said.append)["done"] == 1
    assert said[0] == f"{units[4].unit_id}: started"


def test_a_retuned_record_stales_its_tuned_cells(tmp_path, tuning) -> None:
    import shutil

    folder = tmp_path / "tuning"
    shutil.copytree(tuning, folder)
    units = _units(tmp_path / "work", folder, methods=["blr"])
    records = tmp_path / "records"
    run_campaign(units, records, max_units=4)
    path = folder / "blr" / f"{COND}.json"
    rec = json.loads(path.read_text())
    key = next(iter(rec["tuned_params"]))
    rec["tuned_params"][key] = rec["tuned_params"][key] * 1.5
    path.write_text(json.dumps(rec))
    again = _units(tmp_path / "work", folder, methods=["blr"])
    assert [unit_status(u, records)[0] for u in again] == ["done"] * 3 + [
        "stale",
        "missing",
        "missing",
    ]


def test_summary_compares_complete_methods_and_export_gives_the_same_board(
    tmp_path, tuning
) -> None:
    import pandas as pd

    from udbench._validation import UdbenchError
    from udbench.analyses.tuned_compare import tuned_vs_untuned
    from udbench.evaluation.store import read_results

    work = tmp_path / "work"
    units = _units(work, tuning)
    records = tmp_path / "records"
    run_campaign(units, records)
    summary = runs.runs_summary(records, units, n_resamples=200)
    assert summary["complete"] == ["blr"]  # ngboost-nig has no tuned cells
    prog = summary["progress"]
    assert prog["blr"]["untuned"]["done"] == prog["blr"]["untuned"]["units"] == 3
    assert prog["ngboost-nig"]["untuned"]["done"] == 3 and "tuned" not in prog["ngboost-nig"]
    table = summary["comparison"].table.set_index("method")
    rows = [
        json.loads(record_file(records, u.unit_id).read_text())["result"]["row"]
        for u in units
        if u.settings["method"] == "blr"
    ]
    for part, col in (("untuned", "mean_untuned"), ("tuned", "mean_tuned")):
        label = LABEL + ("[tuned]" if part == "tuned" else "")
        want = np.mean([r["rho_eu_risk"] for r in rows if r["method_label"] == label])
        assert table.loc[LABEL, col] == pytest.approx(want, rel=1e-12)
    assert "| `blr` | 3 / 3 | 3 / 3 |" in summary["markdown"]
    assert "What the tuner changed" not in summary["markdown"]  # no tuning folder given
    # with the tuning folder: what the tuner changed, from the records the tuned cells name
    from udbench.tuning.choices import largest_changes, tuned_choices
    from udbench.tuning.records import read_tuned_record

    why = runs.runs_summary(records, units, n_resamples=200, tuning=tuning)["markdown"]
    changes = largest_changes(
        tuned_choices([read_tuned_record(tuning / "blr" / f"{COND}.json")]), "blr"
    )
    assert changes and "## What the tuner changed" in why  # the fixture's blr moved
    row = f"| {LABEL} | 1 → 1 | {table.loc[LABEL, 'mean_untuned']:.3f} → "
    row += f"{table.loc[LABEL, 'mean_tuned']:.3f} | {', '.join(changes)} |"
    assert row in why.splitlines()

    out = tmp_path / "res"
    done = runs.export_results(records, out, work, units)
    assert done["untuned"] == {"rows": 6, "without_predictions": 0}
    assert done["tuned"] == {"rows": 3, "without_predictions": 0}
    untuned, tuned = read_results(out / "untuned"), read_results(out / "tuned")
    again = tuned_vs_untuned(
        untuned[untuned["method"] == "blr"], tuned, n_resamples=200
    ).table.set_index("method")
    for col in ("mean_untuned", "mean_tuned", "low_tuned", "high_tuned"):
        assert again.loc[LABEL, col] == pytest.approx(table.loc[LABEL, col], rel=1e-12)
    with pytest.raises(UdbenchError, match=r"out.*without results"):
        runs.export_results(records, out, work, units)
    # predictions made elsewhere: rows still exported, the missing predictions counted
    other = runs.export_results(records, tmp_path / "res2", tmp_path / "elsewhere", units)
    assert other["tuned"] == {"rows": 3, "without_predictions": 3}
    # a predictions file that is not the one its record names is not attached
    row = json.loads(record_file(records, units[3].unit_id).read_text())["result"]["row"]
    path = runs.predictions_path(work, "tuned", row["task_id"], "blr", row["config_hash"])
    pd.read_parquet(path).assign(mean=0.0).to_parquet(path, index=False)
    third = runs.export_results(records, tmp_path / "res3", work, units, tuning=tuning)
    assert third["tuned"] == {"rows": 3, "without_predictions": 1}
    # the tuning records the tuned cells used, as run --tuned keeps them
    assert (tmp_path / "res3" / "tuned" / "tuned" / "blr" / f"{COND}.json").is_file()


def test_a_method_with_waiting_conditions_is_not_compared(tmp_path, tuning) -> None:
    # blr tuned on one of two conditions: its tuned cells cover half the instances, so it is
    # not complete (a comparison would pair different instance sets)
    suite = {**SUITE, "coverage": "all"}
    units = runs.campaign_units(
        work_dir=tmp_path / "work", suite=suite, records=tuning, generate=_generate,
        methods=[LABEL],
    )  # fmt: skip
    kinds = [u.kind for u in units]
    assert kinds.count("untuned") == 6 and kinds.count("tuned") == 3
    records = tmp_path / "records"
    run_campaign(units, records)
    summary = runs.runs_summary(records, units, n_resamples=100)
    assert summary["complete"] == [] and summary["comparison"] is None
    tuned = summary["progress"]["blr"]["tuned"]
    assert (tuned["done"], tuned["units"], summary["progress"]["blr"]["untuned"]["done"]) == (
        3,
        3,
        6,
    )


def test_a_task_file_of_another_fidelity_is_refused(tmp_path, tuning) -> None:
    from udbench._validation import UdbenchError

    work = tmp_path / "work"
    units = _units(work, tuning, methods=["blr"])
    run_campaign(units[:1], tmp_path / "records")
    other = runs.campaign_units(
        work_dir=work, suite={**SUITE, "draws": 80}, records=tuning, generate=_generate,
        methods=["blr"],
    )  # fmt: skip
    with pytest.raises(UdbenchError, match=r"40 draws, not .* with 80.*another --work"):
        other[0].work()


def test_cli_status_and_summarise_on_gp_small_without_records(tmp_path, monkeypatch, capsys):
    from udbench.cli import main

    monkeypatch.setattr("udbench.tuning.shipped.SHIPPED_ROOT", tmp_path / "shipped")
    monkeypatch.setenv("COLUMNS", "200")
    args = ["--suite", "gp-small", "-m", "blr", "--records", str(tmp_path / "rec")]
    assert main(["campaign", "status", "runs", *args]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "│ untuned │ 0 │ 0 │ 0 │ 240 │" in out and "│ tuned" not in out
    assert "tuned: blr: 24 of 24 conditions wait for a tuning record" in out
    # per method: one row per (part, method), the total the same
    two = ["--suite", "gp-small", "-m", "blr,gp", "--records", str(tmp_path / "rec")]
    assert main(["campaign", "status", "runs", *two, "--per-method"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "│ untuned/blr │ 0 │ 0 │ 0 │ 240 │" in out and "│ untuned/gp │ 0 │ 0 │ 0 │ 240 │" in out
    assert "│ total │ 0 │ 0 │ 0 │ 480 │" in out
    assert main(["campaign", "status", "mcmc", "--per-method"]) == 2  # mcmc has no methods
    assert "'--per-method' must be left out (mcmc units have no method)" in capsys.readouterr().err
    assert main(["campaign", "summarise", "runs", *args, "--work", str(tmp_path / "w")]) == 0
    assert "No method is complete in both parts yet" in capsys.readouterr().out
    assert main(["campaign", "summarise", "runs", *args, "--json", "--work", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["complete"] == [] and "comparison" not in out
    assert out["progress"]["blr"]["untuned"] == {
        "done": 0,
        "failed": 0,
        "units": 240,
        "cpu_hours": 0.0,
    }


def test_a_stale_record_holds_back_its_own_condition_only(tmp_path, tuning) -> None:
    import shutil

    from udbench.methods.configs import resolve_methods

    folder = tmp_path / "tuning"
    shutil.copytree(tuning, folder)
    other = "concrete__gp__u-shaped__balanced"
    rec = json.loads((folder / "blr" / f"{COND}.json").read_text())
    (folder / "blr" / f"{other}.json").write_text(
        json.dumps(rec).replace(COND, other).replace('"homoscedastic"', '"u-shaped"')
    )
    rec["search_space_hash"] = "0" * 16  # tuned over another search space: stale
    (folder / "blr" / f"{COND}.json").write_text(json.dumps(rec))
    suite = {**SUITE, "noise": "homoscedastic,u-shaped", "seeds": "0"}
    specs = runs.instance_specs(suite)
    chosen, waiting = runs.tuned_configurations(
        "tiny-runs", resolve_methods(["blr"]), specs, folder
    )
    assert [cond for _, cond in chosen] == [other]
    assert len(waiting) == 1 and waiting[0].startswith(
        "blr: 1 of 2 conditions wait for a stale record to be re-tuned (record "
        f"blr/{COND} is stale (tuned over another search space (hash 0000000000000000"
    )
    assert "without --tuned" not in waiting[0]


def test_a_spec_other_than_the_suites_gets_units_of_its_own(tmp_path, tuning) -> None:
    units = _units(tmp_path / "work", tuning, methods=[LABEL, "blr:max_iter=50"], parts=["untuned"])
    names = sorted({u.unit_id.rsplit("/", 1)[1] for u in units})
    assert len(names) == 2 and names[0] == "blr"  # the suite's (smoke) blr keeps its ids
    assert names[1].startswith("blr+") and len(names[1]) == len("blr+") + 10
    records = tmp_path / "records"
    assert run_campaign(units, records)["done"] == 6
    progress = runs.runs_summary(records, units, n_resamples=50)["progress"]
    assert sorted(progress) == names  # two configurations of blr, never pooled
    assert [progress[n]["untuned"]["done"] for n in names] == [3, 3]


def test_an_unreadable_record_is_noted_once(tmp_path, tuning) -> None:
    records = tmp_path / "records"
    (records / "untuned").mkdir(parents=True)
    (records / "untuned" / "broken.json").write_text("{not json")
    summary = runs.runs_summary(records, _units(tmp_path / "work", tuning), n_resamples=50)
    assert [n for n in summary["notes"] if "unreadable" in n] == [
        "untuned/broken: unreadable record (JSONDecodeError: Expecting property name enclosed "
        "in double quotes: line 1 column 2 (char 1))"
    ]


def test_cli_status_counts_the_oracle_fit_units_of_the_transfer_part(tmp_path, monkeypatch, capsys):
    """With gp-small's shipped tuning records, blr has 240 cells per part, 240 transfer units
    and one ``oracle-fit`` unit per (instance, gp:KERNEL oracle): 3 × 240."""
    from udbench.cli import main

    monkeypatch.setenv("COLUMNS", "200")

    args = ["--suite", "gp-small", "-m", "blr", "--records", str(tmp_path / "rec")]
    assert main(["campaign", "status", "runs", *args]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for part, n in (("untuned", 240), ("tuned", 240), ("oracle-fit", 720), ("transfer", 240)):
        assert f"│ {part} │ 0 │ 0 │ 0 │ {n} │" in out, part
    assert "│ total │ 0 │ 0 │ 0 │ 1440 │" in out
    # per method: the fits stay one row of their kind; a tuning sweep's row is its method's
    assert main(["campaign", "status", "runs", *args, "--per-method"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "│ oracle-fit │ 0 │ 0 │ 0 │ 720 │" in out and "│ transfer/blr │ 0 │ 0 │ 0 │ 240 │" in out
    assert main(["campaign", "status", "tuning", "-m", "blr", "--per-method"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "│ blr │ 24 │ 0 │ 0 │ 0 │" in out and "__gp__" not in out
