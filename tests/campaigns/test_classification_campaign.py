"""The classification campaign (issues 37, 38) on tiny toy ``gpc`` tasks: both parts write
records, a rerun does nothing, a deleted record is redone alone, a failing cell is recorded
and the run goes on, and the summaries equal hand-computed values on hand-made records."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from _fakes import toy_gpc_task
from udbench.campaigns import classification as clf
from udbench.campaigns import run_campaign
from udbench.campaigns.classification_report import (
    classification_summary,
    export_cell_results,
    write_classification_summary,
)
from udbench.campaigns.engine import record_file
from udbench.priors import family_numerics_version

SUITE = {
    "name": "tiny-clf",
    "datasets": "diabetes",
    "families": "gpc",
    "classes": "3",
    "difficulty": "medium",
    "noise": "u-shaped",
    "coverage": "balanced",
    "seeds": "0-1",
    "fidelity": "smoke",
    "draws": 40,
    "methods": "logreg-lap,catboost-ve",
    "method_params": "smoke",
    "keep_predictions": False,
}


class _Generate:
    """A toy task under the asked spec (20 evaluation, 30 training inputs), counted."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, spec, data_dir):
        self.calls.append(spec.task_id)
        return toy_gpc_task(3, 20, 30, spec)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """The work folder with the two toy task files, made once for the module's tests."""
    root = tmp_path_factory.mktemp("clf-work")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("UDBENCH_CACHE_DIR", str(root / "cache"))
        units = clf.campaign_units(
            ["gpc-check"], work_dir=root, suite=SUITE, generate=_Generate(), min_instances=2
        )
        run_campaign(units, root / "warm-records")
    return root


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("UDBENCH_DATA_DIR", raising=False)


def _units(work, gen):
    return clf.campaign_units(work_dir=work, suite=SUITE, generate=gen, min_instances=2)


def test_both_parts_write_records_rerun_skips_and_a_deleted_record_is_redone(
    tmp_path: Path, work: Path
) -> None:
    gen = _Generate()
    units = _units(work, gen)
    assert [u.kind for u in units] == ["gpc-check"] * 2 + ["clf-small"] * 4
    assert units[2].unit_id.startswith("clf-small/diabetes__gpc-k3-medium__u-shaped")
    assert units[2].numerics == {"gpc": family_numerics_version("gpc")}
    records = tmp_path / "records"
    assert run_campaign(units, records) == {
        "skipped": 0,
        "done": 6,
        "failed": 0,
        "left": 0,
        "unavailable": 0,
        "busy": 0,
    }
    assert gen.calls == []  # the cells reused the gpc-check task files
    check = json.loads(record_file(records, units[0].unit_id).read_text())
    res = check["result"]
    assert res["checks"]["n_points"] == 20 * 3 and sum(res["checks"]["sbc_hist"]) == 60
    assert len(res["checks"]["covered_90_null"]) == 40 and res["task_file"].endswith(".npz")
    cell = json.loads(record_file(records, units[2].unit_id).read_text())
    row = cell["result"]["row"]
    assert row["status"] == "ok" and row["task_type"] == "classification"
    assert np.isfinite(row["rho_eu_risk"]) and "rho_eu_risk_brier" in row
    assert row["fit_time_s"] == cell["result"]["fit_time_s"]

    assert run_campaign(units, records) == {
        "skipped": 6,
        "done": 0,
        "failed": 0,
        "left": 0,
        "unavailable": 0,
        "busy": 0,
    }
    record_file(records, units[3].unit_id).unlink()
    said: list[str] = []
    counts = run_campaign(units, records, progress=said.append)
    assert counts == {"skipped": 5, "done": 1, "failed": 0, "left": 0, "unavailable": 0, "busy": 0}
    assert said[0] == f"{units[3].unit_id}: started"

    summary = classification_summary(records, units)
    board = {r["method"]: r for r in summary["leaderboard"]}
    assert set(board) == {u.settings["method_label"] for u in units[2:]}
    for label, r in board.items():
        rows = [
            json.loads(record_file(records, u.unit_id).read_text())["result"]["row"]
            for u in units[2:]
            if u.settings["method_label"] == label
        ]
        assert r["n_valid"] == 2 and r["n_failed"] == 0
        assert r["rho_eu_risk"] == pytest.approx(np.mean([x["rho_eu_risk"] for x in rows]))
    assert summary["gpc_check"]["pooled"]["n_instances"] == 2
    page = write_classification_summary(summary, records)
    assert page == tmp_path / "records.md" and "clf-small" in page.read_text()


