"""Messages that blame the right thing, with a remedy that works (issue: what udbench *says*).

Each case once printed a message about something else: an all-empty column reported as "no
non-constant covariate" with the name cut; an unreadable task file as "truncated or corrupt
… regenerate them"; an unreadable folder as "not a folder holding task files"; ``udbench
score`` from another folder as "task file: no such file" when no prediction was kept;
"the next run moves it to quarantine" from a run that then moved nothing.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _fakes import KnnMethod, MeanMethod, make_fake_task, save_fake_task
from udbench.cli import main
from udbench.evaluation.losses import loss_column
from udbench.evaluation.runner import run_benchmark
from udbench.evaluation.store import ResultsStore, read_results


def _one_line(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------ datasets add: empty data
@pytest.fixture
def data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UDBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "data").mkdir()
    return tmp_path


def _table(folder: Path, n: int = 240) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.uniform(size=(n, 3)), columns=["dose", "ratio", "temperature"])
    frame["y"] = rng.normal(size=n)
    return frame


def _add(folder: Path, frame: pd.DataFrame, capsys, *extra: str) -> str:
    path = folder / "t.csv"
    frame.to_csv(path, index=False)
    assert main(["datasets", "add", str(path), "--name", "mine", *extra]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "Traceback" not in err and err.count("error:") == 1
    return err


def test_an_all_empty_covariate_is_named_whole_with_the_drop_that_fixes_it(data_folder, capsys):
    frame = _table(data_folder)
    frame["almost_a_long_column_name"] = np.nan
    err = _add(data_folder, frame, capsys)
    assert "'almost_a_long_column_name' hold no value" in err
    assert "would drop all 240 rows" in err and "--drop almost_a_long_column_name" in err
    assert "non-constant" not in err
    frame["almost_a_long_column_name"] = "?"  # '?' counts as missing (SPEC §2)
    assert "--drop almost_a_long_column_name" in _add(data_folder, frame, capsys)


def test_an_all_empty_target_and_a_header_only_table(data_folder, capsys):
    frame = _table(data_folder)
    frame["y"] = np.nan
    err = _add(data_folder, frame, capsys, "--target", "y")
    assert "the --target column 'y' holds no value" in err and "name another --target" in err
    err = _add(data_folder, _table(data_folder).iloc[:0], capsys)
    assert "holds no data rows (a header only)" in err


def test_every_row_missing_something_says_so(data_folder, capsys):
    frame = _table(data_folder, n=240)
    frame.loc[::2, "dose"] = np.nan
    frame.loc[1::2, "ratio"] = np.nan
    err = _add(data_folder, frame, capsys)
    assert "every one of the 240 rows has a missing value" in err
    assert "dose 50%, ratio 50%" in err


def test_all_covariates_constant_names_every_one(data_folder, capsys):
    frame = _table(data_folder)
    frame["dose"], frame["ratio"], frame["temperature"] = 3.7, 1.0, 20.0
    err = _add(data_folder, frame.drop(columns="y"), capsys)
    assert "every covariate is constant" in err
    assert "dose = 3.7, ratio = 1, temperature = 20" in err


# ------------------------------------------------------------ unreadable files and folders
@pytest.fixture
def deny_read(monkeypatch: pytest.MonkeyPatch):
    """Make a path unreadable: chmod 000 (a folder: its listing), or, where that does not stop
    this user (root), refuse to open or list it as the system would (EACCES)."""
    changed: list[tuple[Path, int]] = []

    def deny(path: Path) -> None:
        if os.geteuid() != 0:
            changed.append((path, path.stat().st_mode))
            path.chmod(0)
            return
        target = str(path)
        refuse = PermissionError(13, "Permission denied", target)
        if path.is_dir():
            scandir = os.scandir

            def guarded_scandir(p: object = ".") -> object:
                if os.fspath(p) == target:  # type: ignore[call-overload]
                    raise refuse
                return scandir(p)  # type: ignore[call-overload]

            monkeypatch.setattr(os, "scandir", guarded_scandir)
        else:
            opener = io.open

            def guarded_open(file: object, *args: object, **kwargs: object) -> object:
                if isinstance(file, str | os.PathLike) and os.fspath(file) == target:
                    raise refuse
                return opener(file, *args, **kwargs)  # type: ignore[call-overload]

            monkeypatch.setattr(io, "open", guarded_open)

    yield deny
    for path, mode in changed:
        path.chmod(mode)


def test_an_unreadable_task_file_is_a_permission_problem_not_corruption(
    tmp_path, deny_read, capsys
):
    tasks = tmp_path / "tasks"
    save_fake_task(make_fake_task(0), tasks)
    bad = save_fake_task(make_fake_task(1), tasks)
    deny_read(bad)
    assert main(["check", str(bad)]) == 1
    out = _one_line(capsys.readouterr().out)
    assert "cannot be read (Permission denied)" in out and "chmod u+r" in out
    assert "1 of 1 task files cannot be read by this user" in out
    assert "corrupt" not in out and "regenerate" not in out
    # run: the cell is failed with the same cause
    run_benchmark([tasks], [MeanMethod()], tmp_path / "res", workers=0)
    rows = read_results(tmp_path / "res")
    failed = rows[rows["status"] == "failed"]
    assert len(failed) == 1 and "cannot be read (Permission denied)" in failed["error"].iloc[0]


def test_an_unreadable_task_folder_is_named_with_the_reason(tmp_path, deny_read, capsys):
    tasks = tmp_path / "tasks"
    save_fake_task(make_fake_task(0), tasks / "inner")
    deny_read(tasks / "inner")
    assert main(["check", str(tasks)]) == 2
    err = _one_line(capsys.readouterr().err)
    assert f"the folder '{tasks / 'inner'}' (under the task folder '{tasks}') cannot be read" in err
    assert "(Permission denied)" in err and "chmod u+rx" in err
    assert "holding task files" not in err


# ------------------------------------------------------------------- paths from anywhere
@pytest.fixture
def relative_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A run started inside ``tmp_path/work`` with relative task and results paths."""
    work = tmp_path / "work"
    for seed in range(2):
        save_fake_task(make_fake_task(seed), work / "tasks")
    monkeypatch.chdir(work)

    def run(keep: bool) -> Path:
        out = "res-kept" if keep else "res"
        methods = [MeanMethod(), KnnMethod()]
        run_benchmark(["tasks"], methods, out, workers=0, keep_predictions=keep)
        return work / out

    return work, run


