"""NN-Ens: deep ensemble on the shared residual-MLP backbone (paper App. C.4).

M independently initialised members of the shared Gaussian network are trained on the full
training set, each with its own initialisation, minibatch order and optimiser state, in one
vectorised computation (:func:`udbench.methods.nn.training.train_members`). The prediction
averages member means; AU is the average member variance, EU the variance of the member
means (Lakshminarayanan et al., 2017).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from udbench.methods.base import Prediction
from udbench.methods.nn.backbone import NN_DEFAULTS
from udbench.methods.nn.ensemble import (
    NN_PARAM_CONSTRAINTS,
    NN_SEARCH_SPACE,
    SN_PARAM_CONSTRAINTS,
    GaussianNNEnsemble,
)

__all__ = ["NNEnsemble"]


class NNEnsemble(GaussianNNEnsemble):
    """Deep ensemble of Gaussian residual MLPs (NN-Ens; paper App. C.4).

    Parameters
    ----------
    n_members : int, default 10
        Ensemble size M (fixed at 10 in the paper's search space).
    hidden_dim : int, default 64
        Width of the backbone.
    n_blocks : int, default 2
        Number of residual blocks.
    activation : {"relu", "gelu", "silu", "tanh"}, default "relu"
        Hidden activation.
    dropout : float, default 0.0
        Dropout rate during training (off for the deep ensemble).
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
        Floor added to softplus(ρ), standardised standard-deviation units.
    dtype : {"float32", "float64"}, default "float32"
        Floating type of the network (float64 switches JAX x64 on inside fit/predict only).
    random_state : int or None, default 0
        Root seed of initialisation and minibatch order (``None``: not reproducible).
    spectral_norm : bool, default False
        Spectrally normalise the backbone (‖W‖₂ ≤ ``sn_coeff`` for every dense layer; the
        option of every neural method, :mod:`udbench.methods.nn.spectral`; paper D.4).
    sn_coeff : float, default 1.0
        The bound of spectral normalisation (used only with ``spectral_norm=True``).

    Notes
    -----
    Inputs are standardised with the training mean and SD of each column; targets are
    standardised by :class:`~udbench.methods.base.BaseMethod`. Per point, with member
    means μ_m and variances v_m: mean = avg μ_m, AU = avg v_m, EU = (1/M) Σ (μ_m − mean)².
    Defaults are the centres of :data:`~udbench.methods.nn.ensemble.NN_SEARCH_SPACE`; the
    shared network's are read from :data:`~udbench.methods.nn.backbone.NN_DEFAULTS`, their one
    home for every neural method.
    """

    name: ClassVar[str] = "nn-ens"
    paper_index: ClassVar[int | None] = 11  # SPEC §8's list
    family: ClassVar[str] = "nn"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    progress_param: ClassVar[str | None] = "n_epochs"  # reports while it trains
    description: ClassVar[str] = "Deep ensemble on the residual-MLP backbone (paper C.4)"
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_SEARCH_SPACE,
        "n_members": {"type": "categorical", "choices": [10]},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_PARAM_CONSTRAINTS,
        **SN_PARAM_CONSTRAINTS,
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
        eps: float = NN_DEFAULTS.eps,
        dtype: str = NN_DEFAULTS.dtype,
        random_state: int | None = NN_DEFAULTS.random_state,
        spectral_norm: bool = NN_DEFAULTS.spectral_norm,
        sn_coeff: float = NN_DEFAULTS.sn_coeff,
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
        self.eps = eps
        self.dtype = dtype
        self.random_state = random_state
        self.spectral_norm = spectral_norm
        self.sn_coeff = sn_coeff

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self._fit_members(X, y)

    def _predict(self, X: np.ndarray) -> Prediction:
        return self._predict_ensemble(X)
