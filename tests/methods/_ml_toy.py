"""Shared toy data for method sanity tests: y = f(x) + noise, noise variance growing in x."""

from __future__ import annotations

import numpy as np

from udbench._seeding import make_rng


def noise_var(x: np.ndarray) -> np.ndarray:
    """True noise variance σ²(x) = (0.05 + 0.5 x)² on x in [0, 1]."""
    return (0.05 + 0.5 * x) ** 2


def f(x: np.ndarray) -> np.ndarray:
    """True regression function."""
    return np.sin(4.0 * x)


def heteroscedastic(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n inputs uniform on [0, 1] (shape (n, 1)) and targets f(x) + N(0, σ²(x))."""
    rng = make_rng("tests", "methods", "heteroscedastic", n, seed)
    x = rng.uniform(0.0, 1.0, n)
    return x[:, None], f(x) + rng.standard_normal(n) * np.sqrt(noise_var(x))
