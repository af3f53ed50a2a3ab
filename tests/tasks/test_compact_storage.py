"""Compact task files (schema 2, issue 22): float32 posterior draws, optional training-input
draws, DEFLATE members; the stored metrics and acceptance verdicts do not move, an old file
is a one-line error naming its version."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from _fakes import KnnMethod
from udbench._validation import UdbenchError
from udbench.evaluation.runner import run_benchmark
from udbench.evaluation.scoring import score_prediction
from udbench.evaluation.store import read_results
from udbench.priors.gp import GPPrior
from udbench.tasks import Task, TaskSpec, make_task, pool_checks
from udbench.tasks._schema1 import write_schema1
from udbench.tasks.checks import acceptance_checks
from udbench.tasks.taskfile import is_draws_array, task_file_is_valid

HYPER = {
    "kernel_family": "rbf",
    "parts": [{"kernel": "rbf", "weight": 1.0, "lengthscale": [0.3, 0.5]}],
}
N_EVAL, N_TRAIN, D = 40, 60, 200


def _inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X = np.random.default_rng(7).random((N_EVAL + N_TRAIN, 2))
    return X, np.arange(N_EVAL), np.arange(N_EVAL, N_EVAL + N_TRAIN)


def _seeded_set(**kw) -> list[tuple[Task, np.ndarray]]:
    """Six GP tasks (3 seeds × 2 noise levels) and, for each, its float64 draws."""
    X, ev, tr = _inputs()
    prior = GPPrior(HYPER, 1.7)
    out = []
    for seed in range(3):
        for level, coverage in ((0.05, "balanced"), (0.4, "ood")):
            spec = TaskSpec("synthetic", "gp", "homoscedastic", coverage, seed, n_draws=D)
            nv_eval, nv_train = np.full(N_EVAL, level), np.full(N_TRAIN, level)
            task = make_task(spec, prior, X, ev, tr, nv_eval, nv_train, **kw)
            # the same conditioning call as make_task: its float64 draws, before rounding
            y = np.asarray(task.y_train)
            post = prior.condition(X[tr], y, nv_train, X[ev], spec.seed_for("posterior"), D)
            out.append((task, post.draws_eval))
    return out


def test_draw_arrays_are_float32_by_name_rule_and_the_rest_float64(tmp_path) -> None:
    (task, draws64), *_ = _seeded_set(draws_train=True)
    assert is_draws_array("draws") and is_draws_array("draws_train")
    assert is_draws_array("draws_query")  # an optional array added later follows the rule
    assert not is_draws_array("post_mean") and not is_draws_array("X_eval")
    loaded = Task.load(task.save(tmp_path / "t.npz"))
    assert loaded.draws.dtype == np.float32 and loaded.draws_train.dtype == np.float32
    assert loaded.draws_train.shape == (D, N_TRAIN)
    # float32 rounding only: relative error below 2^-24 of each draw
    np.testing.assert_allclose(loaded.draws, draws64, rtol=2**-23, atol=0)
    for name in ("post_mean", "post_var", "f_eval", "y_train", "X_eval", "noise_var_eval"):
        assert getattr(loaded, name).dtype == np.float64, name
    # members are DEFLATE-compressed and numpy.load still reads the file as an .npz
    with zipfile.ZipFile(tmp_path / "t.npz") as zf:
        assert zf.getinfo("draws.npy").compress_type == zipfile.ZIP_DEFLATED
    with np.load(tmp_path / "t.npz", allow_pickle=False) as npz:
        np.testing.assert_array_equal(npz["draws"], loaded.draws)


def test_gp_drops_training_draws_by_default_without_changing_other_arrays(tmp_path) -> None:
    (full, _), *_ = _seeded_set(draws_train=True)
    (lean, _), *_ = _seeded_set()
    assert lean.draws_train is None and full.draws_train is not None
    for name, arr in lean.arrays().items():
        np.testing.assert_array_equal(arr, getattr(full, name), err_msg=name)
    assert lean.diagnostics == full.diagnostics
    a = full.save(tmp_path / "a.npz").stat().st_size
    b = lean.save(tmp_path / "b.npz").stat().st_size
    assert b < a * 0.75  # the (D, n_train) block is the larger one here


def test_float32_draws_keep_stored_metrics_and_acceptance_verdicts(tmp_path) -> None:
    tasks = _seeded_set()
    folder = tmp_path / "tasks"
    for task, _ in tasks:
        task.save(folder / f"{task.spec.task_id}.npz")
    # metrics stored by ``udbench run`` on the float32 files == scores on float64 tasks
    run_benchmark([folder], [KnnMethod()], tmp_path / "R", workers=0)
    rows = read_results(tmp_path / "R")
    assert len(rows) == len(tasks) and (rows["status"] == "ok").all()
    assert sorted(rows["task_id"]) == sorted(t.spec.task_id for t, _ in tasks)
    n_compared = 0
    for task, draws64 in tasks:
        ref = Task(task.spec, task.arrays(), task.diagnostics, task.prior)
        ref._arrays["draws"] = draws64  # float64, as a schema-1 file held them
        row = rows[rows["task_id"] == task.spec.task_id].iloc[0]
        est = KnnMethod(random_state=int(row["method_seed"]))  # the runner's seed
        est.fit(task.X_train, task.y_train)
        metrics, _ = score_prediction(ref, est.predict(task.X_eval))
        for key, want in metrics.items():
            got = row[key]
            if np.isfinite(want):
                assert got == pytest.approx(want, rel=1e-6, abs=1e-12), key
                n_compared += 1
    assert n_compared > 20
    # acceptance checks recomputed from the stored float32 draws: same verdicts
    summaries64, summaries32, mcse64, mcse32 = [], [], [], []
    for task, draws64 in tasks:
        stored = Task.load(folder / f"{task.spec.task_id}.npz")
        args = (task.post_mean, task.post_var)
        s64, p64 = acceptance_checks(task.f_eval, draws64, *args)
        s32, p32 = acceptance_checks(task.f_eval, stored.draws.astype(np.float64), *args)
        assert s64 == task.diagnostics["checks"]  # the stored checks are the float64 ones
        for key in ("sbc_hist", "covered_90", "mc_agree", "n_points", "n_draws"):
            assert s32[key] == s64[key], key
        for key in ("coverage_90", "sbc_max_bin_deviation", "corr_mean_fstar"):
            assert s32[key] == pytest.approx(s64[key], rel=1e-6), key
        for key in ("mcse_var_rel_median", "mc_mean_max_abs_z", "mc_var_max_abs_z"):
            assert s32[key] == pytest.approx(s64[key], rel=1e-4), key
        summaries64.append(s64)
        summaries32.append(s32)
        mcse64.append(p64["mcse_var_rel"])
        mcse32.append(p32["mcse_var_rel"])
    pooled64, pooled32 = pool_checks(summaries64, mcse64), pool_checks(summaries32, mcse32)
    for key in ("n_instances", "coverage_90", "coverage_90_ci", "sbc_max_bin_deviation"):
        assert pooled32[key] == pooled64[key], key
    assert pooled32.get("mc_agree_fraction") == pooled64.get("mc_agree_fraction")


def test_old_format_file_is_a_one_line_error_naming_its_version(tmp_path) -> None:
    (task, _), *_ = _seeded_set()
    path = write_schema1(task, tmp_path / "old.npz")
    with pytest.raises(UdbenchError) as err:
        Task.load(path)
    text = str(err.value)
    assert "\n" not in text
    assert "version 1" in text and "reads versions 2 and 3 only" in text
    assert "old.npz" in text and "regenerate" in text
    assert not task_file_is_valid(path)
    with np.load(path, allow_pickle=False) as npz:  # the old layout: float64, stored
        assert npz["draws"].dtype == np.float64


def test_corrupt_compressed_member_is_caught_on_access(tmp_path) -> None:
    (task, _), *_ = _seeded_set()
    path = task.save(tmp_path / "t.npz")
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("draws.npy")
    pos = info.header_offset + 30 + len(info.filename) + info.compress_size // 2
    data[pos] ^= 0xFF
    path.write_bytes(bytes(data))
    loaded = Task.load(path)
    np.testing.assert_array_equal(loaded.f_eval, task.f_eval)  # other members still fine
    with pytest.raises(UdbenchError, match="draws"):
        _ = loaded.draws
    assert not task_file_is_valid(path)


def test_generate_treats_an_old_format_file_as_one_to_write_again(tmp_path) -> None:
    from udbench.tasks.generate import task_file_clash

    (task, _), *_ = _seeded_set()
    old = write_schema1(task, tmp_path / "old.npz")
    assert task_file_clash(old, task.spec, None) is None  # like a damaged file: regenerated
    new = task.save(tmp_path / "new.npz")
    assert task_file_clash(new, task.spec, None) == ""  # the same instance: skipped
