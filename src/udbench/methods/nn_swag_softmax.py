"""NN-SWAG-Softmax: SWAG (diagonal + low rank) on the shared backbone with a softmax head.

Maddox, Garipov, Izmailov, Vetrov & Wilson, NeurIPS 2019, "A Simple Baseline for Bayesian
Uncertainty in Deep Learning", §3 (SWAG with the low-rank plus diagonal covariance):

1. MAP training of one network of the shared residual MLP (:mod:`udbench.methods.nn`) with a
   K-way head by the categorical cross-entropy (as one member of
   :mod:`udbench.methods.nn_ens_softmax`; ``n_epochs``).
2. Training continues with the same optimiser (fresh state) at the constant learning rate
   ``swa_lr`` for ``swa_epochs`` epochs; the parameters at the end of every epoch are
   collected (:func:`udbench.methods.nn.training.train_members_with_iterates`), T iterates.
3. Moments over the iterates θ₁ … θ_T: θ_SWA = (1/T) Σ θ_t, Σ_diag = (1/T) Σ θ_t² − θ_SWA²
   (:func:`udbench.methods.nn.swag.swag_moments`, float64), and the deviation matrix D̂ whose
   R = min(``max_rank``, T) columns are θ_t − θ_SWA of the last R iterates (the paper uses
   the running mean at step t; with the final mean D̂ D̂ᵀ/(R − 1) is the sample covariance of
   those iterates — our choice).
4. S = ``n_members`` weight vectors are drawn once at fit
   (:func:`udbench.methods.nn.swag.swag_sample`, the paper's SWAG sample),

       θ = θ_SWA + (1/√2) Σ_diag^{1/2} z₁ + (1/√(2(R − 1))) D̂ z₂,   z₁ ~ N(0, I_p), z₂ ~ N(0, I_R),

   i.e. from N(θ_SWA, ½(Σ_diag + D̂D̂ᵀ/(R − 1))); with R < 2 the sample is the paper's
   SWAG-Diagonal, θ = θ_SWA + Σ_diag^{1/2} z₁ ~ N(θ_SWA, Σ_diag) (full diagonal variance: the
   ½ belongs to the diagonal + low-rank form only). Each draw is a network of the backbone;
   π_s(x) = softmax(logits_s(x)), decomposed by
   :func:`udbench.methods.classification.sample_decomposition` (AU = expected entropy, EU =
   mutual information; Brier analogues); π̂ is their mean (the paper's Bayesian model average).

The network has no batch normalisation, so the paper's BN-statistics update after sampling
does not apply.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from udbench.methods._softmax_nn import (
    _DTYPES,
    SOFTMAX_NN_CONSTRAINTS,
    SoftmaxNNClassifier,
    softmax_cross_entropy_loss,
)
from udbench.methods.nn.backbone import NN_DEFAULTS
from udbench.methods.nn.ensemble import NN_SEARCH_SPACE
from udbench.methods.nn.swag import swag_moments, swag_sample
from udbench.methods.nn.training import train_members_with_iterates

__all__ = ["NNSwagSoftmax"]


class NNSwagSoftmax(SoftmaxNNClassifier):
    """SWAG classifier on the residual-MLP backbone (module docstring).

    Parameters
    ----------
    n_members : int, default 30
        S, the weight vectors drawn from the SWAG posterior (the regression NN-SWAG's, fixed
        in the search space).
    swa_lr : float, default 0.001
        Constant learning rate of the SWA phase (search space [1e-4, 1e-2] log, the regression
        NN-SWAG's).
    swa_epochs : int, default 30
        Epochs of the SWA phase, one collected iterate per epoch (>= 2; space 10–50).
    max_rank : int, default 20
        Largest rank R of the low-rank part (the paper's K = 20); R = min(max_rank,
        swa_epochs); below 2 the draws are SWAG-Diagonal's, N(θ_SWA, Σ_diag).
    hidden_dim, n_blocks, activation, dropout, lr, momentum, weight_decay, n_epochs,
    batch_size, dtype
        The shared network's settings, as for
        :class:`udbench.methods.nn_ens_softmax.NNEnsembleSoftmax`; ``n_epochs`` is the MAP
        phase, the SWA phase uses the MAP phase's weight decay, momentum and batch size.
    random_state : int or None, default 0
        Root seed: initialisation, MAP minibatch order, SWA minibatch order (stream
        ``"swa"``) and the weight draws (stream ``"swag-samples"``).

    Notes
    -----
    Fitted attributes beyond the base's: ``map_params_`` (the MAP network, member axis 1),
    ``swag_mean_``, ``swag_var_`` (pytrees, float64), ``swag_deviations_`` (pytree with
    leading axis R, or None), ``swa_history_`` ((swa_epochs,) epoch losses); ``params_``
    holds the S drawn networks.
    """

    name: ClassVar[str] = "nn-swag-softmax"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    description: ClassVar[str] = (
        "SWAG (diagonal + low rank), residual-MLP backbone, softmax head (Maddox et al. 2019)"
    )
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_SEARCH_SPACE,
        "n_members": {"type": "categorical", "choices": [30]},
        "swa_lr": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True},
        "swa_epochs": {"type": "int", "low": 10, "high": 50},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        **SOFTMAX_NN_CONSTRAINTS,
        "swa_lr": {"type": "float", "low": 0.0, "low_open": True},
        "swa_epochs": {"type": "int", "low": 2},
        "max_rank": {"type": "int", "low": 0},
    }
    smoke_params: ClassVar[dict[str, Any]] = {
        "n_members": 10,
        "swa_epochs": 10,
        "max_rank": 5,
        "hidden_dim": 16,
        "n_blocks": 1,
        "n_epochs": 20,
        "batch_size": 64,
        "lr": 3e-3,
    }

    def __init__(
        self,
        n_members: int = 30,
        swa_lr: float = 0.001,
        swa_epochs: int = 30,
        max_rank: int = 20,
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
        self.swa_lr = swa_lr
        self.swa_epochs = swa_epochs
        self.max_rank = max_rank
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

    def _n_networks(self) -> int:
        return 1

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        super()._fit(X, y)  # MAP: params_, history_, x_loc_, x_scale_, model_config_
        model, train = self._configs(X.shape[1])
        swa_train = dataclasses.replace(train, n_epochs=int(self.swa_epochs), lr=float(self.swa_lr))
        map_params = self.params_
        with self._precision():
            key = jax.random.key(self._seed("swa", bits=31))
            _, _, hist, iterates = train_members_with_iterates(
                map_params,
                self._standardised(X),
                y.astype(np.float64),
                np.arange(y.size)[None, :],
                jax.random.split(key, 1),
                model,
                swa_train,
                loss_fn=softmax_cross_entropy_loss,
            )
            iterates = jax.tree_util.tree_map(lambda a: np.asarray(a[0], np.float64), iterates)
            mean, var = swag_moments(iterates)
            T = int(self.swa_epochs)
            R = min(int(self.max_rank), T)
            deviations = (
                jax.tree_util.tree_map(lambda it, mu: it[T - R :] - mu, iterates, mean)
                if R >= 2
                else None
            )
            draws = swag_sample(
                mean, var, deviations, int(self.n_members), self._rng("swag-samples")
            )
            dtype = _DTYPES[self.dtype]
            self.params_ = jax.tree_util.tree_map(lambda a: jnp.asarray(a, dtype), draws)
        self.map_params_ = map_params
        self.swag_mean_ = mean
        self.swag_var_ = var
        self.swag_deviations_ = deviations
        self.swa_history_ = np.asarray(hist[0], np.float64)
