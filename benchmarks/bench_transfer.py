"""Cost of an alternative GP oracle (``udbench transfer``) against the task's own generation.

One GP task at kin8nm size (n = 3136 training inputs, n_eval = 1500, D = 1000 draws by
default) with a fixed Matérn-3/2 ARD kernel, kin8nm's kernel family (the one-off dataset fit
of the prior is excluded, as in ``bench_gp_tasks.py``): first the task's own generation
(:func:`udbench.tasks.make_task`: f*, y, exact conditioning, D joint posterior draws, the
acceptance checks), then, in the same process, the alternative oracles of
:func:`udbench.evaluation.transfer.alternative_moments` on that task:

- ``gp:KERNEL`` (default ``gp:rbf``): the kernel refitted by marginal likelihood on the task's
  training sample with the known noise (``TRANSFER_FIT_SETTINGS["standard"]``: at most 500
  rows, 2 restarts × 100 L-BFGS-B iterations, or ``--fit-rows/--fit-restarts/--fit-iters``),
  then exact moments on the whole sample — the headline number;
- ``gp:prior``: the task's own kernel, moments only (no fit, no draws).

JIT compilation is excluded: a warm-up on a tiny task and a tiny fit run first.

Run: ``uv run python benchmarks/bench_transfer.py [--kernel rbf] [--draws 1000]`` (reads kin8nm
from $UDBENCH_DATA_DIR; synthetic covariates of the same size when it is absent).
Last line: ``transfer_oracle_seconds_per_task: <x>`` (the ``gp:KERNEL`` oracle, seconds).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from udbench._threads import cell_threads, fix_xla_threads
from udbench.evaluation.transfer import alternative_moments, parse_oracle
from udbench.priors.gp import GPPrior
from udbench.tasks import TaskSpec, make_task

N_TRAIN, N_EVAL = 3136, 1500


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="rbf", help="kernel family of the gp: oracle")
    ap.add_argument("--draws", type=int, default=1000, help="D of the task's own generation")
    ap.add_argument("--fit-rows", type=int, default=None)
    ap.add_argument("--fit-restarts", type=int, default=None)
    ap.add_argument("--fit-iters", type=int, default=None)
    args = ap.parse_args()
    fix_xla_threads()  # one XLA thread, as in task generation: before JAX is first used
    given = {"max_rows": args.fit_rows, "restarts": args.fit_restarts, "maxiter": args.fit_iters}
    overrides = {k: v for k, v in given.items() if v is not None} or None

    X, eval_idx, train_idx, noise_var, source = _inputs()
    d = X.shape[1]
    hyper = {
        "kernel_family": "matern32",
        "parts": [
            {"kernel": "matern32", "weight": 1.0, "lengthscale": np.linspace(0.4, 1.2, d).tolist()}
        ],
    }
    prior = GPPrior(hyper, 1.0)
    spec = TaskSpec("kin8nm", "gp", "smooth-monotone", "balanced", 0, n_draws=args.draws)
    oracle = parse_oracle(f"gp:{args.kernel}")

    def task_of(e: np.ndarray, t: np.ndarray, n_draws: int):  # type: ignore[no-untyped-def]
        s = TaskSpec(**{**spec.to_dict(), "n_draws": n_draws})
        return make_task(s, prior, X, e, t, noise_var[e], noise_var[t])

    with cell_threads():  # one compute thread, as a runner cell and task generation
        small = task_of(eval_idx[:50], train_idx[:60], 40)  # warm-up: compilation not timed
        alternative_moments(small, oracle, fit_settings={"restarts": 1, "maxiter": 2})
        alternative_moments(small, parse_oracle("gp:prior"))

        t0 = time.perf_counter()
        task = task_of(eval_idx, train_idx, args.draws)
        t_gen = time.perf_counter() - t0
        alt = alternative_moments(task, oracle, fit_settings=overrides)
        own = alternative_moments(task, parse_oracle("gp:prior"))
    gap = float(np.max(np.abs(own.mean - task.post_mean)))
    print(f"data: {source}, n = {train_idx.size}, n_eval = {eval_idx.size}, D = {args.draws}")
    print(f"task generation (make_task, own oracle + {args.draws} draws): {t_gen:.2f} s")
    fit = alt.info.get("fit_settings", {})
    print(
        f"{oracle.text} oracle (fit on {fit.get('n_rows')} rows, {fit.get('restarts')} × "
        f"{fit.get('maxiter')} iterations, then exact moments): {alt.seconds:.2f} s "
        f"({alt.seconds / t_gen:.2f} × generation)"
    )
    print(f"gp:prior oracle (moments only): {own.seconds:.2f} s; max |m − stored m| = {gap:.1e}")
    print(f"transfer_oracle_seconds_per_task: {alt.seconds:.2f}")


if __name__ == "__main__":
    main()
