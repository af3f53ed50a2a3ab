"""``udbench generate`` logs each instance's seconds; ``udbench plan`` projects GP generation
from that log (GP task files store no timing, so before the log the GP row was unknown)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from udbench.cli import main
from udbench.tasks.timelog import GENERATION_LOG


def _lines(folder):
    return [json.loads(x) for x in (folder / GENERATION_LOG).read_text().splitlines()]


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / "tasks"
    args = ["generate", "--noise", "homoscedastic", "--coverage", "balanced", "--seeds", "0-1"]
    assert main([*args, "--fidelity", "smoke", "--draws", "40", "--out", str(out)]) == 0
    return out


def test_generate_logs_the_prior_and_every_instance(tasks):
    lines = _lines(tasks)
    prior = [x for x in lines if "prior" in x]
    inst = {x["task_id"]: x for x in lines if "task_id" in x}
    assert [(p["prior"], p["dataset"], p["fidelity"]) for p in prior] == [
        ("gp", "diabetes", "smoke")
    ]
    assert set(inst) == {p.stem for p in tasks.glob("*.npz")} and len(inst) == 2
    for rec in inst.values():
        assert rec["family"] == "gp" and rec["fidelity"] == "smoke"
        assert 0 < rec["seconds"] < 600 and rec["utc"].endswith("+00:00")


def test_a_resumed_generate_logs_nothing_more(tasks):
    before = (tasks / GENERATION_LOG).read_text()
    args = ["generate", "--noise", "homoscedastic", "--coverage", "balanced", "--seeds", "0-1"]
    assert main([*args, "--fidelity", "smoke", "--draws", "40", "--out", str(tasks)]) == 0
    assert (tasks / GENERATION_LOG).read_text() == before  # both skipped: no new line


def test_plan_projects_gp_generation_from_the_log(tasks, tmp_path, capsys):
    # a cut last line (a killed process) and a line for a task that is not in the folder are
    # skipped; the median is over the two logged instances of this folder
    with open(tasks / GENERATION_LOG, "a") as fh:
        fh.write('{"task_id": "diabetes__gp__step__ood__s7", "seconds": 999.0}\n{"task_id": "dia')
    logged = [x["seconds"] for x in _lines_ok(tasks) if x.get("task_id", "").endswith(("s0", "s1"))]
    capsys.readouterr()
    plan = ["plan", "--datasets", "diabetes", "--families", "gp", "--noise", "all"]
    plan += ["--coverage", "all", "--seeds", "0-9", "-m", "blr", "--trials", "1"]
    plan += ["--no-calibration"]  # measured figures only (the calibration is tested apart)
    assert main([*plan, "--measured", str(tasks), "--json"]) == 0
    rows = {(r["stage"], r["key"]): r for r in json.loads(capsys.readouterr().out)["rows"]}
    gen = rows[("generate", "gp")]
    assert gen["n_measured"] == 2 and gen["count"] == 80
    # the log holds wall-clock seconds: wall hours, not CPU-hours
    assert gen["clock"] == "wall" and gen["cpu_hours"] is None
    assert gen["wall_hours"] == pytest.approx(80 * float(np.median(logged)) / 3600, rel=1e-9)
    # without the log the same folder measures nothing for the GP: unknown, not guessed
    (tasks / GENERATION_LOG).rename(tmp_path / "log")
    try:
        assert main([*plan, "--measured", str(tasks), "--json"]) == 0
        rows = {(r["stage"], r["key"]): r for r in json.loads(capsys.readouterr().out)["rows"]}
        gen = rows[("generate", "gp")]
        assert gen["cpu_hours"] is None and gen["wall_hours"] is None and gen["basis"] is None
    finally:
        (tmp_path / "log").rename(tasks / GENERATION_LOG)


def _lines_ok(folder):
    out = []
    for line in (folder / GENERATION_LOG).read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return out
