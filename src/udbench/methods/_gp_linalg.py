"""Linear algebra shared by udbench's GP-family methods (GP, VLGP, DKL).

:func:`gram` is the Matérn-5/2 ARD + linear kernel as matrix products (tested equal to
GPJax's ``gram``); :func:`gaussian_nll_impl` builds the Gaussian negative log marginal
likelihood with a hand-written Cholesky gradient. Moved here from :mod:`udbench.methods.gp`
unchanged so that sister method modules can share them (method modules may not import each
other, :mod:`udbench._layers`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["gaussian_nll_impl", "gram"]

_SQRT5 = 5.0**0.5


def gram(A: Any, B: Any, lengthscale: Any, signal_var: Any, linear_var: Any) -> Any:
    """Matérn-5/2 ARD + linear cross-covariance ``K[i, j] = k(A[i], B[j])``, shape (m, n).

    The same kernel as GPJax's ``Matern52(lengthscale, variance) + Linear(variance)``
    (R&W eq. 4.17 plus ``σ_l² aᵀb``), computed as matrix products instead of GPJax's
    ``vmap`` over every pair: squared distances are ``|a|² + |b|² − 2 aᵀb`` on the scaled
    inputs (clipped at 0), so the Gram matrix and its gradient are a few GEMMs and
    elementwise ops. ``sqrt`` is taken of ``max(d², 1e-36)`` (as GPJax does) so the
    gradient is finite on the diagonal. Tested against GPJax's ``gram``.
    """
    import jax.numpy as jnp

    a = A / lengthscale
    b = B / lengthscale
    d2 = jnp.sum(a * a, axis=1)[:, None] + jnp.sum(b * b, axis=1)[None, :] - 2.0 * (a @ b.T)
    d2 = jnp.maximum(d2, 0.0)
    tau = jnp.sqrt(jnp.maximum(d2, 1e-36))
    matern = signal_var * (1.0 + _SQRT5 * tau + (5.0 / 3.0) * d2) * jnp.exp(-_SQRT5 * tau)
    return matern + linear_var * (A @ B.T)


def gaussian_nll_impl() -> Any:
    """``nll(K, y) = ½ yᵀK⁻¹y + ½ log|K| + (n/2) log 2π`` with a hand-written gradient.

    R&W eqs. 2.30 and 5.9: ``∂nll/∂K = ½ (K⁻¹ − ααᵀ)`` with ``α = K⁻¹y`` (K symmetric).
    Reverse-mode through ``jnp.linalg.cholesky`` costs about 4n³ flops (two triangular
    solves with n right-hand sides and an n×n product, transposed); forming ``K⁻¹`` by
    ``cho_solve`` costs 2n³, so one value + gradient is about 2.3n³ instead of 4.3n³.
    """
    import jax
    import jax.numpy as jnp
    from jax.scipy.linalg import cho_solve

    def forward(K: Any, y: Any) -> tuple[Any, tuple[Any, Any]]:
        L = jnp.linalg.cholesky(K)
        alpha = cho_solve((L, True), y)
        value = (
            0.5 * jnp.dot(y, alpha)
            + jnp.sum(jnp.log(jnp.diagonal(L)))
            + 0.5 * y.shape[0] * jnp.log(2.0 * jnp.pi)
        )
        return value, (L, alpha)

    @jax.custom_vjp
    def nll(K: Any, y: Any) -> Any:
        return forward(K, y)[0]

    def backward(res: tuple[Any, Any], g: Any) -> tuple[Any, Any]:
        L, alpha = res
        K_inv = cho_solve((L, True), jnp.eye(L.shape[0], dtype=L.dtype))
        return 0.5 * g * (K_inv - jnp.outer(alpha, alpha)), g * alpha

    nll.defvjp(forward, backward)
    return nll
