"""What a task file is made from: the data fingerprint, settings clashes on generate, and
``udbench check`` verifying what it reports on (issue 11 #2, #7)."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pandas as pd
import pytest

from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.data import load_covariates
from udbench.data.sources import read_raw_table
from udbench.tasks import Task, TaskSpec, generate_task, read_task_meta
from udbench.tasks.generate import get_covariates, get_prior, source_fingerprint

TASK = "diabetes__gp__homoscedastic__balanced__s0.npz"


@pytest.fixture(scope="module", autouse=True)
def _cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("UDBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    mp.delenv("UDBENCH_DATA_DIR", raising=False)  # diabetes is embedded
    get_prior.cache_clear()
    get_covariates.cache_clear()
    yield
    get_prior.cache_clear()
    get_covariates.cache_clear()
    mp.undo()


def _write_table(folder, frame: pd.DataFrame):
    (folder / "diabetes").mkdir(parents=True)
    frame.to_csv(folder / "diabetes" / "diabetes.csv.gz", index=False)
    return folder


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """The embedded diabetes table written as a file, and the same rows shuffled."""
    frame = read_raw_table("diabetes").frame
    root = tmp_path_factory.mktemp("tables")
    same = _write_table(root / "same", frame)
    perm = np.random.default_rng(0).permutation(len(frame))
    shuffled = _write_table(root / "shuffled", frame.iloc[perm].reset_index(drop=True))
    return same, shuffled


def test_fingerprint_follows_the_cleaned_rows_not_the_file(tables) -> None:
    same, shuffled = tables
    embedded = load_covariates("diabetes").fingerprint
    assert len(embedded) == 64 and int(embedded, 16) >= 0
    # the same rows from a CSV file (another origin and format): the same data
    assert load_covariates("diabetes", data_dir=same).fingerprint == embedded
    # the same rows in another order give other tasks (the split and samples index rows)
    assert load_covariates("diabetes", data_dir=shuffled).fingerprint != embedded


def _args(out, *extra: str) -> list[str]:
    return [
        "generate",
        "--noise",
        "homoscedastic",
        "--coverage",
        "balanced",
        "--draws",
        "40",
        "--fidelity",
        "smoke",
        "--out",
        str(out),
        *extra,
    ]


def test_task_records_its_source_and_older_files_still_load(tmp_path) -> None:
    spec = TaskSpec("diabetes", "gp", "homoscedastic", "balanced", 0, "smoke", 40)
    task = generate_task(spec)
    assert task.source == source_fingerprint(load_covariates("diabetes"))
    assert task.source["data_sha256"] == load_covariates("diabetes").fingerprint
    assert (task.source["n_rows"], task.source["n_features"]) == (442, 10)
    loaded = Task.load(task.save(tmp_path / "new.npz"))
    assert loaded.source == task.source and loaded.content_sha256 == task.content_sha256
    # a file written before the fingerprint was recorded: no "source" in its metadata
    task.source = {}
    old = Task.load(task.save(tmp_path / "old.npz"))
    assert "source" not in read_task_meta(tmp_path / "old.npz")
    assert old.source == {} and old.verify().spec == spec
    assert old.content_sha256 != loaded.content_sha256


def test_generate_refuses_to_replace_a_task_made_otherwise(tmp_path, tables, capsys) -> None:
    _, shuffled = tables
    out = tmp_path / "tasks"
    assert main(_args(out)) == 0
    path = out / TASK
    before = path.read_bytes()
    assert main(_args(out)) == 0  # same settings and data: skipped
    assert path.read_bytes() == before
    capsys.readouterr()
    # other D: a clash, one line, nothing replaced
    assert main([*_args(out), "--draws", "50"]) == 2
    err = capsys.readouterr().err
    assert "n_draws 40 (asked 50)" in err and "--overwrite" in err
    assert path.read_bytes() == before
    # other fidelity
    assert main([*_args(out), "--fidelity", "standard"]) == 2
    assert "fidelity 'smoke' (asked 'standard')" in capsys.readouterr().err
    # other data (the same rows shuffled)
    assert main([*_args(out), "--data-dir", str(shuffled)]) == 2
    assert "data fingerprint" in capsys.readouterr().err
    assert path.read_bytes() == before
    # --overwrite replaces it
    assert main([*_args(out), "--draws", "50", "--overwrite"]) == 0
    assert Task.load(path).spec.n_draws == 50


def _flip_a_bit(path, member: str) -> None:
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    raw = bytearray(path.read_bytes())
    # local header: 30 bytes + file name + extra field, then the stored (uncompressed) data
    name_len = int.from_bytes(raw[info.header_offset + 26 : info.header_offset + 28], "little")
    extra_len = int.from_bytes(raw[info.header_offset + 28 : info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_len + extra_len
    raw[start + info.file_size // 2] ^= 0x01
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("member", ["draws.npy", "post_var.npy"])
def test_check_verifies_every_array(tmp_path, capsys, member) -> None:
    out = tmp_path / "tasks"
    assert main([*_args(out), "--seeds", "0-1"]) == 0
    bad = out / TASK
    _flip_a_bit(bad, member)
    name = member.removesuffix(".npy")
    # the ZIP's CRC-32 or the array's SHA-256 catches it; either way the array is named
    with pytest.raises(UdbenchError, match=f"array '{name}'"):
        Task.load(bad).verify()
    capsys.readouterr()
    assert main(["check", str(out), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["families"]["gp"]["n_instances"] == 1  # the good one is still checked
    (invalid,) = report["invalid"]
    assert invalid["path"] == str(bad)
    assert f"array '{name}'" in invalid["error"] and "not a valid udbench task" in invalid["error"]
    assert main(["check", str(out)]) == 1
    text = capsys.readouterr().out
    assert "invalid" in text and "1 of 2 task files are invalid" in text
    # generate regenerates the damaged file, after which check passes again
    assert main([*_args(out), "--seeds", "0-1"]) == 0
    assert main(["check", str(out), "--json"]) == 0
