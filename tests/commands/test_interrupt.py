"""Ctrl-C as a terminal sends it: SIGINT to the whole process group of a real ``udbench run``.

What must hold: exit status 130, one line on stderr (no traceback, from the driver or any
worker), the cells finished before the interrupt kept, and a re-run resuming from them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _fakes import make_fake_task, save_fake_task
from udbench.evaluation.store import read_results

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent


def _start(tasks: Path, out: Path, workers: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            str(BIN / "udbench"),
            "run",
            str(tasks),
            "-m",
            "_fakes:KnnMethod:sleep=1.5",
            "--out",
            str(out),
            "-w",
            workers,
            "--no-progress",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=HERE.parent,  # tests/: the CLI imports _fakes from its current folder
        start_new_session=True,  # its own process group, as a terminal's foreground job
        # as in a terminal, SIGINT at its default: a test run started in the background
        # (``nohup … &``, a CI runner) inherits SIGINT ignored, and Python then never raises
        # KeyboardInterrupt (the run finished all cells and exited 0)
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_after_first_cell(proc: subprocess.Popen[str], out: Path) -> tuple[str, str]:
    deadline = time.monotonic() + 240
    # a finished cell: its file under its own name (the store writes ``.tmp-*.parquet`` first,
    # which pathlib's glob also matches; interrupting then keeps no cell)
    while not [p for p in (out / "cells").glob("*.parquet") if not p.name.startswith(".")]:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no cell finished in time"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)  # the whole group: driver, workers, cell processes
    stdout, stderr = proc.communicate(timeout=120)
    return stdout, stderr


def _check(tmp_path: Path, workers: str) -> None:
    tasks, out = tmp_path / "tasks", tmp_path / "res"
    for seed in range(8):
        save_fake_task(make_fake_task(seed), tasks)
    proc = _start(tasks, out, workers)
    stdout, stderr = _interrupt_after_first_cell(proc, out)
    assert proc.returncode == 130, (stdout, stderr)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("udbench run: interrupted; ")
    assert lines[0].endswith("; re-run the same command to resume")
    assert "Traceback" not in stdout + stderr
    kept = len(read_results(out))
    assert 1 <= kept < 8
    assert f"interrupted; {kept} cell(s) finished in this run are kept in {out};" in lines[0]
    # the re-run skips the kept cells and finishes the rest
    again = subprocess.run(
        [
            *(str(BIN / "udbench"), "run", str(tasks), "-m", "_fakes:KnnMethod:sleep=1.5"),
            *("--out", str(out), "-w", workers, "--no-progress"),
        ],
        capture_output=True,
        text=True,
        cwd=HERE.parent,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    assert f"8 cells: {8 - kept} ok, 0 failed, {kept} already finished" in " ".join(
        again.stdout.split()
    )


def test_ctrl_c_inline_run_one_line_cells_kept(tmp_path):
    _check(tmp_path, "0")


@pytest.mark.slow
def test_ctrl_c_dask_run_one_line_cells_kept(tmp_path):
    """With two local Dask workers: no worker traceback, no shutdown chatter."""
    _check(tmp_path, "2")
