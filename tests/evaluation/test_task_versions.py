"""Results keyed by what was evaluated: task ids shared by different task files (issue 11 #2)."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from _fakes import KnnMethod, MeanMethod, make_fake_task, save_fake_task
from udbench._validation import UdbenchError
from udbench.evaluation.cell import evaluate_cell
from udbench.evaluation.leaderboard import TaskVersionWarning, leaderboard, select_task_versions
from udbench.evaluation.runner import plan_cells, resolve_method, run_benchmark
from udbench.evaluation.store import read_results


def _run(tasks, out, methods, **kw):
    kw.setdefault("workers", 0)
    return run_benchmark(tasks, methods, out, **kw)


def test_same_task_id_with_other_content_in_one_run_is_an_error(tmp_path) -> None:
    # the same id, other content (another training sample size): as two generated folders
    save_fake_task(make_fake_task(0, n_train=30), tmp_path / "A")
    save_fake_task(make_fake_task(0, n_train=40), tmp_path / "B")
    with pytest.raises(UdbenchError, match=r"task id 'toy__gp__smooth-monotone__balanced__s0'"):
        _run([tmp_path / "A", tmp_path / "B"], tmp_path / "R", [MeanMethod()])
    assert not (tmp_path / "R").exists()  # nothing ran, nothing stored


def test_identical_task_given_twice_runs_once(tmp_path) -> None:
    path = save_fake_task(make_fake_task(0), tmp_path / "A")
    (tmp_path / "B").mkdir()
    shutil.copy(path, tmp_path / "B" / path.name)
    summary = _run([tmp_path / "A", tmp_path / "B"], tmp_path / "R", [MeanMethod(), KnnMethod()])
    assert (summary.n_cells, summary.n_ok) == (2, 2)
    df = read_results(tmp_path / "R")
    assert len(df) == 2 and df["task_sha256"].nunique() == 1


def test_changed_task_file_is_a_new_cell_and_versions_are_not_mixed(tmp_path) -> None:
    folder, out = tmp_path / "tasks", tmp_path / "R"
    save_fake_task(make_fake_task(0, n_train=30), folder)
    save_fake_task(make_fake_task(1, n_train=30), folder)
    methods = [MeanMethod(), KnnMethod(k=4)]
    first = _run([folder], out, methods)
    assert (first.n_cells, first.n_ok) == (4, 4)
    assert _run([folder], out, methods).n_skipped == 4  # unchanged files: all finished
    # task 0 generated again with other settings: same id, other content
    save_fake_task(make_fake_task(0, n_train=45), folder)
    again = _run([folder], out, methods)
    assert (again.n_cells, again.n_skipped, again.n_ok) == (4, 2, 2)
    df = read_results(out)
    assert len(df) == 6  # both versions kept: nothing is overwritten
    versions = df.groupby("task_id")["task_sha256"].nunique().to_dict()
    assert versions == {
        "toy__gp__smooth-monotone__balanced__s0": 2,
        "toy__gp__smooth-monotone__balanced__s1": 1,
    }
    new = df[df["task_sha256"] == df["task_sha256"].iloc[-1]]
    assert set(new["n_train"]) == {45}
    with pytest.warns(TaskVersionWarning, match=r"1 task\(s\).*setting aside 2 row"):
        board = leaderboard(df, n_resamples=50)
    # two instances per method (one version each), not three
    assert board["n_valid"].tolist() == [2, 2]
    used, note = select_task_versions(df)
    assert note is not None and set(used.loc[used["task_id"].str.endswith("s0"), "n_train"]) == {45}


def test_select_task_versions_keeps_the_newest_and_legacy_rows_as_one_version() -> None:
    df = pd.DataFrame(
        {
            "task_id": ["t1", "t1", "t1", "t2", "t2"],
            "task_sha256": [None, "aa", "aa", None, None],
            "finished_at": ["2026-01-01", "2026-02-01", "2026-02-02", "2026-01-01", "2026-01-03"],
            "x": [1, 2, 3, 4, 5],
        }
    )
    used, note = select_task_versions(df)
    assert used["x"].tolist() == [2, 3, 4, 5]  # t1: the checksummed rows are newer; t2: one version
    assert note is not None and "'t1'" in note and "1 row(s)" in note
    same, none = select_task_versions(df[df["task_id"] == "t2"])
    assert none is None and len(same) == 2


def test_cell_of_a_file_changed_after_planning_fails_clearly(tmp_path) -> None:
    path = save_fake_task(make_fake_task(0, n_train=30), tmp_path)
    mc = resolve_method(MeanMethod())
    (cell,), _ = plan_cells([path], [mc])
    assert cell.task_sha256 is not None and cell.key.endswith("|" + cell.task_sha256[:16])
    save_fake_task(make_fake_task(0, n_train=31), tmp_path)
    row = evaluate_cell(cell).row
    assert row["status"] == "failed" and "changed since the run was planned" in row["error"]
    assert np.isnan(row["rho_eu_risk"])
