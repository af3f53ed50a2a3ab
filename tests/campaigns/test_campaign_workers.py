"""``udbench campaign run --workers N``: N runs started together share the campaign's units."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from _fakes import make_fake_task, save_fake_task
from udbench.cli import main
from udbench.commands._campaign_workers import (
    combined_status,
    run_workers,
    split_units,
    worker_commands,
    workers_line,
)


def test_max_units_is_split_over_the_workers_and_empty_shares_start_nothing() -> None:
    assert split_units(5, 2) == [3, 2]
    assert split_units(6, 3) == [2, 2, 2]
    assert split_units(1, 4) == [1, 0, 0, 0]
    assert split_units(None, 3) == [None, None, None]
    assert sum(split_units(7, 4)) == 7


def test_worker_commands_repeat_the_options_given(tmp_path: Path) -> None:
    options = {
        "campaign": "mcmc", "parts": "multi-family", "layouts": None, "suite": None,
        "methods": None, "pruner": None, "trials": None, "records": Path("rel/records"),
        "work": tmp_path, "max_hours": None, "max_units": 3, "finish_within": 1.0,
        "nice": 19, "data_dir": None, "only": "multi-family/*__bnn__*",
    }  # fmt: skip
    cmds = worker_commands(options, 2, elapsed_s=360.0)
    assert len(cmds) == 2
    first = cmds[0]
    assert first[:3] == ["campaign", "run", "mcmc"]
    pairs = dict(zip(first[3::2], first[4::2], strict=True))
    assert pairs["--parts"] == "multi-family" and pairs["--only"] == "multi-family/*__bnn__*"
    assert pairs["--records"] == str(Path("rel/records").resolve())  # absolute
    assert pairs["--work"] == str(tmp_path.resolve()) and pairs["--nice"] == "19"
    # --finish-within counts from the command's start: 6 min of the hour are used
    assert float(pairs["--finish-within"]) == pytest.approx(0.9, abs=1e-12)
    assert "--pruner" not in pairs and "--trials" not in pairs and "--workers" not in pairs
    assert [c[-2:] for c in cmds] == [["--max-units", "2"], ["--max-units", "1"]]
    # one unit in all: one worker
    assert len(worker_commands(options | {"max_units": 1}, 4)) == 1


def test_the_exit_status_is_zero_only_if_every_worker_succeeded() -> None:
    assert combined_status([0, 0, 0]) == 0
    assert combined_status([0, 1]) == 1
    assert combined_status([1, 2, 0]) == 2  # a refused input wins: the user must act
    assert combined_status([0, -signal.SIGKILL]) == 1
    assert combined_status([130, 130]) == 130 and combined_status([130, 2]) == 2  # Ctrl-C
    # a worker that hard-stopped a unit (--unit-timeout) is said as such, after the two above
    assert combined_status([0, 124, 1]) == 124 and combined_status([124, 130]) == 130
    assert workers_line([0, -9]) == "2 worker run(s) ended, exit status 0, killed by signal 9"


def test_run_workers_prefixes_each_workers_lines_and_returns_their_statuses() -> None:
    code = "import sys; print('unit', sys.argv[1]); print('end'); sys.exit(int(sys.argv[2]))"
    lines: list[str] = []
    statuses = run_workers([["a", "0"], ["b", "3"]], lines.append, [sys.executable, "-c", code])
    assert statuses == [0, 3]
    assert sorted(lines) == ["[1] end", "[1] unit a", "[2] end", "[2] unit b"]
    assert lines.index("[1] unit a") < lines.index("[1] end")  # each worker's order kept


_PARENT = textwrap.dedent(
    """
    import sys
    from udbench.commands._campaign_workers import run_workers

    child = "import time; print('up', flush=True); time.sleep(60)"
    relay = lambda line: print(line, flush=True)
    print(run_workers([[], []], relay, [sys.executable, "-c", child]))
    """
)


def test_a_sigterm_to_the_command_stops_its_workers(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    assert proc.stdout is not None
    ups = 0
    deadline = time.monotonic() + 60
    while ups < 2:  # both workers are running
        assert time.monotonic() < deadline
        ups += proc.stdout.readline().strip().endswith("up")
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0
    assert out.strip().splitlines()[-1] == f"[{-signal.SIGTERM}, {-signal.SIGTERM}]"


_ORPHANS = textwrap.dedent(
    """
    import sys
    from udbench.commands._campaign_workers import run_workers

    child = (
        "import os, time\\n"
        "from udbench.commands._campaign_workers import watch_parent\\n"
        "watch_parent(0.2)\\n"
        "print('up', os.getpid(), flush=True)\\n"
        "time.sleep(60)\\n"
    )
    relay = lambda line: print(line, flush=True)
    print(run_workers([[], []], relay, [sys.executable, "-c", child]))
    """
)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_workers_end_when_their_command_is_killed(tmp_path: Path) -> None:
    """SIGKILL to the command cannot be passed on: each worker notices that the process
    that started it is gone and ends itself (else it would run on unread)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _ORPHANS], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    assert proc.stdout is not None
    pids: list[int] = []
    deadline = time.monotonic() + 60
    while len(pids) < 2:
        assert time.monotonic() < deadline
        line = proc.stdout.readline().split()
        if line[1:2] == ["up"]:
            pids.append(int(line[2]))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 30
    while any(_running(pid) for pid in pids):
        assert time.monotonic() < deadline, "a worker outlived its command"
        time.sleep(0.1)


