"""Speed of the proxy metrics: every proxy for 19 methods × 1500 evaluation points on one task.

One task's arrays are made in closed form (n = 1500 evaluation points: f*, heteroscedastic
noise variance, a Gaussian posterior), the noisy targets are drawn once
(:func:`udbench.evaluation.proxies.noisy_targets`, as the run loop does per cell), and
:func:`udbench.evaluation.proxies.proxy_metrics` scores 19 different predictions (mean, AU, EU
of varied quality) against them. After one warm-up call (imports), the 19 calls are timed
``--repeats`` times; the figure is the median per cell. Target: <= 0.5 s per cell.

Last line: ``proxy_metrics_seconds_per_cell: <x>``.

Usage::

    uv run python benchmarks/bench_metrics.py [--n-eval 1500] [--n-methods 19] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from udbench._seeding import make_rng
from udbench.evaluation.proxies import PROXY_KEYS, noisy_targets, proxy_metrics


def run(n_eval: int, n_methods: int, repeats: int) -> float:
    """Median seconds per cell of ``proxy_metrics`` (plus the target draw)."""
    rng = make_rng("bench-metrics")
    x = rng.uniform(size=(n_eval, 3))
    f = np.sin(3 * x[:, 0]) + x[:, 1] ** 2
    noise = 0.1 * np.exp(2 * (x[:, 0] - 0.5))
    post_var = 0.01 + 0.2 * np.sum((x - 0.5) ** 2, axis=1)
    preds = []
    for j in range(n_methods):
        scale = 0.5 + j / n_methods
        mean = f + rng.normal(size=n_eval) * np.sqrt(post_var) * scale
        preds.append((mean, noise * scale, post_var * (2 - scale)))
    proxy_metrics(*preds[0], noisy_targets("bench", f, noise), f)  # warm-up
    per_cell = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for mean, au, eu in preds:
            y = noisy_targets("bench", f, noise)
            out = proxy_metrics(mean, au, eu, y, f)
        per_cell.append((time.perf_counter() - t0) / n_methods)
    assert all(np.isfinite(out[k]) for k in PROXY_KEYS)
    print(f"cells: {n_methods} methods × {n_eval} points, {len(PROXY_KEYS)} proxies each")
    return statistics.median(per_cell)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-eval", type=int, default=1500)
    parser.add_argument("--n-methods", type=int, default=19)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    seconds = run(args.n_eval, args.n_methods, args.repeats)
    print("target: <= 0.5 s per cell")
    print(f"proxy_metrics_seconds_per_cell: {seconds:.4f}")


if __name__ == "__main__":
    main()
