"""Degenerate classification instances: training labels of fewer than K classes.

A ``gpc`` draw can put one class above the others at every training input (found on
clf-small: concrete, homoscedastic, ood, seed 4 holds 348 labels of class 0 and none of the
others). The instance stays valid; ``udbench check`` lists it and every classifier cell on
it says so in its row's notes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from _fakes import toy_gpc_task
from udbench._validation import UdbenchError
from udbench.commands.tasks import check_tasks
from udbench.evaluation.runner import run_benchmark
from udbench.evaluation.store import read_results
from udbench.tasks.checks import missing_training_classes


def test_missing_training_classes_by_hand() -> None:
    assert missing_training_classes(np.array([0, 2, 2, 0]), 3) == [1]
    assert missing_training_classes(np.array([1, 1, 1]), 4) == [0, 2, 3]
    assert missing_training_classes(np.array([0, 1]), 2) == []
    with pytest.raises(UdbenchError, match=r"y_train.*0 … 2.*labels 0 … 3"):
        missing_training_classes(np.array([0, 3]), 3)
    with pytest.raises(UdbenchError, match=r"n_classes.*>= 2"):
        missing_training_classes(np.array([0, 0]), 1)


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> dict[str, Path]:
    """Two toy gpc tasks (K = 3): one with training labels of every class, one whose
    training labels are all class 0 (set by hand, then saved with fresh checksums)."""
    folder = tmp_path_factory.mktemp("gpc")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("UDBENCH_CACHE_DIR", str(folder / "cache"))
        whole = toy_gpc_task(3, 20, 30)
        whole.y_train[:3] = [0, 1, 2]  # every class present
        one = toy_gpc_task(3, 20, 30)
        one.y_train[:] = 0
    return {
        "whole": whole.save(folder / "whole" / f"{whole.spec.task_id}.npz"),
        "one": one.save(folder / "one" / f"{one.spec.task_id}.npz"),
    }


def test_check_lists_a_task_whose_training_labels_lack_classes(tasks) -> None:
    report = check_tasks([tasks["one"]])
    (entry,) = report["degenerate"]
    assert entry["missing_classes"] == [1, 2] and entry["n_classes"] == 3
    assert report["families"]["gpc"]["n_instances"] == 1  # still pooled
    assert check_tasks([tasks["whole"]])["degenerate"] == []


def test_a_cell_on_a_degenerate_task_notes_it(tasks, tmp_path) -> None:
    notes = {}
    for name, path in tasks.items():  # one task id: separate results folders
        summary = run_benchmark([path], ["logreg-lap:n_samples=50"], tmp_path / name, workers=0)
        assert summary.n_failed == 0
        (note,) = read_results(tmp_path / name)["metric_notes"].fillna("")
        notes[name] = note
    assert "training labels hold 1 of 3 classes" in notes["one"]
    assert "training labels hold" not in notes["whole"]
