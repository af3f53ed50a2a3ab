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


#: Noise SD of :func:`known_noise` (homoscedastic, target units).
KNOWN_NOISE_SD = 0.25


def known_noise(
    n: int = 400, d: int = 5, seed: int = 0, n_test: int = 2000, outliers: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A d-dimensional toy with known Gaussian noise (issue 31's reference-behaviour tests).

    x ~ U[-1, 1]^d (d >= 4), y = sin(3x₁) + 0.8x₂² − 0.6x₃ + 0.4cos(2x₄) + N(0, 0.25²);
    var(y) ≈ 0.8, so the noise is 8 % of it. ``outliers`` training targets get ±10 added.
    Returns X (n, d), y (n,), X_test (n_test, d), y_test (n_test,) (held-out, with noise).
    """
    rng = make_rng("tests", "methods", "known_noise", n, d, seed, n_test, outliers)

    def g(Z: np.ndarray) -> np.ndarray:
        return np.sin(3 * Z[:, 0]) + 0.8 * Z[:, 1] ** 2 - 0.6 * Z[:, 2] + 0.4 * np.cos(2 * Z[:, 3])

    X = rng.uniform(-1.0, 1.0, (n, d))
    X_test = rng.uniform(-1.0, 1.0, (n_test, d))
    y = g(X) + KNOWN_NOISE_SD * rng.standard_normal(n)
    y_test = g(X_test) + KNOWN_NOISE_SD * rng.standard_normal(n_test)
    if outliers:
        y[:outliers] += 10.0 * np.sign(rng.standard_normal(outliers))
    return X, y, X_test, y_test


def coverage90(mean: np.ndarray, total: np.ndarray, y: np.ndarray) -> float:
    """Share of ``y`` inside the central 90 % interval of N(mean, total) (total: a variance)."""
    return float(np.mean(np.abs(y - mean) <= 1.6448536269514722 * np.sqrt(total)))


def assert_patch_keeps_bits(
    monkeypatch, spec: str, target: object, name: str, value: object, X, y, Xe
) -> None:
    """Fit ``spec`` on (X, y) as it is and with ``target.name`` patched to ``value``; the
    predictions at ``Xe`` (mean, AU, EU) must be the same bit for bit."""
    from udbench.methods import make_method

    ours = make_method(spec).fit(X, y).predict(Xe)
    monkeypatch.setattr(target, name, value)
    theirs = make_method(spec).fit(X, y).predict(Xe)
    for field in ("mean", "aleatoric", "epistemic"):
        np.testing.assert_array_equal(getattr(ours, field), getattr(theirs, field))