def test_exported_results_folder_gives_the_summary_leaderboard(tmp_path: Path, work: Path) -> None:
    from udbench._validation import UdbenchError
    from udbench.evaluation.leaderboard import leaderboard
    from udbench.evaluation.store import read_results

    units = _units(work, _Generate())
    records = tmp_path / "records"
    run_campaign(units, records)
    n_rows, notes = export_cell_results(records, tmp_path / "res", units)
    assert (n_rows, notes) == (4, [])
    df = read_results(tmp_path / "res")
    cells = {
        json.loads(record_file(records, u.unit_id).read_text())["result"]["row"]["cell_key"]
        for u in units[2:]
    }
    assert set(df["cell_key"]) == cells and set(df["task_type"]) == {"classification"}
    board, _ = clf.clf_small_summary(records, units)
    again = leaderboard(df)
    for col in ("rho_eu_risk", "rho_au", "nll", "n_valid"):
        np.testing.assert_allclose(
            again.set_index("method")[col].sort_index().to_numpy(dtype=float),
            board.set_index("method")[col].sort_index().to_numpy(dtype=float),
            rtol=1e-12,
        )
    with pytest.raises(UdbenchError, match=r"out.*without results"):
        export_cell_results(records, tmp_path / "res", units)
    with pytest.raises(UdbenchError, match=r"records.*clf-small records"):
        export_cell_results(tmp_path / "empty", tmp_path / "res2", units)


def test_a_failing_cell_is_recorded_and_the_run_goes_on(
    tmp_path: Path, work: Path, monkeypatch
) -> None:
    from udbench.methods.logreg_lap import LogRegLaplace

    units = [u for u in _units(work, None) if u.kind == "clf-small"]
    records = tmp_path / "records"

    def boom(self, *args, **kwargs):
        raise RuntimeError("no fit today")

    with monkeypatch.context() as mp:
        mp.setattr(LogRegLaplace, "fit", boom)
        counts = run_campaign(units, records)
    assert counts == {"skipped": 0, "done": 2, "failed": 2, "left": 0, "unavailable": 0, "busy": 0}
    failed = json.loads(record_file(records, units[0].unit_id).read_text())
    assert failed["status"] == "failed" and "no fit today" in failed["error"]
    assert failed["result"]["row"]["status"] == "failed"
    board = {r["method"]: r for r in classification_summary(records, units)["leaderboard"]}
    lr = next(k for k in board if k.startswith("logreg-lap"))
    assert board[lr]["n_failed"] == 2 and board[lr]["n_valid"] == 0
    # the next run retries exactly the failed cells
    assert run_campaign(units, records) == {
        "skipped": 2,
        "done": 2,
        "failed": 0,
        "left": 0,
        "unavailable": 0,
        "busy": 0,
    }


def _check_record(uid: str, dataset: str, hist, covered: int, rhat: float, numerics=None):
    return {
        "schema": 1,
        "unit_id": uid,
        "kind": "gpc-check",
        "status": "done",
        "settings": {},
        "numerics": numerics or {"gpc": family_numerics_version("gpc")},
        "wall_seconds": 10.0,
        "cpu_seconds": 36.0,
        "result": {
            "task_id": uid.split("/")[1],
            "dataset": dataset,
            "checks": {
                "n_points": 10,
                "n_draws": 39,
                "sbc_hist": hist,
                "covered_90": covered,
                "coverage_90_expected": 0.9,
                "mcse_var_rel_median": 0.1,
                "mcse_var_rel_p95": 0.2,
                "corr_mean_fstar": 0.5,
                "rhat_max": rhat,
            },
            "rhat_passed": rhat <= 1.05,
            "seed_replacement": {"used_seed": 7, "log": [{"reason": "rhat_max=1.2 > 1.05"}]},
        },
    }


