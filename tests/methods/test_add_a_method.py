"""Adding a method is one module: a toy method written as ONE module in a temporary package,
registered by the documented user path (docs/methods.md, "Adding a method"), is registered,
listed, battery-checked and runnable without touching any other file."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pandas as pd
import pytest

from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.methods import (
    REGISTRY,
    get_method_class,
    list_methods,
    make_method,
    parametrize_with_checks,
    registered_methods,
)
from udbench.methods.conformance import CHECKS, ConformanceCheck
from udbench.tasks import Task, TaskSpec

# The whole method: bootstrap least-squares members (closed-form fits, so it is fast).
TOY_MODULE = textwrap.dedent(
    '''
    """A toy UQ method: an ensemble of least-squares lines on bootstrap resamples."""

    from typing import Any, ClassVar

    import numpy as np

    from udbench.methods import BaseMethod, Prediction


    class ToyOLS(BaseMethod):
        name: ClassVar[str] = "toy-ols"
        family: ClassVar[str] = "linear"
        constant_aleatoric: ClassVar[bool] = True
        epistemic_from: ClassVar[str] = "samples"
        description: ClassVar[str] = "Bootstrap least-squares ensemble (a test's toy)"
        search_space: ClassVar[dict[str, dict[str, Any]]] = {
            "n_members": {"type": "int", "low": 2, "high": 20}
        }
        param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
            "n_members": {"type": "int", "low": 2}
        }
        smoke_params: ClassVar[dict[str, Any]] = {"n_members": 4}

        def __init__(self, n_members: int = 8, random_state: int | None = 0) -> None:
            self.n_members = n_members
            self.random_state = random_state

        def _fit(self, X, y):
            A = np.column_stack([np.ones(len(X)), X])
            rng = self._rng("bootstrap")
            rows = rng.integers(0, len(X), size=(self.n_members, len(X)))
            self.coef_ = np.stack([np.linalg.lstsq(A[r], y[r], rcond=None)[0] for r in rows])
            full = np.linalg.lstsq(A, y, rcond=None)[0]
            self.noise_var_ = float(np.mean((y - A @ full) ** 2))

        def _predict(self, X):
            members = np.column_stack([np.ones(len(X)), X]) @ self.coef_.T  # (m, M)
            return Prediction(
                mean=members.mean(axis=1),
                aleatoric=np.full(len(X), self.noise_var_),
                epistemic=members.var(axis=1),
            )
    '''
)


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy as ``toyplug/toy_ols.py`` (one file, a namespace package) on sys.path,
    registered through ``UDBENCH_METHODS``; no file of udbench is written."""
    package = tmp_path / "toyplug"
    package.mkdir()
    (package / "toy_ols.py").write_text(TOY_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("UDBENCH_METHODS", "toy-ols=toyplug.toy_ols:ToyOLS")
    return tmp_path


def _task(tmp_path) -> Task:
    """A tiny instance in the real task-file format (posterior draws: a Gaussian around f)."""
    rng = np.random.default_rng(7)
    n, n_eval, d, n_draws = 25, 30, 2, 40
    X = rng.uniform(size=(n + n_eval, d))
    f = 2.0 * X[:, 0] - X[:, 1]
    noise_var = np.full(n + n_eval, 0.05)
    post_var = 0.01 + 0.1 * X[n:, 0] ** 2
    post_mean = f[n:] + 0.05 * rng.standard_normal(n_eval)
    draws = post_mean + np.sqrt(post_var) * rng.standard_normal((n_draws, n_eval))
    arrays = {
        "X_train": X[:n],
        "y_train": f[:n] + np.sqrt(noise_var[:n]) * rng.standard_normal(n),
        "train_idx": np.arange(n, dtype=np.int64),
        "noise_var_train": noise_var[:n],
        "f_train": f[:n],
        "X_eval": X[n:],
        "eval_idx": np.arange(n, n + n_eval, dtype=np.int64),
        "noise_var_eval": noise_var[n:],
        "f_eval": f[n:],
        "post_mean": post_mean,
        "post_var": post_var,
        "shell_eval": np.arange(n_eval, dtype=np.int64) % 5,
        "sbc_rank": (draws < f[n:]).sum(axis=0).astype(np.int64),
        "mcse_var_rel": np.zeros(n_eval),
        "draws": draws,
    }
    spec = TaskSpec("toy", "gp", "homoscedastic", "balanced", 0, fidelity="smoke", n_draws=n_draws)
    return Task(spec, arrays, diagnostics={}, prior={"family": "gp"})


def test_toy_method_is_registered_listed_checked_and_runnable(toy, capsys):
    # registered: by name, next to udbench's own (which are unchanged)
    cls = get_method_class("toy-ols")
    assert cls.__module__ == "toyplug.toy_ols" and cls.__name__ == "ToyOLS"
    assert registered_methods() == {**REGISTRY, "toy-ols": "toyplug.toy_ols:ToyOLS"}
    assert make_method("toy-ols:n_members=3").n_members == 3

    # listed: `udbench methods` shows the class's own flags and description
    assert main(["methods", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    from udbench.methods.classifiers import CLASSIFIERS

    assert list(rows) == [*REGISTRY, "toy-ols", *CLASSIFIERS]  # classifiers: their own rows
    assert rows["toy-ols"] == {
        "name": "toy-ols",
        "target": "toyplug.toy_ols:ToyOLS",
        "family": "linear",
        "constant_aleatoric": True,
        "epistemic_from": "samples",
        "description": "Bootstrap least-squares ensemble (a test's toy)",
        "available": True,
        "error": None,
        "source": "UDBENCH_METHODS",
        "task_type": "regression",
    }
    assert main(["methods"]) == 0
    assert "toy-ols" in capsys.readouterr().out
    assert main(["methods", "--markdown"]) == 0
    assert "| `toy-ols` | `toyplug.toy_ols:ToyOLS` | linear | constant | samples |" in (
        capsys.readouterr().out
    )

    # battery-checked: the CLI, and the pytest helper's cases run one by one
    assert main(["check-method", "toy-ols"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == (
        f"toy-ols: {len(CHECKS)} passed, 0 failed, 0 skipped"
    )
    mark = parametrize_with_checks(["toy-ols"])
    argnames, cases = mark.args
    assert argnames == ("method", "check")
    assert [c.id for c in cases] == [f"toy-ols-{name}" for name in CHECKS]
    for case in cases:
        method, check = case.values
        assert check(method).status == "passed"

    # runnable: `udbench run` on a tiny task, in this process
    task = _task(toy)
    task_path = toy / "tasks" / f"{task.spec.task_id}.npz"
    task.save(task_path)
    out = toy / "results"
    assert main(["run", str(task_path), "-m", "toy-ols", "--workers", "0", "--out", str(out)]) == 0
    capsys.readouterr()
    from udbench.evaluation.store import read_results

    results = read_results(out)
    assert isinstance(results, pd.DataFrame) and len(results) == 1
    row = results.iloc[0]
    assert row["method"] == "toy-ols" and row["status"] == "ok"
    assert bool(row["constant_aleatoric"]) is True
    # the stored mean prediction is the toy's own: RMSE vs f* of a fitted line, not a failure
    assert 0.0 < float(row["rmse"]) < 0.5


def test_toy_registered_by_entry_point(tmp_path, monkeypatch):
    """An installed package registers methods in the entry-point group ``udbench.methods``."""
    package = tmp_path / "toyplug"
    package.mkdir()
    (package / "toy_ols.py").write_text(TOY_MODULE, encoding="utf-8")
    dist = tmp_path / "toyplug-0.1.dist-info"  # what `pip install` writes for the package
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toyplug\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[udbench.methods]\ntoy-ols = toyplug.toy_ols:ToyOLS\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("UDBENCH_METHODS", raising=False)
    assert get_method_class("toy-ols").__name__ == "ToyOLS"
    info = {i.name: i for i in list_methods()}["toy-ols"]
    assert info.available and info.source == "entry point toyplug"
    assert (info.family, info.constant_aleatoric) == ("linear", True)


def test_user_registration_errors(toy, monkeypatch):
    # a user name cannot take one of udbench's: listed as unavailable, udbench's gp unchanged
    monkeypatch.setenv(
        "UDBENCH_METHODS", "gp=toyplug.toy_ols:ToyOLS, toy-ols=toyplug.toy_ols:ToyOLS"
    )
    infos = list_methods()
    clash = [i for i in infos if i.source == "UDBENCH_METHODS" and i.name == "gp"]
    assert len(clash) == 1 and not clash[0].available
    assert clash[0].error == "UDBENCH_METHODS: method name 'gp' is already registered by udbench"
    assert get_method_class("gp").__module__ == "udbench.methods.gp"
    # the registered name must be the class's `name` (results are stored under it)
    monkeypatch.setenv("UDBENCH_METHODS", "other=toyplug.toy_ols:ToyOLS")
    with pytest.raises(UdbenchError, match=r"registered as 'other' but its class attribute 'name'"):
        get_method_class("other")
    assert not {i.name: i for i in list_methods()}["other"].available
    # a malformed entry is a clear error naming the variable and the entry
    monkeypatch.setenv("UDBENCH_METHODS", "toyplug.toy_ols:ToyOLS")
    with pytest.raises(
        UdbenchError,
        match=r"UDBENCH_METHODS: parameter 'entry' must be 'name=package.module:ClassName'; "
        r"got 'toyplug.toy_ols:ToyOLS'",
    ):
        list_methods()


def test_parametrize_with_checks_cases_and_errors():
    from methods_plugin_example import BrokenFlag, KNNEnsemble

    mark = parametrize_with_checks(
        ["blr", KNNEnsemble], checks=("clone", "constant_aleatoric_flag"), random_state=3
    )
    argnames, cases = mark.args
    assert argnames == ("method", "check")
    assert [c.id for c in cases] == [
        "blr-clone",
        "blr-constant_aleatoric_flag",
        "knn-ens-clone",
        "knn-ens-constant_aleatoric_flag",
    ]
    assert cases[2].values == (KNNEnsemble, ConformanceCheck("clone", {}, 3))
    # a skipped check is pytest's skip with the reason; a failed one an AssertionError
    method, check = cases[3].values
    with pytest.raises(pytest.skip.Exception, match="constant_aleatoric=False"):
        check(method)
    with pytest.raises(AssertionError, match=r"check 'constant_aleatoric_flag' failed: declares"):
        ConformanceCheck("constant_aleatoric_flag")(BrokenFlag)
    with pytest.raises(UdbenchError, match=r"'checks' must contain names from"):
        parametrize_with_checks(["blr"], checks=("no_such_check",))
    with pytest.raises(UdbenchError, match=r"parameter 'name' must be one of"):
        parametrize_with_checks(["no-such-method"])
    with pytest.raises(UdbenchError, match=r"'methods' must contain method names"):
        parametrize_with_checks([dict])  # type: ignore[list-item]


def test_pytest_is_imported_only_by_the_helper():
    import subprocess
    import sys

    code = (
        "import sys, udbench.methods, udbench.methods.conformance, udbench.cli; "
        "print('pytest' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
