"""Wall time of ``udbench run --timeout`` with a runaway method, and of a method that exits.

Two small real GP tasks (``diabetes``, fidelity ``smoke``); after a reference run of ``blr``
alone, two methods per run: ``blr`` and a user method given by import path
(``busymod:Busy``), whose ``fit`` either busy-loops in pure Python for 40 s (``busy``) or
calls ``os._exit(3)`` (``exit``). Each scenario runs the CLI as a user does (``udbench run
TASKS -m busymod:... -m blr --timeout 5 --workers 2``) in a subprocess;
printed per scenario: the wall time of the command (cluster start-up included), the cells'
statuses, and how many times each faulty cell's ``fit`` started (from a log the method
writes). Expected: each cell starts once and the run ends a few seconds after the timeout.

Measured 2026-11-30 on a shared 2-core machine (load average 3-6, so wall times move by
several seconds from run to run; cluster start-up and imports are ~15 s of each):

| scenario | before (timed-out worker restarted) | after (cells in child processes) |
|---|---|---|
| reference, ``blr`` only | 9.2 s | 14.5 s (noise: in-process 17.6/19.5 s vs 18.2/17.1 s) |
| busy, 1 faulty cell | 21.2 s, fit 2x, 1 worker restart | 17.8 s, fit 1x, no restart |
| exit, 1 faulty cell | 19.8 s, fit 4x, 4 restarts, KilledWorker | 18.7 s, fit 1x, no restart |
| busy, 2 faulty cells | 30.3 s, fits [2, 2], 2 restarts | 27.8 s, fits [1, 1], no restart |
| exit, 2 faulty cells | 17.1 s, fits [1, 4], 5 restarts | 23.8 s, fits [1, 1], no restart |

Here a worker restart took a few seconds, so the old stall stayed short; where it does not
(the issue saw 140-175 s: ``restart_workers`` waiting 120 s for workers that were busy
recomputing the timed-out cell), the new path has nothing to wait for.

Run: ``uv run python benchmarks/bench_timeout.py``. Last line: ``max_fits_per_cell: <n>``
(target 1).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

BUSY_MODULE = textwrap.dedent(
    """
    import os, time
    import numpy as np
    from udbench.methods.base import BaseMethod, Prediction

    class Busy(BaseMethod):
        name = "busy"
        family = "linear"
        constant_aleatoric = True

        def __init__(self, fault: str = "busy", busy_s: float = 40.0, random_state=None):
            self.fault = fault
            self.busy_s = busy_s
            self.random_state = random_state

        def _fit(self, X, y):
            with open(os.environ["BUSY_LOG"], "a") as f:
                f.write(f"{self.random_state}\\n")
            if self.fault == "exit":
                os._exit(3)
            t0 = time.monotonic()
            while time.monotonic() - t0 < self.busy_s:
                pass
            self.m_, self.v_ = float(np.mean(y)), float(np.var(y))

        def _predict(self, X):
            n = X.shape[0]
            return Prediction(np.full(n, self.m_), np.full(n, self.v_), np.ones(n))
    """
)


def _make_tasks(folder: Path, n: int) -> None:
    from udbench.tasks import TaskSpec, generate_task

    for seed in range(n):
        spec = TaskSpec("diabetes", "gp", "homoscedastic", "balanced", seed, "smoke", 100)
        generate_task(spec).save(folder / f"{spec.task_id}.npz")


def _scenario(tmp: Path, name: str, spec: str, n_tasks: int) -> int:
    """Run the CLI once; print its wall time and fits per faulty cell; return the most fits."""
    tasks = tmp / f"tasks{n_tasks}"
    log = tmp / f"{name.split(',')[0]}-{n_tasks}.log"
    out = tmp / f"res-{name.split(',')[0]}-{n_tasks}"
    env = {**os.environ, "PYTHONPATH": str(tmp), "BUSY_LOG": str(log)}
    udbench = Path(sys.executable).with_name("udbench")
    cmd = [str(udbench), "run", str(tasks), *(["-m", spec] if spec else []), "-m", "blr"]
    cmd += ["--timeout", "5", "--workers", "2", "--out", str(out), "--no-progress"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    summary = next((ln for ln in proc.stdout.splitlines() if " cells: " in ln), proc.stderr[-300:])
    seeds = log.read_text().split() if log.exists() else []
    fits = {s: seeds.count(s) for s in set(seeds)}
    restarts = proc.stderr.count("Restarting worker")
    print(
        f"{name} ({n_tasks} faulty cell(s)): wall {wall:.1f} s | {summary.strip()} | "
        f"fits per faulty cell {sorted(fits.values())} | worker restarts logged {restarts}"
    )
    return max(fits.values(), default=0)


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="udbench-bench-timeout-"))
    (tmp / "busymod.py").write_text(BUSY_MODULE)
    for n in (1, 2):
        (tmp / f"tasks{n}").mkdir()
        _make_tasks(tmp / f"tasks{n}", n)
    print(f"load average {os.getloadavg()[0]:.1f} on {len(os.sched_getaffinity(0))} cores")
    worst = 0
    _scenario(tmp, "reference, blr only", "", 2)
    for n in (1, 2):
        worst = max(worst, _scenario(tmp, "busy", "busymod:Busy:busy_s=40", n))
        worst = max(worst, _scenario(tmp, "exit", "busymod:Busy:fault=exit", n))
    print(f"max_fits_per_cell: {worst}")


if __name__ == "__main__":
    main()
