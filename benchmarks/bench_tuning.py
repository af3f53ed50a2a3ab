"""Tuning speed: a 30-trial sweep on 1 vs 2 Dask workers, and the driver's overhead per trial.

A fast tunable method (two hyperparameters, ``x`` and ``z``; its fit does a fixed amount of
single-threaded NumPy work, ~0.4 s, whatever the values, so every trial costs the same) is
tuned on one small task (a 50-point training sample) with ``udbench.tuning.sweep.tune``: TPE
with the constant liar, every worker on the one sweep (``in_flight`` = workers), each trial in
a child process of its Dask worker, the sweep in an Optuna journal file. Per worker count a
pinned LocalCluster is started once and warmed by a 2-trial sweep (child processes started,
imports paid); then :data:`N_REPEAT` 30-trial sweeps (fresh folders) alternate between the
clusters and the fastest wall time of each counts. Target: speed-up >= 1.6 on 2 cores.

The driver's overhead per trial is the time the driver spends asking Optuna, sampling,
submitting, telling and writing the journal (``TuneSummary.driver_s`` / trials; it runs while
the workers compute, so it only delays the next trial of the sweep). Target: < 100 ms.
Printed beside it: the load average (other jobs on a shared machine take cores away) and the
pure compute ceiling (the same fits in a 1- vs 2-process pool).

Last line: ``tuning_speedup_2_workers: <x>``.

Usage::

    uv run python benchmarks/bench_tuning.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from udbench.evaluation.cluster import dask_client
from udbench.methods.base import BaseMethod, Prediction
from udbench.tuning.sweep import tune

N_TRIALS = 30
N_REPEAT = 2
WORK = 25  # ufunc rounds per fit


def burn(work: int) -> float:
    """``work`` rounds of single-threaded ufuncs on 10^6 numbers; returns a checksum."""
    a = np.linspace(0.0, 1.0, 1_000_000)
    s = 0.0
    for _ in range(work):
        s += float(np.sum(np.sin(a) * np.cos(a)))
    return s


class BurnQuad(BaseMethod):
    """Fixed CPU work per fit; held-out NLL a smooth function of (x, z), optimum (1, -2)."""

    name = "burn-quad"
    family = "linear"
    constant_aleatoric = True
    search_space = {  # noqa: RUF012 - a class declaration, as on real methods
        "x": {"type": "float", "low": -3.0, "high": 3.0},
        "z": {"type": "float", "low": -3.0, "high": 3.0},
    }

    def __init__(
        self, x: float = 0.0, z: float = 0.0, work: int = WORK, random_state: int | None = None
    ) -> None:
        self.x = x
        self.z = z
        self.work = work
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        burn(self.work)
        self.mean_, self.var_ = float(np.mean(y)), float(np.var(y))

    def _predict(self, X: np.ndarray) -> Prediction:
        n = X.shape[0]
        q = (self.x - 1.0) ** 2 + (self.z + 2.0) ** 2
        return Prediction(np.full(n, self.mean_), np.full(n, self.var_ * np.exp(q)), np.zeros(n))


def _task(folder: Path) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from _fakes import make_fake_task, save_fake_task

    return save_fake_task(make_fake_task(0, n_train=50), folder)


def _pool_ceiling(n_jobs: int) -> float:
    """Speed-up of the same fits in a 2- vs 1-process pool (what the machine allows now)."""
    walls = []
    for procs in (1, 2):
        with ProcessPoolExecutor(procs) as pool:
            list(pool.map(burn, [1] * procs))  # start the processes
            t0 = time.perf_counter()
            list(pool.map(burn, [WORK] * n_jobs))
            walls.append(time.perf_counter() - t0)
    return walls[0] / walls[1]


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-tuning-"))
    _task(root / "tasks")
    print(f"load average before: {os.getloadavg()}")
    t0 = time.perf_counter()
    burn(WORK)
    print(f"one fit's work in this process: {time.perf_counter() - t0:.3f} s")
    walls: dict[int, list[float]] = {1: [], 2: []}
    driver: list[float] = []
    with dask_client(workers=1) as c1, dask_client(workers=2) as c2:
        clients = {1: c1, 2: c2}
        for n, client in clients.items():  # warm-up: children started, imports paid
            tune([root / "tasks"], [BurnQuad(work=1)], root / f"warm{n}", trials=2, client=client)
        for rep in range(N_REPEAT):
            for n, client in clients.items():
                out = root / f"w{n}-r{rep}"
                summary = tune([root / "tasks"], [BurnQuad()], out, trials=N_TRIALS, client=client)
                assert summary.n_trials_run == N_TRIALS and summary.n_trials_failed == 0
                walls[n].append(summary.wall_s)
                driver.append(summary.driver_s / N_TRIALS)
                print(
                    f"workers={n} repeat={rep}: wall {summary.wall_s:.2f} s, driver "
                    f"{1000 * summary.driver_s / N_TRIALS:.1f} ms/trial",
                    flush=True,
                )
    best = {n: min(w) for n, w in walls.items()}
    speedup = best[1] / best[2]
    print(f"load average after: {os.getloadavg()}")
    print(f"compute ceiling (2- vs 1-process pool, same fits): {_pool_ceiling(12):.2f}")
    print(f"fastest 30-trial sweep: 1 worker {best[1]:.2f} s, 2 workers {best[2]:.2f} s")
    print(f"driver_overhead_ms_per_trial: {1000 * float(np.median(driver)):.1f}")
    print(f"tuning_speedup_2_workers: {speedup:.2f}")


if __name__ == "__main__":
    main()
