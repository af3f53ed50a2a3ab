"""NN-Lap and NN-Lap-SN: last-layer Laplace approximation on the shared backbone (paper C.4).

The Gaussian network is MAP-trained once; the posterior of the mean head's last-layer
weights (with bias) is N(w_MAP, Λ⁻¹) with the paper's precision

    Λ = τI + Σᵢ φ(xᵢ)φ(xᵢ)ᵀ / v_MAP(xᵢ),   φ = [h(x), 1]

(Daxberger et al., NeurIPS 2021, "Laplace Redux"); EU = φ(x)ᵀΛ⁻¹φ(x) in closed form, or the
variance over ``n_members`` sampled weight vectors (:class:`~udbench.methods.nn.laplace.
LastLayerLaplace`). τ (``prior_precision``) is a tuned hyperparameter, not fitted by the
Laplace marginal likelihood: the paper tunes every method by held-out NLL (SPEC §9).

NN-Lap-SN is the same method on the spectrally normalised backbone: a registry row of its own,
the subclass :class:`NNLaplaceSN` that only changes the name, the default
``spectral_norm=True`` and the search space (paper C.4).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from udbench.methods._variants import init_with_defaults
from udbench.methods.nn.backbone import NN_DEFAULTS
from udbench.methods.nn.ensemble import (
    NN_PARAM_CONSTRAINTS,
    NN_SEARCH_SPACE,
    SN_PARAM_CONSTRAINTS,
    SN_SEARCH_SPACE,
)
from udbench.methods.nn.laplace import PREDICTIVES, LastLayerLaplace

__all__ = ["LAPLACE_PARAM_CONSTRAINTS", "NNLaplace", "NNLaplaceSN"]

#: What the Laplace methods add to the shared network's accepted values.
LAPLACE_PARAM_CONSTRAINTS: dict[str, dict[str, Any]] = {
    **NN_PARAM_CONSTRAINTS,
    **SN_PARAM_CONSTRAINTS,
    "predictive": {"type": "categorical", "choices": list(PREDICTIVES)},
}


class NNLaplace(LastLayerLaplace):
    """Last-layer Laplace approximation of the Gaussian residual MLP (NN-Lap; paper C.4).

    Parameters
    ----------
    prior_precision : float, default 0.1
        τ of the isotropic prior on the last-layer weights (standardised units; the centre
        of the search space [1e-4, 1e2], log, chosen here).
    predictive : {"closed_form", "samples"}, default "closed_form"
        EU = φᵀΛ⁻¹φ, or the variance of the means of ``n_members`` sampled weight vectors.
    n_members : int, default 256
        Number of sampled weight vectors (used with ``predictive="samples"``; the paper's
        value). One network is trained either way.
    hidden_dim, n_blocks, activation, dropout, lr, momentum, weight_decay, n_epochs,
    batch_size, eps, dtype, random_state
        The shared network and its training, as for :class:`~udbench.methods.nn_ens.NNEnsemble`.
    spectral_norm : bool, default False
        Spectrally normalised backbone (:mod:`udbench.methods.nn.spectral`); NN-Lap-SN.
    sn_coeff : float, default 1.0
        Its bound c (‖W‖₂ ≤ c per dense layer).

    Notes
    -----
    Weight decay of the MAP training and τ are separate hyperparameters (the decoupled decay
    of NAdamW is not a Gaussian prior's gradient).
    """

    name: ClassVar[str] = "nn-lap"
    paper_index: ClassVar[int | None] = 15  # SPEC §8's list
    family: ClassVar[str] = "nn"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "closed_form"
    description: ClassVar[str] = "Last-layer Laplace on the residual-MLP backbone (paper C.4)"
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_SEARCH_SPACE,
        "prior_precision": {"type": "float", "low": 1e-4, "high": 1e2, "log": True},
        "n_members": {"type": "categorical", "choices": [256]},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        **LAPLACE_PARAM_CONSTRAINTS,
        "prior_precision": {"type": "float", "low": 0.0, "low_open": True},
    }
    smoke_params: ClassVar[dict[str, Any]] = {
        "hidden_dim": 16,
        "n_blocks": 1,
        "n_epochs": 20,
        "batch_size": 64,
        "lr": 3e-3,
        "n_members": 32,
    }

    def __init__(
        self,
        prior_precision: float = 0.1,
        predictive: str = "closed_form",
        n_members: int = 256,
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
        self.prior_precision = prior_precision
        self.predictive = predictive
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

    def _prior_precision(self, Xs: np.ndarray, p: int) -> float:
        return float(self.prior_precision)


class NNLaplaceSN(NNLaplace):
    """NN-Lap on the spectrally normalised backbone (NN-Lap-SN; paper C.4, D.4).

    :class:`NNLaplace` with ``spectral_norm=True`` by default and the paper's additional
    search space (``spectral_norm`` = True, ``sn_coeff`` ∈ [0.5, 3], log); nothing else
    differs.
    """

    name: ClassVar[str] = "nn-lap-sn"
    paper_index: ClassVar[int | None] = 16  # SPEC §8's list
    description: ClassVar[str] = (
        "Last-layer Laplace on the spectrally normalised backbone (paper C.4)"
    )
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NNLaplace.search_space,
        **SN_SEARCH_SPACE,
    }
    __init__ = init_with_defaults(NNLaplace.__init__, spectral_norm=True)
