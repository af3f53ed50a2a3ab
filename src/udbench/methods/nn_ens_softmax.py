"""NN-Ens-Softmax: deep ensemble on the shared residual-MLP backbone with a softmax head.

M independently initialised members of the shared backbone (:mod:`udbench.methods.nn`, paper
App. C.4) with a K-way linear head, each trained by the categorical cross-entropy with its own
initialisation, minibatch order and optimiser state, in one vectorised computation
(:func:`udbench.methods.nn.training.train_members`); inputs standardised with the training
columns' mean and SD. Member m gives π_m(x) = softmax(logits_m(x)); the members are decomposed
by :func:`udbench.methods.classification.sample_decomposition` (AU = expected entropy, EU =
mutual information; Brier analogues) and π̂ is their mean (Lakshminarayanan, Pritzel & Blundell
2017, "Simple and Scalable Predictive Uncertainty Estimation using Deep Ensembles"; the
entropy / mutual-information split of Depeweg et al. 2018).
"""

from __future__ import annotations

import contextlib
from functools import partial
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from udbench.methods.classification import BaseClassifier
from udbench.methods.nn.backbone import (
    NN_DEFAULTS,
    BackboneConfig,
    features,
    head_outputs,
    init_members,
)
from udbench.methods.nn.ensemble import NN_PARAM_CONSTRAINTS, NN_SEARCH_SPACE
from udbench.methods.nn.training import TrainConfig, train_members

__all__ = ["NNEnsembleSoftmax", "softmax_cross_entropy_loss"]

_DTYPES = {"float32": jnp.float32, "float64": jnp.float64}


def softmax_cross_entropy_loss(
    params: Any,
    state: Any,
    xb: jax.Array,
    yb: jax.Array,
    mask: jax.Array,
    key: jax.Array,
    model: BackboneConfig,
) -> tuple[jax.Array, Any]:
    """Mean categorical cross-entropy −log softmax(logits)_y of one member on one batch.

    ``yb`` holds the labels as floats (the trainer casts targets to the network's dtype);
    padded entries (``mask`` 0) do not count. Dropout is active when ``model.dropout > 0``.
    """
    h = features(params, xb, model, dropout_key=key if model.dropout > 0 else None)
    logp = jax.nn.log_softmax(head_outputs(params, h), axis=1)
    labels = yb.astype(jnp.int32)
    per = -jnp.take_along_axis(logp, labels[:, None], axis=1)[:, 0]
    return jnp.sum(per * mask) / jnp.maximum(jnp.sum(mask), 1.0), state


@partial(jax.jit, static_argnames=("model",))
def _member_probs(params: Any, X: jax.Array, *, model: BackboneConfig) -> jax.Array:
    def one(p: Any) -> jax.Array:
        return jax.nn.softmax(head_outputs(p, features(p, X, model)), axis=1)

    return jax.vmap(one)(params)


class NNEnsembleSoftmax(BaseClassifier):
    """Deep ensemble of residual MLPs with a softmax head (module docstring).

    Parameters
    ----------
    n_members : int, default 10
        M.
    hidden_dim, n_blocks, activation, dropout, lr, momentum, weight_decay, n_epochs,
    batch_size, dtype
        The shared network's settings, as for :class:`udbench.methods.nn_ens.NNEnsemble`
        (same defaults and search space).
    random_state : int or None, default 0
        Root seed of initialisation and minibatch order.
    """

    name: ClassVar[str] = "nn-ens-softmax"
    family: ClassVar[str] = "nn"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    description: ClassVar[str] = (
        "Deep ensemble, residual-MLP backbone, softmax head (Lakshminarayanan et al. 2017)"
    )
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_SEARCH_SPACE,
        "n_members": {"type": "categorical", "choices": [10]},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        k: v for k, v in NN_PARAM_CONSTRAINTS.items() if k != "eps"
    }
    smoke_params: ClassVar[dict[str, Any]] = {
        "n_members": 3,
        "hidden_dim": 16,
        "n_blocks": 1,
        "n_epochs": 20,
        "batch_size": 64,
        "lr": 3e-3,
    }

    def __init__(
        self,
        n_members: int = 10,
        hidden_dim: int = NN_DEFAULTS.hidden_dim,
        n_blocks: int = NN_DEFAULTS.n_blocks,
        activation: str = NN_DEFAULTS.activation,
        dropout: float = NN_DEFAULTS.dropout,
        lr: float = NN_DEFAULTS.lr,
        momentum: float = NN_DEFAULTS.momentum,
        weight_decay: float = NN_DEFAULTS.weight_decay,
        n_epochs: int = NN_DEFAULTS.n_epochs,
        batch_size: int = NN_DEFAULTS.batch_size,
        dtype: str = NN_DEFAULTS.dtype,
        random_state: int | None = NN_DEFAULTS.random_state,
    ) -> None:
        self.n_members = n_members
        self.hidden_dim = hidden_dim
        self.n_blocks = n_blocks
        self.activation = activation
        self.dropout = dropout
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.n_epochs = n_epochs
        self.batch_size = batch_size
        self.dtype = dtype
        self.random_state = random_state

    def _precision(self) -> contextlib.AbstractContextManager[Any]:
        return jax.enable_x64(True) if self.dtype == "float64" else contextlib.nullcontext()

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        comp = type(self).__name__
        try:
            model = BackboneConfig(
                in_dim=int(X.shape[1]),
                hidden_dim=self.hidden_dim,
                n_blocks=self.n_blocks,
                activation=self.activation,
                dropout=float(self.dropout),
                n_outputs=self.n_classes_,
            )
            train = TrainConfig(
                n_epochs=self.n_epochs,
                batch_size=self.batch_size,
                lr=float(self.lr),
                momentum=float(self.momentum),
                weight_decay=float(self.weight_decay),
            )
        except ValueError as err:  # re-badge the config's message with this method's name
            msg = str(err).replace("BackboneConfig", comp).replace("TrainConfig", comp)
            raise type(err)(msg) from None
        self.x_loc_ = X.mean(axis=0)
        sd = X.std(axis=0)
        self.x_scale_ = np.where(sd > 1e-12, sd, 1.0)
        Xs = (X - self.x_loc_) / self.x_scale_
        M = int(self.n_members)
        with self._precision():
            dtype = _DTYPES[self.dtype]
            params = init_members(jax.random.key(self._seed("init", bits=31)), model, M, dtype)
            # the backbone sets a Gaussian head's variance bias; a softmax head starts at 0
            params["head"]["b"] = jnp.zeros_like(params["head"]["b"])
            keys = jax.random.split(jax.random.key(self._seed("train", bits=31)), M)
            rows = np.tile(np.arange(X.shape[0]), (M, 1))
            params, _, history = train_members(
                params,
                Xs,
                y.astype(np.float64),
                rows,
                keys,
                model,
                train,
                loss_fn=softmax_cross_entropy_loss,
            )
        self.params_ = params
        self.history_ = np.asarray(history, dtype=np.float64)
        self.model_config_ = model

    def _predict_samples(self, X: np.ndarray) -> np.ndarray:
        with self._precision():
            dtype = jax.tree_util.tree_leaves(self.params_)[0].dtype
            Xs = jnp.asarray((X - self.x_loc_) / self.x_scale_, dtype)
            p = np.asarray(_member_probs(self.params_, Xs, model=self.model_config_), np.float64)
        # float32 softmax rows sum to 1 only to ~1e-7; renormalise in float64
        return p / p.sum(axis=2, keepdims=True)
