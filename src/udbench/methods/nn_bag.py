"""NN-Bag: bagged Gaussian residual MLPs on the shared backbone (paper App. C.4).

M independently initialised members of the shared Gaussian network, each trained on its own
fixed subsample of ⌊sample_fraction·n⌋ training rows drawn with or without replacement
(Breiman, 1996). All members train in one vectorised computation, as NN-Ens's
(:func:`udbench.methods.nn.training.train_members`; the resamples are the members' ``rows``).
Mean = average member mean, AU = average member variance, EU = variance of the member means.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from udbench.methods._ensemble import bagging_rows
from udbench.methods.base import Prediction
from udbench.methods.nn.backbone import NN_DEFAULTS
from udbench.methods.nn.ensemble import (
    NN_PARAM_CONSTRAINTS,
    NN_SEARCH_SPACE,
    SN_PARAM_CONSTRAINTS,
    GaussianNNEnsemble,
)

__all__ = ["NNBag"]


class NNBag(GaussianNNEnsemble):
    """Bagging ensemble of Gaussian residual MLPs (NN-Bag; paper App. C.4).

    Parameters
    ----------
    n_members : int, default 10
        Ensemble size M (fixed at 10 in the paper's search space).
    sample_fraction : float, default 0.775
        Each member's subsample holds ⌊sample_fraction·n⌋ rows (at least 2; at most n
        without replacement). Paper space [0.6, 0.95]; default its centre.
    replace : bool, default True
        Draw the subsamples with replacement (bootstrap) or without (subsampling).
    hidden_dim, n_blocks, activation, dropout, lr, momentum, weight_decay : see below
    n_epochs, batch_size, eps, dtype, random_state
        As :class:`udbench.methods.nn_ens.NNEnsemble` (the shared network).
    spectral_norm : bool, default False
        Spectrally normalise the backbone (‖W‖₂ ≤ ``sn_coeff`` for every dense layer; the
        option of every neural method, :mod:`udbench.methods.nn.spectral`; paper D.4).
    sn_coeff : float, default 1.0
        The bound of spectral normalisation (used only with ``spectral_norm=True``).

    Notes
    -----
    Member m's rows are the m-th draw of :func:`udbench.methods._ensemble.bagging_rows` from
    the stream ``_rng("rows")`` (sorted; repeats possible with replacement); every member's
    epoch visits its own rows once. With ``sample_fraction=1`` and ``replace=False`` every
    member's rows are all n rows and NN-Bag is NN-Ens (tested member for member, same seeds).
    """

    name: ClassVar[str] = "nn-bag"
    paper_index: ClassVar[int | None] = 10  # SPEC §8's list
    family: ClassVar[str] = "nn"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    progress_param: ClassVar[str | None] = "n_epochs"  # reports while it trains
    description: ClassVar[str] = "Bagged ensemble on the residual-MLP backbone (paper C.4)"
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_SEARCH_SPACE,
        "n_members": {"type": "categorical", "choices": [10]},
        "sample_fraction": {"type": "float", "low": 0.6, "high": 0.95},
        "replace": {"type": "categorical", "choices": [True, False]},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_PARAM_CONSTRAINTS,
        "sample_fraction": {"type": "float", "low": 0.0, "high": 1.0, "low_open": True},
        "replace": {"type": "bool"},
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
        eps: float = NN_DEFAULTS.eps,
        dtype: str = NN_DEFAULTS.dtype,
        random_state: int | None = NN_DEFAULTS.random_state,
        spectral_norm: bool = NN_DEFAULTS.spectral_norm,
        sn_coeff: float = NN_DEFAULTS.sn_coeff,
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
        self.eps = eps
        self.dtype = dtype
        self.random_state = random_state
        self.spectral_norm = spectral_norm
        self.sn_coeff = sn_coeff

    def _member_rows(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """One fixed resample per member, shape (M, ⌊sample_fraction·n⌋)."""
        frac, repl = float(self.sample_fraction), bool(self.replace)
        return np.stack([bagging_rows(n, frac, repl, rng) for _ in range(int(self.n_members))])

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self._fit_members(X, y)

    def _predict(self, X: np.ndarray) -> Prediction:
        return self._predict_ensemble(X)
