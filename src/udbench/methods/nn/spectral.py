"""Spectral normalisation of the shared backbone (Miyato et al., ICLR 2018; paper C.4, D.4).

Every dense weight of the backbone — the input layer and both layers of every residual
block, not the head — is rescaled to ‖W‖₂ ≤ c (``BackboneConfig.sn_coeff``) by the rule of
the paper's D.4::

    W  ←  W · min(1, c / σ̂(W))

with σ̂(W) the largest singular value estimated by power iteration on a persistent vector
u ∈ ℝ^{fan_out} per layer (member-stacked like the parameters):

- **initialisation**: u from a standard normal, then :data:`SN_INIT_ITERS` = 15 power
  iterations on the initial weights (as PyTorch's ``spectral_norm`` parametrisation does);
- **training**: one power iteration per optimiser step on the current weights (held constant
  for the gradient), then σ̂ = vᵀ W u with u, v fixed, differentiated in W (as Miyato et
  al.): the objective sees the normalised weights, the optimiser updates the raw ones;
- **prediction**: :data:`SN_REFINE_ITERS` = 3 further iterations on the trained weights
  (D.4's "three refinement steps at inference"), capped at the exact bound (an SVD, see
  :func:`bake`), after which the normalised weights are written into the returned
  parameters once, at the end of training. Prediction is then an ordinary forward pass, the
  same for every call — every neural method gets SN without code of its own.

The trainer applies all this when ``BackboneConfig.spectral_norm`` is True
(:func:`udbench.methods.nn.training.train_members`); with it False nothing here runs and the
computation is the one without the option, bit for bit (tested).

Power iteration under-estimates σ_max (σ̂ = vᵀWu ≤ σ_max). During training the bound is
therefore soft: SN pushes several singular values to the bound, the top of the spectrum
becomes flat, power iteration converges slowly and σ̂ was measured up to 10 % low (small c,
narrow networks). The final weights are capped at the exact bound, so after training
‖W‖₂ ≤ c holds to rounding (tests/methods/test_spectral_norm.py checks it by SVD).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

__all__ = [
    "SN_INIT_ITERS",
    "SN_REFINE_ITERS",
    "SpectralNormLoss",
    "bake",
    "cap_exact",
    "init_sn_state",
    "normalise",
    "power_iteration",
    "sn_paths",
]

#: Power iterations from the random start vector at initialisation.
SN_INIT_ITERS = 15
#: Refinement iterations after training, before the normalised weights are fixed (paper D.4).
SN_REFINE_ITERS = 3
_EPS = 1e-12  # guards the normalisation of a zero vector
_KEY_TAG = 0x5E  # fold_in tag deriving the start vectors' key from a member's training key

Params = dict[str, Any]


def sn_paths(params: Params) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """The constrained weights of one network: ``(path, location)`` pairs.

    ``path`` is the name :func:`~udbench.methods.nn.backbone.features` gives the weight
    (``"input"``, ``"blocks/<k>/w1"``, ``"blocks/<k>/w2"``); ``location`` indexes it in the
    parameter pytree.
    """
    yield "input", ("input", "w")
    for k in range(len(params["blocks"])):
        yield f"blocks/{k}/w1", ("blocks", k, "w1")
        yield f"blocks/{k}/w2", ("blocks", k, "w2")


def _get(params: Params, loc: tuple[Any, ...]) -> jax.Array:
    node: Any = params
    for part in loc:
        node = node[part]
    return node  # type: ignore[no-any-return]


def _set(params: Params, loc: tuple[Any, ...], value: jax.Array) -> Params:
    """A copy of ``params`` with the leaf at ``loc`` replaced (containers copied, leaves shared)."""
    head, rest = loc[0], loc[1:]
    if isinstance(params, list):
        out_list = list(params)
        out_list[head] = value if not rest else _set(params[head], rest, value)
        return out_list  # type: ignore[return-value]
    out = dict(params)
    out[head] = value if not rest else _set(params[head], rest, value)
    return out


def _unit(x: jax.Array) -> jax.Array:
    return x / (jnp.linalg.norm(x) + _EPS)


def power_iteration(
    w: jax.Array, u: jax.Array, n_iter: int
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``n_iter`` (≥ 1) power iterations for the top singular pair of ``w`` (fan_in, fan_out).

    One iteration: v = W u / ‖W u‖, u = Wᵀ v / ‖Wᵀ v‖. The weights are held constant
    (``stop_gradient``).

    Returns
    -------
    u : jax.Array, shape (fan_out,)
        The updated right vector (the persistent state).
    v : jax.Array, shape (fan_in,)
        The left vector of the last iteration.
    sigma : jax.Array, scalar
        σ̂ = vᵀ W u (≤ σ_max(W)), differentiable in ``w`` with u, v fixed (Miyato et al.).
    """
    wc = jax.lax.stop_gradient(w)

    def body(_: int, uv: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        u_, _v = uv
        v_ = _unit(wc @ u_)
        return _unit(wc.T @ v_), v_

    u, v = jax.lax.fori_loop(0, n_iter, body, (u, jnp.zeros((w.shape[0],), w.dtype)))
    u, v = jax.lax.stop_gradient(u), jax.lax.stop_gradient(v)
    return u, v, v @ (w @ u)


def init_sn_state(params: Params, key: jax.Array, n_iter: int = SN_INIT_ITERS) -> dict[str, Any]:
    """Start vectors of one network: ``{path: u (fan_out,)}`` after ``n_iter`` iterations.

    ``key`` is a member's training key; the start vectors are drawn from
    ``fold_in(key, 0x5E)`` so the key stream of training is not touched.
    """
    sub = jax.random.fold_in(key, _KEY_TAG)
    out: dict[str, Any] = {}
    for path, loc in sn_paths(params):
        w = _get(params, loc)
        u0 = _unit(jax.random.normal(jax.random.fold_in(sub, len(out)), (w.shape[1],), w.dtype))
        out[path] = power_iteration(w, u0, n_iter)[0]
    return out


def normalise(
    params: Params, state: dict[str, Any], coeff: float, n_iter: int = 1
) -> tuple[Params, dict[str, Any], dict[str, jax.Array]]:
    """One network's parameters with every constrained weight rescaled by min(1, c/σ̂).

    Parameters
    ----------
    params : dict
        One network (no member axis); keys other than the constrained weights pass through.
    state : dict
        ``{path: u}`` from :func:`init_sn_state` or a previous call.
    coeff : float
        The bound c (> 0).
    n_iter : int, default 1
        Power iterations before σ̂ is taken.

    Returns
    -------
    params : dict
        The normalised parameters (differentiable in the raw ones).
    state : dict
        The updated vectors.
    sigma : dict
        σ̂ per path (before rescaling).
    """
    new_state, sigmas = {}, {}
    out = params
    for path, loc in sn_paths(params):
        w = _get(params, loc)
        u, _v, sigma = power_iteration(w, state[path], n_iter)
        new_state[path], sigmas[path] = u, sigma
        out = _set(out, loc, w * jnp.minimum(1.0, coeff / sigma))
    return out, new_state, sigmas


def bake(params: Params, state: dict[str, Any], coeff: float) -> Params:
    """The trained network's normalised weights, the function the method predicts with.

    D.4's rule with the refinement carried to convergence: :data:`SN_REFINE_ITERS` power
    iterations (D.4), then each weight is also capped at the *exact* bound,
    W ← W·min(1, c/σ_max(W)) with σ_max from an SVD (what the power iteration converges to;
    one small SVD per layer, once per fit). Where the estimate had converged the cap changes
    nothing; where it had not (a flat top of the spectrum, which SN itself produces by
    pushing several singular values to the bound; measured up to 10 % low after training)
    it enforces ‖W‖₂ ≤ c. The result needs no further normalisation.
    """
    out, _, _ = normalise(params, state, coeff, n_iter=SN_REFINE_ITERS)
    return jax.lax.stop_gradient(cap_exact(out, coeff))


def cap_exact(params: Params, coeff: float) -> Params:
    """One network with every constrained weight capped at the exact bound.

    W ← W·min(1, c/σ_max(W)), σ_max from an SVD, for each weight of :func:`sn_paths`; other
    parameters pass through. The last step of :func:`bake`; also the projection of weight
    vectors that did not come out of training (NN-SWAG's posterior samples).
    """
    out = params
    for _path, loc in sn_paths(out):
        w = _get(out, loc)
        sigma = jnp.linalg.svd(w, compute_uv=False)[0]
        out = _set(out, loc, w * jnp.minimum(1.0, coeff / sigma))
    return out


@dataclass(frozen=True)
class SpectralNormLoss:
    """A per-member objective evaluated on spectrally normalised weights.

    Wraps a loss ``inner(params, state, xb, yb, mask, key, model) -> (loss, state)`` (the
    trainer's convention): the carried state becomes ``{"sn": {path: u}, "inner": state}``;
    each call runs one power iteration, normalises the backbone weights with c =
    ``model.sn_coeff`` and hands them to ``inner``. Frozen and compared by ``inner``, so the
    same wrapped loss is the same static argument of ``jit`` (no recompilation).
    """

    inner: Any

    def __call__(
        self,
        params: Params,
        state: dict[str, Any],
        xb: jax.Array,
        yb: jax.Array,
        mask: jax.Array,
        key: jax.Array,
        model: Any,
    ) -> tuple[jax.Array, dict[str, Any]]:
        normed, sn_state, _ = normalise(params, state["sn"], model.sn_coeff)
        loss, inner_state = self.inner(normed, state["inner"], xb, yb, mask, key, model)
        return loss, {"sn": sn_state, "inner": inner_state}
