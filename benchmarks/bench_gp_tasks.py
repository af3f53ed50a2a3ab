"""Speed and memory of one GP task instance at kin8nm size, against scikit-learn.

One GP instance (n = 3136 training inputs, n_eval = 1500, D = 1000 posterior draws) with a
fixed Matérn-3/2 ARD kernel (the one-off kernel fit is excluded): ours draws f* jointly at
the evaluation pool and training inputs, draws y, conditions exactly and draws D joint
posterior draws at the evaluation pool *and* the training inputs, then runs the acceptance
checks. The baseline, in the same process, is scikit-learn's ``GaussianProcessRegressor``
with the same fixed kernel and per-point noise (``alpha`` = noise vector, no optimiser)
doing ``fit`` + ``sample_y(X_eval, 1000)`` (posterior draws at the evaluation pool only).

Run: ``uv run python benchmarks/bench_gp_tasks.py`` (reads kin8nm from $UDBENCH_DATA_DIR;
falls back to uniform synthetic covariates of the same size when it is absent).
Last line: ``speedup_vs_sklearn: <x>`` (target ≥ 3); peak RSS target < 2 GiB.
"""

from __future__ import annotations

import resource
import sys
import time

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern

from udbench.priors.gp import GPPrior
from udbench.tasks import TaskSpec, make_task

N_TRAIN, N_EVAL, D = 3136, 1500, 1000
SCALE = 1.0
REPEATS = 2


def _inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    try:
        from udbench.data import load_covariates
        from udbench.design import NoiseModel, select_training_inputs

        cov = load_covariates("kin8nm")
        train = select_training_inputs(cov, "balanced", 0)
        noise = NoiseModel(cov, "smooth-monotone")
        X = np.asarray(cov.X)
        return X, np.asarray(cov.eval_idx), train, noise.variance(X), "kin8nm"
    except Exception as err:  # no data folder: synthetic stand-in of the same size
        print(f"kin8nm unavailable ({err}); using synthetic covariates", file=sys.stderr)
        rng = np.random.default_rng(0)
        X = rng.random((N_TRAIN + N_EVAL, 8))
        nv = 0.33 * np.exp(X[:, 0] - 0.5)
        return X, np.arange(N_EVAL), np.arange(N_EVAL, N_EVAL + N_TRAIN), nv, "synthetic"


def _peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def main() -> None:
    X, eval_idx, train_idx, noise_var, source = _inputs()
    d = X.shape[1]
    ls = np.linspace(0.4, 1.2, d)
    hyper = {
        "kernel_family": "matern32",
        "parts": [{"kernel": "matern32", "weight": 1.0, "lengthscale": ls.tolist()}],
    }
    prior = GPPrior(hyper, SCALE)
    spec = TaskSpec("kin8nm", "gp", "smooth-monotone", "balanced", 0, n_draws=D)

    # warm-up on a tiny problem so that compilation is not timed
    make_task(
        spec.__class__(**{**spec.to_dict(), "n_draws": 40}),
        prior,
        X,
        eval_idx[:50],
        train_idx[:60],
        noise_var[eval_idx[:50]],
        noise_var[train_idx[:60]],
    )

    def run_ours() -> tuple[float, object]:
        t0 = time.perf_counter()
        task = make_task(
            spec,
            GPPrior(hyper, SCALE),
            X,
            eval_idx,
            train_idx,
            noise_var[eval_idx],
            noise_var[train_idx],
        )
        return time.perf_counter() - t0, task

    def run_eval_only() -> float:
        t0 = time.perf_counter()
        make_task(
            spec,
            GPPrior(hyper, SCALE, draws_at_train=False),
            X,
            eval_idx,
            train_idx,
            noise_var[eval_idx],
            noise_var[train_idx],
        )
        return time.perf_counter() - t0

    kernel = ConstantKernel(SCALE**2, "fixed") * Matern(ls, "fixed", nu=1.5)

    def run_sklearn(y: np.ndarray) -> tuple[float, GaussianProcessRegressor, np.ndarray]:
        gpr = GaussianProcessRegressor(kernel, alpha=noise_var[train_idx], optimizer=None)
        t0 = time.perf_counter()
        gpr.fit(X[train_idx], y)
        draws = gpr.sample_y(X[eval_idx], D, random_state=0)
        return time.perf_counter() - t0, gpr, draws

    # alternate the runs and keep each one's best of REPEATS, so that load from other
    # processes on the machine affects both sides alike
    times_ours, times_eval_only, times_sk = [], [], []
    peak_ours = float("nan")
    for rep in range(REPEATS):
        t, task = run_ours()
        times_ours.append(t)
        if rep == 0:
            peak_ours = _peak_rss_gib()  # before any scikit-learn run
        times_eval_only.append(run_eval_only())
        t, gpr, sk_draws = run_sklearn(task.y_train)
        times_sk.append(t)
    ours, ours_eval_only, sk = min(times_ours), min(times_eval_only), min(times_sk)

    # same posterior: exact means agree
    sk_mean = gpr.predict(X[eval_idx])
    err = float(np.max(np.abs(sk_mean - task.post_mean)))
    print(f"best of {REPEATS} alternating runs each")
    print(f"inputs: {source}, n={train_idx.size}, n_eval={eval_idx.size}, D={D}, d={d}")
    print(f"max |mean_ours - mean_sklearn|: {err:.2e}")
    print(f"ours (f* + y + exact posterior, joint draws at eval+train, checks): {ours:.2f} s")
    print(
        f"ours, draws at eval only (draws_at_train=False): {ours_eval_only:.2f} s "
        f"(ratio {sk / ours_eval_only:.2f})"
    )
    print(f"sklearn (fit + sample_y({D}) at eval only): {sk:.2f} s  [{sk_draws.shape}]")
    print(f"peak RSS after our first run (process): {peak_ours:.2f} GiB (target < 2)")
    print(f"speedup_vs_sklearn: {sk / ours:.2f}")


if __name__ == "__main__":
    main()
