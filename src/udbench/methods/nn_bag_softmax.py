"""NN-Bag-Softmax: bagged softmax classifiers on the shared backbone (bootstrap ensemble).

M independently initialised networks of the shared residual MLP (:mod:`udbench.methods.nn`,
paper App. C.4) with a K-way softmax head, each trained by the categorical cross-entropy on
its own fixed resample of ⌊sample_fraction·n⌋ training rows drawn with replacement
(bootstrap; Breiman 1996, "Bagging predictors") or without (subsampling), all in one
vectorised computation (the resamples are the members' ``rows`` of
:func:`udbench.methods.nn.training.train_members`, drawn by
:func:`udbench.methods._ensemble.bagging_rows` as for the regression NN-Bag,
:mod:`udbench.methods.nn_bag`). The members' probabilities are decomposed by
:func:`udbench.methods.classification.sample_decomposition` (AU = expected entropy, EU =
mutual information; Brier analogues); π̂ is their mean. A member whose resample misses a class
still gives it a softmax probability > 0 (the head has all K outputs).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from udbench.methods._ensemble import bagging_rows
from udbench.methods._softmax_nn import SOFTMAX_NN_CONSTRAINTS, SoftmaxNNClassifier
from udbench.methods.nn.backbone import NN_DEFAULTS
from udbench.methods.nn.ensemble import NN_SEARCH_SPACE

__all__ = ["NNBagSoftmax"]


class NNBagSoftmax(SoftmaxNNClassifier):
    """Bagging ensemble of softmax residual MLPs (module docstring).

    Parameters
    ----------
    n_members : int, default 10
        Ensemble size M (fixed at 10 in the search space, as the regression NN-Bag's).
    sample_fraction : float, default 0.775
        Each member's resample holds ⌊sample_fraction·n⌋ rows (at least 2; at most n without
        replacement). Search space [0.6, 0.95] (the regression NN-Bag's); default its centre.
    replace : bool, default True
        Resample with replacement (bootstrap) or without (subsampling).
    hidden_dim, n_blocks, activation, dropout, lr, momentum, weight_decay, n_epochs,
    batch_size, dtype
        The shared network's settings, as for
        :class:`udbench.methods.nn_ens_softmax.NNEnsembleSoftmax`.
    random_state : int or None, default 0
        Root seed of initialisation, minibatch order and the resamples (stream ``"rows"``).

    Notes
    -----
    With ``sample_fraction=1`` and ``replace=False`` every member trains on all rows and
    NN-Bag-Softmax is NN-Ens-Softmax, member for member (tested, same seeds).
    """

    name: ClassVar[str] = "nn-bag-softmax"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    description: ClassVar[str] = (
        "Bagged ensemble, residual-MLP backbone, softmax head (Breiman 1996)"
    )
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_SEARCH_SPACE,
        "n_members": {"type": "categorical", "choices": [10]},
        "sample_fraction": {"type": "float", "low": 0.6, "high": 0.95},
        "replace": {"type": "categorical", "choices": [True, False]},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        **SOFTMAX_NN_CONSTRAINTS,
        "sample_fraction": {"type": "float", "low": 0.0, "high": 1.0, "low_open": True},
        "replace": {"type": "bool"},
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
        sample_fraction: float = 0.775,
        replace: bool = True,
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
        self.sample_fraction = sample_fraction
        self.replace = replace
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

    def _member_rows(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """One fixed resample per member, shape (M, ⌊sample_fraction·n⌋)."""
        frac, repl = float(self.sample_fraction), bool(self.replace)
        return np.stack([bagging_rows(n, frac, repl, rng) for _ in range(int(self.n_members))])
