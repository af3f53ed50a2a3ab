"""Deterministic seed derivation: one independent random stream per named component.

A seed is derived by hashing the tuple of components (e.g. ``("task", "concrete", "gp",
"u-shaped", "balanced", 3)``) with BLAKE2b, so adding a component anywhere never shifts
the streams of others, and the same coordinates always give the same stream on every
platform (the habit of benchopt's per-component seeds).
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["derive_seed", "make_rng"]


def derive_seed(*components: object, bits: int = 63) -> int:
    """Return a non-negative integer seed derived from ``components``.

    Parameters
    ----------
    *components : object
        Strings, integers, floats or booleans naming the stream; their ``repr`` is hashed.
    bits : int, default 63
        Size of the seed in bits (use 32 for libraries that need a 32-bit seed).

    Returns
    -------
    int
        A seed in ``[0, 2**bits)``; identical for identical components, on every platform.
    """
    for c in components:
        if not isinstance(c, str | int | float | bool | np.integer):
            raise TypeError(f"derive_seed: components must be str/int/float/bool; got {c!r}")
    text = "\x1f".join(f"{type(c).__name__}:{c!r}" for c in components)
    if any(isinstance(c, np.integer) for c in components):
        text = "\x1f".join(
            f"int:{int(c)!r}" if isinstance(c, np.integer) else f"{type(c).__name__}:{c!r}"
            for c in components
        )
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % (1 << bits)


def make_rng(*components: object) -> np.random.Generator:
    """Return a NumPy ``Generator`` (PCG64) seeded by :func:`derive_seed` of ``components``."""
    return np.random.default_rng(derive_seed(*components))
