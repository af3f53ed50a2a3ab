"""NN-DEUP: direct epistemic uncertainty prediction on the shared backbone (Lahlou et al., 2023).

1. The training rows are split into K = ``n_folds`` random folds. K *fold models* (the shared
   Gaussian network, model k trained on every row outside fold k) and the *final model*
   (trained on all rows) are trained as one vectorised ensemble of K + 1 members
   (:func:`udbench.methods.nn.training.train_members` with a ``row_mask``: the fold models'
   shorter row lists are padded with one of their own rows, masked out of the loss).
2. Out-of-fold squared errors eᵢ = (yᵢ − m₋ₖ₍ᵢ₎(xᵢ))², m₋ₖ the mean of the model that did not
   see fold k ∋ i.
3. AU is constant, the paper's σ̂²_ale = mean over the held-out set V of (y − m(x))², with V
   the out-of-fold predictions (every training row is held out once): σ̂²_ale = mean(eᵢ).
4. An *error predictor* ê(x) (the same backbone, one output, softplus) is trained by the same
   loop on (xᵢ, eᵢ) with the squared loss, so ê estimates E[e | x] (targets divided by
   σ̂²_ale for conditioning, multiplied back).
5. â(x) = the final model's mean; EU(x) = max(ê(x) − σ̂²_ale, 0) + :data:`EU_FLOOR`
   (standardised units, so the floor scales with y²).
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from udbench.methods.base import NotFittedError, Prediction
from udbench.methods.nn.backbone import (
    NN_DEFAULTS,
    BackboneConfig,
    features,
    head_outputs,
    init_members,
)
from udbench.methods.nn.ensemble import (
    _DTYPES,
    NN_PARAM_CONSTRAINTS,
    NN_SEARCH_SPACE,
    SN_PARAM_CONSTRAINTS,
    GaussianNNEnsemble,
)
from udbench.methods.nn.training import TrainConfig, predict_members, train_members

__all__ = ["EU_FLOOR", "NNDeup", "deup_fold_rows", "error_loss"]

#: Floor added to DEUP's EU, a variance in standardised target units (1e-8 of var(y)), so
#: that EU stays strictly positive where ê(x) ≤ σ̂²_ale.
EU_FLOOR = 1e-8


def deup_fold_rows(
    n: int, n_folds: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random K-fold split and the rows of the K fold models and the final model.

    Parameters
    ----------
    n : int
        Number of training rows (≥ 2).
    n_folds : int
        K ≥ 2. Fold sizes differ by at most one; with n < K some folds are empty (their
        fold model then trains on all rows and predicts no out-of-fold error).
    rng : numpy.random.Generator

    Returns
    -------
    fold : ndarray of int, shape (n,)
        Fold of each row.
    rows : ndarray of int, shape (K + 1, n)
        Member k < K: the rows outside fold k, then padding (repeats of its first row);
        member K: all rows.
    mask : ndarray of float, shape (K + 1, n)
        1 for a real entry of ``rows``, 0 for padding.
    """
    fold = np.empty(n, dtype=np.int64)
    fold[rng.permutation(n)] = np.arange(n) % n_folds
    rows = np.empty((n_folds + 1, n), dtype=np.int64)
    mask = np.zeros((n_folds + 1, n))
    for k in range(n_folds):
        keep = np.flatnonzero(fold != k)
        rows[k, : keep.size] = keep
        rows[k, keep.size :] = keep[0]
        mask[k, : keep.size] = 1.0
    rows[n_folds] = np.arange(n)
    mask[n_folds] = 1.0
    return fold, rows, mask


def error_loss(
    params: Any,
    state: Any,
    xb: jax.Array,
    yb: jax.Array,
    mask: jax.Array,
    key: jax.Array,
    model: BackboneConfig,
) -> tuple[jax.Array, Any]:
    """Squared loss of the error predictor softplus(raw₀) against the errors ``yb``
    (masked batch mean); dropout active when ``model.dropout > 0``."""
    h = features(params, xb, model, dropout_key=key if model.dropout > 0 else None)
    pred = jax.nn.softplus(head_outputs(params, h)[:, 0])
    return jnp.sum(mask * (pred - yb) ** 2) / jnp.maximum(jnp.sum(mask), 1.0), state


@partial(jax.jit, static_argnames=("model",))
def _error_predict(params: Any, X: jax.Array, *, model: BackboneConfig) -> jax.Array:
    return jax.vmap(lambda p: jax.nn.softplus(head_outputs(p, features(p, X, model))[:, 0]))(params)


