"""End to end on the embedded diabetes table: generate_task, determinism, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from udbench.cli import main
from udbench.tasks import Task, TaskSpec, generate_task
from udbench.tasks.generate import get_prior


@pytest.fixture(scope="module", autouse=True)
def _cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("UDBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    mp.delenv("UDBENCH_DATA_DIR", raising=False)  # diabetes is embedded
    get_prior.cache_clear()
    yield
    get_prior.cache_clear()
    mp.undo()


def _spec(**kw) -> TaskSpec:
    base = {
        "dataset": "diabetes",
        "family": "gp",
        "noise": "u-shaped",
        "coverage": "ood",
        "seed": 0,
        "fidelity": "smoke",
        "n_draws": 100,
    }
    return TaskSpec(**{**base, **kw})


def test_generate_task_diabetes_shapes_and_checks(tmp_path) -> None:
    task = generate_task(_spec())
    n, m = 150, 221
    assert task.X_train.shape == (n, 10) and task.draws.shape == (100, m)
    assert task.draws_train is None  # the GP's default (schema 2)
    kept = generate_task(_spec(), draws_train=True)
    assert kept.draws_train.shape == (100, n) and kept.draws_train.dtype == np.float32
    np.testing.assert_array_equal(kept.draws, task.draws)
    assert set(task.shell_eval) <= {0, 1, 2, 3, 4}
    assert not np.any(task.shell_eval[np.isin(task.eval_idx, task.train_idx)])
    assert not np.intersect1d(task.eval_idx, task.train_idx).size
    # ood: no training input from the outermost shell is visible via noise/shells of eval only;
    # the noise mean over the evaluation pool is rho = 0.3 (SPEC §4)
    assert task.noise_var_eval.mean() == pytest.approx(0.3)
    assert task.diagnostics["checks"]["corr_mean_fstar"] > 0.5
    assert task.prior["scale"] > 0 and task.prior["fidelity"] == "smoke"
    a = task.save(tmp_path / "a.npz").read_bytes()
    assert generate_task(_spec()).save(tmp_path / "b.npz").read_bytes() == a


def test_changing_any_coordinate_changes_fstar_and_sample() -> None:
    base = generate_task(_spec())
    for change in ({"noise": "step"}, {"coverage": "balanced"}, {"seed": 1}):
        other = generate_task(_spec(**change))
        assert not np.allclose(other.f_eval, base.f_eval)
        assert not np.array_equal(other.train_idx, base.train_idx) or not np.allclose(
            other.y_train, base.y_train
        )
        assert not np.array_equal(other.train_idx, base.train_idx)


def test_cli_generate_skip_and_check(tmp_path, capsys) -> None:
    args = [
        "generate",
        "--datasets",
        "diabetes",
        "--families",
        "gp",
        "--noise",
        "homoscedastic",
        "--coverage",
        "balanced",
        "--seeds",
        "0-1",
        "--draws",
        "60",
        "--fidelity",
        "smoke",
        "--out",
        str(tmp_path),
    ]
    assert main(args) == 0
    files = sorted(tmp_path.glob("*.npz"))
    assert [f.name for f in files] == [
        "diabetes__gp__homoscedastic__balanced__s0.npz",
        "diabetes__gp__homoscedastic__balanced__s1.npz",
    ]
    mtimes = [f.stat().st_mtime_ns for f in files]
    assert main(args) == 0  # valid files are skipped
    assert [f.stat().st_mtime_ns for f in files] == mtimes
    capsys.readouterr()
    assert main(["check", str(tmp_path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    keys = {
        "n_instances",
        "coverage_90",
        "coverage_90_ci",
        "sbc_max_bin_deviation",
        "mcse_var_median",
        "mcse_var_p95",
        "corr_mean_fstar_median",
    }
    assert result["invalid"] == []
    gp = result["families"]["gp"]
    assert keys <= set(gp) and gp["n_instances"] == 2
    assert Task.load(files[0]).draws.shape == (60, 221)
    assert main(["check", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    assert "gp" in table and "coverage" in table


def test_cli_errors_are_one_line(tmp_path, capsys) -> None:
    assert main(["generate", "--seeds", "3-1", "--out", str(tmp_path)]) == 2
    assert "seeds" in capsys.readouterr().err
    assert main(["generate", "--noise", "loud", "--out", str(tmp_path)]) == 2
    assert main(["check", str(tmp_path / "nothing")]) == 2
