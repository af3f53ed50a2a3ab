"""NN-EDL: deep evidential regression on the shared backbone (Amini et al., NeurIPS 2020).

The shared residual MLP with a four-output evidential head: the parameters of a
Normal-Inverse-Gamma (NIG) distribution over the Gaussian likelihood's mean and variance,

    μ = raw₀,   v = softplus(raw₁) + ε,   α = 1 + softplus(raw₂) + ε,   β = softplus(raw₃) + ε

(paper C.4: μ(x), v(x) > 0, α(x) > 1, β(x) > 0). Trained by the shared loop on the NIG
negative log marginal likelihood (a Student-t with 2α degrees of freedom, location μ and
scale² = β(1 + v)/(vα)) plus the evidence regulariser reg_weight·|y − μ|·(2v + α)
(Amini et al., eqs. 8–9). Outputs: â = μ, AU = E[σ²] = β/(α − 1), EU = Var[μ] = β/(v(α − 1)).
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from udbench.methods.base import NotFittedError, Prediction
from udbench.methods.nn.backbone import NN_DEFAULTS, BackboneConfig, features, head_outputs
from udbench.methods.nn.ensemble import (
    NN_PARAM_CONSTRAINTS,
    NN_SEARCH_SPACE,
    SN_PARAM_CONSTRAINTS,
    GaussianNNEnsemble,
)

__all__ = ["NNEvidential", "edl_loss", "nig_head", "nig_nll"]


def nig_head(raw: jax.Array, eps: float) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Map raw head outputs (n, 4) to the NIG parameters μ, v, α, β, each (n,).

    ``v = softplus(raw₁) + eps``, ``α = 1 + softplus(raw₂) + eps``,
    ``β = softplus(raw₃) + eps`` (the floor ``eps`` keeps α − 1, v and β positive in floating
    point).
    """
    sp = jax.nn.softplus
    return raw[:, 0], sp(raw[:, 1]) + eps, 1.0 + sp(raw[:, 2]) + eps, sp(raw[:, 3]) + eps


def nig_nll(
    y: jax.Array, mu: jax.Array, v: jax.Array, alpha: jax.Array, beta: jax.Array
) -> jax.Array:
    """Pointwise NIG negative log marginal likelihood (Amini et al., 2020, eq. 8).

    With Ω = 2β(1 + v)::

        ½ log(π/v) − α log Ω + (α + ½) log(v (y − μ)² + Ω) + lnΓ(α) − lnΓ(α + ½)

    which is −log of a Student-t density with 2α degrees of freedom, location μ and
    scale² = β(1 + v)/(vα). All arrays shape (n,); returns (n,).
    """
    omega = 2.0 * beta * (1.0 + v)
    return (
        0.5 * jnp.log(jnp.pi / v)
        - alpha * jnp.log(omega)
        + (alpha + 0.5) * jnp.log(v * (y - mu) ** 2 + omega)
        + gammaln(alpha)
        - gammaln(alpha + 0.5)
    )


def edl_loss(
    params: Any,
    state: jax.Array,
    xb: jax.Array,
    yb: jax.Array,
    mask: jax.Array,
    key: jax.Array,
    model: BackboneConfig,
) -> tuple[jax.Array, jax.Array]:
    """Evidential loss of one network on one batch: mean of NLL + λ·|y − μ|·(2v + α).

    ``state`` is the regulariser weight λ (a scalar per member, carried unchanged through
    training so that another λ reuses the compiled loop); the mean is over the batch's
    entries where ``mask`` is 1. Dropout is active when ``model.dropout > 0``.
    """
    h = features(params, xb, model, dropout_key=key if model.dropout > 0 else None)
    mu, v, alpha, beta = nig_head(head_outputs(params, h), model.eps)
    per = nig_nll(yb, mu, v, alpha, beta) + state * jnp.abs(yb - mu) * (2.0 * v + alpha)
    return jnp.sum(per * mask) / jnp.maximum(jnp.sum(mask), 1.0), state


@partial(jax.jit, static_argnames=("model",))
def _nig_predict(params: Any, X: jax.Array, *, model: BackboneConfig) -> Any:
    return jax.vmap(lambda p: nig_head(head_outputs(p, features(p, X, model)), model.eps))(params)