def test_check_summary_equals_hand_computed_values(tmp_path: Path) -> None:
    h1 = [10] + [0] * 19  # every rank in the first bin
    h2 = [0] * 10 + [1] * 10
    recs = [
        _check_record("gpc-check/a", "x", h1, 9, 1.01),
        _check_record("gpc-check/b", "y", h2, 6, 1.20),
        # another numerics version: never mixed in
        _check_record("gpc-check/c", "x", h1, 0, 1.0, {"gpc": -1}),
    ]
    for r in recs:
        path = record_file(tmp_path, r["unit_id"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(r))
    summary, notes = clf.gpc_check_summary(tmp_path)
    pooled = summary["pooled"]
    assert pooled["n_instances"] == 2
    assert pooled["coverage_90"] == pytest.approx(15 / 20)
    # two instances: the bootstrap's totals are 0.6, 0.75, 0.9 (P = 1/4, 1/2, 1/4)
    assert pooled["coverage_90_ci"] == pytest.approx([0.6, 0.9])
    assert pooled["sbc_max_share_excess"] == pytest.approx(10 / 20 - 0.05)
    # D = 39: 40 ranks, 2 per bin, so independent ranks are uniform on the 20 bins
    expected = clf.expected_max_share_excess(20, np.full(20, 0.05))
    assert pooled["sbc_max_share_excess_expected"] == pytest.approx(expected[0])
    assert pooled["rhat_pass_fraction"] == 0.5 and pooled["n_rhat_failed"] == 1
    assert summary["datasets"]["x"]["coverage_90"] == pytest.approx(0.9)
    assert summary["replaced"]["a"]["used_seed"] == 7
    assert summary["cpu_hours"] == pytest.approx(72 / 3600)
    assert len(notes) == 1 and "gpc-check/c" in notes[0]


def test_expected_max_share_excess_closed_form() -> None:
    # two ranks on 20 equal bins: both in one bin w.p. 1/20 (max share 1), else 1/2
    mean, _ = clf.expected_max_share_excess(2, np.full(20, 0.05))
    assert mean == pytest.approx(1 / 20 + 19 / 20 * 0.5 - 0.05, abs=0.01)
    # one rank: its bin's share is 1
    assert clf.expected_max_share_excess(1, np.full(20, 0.05))[0] == pytest.approx(0.95)


def test_instance_specs_add_seeds_to_reach_the_minimum() -> None:
    specs = clf.instance_specs(SUITE)
    assert len(specs) == 24 and sorted(s.seed for s in specs) == list(range(24))
    assert len(clf.instance_specs("clf-small")) == 120  # 3 × 4 × 2 × 5: no seed added


def test_stale_cell_records_are_left_out(tmp_path: Path, work: Path) -> None:
    units = [u for u in _units(work, None) if u.kind == "clf-small"]
    records = tmp_path / "records"
    run_campaign(units, records)
    path = record_file(records, units[0].unit_id)
    rec = json.loads(path.read_text())
    rec["numerics"] = {"gpc": -1}
    path.write_text(json.dumps(rec))
    other = record_file(records, units[1].unit_id)
    rec = json.loads(other.read_text())
    rec["settings"]["config_hash"] = "changed"
    other.write_text(json.dumps(rec))
    summary = classification_summary(records, units)
    board = {r["method"]: r for r in summary["leaderboard"]}
    assert sum(r["n_valid"] for r in board.values()) == 2
    assert len(summary["notes"]) == 2


def test_status_lists_both_parts_with_projected_hours(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from udbench.campaigns._claims import unit_claim
    from udbench.cli import app

    args = ["campaign", "status", "classification", "--records", str(tmp_path / "r")]
    first = clf.campaign_units(work_dir=tmp_path / "w")[0].unit_id
    with unit_claim(tmp_path / "r", first, "udbench campaign run"):  # a live run
        out = CliRunner().invoke(
            app, [*args, "--work", str(tmp_path / "w")], env={"COLUMNS": "200"}
        )
    assert out.exit_code == 0, out.output
    assert f"note: 1 unit(s) without a current record being run now ({os.getpid()}@" in out.output
    lines = {ln.split("│")[1].strip(): ln for ln in out.output.splitlines() if "│" in ln}
    # 120 instances × 90 s guessed; 120 × the 11 classifiers' guessed 199 s
    assert "120" in lines["gpc-check"] and "3.0" in lines["gpc-check"]
    assert "1320" in lines["clf-small"] and "6.6" in lines["clf-small"]


def test_an_empty_records_folder_says_where_and_how_to_fill_it(tmp_path: Path) -> None:
    summary = classification_summary(tmp_path / "none-yet")
    assert summary["leaderboard"] is None and summary["gpc_check"] is None
    assert summary["markdown"] == (
        f"No finished records yet in {tmp_path / 'none-yet'} (`udbench campaign run "
        "classification` makes them; `udbench campaign status classification` shows what is "
        "left)."
    )


def test_summarise_results_option_is_for_the_classification_campaign(
    tmp_path: Path, capsys
) -> None:
    from udbench.cli import main

    out = tmp_path / "res"
    assert (
        main(["campaign", "summarise", "mcmc", "--records", str(tmp_path), "--results", str(out)])
        != 0
    )
    err = " ".join(capsys.readouterr().err.split())
    assert "--results" in err and "classification or runs campaign" in err and "mcmc" in err
    assert not out.exists()


def test_summarise_results_refuses_a_folder_with_results_before_writing(tmp_path, capsys) -> None:
    from udbench.cli import main

    out = tmp_path / "res"
    (out / "cells").mkdir(parents=True)
    records = tmp_path / "records"
    args = ["campaign", "summarise", "classification", "--records", str(records)]
    assert main([*args, "--write", "--results", str(out)]) != 0
    err = " ".join(capsys.readouterr().err.split())
    assert "'--results'" in err and "without results" in err
    assert not (tmp_path / "records.md").exists()  # refused before the page was written


def test_a_summary_of_some_methods_leaves_the_other_methods_cells_out(
    tmp_path: Path, work: Path
) -> None:
    units = [u for u in _units(work, None) if u.kind == "clf-small"]
    records = tmp_path / "records"
    run_campaign(units, records)
    some = [u for u in units if "/logreg-lap" in u.unit_id]  # as `--methods` selects them
    assert len(some) == 2
    summary = classification_summary(records, some)
    assert [r["method"].split(":")[0] for r in summary["leaderboard"]] == ["logreg-lap"]
    assert summary["notes"] == [
        "2 clf-small record(s) of units not selected now (other methods or conditions, or "
        "units the campaign no longer has); left out"
    ]
