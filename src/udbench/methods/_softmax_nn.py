"""Shared machinery of the classifiers on the residual-MLP backbone (softmax / Dirichlet heads).

:class:`SoftmaxNNClassifier` is to the neural classifiers what
:class:`udbench.methods.nn.ensemble.GaussianNNEnsemble` is to the neural regression methods:
input standardisation, the backbone and training configs (with a K-wide head), per-network
initialisation and keys, and the vectorised training of the networks by the shared loop
(:func:`udbench.methods.nn.training.train_members`). Subclasses change what differs:

- ``_n_networks()`` — how many networks are trained (MC dropout: one);
- ``_member_rows(n, rng)`` — each network's training rows (bagging: resamples);
- ``_loss_fn`` — the per-network objective (default: categorical cross-entropy;
  evidential classification: Sensoy et al.'s loss);
- ``_train_state(M, n_rows, dtype)`` — the per-network ``state`` of the trainer;
- ``_predict_samples(X)`` / ``_predict(X, loss)`` — how the trained networks predict.

The shared network's hyperparameters are the attributes of
:class:`udbench.methods.nn_ens_softmax.NNEnsembleSoftmax` (``hidden_dim, n_blocks,
activation, dropout, lr, momentum, weight_decay, n_epochs, batch_size, dtype,
random_state``); their defaults and search space are the regression backbone's.
"""

from __future__ import annotations

import contextlib
from functools import partial
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from udbench.methods.classification import BaseClassifier
from udbench.methods.nn.backbone import BackboneConfig, features, head_outputs, init_members
from udbench.methods.nn.ensemble import NN_PARAM_CONSTRAINTS
from udbench.methods.nn.training import LossFn, TrainConfig, train_members

__all__ = [
    "SOFTMAX_NN_CONSTRAINTS",
    "SoftmaxNNClassifier",
    "member_logits",
    "softmax_cross_entropy_loss",
]

_DTYPES = {"float32": jnp.float32, "float64": jnp.float64}

#: The shared network's hyperparameter rules for classifiers (the regression ones; no ``eps``:
#: a softmax head has no variance floor).
SOFTMAX_NN_CONSTRAINTS: dict[str, dict[str, Any]] = {
    k: v for k, v in NN_PARAM_CONSTRAINTS.items() if k != "eps"
}


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
def _member_logits(params: Any, X: jax.Array, *, model: BackboneConfig) -> jax.Array:
    return jax.vmap(lambda p: head_outputs(p, features(p, X, model)))(params)


@partial(jax.jit, static_argnames=("model",))
def _member_softmax(params: Any, X: jax.Array, *, model: BackboneConfig) -> jax.Array:
    def one(p: Any) -> jax.Array:
        return jax.nn.softmax(head_outputs(p, features(p, X, model)), axis=1)

    return jax.vmap(one)(params)


def member_logits(params: Any, X: Any, model: BackboneConfig) -> jax.Array:
    """Head outputs of every network (no dropout), shape (M, m, K), the parameters' dtype.

    Parameters
    ----------
    params : pytree
        Member-stacked parameters (leading axis M).
    X : array, shape (m, d)
        Standardised inputs.
    model : BackboneConfig
    """
    dtype = jax.tree_util.tree_leaves(params)[0].dtype
    return _member_logits(params, jnp.asarray(X, dtype), model=model)


def renormalise(p: Any) -> np.ndarray:
    """Probability rows (…, K) in float64, renormalised (float32 rows sum to 1 only to ~1e-7)."""
    q = np.asarray(p, dtype=np.float64)
    return q / q.sum(axis=-1, keepdims=True)


class SoftmaxNNClassifier(BaseClassifier):
    """Abstract classifier: networks of the shared backbone with a K-wide head (module doc).

    Fitted attributes: ``params_`` (member-stacked pytree), ``history_`` ((M, n_epochs)
    epoch losses), ``x_loc_``, ``x_scale_`` (input standardisation), ``model_config_``.
    """

    family: ClassVar[str] = "nn"
    _loss_fn: ClassVar[LossFn] = staticmethod(softmax_cross_entropy_loss)  # type: ignore[assignment]

    # hyperparameters (set by the concrete class's __init__)
    hidden_dim: int
    n_blocks: int
    activation: str
    dropout: float
    lr: float
    momentum: float
    weight_decay: float
    n_epochs: int
    batch_size: int
    dtype: str
    random_state: int | None

    # -- hooks ------------------------------------------------------------------------
    def _n_networks(self) -> int:
        """Networks trained (default: ``n_members``)."""
        return int(getattr(self, "n_members", 1))

    def _member_rows(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Training rows per network, shape (M, n_m). Default: all rows for every network."""
        return np.tile(np.arange(n), (self._n_networks(), 1))

    def _train_state(self, n_networks: int, n_rows: int, dtype: Any) -> Any:
        """Member-stacked trainer ``state`` (default None: the trainer's placeholder)."""
        return None

    # -- shared machinery -------------------------------------------------------------
    def _precision(self) -> contextlib.AbstractContextManager[Any]:
        """Scoped JAX x64 for ``dtype="float64"``; nothing for float32."""
        return jax.enable_x64(True) if self.dtype == "float64" else contextlib.nullcontext()

    def _configs(self, in_dim: int) -> tuple[BackboneConfig, TrainConfig]:
        comp = type(self).__name__
        try:
            model = BackboneConfig(
                in_dim=int(in_dim),
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
        return model, train

    def _standardised(self, X: np.ndarray) -> np.ndarray:
        return (X - self.x_loc_) / self.x_scale_

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        model, train = self._configs(X.shape[1])
        self.x_loc_ = X.mean(axis=0)
        sd = X.std(axis=0)
        self.x_scale_ = np.where(sd > 1e-12, sd, 1.0)
        Xs = self._standardised(X)
        M = self._n_networks()
        with self._precision():
            dtype = _DTYPES[self.dtype]
            params = init_members(jax.random.key(self._seed("init", bits=31)), model, M, dtype)
            # the backbone sets a Gaussian head's variance bias; a K-wide head starts at 0
            params["head"]["b"] = jnp.zeros_like(params["head"]["b"])
            keys = jax.random.split(jax.random.key(self._seed("train", bits=31)), M)
            rows = self._member_rows(X.shape[0], self._rng("rows"))
            params, _, history = train_members(
                params,
                Xs,
                y.astype(np.float64),
                rows,
                keys,
                model,
                train,
                loss_fn=type(self)._loss_fn,
                state=self._train_state(M, int(rows.shape[1]), dtype),
            )
        self.params_ = params
        self.history_ = np.asarray(history, dtype=np.float64)
        self.model_config_ = model

    def _member_probs(self, X: np.ndarray) -> np.ndarray:
        """softmax of every network's head at ``X``, shape (M, m, K), float64 rows."""
        with self._precision():
            dtype = jax.tree_util.tree_leaves(self.params_)[0].dtype
            Xs = jnp.asarray(self._standardised(X), dtype)
            return renormalise(_member_softmax(self.params_, Xs, model=self.model_config_))

    def _predict_samples(self, X: np.ndarray) -> np.ndarray:
        return self._member_probs(X)
