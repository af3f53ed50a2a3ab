"""Ctrl-C on ``udbench quickstart`` as a terminal sends it (SIGINT to the whole group).

Mid-run and while the tasks are still being generated: exit status 130, exactly one line on
stderr naming what is kept and the resume command, no traceback (driver, Dask workers or
the cells' child processes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def _default_sigint() -> None:  # as in a terminal (a background test run inherits it ignored)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_quickstart(tmp_path: Path, ready: Callable[[Path, str], bool]) -> tuple[int, str]:
    out, log = tmp_path / "qs", tmp_path / "stdout.txt"
    env = dict(os.environ, UDBENCH_CACHE_DIR=str(tmp_path / "cache"))
    with open(log, "w") as stdout:
        proc = subprocess.Popen(
            [str(BIN / "udbench"), "quickstart", "--methods", "blr", "-w", "1", "--out", str(out)],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,  # its own process group, as a terminal's foreground job
            preexec_fn=_default_sigint,
        )
        deadline = time.monotonic() + 240
        while not ready(out, log.read_text()):
            assert proc.poll() is None, (log.read_text(), proc.communicate()[1])
            assert time.monotonic() < deadline, "quickstart did not get there in time"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)  # the driver, its workers and cell processes
        _, stderr = proc.communicate(timeout=120)
    return proc.returncode, stderr


def _one_line(stderr: str, out: Path, cells: str) -> None:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert sum("interrupted" in line for line in lines) == 1
    assert lines[0] == (
        f"udbench quickstart: interrupted; the task files and {cells} cell(s) finished in this "
        f"run are kept in {out / 'tasks'} and {out / 'results'}; re-run the same command to "
        "resume"
    ), lines[0]


def _finished_cells(out: Path) -> list[Path]:
    # a finished cell: its file under its own name (``.tmp-*`` while it is being written)
    return [p for p in (out / "results" / "cells").glob("*.parquet") if p.name[0] != "."]


def test_ctrl_c_quickstart_mid_run_one_line(tmp_path):
    rc, stderr = _interrupt_quickstart(tmp_path, lambda out, _: bool(_finished_cells(out)))
    assert rc == 130, stderr
    out = tmp_path / "qs"
    kept = len(_finished_cells(out))
    assert 1 <= kept <= 4  # all four when the interrupt came while the report was written
    _one_line(stderr, out, str(kept))


@pytest.mark.slow  # about 25 s; the mid-run and the suite's planning cases stay in the default
def test_ctrl_c_quickstart_while_planning_one_line(tmp_path):
    rc, stderr = _interrupt_quickstart(tmp_path, lambda _, text: "generating task" in text)
    assert rc == 130, stderr
    out = tmp_path / "qs"
    assert not _finished_cells(out)
    _one_line(stderr, out, "0")


def test_ctrl_c_suite_while_planning_one_line(tmp_path):
    """The plan stage (a child ``udbench plan``) interrupted: the suite says the one line."""
    out, err = tmp_path / "suite", tmp_path / "stderr.txt"
    env = dict(os.environ, UDBENCH_CACHE_DIR=str(tmp_path / "cache"))
    with open(err, "w") as stderr:
        proc = subprocess.Popen(
            [str(BIN / "udbench"), "suite", "quickstart", "--out", str(out), "-w", "1"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
            start_new_session=True,
            preexec_fn=_default_sigint,
        )
        deadline = time.monotonic() + 240
        while "plan: no tune stage" not in err.read_text():
            assert proc.poll() is None, err.read_text()
            assert time.monotonic() < deadline, "the suite did not reach its plan in time"
            time.sleep(0.05)
        time.sleep(0.5)  # the plan stage's process has started
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=120)
    text = err.read_text()
    assert proc.returncode == 130, text
    assert "Traceback" not in text, text
    said = [line for line in text.splitlines() if "interrupted" in line]
    assert said == [
        "udbench suite: interrupted; the stages finished before it and what stage plan "
        f"finished are kept in {out}; re-run the same command to resume"
    ], text
