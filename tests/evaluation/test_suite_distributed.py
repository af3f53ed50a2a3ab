"""``udbench suite`` distributed for real: a ``dask scheduler`` and two ``dask worker``
processes on 127.0.0.1 (``--scheduler``), and a cluster file naming ``distributed.LocalCluster``
(``--cluster-config``); both make the same task files and the same results.

Every process is started in its own session and killed with its group at the end; every wait
is bounded. Slow (process start-up on a shared machine).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from distributed import Client

from _dask_cluster import dask_cluster
from udbench.tasks import read_task_meta

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LAUNCH = "import sys; from udbench.cli import main; sys.exit(main())"
SUITE = """
datasets = "diabetes"
families = "gp"
noise = "homoscedastic"
coverage = "all"
seeds = "0-1"
fidelity = "smoke"
draws = 100
methods = "_fakes:KnnMethod;_fakes:MeanMethod"
method_params = "default"
"""


def _env() -> dict[str, str]:
    path = os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """Address of a ``dask scheduler`` with two single-threaded ``dask worker`` processes."""
    folder = tmp_path_factory.mktemp("dask")
    with dask_cluster(folder, _env()) as address:
        yield address


def _suite(tmp_path: Path, out: Path, *where: str) -> str:
    suite_file = tmp_path / "dist.toml"
    suite_file.write_text(SUITE)
    proc = subprocess.run(
        [sys.executable, "-c", LAUNCH, "suite", str(suite_file), "--out", str(out), *where],
        capture_output=True,
        text=True,
        timeout=900,
        env=_env(),
        cwd=str(TESTS),
    )
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    return text


def _outputs(out: Path) -> tuple[dict[str, str], pd.DataFrame]:
    tasks = {p.name: read_task_meta(p)["content_sha256"] for p in (out / "tasks").glob("*.npz")}
    rows = pd.read_parquet(out / "results" / "results.parquet")
    return tasks, rows.sort_values(["task_id", "method"]).reset_index(drop=True)


def test_suite_through_scheduler_and_through_a_local_cluster_file(scheduler, tmp_path) -> None:
    # 1. a running scheduler with two worker processes
    text = _suite(tmp_path, tmp_path / "by_scheduler", "--scheduler", scheduler, "--no-plan")
    assert "4 instances selected, 0 already done, 4 to generate" in text
    assert "8 cells: 8 ok, 0 failed" in text
    with Client(scheduler, timeout="30s") as client:
        # the work ran on the workers: each of them imported udbench's task generator
        loaded = client.run(lambda: "udbench.tasks.generate" in sys.modules)
    assert len(loaded) == 2 and any(loaded.values())
    tasks_a, rows_a = _outputs(tmp_path / "by_scheduler")

    # 2. a cluster file naming a LocalCluster class (two single-threaded worker processes)
    cfg = tmp_path / "local.toml"
    cfg.write_text(
        'class = "distributed.LocalCluster"\nscale = 2\n'
        "[kwargs]\nn_workers = 0\nthreads_per_worker = 1\nprocesses = true\n"
        'dashboard_address = ":0"\n'
    )
    text = _suite(tmp_path, tmp_path / "by_file", "--cluster-config", str(cfg), "--no-plan")
    assert "8 cells: 8 ok, 0 failed" in text
    tasks_b, rows_b = _outputs(tmp_path / "by_file")

    # same task files (content checksums) and the same metrics, whichever cluster made them
    assert len(tasks_a) == 4 and tasks_a == tasks_b
    assert len(rows_a) == 8 and (rows_a["status"] == "ok").all()
    for col in ("rho_eu_risk", "rmse", "nll"):
        np.testing.assert_allclose(rows_a[col], rows_b[col], rtol=1e-9, err_msg=col)
    # a re-run against the scheduler resumes: nothing left to do
    text = _suite(tmp_path, tmp_path / "by_scheduler", "--scheduler", scheduler, "--no-plan")
    assert "4 already done, 0 to generate" in text and "8 already finished" in text
