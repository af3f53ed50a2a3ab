"""Task file: round trip, determinism, lazy loading, corrupt/truncated/wrong-version files."""

from __future__ import annotations

import hashlib
import json
import zipfile

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.priors.gp import GPPrior
from udbench.tasks import SCHEMA_VERSION, Task, TaskSpec, make_task, read_task_meta
from udbench.tasks.taskfile import content_checksum, is_timing_key, task_file_is_valid

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
    assert meta["schema_version"] == 2  # no timings: the schema-2 layout, as before
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
    with pytest.raises(UdbenchError, match=r"schema\) version 4 .* reads versions 2 and 3"):
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


# -- timings (schema 3) ----------------------------------------------------------------
def _timed(wall: float, rate: float = 50.0, accept: float = 0.9) -> Task:
    """:func:`_task` with MCMC-style sampler diagnostics (timings by name, nested)."""
    task = _task()
    task.diagnostics = {
        **task.diagnostics,
        "sampler": {
            "wall_seconds": wall,
            "chain_iterations_per_second": rate,
            "accept_prob_mean": accept,
            "per_stage": [{"stage": 1, "sampler_seconds": wall / 2}],
        },
    }
    return task


def test_timing_keys_by_name() -> None:
    for key in ("wall_seconds", "reference_seconds", "chain_iterations_per_second"):
        assert is_timing_key(key), key
    for key in ("seconds_total", "n_seconds_bins", "per_second_rate", "wall", "rhat_max"):
        assert not is_timing_key(key), key


def test_timings_do_not_enter_the_content_checksum(tmp_path) -> None:
    a = _timed(55.57).save(tmp_path / "a.npz")
    b = _timed(71.2, rate=38.9).save(tmp_path / "b.npz")
    ma, mb = read_task_meta(a), read_task_meta(b)
    assert ma["schema_version"] == mb["schema_version"] == 3
    assert a.read_bytes() != b.read_bytes()  # the timings are still in the file ...
    assert mb["diagnostics"]["sampler"]["wall_seconds"] == 71.2
    assert mb["diagnostics"]["sampler"]["per_stage"][0]["sampler_seconds"] == 35.6
    assert ma["content_sha256"] == mb["content_sha256"]  # ... but not in its identity
    assert Task.load(b).content_sha256 == ma["content_sha256"]
    # anything else in the diagnostics still counts
    c = _timed(55.57, accept=0.91).save(tmp_path / "c.npz")
    assert read_task_meta(c)["content_sha256"] != ma["content_sha256"]
    # the checksum by hand: SHA-256 of the canonical JSON with the timings removed
    bare = {k: v for k, v in ma.items() if k != "content_sha256"}
    bare["diagnostics"] = {
        **bare["diagnostics"],
        "sampler": {"accept_prob_mean": 0.9, "per_stage": [{"stage": 1}]},
    }
    text = json.dumps(bare, sort_keys=True, separators=(",", ":")).encode()
    assert hashlib.sha256(text).hexdigest() == ma["content_sha256"]


def test_schema2_checksum_covers_everything(tmp_path) -> None:
    path = _task().save(tmp_path / "t.npz")
    meta = read_task_meta(path)
    bare = {k: v for k, v in meta.items() if k != "content_sha256"}
    text = json.dumps(bare, sort_keys=True, separators=(",", ":")).encode()
    assert hashlib.sha256(text).hexdigest() == meta["content_sha256"] == content_checksum(bare)


def test_tampered_schema3_meta_is_rejected_unless_only_a_timing_changed(tmp_path) -> None:
    path = _timed(55.57).save(tmp_path / "t.npz")
    sha = read_task_meta(path)["content_sha256"]
    _rewrite_meta(path, lambda m: m["diagnostics"]["sampler"].update(wall_seconds=1.0))
    assert Task.load(path).content_sha256 == sha  # unprotected by design (module notes)
    _rewrite_meta(path, lambda m: m["diagnostics"]["sampler"].update(accept_prob_mean=0.5))
    with pytest.raises(UdbenchError, match="checksum"):
        Task.load(path)
    # a timing outside the diagnostics is not a timing: it counts
    path = _timed(55.57).save(tmp_path / "u.npz")
    _rewrite_meta(path, lambda m: m["prior"].update(budget_seconds=3.0))
    with pytest.raises(UdbenchError, match="checksum"):
        Task.load(path)


def test_schema2_file_with_timings_still_loads_with_its_old_checksum(tmp_path) -> None:
    """An MCMC task written before schema 3: its checksum covers its timings."""
    path = _timed(55.57).save(tmp_path / "old.npz")

    def as_schema2(meta: dict) -> None:
        meta["schema_version"] = 2
        meta.pop("content_sha256")
        meta["content_sha256"] = hashlib.sha256(
            json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()

    _rewrite_meta(path, as_schema2)
    old = Task.load(path)
    assert (
        old.content_sha256
        != read_task_meta(_timed(55.57).save(tmp_path / "new.npz"))["content_sha256"]
    )
    assert old.diagnostics["sampler"]["wall_seconds"] == 55.57
    assert task_file_is_valid(path)
    _rewrite_meta(path, lambda m: m["diagnostics"]["sampler"].update(wall_seconds=1.0))
    with pytest.raises(UdbenchError, match="checksum"):
        Task.load(path)


def test_timings_inside_tuples_and_non_string_keys_are_handled(tmp_path) -> None:
    """The checksum is of the JSON form: a timing inside a tuple is found and left out like
    one inside a list, and a non-string key (JSON writes it as a string) is no error."""
    task = _timed(55.57)
    task.diagnostics["stages"] = ({"stage": 1, "wall_seconds": 3.0},)
    task.diagnostics["by_k"] = {2: 0.5}
    path = task.save(tmp_path / "a.npz")
    meta = read_task_meta(path)  # loads: the checksum written is the one read back
    assert meta["schema_version"] == 3 and meta["diagnostics"]["by_k"] == {"2": 0.5}
    other = _timed(71.2)
    other.diagnostics["stages"] = ({"stage": 1, "wall_seconds": 9.0},)
    other.diagnostics["by_k"] = {2: 0.5}
    assert (
        read_task_meta(other.save(tmp_path / "b.npz"))["content_sha256"] == meta["content_sha256"]
    )
    plain = _task()
    plain.diagnostics = {**plain.diagnostics, "stages": ({"stage": 1, "rate_seconds": 1.0},)}
    assert read_task_meta(plain.save(tmp_path / "c.npz"))["schema_version"] == 3
    # schema 2 too: keys whose order changes as strings ({2, 10} → {"10", "2"}) still load
    keyed = _task()
    keyed.diagnostics = {**keyed.diagnostics, "by_k": {2: 0.5, 10: 0.25}}
    meta2 = read_task_meta(keyed.save(tmp_path / "d.npz"))
    assert meta2["schema_version"] == 2 and meta2["diagnostics"]["by_k"] == {"2": 0.5, "10": 0.25}
