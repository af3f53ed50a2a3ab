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

from typing import Any, ClassVar

from udbench.methods._softmax_nn import (
    SOFTMAX_NN_CONSTRAINTS,
    SoftmaxNNClassifier,
    softmax_cross_entropy_loss,
)
from udbench.methods.nn.backbone import NN_DEFAULTS
from udbench.methods.nn.ensemble import NN_SEARCH_SPACE

__all__ = ["NNEnsembleSoftmax", "softmax_cross_entropy_loss"]


class NNEnsembleSoftmax(SoftmaxNNClassifier):
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
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = SOFTMAX_NN_CONSTRAINTS
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
