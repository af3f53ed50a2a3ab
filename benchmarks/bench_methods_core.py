"""Seconds per fit + predict of BLR and GP at kin8nm size (n = 3136, d = 8, 1500 test points).

Synthetic inputs in [0, 1] with a smooth target and heteroscedastic noise (the sizes of the
issue; the real table is not needed for timing). Each configuration (smoke, default) is run
once after a small warm-up fit of the same shape, so JAX compilation is reported separately
from steady-state time. Ratios are against BLR (default) measured in the same process.

Run: ``uv run python benchmarks/bench_methods_core.py [--n 3136]``.
Last line: ``gp_default_fit_predict_seconds: <s>``.
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


def _time(name: str, params: dict, X, y, Xt) -> float:
    cls = get_method_class(name)
    start = time.perf_counter()
    pred = cls(**params).fit(X, y).predict(Xt)
    seconds = time.perf_counter() - start
    assert np.all(np.isfinite(pred.total))
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=3136)
    parser.add_argument("--d", type=int, default=8)
    parser.add_argument("--m", type=int, default=1500)
    args = parser.parse_args()
    X, y, Xt = _data(args.n, args.d, args.m)
    results: dict[str, float] = {}
    for name in ("blr", "gp"):
        cls = get_method_class(name)
        for label, params in (("smoke", dict(cls.smoke_params)), ("default", {})):
            warm = time.perf_counter()
            _time(name, {**params, "max_iter": 1}, X[:50], y[:50], Xt[:50])  # compile small
            warm = time.perf_counter() - warm
            results[f"{name}_{label}"] = _time(name, params, X, y, Xt)
            print(
                f"{name:>4} {label:>7}: {results[f'{name}_{label}']:8.2f} s per fit+predict "
                f"(small warm-up {warm:.2f} s)",
                flush=True,
            )
    base = results["blr_default"]
    for key, value in results.items():
        print(f"ratio {key} / blr_default: {value / base:.1f}")
    print(f"gp_default_fit_predict_seconds: {results['gp_default']:.2f}")


if __name__ == "__main__":
    main()
