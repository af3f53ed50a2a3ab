"""End to end on a user's small table: ``datasets add`` → list → generate → check → run →
leaderboard, through the CLI entry point (smoke settings)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from udbench.cli import main


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UDBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "data").mkdir()
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(240, 3)) * [10.0, 1.0, 100.0]
    frame = pd.DataFrame(X, columns=["dose", "ratio", "temperature"])
    frame["batch"] = np.where(np.arange(240) % 2 == 0, "north", "south")  # a categorical
    frame.to_csv(tmp_path / "plant.csv", index=False)
    return tmp_path


def test_add_generate_check_run_leaderboard(folders, capsys):
    table = str(folders / "plant.csv")
    # the categorical column is named, with how to leave it out
    assert main(["datasets", "add", table, "--name", "plant"]) == 2
    err = capsys.readouterr().err
    assert "batch (2 levels" in err and "--drop batch" in err
    assert main(["datasets", "add", table, "--name", "plant", "--drop", "batch"]) == 0
    out = capsys.readouterr().out
    assert "n_eval = 120, n = " in out and "GP kernel family: rbf (default" in out
    registry = folders / "data" / "plant" / "dataset.toml"
    assert f"registered 'plant' in {registry}" in out

    # listed, with where it lives
    assert main(["datasets", "--json"]) == 0
    rows = {r["key"]: r for r in json.loads(capsys.readouterr().out)}
    row = rows["plant"]
    assert row["source"] == "user" and row["available"] == "local"
    assert row["registry_file"] == str(registry)
    assert row["path"] == str(folders / "data" / "plant" / "plant.csv.gz")
    assert (row["n_rows"], row["n_features"], row["n_eval"], row["rho"]) == (240, 3, 120, 0.32)
    assert main(["datasets"]) == 0
    assert f"plant: added by `udbench datasets add`, registered in {registry}" in (
        capsys.readouterr().out.replace("\n", "")
    )
    assert main(["datasets", "show", "plant", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["shell_sizes"]["eval"] == [24] * 5
    assert sum(shown["training_quotas"]["ood"]) == row["n_train"]

    # generate: the new key is accepted; `all` stays the paper's suite
    tasks, results = folders / "tasks", folders / "results"
    common = ["--families", "gp", "--noise", "homoscedastic", "--coverage", "ood", "--seeds", "0"]
    args = ["generate", "--datasets", "plant", *common, "--draws", "40", "--fidelity", "smoke"]
    assert main([*args, "--out", str(tasks), "--workers", "1"]) == 0
    capsys.readouterr()
    (task_file,) = tasks.glob("*.npz")
    assert task_file.name == "plant__gp__homoscedastic__ood__s0.npz"
    from udbench.tasks import Task

    task = Task.load(task_file)
    assert task.source["dataset"] == "plant" and task.train_idx.size == row["n_train"]
    # no target: the GP prior used the family's default hyperparameters (nothing fitted)
    from udbench.priors.gp.fit import default_kernel_hyper

    (fit_file,) = (folders / "cache" / "priors" / "gp").glob("plant__rbf__*.json")
    record = json.loads(fit_file.read_text())
    assert record["fit_settings"] == {"fitted": False, "reason": "no real target"}
    assert record["hyperparameters"] == default_kernel_hyper("rbf", 3)
    assert record["hyperparameters"]["parts"][0]["lengthscale"] == pytest.approx(
        [np.sqrt(3) / 2] * 3, rel=1e-12
    )

    assert main(["check", str(tasks), "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked["families"]["gp"]["n_instances"] == 1 and not checked["invalid"]

    assert main(["run", str(tasks), "-m", "blr", "--workers", "0", "--out", str(results)]) == 0
    capsys.readouterr()
    assert main(["leaderboard", str(results), "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    (entry,) = board if isinstance(board, list) else board["rows"]
    assert entry["method"] == "blr" and -1.0 <= entry["rho_eu_risk"] <= 1.0


def test_generate_all_is_still_the_papers_suite(folders, capsys):
    from udbench.commands.tasks import expand_grid

    assert (
        main(["datasets", "add", str(folders / "plant.csv"), "--name", "plant", "--drop", "batch"])
        == 0
    )
    grid = expand_grid("all", "gp", "step", "ood", "0", "smoke", 40)
    assert len(grid) == 13 and "plant" not in {s.dataset for s in grid}
    (spec,) = expand_grid("plant", "gp", "step", "ood", "0", "smoke", 40)
    assert spec.dataset == "plant"


def test_add_errors_exit_2_with_one_line(folders, capsys, monkeypatch):
    table = str(folders / "plant.csv")
    assert main(["datasets", "add", table, "--name", "concrete", "--drop", "batch"]) == 2
    assert "packaged dataset" in capsys.readouterr().err
    assert main(["datasets", "add", str(folders / "none.csv"), "--name", "x"]) == 2
    assert "PATH" in capsys.readouterr().err
    monkeypatch.delenv("UDBENCH_DATA_DIR")
    assert main(["datasets", "add", table, "--name", "plant", "--drop", "batch"]) == 2
    assert "UDBENCH_DATA_DIR" in capsys.readouterr().err
    # --data-dir instead of the environment
    data = folders / "data"
    assert (
        main(
            [
                "datasets",
                "add",
                table,
                "--name",
                "plant",
                "--drop",
                "batch",
                "--data-dir",
                str(data),
            ]
        )
        == 0
    )
    assert main(["datasets", "download", "plant", "--data-dir", str(data)]) == 2


def test_add_refuses_repeated_column_names_in_one_line(folders, capsys):
    lines = (folders / "plant.csv").read_text().splitlines()
    assert lines[0] == "dose,ratio,temperature,batch"
    (folders / "twice.csv").write_text("\n".join(["dose,ratio,dose,batch", *lines[1:]]) + "\n")
    code = main(
        ["datasets", "add", str(folders / "twice.csv"), "--name", "plant", "--drop", "batch"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert [line for line in err.splitlines() if line.strip()] == [
        "error: udbench datasets add: parameter 'PATH' must have distinct column names (pandas "
        "would rename a repeat 'a' to 'a.1'); rename or remove the repeated columns; got ['dose']"
    ]
    assert not (folders / "data" / "plant").exists()
