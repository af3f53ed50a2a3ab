"""``udbench suite``: presets as data, the stage commands, and resuming after a SIGKILL in
every stage (a real child process killed with its process group)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from udbench._lock import LOCK_NAME
from udbench._validation import UdbenchError
from udbench.commands.suite import stage_commands
from udbench.recipes.suites import SUITES, load_suite, method_specs, suite_grid
from udbench.tasks.timelog import GENERATION_LOG

TESTS = Path(__file__).resolve().parents[1]
LAUNCH = "import sys; from udbench.cli import main; sys.exit(main())"

TINY = """
datasets = "diabetes"
families = "gp"
noise = "homoscedastic"
coverage = "all"
seeds = "0-9"
fidelity = "smoke"
draws = 1000
methods = "_fakes:KnnMethod:sleep=0.3"
method_params = "default"
"""
N_TASKS = 20  # 10 seeds × 2 coverages
FLAGS = ("--workers", "0", "--no-plan")


@pytest.mark.parametrize(
    ("name", "n"),
    [
        ("quickstart", 4),
        ("gp-small", 240),
        ("hbart-small", 120),
        ("bnn-small", 120),
        ("gp-all", 960),
        ("paper", 3120),
    ],
)
def test_preset_grids_have_the_issue_sizes(name, n) -> None:
    s = load_suite(name)
    # the suite's draws: an MCMC family's D must be a multiple of its chains (paper HBART: 250)
    specs = suite_grid(s)
    assert len(specs) == n
    if name == "gp-all":
        assert "sarcos" not in {x.dataset for x in specs} and len({x.dataset for x in specs}) == 12
    assert set(s) - {"name"} == set(SUITES[name])


def test_suite_file_is_checked_key_by_key(tmp_path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(TINY)
    suite = load_suite(str(path))
    assert suite["name"] == "mine" and suite["keep_predictions"] is False
    path.write_text(TINY.replace("draws = 1000", 'draws = "many"'))
    with pytest.raises(UdbenchError, match="draws"):
        load_suite(str(path))
    path.write_text(TINY.replace('fidelity = "smoke"', ""))
    with pytest.raises(UdbenchError, match="missing \\['fidelity'\\]"):
        load_suite(str(path))
    with pytest.raises(UdbenchError, match="NAME"):
        load_suite("no-such-suite")


def test_stage_commands_are_the_user_commands(tmp_path) -> None:
    quick = load_suite("quickstart")
    specs = method_specs(quick)
    assert specs[0].startswith("blr:max_iter=") and len(specs) >= 5  # smoke settings spelled
    argv = stage_commands(quick, tmp_path, workers=2, tuned=tmp_path / "tuning", timeout=60.0)
    gen = argv["generate"]
    assert gen[0] == "generate" and gen[gen.index("--fidelity") + 1] == "smoke"
    assert gen[gen.index("--out") + 1] == str(tmp_path / "tasks")
    assert gen[gen.index("--workers") + 1] == "2"
    run = argv["run"]
    assert run[:2] == ["run", str(tmp_path / "tasks")]
    assert [run[i + 1] for i, x in enumerate(run) if x == "-m"] == specs
    assert run[run.index("--tuned") + 1 :][:3] == [
        str(tmp_path / "tuning"),
        "--fallback",
        "default",
    ]
    assert "--keep-predictions" in run and run[run.index("--timeout") + 1] == "60.0"
    assert argv["check"] == ["check", str(tmp_path / "tasks"), "--json"]
    assert argv["report"] == [
        "report",
        str(tmp_path / "results"),
        "--out",
        str(tmp_path / "report"),
    ]
    gp_small = method_specs(load_suite("gp-small"))
    assert all(":" not in s for s in gp_small)  # default hyperparameters


def test_the_plan_note_says_a_clusters_wall_time_is_not_projected() -> None:
    from udbench.commands._options import ExecutionOptions
    from udbench.commands.suite import _plan_note

    plain = "plan: no tune stage (udbench suite does not tune); the run stage uses the methods'"
    assert _plan_note(None, ExecutionOptions("s")).startswith(plain)
    assert "wall time" not in _plan_note(None, ExecutionOptions("s"))
    remote = _plan_note(None, ExecutionOptions("s", scheduler="tcp://head:8786"))
    assert remote.endswith(
        "; its wall time is on this machine's usable cores, not on the workers of --scheduler "
        "(give --workers N, their number, to project the wall time on them)"
    )
    on_file = _plan_note(None, ExecutionOptions("s", cluster_config=Path("slurm.toml")))
    assert "not on the workers of --cluster-config" in on_file
    # --workers given: the plan projects on them, nothing to add
    assert "wall time" not in _plan_note(None, ExecutionOptions("s", 8, "tcp://head:8786"))


def test_the_suite_plan_is_the_run_it_makes(tmp_path, capfd) -> None:
    """The plan printed before a suite: no tune stage (the suite never tunes; --tuned reads
    records made before), the suite's fidelity, the wall time on the --workers given."""
    from udbench.cli import main

    argv = stage_commands(load_suite("gp-small"), tmp_path, workers=1, tuned=Path("gp-small"))
    plan = argv["plan"]
    assert plan[plan.index("--trials") + 1] == "0" and plan[plan.index("--workers") + 1] == "1"
    assert plan[plan.index("--fidelity") + 1] == load_suite("gp-small")["fidelity"]
    in_process = stage_commands(load_suite("gp-small"), tmp_path, workers=0)["plan"]
    assert in_process[in_process.index("--workers") + 1] == "1"  # 0: in this process
    suite_file = tmp_path / "one.toml"
    suite_file.write_text(
        TINY.replace('seeds = "0-9"', 'seeds = "0"')
        .replace('coverage = "all"', 'coverage = "balanced"')
        .replace('"_fakes:KnnMethod:sleep=0.3"', '"blr"')
    )
    out = tmp_path / "out"
    args = ["suite", str(suite_file), "--out", str(out), "--stages", "generate"]
    assert main([*args, "--tuned", "gp-small", "--workers", "1"]) == 0
    printed = capfd.readouterr()
    text = " ".join((printed.out + printed.err).split())
    assert "plan: no tune stage (udbench suite does not tune)" in text
    assert "tuned configurations of --tuned gp-small" in text
    assert "no tune stage (--trials 0)" in text and "sweeps ×" not in text
    assert "wall time on 1 worker(s)" in text
    assert not re.search(r"│ tune ", printed.out) and "\ntune:" not in printed.out


