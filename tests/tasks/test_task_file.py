"""Task file: round trip, determinism, lazy loading, corrupt/truncated/wrong-version files."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.priors.gp import GPPrior
from udbench.tasks import SCHEMA_VERSION, Task, TaskSpec, make_task, read_task_meta
from udbench.tasks.taskfile import task_file_is_valid

HYPER = {"kernel_family": "rbf", "parts": [{"kernel": "rbf", "weight": 1.0, "lengthscale": [0.4]}]}


def _task(seed: int = 0, noise: str = "step") -> Task:
    rng = np.random.default_rng(0)
    X = rng.random((30, 1))
    spec = TaskSpec("synthetic", "gp", noise, "balanced", seed, n_draws=40)
    return make_task(
        spec,
        GPPrior(HYPER, 1.3),
        X,
        np.arange(10),
        np.arange(10, 30),
        np.full(10, 0.2),
        np.full(20, 0.2),
        shell_eval=np.arange(10) % 5,
    )


def test_round_trip_and_lazy_loading(tmp_path) -> None:
    task = _task()
    path = task.save(tmp_path / "t.npz")
    loaded = Task.load(path)
    assert loaded._arrays == {}  # nothing read yet
    assert loaded.spec == task.spec and loaded.diagnostics == task.diagnostics
    assert loaded.prior["scale"] == 1.3
    assert "draws" not in loaded._arrays
    np.testing.assert_array_equal(loaded.f_eval, task.f_eval)
    assert "draws" not in loaded._arrays  # reading f_eval did not read the draws
    for name, arr in task.arrays().items():
        np.testing.assert_array_equal(getattr(loaded, name), arr)
    assert loaded.draws.shape == (40, 10) and loaded.draws.dtype == np.float32
    assert loaded.draws_train is None  # off by default for the GP
    assert loaded.post_mean.dtype == np.float64 and loaded.f_eval.dtype == np.float64
    assert loaded.shell_eval.dtype == np.int64
    # readable as a plain .npz without pickle
    with np.load(path, allow_pickle=False) as npz:
        np.testing.assert_array_equal(npz["y_train"], task.y_train)


def test_same_spec_gives_byte_identical_file(tmp_path) -> None:
    a = _task().save(tmp_path / "a.npz").read_bytes()
    b = _task().save(tmp_path / "b.npz").read_bytes()
    assert a == b
    c = _task(seed=1).save(tmp_path / "c.npz").read_bytes()
    assert a != c


def test_meta_readable_without_arrays_and_summaries_present(tmp_path) -> None:
    meta = read_task_meta(_task().save(tmp_path / "t.npz"))
    assert meta["schema_version"] == SCHEMA_VERSION
    assert meta["task_id"] == "synthetic__gp__step__balanced__s0"
    assert set(meta["diagnostics"]["checks"]) >= {"coverage_90", "sbc_hist", "mc_agree"}
    assert len(meta["content_sha256"]) == 64


def test_truncated_file_is_a_clear_error(tmp_path) -> None:
    path = _task().save(tmp_path / "t.npz")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(UdbenchError, match="not a valid udbench task file"):
        Task.load(path)
    assert not task_file_is_valid(path)


def test_corrupt_array_is_caught_on_access(tmp_path) -> None:
    path = _task().save(tmp_path / "t.npz")
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("draws.npy")
    # flip one byte inside the draws member's payload (after its local header)
    pos = info.header_offset + 30 + len(info.filename) + 200
    data[pos] ^= 0xFF
    path.write_bytes(bytes(data))
    task = Task.load(path)  # metadata is intact
    with pytest.raises(UdbenchError, match="draws"):
        _ = task.draws
    assert not task_file_is_valid(path)


def _rewrite_meta(path, change) -> None:
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    meta = json.loads(members["meta.json"])
    change(meta)
    members["meta.json"] = json.dumps(meta).encode()
    with zipfile.ZipFile(path, "w") as zf:
        for n, b in members.items():
            zf.writestr(n, b)


def test_wrong_version_and_tampered_meta_are_rejected(tmp_path) -> None:
    path = _task().save(tmp_path / "t.npz")
    _rewrite_meta(path, lambda m: m.update(schema_version=SCHEMA_VERSION + 1))
    with pytest.raises(UdbenchError, match="schema\\) version"):
        Task.load(path)
    path = _task().save(tmp_path / "u.npz")
    _rewrite_meta(path, lambda m: m["diagnostics"]["checks"].update(n_points=999))
    with pytest.raises(UdbenchError, match="checksum"):
        Task.load(path)
    with pytest.raises(UdbenchError, match="no such file"):
        Task.load(tmp_path / "missing.npz")


def test_save_is_atomic_and_leaves_no_temp_file(tmp_path, monkeypatch) -> None:
    task = _task()
    target = tmp_path / "t.npz"

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("udbench.tasks.taskfile.os.replace", boom)
    with pytest.raises(OSError):
        task.save(target)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    task.save(target)
    assert [p.name for p in tmp_path.iterdir()] == ["t.npz"]


def test_taskspec_streams_depend_on_every_coordinate() -> None:
    base = TaskSpec("concrete", "gp", "step", "ood", 3)
    seeds = {base.seed_for("f_star")}
    for change in (
        {"dataset": "airfoil"},
        {"family": "bnn"},
        {"noise": "u-shaped"},
        {"coverage": "balanced"},
        {"seed": 4},
    ):
        seeds.add(TaskSpec(**{**base.to_dict(), **change}).seed_for("f_star"))
    assert len(seeds) == 6
    # fidelity and D do not change the instance's streams
    assert TaskSpec("concrete", "gp", "step", "ood", 3, "smoke", 100).seed_for("f_star") == (
        base.seed_for("f_star")
    )
    assert base.task_id == "concrete__gp__step__ood__s3"
    with pytest.raises(UdbenchError, match="seed"):
        TaskSpec("concrete", "gp", "step", "ood", -1)
    with pytest.raises(UdbenchError, match="fidelity"):
        TaskSpec("concrete", "gp", "step", "ood", 0, fidelity="quick")