def test_results_store_task_paths_that_work_from_any_folder(relative_run, tmp_path, monkeypatch):
    _, run = relative_run
    res = run(keep=True)
    stored = pd.read_parquet(res / "results.parquet")["task_path"]
    assert all(os.path.isabs(p) and Path(p).is_file() for p in stored)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["score", str(res), "--loss", "crps"]) == 0
    assert read_results(res)[loss_column("rho_eu_var", "crps")].notna().all()


def test_old_relative_task_paths_still_read(relative_run, tmp_path, monkeypatch):
    work, run = relative_run
    res = run(keep=True)
    # rows of an older udbench: the path as given, relative to where the run started
    table = pd.read_parquet(res / "results.parquet")
    table["task_path"] = [os.path.relpath(p, work) for p in table["task_path"]]
    assert table["task_path"].str.startswith("tasks/").all()
    table.to_parquet(res / "results.parquet", index=False)
    monkeypatch.chdir(tmp_path)  # another folder: found through the results folder's parent
    paths = read_results(res)["task_path"]
    assert paths.map(lambda p: Path(p).is_file()).all()
    assert set(paths) == {str(work / "tasks" / p.name) for p in (work / "tasks").glob("*.npz")}


def test_moved_tasks_are_found_with_tasks_option(relative_run, tmp_path, monkeypatch, capsys):
    work, run = relative_run
    res = run(keep=True)
    (work / "tasks").rename(tmp_path / "moved")
    assert main(["score", str(res), "--loss", "crps"]) == 3
    out = _one_line(capsys.readouterr().out)
    assert "not found (moved or deleted since the run)" in out and "with --tasks" in out
    assert main(["score", str(res), "--loss", "crps", "--tasks", str(tmp_path / "moved")]) == 0
    assert "4 scored" in capsys.readouterr().out


def test_score_without_kept_predictions_says_so_from_any_folder(
    relative_run, tmp_path, monkeypatch, capsys
):
    _, run = relative_run
    res = run(keep=False)
    monkeypatch.chdir(tmp_path)
    assert main(["score", str(res), "--loss", "crps"]) == 3
    out = _one_line(capsys.readouterr().out)
    assert "predictions not kept (run with --keep-predictions)" in out
    assert "4 cell(s) were run without --keep-predictions, so there is nothing to score" in out
    assert "no such file" not in out and "task file" not in out


# ----------------------------------------------------------------------- quarantine promise
def test_a_run_with_nothing_to_compute_moves_a_bad_part_as_it_says(tmp_path, capsys):
    save_fake_task(make_fake_task(0), tmp_path / "tasks")
    out = tmp_path / "res"
    args = ["run", str(tmp_path / "tasks"), "-m", "_fakes:MeanMethod", "--out", str(out)]
    assert main([*args, "-w", "0", "--no-progress"]) == 0
    bad = ResultsStore(out).cells_dir / "broken.parquet"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_bytes(b"not parquet")
    capsys.readouterr()
    assert main([*args, "-w", "0", "--no-progress"]) == 0
    err = _one_line(capsys.readouterr().err)
    assert "moves it to" in err and "as it ends" in err
    assert not bad.exists()
    assert (ResultsStore(out).cells_dir / "quarantine" / "broken.parquet").is_file()
    assert "moved unusable part file" in err
