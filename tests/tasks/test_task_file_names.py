"""A task file named for one task and holding another is refused wherever it is read by path
(issue 68 #2): ``udbench run`` would store it under the held id while the listing shows the
name, and two copies of one instance would merge into one cell without a word."""

from __future__ import annotations

import shutil

import pytest

from _fakes import MeanMethod, make_fake_task, save_fake_task
from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.commands._check import check_tasks
from udbench.evaluation.runner import run_benchmark
from udbench.tasks import Task
from udbench.tasks.discovery import task_identity
from udbench.tasks.taskfile import TaskFileMisnamed, task_id_in_file_name

HELD = "toy__gp__smooth-monotone__balanced__s0"
NAMED = "toy__gp__smooth-monotone__balanced__s1"


@pytest.fixture
def misnamed(tmp_path):
    """The task of seed 0 saved under the name of seed 1, beside the true seed-0 file."""
    folder = tmp_path / "tasks"
    right = save_fake_task(make_fake_task(0), folder)
    wrong = folder / f"{NAMED}.npz"
    shutil.copyfile(right, wrong)
    return folder, right, wrong


def test_the_name_says_a_task_id_only_in_the_task_id_form() -> None:
    assert task_id_in_file_name(f"/x/{NAMED}.npz") == NAMED
    classified = "a__b__gpc-k3-medium__c__d__s12"  # a dataset name may hold "__"
    assert task_id_in_file_name(f"{classified}.npz") == classified
    for name in (
        "broken.npz",
        "my-task.npz",
        f"{NAMED[:-3]}.npz",
        "a__b__c__d__sx.npz",
        "a____c__d__s1.npz",
        "b__c__d__s1.npz",
    ):
        assert task_id_in_file_name(name) is None, name


def test_load_refuses_a_file_named_for_another_task(misnamed) -> None:
    _, right, wrong = misnamed
    assert Task.load(right).spec.task_id == HELD
    with pytest.raises(TaskFileMisnamed) as info:
        Task.load(wrong)
    text = str(info.value)
    assert "\n" not in text
    assert str(wrong) in text and repr(NAMED) in text and repr(HELD) in text
    assert f"rename it to '{HELD}.npz'" in text
    with pytest.raises(TaskFileMisnamed):
        task_identity(wrong)  # not the silent fallback of an unreadable file
    # the resume check of generate compares the content itself (a clash, not an error)
    assert Task.load(wrong, check_name=False).spec.task_id == HELD


def test_a_name_that_is_no_task_id_keeps_working(misnamed, tmp_path) -> None:
    _, right, _ = misnamed
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copyfile(right, mine / "my-task.npz")
    assert task_identity(mine / "my-task.npz")[0] == HELD
    summary = run_benchmark([mine], [MeanMethod()], tmp_path / "res", workers=0)
    assert (summary.n_ok, summary.n_failed) == (1, 0)


def test_run_refuses_the_misnamed_copy_before_any_cell(misnamed, tmp_path) -> None:
    folder, _, wrong = misnamed
    out = tmp_path / "res"
    rule = rf"must hold the task its file name names \('{NAMED}'\)"
    with pytest.raises(UdbenchError, match=rule):
        run_benchmark([folder], [MeanMethod()], out, workers=0)
    with pytest.raises(TaskFileMisnamed, match=HELD):
        run_benchmark([wrong], [MeanMethod()], out, workers=0)
    assert not list(out.glob("**/*.parquet"))  # nothing stored under either id


def test_run_command_refuses_it_in_one_line(misnamed, tmp_path, capsys) -> None:
    folder, _, _ = misnamed
    code = main(["run", str(folder), "-m", "blr", "--workers", "0", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and NAMED in lines[0] and HELD in lines[0]


def test_check_lists_it_as_invalid(misnamed, capsys) -> None:
    folder, right, wrong = misnamed
    right.unlink()  # the fake task has no SPEC §7 checks to pool
    report = check_tasks([folder])
    assert report["families"] == {}
    [bad] = report["invalid"]
    assert bad["path"] == str(wrong) and bad["misnamed"] is True
    assert repr(NAMED) in bad["error"] and repr(HELD) in bad["error"]
    assert main(["check", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "1 of 1 task files are named for another task than they hold" in out
