"""udbench's own largest costs (issue 35, item 4), each before/after in one run.

1. **NGBoost-Bag's Normal.** ngboost builds a SciPy frozen distribution for every
   distribution object (several per boosting iteration); ``FastNormal`` calls SciPy's ``norm``
   with (loc, scale) instead. One NGBoost-Bag fit at n = 280 (d = 8, defaults but
   ``n_regressors`` members), stock ``Normal`` vs ``FastNormal``, alternating, fastest of
   :data:`REPEATS`; predictions compared bit for bit.
2. **Compiled programs across processes.** A fresh process fits ``nn-ens`` (defaults) and
   ``gp`` on n = 280 rows: with the compilation cache off, then warm (a first process filled
   it). Process CPU seconds; predictions compared bit for bit.
3. **Compiled programs across tuning trials.** Five ``nn-ens`` fits (n = 280, 50 epochs)
   that differ only in the learning rate, in one process: the ordinary trainer (learning rate
   compiled in: one compilation per fit) against the reporting trainer of pruned trials
   (run-time hyperparameters: one compilation for all five).
4. **The GP prior's kernel fit** (profile only, nothing changed): seconds of one
   marginal-likelihood value and gradient of a dataset's fit (``--dataset``, default
   ``cpu_activity``: 2000 rows, d = 21, Matérn-5/2 + powered exponential), split into the
   kernel matrix, its gradient, and the rest (Cholesky and triangular solves, forward and
   backward, through JAX's autodiff).

Run (niced): ``nice -n 5 uv run python benchmarks/bench_own_costs.py [--parts 1,2,3,4]``.
Needs ``$UDBENCH_DATA_DIR`` for part 4. Last line: ``ngboost_bag_fast_normal_speedup: <x>``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

REPEATS = 2


def _data(n: int = 280, d: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(n, d))
    y = np.sin(X @ np.linspace(1.0, 3.0, d)) + 0.3 * rng.normal(size=n)
    return X, y, rng.uniform(size=(500, d))


def ngboost_part(members: int) -> float:
    from ngboost.distns import Normal

    import udbench.methods._ngboost as ng
    from udbench.methods import make_method

    X, y, Xe = _data()
    fast = ng.FastNormal
    times: dict[str, list[float]] = {"stock": [], "fast": []}
    preds = {}
    for _ in range(REPEATS):
        for name, dist in (("stock", Normal), ("fast", fast)):
            ng.FastNormal = dist
            est = make_method(f"ngboost-bag:n_regressors={members}")
            c0 = time.process_time()
            est.fit(X, y)
            times[name].append(time.process_time() - c0)
            preds[name] = est.predict(Xe)
    ng.FastNormal = fast
    same = all(
        np.array_equal(getattr(preds["stock"], f), getattr(preds["fast"], f))
        for f in ("mean", "aleatoric", "epistemic")
    )
    best = {k: min(v) for k, v in times.items()}
    print(
        f"1. ngboost-bag ({members} members, n=280): stock Normal {best['stock']:.2f} s, "
        f"FastNormal {best['fast']:.2f} s CPU (all: {times}); predictions bit-identical: {same}"
    )
    return best["stock"] / best["fast"]


_FRESH = r"""
import hashlib, json, time
import numpy as np
c0 = time.process_time()
from udbench._threads import cell_threads
from udbench.methods import make_method
rng = np.random.default_rng(0)
X = rng.uniform(size=(280, 8))
y = np.sin(X @ np.linspace(1.0, 3.0, 8)) + 0.3 * rng.normal(size=280)
out = {}
with cell_threads():
    t_imp = time.process_time() - c0
    for spec in ("nn-ens", "gp"):
        c = time.process_time()
        p = make_method(spec).fit(X, y).predict(X[:50])
        out[spec] = [time.process_time() - c,
                     hashlib.sha256(p.mean.tobytes() + p.total.tobytes()).hexdigest()]
