"""``udbench plan --measured``: CPU seconds where a record measured them, wall-clock seconds
kept apart and labelled as such (never reported as CPU-hours); ``--trials 0``: no tune stage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from udbench.cli import main
from udbench.tasks.grid import expand_grid
from udbench.tuning.plan import Measurements, collect_measurements, plan_grid, project

SHIPPED = Path(__file__).resolve().parents[2] / "src/udbench/tuning/shipped/gp-small/nn-lap"
COND = "airfoil__gp__homoscedastic__balanced"
#: 3 finished trials of 10 + 2 wall seconds each, an interrupted one; the sweep's CPU: 30 s
HISTORY = [
    {"number": i, "state": "complete", "value": 1.0, "fit_time_s": 10.0, "predict_time_s": 2.0}
    for i in range(3)
] + [{"number": 3, "state": "interrupted", "value": None, "fit_time_s": None}]
CPU_PER_TRIAL = 30.0 / 3
WALL_PER_TRIAL = 12.0


def _records(folder: Path, cpu_seconds: float | None) -> Path:
    """A real shipped record of nn-lap with the history above: a campaign record with
    ``cpu_seconds`` (or, with None, its result alone: a ``udbench tune`` record)."""
    rec = json.loads((SHIPPED / f"{COND}.json").read_text())
    rec["result"]["history"] = HISTORY
    out = folder / "nn-lap"
    out.mkdir(parents=True)
    if cpu_seconds is None:
        rec = rec["result"]
    else:
        rec["cpu_seconds"], rec["wall_seconds"] = cpu_seconds, 99.0
    (out / f"{COND}.json").write_text(json.dumps(rec))
    return folder


def _specs() -> list:
    # 1 dataset x 1 family x 2 noise modes x 2 coverages = 4 conditions, 2 seeds
    return expand_grid("airfoil", "gp", "homoscedastic,step", "all", "0-1", "smoke", 1000)


def test_a_campaign_record_gives_cpu_seconds_per_finished_trial(tmp_path):
    found = collect_measurements([_records(tmp_path / "camp", 30.0)])
    counts, rows = plan_grid(_specs(), ["nn-lap"], 5, found)
    tune = {(r.stage, r.key): r for r in rows}[("tune", "nn-lap")]
    assert counts["trials"] == 20 and tune.count == 20 and tune.basis == "measured"
    # the CPU figure, not the wall one (12 s per trial, 240 s: 0.0667 h)
    assert tune.cpu_hours == pytest.approx(20 * CPU_PER_TRIAL / 3600)
    assert tune.clock == "cpu" and found.values("tune", "nn-lap")[:2] == ([CPU_PER_TRIAL], "cpu")
    assert tune.as_dict()["cpu_hours"] == pytest.approx(20 * CPU_PER_TRIAL / 3600)
    assert tune.as_dict()["wall_hours"] is None


def test_wall_seconds_are_reported_as_wall_hours_apart_from_cpu(tmp_path, capsys):
    args = ["plan", "--datasets", "airfoil", "--families", "gp", "--noise", "homoscedastic,step"]
    args += ["--coverage", "all", "--seeds", "0-1", "--fidelity", "smoke", "-m", "nn-lap"]
    args += ["--trials", "5", "--no-calibration", "--workers", "2"]
    assert main([*args, "--measured", str(_records(tmp_path / "tune", None))]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "measured wall (3)" in text and "0.0667 h wall" in text
    assert "tune: 0.0667 h wall-clock (measured elapsed time, not CPU)" in text
    assert "0.0667 CPU-h" not in text
    found = collect_measurements([tmp_path / "tune"])
    assert found.values("tune", "nn-lap")[:2] == ([WALL_PER_TRIAL] * 3, "wall")
    proj = project(_specs(), ["nn-lap"], 5, found, None, workers=2)
    tune = {(r.stage, r.key): r for r in proj.rows}[("tune", "nn-lap")]
    assert tune.clock == "wall" and tune.as_dict()["cpu_hours"] is None
    assert tune.as_dict()["wall_hours"] == pytest.approx(20 * WALL_PER_TRIAL / 3600)
    assert proj.cpu_hours == 0.0
    assert proj.wall_clock_hours == pytest.approx(20 * WALL_PER_TRIAL / 3600)
    # both clocks: the CPU record wins for its row
    assert main([*args, "--measured", str(_records(tmp_path / "camp", 30.0))]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "measured CPU (1)" in text and "tune: 0.0556 CPU-h" in text


def test_merge_keeps_both_clocks():
    a, b = Measurements(), Measurements()
    a.add("run", "blr", 2.0, "airfoil")
    b.add("tune", "blr", 3.0, "concrete", clock="cpu")
    a.merge(b)
    assert a.values("run", "blr")[:3] == ([2.0], "wall", {"airfoil"})
    assert a.values("tune", "blr")[:3] == ([3.0], "cpu", {"concrete"})


def test_no_trials_means_no_tune_stage(capsys):
    counts, rows = plan_grid(_specs(), ["blr"], 0, Measurements())
    assert counts["sweeps"] == 0 and counts["trials"] == 0
    assert [r.stage for r in rows] == ["generate", "run"]
    args = ["plan", "--datasets", "airfoil", "--families", "gp", "--noise", "step"]
    args += ["--coverage", "balanced", "--seeds", "0", "-m", "blr", "--trials", "0"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "no tune stage (--trials 0)" in out and "tune" not in out.replace("no tune stage", "")