class NNEvidential(GaussianNNEnsemble):
    """Deep evidential regression network (NN-EDL; Amini et al., 2020; paper App. C.4).

    Parameters
    ----------
    reg_weight : float, default 0.00316
        Weight λ of the evidence regulariser |y − μ|·(2v + α). Search space [1e-4, 1e-1]
        log-uniform (chosen here, around Amini et al.'s values); default its geometric
        centre.
    hidden_dim, n_blocks, activation, dropout, lr, momentum, weight_decay : see below
    n_epochs, batch_size, eps, dtype, random_state
        As :class:`udbench.methods.nn_ens.NNEnsemble` (the shared network). ``eps`` is the
        floor of v, α − 1 and β (standardised units).
    spectral_norm : bool, default False
        Spectrally normalise the backbone (‖W‖₂ ≤ ``sn_coeff`` for every dense layer; the
        option of every neural method, :mod:`udbench.methods.nn.spectral`; paper D.4).
    sn_coeff : float, default 1.0
        The bound of spectral normalisation (used only with ``spectral_norm=True``).

    Notes
    -----
    One network is trained (no ensemble). At the initial head bias v = 1, α = 1 + ln 2,
    β = ln 2, so AU = EU = 1 (the variance of the standardised targets) before training.
    """

    name: ClassVar[str] = "nn-edl"
    paper_index: ClassVar[int | None] = 13  # SPEC §8's list
    family: ClassVar[str] = "nn"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "closed_form"
    progress_param: ClassVar[str | None] = "n_epochs"  # reports while it trains
    description: ClassVar[str] = "Deep evidential regression, NIG head (paper C.4)"
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_SEARCH_SPACE,
        "reg_weight": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        **{k: v for k, v in NN_PARAM_CONSTRAINTS.items() if k != "n_members"},
        "reg_weight": {"type": "float", "low": 0.0},
        **SN_PARAM_CONSTRAINTS,
    }
    smoke_params: ClassVar[dict[str, Any]] = {
        "hidden_dim": 16,
        "n_blocks": 1,
        "n_epochs": 20,
        "batch_size": 64,
        "lr": 3e-3,
    }
    _loss_fn: ClassVar[Any] = staticmethod(edl_loss)
    _n_outputs: ClassVar[int] = 4

    def __init__(
        self,
        reg_weight: float = 0.00316,
        hidden_dim: int = NN_DEFAULTS.hidden_dim,
        n_blocks: int = NN_DEFAULTS.n_blocks,
        activation: str = NN_DEFAULTS.activation,
        dropout: float = NN_DEFAULTS.dropout,
        lr: float = NN_DEFAULTS.lr,
        momentum: float = NN_DEFAULTS.momentum,
        weight_decay: float = NN_DEFAULTS.weight_decay,
        n_epochs: int = NN_DEFAULTS.n_epochs,
        batch_size: int = NN_DEFAULTS.batch_size,
        eps: float = NN_DEFAULTS.eps,
        dtype: str = NN_DEFAULTS.dtype,
        random_state: int | None = NN_DEFAULTS.random_state,
        spectral_norm: bool = NN_DEFAULTS.spectral_norm,
        sn_coeff: float = NN_DEFAULTS.sn_coeff,
    ) -> None:
        self.reg_weight = reg_weight
        self.hidden_dim = hidden_dim
        self.n_blocks = n_blocks
        self.activation = activation
        self.dropout = dropout
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.n_epochs = n_epochs
        self.batch_size = batch_size
        self.eps = eps
        self.dtype = dtype
        self.random_state = random_state
        self.spectral_norm = spectral_norm
        self.sn_coeff = sn_coeff

    def _n_networks(self) -> int:
        return 1

    def _train_state(self, n_networks: int, dtype: Any) -> Any:
        return jnp.full((n_networks,), float(self.reg_weight), dtype)

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self._fit_members(X, y)

    def predict_nig(self, X: Any) -> dict[str, np.ndarray]:
        """The NIG parameters at ``X`` (m, d), standardised target units.

        Returns
        -------
        dict
            ``{"mu", "v", "alpha", "beta"}``, each an ndarray of shape (m,), float64.
        """
        if not hasattr(self, "params_"):
            raise NotFittedError(f"{type(self).__name__}: not fitted; call fit(X, y) first")
        Xs = (self._inputs(X) - self.x_loc_) / self.x_scale_
        with self._precision():
            dtype = jax.tree_util.tree_leaves(self.params_)[0].dtype
            out = _nig_predict(self.params_, jnp.asarray(Xs, dtype), model=self.model_config_)
        names = ("mu", "v", "alpha", "beta")
        return {k: np.asarray(a[0], dtype=np.float64) for k, a in zip(names, out, strict=True)}

    def _predict(self, X: np.ndarray) -> Prediction:
        nig = self.predict_nig(X)
        au = nig["beta"] / (nig["alpha"] - 1.0)
        return Prediction(mean=nig["mu"], aleatoric=au, epistemic=au / nig["v"])
