"""Speed of the draw-based squared-loss and CRPS decompositions (issue 3).

D = 1000 reference-posterior draws at n = 1500 evaluation points. Each vectorised
decomposition is timed against a plain NumPy loop over evaluation points, in the same run and
on the same inputs, and the results are checked to agree (rtol 1e-9):

- squared loss: per point, mean and mean squared deviations of the D draws;
- CRPS: per point, the energy form of paper A.3 written directly, i.e. the fair pairwise mean
  |Y_i − Y_j| over the D x D pairs of that point (the vectorised path never forms D x D).

For information it also times a per-point loop that uses the same sorted-sample identity as the
vectorised CRPS (that ratio is small: sorting and the normal CDF dominate either way).
The last line is ``speedup_vs_loop: <x>``, the smaller of the squared-loss and CRPS ratios.

Run: ``uv run python benchmarks/bench_risk.py``
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from scipy.special import ndtr

from udbench._seeding import make_rng
from udbench.risk import crps_decomposition, squared_loss_decomposition

D, N, REPEATS = 1000, 1500, 20
SQRT_PI = np.sqrt(np.pi)


def best_time(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def squared_loop(f: np.ndarray, s2: np.ndarray, a: np.ndarray) -> np.ndarray:
    out = np.empty((4, f.shape[1]))
    for j in range(f.shape[1]):
        col = f[:, j]
        m = col.mean()
        out[:, j] = (
            s2[j],
            np.mean((col - m) ** 2),
            (a[j] - m) ** 2,
            s2[j] + np.mean((col - a[j]) ** 2),
        )
    return out


def mean_abs_normal(delta: np.ndarray, s: float) -> np.ndarray:
    z = delta / s
    return s * (2 * np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi) + z * (2 * ndtr(z) - 1))


def crps_loop(f, s2, mu, v_hat, eps, *, pairwise: bool) -> np.ndarray:
    d = f.shape[0]
    w = 2.0 * np.arange(1, d + 1) - d - 1.0
    out = np.empty((4, f.shape[1]))
    for j in range(f.shape[1]):
        sd, sd_hat = np.sqrt(s2[j]), np.sqrt(v_hat[j])
        cross = mean_abs_normal(f[:, j] - mu[j], np.sqrt(s2[j] + v_hat[j])).mean()
        y = f[:, j] + sd * eps[:, j]
        if pairwise:  # A.3 energy form as written: all D x D pairs of this point
            pair = np.abs(y[:, None] - y[None, :]).sum() / (d * (d - 1))
        else:  # same sorted-sample identity as the vectorised path
            pair = 2.0 * (w @ np.sort(y)) / (d * (d - 1))
        au = sd / SQRT_PI
        out[:, j] = (
            au,
            0.5 * pair - au,
            cross - 0.5 * pair - sd_hat / SQRT_PI,
            cross - sd_hat / SQRT_PI,
        )
    return out


def main() -> None:
    rng = make_rng("bench_risk")
    f = rng.standard_normal((D, N)) * rng.uniform(0.2, 1.0, N) + rng.standard_normal(N)
    s2 = rng.uniform(0.1, 1.0, N)
    mu = rng.standard_normal(N)
    v_hat = rng.uniform(0.2, 2.0, N)
    eps = make_rng("risk", "crps", "noise", 0).standard_normal((D, N))  # the library's stream

    sq = squared_loss_decomposition(f, s2, mu)
    cr = crps_decomposition(f, s2, mu, v_hat)
    t0 = time.perf_counter()
    cr_pairs = crps_loop(f, s2, mu, v_hat, eps, pairwise=True)  # slow: timed once
    t_cr_pairs = time.perf_counter() - t0
    checks = (
        (sq, squared_loop(f, s2, mu)),
        (cr, cr_pairs),
        (cr, crps_loop(f, s2, mu, v_hat, eps, pairwise=False)),
    )
    for dec, ref in checks:
        got = np.stack([dec.au, dec.generalized_variance, dec.deployment_gap, dec.total])
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)

    t_sq = best_time(lambda: squared_loss_decomposition(f, s2, mu))
    t_sq_loop = best_time(lambda: squared_loop(f, s2, mu))
    t_cr = best_time(lambda: crps_decomposition(f, s2, mu, v_hat), 5)
    t_cr_sorted = best_time(lambda: crps_loop(f, s2, mu, v_hat, eps, pairwise=False), 5)
    r_sq, r_cr = t_sq_loop / t_sq, t_cr_pairs / t_cr
    print(
        f"D={D} n={N}; vectorised and loop results agree (rtol 1e-9); "
        f"best of {REPEATS} (squared), 5 (crps)"
    )
    print(f"squared: vectorised {t_sq * 1e3:.1f} ms, loop {t_sq_loop * 1e3:.1f} ms: x{r_sq:.1f}")
    print(
        f"crps: vectorised {t_cr * 1e3:.1f} ms, "
        f"pairwise loop {t_cr_pairs * 1e3:.0f} ms: x{r_cr:.1f}"
    )
    print(
        f"crps (info): sorted-identity loop {t_cr_sorted * 1e3:.1f} ms: "
        f"x{t_cr_sorted / t_cr:.1f} (same algorithm per point)"
    )
    print(f"speedup_vs_loop: {min(r_sq, r_cr):.1f}")


if __name__ == "__main__":
    main()
