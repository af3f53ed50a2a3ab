"""The CLI's error boundary: kinds of user-caused failure end in one line, exit 2 (issue 11.8).

Tests run as root here, where ``chmod`` does not stop writes, so an unwritable folder is made
in two honest ways: a path under ``/proc`` (no one may create files there, root included) for
the up-front check, and a path under a regular file (``NotADirectoryError``) with the check
switched off for the boundary behind it.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import numpy as np
import pytest

from _fakes import make_fake_task, save_fake_task
from udbench._validation import UdbenchError, check_writable
from udbench.cli import main

NEEDS_PROC = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not Path("/proc/self").exists(),
    reason="needs Linux /proc (an unwritable folder even for root)",
)


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return " ".join(err.split())  # rich may wrap long lines


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A task folder, an .npz of risk arrays and a results folder in a clean cwd."""
    monkeypatch.chdir(tmp_path)
    save_fake_task(make_fake_task(0), tmp_path / "tasks")
    arrays = {"post_mean": [0.0, 1.0], "post_var": [1.0, 2.0], "noise_var": [0.5, 0.5]}
    np.savez(tmp_path / "risk.npz", prediction=[1.0, 1.0], **arrays)
    return tmp_path


def _commands(out: str) -> dict[str, list[str]]:
    """Every command that writes, with ``out`` as its output path."""
    return {
        "generate": ["generate", "--fidelity", "smoke", "--draws", "50", "--out", out],
        "run": ["run", "tasks", "-m", "blr", "--workers", "0", "--no-progress", "--out", out],
        "report": ["report", "results.parquet", "--out", out],
        "analyze": ["analyze", "results.parquet", "--out", out],
        "quickstart": ["quickstart", "--workers", "0", "--out", out],
        "risk decompose": ["risk", "decompose", "risk.npz", "--out", f"{out}/terms.csv"],
    }


@NEEDS_PROC
@pytest.mark.parametrize("command", list(_commands("x")))
def test_unwritable_output_folder_is_refused_before_any_work(workdir, capsys, command, monkeypatch):
    # any work (prior fit, task generation, method import, reading results) would fail loudly
    import udbench.tasks.generate as gen

    monkeypatch.setattr(gen, "get_prior", lambda *a, **k: pytest.fail("work before the check"))
    args = _commands("/proc/udbench-test/out")[command]
    where = "/proc/udbench-test/out"
    if command == "risk decompose":  # its --out is a file in an existing (unwritable) folder
        args[-1], where = "/proc/udbench-terms.csv", "/proc"
    assert main(args) == 2
    err = _err(capsys)
    assert "must be a folder udbench can write to" in err and f"got '{where}" in err
    assert sorted(os.listdir(workdir)) == ["risk.npz", "tasks"]


@pytest.mark.parametrize("command", list(_commands("x")))
def test_os_errors_behind_the_check_are_one_line_with_the_path(
    workdir, capsys, command, monkeypatch
):
    """The boundary itself: an OSError on a named path anywhere in a command."""
    import udbench._validation as validation

    monkeypatch.setattr(validation, "check_writable", lambda *a, **k: None)
    monkeypatch.setattr("udbench.commands.risk.check_writable", lambda *a, **k: None)
    (workdir / "afile").write_text("a file, not a folder")
    (workdir / "results.parquet").write_bytes(b"")  # report must fail on writing, not reading
    if command in ("report", "analyze"):
        monkeypatch.setattr(
            "udbench.evaluation.store.read_results", lambda p: __import__("pandas").DataFrame()
        )
        monkeypatch.setattr(
            "udbench.report.html.write_report",
            lambda df, out, **k: (Path(out) / "report.html").write_text(""),
        )
        monkeypatch.setattr(
            "udbench.analyses.analyze",
            lambda df, out, **k: Path(out, "tables").mkdir(parents=True),
        )
    if command == "quickstart":
        monkeypatch.setattr(
            "udbench.recipes.quickstart.quickstart",
            lambda out, **k: Path(out, "tasks").mkdir(parents=True),
        )
    if command == "generate":
        monkeypatch.setattr("udbench.commands.tasks.expand_grid", lambda *a, **k: [])
    args = _commands(str(workdir / "afile" / "out"))[command]
    reason, where = "Not a directory", "afile"
    if command == "risk decompose":  # its --out is a file: make it a folder
        (workdir / "terms.csv").mkdir()
        args[-1], reason, where = "terms.csv", "Is a directory", "terms.csv"
    assert main(args) == 2
    err = _err(capsys)
    assert "cannot write or read" in err and where in err and reason in err


def test_read_only_cache_is_one_line_for_download(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("UDBENCH_CACHE_DIR", "/proc/udbench-test/cache")
    if not Path("/proc/self").exists():
        (tmp_path / "afile").write_text("")
        monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "afile" / "cache"))
    monkeypatch.setattr(
        "udbench.data.download_dataset", lambda *a, **k: pytest.fail("fetched before the check")
    )
    assert main(["datasets", "download", "kin8nm"]) == 2
    assert "'$UDBENCH_CACHE_DIR' must" in _err(capsys)


