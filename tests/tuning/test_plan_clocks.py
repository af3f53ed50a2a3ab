"""``udbench plan --measured``: CPU seconds where a record measured them, wall-clock seconds
kept apart and labelled as such (never reported as CPU-hours); ``--trials 0``: no tune stage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from udbench.cli import main
from udbench.tasks.grid import expand_grid
from udbench.tuning.clocks import duration_text
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


def _records(folder: Path, cpu_seconds: float | None, wall_seconds: float = 99.0) -> Path:
    """A real shipped record of nn-lap with the history above: a campaign record with
    ``cpu_seconds`` (or, with None, its result alone: a ``udbench tune`` record)."""
    rec = json.loads((SHIPPED / f"{COND}.json").read_text())
    rec["result"]["history"] = HISTORY
    out = folder / "nn-lap"
    out.mkdir(parents=True)
    if cpu_seconds is None:
        rec = rec["result"]
    else:
        rec["cpu_seconds"], rec["wall_seconds"] = cpu_seconds, wall_seconds
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


def test_a_resumed_sweep_gives_its_trials_wall_seconds_not_its_last_processs_cpu(tmp_path):
    """3 trials of 12 s in a record that timed 10 s of wall: the sweep resumed from its
    journal, its 30 CPU s cover the last process only; its trials' 12 s are taken, as wall."""
    found = collect_measurements([_records(tmp_path / "camp", 30.0, wall_seconds=10.0)])
    assert found.values("tune", "nn-lap")[:2] == ([WALL_PER_TRIAL] * 3, "wall")
    assert ("tune", "nn-lap") not in found.cpu_seconds


def test_a_resumed_sweep_that_kept_its_trials_cpu_adds_it_to_its_last_processs(tmp_path):
    """The same resumed sweep, made since trials keep their CPU clock: 2 of its 3 trials ran
    in a killed process (14 CPU s by their own clocks), the last process took 30 CPU s: the
    sweep's 44 CPU s over its 3 finished trials; without the earlier trials' clocks, no CPU
    figure (as above)."""
    from udbench.tuning._measured import sweep_cpu_seconds

    folder = _records(tmp_path / "camp", 30.0, wall_seconds=10.0)
    path = folder / "nn-lap" / f"{COND}.json"
    rec = json.loads(path.read_text())
    rec["result"]["resumed_trials"], rec["result"]["resumed_trials_cpu_seconds"] = 2, 14.0
    path.write_text(json.dumps(rec))
    found = collect_measurements([folder])
    assert found.values("tune", "nn-lap")[:2] == ([44.0 / 3], "cpu")
    res = rec["result"]
    assert sweep_cpu_seconds(res, 30.0, 10.0) == 44.0
    assert sweep_cpu_seconds({**res, "resumed_trials": 0}, 30.0, 10.0) == 30.0  # not resumed
    assert sweep_cpu_seconds({**res, "resumed_trials_cpu_seconds": None}, 30.0, 10.0) is None
    assert sweep_cpu_seconds(res, None, 10.0) is None  # a udbench tune record: no CPU clock


