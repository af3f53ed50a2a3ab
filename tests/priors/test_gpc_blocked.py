"""The blocked momenta of the latent-GP classification sampler (issue 37).

Module under test: udbench.priors._gpc_sampler (``_momentum_block``, ``_run_chains``).

The momenta of a block are drawn at once (one product A Z); these tests check that they are
exactly the reference's m + A z for the block's z, point-major, and that the chains consume
them one per step, in order, across block boundaries. The statistical tests of the sampler
(brute force, SBC) are in test_gp_classification.py.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from udbench.priors import _gpc_sampler
from udbench.priors._gpc_sampler import _momentum_block, _run_chains
from udbench.priors.gp_classification import contrast_basis


def _full_ops(n: int, C: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Ops of ``reference="laplace-full"`` with a random factor A, mean m and a flat
    likelihood (1/τ = 0, H = 0, α = 0: the ratio R is the same constant everywhere)."""
    rng = np.random.default_rng(seed)
    nC = n * C
    return {
        "A": rng.standard_normal((nC, nC)),
        "H": np.zeros((n, C, C)),
        "m": rng.standard_normal((n, C)),
        "alpha": np.zeros((n, C)),
        "labels": rng.integers(0, C + 1, n),
        "inv_tau": np.zeros(n),
        "Q2": contrast_basis(C + 1)[1:],
    }


def test_full_block_momenta_are_m_plus_A_z() -> None:
    """ν_s = m + A z_s for z = N(key, (steps, nC)), reshaped point-major (ν_s[i, c] is row
    i·C + c of A z_s)."""
    n, C, steps = 5, 2, 7
    ops = _full_ops(n, C)
    key = jax.random.key(3)
    with jax.enable_x64(True):
        nus = np.asarray(
            _momentum_block({k: jnp.asarray(v) for k, v in ops.items()}, key, steps, full=True)
        )
        z = np.asarray(jax.random.normal(key, (steps, n * C), dtype=jnp.float64))
    assert nus.shape == (steps, n, C)
    for s in range(steps):
        expected = ops["m"] + (ops["A"] @ z[s]).reshape(n, C)
        np.testing.assert_allclose(nus[s], expected, rtol=0, atol=1e-12)
    # index by hand: point 3, contrast 1 of step 4
    assert nus[4, 3, 1] == pytest.approx(ops["m"][3, 1] + ops["A"][3 * C + 1] @ z[4], abs=1e-12)
    # the steps' momenta differ (not one z repeated)
    assert np.min(np.abs(np.diff(nus, axis=0))) > 0


def test_laplace_block_momenta_follow_matheron_per_step_key() -> None:
    """``full=False``: step s is Matheron's rule with key s of split(key, steps):
    ν = m + f₀ − ΣW^½L_B⁻ᵀL_B⁻¹(W^½f₀ + ε), f₀ = Lz₁ (dense NumPy solves)."""
    n, C, steps = 4, 2, 3
    rng = np.random.default_rng(1)
    X = rng.standard_normal((n, n))
    Sigma = X @ X.T + n * np.eye(n)
    L = np.linalg.cholesky(Sigma)
    sw = 0.5 + rng.random(n)
    LB = np.linalg.cholesky(np.eye(n) + sw[:, None] * Sigma * sw[None, :])
    m = rng.standard_normal((n, C))
    ops = {"L": L, "Sigma": Sigma, "LB": LB, "sqrt_w": sw, "m": m}
    key = jax.random.key(5)
    with jax.enable_x64(True):
        nus = np.asarray(
            _momentum_block({k: jnp.asarray(v) for k, v in ops.items()}, key, steps, full=False)
        )
        for s, k in enumerate(jax.random.split(key, steps)):
            k1, k2 = jax.random.split(k)
            z1 = np.asarray(jax.random.normal(k1, (n, C), dtype=jnp.float64))
            eps = np.asarray(jax.random.normal(k2, (n, C), dtype=jnp.float64))
            f0 = L @ z1
            B = LB @ LB.T
            expected = m + f0 - Sigma @ (sw[:, None] * np.linalg.solve(B, sw[:, None] * f0 + eps))
            np.testing.assert_allclose(nus[s], expected, rtol=0, atol=1e-10)
    assert nus.shape == (steps, n, C)


def test_chains_consume_block_momenta_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a flat likelihood every ESS step accepts its first proposal, so each step is
    x ← m + (x − m)cos θ + (ν − m)sin θ with θ ∈ [0, 2π) (returned as |θ|). Replaying that
    with the momenta recomputed from the documented key stream (blocks of 2 within a
    thin-3 run: one full block and a remainder) reproduces every kept state."""
    monkeypatch.setattr(_gpc_sampler, "MOMENTUM_BLOCK", 2)
    _run_chains.clear_cache()  # the block size is read when tracing
    n, C, n_keep, thin = 3, 2, 4, 3
    ops = _full_ops(n, C, seed=2)
    A, m = ops["A"], ops["m"]
    chain_key = jax.random.key(9)
    with jax.enable_x64(True):
        out = _run_chains(
            {k: jnp.asarray(v) for k, v in ops.items()},
            chain_key[None],
            n_warmup=0,
            n_keep=n_keep,
            thin=thin,
            full=True,
        )
        _run_chains.clear_cache()

        def normal(k: jax.Array, steps: int) -> np.ndarray:
            return np.asarray(jax.random.normal(k, (steps, n * C), dtype=jnp.float64))

        k_init, _, k_keep = jax.random.split(chain_key, 3)
        x = m + (A @ normal(k_init, 1)[0]).reshape(n, C)
        nus = []
        for kj in jax.random.split(k_keep, n_keep):
            for kb, steps in zip(jax.random.split(kj, 2), (2, 1), strict=True):
                k_mom, _ = jax.random.split(kb)
                nus += [m + (A @ z).reshape(n, C) for z in normal(k_mom, steps)]
    theta = np.asarray(out["theta"][0])
    assert np.all(np.asarray(out["subiter"]) == 1) and theta.shape == (n_keep * thin,)
    v = np.asarray(out["v"][0])
    for j in range(n_keep):
        for s in range(j * thin, (j + 1) * thin):
            x = m + (x - m) * np.cos(theta[s]) + (nus[s] - m) * np.sin(theta[s])
        np.testing.assert_allclose(v[j], x, rtol=0, atol=1e-10)
