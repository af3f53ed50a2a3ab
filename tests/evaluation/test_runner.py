"""Runner and results store, run in-process (``workers=0``) on fake tasks and methods."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from _fakes import BadMethod, KnnMethod, MeanMethod, make_fake_task, save_fake_task
from udbench._validation import UdbenchError
from udbench.evaluation.metrics import instance_metrics, spearman
from udbench.evaluation.runner import (
    METRIC_KEYS,
    find_task_files,
    method_seed,
    resolve_method,
    run_benchmark,
)
from udbench.evaluation.store import ResultsStore, config_hash, read_results
from udbench.methods.base import Prediction
from udbench.risk import oracle_targets
from udbench.tasks import Task


@pytest.fixture
def task_dir(tmp_path):
    folder = tmp_path / "tasks"
    save_fake_task(make_fake_task(0, n_train=30), folder)
    save_fake_task(make_fake_task(1, n_train=40, noise="homoscedastic"), folder)
    return folder


def _run(task_dir, out, methods, **kw):
    kw.setdefault("workers", 0)
    return run_benchmark([task_dir], methods, out, **kw)


def test_end_to_end_stored_metrics_equal_recomputed(task_dir, tmp_path):
    out = tmp_path / "res"
    summary = _run(task_dir, out, [MeanMethod(), KnnMethod(k=4)], keep_predictions=True)
    assert (summary.n_cells, summary.n_ok, summary.n_failed) == (4, 4, 0)
    df = read_results(out)
    assert len(df) == 4 and set(df["status"]) == {"ok"}
    store = ResultsStore(out)
    for row in df.itertuples():
        task = Task.load(row.task_path)
        pred_df = store.read_predictions(row.cell_key)
        np.testing.assert_array_equal(pred_df["eval_idx"], task.eval_idx)
        pred = Prediction(
            pred_df["mean"].to_numpy(),
            pred_df["aleatoric"].to_numpy(),
            pred_df["epistemic"].to_numpy(),
        )
        targets = oracle_targets(
            pred.mean, task.post_mean, task.post_var, task.noise_var_eval, task.f_eval
        )
        expected = instance_metrics(pred, targets, constant_aleatoric=row.constant_aleatoric)
        for key in METRIC_KEYS:
            np.testing.assert_equal(getattr(row, key), expected[key], err_msg=key)
        # per-shell ρ(EU, EU*_risk), hand-selected shells 0 and 4
        for s in (0, 4):
            m = task.shell_eval == s
            want = spearman(pred.epistemic[m], targets.eu_risk[m]).value
            np.testing.assert_equal(getattr(row, f"rho_eu_risk_shell{s}"), want)
        # task coordinates and bookkeeping
        assert row.dataset == "toy" and row.family == "gp" and row.n_eval == 60
        assert row.fit_time_s >= 0 and row.predict_time_s >= 0
        assert row.udbench_version
        assert row.method_seed == method_seed(row.task_id, row.method, row.config_hash)
    # constant-AU method: rho_au undefined, with the reason stored
    mean_rows = df[df["method"] == "fake-mean"]
    assert mean_rows["rho_au"].isna().all()
    assert mean_rows["metric_notes"].str.contains("rho_au: method's AU is constant in x").all()


def test_rows_are_deterministic(task_dir, tmp_path):
    _run(task_dir, tmp_path / "a", [KnnMethod()])
    _run(task_dir, tmp_path / "b", [KnnMethod()])
    cols = ["cell_key", "method_seed", *METRIC_KEYS]
    a = read_results(tmp_path / "a").sort_values("cell_key")[cols].reset_index(drop=True)
    b = read_results(tmp_path / "b").sort_values("cell_key")[cols].reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)


def test_config_hash_and_seed_depend_on_configuration():
    a, b = resolve_method(KnnMethod(k=4)), resolve_method(KnnMethod(k=5))
    assert a.config_hash != b.config_hash
    assert a.config_hash == resolve_method(KnnMethod(k=4, random_state=9)).config_hash
    assert a.config_hash == config_hash("fake-knn", {"k": 4, "sleep": 0.0, "fail_n_train": -1})
    assert method_seed("t", "fake-knn", a.config_hash) != method_seed(
        "t", "fake-knn", b.config_hash
    )
    assert method_seed("t", "m", "h") == method_seed("t", "m", "h") < 2**32


def test_failing_cell_is_stored_and_run_continues_then_resume_skips(
    task_dir, tmp_path, monkeypatch
):
    out = tmp_path / "res"
    methods = [MeanMethod(), KnnMethod(fail_n_train=30)]
    s1 = _run(task_dir, out, methods)
    assert (s1.n_ok, s1.n_failed) == (3, 1)
    df = read_results(out)
    bad = df[df["status"] == "failed"]
    assert len(bad) == 1
    assert bad["error"].iloc[0] == "fit raised RuntimeError: fake failure on n_train=30"
    assert "RuntimeError" in bad["traceback"].iloc[0]
    # re-run: every cell is finished (the failed one included) -> nothing runs
    s2 = _run(task_dir, out, methods)
    assert (s2.n_skipped, s2.n_ok, s2.n_failed) == (4, 0, 0)
    # retry failed cells once the cause is gone: only that cell runs, its row is replaced
    monkeypatch.setenv("FAKE_KNN_HEAL", "1")
    s3 = _run(task_dir, out, methods, retry_failed=True)
    assert (s3.n_skipped, s3.n_ok, s3.n_failed) == (3, 1, 0)
    df = read_results(out)
    assert len(df) == 4 and df["cell_key"].is_unique and set(df["status"]) == {"ok"}


def test_stopped_run_loses_no_cell_and_resume_runs_each_cell_once(tmp_path, monkeypatch):
    folder = tmp_path / "tasks"
    for seed, n in enumerate((20, 21, 22)):
        save_fake_task(make_fake_task(seed, n_train=n), folder)
    out = tmp_path / "res"
    methods = [KnnMethod()]
    monkeypatch.setenv("FAKE_KNN_INTERRUPT", "22")  # the third task stops the run (Ctrl-C)
    with pytest.raises(KeyboardInterrupt):
        _run(folder, out, methods)
    first = read_results(out)
    assert len(first) == 2 and set(first["status"]) == {"ok"}
    monkeypatch.delenv("FAKE_KNN_INTERRUPT")
    s = _run(folder, out, methods)
    assert (s.n_skipped, s.n_ok, s.n_failed) == (2, 1, 0)
    final = read_results(out)
    assert len(final) == 3 and final["cell_key"].is_unique
    # the two cells of the stopped run were not run again
    kept = final.set_index("cell_key").loc[first["cell_key"], "finished_at"]
    assert list(kept) == list(first["finished_at"])


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("nan", r"invalid prediction: \S+\.predict: parameter 'mean' must contain only finite"),
        ("negative", r"invalid prediction: \S+\.predict: parameter 'epistemic' must be non-neg"),
        ("shape", r"invalid prediction: \S+\.predict: parameter 'mean' must have shape \(60\)"),
    ],
)
def test_invalid_predictions_become_failed_rows(tmp_path, kind, reason):
    folder = tmp_path / "tasks"
    save_fake_task(make_fake_task(0), folder)
    s = _run(folder, tmp_path / "res", [BadMethod(kind=kind)])
    assert (s.n_ok, s.n_failed) == (0, 1)
    assert re.match(reason, s.failures[0][1])  # checked by the runner or by BaseMethod.predict


def test_timeout_is_a_failed_row(tmp_path):
    folder = tmp_path / "tasks"
    save_fake_task(make_fake_task(0), folder)
    s = _run(folder, tmp_path / "res", [KnnMethod(sleep=2.0)], timeout=0.2)
    assert s.n_failed == 1
    assert s.failures[0][1] == "timeout: fit + predict exceeded 0.2 s"


def test_corrupt_task_file_fails_that_task_only(task_dir, tmp_path):
    (task_dir / "broken.npz").write_bytes(b"not a task file")
    s = _run(task_dir, tmp_path / "res", [MeanMethod()])
    assert (s.n_ok, s.n_failed) == (2, 1)
    key, reason = s.failures[0]
    assert key.startswith("broken|fake-mean|")
    assert reason.startswith("task file could not be read: ")


def test_task_arguments(task_dir, tmp_path):
    files = find_task_files([task_dir])
    assert [f.name for f in files] == sorted(f.name for f in task_dir.glob("*.npz"))
    assert find_task_files([str(task_dir / "*s1.npz")]) == [
        task_dir / "toy__gp__homoscedastic__balanced__s1.npz"
    ]
    assert find_task_files([files[0], files[0]]) == [files[0]]
    with pytest.raises(UdbenchError, match=r"be a glob matching task files; got '.*nothing\*.npz'"):
        find_task_files([str(tmp_path / "nothing*.npz")])
    with pytest.raises(UdbenchError, match="be an existing task file, folder or glob"):
        find_task_files([str(tmp_path / "missing.npz")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UdbenchError, match="be a folder holding task files"):
        find_task_files([tmp_path / "empty"])
    with pytest.raises(UdbenchError, match="name at least one task"):
        find_task_files([])


def test_bad_run_arguments(task_dir, tmp_path):
    with pytest.raises(UdbenchError, match=r"'timeout' must be a number of seconds in \(0, "):
        _run(task_dir, tmp_path / "r", [MeanMethod()], timeout=0)
    with pytest.raises(UdbenchError, match="'methods' must name at least one method"):
        _run(task_dir, tmp_path / "r", [])
    with pytest.raises(UdbenchError, match="'methods' must hold only method specs"):
        _run(task_dir, tmp_path / "r", [42])


def test_store_compaction_keeps_everything_and_newest_row_wins(tmp_path):
    store = ResultsStore(tmp_path)
    store.write_cell({"cell_key": "a", "status": "failed", "finished_at": "1", "x": np.nan})
    store.write_cell({"cell_key": "b", "status": "ok", "finished_at": "2", "x": 2.0})
    assert store.compact() == 2
    assert not list(store.cells_dir.glob("*.parquet"))
    store.write_cell({"cell_key": "a", "status": "ok", "finished_at": "3", "x": 1.0})
    df = store.read().set_index("cell_key")
    assert df.loc["a", "status"] == "ok" and df.loc["a", "x"] == 1.0 and len(df) == 2
    assert store.finished(include_failed=False) == {"a", "b"}
    with pytest.raises(UdbenchError, match="hold a 'cell_key' string"):
        store.write_cell({"status": "ok"})
    with pytest.raises(UdbenchError, match="no results stored"):
        read_results(tmp_path / "cells")


def test_store_files_get_the_usual_permissions(tmp_path):
    """Parts and results.parquet are 0o666 less the umask (mkstemp alone would give 0o600)."""
    import os
    import stat

    umask = os.umask(0o022)
    os.umask(umask)
    store = ResultsStore(tmp_path)
    store.write_cell({"cell_key": "a", "status": "ok", "finished_at": "1", "x": 1.0})
    (part,) = store.cells_dir.glob("*.parquet")
    assert stat.S_IMODE(part.stat().st_mode) == 0o666 & ~umask
    store.compact()
    assert stat.S_IMODE((tmp_path / "results.parquet").stat().st_mode) == 0o666 & ~umask


def test_on_cell_callback_sees_every_stored_row_and_the_counts(task_dir, tmp_path):
    calls: list[tuple[int, int, str | None, str | None]] = []

    def on_cell(done, total, row):  # type: ignore[no-untyped-def]
        calls.append((done, total, None if row is None else row["status"], row and row["method"]))

    out = tmp_path / "res"
    summary = _run(task_dir, out, [MeanMethod(), BadMethod(kind="nan")], on_cell=on_cell)
    assert calls[0] == (0, 4, None, None)  # once planned, before any cell
    assert [c[:2] for c in calls[1:]] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    statuses = sorted(c[2] for c in calls[1:])
    assert statuses == ["failed", "failed", "ok", "ok"] and summary.n_failed == 2
    # a re-run has nothing to do: no call at all
    calls.clear()
    _run(task_dir, out, [MeanMethod(), BadMethod(kind="nan")], on_cell=on_cell)
    assert calls == []


def test_the_runner_reads_only_task_files(task_dir, tmp_path):
    """No stand-in format: a file that is not a udbench task file is a failed cell."""
    bogus = task_dir / "bogus.npz"
    np.savez(bogus, X_train=np.zeros((3, 2)))
    s = _run(task_dir, tmp_path / "res", [MeanMethod()])
    assert (s.n_ok, s.n_failed) == (2, 1)
    ((key, reason),) = s.failures
    assert key.startswith("bogus|") and reason.startswith("task file could not be read")
