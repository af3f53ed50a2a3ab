"""Base class of the neural methods built on the shared backbone (paper App. C.4).

:class:`GaussianNNEnsemble` does everything NN-Ens needs and what later member-based neural
methods share: input standardisation, configs, per-member initialisation and keys, the
vectorised training of M members, per-member prediction and the ensemble aggregation.
Subclasses change what differs:

- ``_member_rows(n, rng)`` — the training rows of each member (NN-Bag: resamples);
- ``_loss_fn`` — the per-member objective (NN-EDL: evidential loss; DEUP, FSP, …);
- ``_n_outputs`` — the width of the head (NN-EDL: 4);
- ``_n_networks()`` — how many networks are trained (NN-Drop, NN-SWAG: one);
- ``_train_state(M, dtype)`` — the per-member ``state`` given to the trainer (NN-EDL: its
  regulariser weight, a traced value, so another weight does not recompile);
- ``_predict_members(X)`` — how members/samples are drawn at prediction time
  (NN-Drop: MC-dropout passes; Laplace / SWAG: parameter samples).

Spectral normalisation is an option of every subclass: a method whose constructor takes
``spectral_norm`` and ``sn_coeff`` (declared with :data:`SN_PARAM_CONSTRAINTS`, tuned with
:data:`SN_SEARCH_SPACE`) gets it through :meth:`GaussianNNEnsemble._configs`; one without
them trains without it.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from udbench.methods._ensemble import aggregate_members
from udbench.methods.base import BaseMethod, Prediction
from udbench.methods.nn.backbone import ACTIVATIONS, BackboneConfig, init_members
from udbench.methods.nn.reporting import train_members_reporting
from udbench.methods.nn.training import (
    LossFn,
    TrainConfig,
    gaussian_loss,
    predict_members,
    train_members,
)

__all__ = [
    "NN_PARAM_CONSTRAINTS",
    "NN_SEARCH_SPACE",
    "SN_PARAM_CONSTRAINTS",
    "SN_SEARCH_SPACE",
    "GaussianNNEnsemble",
]

#: Search space of the shared network (our choice where the paper's excerpt omits it;
#: weight decay range from paper App. D.4). Defaults are the centres.
NN_SEARCH_SPACE: dict[str, dict[str, Any]] = {
    "hidden_dim": {"type": "categorical", "choices": [32, 64, 128]},
    "n_blocks": {"type": "int", "low": 1, "high": 3},
    "lr": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True},
    "momentum": {"type": "float", "low": 0.85, "high": 0.95},
    "weight_decay": {"type": "float", "low": 1e-6, "high": 1e-2, "log": True},
    "n_epochs": {"type": "int", "low": 50, "high": 350},
    "batch_size": {"type": "categorical", "choices": [64, 128, 256]},
}

#: Values the shared network's hyperparameters accept at all (contract format).
NN_PARAM_CONSTRAINTS: dict[str, dict[str, Any]] = {
    "n_members": {"type": "int", "low": 1},
    "hidden_dim": {"type": "int", "low": 1},
    "n_blocks": {"type": "int", "low": 0},
    "activation": {"type": "categorical", "choices": list(ACTIVATIONS)},
    "dropout": {"type": "float", "low": 0.0, "high": 1.0, "high_open": True},
    "lr": {"type": "float", "low": 0.0, "low_open": True},
    "momentum": {"type": "float", "low": 0.0, "high": 1.0, "high_open": True},
    "weight_decay": {"type": "float", "low": 0.0},
    "n_epochs": {"type": "int", "low": 1},
    "batch_size": {"type": "int", "low": 1},
    "eps": {"type": "float", "low": 0.0, "low_open": True},
    "dtype": {"type": "categorical", "choices": ["float32", "float64"]},
}

#: Spectral normalisation, an option of every neural method (:mod:`udbench.methods.nn.spectral`).
SN_PARAM_CONSTRAINTS: dict[str, dict[str, Any]] = {
    "spectral_norm": {"type": "bool"},
    "sn_coeff": {"type": "float", "low": 0.0, "low_open": True},
}

#: Search space of a method tuned under spectral normalisation (paper C.4, D.4).
SN_SEARCH_SPACE: dict[str, dict[str, Any]] = {
    "spectral_norm": {"type": "categorical", "choices": [True]},
    "sn_coeff": {"type": "float", "low": 0.5, "high": 3.0, "log": True},
}

_DTYPES = {"float32": jnp.float32, "float64": jnp.float64}


class GaussianNNEnsemble(BaseMethod):
    """Abstract method: M members of the shared Gaussian network trained in one vectorised run.

    A :class:`~udbench.methods.base.BaseMethod` (hyperparameter checks and seeds are the
    base's: ``validate_hyperparameters`` in ``fit``, streams from ``_seed`` / ``_rng``).
    Expects the hyperparameter attributes of :class:`udbench.methods.nn_ens.NNEnsemble`
    (``n_members, hidden_dim, n_blocks, activation, dropout, lr, momentum, weight_decay,
    n_epochs, batch_size, eps, dtype, random_state``) and ``name``.

    Fitted attributes: ``params_`` (member-stacked pytree), ``history_`` ((M, n_epochs)
    epoch losses), ``x_loc_``, ``x_scale_`` (input standardisation), ``model_config_``,
    ``train_config_``.
    """

    _loss_fn: ClassVar[LossFn] = staticmethod(gaussian_loss)  # type: ignore[assignment]
    #: Width of the network's head (2: the Gaussian head (μ̃, ρ)).
    _n_outputs: ClassVar[int] = 2

    # hyperparameters (set by the concrete class's __init__)
    n_members: int
    hidden_dim: int
    n_blocks: int
    activation: str
    dropout: float
    lr: float
    momentum: float
    weight_decay: float
    n_epochs: int
    batch_size: int
    eps: float
    dtype: str
    random_state: int | None

    # -- hooks ------------------------------------------------------------------------
    def _member_rows(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Training rows per member, shape (M, n_m). Deep ensemble: all rows for all."""
        return np.tile(np.arange(n), (self._n_networks(), 1))

    def _n_networks(self) -> int:
        """Number of networks trained (default: one per member)."""
        return int(self.n_members)

    def _train_state(self, n_networks: int, dtype: Any) -> Any:
        """Member-stacked ``state`` for the trainer (default None: an unused placeholder)."""
        return None

    # -- shared machinery -------------------------------------------------------------
    def _configs(self, in_dim: int) -> tuple[BackboneConfig, TrainConfig]:
        comp = type(self).__name__
        try:
            model = BackboneConfig(
                in_dim=int(in_dim),
                hidden_dim=self.hidden_dim,
                n_blocks=self.n_blocks,
                activation=self.activation,
                dropout=float(self.dropout),
                eps=float(self.eps),
                n_outputs=type(self)._n_outputs,
            )
            train = TrainConfig(
                n_epochs=self.n_epochs,
                batch_size=self.batch_size,
                lr=float(self.lr),
                momentum=float(self.momentum),
                weight_decay=float(self.weight_decay),
            )
            if getattr(self, "spectral_norm", False):  # an option of every neural method
                model = replace(model, spectral_norm=True, sn_coeff=self.sn_coeff)
        except ValueError as err:  # re-badge the config's message with this method's name
            msg = str(err).replace("BackboneConfig", comp).replace("TrainConfig", comp)
            raise type(err)(msg) from None
        return model, train

    def _precision(self) -> contextlib.AbstractContextManager[Any]:
        """Scoped JAX x64 for ``dtype="float64"``; nothing for float32."""
        return jax.enable_x64(True) if self.dtype == "float64" else contextlib.nullcontext()

    def _fit_members(self, X: np.ndarray, y: np.ndarray) -> None:
        model, train = self._configs(X.shape[1])
        with self._precision():
            self._fit_members_impl(X, y, model, train)

    def _standardise_inputs(self, X: np.ndarray) -> np.ndarray:
        """Store the training columns' mean and SD (``x_loc_``, ``x_scale_``); return X̃.

        The statistics are :class:`BaseMethod`'s (:func:`udbench.methods.base.standardise_inputs`:
        a column constant in relative terms is replaced by 0, with loc 0 and scale 1).
        """
        self.x_loc_ = self.input_loc_
        self.x_scale_ = self.input_scale_
        return (X - self.x_loc_) / self.x_scale_

    def _fit_members_impl(
        self, X: np.ndarray, y: np.ndarray, model: BackboneConfig, train: TrainConfig
    ) -> None:
        rng = self._rng("rows")
        Xs = self._standardise_inputs(X)
        dtype = _DTYPES[self.dtype]
        M = self._n_networks()
        init_key = jax.random.key(self._seed("init", bits=31))
        train_key = jax.random.key(self._seed("train", bits=31))
        params = init_members(init_key, model, M, dtype)
        rows = self._member_rows(X.shape[0], rng)
        checkpoints = () if model.spectral_norm else self._progress_checkpoints()
        if checkpoints:  # a tuning trial that reports (pruning): stops at the checkpoints
            self.model_config_ = model

            def on_checkpoint(epoch: int, current: Any) -> None:
                self.params_ = current
                self._report_progress(epoch, self._predict)

            params, _, history = train_members_reporting(
                params,
                Xs,
                y,
                rows,
                jax.random.split(train_key, M),
                model,
                train,
                checkpoints=checkpoints,
                on_checkpoint=on_checkpoint,
                loss_fn=type(self)._loss_fn,
                state=self._train_state(M, dtype),
            )
        else:
            params, _, history = train_members(
                params,
                Xs,
                y,
                rows,
                jax.random.split(train_key, M),
                model,
                train,
                loss_fn=type(self)._loss_fn,
                state=self._train_state(M, dtype),
            )
        self.params_ = params
        self.history_ = np.asarray(history, dtype=np.float64)
        self.model_config_ = model
        self.train_config_ = train

    def _predict_members(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Member means and variances (M, m), standardised target units."""
        with self._precision():
            Xs = (X - self.x_loc_) / self.x_scale_
            return predict_members(self.params_, Xs, self.model_config_)

    def _predict_ensemble(self, X: np.ndarray) -> Prediction:
        means, variances = self._predict_members(X)
        return aggregate_members(means, variances)
