"""Campaign units with JAX's compiled programs kept against dropped after every unit.

Usage::

    uv run python benchmarks/bench_campaign_programs.py [--methods nn-lap,nn-drop,nn-swag]
        [--n 800] [--d 8] [--cells 4]

Each method is fitted and predicts on ``--cells`` synthetic data sets of the same shape
(``--n`` training rows, ``--d`` uniform covariates, 500 evaluation points; the cells of one
method and dataset in the runs campaign), in the same process: once dropping the compiled
programs after each cell (``udbench._threads.release_compiled_programs``, what the campaign
engine did after every unit before 2026-12-04) and once keeping them
(``release_compiled_programs_if_crowded`` in a process far from its limits), alternating.
JAX's persistent compilation cache is on, as in a campaign (``udbench._cache.
enable_compile_cache``: programs that took over a second to compile are loaded from disk, not
rebuilt, in both passes). CPU seconds of the process per cell, the first cell of each pass
left out (it compiles in both). The two passes' outputs are checked to be the same bit for
bit. Last line: ``campaign_kept_programs_speedup: <x>`` (geometric mean over the methods of
dropped / kept).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from udbench._cache import enable_compile_cache
from udbench._seeding import make_rng
from udbench._threads import release_compiled_programs
from udbench.methods import make_method


def _pass(spec: str, data: list[tuple[np.ndarray, ...]], drop: bool) -> tuple[list[float], list]:
    seconds, outputs = [], []
    for X, y, Xe in data:
        c0 = time.process_time()
        pred = make_method(spec).fit(X, y).predict(Xe)
        seconds.append(time.process_time() - c0)
        outputs.append((pred.mean, pred.aleatoric, pred.epistemic))
        if drop:
            release_compiled_programs()
    return seconds, outputs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default="nn-lap,nn-drop,nn-swag")
    ap.add_argument("--n", type=int, default=800)
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--cells", type=int, default=4)
    args = ap.parse_args()
    enable_compile_cache()
    rng = make_rng("bench", "campaign-programs")
    data = []
    for _ in range(args.cells):
        X = rng.uniform(size=(args.n, args.d))
        y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.3 * rng.normal(size=args.n)
        data.append((X, y, rng.uniform(size=(500, args.d))))
    ratios = []
    print(f"{'method':<10} {'dropped s/cell':>15} {'kept s/cell':>12} {'ratio':>6}  same bits")
    for spec in args.methods.split(","):
        release_compiled_programs()
        dropped, out_d = _pass(spec, data, drop=True)
        release_compiled_programs()
        kept, out_k = _pass(spec, data, drop=False)
        same = all(
            np.array_equal(a, b)
            for o1, o2 in zip(out_d, out_k, strict=True)
            for a, b in zip(o1, o2, strict=True)
        )
        d_mean, k_mean = float(np.mean(dropped[1:])), float(np.mean(kept[1:]))
        ratios.append(d_mean / k_mean)
        print(f"{spec:<10} {d_mean:>15.2f} {k_mean:>12.2f} {d_mean / k_mean:>6.1f}  {same}")
        if not same:
            raise SystemExit(f"{spec}: the kept programs gave other outputs")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"campaign_kept_programs_speedup: {geo:.2f}")


if __name__ == "__main__":
    main()
