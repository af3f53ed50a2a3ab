"""A real distributed deployment: ``dask scheduler`` and two ``dask worker`` processes on
127.0.0.1, driven by ``udbench run --scheduler`` in a subprocess, as a user on a cluster does.

The workers find the fake methods through ``PYTHONPATH`` (``module:Class`` specs are imported
on the worker). Every process is started in its own session and killed with its group in the
fixture's finalizer; every wait is bounded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from distributed import Client
from test_real import _real_format_task

from _dask_cluster import dask_cluster
from _fakes import fit_log
from udbench.evaluation.store import read_results

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """Address of a scheduler with two single-threaded workers (names w0, w1)."""
    folder = tmp_path_factory.mktemp("dask")
    env = {
        **os.environ,
        # test_real sits here, _fakes one folder up (tests/)
        "PYTHONPATH": os.pathsep.join(
            [str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")]
        ),
    }
    with dask_cluster(folder, env) as address:
        yield address


def _workers(address: str) -> dict[str, int]:
    """Worker name -> pid of its worker process."""
    with Client(address, timeout="30s") as client:
        client.wait_for_workers(2, timeout=90)
        info = client.scheduler_info(n_workers=-1)["workers"]
        pids = client.run(os.getpid)
    return {str(w["name"]): pids[addr] for addr, w in info.items()}


def _udbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "udbench"), *args, "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=HERE.parent,  # tests/: the CLI imports _fakes from its current folder
    )


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tasks")
    task = _real_format_task(0, "smooth-monotone")
    task.save(folder / f"{task.spec.task_id}.npz")
    return folder


def test_run_through_scheduler_with_timeout_dying_cell_and_killed_worker(
    scheduler, task_dir, tmp_path
):
    # four cells: one ok; one busy past --timeout (killed, stored as timed out); one that ends
    # its process (stored as failed); one that SIGKILLs the Dask worker process it runs on, as
    # a lost node or a killed job would (its nanny starts a new worker and Dask reruns that
    # cell). Each other cell runs exactly once, and only the killed worker is replaced.
    log, marker = tmp_path / "fits.log", tmp_path / "killed"
    before = _workers(scheduler)
    out = tmp_path / "res"
    proc = _udbench(
        "run",
        str(task_dir),
        "-m",
        f"_fakes:FaultyMethod:fault=none,log={log}",
        "-m",
        f"_fakes:FaultyMethod:fault=busy,busy_s=120,log={log}",
        "-m",
        f"_fakes:FaultyMethod:fault=exit,log={log}",
        "-m",
        f"_fakes:FaultyMethod:fault=kill-worker,marker={marker},log={log}",
        "--scheduler",
        scheduler,
        "--timeout",
        "2",
        "--out",
        str(out),
    )
    assert proc.returncode == 3, proc.stderr  # all stored; some cells failed
    assert "4 cells: 2 ok, 2 failed, 0 already finished" in " ".join(proc.stdout.split())
    df = read_results(out)
    assert (out / "results.parquet").is_file() and len(df) == 4
    by_fault = {
        label.split("fault=")[1].split(",")[0]: (status, error if isinstance(error, str) else None)
        for label, status, error in zip(df["method_label"], df["status"], df["error"], strict=True)
    }
    assert by_fault == {
        "none": ("ok", None),
        "busy": ("failed", "timeout: fit + predict exceeded 2 s"),
        "exit": ("failed", "the cell's process died during fit + predict: exit code 3"),
        "kill-worker": ("ok", None),
    }
    assert marker.is_file()  # a worker was killed
    fits = fit_log(log)
    seeds = dict(zip(df["method_label"], df["method_seed"], strict=True))
    runs = {label.split("fault=")[1].split(",")[0]: len(fits[s]) for label, s in seeds.items()}
    assert runs == {"none": 1, "busy": 1, "exit": 1, "kill-worker": 2}
    after = _workers(scheduler)
    assert set(after) == {"w0", "w1"}
    assert sum(after[w] != before[w] for w in after) == 1  # only the killed worker was replaced