class NNDeup(GaussianNNEnsemble):
    """Direct epistemic uncertainty prediction (NN-DEUP; Lahlou et al., 2023; paper C.4).

    Parameters
    ----------
    n_folds : int, default 5
        Number K of folds for the out-of-fold errors (search space {3, 5}). Fit cost:
        K + 1 main trainings (one vectorised computation) and one error-predictor training.
    hidden_dim, n_blocks, activation, dropout, lr, momentum, weight_decay : see below
    n_epochs, batch_size, eps, dtype, random_state
        As :class:`udbench.methods.nn_ens.NNEnsemble`; the same network and optimisation
        settings serve the main models and the error predictor.
    spectral_norm : bool, default False
        Spectrally normalise the backbone (‖W‖₂ ≤ ``sn_coeff`` for every dense layer; the
        option of every neural method, :mod:`udbench.methods.nn.spectral`; paper D.4). Applies
        to the K + 1 main models and to the error predictor.
    sn_coeff : float, default 1.0
        The bound of spectral normalisation (used only with ``spectral_norm=True``).

    Notes
    -----
    Fitted attributes: ``params_`` (the K + 1 main models, member K the final one),
    ``fold_`` (fold of each training row), ``oof_errors_`` (eᵢ, standardised units),
    ``aleatoric_`` (σ̂²_ale, standardised), ``error_params_`` (the error predictor),
    ``history_`` ((K + 1, n_epochs)), ``error_history_`` ((1, n_epochs)).
    """

    name: ClassVar[str] = "nn-deup"
    paper_index: ClassVar[int | None] = 14  # SPEC §8's list
    family: ClassVar[str] = "nn"
    constant_aleatoric: ClassVar[bool] = True
    epistemic_from: ClassVar[str] = "closed_form"
    description: ClassVar[str] = (
        "Direct epistemic uncertainty prediction, K-fold errors, held-out AU (paper C.4)"
    )
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_SEARCH_SPACE,
        "n_folds": {"type": "categorical", "choices": [3, 5]},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        **{k: v for k, v in NN_PARAM_CONSTRAINTS.items() if k != "n_members"},
        "n_folds": {"type": "int", "low": 2},
        **SN_PARAM_CONSTRAINTS,
    }
    smoke_params: ClassVar[dict[str, Any]] = {
        "n_folds": 3,
        "hidden_dim": 16,
        "n_blocks": 1,
        "n_epochs": 20,
        "batch_size": 64,
        "lr": 3e-3,
    }

    def __init__(
        self,
        n_folds: int = 5,
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
        self.n_folds = n_folds
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
        return int(self.n_folds) + 1

    def _train_main(
        self, Xs: np.ndarray, y: np.ndarray, model: BackboneConfig, train: TrainConfig
    ) -> tuple[np.ndarray, Any, np.ndarray]:
        """Step 1: the K fold models and the final model, one vectorised training.

        Returns (fold of each row (n,), member-stacked params, history (K + 1, n_epochs)).
        Called inside the method's precision scope, on standardised inputs and targets.
        """
        K = int(self.n_folds)
        fold, rows, mask = deup_fold_rows(Xs.shape[0], K, self._rng("folds"))
        init_key = jax.random.key(self._seed("init", bits=31))
        train_key = jax.random.key(self._seed("train", bits=31))
        params = init_members(init_key, model, K + 1, _DTYPES[self.dtype])
        params, _, history = train_members(
            params,
            Xs,
            y,
            rows,
            jax.random.split(train_key, K + 1),
            model,
            train,
            row_mask=mask,
        )
        return fold, params, np.asarray(history, dtype=np.float64)

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        model, train = self._configs(X.shape[1])
        with self._precision():
            Xs = self._standardise_inputs(X)
            fold, params, history = self._train_main(Xs, y, model, train)
            means, _ = predict_members(params, Xs, model)
            oof = (y - means[fold, np.arange(y.size)]) ** 2
            au = float(np.mean(oof))
            scale = au if au > 0.0 else 1.0
            err_model = BackboneConfig(
                in_dim=model.in_dim,
                hidden_dim=model.hidden_dim,
                n_blocks=model.n_blocks,
                activation=model.activation,
                dropout=model.dropout,
                eps=model.eps,
                n_outputs=1,
                spectral_norm=model.spectral_norm,  # the option bounds every network
                sn_coeff=model.sn_coeff,
            )
            err_init = jax.random.key(self._seed("error-init", bits=31))
            err_key = jax.random.key(self._seed("error-train", bits=31))
            err_params, _, err_hist = train_members(
                init_members(err_init, err_model, 1, _DTYPES[self.dtype]),
                Xs,
                oof / scale,
                np.arange(y.size)[None, :],
                jax.random.split(err_key, 1),
                err_model,
                train,
                loss_fn=error_loss,
            )
        self.params_ = params
        self.history_ = history
        self.fold_ = fold
        self.oof_errors_ = oof
        self.aleatoric_ = au
        self.error_scale_ = scale
        self.error_params_ = err_params
        self.error_history_ = np.asarray(err_hist, dtype=np.float64)
        self.model_config_ = model
        self.error_config_ = err_model
        self.train_config_ = train

    def predict_error(self, X: np.ndarray) -> np.ndarray:
        """The error predictor ê(x) at ``X`` (m, d), standardised target units, shape (m,)."""
        if not hasattr(self, "error_params_"):
            raise NotFittedError(f"{type(self).__name__}: not fitted; call fit(X, y) first")
        with self._precision():
            Xs = (self._inputs(X) - self.x_loc_) / self.x_scale_
            dtype = jax.tree_util.tree_leaves(self.error_params_)[0].dtype
            raw = _error_predict(
                self.error_params_, jnp.asarray(Xs, dtype), model=self.error_config_
            )
        return self.error_scale_ * np.asarray(raw[0], dtype=np.float64)

    def _predict(self, X: np.ndarray) -> Prediction:
        with self._precision():  # the final model only (member K)
            final = jax.tree_util.tree_map(lambda a: a[-1:], self.params_)
            means, _ = predict_members(final, (X - self.x_loc_) / self.x_scale_, self.model_config_)
        err = self.predict_error(X)
        m = X.shape[0]
        return Prediction(
            mean=means[-1],
            aleatoric=np.full(m, self.aleatoric_),
            epistemic=np.maximum(err - self.aleatoric_, 0.0) + EU_FLOOR,
        )
