"""Resume verifies what it skips, and a folder has one writer (issue 31, item 3).

- ``udbench generate`` treats a task file that fails its checksums (an array rewritten inside a
  valid ZIP, a truncated file) as missing and makes it again; a foreign file (another
  instance's) stops it in one line whose remedy (``--overwrite``) works;
- ``udbench suite`` checks its grid before recording it, so a fixed TOML resumes the folder;
- every command that owns an output folder refuses a second writer in one line, and takes
  over the lock of a process that is gone.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from udbench._lock import LOCK_NAME, folder_lock, lock_owner
from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.tasks.generate import get_prior

GRID = ["--datasets", "diabetes", "--families", "gp", "--noise", "homoscedastic"]
GRID += ["--coverage", "all", "--seeds", "0", "--draws", "40", "--fidelity", "smoke"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("UDBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    mp.delenv("UDBENCH_DATA_DIR", raising=False)  # diabetes is embedded
    get_prior.cache_clear()
    yield
    get_prior.cache_clear()
    mp.undo()


def _rewrite_member(path: Path, member: str, transform) -> None:
    """Rewrite one array of a task file inside a valid ZIP (its CRCs match, its SHA-256 not)."""
    with zipfile.ZipFile(path) as zf:
        items = [(info, zf.read(info.filename)) for info in zf.infolist()]
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w") as zf:
        for info, data in items:
            if info.filename == member:
                arr = np.load(io.BytesIO(data))
                buf = io.BytesIO()
                np.save(buf, transform(arr))
                data = buf.getvalue()
            zf.writestr(info, data)
    os.replace(tmp, path)


def test_generate_makes_damaged_files_again_and_names_a_foreign_one(cache, tmp_path, capsys):
    out = tmp_path / "tasks"
    assert main(["generate", *GRID, "--out", str(out)]) == 0
    files = sorted(out.glob("*.npz"))
    assert len(files) == 2
    good = {p.name: p.read_bytes() for p in files}
    # an array rewritten inside a valid ZIP: the ZIP's CRCs pass, the stored SHA-256 does not
    _rewrite_member(files[0], "f_eval.npy", lambda a: a + 1.0)
    with zipfile.ZipFile(files[0]) as zf:
        assert zf.testzip() is None
    capsys.readouterr()
    assert main(["check", str(out), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [Path(b["path"]).name for b in report["invalid"]] == [files[0].name]
    # before issue 31 this counted the file "already done" and left it as it was
    assert main(["generate", *GRID, "--out", str(out)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "1 already done, 1 to generate" in err and "1 damaged" in err
    assert files[0].read_bytes() == good[files[0].name]  # the same instance, bit for bit
    assert main(["check", str(out), "--json"]) == 0
    capsys.readouterr()
    # a truncated file is damaged too
    files[1].write_bytes(good[files[1].name][:1000])
    assert main(["generate", *GRID, "--out", str(out)]) == 0
    assert files[1].read_bytes() == good[files[1].name]
    # a foreign file (another instance's, renamed): one line, and its remedy works
    shutil.copy(files[0], files[1])
    capsys.readouterr()
    assert main(["generate", *GRID, "--out", str(out)]) == 2
    lines = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(" ".join(lines).split("error:")) == 2  # one message
    assert files[1].name in " ".join(lines) and "--overwrite" in " ".join(lines)
    assert main(["generate", *GRID, "--out", str(out), "--overwrite"]) == 0
    assert files[1].read_bytes() == good[files[1].name]


BAD_SUITE = """
datasets = "diabetes"
families = "gp"
noise = "homoscedastic"
coverage = "balanced"
seeds = "0"
fidelity = "smoke"
draws = {draws}
methods = "blr"
method_params = "smoke"
"""


def test_suite_checks_its_settings_before_recording_them(tmp_path, capsys) -> None:
    toml, out = tmp_path / "mine.toml", tmp_path / "suite"
    toml.write_text(BAD_SUITE.format(draws=-3))
    args = ["suite", str(toml), "--out", str(out), "--no-plan", "--stages", "check"]
    assert main(args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "'--draws'" in err and "-3" in err and "nothing was recorded" in err
    assert not (out / "suite.json").exists()
    # fixed: the same folder, no "made with other settings" (the check stage then finds no
    # task file: a user error of that stage, not of the folder)
    toml.write_text(BAD_SUITE.format(draws=40))
    assert main(args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "other settings" not in err and "stage check" in err
    assert json.loads((out / "suite.json").read_text())["settings"]["draws"] == 40


def test_suite_replaces_settings_an_older_udbench_recorded_unchecked(tmp_path, capsys) -> None:
    toml, out = tmp_path / "mine.toml", tmp_path / "suite"
    toml.write_text(BAD_SUITE.format(draws=40))
    args = ["suite", str(toml), "--out", str(out), "--no-plan", "--stages", "check"]
    main(args)
    state = json.loads((out / "suite.json").read_text())
    state["settings"]["draws"] = -3  # what the suite recorded before it checked settings
    (out / "suite.json").write_text(json.dumps(state))
    capsys.readouterr()
    main(args)
    err = " ".join(capsys.readouterr().err.split())
    assert "other settings" not in err and "could not generate any task" in err
    assert json.loads((out / "suite.json").read_text())["settings"]["draws"] == 40
    # a damaged state file: a warning, and the suite goes on
    (out / "suite.json").write_text('{"settings": ')
    main(args)
    err = " ".join(capsys.readouterr().err.split())
    assert "is damaged" in err and "other settings" not in err


@pytest.fixture
def live_owner(tmp_path):
    """A lock owner that runs: a sleeping child process on this host."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        import psutil

        started = psutil.Process(proc.pid).create_time()
    except Exception:
        started = None
    owner = {
        "host": socket.gethostname(),
        "pid": proc.pid,
        "process_started": started,
        "command": "udbench other",
        "since": "2026-01-01T00:00:00",
    }
    yield owner
    proc.kill()
    proc.wait()


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    return empty, tmp_path / "owned"


