"""SNGP-Het: heteroscedastic spectral-normalised neural GP (paper C.2; Liu et al., NeurIPS 2020).

The shared residual backbone, spectrally normalised (every dense layer ‖W‖₂ ≤ ``sn_coeff``,
:mod:`udbench.methods.nn.spectral`), gives h(x); a random-Fourier-feature output layer

    φ(h) = √(2/D_L) · cos(W_L h + b_L),   W_L ~ N(0, I/ℓ²), b_L ~ U[0, 2π), fixed,

(an RBF-kernel GP of lengthscale ℓ = ``rff_lengthscale`` on h) gives the mean βᵀφ, and a
softplus variance head on h gives σ²(x) = (softplus(w_σᵀh + b_σ) + ε)². Training minimises
the batch-mean Gaussian NLL plus the ridge term λ‖β‖²/(2n) (the MAP objective whose Laplace
precision follows). After training, one pass over the training set forms the paper's
precision of β

    Σ⁻¹ = λI + Σᵢ φᵢφᵢᵀ / σ²(xᵢ),

and the outputs are â = βᵀφ(h(x)), EU = φᵀΣφ (closed form, :mod:`udbench.methods.nn.laplace`),
AU = σ²(x), in standardised units mapped back by the base class.
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from udbench.methods.base import Prediction
from udbench.methods.nn.backbone import (
    NN_DEFAULTS,
    BackboneConfig,
    features,
    gaussian_nll,
    init_members,
)
from udbench.methods.nn.ensemble import (
    _DTYPES,
    NN_PARAM_CONSTRAINTS,
    NN_SEARCH_SPACE,
    SN_PARAM_CONSTRAINTS,
    SN_SEARCH_SPACE,
    GaussianNNEnsemble,
)
from udbench.methods.nn.laplace import last_layer_precision, posterior_variance
from udbench.methods.nn.training import train_members

__all__ = ["SNGPHet", "sngp_loss", "sngp_outputs"]


def sngp_outputs(
    params: dict[str, Any], state: dict[str, Any], x: jax.Array, model: BackboneConfig
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Random features φ (n, D_L), mean βᵀφ (n,) and variance σ² (n,) of one network.

    ``params``: the backbone's ``input`` and ``blocks``, ``head`` = the variance head
    (w (H, 1), b (1,)) and ``beta`` (D_L,). ``state``: the fixed ``rff_w`` (H, D_L) and
    ``rff_b`` (D_L,).
    """
    h = features(params, x, model)
    d_l = state["rff_b"].shape[0]
    phi = jnp.sqrt(2.0 / d_l) * jnp.cos(h @ state["rff_w"] + state["rff_b"])
    s = jax.nn.softplus(h @ params["head"]["w"][:, 0] + params["head"]["b"][0]) + model.eps
    return phi, phi @ params["beta"], s * s


def sngp_loss(
    params: dict[str, Any],
    state: dict[str, Any],
    xb: jax.Array,
    yb: jax.Array,
    mask: jax.Array,
    key: jax.Array,
    model: BackboneConfig,
) -> tuple[jax.Array, dict[str, Any]]:
    """Batch-mean Gaussian NLL + ``state["ridge_per_n"]``·½‖β‖² (λ/n: the MAP objective / n)."""
    _, mean, var = sngp_outputs(params, state, xb, model)
    ridge = 0.5 * state["ridge_per_n"] * jnp.sum(params["beta"] ** 2)
    return gaussian_nll(mean, var, yb, mask) + ridge, state


@partial(jax.jit, static_argnames=("model",))
def _outputs_jit(params: Any, state: Any, X: jax.Array, *, model: BackboneConfig) -> Any:
    return sngp_outputs(params, state, X, model)