def test_bad_stage_list_and_missing_out_are_user_errors(tmp_path) -> None:
    from udbench.cli import main

    assert main(["suite", "quickstart", "--out", str(tmp_path), "--stages", "fit"]) == 2
    assert main(["suite", "quickstart"]) == 2
    assert not any(tmp_path.iterdir())


# -- killed in every stage -------------------------------------------------------------------


def _start(suite_file: Path, out: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [sys.executable, "-c", LAUNCH, "suite", str(suite_file), *("--out", str(out)), *FLAGS],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=str(out.parent),
        start_new_session=True,
    )


def _kill_in(proc: subprocess.Popen[str], stage: str, ready) -> str:  # type: ignore[no-untyped-def]
    """Read the suite's output until stage ``stage`` starts, wait for ``ready()``, SIGKILL the
    process group; return the output seen."""
    seen = []
    assert proc.stdout is not None
    for line in proc.stdout:
        seen.append(line)
        if re.match(rf"stage \d/4 {stage}: udbench", line):
            break
    else:
        raise AssertionError(f"stage {stage} never started:\n{''.join(seen)}")
    deadline = time.monotonic() + 300
    while not ready():
        assert proc.poll() is None, "".join(seen)
        assert time.monotonic() < deadline, "".join(seen)
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    return "".join(seen)


def _rows_per_cell(results: Path) -> pd.Series:
    parts = [results / "results.parquet"] if (results / "results.parquet").is_file() else []
    parts += sorted((results / "cells").glob("*.parquet"))
    frames = [pd.read_parquet(p, columns=["cell_key"]) for p in parts]
    return pd.concat(frames)["cell_key"].value_counts()