#: Every command that owns an output folder: (arguments, the folder it owns). ``{E}`` an
#: existing empty folder, ``{O}`` the owned folder.
OWNERS = [
    (["generate", *GRID, "--out", "{O}"], "{O}"),
    (["run", "{E}", "-m", "blr", "--out", "{O}"], "{O}"),
    (["tune", "{E}", "-m", "blr", "--out", "{O}"], "{O}"),
    (["report", "{E}", "--out", "{O}"], "{O}"),
    (["analyze", "{E}", "--out", "{O}"], "{O}"),
    (["score", "{O}", "--loss", "crps"], "{O}"),
    (["transfer", "{E}", "--oracle", "gp:rbf", "--out", "{O}"], "{O}"),
    (["quickstart", "--out", "{O}"], "{O}"),
    (["suite", "quickstart", "--out", "{O}", "--no-plan"], "{O}"),
    (
        [
            *("study", "spectral-norm", "--out", "{O}", "--datasets", "diabetes"),
            *("--seeds", "0", "--families", "gp", "--trials", "2", "--fidelity", "smoke"),
            *("--draws", "40", "--yes"),
        ],
        "{O}",
    ),
    (
        [
            *("study", "wine-ood", "--out", "{O}", "--families", "gp", "--seeds", "0"),
            *("--smoke", "--methods", "blr", "--fidelity", "smoke", "--draws", "40"),
            *("--n-query", "150", "--yes", "--data-dir", "{D}"),
        ],
        "{O}",
    ),
]
#: The real-data folder (the wine study needs white and red wines), read before the
#: ``cache`` fixture unsets it.
DATA = os.environ.get("UDBENCH_DATA_DIR")


@pytest.mark.parametrize(("args", "owned"), OWNERS, ids=[" ".join(a[:2]) for a, _ in OWNERS])
def test_every_folder_owner_refuses_a_second_writer(
    args, owned, cache, tmp_path, capsys, live_owner
):
    if "{D}" in args and not (DATA and Path(DATA).is_dir()):
        pytest.skip("UDBENCH_DATA_DIR is not set to a data folder (see README)")
    empty, folder = _folders(tmp_path)
    folder.mkdir()
    (folder / LOCK_NAME).write_text(json.dumps(live_owner))
    fill = {"{E}": str(empty), "{O}": str(folder), "{D}": str(DATA)}
    capsys.readouterr()
    assert main([fill.get(a, a) for a in args]) == 2
    lines = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    text = " ".join(" ".join(lines).split())
    assert text.count("error:") == 1, text
    assert "is in use by udbench other" in text and f"pid {live_owner['pid']}" in text
    assert lock_owner(folder) == live_owner  # the owner's lock is left alone
    assert sorted(p.name for p in folder.iterdir()) == [LOCK_NAME]  # nothing written


def test_a_lock_whose_process_is_gone_is_taken_over(tmp_path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # a pid that no longer runs
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / LOCK_NAME).write_text(json.dumps({"host": socket.gethostname(), "pid": proc.pid}))
    with folder_lock(folder, "udbench test") as path:
        assert lock_owner(folder)["pid"] == os.getpid()
        assert path == folder / LOCK_NAME
        with pytest.raises(UdbenchError, match="is in use by udbench test"):
            with folder_lock(folder, "udbench second"):
                pass
    assert not (folder / LOCK_NAME).exists()  # released


def test_a_lock_on_another_host_is_respected_with_a_remedy(tmp_path) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / LOCK_NAME).write_text(json.dumps({"host": "elsewhere", "pid": 1, "command": "x"}))
    with pytest.raises(UdbenchError) as err:
        with folder_lock(folder, "udbench run"):
            pass
    assert "on host 'elsewhere'" in str(err.value) and "delete" in str(err.value)


def _race(folder: str, barrier, results) -> None:
    barrier.wait()
    try:
        with folder_lock(folder, "udbench race"):
            results.put("held")
            time.sleep(1.0)
    except UdbenchError:
        results.put("refused")


def test_of_processes_starting_at_once_exactly_one_holds_the_folder(tmp_path) -> None:
    # before issue 31: four `udbench tune` on one --out, three raw tracebacks
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(str(tmp_path), barrier, results)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    got = sorted(results.get(timeout=10) for _ in procs)
    assert got == ["held", "refused", "refused", "refused"]
    assert not (tmp_path / LOCK_NAME).exists()


def test_a_folder_made_for_the_lock_alone_is_removed_again(tmp_path) -> None:
    folder = tmp_path / "new" / "deeper"
    with pytest.raises(RuntimeError):
        with folder_lock(folder, "udbench test"):
            assert (folder / LOCK_NAME).exists()
            raise RuntimeError("the command failed before writing")
    assert not (tmp_path / "new").exists()
    with folder_lock(folder, "udbench test"):
        (folder / "result.txt").write_text("kept")
    assert sorted(p.name for p in folder.iterdir()) == ["result.txt"]
