"""SWAG's moments and draws, shared by NN-SWAG and NN-SWAG-Softmax (Maddox et al., 2019).

Maddox, Garipov, Izmailov, Vetrov & Wilson, NeurIPS 2019, "A Simple Baseline for Bayesian
Uncertainty in Deep Learning", §3: the first two moments of SGD iterates collected at a
constant learning rate (:func:`swag_moments`) and draws from the SWAG Gaussian
(:func:`swag_sample`): SWAG-Diagonal's N(θ_SWA, Σ_diag), or the diagonal plus low-rank
N(θ_SWA, ½(Σ_diag + D̂D̂ᵀ/(R − 1))). Parameters are pytrees (one network,
or a leading axis of iterates / draws).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

__all__ = ["swag_moments", "swag_sample"]


def swag_moments(iterates: Any) -> tuple[Any, Any]:
    """Diagonal SWAG moments of collected iterates (Maddox et al., 2019).

    Parameters
    ----------
    iterates : pytree
        Parameters with a leading axis of T collected iterates.

    Returns
    -------
    mean, var : pytree of numpy.ndarray (float64)
        Per parameter, E[θ] and E[θ²] − E[θ]² over the T iterates (clipped at 0).
    """
    leaves = [np.asarray(a, dtype=np.float64) for a in jax.tree_util.tree_leaves(iterates)]
    treedef = jax.tree_util.tree_structure(iterates)
    first = [a.mean(axis=0) for a in leaves]
    second = [(a * a).mean(axis=0) for a in leaves]
    var = [np.maximum(s - f * f, 0.0) for f, s in zip(first, second, strict=True)]
    unflatten = jax.tree_util.tree_unflatten
    return unflatten(treedef, first), unflatten(treedef, var)


def swag_sample(
    mean: Any, var: Any, deviations: Any, n_samples: int, rng: np.random.Generator
) -> Any:
    """S draws from the SWAG Gaussian (Maddox et al. 2019, §3).

    With deviations (R >= 2 columns), the diagonal plus low-rank SWAG sample (the paper's
    §3, "SWAG: Low Rank plus Diagonal Covariance Structure")

        θ = μ + (1/√2) σ ⊙ z₁ + (1/√(2(R − 1))) D̂ z₂,   z₁ ~ N(0, I_p), z₂ ~ N(0, I_R),

    i.e. θ ~ N(μ, ½(diag σ² + D̂D̂ᵀ/(R − 1))). Without deviations, SWAG-Diagonal (the paper's
    §3, "SWAG-Diagonal"): θ = μ + σ ⊙ z₁, i.e. θ ~ N(μ, diag σ²) with the full diagonal
    variance; the ½ belongs to the averaged diagonal + low-rank covariance only.

    Parameters
    ----------
    mean, var : pytree of ndarray
        θ_SWA and the diagonal variances σ² (one network, float64).
    deviations : pytree of ndarray or None
        D̂ as a pytree with a leading axis of R >= 2 columns (θ_t − θ_SWA); None for
        SWAG-Diagonal.
    n_samples : int
        S.
    rng : numpy.random.Generator
        z₂ (S, R) is drawn first, then z₁ leaf by leaf in the pytree's order.

    Returns
    -------
    pytree of ndarray, float64
        Leading axis S.
    """
    leaves_mu, treedef = jax.tree_util.tree_flatten(mean)
    leaves_var = jax.tree_util.tree_leaves(var)
    z2 = None
    leaves_dev: list[Any] = []
    if deviations is not None:
        leaves_dev = jax.tree_util.tree_leaves(deviations)
        R = int(np.shape(leaves_dev[0])[0])
        z2 = rng.standard_normal((n_samples, R))
    diag_scale = 0.5 if z2 is not None else 1.0
    out = []
    for i, (mu, v) in enumerate(zip(leaves_mu, leaves_var, strict=True)):
        mu, v = np.asarray(mu, np.float64), np.asarray(v, np.float64)
        draw = mu + np.sqrt(diag_scale * v) * rng.standard_normal((n_samples, *mu.shape))
        if z2 is not None:
            dev = np.asarray(leaves_dev[i], np.float64)  # (R, *shape)
            low = np.tensordot(z2, dev, axes=(1, 0)) / np.sqrt(2.0 * (dev.shape[0] - 1))
            draw = draw + low
        out.append(draw)
    return jax.tree_util.tree_unflatten(treedef, out)
