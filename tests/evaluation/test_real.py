"""The runner on real task files (``udbench.tasks.Task``) and registered methods, via the CLI.

Fast tests write small synthetic instances in the real task-file format (so they need no prior
fit); the slow ones generate real GP tasks on the embedded diabetes table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from _fakes import make_fake_task
from udbench.cli import main
from udbench.evaluation.metrics import instance_metrics
from udbench.evaluation.runner import METRIC_KEYS, run_benchmark
from udbench.evaluation.store import ResultsStore, read_results
from udbench.methods import REGISTRY, get_method_class, make_method
from udbench.methods.base import Prediction
from udbench.risk import oracle_targets
from udbench.tasks import Task, TaskSpec, generate_task

D = 40  # posterior draws per synthetic task (TaskSpec's minimum)


def _real_format_task(seed: int, noise: str) -> Task:
    """A tiny instance with the fake's arrays as a real Task (draws: its Gaussian posterior)."""
    fake = make_fake_task(seed, noise=noise)
    rng = np.random.default_rng(seed)
    draws = fake.post_mean + np.sqrt(fake.post_var) * rng.standard_normal((D, fake.post_mean.size))
    arrays = {k: getattr(fake, k) for k in ("X_train", "y_train", "noise_var_train", "f_train")}
    arrays.update(
        {
            k: getattr(fake, k)
            for k in ("X_eval", "noise_var_eval", "f_eval", "post_mean", "post_var")
        }
    )
    arrays.update(
        train_idx=fake.train_idx.astype(np.int64),
        eval_idx=fake.eval_idx.astype(np.int64),
        shell_eval=fake.shell_eval.astype(np.int64),
        sbc_rank=(draws < fake.f_eval).sum(axis=0).astype(np.int64),
        mcse_var_rel=np.zeros(fake.f_eval.size),
        draws=draws,
    )
    spec = TaskSpec("toy", "gp", noise, "balanced", seed, fidelity="smoke", n_draws=D)
    return Task(spec, arrays, diagnostics={}, prior={"family": "gp"})


@pytest.fixture
def task_dir(tmp_path):
    folder = tmp_path / "tasks"
    for seed, noise in enumerate(("smooth-monotone", "homoscedastic")):
        task = _real_format_task(seed, noise)
        task.save(folder / f"{task.spec.task_id}.npz")
    return folder


def _smoke(name: str):
    return make_method(name, **dict(get_method_class(name).smoke_params))


def test_end_to_end_real_task_files_and_methods(task_dir, tmp_path):
    out = tmp_path / "res"
    s = run_benchmark(
        [task_dir],
        [("blr", _smoke("blr")), ("catboost-ps", _smoke("catboost-ps"))],
        out,
        workers=0,
        keep_predictions=True,
    )
    assert (s.n_ok, s.n_failed) == (4, 0), s.failures
    df = read_results(out)
    store = ResultsStore(out)
    for row in df.itertuples():
        task = Task.load(row.task_path)
        p = store.read_predictions(row.cell_key)
        pred = Prediction(*(p[c].to_numpy() for c in ("mean", "aleatoric", "epistemic")))
        targets = oracle_targets(
            pred.mean, task.post_mean, task.post_var, task.noise_var_eval, task.f_eval
        )
        want = instance_metrics(pred, targets, constant_aleatoric=row.constant_aleatoric)
        for key in METRIC_KEYS:
            np.testing.assert_equal(getattr(row, key), want[key], err_msg=f"{row.cell_key} {key}")
        assert (row.dataset, row.noise, row.n_eval, row.n_draws) == ("toy", task.spec.noise, 60, D)
        assert row.task_version == task.version
    blr = df[df["method"] == "blr"]
    assert blr["constant_aleatoric"].all() and blr["rho_au"].isna().all()
    assert set(df.groupby("method")["method_family"].first().items()) >= {("blr", "linear")}
    cat = df[df["method"] == "catboost-ps"].set_index("noise")
    assert np.isfinite(cat.loc["smooth-monotone", "rho_au"])
    assert np.isnan(cat.loc["homoscedastic", "rho_au"])  # AU* constant: undefined, with reason
    assert "rho_au: AU* is constant" in cat.loc["homoscedastic", "metric_notes"]