def test_unexpected_errors_keep_their_traceback(workdir, monkeypatch):
    """A bug is not a user error: an OSError without a path, or any other error, propagates."""

    def boom(*a, **k):
        raise OSError("something inside broke")

    monkeypatch.setattr("udbench.evaluation.store.read_results", boom)
    with pytest.raises(OSError, match="something inside broke"):
        main(["leaderboard", "x"])
    monkeypatch.setattr("udbench.evaluation.store.read_results", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        main(["leaderboard", "x"])


@pytest.mark.parametrize("command", list(_commands("x")))
def test_empty_out_is_an_error_not_the_current_folder(workdir, capsys, command):
    args = _commands("")[command]
    if command == "risk decompose":
        args[-1] = ""
    assert main(args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "not an empty string" in err
    assert sorted(os.listdir(workdir)) == ["risk.npz", "tasks"]


def test_check_writable_rules(tmp_path):
    assert check_writable("c", "--out", tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    assert list(tmp_path.iterdir()) == []  # nothing created, the probe removed
    (tmp_path / "f").write_text("")
    with pytest.raises(UdbenchError, match="'--out' must be a folder \\(or not exist yet\\)"):
        check_writable("c", "--out", tmp_path / "f")
    with pytest.raises(UdbenchError, match="must lie under a folder, not under a file"):
        check_writable("c", "--out", tmp_path / "f" / "x")
    with pytest.raises(UdbenchError, match="not an empty string"):
        check_writable("c", "--out", " ")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"x,y\n1,2\n", "not a NumPy file"),
        (None, "a single .npy array"),
        (b"PK\x03\x04 truncated zip", "BadZipFile"),
    ],
)
def test_risk_arrays_that_are_not_npz(tmp_path, capsys, content, reason):
    path = tmp_path / "in.npz"
    if content is None:
        with open(path, "wb") as fh:
            np.save(fh, np.zeros(3))
    else:
        path.write_bytes(content)
    assert main(["risk", "decompose", str(path)]) == 2
    err = _err(capsys)
    assert "'arrays' must be an .npz file of named arrays" in err and reason in err
    assert "pickled" not in err


def _toml(path: Path, body: str) -> Path:
    path.write_text(body)
    return path


class WrappingCluster:
    """Fails like LocalCluster with an unknown keyword: a RuntimeError wrapping the cause."""

    def __init__(self, **kwargs):
        try:
            raise TypeError(f"Server.__init__() got an unexpected keyword argument {kwargs!r}")
        except TypeError as err:
            raise RuntimeError("Nanny failed to start.") from err


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('class = "distributed.LocalCluster"\nbogus = 1\n', "must be among class, kwargs"),
        (
            'class = "test_cli_errors.WrappingCluster"\n[kwargs]\nbogus_kw = 3\n',
            'must start a test_cli_errors.WrappingCluster; got "TypeError: Server.__init__()',
        ),
        ('class = "no_such_pkg.Cluster"\n', "must be an importable class"),
        ("class = [\n", "must hold valid TOML/YAML"),
    ],
)
def test_bad_cluster_settings_are_one_line(workdir, capsys, body, expected):
    cfg = _toml(workdir / "cluster.toml", body)
    args = ["run", "tasks", "-m", "blr", "--no-progress", "--out", "res"]
    assert main([*args, "--cluster-config", str(cfg)]) == 2
    assert expected in _err(capsys)


@pytest.mark.slow
def test_local_cluster_with_an_unknown_keyword_is_one_line(workdir, capsys):
    cfg = _toml(
        workdir / "cluster.toml",
        'class = "distributed.LocalCluster"\n[kwargs]\nn_workers = 1\nbogus_kw = 3\n',
    )
    args = ["run", "tasks", "-m", "blr", "--no-progress", "--out", "res"]
    assert main([*args, "--cluster-config", str(cfg)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "must start a distributed.LocalCluster" in err and "bogus_kw" in err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("notanaddress", "missing port number"),
        ("http://host:1", "unknown address scheme"),
        ("tcp://127.0.0.1:{port}", "Connection refused"),
    ],
)
def test_bad_scheduler_address_fails_fast(workdir, capsys, monkeypatch, address, reason):
    # fail fast: the check answers before Dask's Client (and its 20 s of retries) is reached
    monkeypatch.setattr("distributed.Client", lambda *a, **k: pytest.fail("Client was called"))
    address = address.format(port=_free_port())
    args = ["run", "tasks", "-m", "blr", "--no-progress", "--out", "res"]
    assert main([*args, "--scheduler", address]) == 2
    err = _err(capsys)
    assert "'scheduler' must be the address of a running scheduler" in err and reason in err
    assert not (workdir / "res").exists()
