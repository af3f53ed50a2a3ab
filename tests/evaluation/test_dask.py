"""The Dask path: one shared 2-worker LocalCluster for the module (process workers are slow to
start), compared with a 1-worker cluster and with in-process execution."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from _fakes import (
    FaultyMethod,
    KnnMethod,
    MeanMethod,
    fit_log,
    make_fake_task,
    save_fake_task,
)
from udbench._validation import UdbenchError
from udbench.evaluation.runner import METRIC_KEYS, run_benchmark
from udbench.evaluation.store import read_results
from udbench.execution.cluster import core_sets, dask_client, load_cluster_config, thread_env

COLS = ["cell_key", "status", "method_seed", *METRIC_KEYS, "rho_eu_risk_shell0"]


@pytest.fixture(scope="module")
def client():
    with dask_client(workers=2) as c:
        yield c


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tasks")
    for seed in range(3):
        save_fake_task(make_fake_task(seed, n_train=20 + seed), folder)
    return folder


def _table(out):
    return read_results(out).sort_values("cell_key")[COLS].reset_index(drop=True)


def test_two_workers_equal_one_worker_and_inline(client, task_dir, tmp_path):
    methods = [MeanMethod(), KnnMethod(k=3)]
    kw: dict[str, object] = {}
    s2 = run_benchmark([task_dir], methods, tmp_path / "two", client=client, **kw)
    assert (s2.n_ok, s2.n_failed) == (6, 0)
    # one worker: a 1-worker cluster from a cluster file (threads, so it starts fast)
    cfg = tmp_path / "one.toml"
    cfg.write_text(
        'class = "distributed.LocalCluster"\n'
        "[kwargs]\nn_workers = 1\nprocesses = false\nthreads_per_worker = 1\n"
    )
    s1 = run_benchmark([task_dir], methods, tmp_path / "one", cluster_config=cfg, **kw)
    s0 = run_benchmark([task_dir], methods, tmp_path / "inline", workers=0, **kw)
    assert s1.n_ok == s0.n_ok == 6
    pd.testing.assert_frame_equal(_table(tmp_path / "two"), _table(tmp_path / "one"))
    pd.testing.assert_frame_equal(_table(tmp_path / "two"), _table(tmp_path / "inline"))


def test_workers_are_pinned_to_disjoint_cores(client):
    info = client.run(lambda: (sorted(os.sched_getaffinity(0)), os.environ["OMP_NUM_THREADS"]))
    sets = [tuple(cores) for cores, _ in info.values()]
    assert sorted(sets) == sorted(tuple(c) for c in core_sets(2))
    assert len(set(sets)) == 2 or len(os.sched_getaffinity(0)) == 1
    # one compute thread per cell whatever the share of cores (results must not depend on it)
    assert {threads for _, threads in info.values()} == {"1"}


def test_several_local_workers_do_not_preallocate_a_shared_gpu(client):
    """Two JAX processes on one GPU: neither may take 75 % of its memory up front."""
    from udbench.execution.cluster import GPU_PREALLOCATE_VAR

    got = client.run(lambda: os.environ.get(GPU_PREALLOCATE_VAR))
    expected = os.environ.get(GPU_PREALLOCATE_VAR, "false")  # a user's own setting wins
    assert set(got.values()) == {expected}


def test_timeout_on_dask_is_a_failed_row_and_the_run_goes_on(client, tmp_path):
    folder = tmp_path / "tasks"
    save_fake_task(make_fake_task(0), folder)
    s = run_benchmark(
        [folder],
        [KnnMethod(sleep=3.0), MeanMethod()],
        tmp_path / "res",
        client=client,
        timeout=0.5,
    )
    assert (s.n_ok, s.n_failed) == (1, 1)
    assert s.failures[0][1] == "timeout: fit + predict exceeded 0.5 s"
    client.wait_for_workers(2, timeout=60)  # the restarted worker is back


def _worker_pids(client):
    return client.run(os.getpid)


def _gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(scope="module")
def one_task(tmp_path_factory):
    folder = tmp_path_factory.mktemp("one")
    save_fake_task(make_fake_task(7), folder)
    return folder


def test_timed_out_cell_runs_once_and_its_process_is_killed(client, one_task, tmp_path):
    # a runaway pure-Python fit: the cell is killed at the deadline, not run again elsewhere,
    # and the worker keeps running (no restart, so no other cell is lost or recomputed)
    log = tmp_path / "fits.log"
    pids = _worker_pids(client)
    s = run_benchmark(
        [one_task],
        [FaultyMethod(fault="busy", busy_s=120.0, log=str(log)), MeanMethod()],
        tmp_path / "res",
        client=client,
        timeout=1.0,
    )
    assert (s.n_ok, s.n_failed) == (1, 1)
    assert s.failures[0][1] == "timeout: fit + predict exceeded 1 s"
    df = read_results(tmp_path / "res")
    assert (tmp_path / "res" / "results.parquet").is_file() and len(df) == 2
    busy = df[df["method"] == "fake-faulty"].iloc[0]
    assert busy["dataset"] == "toy" and busy["n_train"] == 30  # task coordinates kept
    fits = fit_log(log)
    assert list(fits) == [busy["method_seed"]] and len(fits[busy["method_seed"]]) == 1
    assert _gone(fits[busy["method_seed"]][0])  # the runaway process was killed
    assert _worker_pids(client) == pids  # no worker was restarted


def test_cell_that_ends_its_process_costs_one_cell(client, one_task, tmp_path):
    log = tmp_path / "fits.log"
    pids = _worker_pids(client)
    s = run_benchmark(
        [one_task],
        [
            FaultyMethod(fault="exit", log=str(log)),
            FaultyMethod(fault="segv", log=str(log)),
            FaultyMethod(fault="none", log=str(log)),
        ],
        tmp_path / "res",
        client=client,
        timeout=60.0,
    )
    assert (s.n_ok, s.n_failed) == (1, 2)
    assert sorted(r for _, r in s.failures) == [
        "the cell's process died during fit + predict: exit code 3",
        "the cell's process died during fit + predict: killed by signal SIGSEGV",
    ]
    fits = fit_log(log)
    assert len(fits) == 3 and all(len(p) == 1 for p in fits.values())  # no cell ran twice
    assert _worker_pids(client) == pids
    # without a time limit the stage is unknown; the reason is still one line
    s = run_benchmark(
        [one_task],
        [FaultyMethod(fault="exit", busy_s=1.0)],
        tmp_path / "res2",
        client=client,
    )
    assert s.failures[0][1] == "the cell's process died: exit code 3"
    assert _worker_pids(client) == pids


def test_core_sets_split_evenly():
    assert core_sets(2, [0, 1, 2, 3, 4]) == [[0, 1, 2], [3, 4]]
    assert core_sets(3, [4, 5]) == [[4], [5], [4]]
    assert thread_env(2)["OMP_NUM_THREADS"] == "2"
    with pytest.raises(UdbenchError, match="'n_workers' must be >= 1"):
        core_sets(0)


def test_cluster_config_files(tmp_path):
    toml = tmp_path / "c.toml"
    toml.write_text('class = "distributed.LocalCluster"\nscale = 1\n[kwargs]\nprocesses = false\n')
    assert load_cluster_config(toml)["kwargs"] == {"processes": False}
    yml = tmp_path / "c.yaml"
    yml.write_text("cluster:\n  class: dask_jobqueue.SLURMCluster\n  adapt: {maximum: 4}\n")
    assert load_cluster_config(yml)["adapt"] == {"maximum": 4}
    bad = tmp_path / "bad.toml"
    bad.write_text('klass = "x"\n')
    with pytest.raises(UdbenchError, match="'class' must name the cluster class"):
        load_cluster_config(bad)
    bad.write_text('class = "x.Y"\nworkers = 3\n')
    with pytest.raises(UdbenchError, match="'keys' must be among class, kwargs"):
        load_cluster_config(bad)
    ini = tmp_path / "c.ini"
    ini.write_text("[cluster]\n")
    with pytest.raises(UdbenchError, match=r"end in \.toml, \.yaml or \.yml"):
        load_cluster_config(ini)


def test_unimportable_cluster_class_is_a_user_error(task_dir, tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('class = "no_such_pkg.Cluster"\n')
    with pytest.raises(UdbenchError, match="'class' must be an importable class"):
        run_benchmark([task_dir], [MeanMethod()], tmp_path / "r2", cluster_config=cfg)


def test_running_scheduler_by_address(client, task_dir, tmp_path):
    s = run_benchmark(
        [task_dir],
        [MeanMethod()],
        tmp_path / "res",
        scheduler=client.scheduler.address,
    )
    assert (s.n_ok, s.n_failed) == (3, 0)
    with pytest.raises(UdbenchError, match="'scheduler' must not be combined with --cluster"):
        run_benchmark(
            [task_dir], [MeanMethod()], tmp_path / "r", scheduler="tcp://x:1", cluster_config="c"
        )
