"""A real local Dask deployment for tests: ``dask scheduler`` and single-threaded ``dask
worker`` processes on 127.0.0.1, each in its own session, killed with its group on exit; every
wait is bounded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from distributed import Client

BIN = Path(sys.executable).parent


def stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM every process group, then SIGKILL the ones still alive after 10 s."""
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)


@contextmanager
def dask_cluster(folder: Path, env: dict[str, str], n_workers: int = 2) -> Iterator[str]:
    """Start a scheduler and ``n_workers`` workers (names w0, w1, …); yield its address.

    Logs go to ``folder`` (``scheduler.log``, ``worker<i>.log``).
    """
    sched_file = folder / "scheduler.json"
    procs: list[subprocess.Popen] = []
    logs: list[IO[str]] = []

    def start(*args: str, log: str) -> None:
        logs.append(open(folder / log, "w"))  # closed below
        procs.append(
            subprocess.Popen(
                [str(BIN / "dask"), *args],
                stdout=logs[-1],
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        )

    try:
        start(
            "scheduler",
            "--host=127.0.0.1",
            "--port=0",
            "--no-dashboard",
            f"--scheduler-file={sched_file}",
            log="scheduler.log",
        )
        t0 = time.monotonic()
        while not sched_file.is_file():
            assert time.monotonic() - t0 < 60, "the scheduler did not start within 60 s"
            assert procs[0].poll() is None, (folder / "scheduler.log").read_text()
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        for i in range(n_workers):
            start(
                "worker",
                address,
                "--host=127.0.0.1",
                "--nthreads=1",
                "--no-dashboard",
                f"--name=w{i}",
                "--death-timeout=60",
                f"--local-directory={folder}",
                log=f"worker{i}.log",
            )
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(n_workers, timeout=90)
        yield address
    finally:
        stop(procs)
        for f in logs:
            f.close()
