"""``udbench study``: projected hours in their clock, as ``udbench plan`` prints them.

A results folder's cells measure elapsed (wall-clock) seconds; a tuning campaign's records
measure CPU seconds. The study's tables, totals and ``--yes`` gate must never call the
former CPU time; the gate compares CPU-hours + wall-clock hours (an upper bracket) with its
one-hour threshold.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from udbench.commands.study import CONFIRM_CPU_HOURS, gate_message
from udbench.evaluation.store import ResultsStore
from udbench.studies import spectral_norm as sn
from udbench.tuning.clocks import gate_hours, hours_text, split_hours

SHIPPED = Path(__file__).resolve().parents[2] / "src/udbench/tuning/shipped/gp-small/nn-lap"
COND = "airfoil__gp__homoscedastic__balanced"
#: a tuning campaign record of nn-lap: 3 finished trials, 720 CPU seconds for the sweep
TRIAL_CPU_S = 240.0
#: a results folder's nn-lap cells: 480 wall-clock seconds each
CELL_WALL_S = 480.0


def _campaign_record(folder: Path) -> Path:
    """A real shipped nn-lap record with 3 finished trials and ``cpu_seconds`` = 720."""
    rec = json.loads((SHIPPED / f"{COND}.json").read_text())
    rec["result"]["history"] = [
        {"number": i, "state": "complete", "value": 1.0, "fit_time_s": 9.0, "predict_time_s": 1.0}
        for i in range(3)
    ]
    rec["cpu_seconds"], rec["wall_seconds"] = 3 * TRIAL_CPU_S, 99.0
    (folder / "nn-lap").mkdir(parents=True)
    (folder / "nn-lap" / f"{COND}.json").write_text(json.dumps(rec))
    return folder


def _results(folder: Path) -> Path:
    """Two ok nn-lap cells of ``CELL_WALL_S`` (fit + predict) each."""
    store = ResultsStore(folder)
    for i in range(2):
        store.write_cell(
            {"cell_key": f"c{i}|nn-lap", "status": "ok", "method": "nn-lap",
             "dataset": "concrete", "fit_time_s": CELL_WALL_S - 30.0, "predict_time_s": 30.0}
        )  # fmt: skip
    return folder


def test_gate_counts_wall_clock_hours_as_cpu_hours_and_says_so():
    assert CONFIRM_CPU_HOURS == 1.0 and gate_hours(0.6, 0.5) == pytest.approx(1.1)
    # each clock alone under the hour, their sum over it: the gate asks for --yes
    why = gate_message(0.6, 0.5, [])
    assert why == (
        "the projected cost of this run is 36 CPU-min + 30 min wall-clock (measured elapsed "
        "time, not CPU), 1.1 h counted against the limit of 1 h (wall-clock hours counted as "
        "CPU-hours, an upper bracket)"
    )
    assert gate_message(0.6, 0.3, []) is None
    assert gate_message(1.2, 0.0, []) == "the projected cost of this run is 1.2 CPU-h (> 1 h)"
    assert gate_message(0.0, 1.5, ["run gp"]).startswith(  # type: ignore[union-attr]
        "the projected cost of this run is 1.5 h wall-clock (measured elapsed time, not CPU)"
    )
    assert gate_message(0.1, 0.0, ["run gp"]) == (
        "the cost of 1 stage(s) is not measured yet (run gp)"
    )
    assert hours_text(0.0, 0.0) == "0 CPU-h"


def test_spectral_norm_plan_keeps_cpu_and_wall_hours_apart(tmp_path):
    specs = sn.study_specs("concrete", [0, 1], ["gp"])  # 2 instances, 1 condition
    folders = [_campaign_record(tmp_path / "tuning"), _results(tmp_path / "bench")]
    plan = sn.plan_study(specs, ["nn-lap"], tmp_path / "study", trials=3, measured=folders)
    rows = {(r.stage, r.key): r for r in plan.rows}
    for arm in ("nn-lap", "nn-lap+sn", "nn-lap+wd"):  # the arms borrow nn-lap's times
        assert rows[("tune", arm)].clock == "cpu"
        assert rows[("tune", arm)].cpu_hours == pytest.approx(3 * TRIAL_CPU_S / 3600)
        assert rows[("run", arm)].clock == "wall"
        assert rows[("run", arm)].cpu_hours == pytest.approx(2 * CELL_WALL_S / 3600)
    assert plan.known_cpu_hours == pytest.approx(3 * 3 * TRIAL_CPU_S / 3600)  # 0.6
    assert plan.known_wall_hours == pytest.approx(3 * 2 * CELL_WALL_S / 3600)  # 0.8
    assert split_hours(plan.rows) == pytest.approx((0.6, 0.8))
    _, _, known, _ = sn.project_cost(specs, ["nn-lap", "nn-lap+sn"], 3, folders)
    assert known == pytest.approx((2 * 3 * TRIAL_CPU_S / 3600, 2 * 2 * CELL_WALL_S / 3600))


def test_spectral_norm_cli_labels_wall_hours_and_gates_on_the_sum(tmp_path, capsys, monkeypatch):
    from udbench.cli import main

    monkeypatch.setenv("COLUMNS", "200")  # one table row per line

    out = tmp_path / "study"
    args = ["study", "spectral-norm", "--out", str(out), "--datasets", "concrete"]
    args += ["--seeds", "0,1", "--families", "gp", "--methods", "nn-lap", "--trials", "3"]
    args += ["--measured", str(_campaign_record(tmp_path / "tuning"))]
    args += ["--measured", str(_results(tmp_path / "bench"))]
    assert main(args) == 2  # 0.6 CPU-h + 0.8 h wall = 1.4 h > 1 h: --yes is asked for
    err = " ".join(capsys.readouterr().err.split())
    assert "measured CPU (1)" in err and "12 CPU-min" in err  # tune rows: 3 trials × 240 s
    assert "measured wall (2)" in err and "16 min wall" in err  # run rows: 2 cells × 480 s
    assert "16 CPU-min" not in err and "CPU-h measured" not in err
    assert (
        "projected: measured 36 CPU-min + 48 min wall-clock (measured elapsed time, not CPU)" in err
    )
    assert (
        "study spectral-norm: the projected cost of this run is 36 CPU-min + 48 min wall-clock "
        "(measured elapsed time, not CPU), 1.4 h counted against the limit of 1 h" in err
    )
    assert "--yes" in err and not (out / "tasks").exists()


def test_wine_ood_reads_runs_campaign_records_as_cpu_beside_wall_cells(
    tmp_path, data_dir, capsys, monkeypatch
):
    """blr measured by runs campaign records (CPU), gp by a results folder (wall)."""
    from udbench.cli import main

    monkeypatch.setenv("COLUMNS", "200")
    runs = tmp_path / "runs" / "gp-small"
    for seed, cpu in ((0, 900.0), (1, 900.0)):  # 900 CPU s (and 2000 wall s) per blr cell
        task = f"white_wine__gp__smooth-monotone__balanced__s{seed}"
        path = runs / "untuned" / task / "blr.json"
        path.parent.mkdir(parents=True)
        path.write_text(
            json.dumps(
                {"unit_id": f"untuned/{task}/blr", "kind": "untuned", "status": "done",
                 "settings": {"task_id": task, "method": "blr"},
                 "cpu_seconds": cpu, "wall_seconds": 2000.0,
                 "result": {"row": {"dataset": "white_wine", "method": "blr", "status": "ok"}}}
            )
        )  # fmt: skip
    bench = tmp_path / "bench"
    ResultsStore(bench).write_cell(
        {"cell_key": "x|gp", "status": "ok", "method": "gp", "dataset": "white_wine",
         "fit_time_s": 1000.0, "predict_time_s": 80.0}
    )  # fmt: skip
    args = ["study", "wine-ood", "--out", str(tmp_path / "study"), "--methods", "blr,gp"]
    args += ["--families", "gp", "--seeds", "0-1", "--measured", str(runs)]
    args += ["--measured", str(bench)]
    assert main(args) == 2  # 0.5 CPU-h + 0.6 h wall = 1.1 h > 1 h
    err = " ".join(capsys.readouterr().err.split())
    assert "measured CPU (2)" in err and "30 CPU-min" in err  # run blr: 2 × 900 CPU s
    assert "measured wall (1)" in err and "36 min wall" in err  # run gp: 2 × 1080 wall s
    assert (
        "this run: 2 instances × 2 methods = 4 fits; measured 30 CPU-min + 36 min wall-clock "
        "(measured elapsed time, not CPU)" in err
    )
    assert (
        "the projected cost of this run is 30 CPU-min + 36 min wall-clock (measured elapsed "
        "time, not CPU), 1.1 h counted against the limit of 1 h" in err
    )
    assert not (tmp_path / "study" / "tasks").exists()
