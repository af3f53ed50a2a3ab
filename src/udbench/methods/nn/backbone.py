"""The shared residual-MLP backbone with a Gaussian mean/variance head (paper App. C.4).

Functional and stateless: parameters are a plain pytree (nested dicts of arrays), so a
stack of M members is the same pytree with a leading member axis and every function here
can be :func:`jax.vmap`-ed over it. The architecture, for standardised inputs x̃ (d,)::

    h⁰   = Dropout(σ(W_in x̃ + b_in))                               input layer
    hᵏ⁺¹ = hᵏ + W₂ᵏ Dropout(σ(W₁ᵏ hᵏ + b₁ᵏ)) + b₂ᵏ,   k = 0..K-1     residual blocks
    (μ̃, ρ) = W_out h^K + b_out                                      Gaussian head
    s = softplus(ρ) + ε,   ṽ = s²                                   (standardised units)

Dropout sits after the input layer and after the first layer of every residual block (the
positions NN-Drop relies on, paper C.4); it is active only when a ``dropout_key`` is given.

Spectral normalisation (NN-Lap-SN, NN-FSP-SN, SNGP-Het, and an option of every neural method):
``BackboneConfig(spectral_norm=True, sn_coeff=c)``. The trainer applies it by handing the
objective a copy of the parameters with the constrained weights rescaled (the same weights
as named below) and returns the normalised weights, so the functions here need no argument
for it (:mod:`udbench.methods.nn.spectral`). Extension point: every dense weight
of the backbone (input layer and both layers of every block, not the head) passes through
``weight_transform(path, W)`` before use, with ``path`` one of ``"input"``,
``"blocks/<k>/w1"``, ``"blocks/<k>/w2"`` (e.g. another weight reparametrisation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from udbench._validation import check_choice, param_error

__all__ = [
    "ACTIVATIONS",
    "NN_DEFAULTS",
    "BackboneConfig",
    "NNDefaults",
    "apply_gaussian",
    "features",
    "gaussian_head",
    "gaussian_nll",
    "head_outputs",
    "init_backbone",
    "init_members",
]

Params = dict[str, Any]
WeightTransform = Callable[[str, jax.Array], jax.Array]

#: Hidden activations σ available to the backbone.
ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "relu": jax.nn.relu,
    "gelu": jax.nn.gelu,
    "silu": jax.nn.silu,
    "tanh": jnp.tanh,
}


@dataclass(frozen=True)
class NNDefaults:
    """The defaults of the shared network and its training: their one home (paper App. C.4).

    Every neural method on the backbone (NN-Ens, NN-Bag, NN-Drop, NN-EDL, NN-DEUP, NN-SWAG,
    NN-Lap, NN-FSP, SNGP-Het, the softmax ensemble) takes these keywords, and its constructor's
    defaults read :data:`NN_DEFAULTS` (``hidden_dim: int = NN_DEFAULTS.hidden_dim``), as do
    :class:`BackboneConfig`'s; changing a default is one edit here. The constructors keep
    explicit keywords, so scikit-learn's ``get_params`` / ``set_params`` / ``clone`` read them
    from the signatures as before. A class with a default of its own (NN-Drop's
    ``dropout=0.2``, ``spectral_norm=True`` of the SN variants and SNGP-Het) states it in its
    signature. The tuning ranges are
    :data:`~udbench.methods.nn.ensemble.NN_SEARCH_SPACE` and the accepted values
    :data:`~udbench.methods.nn.ensemble.NN_PARAM_CONSTRAINTS` (one home each already); the
    architectural and optimiser defaults are the centres of the search space.

    Attributes
    ----------
    hidden_dim : int, default 64
        Width of the input layer and of every residual block.
    n_blocks : int, default 2
        Number of residual blocks.
    activation : str, default "relu"
        Hidden activation (a key of :data:`ACTIVATIONS`).
    dropout : float, default 0.0
        Dropout rate during training.
    lr : float, default 1e-3
        NAdamW learning rate (constant).
    momentum : float, default 0.9
        NAdamW first-moment coefficient β₁.
    weight_decay : float, default 1e-4
        Decoupled weight decay.
    n_epochs : int, default 200
        Training epochs.
    batch_size : int, default 128
        Minibatch size.
    eps : float, default 1e-6
        Floor added to softplus(ρ) (standardised standard deviations).
    dtype : str, default "float32"
        Floating type of the network.
    random_state : int or None, default 0
        Root seed.
    spectral_norm : bool, default False
        Spectral normalisation of the backbone (:mod:`udbench.methods.nn.spectral`).
    sn_coeff : float, default 1.0
        Its bound c (‖W‖₂ ≤ c per dense layer).
    """

    hidden_dim: int = 64
    n_blocks: int = 2
    activation: str = "relu"
    dropout: float = 0.0
    lr: float = 1e-3
    momentum: float = 0.9
    weight_decay: float = 1e-4
    n_epochs: int = 200
    batch_size: int = 128
    eps: float = 1e-6
    dtype: str = "float32"
    random_state: int | None = 0
    spectral_norm: bool = False
    sn_coeff: float = 1.0


#: The shared network's defaults (:class:`NNDefaults`), read by every neural method.
NN_DEFAULTS = NNDefaults()


@dataclass(frozen=True)
class BackboneConfig:
    """Architecture of the shared residual MLP (hashable: a static argument under ``jit``).

    Parameters
    ----------
    in_dim : int
        Number of input features d.
    hidden_dim : int, default 64
        Width of the input layer and of every residual block.
    n_blocks : int, default 2
        Number of residual blocks K (0 gives a one-hidden-layer network).
    activation : {"relu", "gelu", "silu", "tanh"}, default "relu"
        Hidden activation σ.
    dropout : float, default 0.0
        Dropout rate in [0, 1) at the input layer and after each block's first layer.
    eps : float, default 1e-6
        Floor ε added to softplus(ρ) (standard deviations, standardised units).
    n_outputs : int, default 2
        Width of the head; 2 for the Gaussian head (μ̃, ρ). Heads with more outputs
        (e.g. evidential NIG parameters) reuse the same backbone.
    spectral_norm : bool, default False
        Spectrally normalise every dense weight of the backbone (input layer and both
        layers of every block, not the head) to ‖W‖₂ ≤ ``sn_coeff`` during training and
        prediction (:mod:`udbench.methods.nn.spectral`; paper C.4, D.4). Off: the
        computation is the one without the option, bit for bit.
    sn_coeff : float, default 1.0
        The bound c > 0 of spectral normalisation (used only when ``spectral_norm``).
    """

    in_dim: int
    hidden_dim: int = NN_DEFAULTS.hidden_dim
    n_blocks: int = NN_DEFAULTS.n_blocks
    activation: str = NN_DEFAULTS.activation
    dropout: float = NN_DEFAULTS.dropout
    eps: float = NN_DEFAULTS.eps
    n_outputs: int = 2
    spectral_norm: bool = NN_DEFAULTS.spectral_norm
    sn_coeff: float = NN_DEFAULTS.sn_coeff

    def __post_init__(self) -> None:
        for field in ("in_dim", "hidden_dim", "n_outputs"):
            value = getattr(self, field)
            if not isinstance(value, int | np.integer) or value < 1:
                raise param_error("BackboneConfig", field, "be an int >= 1", value)
        if not isinstance(self.n_blocks, int | np.integer) or self.n_blocks < 0:
            raise param_error("BackboneConfig", "n_blocks", "be an int >= 0", self.n_blocks)
        check_choice("BackboneConfig", "activation", self.activation, ACTIVATIONS)
        if not 0.0 <= float(self.dropout) < 1.0:
            raise param_error("BackboneConfig", "dropout", "be in [0, 1)", self.dropout)
        if not float(self.eps) > 0.0:
            raise param_error("BackboneConfig", "eps", "be > 0", self.eps)
        if not isinstance(self.spectral_norm, bool | np.bool_):
            raise param_error("BackboneConfig", "spectral_norm", "be a bool", self.spectral_norm)
        c = self.sn_coeff
        if not (isinstance(c, int | float | np.number) and np.isfinite(c) and c > 0.0):
            raise param_error("BackboneConfig", "sn_coeff", "be a finite real > 0", self.sn_coeff)


def _dense(key: jax.Array, fan_in: int, fan_out: int, gain: float, dtype: Any) -> Params:
    init = jax.nn.initializers.variance_scaling(gain, "fan_in", "normal")
    return {"w": init(key, (fan_in, fan_out), dtype), "b": jnp.zeros((fan_out,), dtype)}


def init_backbone(key: jax.Array, config: BackboneConfig, dtype: Any = jnp.float32) -> Params:
    """Initialise one network's parameters.

    Weights are truncated-normal with variance ``gain / fan_in`` (He scaling, gain 2, for
    layers feeding σ; LeCun, gain 1, for the blocks' second layers and the head), biases
    zero except the head's variance bias, set so that the initial s is 1 (unit predictive
    standard deviation on standardised targets).

    Parameters
    ----------
    key : jax.Array
        A JAX PRNG key.
    config : BackboneConfig
    dtype : dtype, default float32

    Returns
    -------
    dict
        ``{"input": {"w": (d, H), "b": (H,)}, "blocks": [{"w1": (H, H), "b1", "w2", "b2"}] * K,
        "head": {"w": (H, n_outputs), "b": (n_outputs,)}}``.
    """
    k_in, k_blocks, k_head = jax.random.split(key, 3)
    h = config.hidden_dim
    blocks = []
    for kb in jax.random.split(k_blocks, max(config.n_blocks, 1))[: config.n_blocks]:
        k1, k2 = jax.random.split(kb)
        l1 = _dense(k1, h, h, 2.0, dtype)
        l2 = _dense(k2, h, h, 1.0, dtype)
        blocks.append({"w1": l1["w"], "b1": l1["b"], "w2": l2["w"], "b2": l2["b"]})
    head = _dense(k_head, h, config.n_outputs, 1.0, dtype)
    if config.n_outputs >= 2:
        # softplus(b) + eps = 1  ->  b = log(expm1(1 - eps))
        head["b"] = head["b"].at[1].set(jnp.log(jnp.expm1(1.0 - config.eps)).astype(dtype))
    return {"input": _dense(k_in, config.in_dim, h, 2.0, dtype), "blocks": blocks, "head": head}


def init_members(
    key: jax.Array, config: BackboneConfig, n_members: int, dtype: Any = jnp.float32
) -> Params:
    """Initialise ``n_members`` independent networks, stacked on a leading member axis.

    Member m is ``init_backbone(jax.random.split(key, n_members)[m], config)``.
    """
    return _init_members_jit(key, config, int(n_members), jnp.dtype(dtype))


@partial(jax.jit, static_argnames=("config", "n_members", "dtype"))
def _init_members_jit(key: jax.Array, config: BackboneConfig, n_members: int, dtype: Any) -> Params:
    keys = jax.random.split(key, n_members)
    return jax.vmap(lambda k: init_backbone(k, config, dtype))(keys)


def _dropout(x: jax.Array, rate: float, key: jax.Array | None, per_row: bool = True) -> jax.Array:
    if key is None or rate <= 0.0:
        return x
    # per_row=False: one mask over the units, shared by every row (one sampled sub-network)
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape if per_row else x.shape[-1:])
    return jnp.where(keep, x / (1.0 - rate), jnp.zeros_like(x))


def features(
    params: Params,
    x: jax.Array,
    config: BackboneConfig,
    *,
    dropout_key: jax.Array | None = None,
    weight_transform: WeightTransform | None = None,
    dropout_per_row: bool = True,
) -> jax.Array:
    """Backbone features h^K of one network at inputs ``x`` (n, d) -> (n, hidden_dim).

    Dropout is applied (inverted scaling) only when ``dropout_key`` is given; the
    ``weight_transform`` hook is described in the module docstring. With
    ``dropout_per_row=False`` each dropout layer draws one mask over its units, shared by all
    rows: the key then selects one thinned network, so a row's output does not depend on
    the other rows of the batch (MC-dropout prediction, NN-Drop). Default: a mask per row
    (training).
    """
    act = ACTIVATIONS[config.activation]
    wt = weight_transform or (lambda _path, w: w)
    keys: list[jax.Array | None]
    if dropout_key is not None and config.dropout > 0.0:
        keys = list(jax.random.split(dropout_key, config.n_blocks + 1))
    else:
        keys = [None] * (config.n_blocks + 1)
    p = params["input"]
    h = _dropout(act(x @ wt("input", p["w"]) + p["b"]), config.dropout, keys[0], dropout_per_row)
    for k, blk in enumerate(params["blocks"]):
        u = act(h @ wt(f"blocks/{k}/w1", blk["w1"]) + blk["b1"])
        u = _dropout(u, config.dropout, keys[k + 1], dropout_per_row)
        h = h + u @ wt(f"blocks/{k}/w2", blk["w2"]) + blk["b2"]
    return h


def head_outputs(params: Params, h: jax.Array) -> jax.Array:
    """Raw head outputs ``W_out h + b_out``, shape (n, n_outputs)."""
    return h @ params["head"]["w"] + params["head"]["b"]


def gaussian_head(raw: jax.Array, eps: float) -> tuple[jax.Array, jax.Array]:
    """Map raw head outputs (n, ≥2) to mean μ̃ (n,) and variance ṽ = (softplus(ρ) + ε)² (n,)."""
    s = jax.nn.softplus(raw[:, 1]) + eps
    return raw[:, 0], s * s


def apply_gaussian(
    params: Params,
    x: jax.Array,
    config: BackboneConfig,
    *,
    dropout_key: jax.Array | None = None,
    weight_transform: WeightTransform | None = None,
    dropout_per_row: bool = True,
) -> tuple[jax.Array, jax.Array]:
    """Predictive mean (n,) and variance (n,) of one network, standardised units (paper C.4).

    Keywords as :func:`features`.
    """
    h = features(
        params,
        x,
        config,
        dropout_key=dropout_key,
        weight_transform=weight_transform,
        dropout_per_row=dropout_per_row,
    )
    return gaussian_head(head_outputs(params, h), config.eps)


def gaussian_nll(
    mean: jax.Array, var: jax.Array, y: jax.Array, mask: jax.Array | None = None
) -> jax.Array:
    """Gaussian negative log-likelihood, averaged over the (masked) batch.

    ``mean(½ log(2π v) + (y − μ)² / (2v))`` over the entries where ``mask`` is 1
    (all entries if ``mask`` is None). Shapes: all (n,). Returns a scalar.
    """
    per = 0.5 * (jnp.log(2.0 * jnp.pi * var) + (y - mean) ** 2 / var)
    if mask is None:
        return jnp.mean(per)
    return jnp.sum(per * mask) / jnp.maximum(jnp.sum(mask), 1.0)