@pytest.mark.slow
def test_suite_killed_in_every_stage_resumes_to_exactly_the_expected_files(tmp_path) -> None:
    suite_file = tmp_path / "tiny.toml"
    suite_file.write_text(TINY)
    out = tmp_path / "suite"
    tasks, results, report = out / "tasks", out / "results", out / "report"

    # 1. generate: killed once the first task file is written (each takes ~0.3 s)
    _kill_in(_start(suite_file, out), "generate", lambda: any(tasks.glob("*.npz")))
    n_before = len(list(tasks.glob("*.npz")))
    assert 1 <= n_before < N_TASKS
    # 2. check: killed as it starts (it verifies 20 files after a ~1 s import)
    text = _kill_in(_start(suite_file, out), "check", lambda: True)
    done = re.search(r"(\d+) instances selected, (\d+) already done", text)
    assert done and int(done.group(1)) == N_TASKS and int(done.group(2)) >= n_before
    assert not (out / "check.json").exists()
    # 3. run: killed once the first cell is stored (each cell sleeps 0.3 s)
    cells = results / "cells"
    _kill_in(_start(suite_file, out), "run", lambda: any(cells.glob("[!.]*.parquet")))
    n_cells = len(_rows_per_cell(results))
    assert 1 <= n_cells < N_TASKS
    assert (out / "check.json").exists()
    # 4. report: killed as it starts
    text = _kill_in(_start(suite_file, out), "report", lambda: True)
    assert "check: task files unchanged since checked, skipped" in text
    assert re.search(rf"{N_TASKS} cells: \d+ ok, 0 failed, [1-9]\d* already finished", text)
    assert not (report / "report.html").exists()
    assert (out / LOCK_NAME).exists()  # left by the killed suite, taken over below

    # the last run goes to the end
    proc = _start(suite_file, out)
    text, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, text
    assert f"{N_TASKS} instances selected, {N_TASKS} already done" in text
    assert f"{N_TASKS} cells: 0 ok, 0 failed, {N_TASKS} already finished" in text

    expected = {
        f"diabetes__gp__homoscedastic__{c}__s{s}.npz"
        for c in ("balanced", "ood")
        for s in range(10)
    }
    # no temporary file left; the generation time log (udbench.tasks.timelog) is kept
    assert {p.name for p in tasks.iterdir()} == expected | {GENERATION_LOG}
    per_cell = _rows_per_cell(results)
    assert len(per_cell) == N_TASKS and (per_cell == 1).all()  # every cell once
    rows = pd.read_parquet(results / "results.parquet")
    assert sorted(rows["task_id"]) == sorted(e[: -len(".npz")] for e in expected)
    assert (rows["status"] == "ok").all()
    assert not (results / "cells" / "quarantine").exists()
    assert not [p for p in out.rglob(".tmp-*")] and not [p for p in out.rglob(".*.tmp")]
    assert (report / "report.html").is_file() and (out / "check.json").is_file()
    assert {p.name for p in out.iterdir()} == {
        "tasks",
        "results",
        "report",
        "check.json",
        "suite.json",
    }

    # and once more: nothing to do in any stage
    proc = _start(suite_file, out)
    text, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, text
    assert "report: results unchanged since reported, skipped" in text


def test_invalid_task_files_stop_the_suite_with_exit_1(tmp_path, capsys) -> None:
    """The check stage's verdict on damaged files is the suite's exit status 1 (as ``udbench
    check``), with one error line naming check.json; nothing is run."""
    from udbench.cli import main

    suite = tmp_path / "tiny.toml"
    suite.write_text(TINY.replace('seeds = "0-9"', 'seeds = "0"'))
    out = tmp_path / "s"
    assert main(["suite", str(suite), "--out", str(out), *FLAGS, "--stages", "generate"]) == 0
    victim = sorted((out / "tasks").glob("*.npz"))[0]
    victim.write_bytes(victim.read_bytes()[:1000])  # cut: a damaged file
    capsys.readouterr()
    assert main(["suite", str(suite), "--out", str(out), *FLAGS, "--stages", "check"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "stage check found invalid task files (exit 1" in err and "check.json" in err
    assert not (out / "results").exists()