def _cli(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    cap = capsys.readouterr()
    return code, " ".join((cap.out + cap.err).split())


def test_cli_run_resume_and_corrupt_task_file(task_dir, tmp_path, capsys):
    (task_dir / "broken.npz").write_bytes(b"PK\x03\x04 truncated")
    out = str(tmp_path / "res")
    code, text = _cli(capsys, "run", str(task_dir), "-m", "blr", "--out", out, "-w", "0")
    assert code == 3 and "3 cells: 2 ok, 1 failed, 0 already finished" in text  # all stored
    assert "failed broken|blr|" in text and "task file could not be read: UdbenchError" in text
    assert "Traceback" not in text
    code, text = _cli(capsys, "run", str(task_dir), "--methods", "blr", "--out", out, "-w", "0")
    assert code == 0 and "3 cells: 0 ok, 0 failed, 3 already finished" in text
    # several methods after one --methods: the second is picked out of the positionals
    code, text = _cli(
        capsys, "run", str(task_dir), "--out", out, "-w", "0", "--methods", "blr:max_iter=50", "blr"
    )
    assert code == 3 and "6 cells: 2 ok, 1 failed, 3 already finished" in text
    df = read_results(out)
    assert len(df) == 6 and df["cell_key"].is_unique
    assert set(df["method_label"]) == {"blr", "blr:max_iter=50"}


def test_cli_run_imports_a_user_method_from_the_current_directory(
    task_dir, tmp_path, capsys, monkeypatch
):
    """As docs/methods.md says for check-method: ``run -m mymod:Class`` finds ./mymod.py."""
    import shutil
    import sys
    from pathlib import Path

    plug = tmp_path / "plug"
    plug.mkdir()
    example = Path(__file__).parents[1] / "methods" / "methods_plugin_example.py"
    shutil.copy(example, plug / "usertest_cwd_plugin.py")
    monkeypatch.chdir(plug)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(plug))])
    monkeypatch.delitem(sys.modules, "usertest_cwd_plugin", raising=False)
    out = str(tmp_path / "res")
    spec = "usertest_cwd_plugin:KNNEnsemble:n_members=3"
    code, text = _cli(capsys, "run", str(task_dir), "-m", spec, "--out", out, "-w", "0")
    assert code == 0 and "2 cells: 2 ok, 0 failed" in text, text
    assert set(read_results(out)["method_label"]) == {spec}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-m", "no-such-method"],
            "parameter 'name' must be one of ['blr'",
        ),
        (["-m", "no-such-method:x=1"], "parameter 'name' must be one of ['blr'"),
        (["-m", "blr:nonexistent=3"], "BLR: 'nonexistent' is not a hyperparameter of 'blr'"),
        (["-m", "blr:max_iters=5"], "'max_iters' is not a hyperparameter of 'blr'; did you mean"),
        (["-m", "blr:max_iter=abc"], "BLR: parameter 'max_iter' must be an integer; got 'abc'"),
    ],
)
def test_cli_bad_methods_are_one_line_errors(task_dir, tmp_path, capsys, args, message):
    code, text = _cli(capsys, "run", str(task_dir), *args, "--out", str(tmp_path / "r"))
    assert code == 2 and message in text and "Traceback" not in text
    assert not (tmp_path / "r").exists()  # nothing ran


def test_cli_empty_glob_and_missing_results(tmp_path, capsys):
    code, text = _cli(capsys, "run", str(tmp_path / "none*.npz"), "-m", "blr", "--out", "x")
    assert code == 2 and "'tasks' must be a glob matching task files" in text
    assert "Traceback" not in text
    code, text = _cli(capsys, "leaderboard", str(tmp_path / "missing"))
    assert code == 2 and "must be a results directory or Parquet file" in text


@pytest.mark.slow
def test_generated_tasks_on_two_dask_workers_via_cli(tmp_path, capsys):
    """Real GP tasks on diabetes, two methods, 2 Dask workers; 1 worker gives the same rows."""
    folder = tmp_path / "tasks"
    for seed in (0, 1):
        spec = TaskSpec("diabetes", "gp", "u-shaped", "ood", seed, fidelity="smoke", n_draws=D)
        generate_task(spec).save(folder / f"{spec.task_id}.npz")
    outs = {}
    for workers in ("2", "1"):
        out = str(tmp_path / f"res{workers}")
        code, text = _cli(
            capsys,
            "run",
            f"{folder}/*.npz",
            "-m",
            "blr",
            "-m",
            "catboost-ps:iterations=30",
            "--out",
            out,
            "-w",
            workers,
            "--no-progress",
        )
        assert code == 0 and "4 cells: 4 ok" in text, text
        cols = ["cell_key", "method_seed", *METRIC_KEYS]
        outs[workers] = read_results(out).sort_values("cell_key")[cols].reset_index(drop=True)
    pd.testing.assert_frame_equal(outs["2"], outs["1"])


@pytest.mark.slow
def test_quickstart_end_to_end(tmp_path, capsys):
    code, text = _cli(capsys, "quickstart", "--out", str(tmp_path / "qs"))
    assert code == 0, text
    for name in ("blr", "gp", "ngboost-bag", "catboost-ps", "catboost-kgb", "nn-ens"):
        assert name in text
    df = read_results(tmp_path / "qs" / "results")
    assert len(df) == 4 * len(REGISTRY) and (df["status"] == "ok").all()
    assert (tmp_path / "qs" / "report" / "report.html").is_file()


@pytest.mark.parametrize("command", ["run", "report", "quickstart", "generate"])
def test_cli_out_that_is_a_file_is_a_one_line_error(task_dir, tmp_path, capsys, command):
    afile = tmp_path / "notes.txt"
    afile.write_text("not a folder")
    args = {
        "run": ["run", str(task_dir), "-m", "blr", "-w", "0"],
        "report": ["report", str(tmp_path / "results")],
        "quickstart": ["quickstart", "-w", "0"],
        "generate": ["generate", "--fidelity", "smoke"],
    }[command]
    for out in (afile, afile / "sub"):
        code, text = _cli(capsys, *args, "--out", str(out))
        assert code == 2 and "parameter '--out' must" in text and str(out) in text, text
        assert "Traceback" not in text
    assert afile.read_text() == "not a folder"


def test_cli_risk_out_in_a_missing_folder_is_a_one_line_error(tmp_path, capsys):
    arrays = tmp_path / "a.npz"
    np.savez(arrays, draws=np.ones((3, 2)), noise_var=np.ones(2), prediction=np.zeros(2))
    out = tmp_path / "missing" / "terms.csv"
    code, text = _cli(capsys, "risk", "decompose", str(arrays), "--out", str(out))
    assert code == 2 and "parameter 'out' must be in an existing folder" in text
    assert "Traceback" not in text
