"""``udbench datasets`` list / show / download through the CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from udbench.cli import main
from udbench.data import get_dataset_spec


def test_list_json_has_every_dataset_and_availability(data_dir, capsys):
    assert main(["datasets", "--json", "--data-dir", str(data_dir)]) == 0
    rows = {r["key"]: r for r in json.loads(capsys.readouterr().out)}
    assert len(rows) == 15
    for r in rows.values():
        assert {"key", "n_rows", "n_features", "n_eval", "n_train", "rho", "available"} <= set(r)
    assert rows["concrete"]["available"] == "local"
    assert rows["sarcos"]["available"] == "needs download"  # only its test split is local
    assert rows["diabetes"]["available"] == "embedded"
    # where each table was found: the file it is read from (none when embedded or missing)
    assert rows["concrete"]["path"] == str(Path(data_dir) / "concrete" / "concrete.csv.gz")
    assert rows["sarcos"]["path"] is None and rows["diabetes"]["path"] is None
    assert (rows["airfoil"]["n_rows"], rows["airfoil"]["n_eval"], rows["airfoil"]["rho"]) == (
        1503,
        751,
        0.32,
    )


def test_list_table(capsys):
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "health_insurance" in out and "embedded" in out


def test_show_json_reports_shells_and_noise_ranges(capsys):
    assert main(["datasets", "show", "diabetes", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["n_rows"] == 442 and info["n_eval"] == 221 and info["available"] == "embedded"
    shells = info["shell_sizes"]
    assert sum(shells["all"]) == 442 and sum(shells["eval"]) == 221
    np.testing.assert_array_equal(np.add(shells["eval"], shells["candidates"]), shells["all"])
    assert info["training_quotas"]["ood"] == [38, 38, 37, 37, 0]
    ranges = info["noise_variance_eval"]
    rho = get_dataset_spec("diabetes").rho
    assert ranges["homoscedastic"]["min"] == ranges["homoscedastic"]["max"]
    assert abs(ranges["homoscedastic"]["min"] - rho) < 1e-12
    for mode in ("smooth-monotone", "u-shaped", "step"):
        assert ranges[mode]["min"] < rho < ranges[mode]["max"]
        assert ranges[mode]["min"] <= ranges[mode]["median"] <= ranges[mode]["max"]
    # the median shows where the noise budget goes (docs/priors-mcmc.md: protein's u-shaped
    # median is 3.4e-4 against a mean of 0.36); diabetes's u-shaped median, a reference value
    # of 2026-12-04 (it changes only with SPEC §4's noise design or the embedded table), is far
    # below its mean rho = 0.3 (221 evaluation rows; max 22.0)
    assert ranges["u-shaped"]["median"] == pytest.approx(0.0694291074316, rel=1e-9)
    assert ranges["homoscedastic"]["median"] == pytest.approx(rho, rel=1e-12)
    assert main(["datasets", "show", "diabetes"]) == 0
    assert "u-shaped" in capsys.readouterr().out


def test_user_errors_exit_2_with_one_line(capsys, tmp_path):
    assert main(["datasets", "show", "nope"]) == 2
    assert "parameter 'key' must be one of" in capsys.readouterr().err
    assert main(["datasets", "show", "sarcos", "--data-dir", str(tmp_path)]) == 2
    assert "udbench datasets download sarcos" in capsys.readouterr().err.replace("\n", " ")
    # user values that look like rich markup are printed as typed, not swallowed
    assert main(["datasets", "show", "[bold]x"]) == 2
    assert "got '[bold]x'" in capsys.readouterr().err


def test_missing_data_folder_is_an_error_not_needs_download(capsys, tmp_path, monkeypatch):
    """A mistyped --data-dir / $UDBENCH_DATA_DIR must not fall through silently."""
    missing = str(tmp_path / "no-such-folder")
    for args in (
        ["datasets", "--data-dir", missing],
        ["datasets", "show", "diabetes", "--data-dir", missing],
        ["generate", "--data-dir", missing, "--out", str(tmp_path / "t")],
    ):
        assert main(args) == 2
        err = " ".join(capsys.readouterr().err.split())
        assert "parameter '--data-dir' must be an existing folder" in err and missing in err
    assert not (tmp_path / "t").exists()  # nothing generated
    monkeypatch.setenv("UDBENCH_DATA_DIR", missing)
    assert main(["datasets", "--json"]) == 2
    assert "parameter '$UDBENCH_DATA_DIR' must be an existing folder" in capsys.readouterr().err