def test_a_command_whose_output_fails_still_drains_its_workers() -> None:
    """A relay that raises (output to a closed pipe) must not leave a worker blocked on a
    full pipe: the command still ends, with the workers' statuses."""
    code = "import sys\nfor i in range(200000): print('x' * 40)\n"
    seen: list[str] = []

    def emit(line: str) -> None:
        seen.append(line)
        raise BrokenPipeError(32, "Broken pipe")

    result: list[list[int]] = []
    runner = threading.Thread(
        target=lambda: result.append(run_workers([[]], emit, [sys.executable, "-c", code]))
    )
    runner.start()
    runner.join(120)
    assert not runner.is_alive(), "the worker blocked on its pipe"
    assert result == [[0]] and seen == ["[1] " + "x" * 40]  # relayed once, then drained


def test_every_option_of_campaign_run_reaches_the_workers() -> None:
    """A new option of ``campaign run`` must be passed on to the workers (or the workers
    would silently run with its default)."""
    import inspect

    from udbench.commands._campaign_workers import WORKER_OPTIONS
    from udbench.commands.campaign import run_command

    assert set(inspect.signature(run_command).parameters) - {"workers"} == set(WORKER_OPTIONS)


def test_two_workers_of_a_tuning_campaign_each_do_a_different_sweep(tmp_path: Path) -> None:
    """End to end: ``--workers 2`` on two blr sweeps (fake 40-point tasks in the work
    folder, 3 trials): both sweeps recorded, each started once, exit status 0."""
    from udbench.campaigns.tuning import condition_task_folder

    work, records = tmp_path / "work", tmp_path / "records"
    for coverage in ("balanced", "ood"):
        task = make_fake_task(0, n_train=40, dataset="concrete", noise="homoscedastic",
                              coverage=coverage)  # fmt: skip
        save_fake_task(task, condition_task_folder(work, "gp"))
    args = [
        "campaign", "run", "tuning", "--suite", "gp-small", "-m", "blr", "--trials", "3",
        "--records", str(records), "--work", str(work), "--nice", "0",
        "--only", "blr/concrete__gp__homoscedastic__*", "--workers", "2",
    ]  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-m", "udbench", *args], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    started = [line for line in lines if line.endswith(": started")]
    assert sorted(line.split()[1] for line in started) == [
        "blr/concrete__gp__homoscedastic__balanced:",
        "blr/concrete__gp__homoscedastic__ood:",
    ]  # each sweep once
    assert {line.split()[0] for line in lines if line.startswith("[")} <= {"[1]", "[2]"}
    assert lines[-1] == "2 worker run(s) ended, exit status 0, 0"
    for coverage in ("balanced", "ood"):
        rec = json.loads(
            (records / "blr" / f"concrete__gp__homoscedastic__{coverage}.json").read_text()
        )
        assert rec["status"] == "done" and rec["result"]["n_trials"] == 3
    assert main([*args[:-2], "--workers", "0"]) == 2  # refused, naming the option
