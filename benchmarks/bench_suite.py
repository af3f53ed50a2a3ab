"""Task-file storage: seconds and bytes per GP instance at kin8nm size, schema 1 vs schema 2.

One GP instance at kin8nm size (n = 3136 training inputs, n_eval = 1500, D = 1000, a fixed
Matérn-3/2 ARD kernel; the one-off kernel fit is excluded), in the same run:

- old (schema 1): f*, y, exact posterior, D joint draws at the evaluation pool *and* the
  training inputs, checks; every array float64, ZIP members stored (uncompressed);
- new (schema 2): the same instance; draws at the training inputs not stored (the GP
  default), posterior draws float32, members DEFLATE level 1.

Prints the seconds (make + write, and a lazy read of the draws) and bytes of each, and the
projected on-disk size of the ``gp-all`` and ``paper`` suites (every dataset's n_eval, n and
d; the draws' compression ratio measured here; MCMC families keep their training draws).

Run: ``uv run python benchmarks/bench_suite.py`` (reads kin8nm and the dataset table from
$UDBENCH_DATA_DIR; synthetic covariates of the same size when kin8nm is absent).
Last line: ``task_bytes_ratio_new_vs_old: <x>`` (target ≤ 0.35).
"""

from __future__ import annotations

import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from udbench.priors.gp import GPPrior
from udbench.tasks import Task, TaskSpec, make_task
from udbench.tasks._schema1 import write_schema1

N_TRAIN, N_EVAL, D = 3136, 1500, 1000
SUITES = {"gp-all": ("gp",), "paper": ("gp", "hbart", "bnn")}
N_PER_DATASET_FAMILY = 4 * 2 * 10  # noise modes × coverages × seeds


def _inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    try:
        from udbench.data import load_covariates
        from udbench.design import NoiseModel, select_training_inputs

        cov = load_covariates("kin8nm")
        train = select_training_inputs(cov, "balanced", np.random.default_rng(0))
        noise = NoiseModel(cov, "smooth-monotone")
        X = np.asarray(cov.X)
        return X, np.asarray(cov.eval_idx), np.asarray(train), noise.variance(X), "kin8nm"
    except Exception as err:  # no data folder: synthetic stand-in of the same size
        print(f"kin8nm unavailable ({err}); using synthetic covariates", file=sys.stderr)
        rng = np.random.default_rng(0)
        X = rng.random((N_TRAIN + N_EVAL, 8))
        nv = 0.33 * np.exp(X[:, 0] - 0.5)
        return X, np.arange(N_EVAL), np.arange(N_EVAL, N_EVAL + N_TRAIN), nv, "synthetic"


def _suite_sizes(draws_ratio: float) -> dict[str, tuple[int, float, float]]:
    """Per suite: (instances, GB new, GB old) from every dataset's shape (arrays exact)."""
    from udbench.data import list_datasets

    specs = [s for s in list_datasets(include_ood=False) if s.source in ("uci", "openml")]
    out = {}
    for suite, families in SUITES.items():
        keys = [s for s in specs if suite == "paper" or s.key != "sarcos"]  # gp-all: local
        n_inst, new, old = 0, 0.0, 0.0
        for s in keys:
            n, m, d = s.n_train, s.n_eval, s.n_features
            small = 8 * (n * (d + 4) + m * (d + 7)) + 16 * (n + m)  # X, y, f, σ², moments, idx
            for fam in families:
                train_draws = fam != "gp"  # MCMC families keep them by default
                new_draws = 4 * D * (m + (n if train_draws else 0)) * draws_ratio
                new += N_PER_DATASET_FAMILY * (small + new_draws)
                old += N_PER_DATASET_FAMILY * (small + 8 * D * (m + n))
                n_inst += N_PER_DATASET_FAMILY
        out[suite] = (n_inst, new / 1e9, old / 1e9)
    return out


def main() -> None:
    X, eval_idx, train_idx, noise_var, source = _inputs()
    d = X.shape[1]
    hyper = {
        "kernel_family": "matern32",
        "parts": [
            {"kernel": "matern32", "weight": 1.0, "lengthscale": np.linspace(0.4, 1.2, d).tolist()}
        ],
    }
    spec = TaskSpec("kin8nm", "gp", "smooth-monotone", "balanced", 0, n_draws=D)
    args = (X, eval_idx, train_idx, noise_var[eval_idx], noise_var[train_idx])
    # warm-up on a tiny problem so that compilation is not timed
    tiny = TaskSpec("kin8nm", "gp", "smooth-monotone", "balanced", 0, n_draws=40)
    small = (X, eval_idx[:50], train_idx[:60], noise_var[eval_idx[:50]], noise_var[train_idx[:60]])
    make_task(tiny, GPPrior(hyper, 1.0), *small)

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        old = make_task(spec, GPPrior(hyper, 1.0), *args, draws_train=True)
        t_make_old = time.perf_counter() - t0
        t0 = time.perf_counter()
        old_path = write_schema1(old, Path(tmp) / "old.npz")
        t_write_old = time.perf_counter() - t0
        t0 = time.perf_counter()
        with np.load(old_path) as npz:
            _ = npz["draws"]
        t_read_old = time.perf_counter() - t0

        t0 = time.perf_counter()
        new = make_task(spec, GPPrior(hyper, 1.0), *args)
        t_make_new = time.perf_counter() - t0
        t0 = time.perf_counter()
        new_path = new.save(Path(tmp) / "new.npz")
        t_write_new = time.perf_counter() - t0
        t0 = time.perf_counter()
        _ = Task.load(new_path).draws
        t_read_new = time.perf_counter() - t0

        b_old, b_new = old_path.stat().st_size, new_path.stat().st_size
        with zipfile.ZipFile(new_path) as zf:
            info = zf.getinfo("draws.npy")
            draws_ratio = info.compress_size / info.file_size
            members = {i.filename: (i.file_size, i.compress_size) for i in zf.infolist()}
        # the same instance: every shared array equal (draws to float32 rounding)
        np.testing.assert_allclose(new.draws, old.draws, rtol=2**-23)
        np.testing.assert_array_equal(new.post_mean, old.post_mean)
        assert new.diagnostics == old.diagnostics

    uncompressed = sum(s for s, _ in members.values())
    print(f"inputs: {source}, n={train_idx.size}, n_eval={eval_idx.size}, D={D}, d={d}")
    print(
        f"old (schema 1: float64, draws at eval+train, stored): {b_old / 1e6:.2f} MB; "
        f"make {t_make_old:.2f} s + write {t_write_old:.2f} s; read draws {t_read_old:.3f} s"
    )
    print(
        f"new (schema 2: float32 draws at eval, DEFLATE-1): {b_new / 1e6:.2f} MB "
        f"({uncompressed / 1e6:.2f} MB before compression, draws member ratio "
        f"{draws_ratio:.3f}); make {t_make_new:.2f} s + write {t_write_new:.2f} s; "
        f"read draws {t_read_new:.3f} s"
    )
    try:
        for suite, (n, gb_new, gb_old) in _suite_sizes(draws_ratio).items():
            print(
                f"suite {suite}: {n} instances, projected {gb_new:.1f} GB on disk "
                f"(schema 1: {gb_old:.1f} GB)"
            )
    except Exception as err:  # no dataset table: sizes not projected
        print(f"suite sizes not projected ({err})", file=sys.stderr)
    print(f"task_bytes_ratio_new_vs_old: {b_new / b_old:.3f}")


if __name__ == "__main__":
    main()
