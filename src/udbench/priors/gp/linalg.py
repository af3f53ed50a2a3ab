"""Dense linear algebra of the GP prior: SciPy's LAPACK on CPU, JAX on an accelerator.

When JAX runs on a GPU/TPU the linear algebra stays in JAX; on CPU it uses SciPy's LAPACK,
which is faster there than JAX's CPU kernels. Callers work in float64 inside a scoped
``jax.enable_x64(True)`` and use :func:`xp` as the array namespace, so the same code runs
on either.

Jitter rule (:func:`chol_jitter`): a Cholesky factorisation starts with no jitter (the
noisy training matrix) or with ``JITTER_START·mean(diag)`` (covariance matrices), and the
jitter is multiplied by 10 until the factorisation is finite, at most
``JITTER_MAX·mean(diag)``; the jitter used is returned (and recorded in the diagnostics).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
import scipy.linalg.blas

from udbench._validation import UdbenchError

__all__ = [
    "JITTER_MAX",
    "JITTER_START",
    "add_diag",
    "chol_jitter",
    "cholesky_or_none",
    "on_accelerator",
    "solve_lower",
    "tri_matmul_T",
    "xp",
]

#: First non-zero jitter, relative to mean(diag).
JITTER_START = 1e-10
#: Largest jitter tried, relative to mean(diag).
JITTER_MAX = 1e-4


def on_accelerator() -> bool:
    """True when JAX runs on a GPU/TPU: the linear algebra then stays in JAX; on CPU it
    uses SciPy's LAPACK, which is faster there than JAX's CPU kernels."""
    return jax.default_backend() != "cpu"


def xp() -> Any:
    """The array namespace of the linear algebra: ``jax.numpy`` on an accelerator, else NumPy."""
    return jnp if on_accelerator() else np


def cholesky_or_none(A: Any) -> Any | None:
    """Lower Cholesky factor of ``A`` (n, n), or None if it is not positive definite."""
    if on_accelerator():
        L = jnp.linalg.cholesky(A)
        return L if bool(jnp.all(jnp.isfinite(jnp.diag(L)))) else None
    try:
        return scipy.linalg.cholesky(A, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return None


def solve_lower(L: Any, B: Any, *, trans: bool = False) -> Any:
    """L⁻¹B (or L⁻ᵀB with ``trans``) for lower-triangular L."""
    if on_accelerator():
        return jax.scipy.linalg.solve_triangular(L, B, lower=True, trans=1 if trans else 0)
    return scipy.linalg.solve_triangular(
        L, B, lower=True, trans=1 if trans else 0, check_finite=False
    )


def add_diag(A: Any, value: Any) -> Any:
    """A + diag(value) (value scalar or vector), without forming an identity matrix."""
    if on_accelerator():
        return A + jnp.diag(jnp.broadcast_to(value, (A.shape[0],)))
    out = np.array(A, dtype=np.float64, copy=True)
    out[np.diag_indices_from(out)] += value
    return out


def tri_matmul_T(z: Any, L: Any) -> Any:
    """z @ Lᵀ for lower-triangular L (BLAS trmm on CPU: half the flops of a dense product)."""
    if on_accelerator():
        return z @ L.T
    trmm = scipy.linalg.blas.get_blas_funcs("trmm", (L,))
    # (L zᵀ)ᵀ computed in Fortran order: zᵀ is an F-contiguous view of C-contiguous z
    out = trmm(1.0, np.asfortranarray(L), np.asfortranarray(z.T), lower=1)
    return np.ascontiguousarray(out.T)


def chol_jitter(A: Any, *, start: float | None) -> tuple[Any, float]:
    """Cholesky factor with adaptive jitter; returns (L, jitter added).

    Parameters
    ----------
    A : array, shape (n, n)
        Symmetric matrix.
    start : float or None
        First jitter relative to mean(diag A); None tries no jitter first, then
        :data:`JITTER_START`.

    Raises
    ------
    UdbenchError
        If even ``JITTER_MAX·mean(diag)`` does not make ``A`` positive definite.
    """
    ns = xp()
    scale = float(ns.mean(ns.diag(A)))
    jitter = 0.0 if start is None else start * scale
    while True:
        L = cholesky_or_none(add_diag(A, jitter) if jitter else A)
        if L is not None:
            return L, jitter
        jitter = JITTER_START * scale if jitter == 0.0 else jitter * 10.0
        if jitter > JITTER_MAX * scale * (1 + 1e-9):
            raise UdbenchError(
                "GPPrior: covariance matrix is not positive definite even with jitter "
                f"{JITTER_MAX:g}·mean(diag)"
            )
