"""The Python API checks numbers and types where they enter (issue 31, item 5): a string or a
path is one argument, never a sequence of characters; a count out of bounds is refused in one
line naming the parameter; one table of bad values per public function."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from udbench._validation import MAX_WORKERS_PER_CORE, UdbenchError, usable_core_count
from udbench.evaluation.loss_rescoring import score_results
from udbench.evaluation.runner import run_benchmark
from udbench.execution.executor import Executor
from udbench.methods.configs import resolve_methods
from udbench.methods.registry import make_method
from udbench.tasks.discovery import find_task_files
from udbench.tuning.sweep import tune

TOO_MANY = MAX_WORKERS_PER_CORE * usable_core_count() + 1


@pytest.fixture
def empty(tmp_path) -> Path:
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder


def _cases(empty: Path, out: Path):
    """(function, args, kwargs, regex the one-line message must match)."""
    folder_error = rf"be a folder holding task files.*{empty.name}"
    run = run_benchmark
    return [
        # strings and paths are one argument (before: the string's characters, then "/")
        (run, (str(empty), "blr", out), {}, folder_error),
        (run, (empty, "blr", out), {}, folder_error),
        (run, ([str(empty)], ["blr"], out), {}, folder_error),
        (run, (str(empty), "blr", out), {"losses": "crps"}, folder_error),
        (run, (5, "blr", out), {}, r"'tasks' must be one or a sequence of task files"),
        (run, ([5], "blr", out), {}, r"'tasks' must hold only task files.*an item 5"),
        (run, (str(empty), 5, out), {}, r"'methods' must be one or a sequence of method specs"),
        (run, (str(empty), ["blr", 3.0], out), {}, r"'methods' must hold only method specs"),
        (run, (str(empty), "blr", [out]), {}, r"'out' must be a folder"),
        (run, (str(empty), "blr", out), {"losses": 3}, r"'losses' must be one or a sequence"),
        (run, (str(empty), "blr", out), {"losses": "nope"}, r"'loss' must be one of.*'nope'"),
        (run, (str(empty), "blr", out), {"workers": TOO_MANY}, r"'workers' must be an integer"),
        (run, (str(empty), "blr", out), {"workers": -1}, r"'workers' must be an integer from 0"),
        (run, (str(empty), "blr", out), {"workers": True}, r"'workers' must be an integer"),
        (run, (str(empty), "blr", out), {"workers": 2.5}, r"'workers' must be an integer"),
        (run, (str(empty), "blr", out), {"timeout": 1e308}, r"'timeout' must be a number"),
        (run, (str(empty), "blr", out), {"timeout": float("nan")}, r"'timeout' must be"),
        (run, (str(empty), "blr", out), {"timeout": 0}, r"'timeout' must be"),
        (run, (str(empty), "blr", out), {"timeout": "10"}, r"'timeout' must be"),
        (tune, (str(empty), "blr", out), {}, folder_error),
        (tune, (str(empty), "blr", out), {"trials": 0}, r"'trials' must be an integer >= 1"),
        (tune, (str(empty), "blr", out), {"seed": -1}, r"'seed' must be an integer from 0"),
        (tune, (str(empty), "blr", out), {"seed": 2**40}, r"'seed' must be an integer from 0"),
        (tune, (str(empty), "blr", out), {"in_flight": 0}, r"'in_flight' must be an integer"),
        (tune, (str(empty), "blr", out), {"timeout": 1e308}, r"'timeout' must be a number"),
        (tune, (str(empty), "blr", out), {"workers": TOO_MANY}, r"'workers' must be an integer"),
        (score_results, (empty, "crps"), {}, r"no results stored"),
        (score_results, (empty, 7), {}, r"'losses' must be one or a sequence"),
        (score_results, (empty, "c"), {}, r"'--loss' must be one of.*'c'"),
        (Executor, (), {"workers": TOO_MANY}, r"Executor: parameter 'workers'.*usable cores"),
        (find_task_files, (str(empty),), {}, folder_error),
        (find_task_files, ({"a": 1},), {}, r"'tasks' must be one or a sequence"),
    ]


def test_bad_arguments_of_public_functions_are_refused_in_one_line(empty, tmp_path) -> None:
    bad = []
    for fn, args, kwargs, pattern in _cases(empty, tmp_path / "out"):
        try:
            fn(*args, **kwargs)
        except UdbenchError as err:
            text = str(err)
            import re

            if "\n" in text or not re.search(pattern, text):
                bad.append(f"{fn.__name__}{args!r} {kwargs}: {text!r} (wanted {pattern!r})")
        except Exception as err:  # a raw error is a failure of the check
            bad.append(f"{fn.__name__}{args!r} {kwargs}: raw {type(err).__name__}: {err}")
        else:
            bad.append(f"{fn.__name__}{args!r} {kwargs}: accepted")
    assert not bad, "\n".join(bad)
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_one_string_is_one_method() -> None:
    # before: methods="blr" resolved 'b', 'l', 'r' ("got 'b'")
    (one,) = resolve_methods("blr")
    assert one.name == "blr" and one.label == "blr"
    (inst,) = resolve_methods(make_method("blr"))
    assert inst.name == "blr"
    assert [m.label for m in resolve_methods(["blr", ("mine", "blr:alpha_1=2e-6")])] == [
        "blr",
        "mine",
    ]


@pytest.mark.parametrize(("where", "scale"), [("X", 1e300), ("y", 1e300), ("X", -1e200)])
def test_inputs_whose_squares_overflow_are_refused_by_name(where, scale) -> None:
    # before: BLR on 1e300-scaled targets raised a raw OverflowError, on inputs gave NaN
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 3)), rng.normal(size=30)
    if where == "X":
        X = X * scale
    else:
        y = y * scale
    with pytest.raises(UdbenchError, match=rf"BLR: parameter '{where}' must have entries of"):
        make_method("blr").fit(X, y)
    fitted = make_method("blr").fit(rng.normal(size=(30, 3)), rng.normal(size=30))
    with pytest.raises(UdbenchError, match="must have entries of magnitude <= 1e"):
        fitted.predict(np.full((2, 3), 1e200))
