"""The cost model of ``udbench plan`` (issue 35, item 1): power laws from a calibration table,
evaluated at each dataset's size; a missing entry is unknown, never zero; the projection of
a smoke grid is within a stated factor of the measured time of running it."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from udbench.cli import main
from udbench.tasks.grid import expand_grid
from udbench.tuning.calibrating import calibrate
from udbench.tuning.calibration import (
    EVAL_POINTS,
    CalibrationTable,
    PowerLaw,
    load_calibration,
    work_ratio,
)
from udbench.tuning.plan import (
    FinishedWork,
    Measurements,
    plan_grid,
    project,
    remaining_rows,
)

# concrete: n = 348, n_eval = 515; airfoil: n = 584, n_eval = 751 (SPEC §2)
N = {"concrete": (348, 515), "airfoil": (584, 751)}


def _law(coef: float, exponent: float) -> dict:
    return {"coef": coef, "exponent": exponent}


def _table(with_gp: bool = True, with_airfoil_fit: bool = True) -> CalibrationTable:
    entries = {
        "method:blr": {
            "law": {"fit": _law(1e-3, 1.0), "predict": _law(2e-4, 1.0)},
            "first_call_s": 0.5,
            "new_config_s": 0.1,
        },
        "generate:gp": {
            "law": {"instance": _law(1e-2, 1.0)},
            "fidelity": "standard",
            "size": "n + n_eval",
            "first_call_s": 2.0,
        },
        "prior-fit:concrete": {"seconds": 100.0},
    }
    if with_airfoil_fit:
        entries["prior-fit:airfoil"] = {"seconds": 300.0}
    if with_gp:
        entries["method:gp"] = {
            "law": {"fit": _law(1e-8, 3.0), "predict": _law(1e-5, 2.0)},
            "first_call_s": 3.0,
            "new_config_s": 1.0,
        }
    return CalibrationTable(entries, {}, source="test")


def _grid():
    # 2 datasets x GP x 2 noise modes x 1 coverage x 2 seeds = 8 instances, 4 conditions
    return expand_grid(
        "concrete,airfoil", "gp", "homoscedastic,step", "balanced", "0-1", "standard", 1000
    )


def test_a_power_law_is_recovered_from_its_own_points():
    n = np.array([100.0, 300.0, 1000.0])
    law = PowerLaw.fit(n, 2e-9 * n**3)
    assert law.coef == pytest.approx(2e-9, rel=1e-9) and law.exponent == pytest.approx(3.0)
    assert law(3000.0) == pytest.approx(2e-9 * 3000.0**3, rel=1e-9)
    one = PowerLaw.fit([200.0], [4.0])  # one size: linear through it
    assert (one.exponent, one(400.0)) == (1.0, pytest.approx(8.0))


def test_work_ratios_of_the_fidelities_follow_the_presets():
    # HBART: chain iterations 250 x (5000 + 4 x 25) against 20 x (500 + 50 x 10)
    assert work_ratio("hbart", "paper", "smoke") == pytest.approx(1_275_000 / 20_000)
    # BNN: 4 x (500 + 250) iterations x 2^10 leapfrogs against 2 x (300 + 500) x 2^8
    assert work_ratio("bnn", "paper", "smoke") == pytest.approx(3000 * 1024 / (1600 * 256))
    assert work_ratio("gp", "paper", "standard") == 1.0


def test_calibrated_rows_sum_each_datasets_law_and_a_missing_entry_is_unknown():
    specs = _grid()
    table = _table(with_gp=False, with_airfoil_fit=False)
    counts, rows = plan_grid(specs, ["blr", "gp"], 5, Measurements(), table, workers=2)
    assert counts["instances"] == 8 and counts["trials"] == 40
    by = {(r.stage, r.key): r for r in rows}

    def fit(n):
        return 1e-3 * n

    def pred(n, m):
        return 2e-4 * n * m / EVAL_POINTS

    # run: 4 cells per dataset at its own (n, n_eval), + first call x W + new shape per
    # (worker, dataset) pair: min(2, 4) = 2 pairs per dataset
    run = sum(4 * (fit(n) + pred(n, m)) for n, m in N.values()) + 2 * 0.5 + 4 * 0.1
    assert by[("run", "blr")].basis == "calibrated"
    assert by[("run", "blr")].cpu_hours * 3600 == pytest.approx(run, rel=1e-12)
    # tune: 2 conditions x 5 trials per dataset, on 80 % with the other 20 % predicted
    trial = {d: fit(0.8 * n) + pred(0.8 * n, 0.2 * n) + 0.1 for d, (n, _) in N.items()}
    assert by[("tune", "blr")].cpu_hours * 3600 == pytest.approx(
        sum(10 * t for t in trial.values()) + 2 * 0.5, rel=1e-12
    )
    gen = sum(4 * 1e-2 * (n + m) for n, m in N.values()) + 4 * 2.0
    assert by[("generate", "gp")].cpu_hours * 3600 == pytest.approx(gen, rel=1e-12)
    assert by[("prior-fit", "concrete")].cpu_hours * 3600 == pytest.approx(100.0)
    # no entry: unknown (None), never zero, and named by the projection
    for key in (("prior-fit", "airfoil"), ("tune", "gp"), ("run", "gp")):
        assert by[key].cpu_hours is None and by[key].basis is None
    proj = project(specs, ["blr", "gp"], 5, Measurements(), table, workers=2)
    assert proj.unknown == ["prior-fit airfoil", "tune gp", "run gp"]
    known = [r.cpu_hours for r in rows if r.cpu_hours is not None]
    assert proj.cpu_hours == pytest.approx(sum(known))
    assert proj.chain_hours is None and proj.wall_hours_low is None  # every chain has a gap


def test_wall_time_is_bounded_by_the_work_over_w_and_the_longest_chain():
    specs = _grid()
    proj = project(specs, ["blr", "gp"], 5, Measurements(), _table(), workers=3)
    assert proj.unknown == []
    # airfoil: its fit + one instance + the longest trial + the longest cell
    n, m = N["airfoil"]
    trial_gp = 1e-8 * (0.8 * n) ** 3 + 1e-5 * (0.8 * n) ** 2 * (0.2 * n) / EVAL_POINTS + 1.0
    cell_gp = 1e-8 * n**3 + 1e-5 * n**2 * m / EVAL_POINTS
    chain = 300.0 + 1e-2 * (n + m) + trial_gp + cell_gp
    assert proj.chain == "airfoil × gp"
    assert proj.chain_hours * 3600 == pytest.approx(chain, rel=1e-12)
    assert proj.wall_hours_low == pytest.approx(max(proj.cpu_hours / 3, proj.chain_hours))
    assert proj.wall_hours_high == pytest.approx(proj.cpu_hours / 3 + proj.chain_hours)
    top = proj.top(2)
    assert top[0].cpu_hours >= top[1].cpu_hours and top[0].key == "airfoil"


def test_a_measured_row_wins_and_remaining_rows_rescale_calibrated_ones():
    specs = _grid()
    found = Measurements()
    found.add("run", "blr", 7.0, "concrete")
    _, rows = plan_grid(specs, ["blr"], 5, found, _table())
    by = {(r.stage, r.key): r for r in rows}
    assert by[("run", "blr")].basis == "measured"
    assert by[("run", "blr")].cpu_hours == pytest.approx(8 * 7.0 / 3600)
    done = FinishedWork(tasks={s.task_id for s in specs if s.dataset == "concrete"})
    left = {(r.stage, r.key): r for r in remaining_rows(rows, specs, 5, done)}
    n, m = N["airfoil"]
    assert left[("generate", "gp")].count == 4
    # the first-call overhead (1 worker x 2 datasets x 2 s) is kept whole while work is left
    assert left[("generate", "gp")].cpu_hours * 3600 == pytest.approx(4 * 1e-2 * (n + m) + 4.0)
    assert left[("prior-fit", "concrete")].cpu_hours == 0.0  # its tasks exist: fit cached
    assert left[("prior-fit", "airfoil")].cpu_hours * 3600 == pytest.approx(300.0)


def test_the_cli_names_a_missing_entry_and_leaves_it_out_of_the_total(tmp_path, capsys):
    path = _table(with_gp=False).write(tmp_path / "cal.json")
    assert load_calibration(path).entries.keys() == _table(with_gp=False).entries.keys()
    args = ["plan", "--datasets", "concrete,airfoil", "--families", "gp", "--noise", "step"]
    args += ["--coverage", "balanced", "--seeds", "0", "-m", "blr,gp", "--trials", "2"]
    args += ["--calibration", str(path), "--workers", "1"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {(r["stage"], r["key"]): r for r in out["rows"]}
    assert rows[("run", "gp")]["cpu_hours"] is None and rows[("run", "gp")]["basis"] is None
    assert out["unknown"] == ["tune gp", "run gp"] and out["calibration"] == str(path)
    assert out["cpu_hours"] == pytest.approx(
        sum(r["cpu_hours"] for r in out["rows"] if r["cpu_hours"] is not None)
    )
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "unknown (not in the total): tune gp, run gp" in text
    assert "+ 2 unknown rows" in text


def test_a_table_that_is_not_a_calibration_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something-else"}')
    assert main(["plan", "--datasets", "concrete", "--calibration", str(bad)]) == 2
    assert "calibration" in capsys.readouterr().err


@pytest.mark.parametrize("factor", [3.0])
def test_the_projection_of_a_smoke_grid_is_within_a_factor_of_running_it(
    tmp_path, monkeypatch, factor
):
    """Calibrate blr, gp and GP generation at two tiny sizes, project a 4-instance diabetes
    grid (n = 150), then generate and run it inline and compare CPU seconds (generous factor:
    the laws come from synthetic data at other sizes, the run from real tasks)."""
    from udbench.evaluation.runner import run_benchmark
    from udbench.tasks import generate_task

    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache"))
    table = calibrate(
        methods=["blr", "gp"], families=["gp"], datasets=[], sizes=(60, 240), budget_s=600
    )
    assert set(table.entries) == {"method:blr", "method:gp", "generate:gp"}
    specs = expand_grid(
        "diabetes", "gp", "homoscedastic,smooth-monotone", "balanced,ood", "1", "smoke", 1000
    )
    generate_task(expand_grid("diabetes", "gp", "step", "balanced", "0", "smoke", 40)[0])
    proj = project(specs, ["blr", "gp"], 0, Measurements(), table, workers=1)
    by = {(r.stage, r.key): r for r in proj.rows}
    folder = tmp_path / "tasks"
    folder.mkdir()
    c0 = time.process_time()
    for spec in specs:  # the kernel fit is cached by the warm-up above
        generate_task(spec).save(folder / f"{spec.task_id}.npz")
    gen_s = time.process_time() - c0
    c0 = time.process_time()  # CPU seconds, as the calibration (the machine may be loaded)
    run_benchmark([folder], ["gp"], tmp_path / "res", workers=0)
    run_s = time.process_time() - c0  # fit + predict, and the scoring (a small part)
    for stage, key, measured in (("generate", "gp", gen_s), ("run", "gp", run_s)):
        projected = by[(stage, key)].cpu_hours * 3600
        assert measured / factor <= projected <= measured * factor, (stage, projected, measured)


def test_calibrate_stays_in_its_budget_and_reports_what_it_skipped(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path))
    args = ["plan", "--datasets", "diabetes", "--families", "gp", "--noise", "step"]
    args += ["--coverage", "balanced", "--seeds", "0", "-m", "blr", "--trials", "1"]
    # a budget of 0.06 s: the warm-up fits run, every timed size is skipped
    assert main([*args, "--calibrate", "--budget", "0.001", "--json"]) == 0
    captured = capsys.readouterr()
    assert "skipped (budget)" in captured.err and "at most 0.001 CPU minutes" in captured.err
    written = json.loads((tmp_path / "calibration.json").read_text())
    assert written["skipped"] and "method:blr" not in written["entries"]
    out = json.loads(captured.out)
    assert out["calibration"] == str(tmp_path / "calibration.json")
    # the entries it could not measure come from the shipped table (or are unknown)
    shipped = load_calibration(None)  # now the user's table, filled up from the shipped one
    for key, entry in shipped.entries.items():
        assert entry.get("from") == "shipped", key
    assert main([*args, "--calibrate", "--budget", "0", "--json"]) == 2