def test_wall_seconds_are_reported_as_wall_hours_apart_from_cpu(tmp_path, capsys):
    args = ["plan", "--datasets", "airfoil", "--families", "gp", "--noise", "homoscedastic,step"]
    args += ["--coverage", "all", "--seeds", "0-1", "--fidelity", "smoke", "-m", "nn-lap"]
    args += ["--trials", "5", "--no-calibration", "--workers", "2"]
    assert main([*args, "--measured", str(_records(tmp_path / "tune", None))]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "measured wall (3)" in text and "4 min wall" in text
    assert "tune: 4 min wall-clock (measured elapsed time, not CPU)" in text
    assert "4 CPU-min" not in text
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
    assert "measured CPU (1)" in text and "tune: 3.33 CPU-min" in text


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


def _run_record(root: Path, kind: str, task_id: str, method: str, cpu: float, wall: float,
                status: str = "done", params: dict | None = None) -> None:  # fmt: skip
    """A runs campaign cell record (``<root>/<kind>/<task id>/<method>.json``)."""
    config = json.dumps({"method": method, "params": params or {}})
    rec = {
        "schema": 1, "unit_id": f"{kind}/{task_id}/{method}", "kind": kind, "status": status,
        "settings": {"task_id": task_id, "method": method, "suite": "gp-small", "part": kind},
        "cpu_seconds": cpu, "wall_seconds": wall,
        "result": {"row": {"dataset": task_id.split("__")[0], "method": method,
                           "config": config, "status": "ok"}},
    }  # fmt: skip
    path = root / kind / task_id / f"{method}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))


def test_runs_campaign_records_give_cpu_seconds_per_cell(tmp_path, capsys):
    specs = _specs()  # 8 instances of airfoil
    root = tmp_path / "runs" / "gp-small"
    for s in specs:  # blr: 2 CPU s (5 wall s) per untuned cell; their sum is 16 CPU s
        _run_record(root, "untuned", s.task_id, "blr", 2.0, 5.0)
    for s in specs[:2]:  # tuned cells, another configuration, the same CPU seconds
        _run_record(root, "tuned", s.task_id, "blr", 2.0, 7.0, params={"alpha_1": 0.5})
    for s, cpu in zip(specs[:3], (1.0, 3.0, 8.0), strict=True):  # nn-lap: median 3 CPU s
        _run_record(root, "untuned", s.task_id, "nn-lap", cpu, 60.0)
    _run_record(root, "untuned", "airfoil__gp__step__ood__s9", "nn-lap", 500.0, 9.0, "failed")
    found = collect_measurements([root])
    secs, clock, where, configs = found.values("run", "blr")
    assert clock == "cpu" and secs == [2.0] * 10 and where == {"airfoil"}
    assert configs == {"alpha_1=0.5 (default 1e-06)": 2}  # the tuned cells' settings
    assert found.values("run", "nn-lap")[:2] == ([1.0, 3.0, 8.0], "cpu")  # failed one left out
    assert not found.seconds  # no wall-clock figure from these records
    _, rows = plan_grid(specs, ["blr", "nn-lap"], 0, found)
    run = {r.key: r for r in rows if r.stage == "run"}
    assert run["blr"].clock == "cpu" and run["blr"].n_measured == 10
    assert run["blr"].cpu_hours == pytest.approx(16.0 / 3600)  # = the records' sum
    assert run["nn-lap"].cpu_hours == pytest.approx(8 * 3.0 / 3600)
    assert run["blr"].as_dict()["wall_hours"] is None
    # a part folder named directly reads the same records
    assert collect_measurements([root / "untuned"]).values("run", "blr")[0] == [2.0] * 8
    args = ["plan", "--datasets", "airfoil", "--families", "gp", "--noise", "homoscedastic,step"]
    args += ["--coverage", "all", "--seeds", "0-1", "--fidelity", "smoke", "-m", "blr,nn-lap"]
    args += ["--trials", "0", "--no-calibration", "--measured", str(root)]
    assert main(args) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "measured CPU (10)" in text and "16 CPU-s" in text  # blr: 8 × 2 s
    assert "measured CPU (3)" in text and "24 CPU-s" in text  # nn-lap: 8 × 3 s
    assert "run: 40 CPU-s" in text and " wall-clock (" not in text
    assert "run blr: 2 of the 10 measured cells ran other settings" in text


@pytest.mark.parametrize(
    ("args", "kwargs", "text"),
    [
        ((1510.0, 1510.0), {}, "1,510 h (≈ 63 days)"),  # equal ends: one figure
        ((1510.0, 1720.0), {}, "1,510–1,720 h (≈ 63–72 days)"),
        ((12.345,), {"prefix": "CPU-"}, "12.3 CPU-h"),
        ((0.2,), {"prefix": "CPU-"}, "12 CPU-min"),
        ((0.0667 / 60,), {}, "4 s"),
        ((0.99999,), {}, "1 h"),  # 59.9994 min prints as an hour, not "60 min"
        ((47.9,), {}, "47.9 h"),  # under 48 h: no days
        ((123456.0,), {}, "123,000 h (≈ 5,100 days)"),
        ((0.0,), {"prefix": "CPU-"}, "0 CPU-h"),
    ],
)
def test_duration_text_is_human_readable(args, kwargs, text):
    assert duration_text(*args, **kwargs) == text


def test_plan_prints_long_durations_without_exponents(tmp_path, capsys):
    """1,510 wall-clock hours of trials: no ``1.51e+03–1.51e+03 h`` anywhere."""
    per_trial = 1510 * 3600 / 20  # 20 trials of nn-lap (4 sweeps × 5)
    history = [{**t, "fit_time_s": per_trial - 2.0} if t["fit_time_s"] else t for t in HISTORY]
    folder = _records(tmp_path / "tune", None)
    path = folder / "nn-lap" / f"{COND}.json"
    rec = json.loads(path.read_text())
    rec["history"] = history
    path.write_text(json.dumps(rec))
    args = ["plan", "--datasets", "airfoil", "--families", "gp", "--noise", "homoscedastic,step"]
    args += ["--coverage", "all", "--seeds", "0-1", "--fidelity", "smoke", "-m", "nn-lap"]
    args += ["--trials", "5", "--no-calibration", "--workers", "1", "--measured", str(folder)]
    assert main(args) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "e+" not in text
    assert "tune: 1,510 h (≈ 63 days) wall-clock (measured elapsed time, not CPU)" in text
    assert "75.5 h" in text  # per trial