out["imports"] = t_imp
print(json.dumps(out))
"""


def cache_part() -> float:
    root = tempfile.mkdtemp(prefix="bench-cc-")
    env = {**os.environ, "UDBENCH_CACHE_DIR": root}

    def fresh(cache: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-c", _FRESH],
            env={**env, "UDBENCH_COMPILE_CACHE": cache},
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(done.stdout.strip().splitlines()[-1])

    off = fresh("off")
    fresh("")  # fills the cache
    warm = fresh("")
    same = all(off[m][1] == warm[m][1] for m in ("nn-ens", "gp"))
    t_off = sum(off[m][0] for m in ("nn-ens", "gp"))
    t_warm = sum(warm[m][0] for m in ("nn-ens", "gp"))
    print(
        f"2. fresh process, nn-ens + gp fit and predict (n=280): cache off {t_off:.2f} s, "
        f"warm {t_warm:.2f} s CPU (nn-ens {off['nn-ens'][0]:.2f} → {warm['nn-ens'][0]:.2f}, "
        f"gp {off['gp'][0]:.2f} → {warm['gp'][0]:.2f}); bit-identical: {same}"
    )
    return t_off / t_warm


def trials_part() -> float:
    from udbench._cache import disable_compile_cache
    from udbench._threads import cell_threads
    from udbench.methods import make_method
    from udbench.methods._progress import reporting

    class NoStops:  # reports at one checkpoint, never stops: the pruned trials' trainer
        def checkpoints(self, total: int) -> tuple[int, ...]:
            return (total - 1,)

        def report(self, step: int, predict: object) -> None:
            pass

    disable_compile_cache()  # what is measured here is compilation
    X, y, _ = _data()
    lrs = [1.1e-3, 1.3e-3, 1.7e-3, 2.3e-3, 3.1e-3]
    out = {}
    with cell_threads():
        make_method("nn-ens:n_epochs=50,lr=0.001").fit(X, y)  # imports, first use
        for name in ("compiled-in", "run-time"):
            c0 = time.process_time()
            for lr in lrs:
                est = make_method(f"nn-ens:n_epochs=50,lr={lr}")
                if name == "run-time":
                    with reporting(NoStops()):
                        est.fit(X, y)
                else:
                    est.fit(X, y)
            out[name] = time.process_time() - c0
    print(
        f"3. five nn-ens trials (n=280, 50 epochs, new learning rate each): learning rate "
        f"compiled in {out['compiled-in']:.2f} s, run-time {out['run-time']:.2f} s CPU"
    )
    return out["compiled-in"] / out["run-time"]


def kernel_fit_part(dataset: str) -> None:
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    from udbench._seeding import make_rng
    from udbench._threads import cell_threads
    from udbench.data import load_covariates
    from udbench.priors.gp import fit as F
    from udbench.priors.gp.kernels import cross, parse_kernel_family, sum_kernel

    cov = load_covariates(dataset)
    cand = np.asarray(cov.cand_idx)
    rows = np.sort(make_rng("gp-fit-rows", cov.key).choice(cand, min(2000, cand.size), False))
    X, y = cov.X[rows], cov.y_real[rows]
    ys = (y - y.mean()) / y.std()
    parts = parse_kernel_family(cov.spec.kernel_family)
    orders = tuple(1 if p == "arccosine" else 0 for p in parts)

    def timed(fn, *args):  # CPU seconds of a warm call (the first compiles)
        jax.block_until_ready(fn(*args))
        c0 = time.process_time()
        jax.block_until_ready(fn(*args))
        return time.process_time() - c0

    with cell_threads(), jax.enable_x64(True):
        flat, unravel = ravel_pytree(F._init_theta(parts, X.shape[1]))
        objective = F._make_objective(X, ys, parts, orders, unravel)
        Xj = jnp.asarray(X)

        def kernel(f):
            specs, variances, _ = F._constrain(unravel(f), parts, orders)
            return cross(sum_kernel(specs, variances), Xj, Xj)

        t_all = timed(objective, flat)
        t_k = timed(jax.jit(kernel), flat)
        t_kg = timed(jax.jit(jax.grad(lambda f: jnp.sum(kernel(f)))), flat)
    print(
        f"4. kernel fit of {dataset} ({X.shape[0]} rows, d={X.shape[1]}, "
        f"{cov.spec.kernel_family}): one value + gradient {t_all:.2f} s CPU; kernel matrix "
        f"{t_k:.2f} s, its gradient (forward + backward) {t_kg:.2f} s, the rest (Cholesky "
        f"and solves, forward and backward) {t_all - t_kg:.2f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="1,2,3,4")
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--dataset", default="cpu_activity")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    print(f"load average before: {os.getloadavg()}", flush=True)
    ratio = float("nan")
    if "4" in parts:
        kernel_fit_part(args.dataset)
    if "3" in parts:
        print(f"compiled_trial_speedup: {trials_part():.2f}", flush=True)
    if "2" in parts:
        print(f"compile_cache_speedup: {cache_part():.2f}", flush=True)
    if "1" in parts:
        ratio = ngboost_part(args.members)
    print(f"load average after: {os.getloadavg()}")
    print(f"ngboost_bag_fast_normal_speedup: {ratio:.2f}")


if __name__ == "__main__":
    main()