class SNGPHet(GaussianNNEnsemble):
    """Heteroscedastic SNGP on the residual-MLP backbone (SNGP-Het; paper C.2).

    Parameters
    ----------
    rff_dim : int, default 512
        Number of random Fourier features D_L.
    ridge : float, default 0.1
        λ: ridge penalty of β in training and prior precision of the Laplace step.
    rff_lengthscale : float, default 1.0
        Lengthscale ℓ of the RBF kernel the random features approximate (fixed, not tuned:
        the value of Liu et al.'s reference implementation, kernel scale 1).
    spectral_norm : bool, default True
        Spectral normalisation of the backbone (SNGP's distance-aware feature extractor;
        False only for ablations).
    sn_coeff : float, default 1.0
        Its bound c.
    hidden_dim, n_blocks, activation, dropout, lr, momentum, weight_decay, n_epochs,
    batch_size, eps, dtype, random_state
        The shared network and its training (as :class:`~udbench.methods.nn_ens.NNEnsemble`).

    Notes
    -----
    Search space (METHODS, chosen here): D_L ∈ {256, 512, 1024}, sn_coeff ∈ [0.5, 3] log,
    λ ∈ [1e-3, 10] log, plus the shared space. Fitted attributes: ``params_`` (one network,
    member axis 1), ``rff_`` (W_L, b_L), ``precision_`` (D_L, D_L), ``history_``.
    """

    name: ClassVar[str] = "sngp-het"
    paper_index: ClassVar[int | None] = 5  # SPEC §8's list
    family: ClassVar[str] = "nn"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "closed_form"
    description: ClassVar[str] = "Heteroscedastic spectral-normalised neural GP (paper C.2)"
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_SEARCH_SPACE,
        **SN_SEARCH_SPACE,
        "rff_dim": {"type": "categorical", "choices": [256, 512, 1024]},
        "ridge": {"type": "float", "low": 1e-3, "high": 10.0, "log": True},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        **{k: v for k, v in NN_PARAM_CONSTRAINTS.items() if k != "n_members"},
        **SN_PARAM_CONSTRAINTS,
        "rff_dim": {"type": "int", "low": 1},
        "ridge": {"type": "float", "low": 0.0, "low_open": True},
        "rff_lengthscale": {"type": "float", "low": 0.0, "low_open": True},
    }
    smoke_params: ClassVar[dict[str, Any]] = {
        "hidden_dim": 16,
        "n_blocks": 1,
        "n_epochs": 20,
        "batch_size": 64,
        "lr": 3e-3,
        "rff_dim": 128,
    }

    def __init__(
        self,
        rff_dim: int = 512,
        ridge: float = 0.1,
        rff_lengthscale: float = 1.0,
        spectral_norm: bool = True,
        sn_coeff: float = NN_DEFAULTS.sn_coeff,
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
    ) -> None:
        self.rff_dim = rff_dim
        self.ridge = ridge
        self.rff_lengthscale = rff_lengthscale
        self.spectral_norm = spectral_norm
        self.sn_coeff = sn_coeff
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

    def _n_networks(self) -> int:
        return 1

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        model, train = self._configs(X.shape[1])
        with self._precision():
            self._fit_impl(X, y, model, train)

    def _fit_impl(self, X: np.ndarray, y: np.ndarray, model: BackboneConfig, train: Any) -> None:
        Xs = self._standardise_inputs(X)
        dtype = _DTYPES[self.dtype]
        H, D = int(self.hidden_dim), int(self.rff_dim)
        base = init_members(jax.random.key(self._seed("init", bits=31)), model, 1, dtype)
        params = {
            "input": base["input"],
            "blocks": base["blocks"],
            "head": {"w": base["head"]["w"][..., 1:2], "b": base["head"]["b"][..., 1:2]},
            "beta": jnp.zeros((1, D), dtype),
        }
        k_w, k_b = jax.random.split(jax.random.key(self._seed("rff", bits=31)))
        ls = float(self.rff_lengthscale)
        state = {
            "rff_w": (jax.random.normal(k_w, (1, H, D), dtype) / ls),
            "rff_b": jax.random.uniform(k_b, (1, D), dtype, 0.0, 2.0 * np.pi),
            "ridge_per_n": jnp.full((1,), float(self.ridge) / X.shape[0], dtype),
        }
        params, state, history = train_members(
            params,
            Xs,
            y,
            np.arange(X.shape[0])[None, :],
            jax.random.split(jax.random.key(self._seed("train", bits=31)), 1),
            model,
            train,
            loss_fn=sngp_loss,
            state=state,
        )
        self.params_ = params  # member axis of length 1, like the other backbone methods
        self.rff_ = {"rff_w": state["rff_w"][0], "rff_b": state["rff_b"][0]}
        self.history_ = np.asarray(history, dtype=np.float64)
        self.model_config_ = model
        self.train_config_ = train
        phi, _, var = self._outputs(Xs)
        self.precision_ = last_layer_precision(phi, var, float(self.ridge))

    def _outputs(self, Xs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """φ (m, D_L), mean (m,), variance (m,) at standardised inputs, float64."""
        with self._precision():
            dtype = _DTYPES[self.dtype]
            one = jax.tree_util.tree_map(lambda a: a[0], self.params_)
            out = _outputs_jit(one, self.rff_, jnp.asarray(Xs, dtype), model=self.model_config_)
        phi, mean, var = (np.asarray(a, dtype=np.float64) for a in out)
        return phi, mean, var

    def _predict(self, X: np.ndarray) -> Prediction:
        phi, mean, var = self._outputs((X - self.x_loc_) / self.x_scale_)
        return Prediction(
            mean=mean, aleatoric=var, epistemic=posterior_variance(phi, self.precision_)
        )
