"""Seconds per fit + predict of BLR and GP at kin8nm size (n = 3136, d = 8, 1500 test points).

Synthetic inputs in [0, 1] with a smooth target and heteroscedastic noise (the sizes of the
issue; the real table is not needed for timing). Times include JAX compilation for that shape
(once per shape and process). The GP's cost is reported per marginal-likelihood evaluation
too (L-BFGS-B iterations × about 1.1 evaluations), so a run with a small ``max_iter`` predicts
the cost of the default. Ratios are against BLR (default) measured in the same process.

Run: ``uv run python benchmarks/bench_methods_core.py [--n 3136] [--gp-max-iter 50 200]``.
Last line: ``gp_fit_predict_seconds_per_iteration: <s>``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from udbench._seeding import make_rng
from udbench.methods import get_method_class


def _data(n: int, d: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = make_rng("bench", "methods-core", n, d, m)
    X = rng.uniform(size=(n, d))
    f = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 - X[:, 2] * X[:, 3]
    y = f + np.exp(0.5 * (X[:, 4] - 0.5)) * 0.3 * rng.standard_normal(n)
    return X, y, rng.uniform(size=(m, d))


def _run(name: str, params: dict, X, y, Xt) -> tuple[float, object]:
    cls = get_method_class(name)
    start = time.perf_counter()
    method = cls(**params).fit(X, y)
    pred = method.predict(Xt)
    seconds = time.perf_counter() - start
    assert np.all(np.isfinite(pred.total))
    return seconds, method


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=3136)
    parser.add_argument("--d", type=int, default=8)
    parser.add_argument("--m", type=int, default=1500)
    parser.add_argument("--gp-max-iter", type=int, nargs="+", default=[50, 200])
    args = parser.parse_args()
    X, y, Xt = _data(args.n, args.d, args.m)
    print(f"n={args.n} d={args.d} m={args.m}", flush=True)
    blr = get_method_class("blr")
    base, _ = _run("blr", {}, X, y, Xt)
    smoke, _ = _run("blr", dict(blr.smoke_params), X, y, Xt)
    print(f"blr default: {base:8.2f} s per fit+predict", flush=True)
    print(f"blr   smoke: {smoke:8.2f} s per fit+predict", flush=True)
    per_iter = float("nan")
    for max_iter in args.gp_max_iter:
        seconds, gp = _run("gp", {"max_iter": max_iter}, X, y, Xt)
        per_iter = seconds / max(1, gp.n_iter_)
        print(
            f"gp max_iter={max_iter}: {seconds:8.2f} s per fit+predict, {gp.n_iter_} iterations, "
            f"{per_iter:.2f} s/iteration, ratio to blr {seconds / base:.0f}",
            flush=True,
        )
    print(f"gp_fit_predict_seconds_per_iteration: {per_iter:.2f}")


if __name__ == "__main__":
    main()
