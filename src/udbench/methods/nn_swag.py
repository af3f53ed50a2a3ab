"""NN-SWAG: diagonal SWAG on the shared backbone (Maddox et al., NeurIPS 2019; paper C.4).

1. MAP training of one shared Gaussian network by the shared loop (``n_epochs``).
2. Training continues with the same optimiser (NAdamW, fresh state) at the constant learning
   rate ``swa_lr`` for ``swa_epochs`` epochs; the parameters at the end of every epoch are
   collected (:func:`udbench.methods.nn.training.train_members_with_iterates`).
3. Diagonal SWAG moments over the T collected iterates θ₁..θ_T:
   μ_SWAG = (1/T) Σ θ_t, σ²_SWAG = (1/T) Σ θ_t² − μ_SWAG² (the paper's equation; in float64,
   clipped at 0 against rounding).
4. M = ``n_members`` weight vectors θ_m ~ N(μ_SWAG, diag σ²_SWAG) are drawn once at fit and
   used as ensemble members: mean = average member mean, AU = average member variance,
   EU = variance of the member means.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from udbench.methods.base import Prediction
from udbench.methods.nn.backbone import NN_DEFAULTS, BackboneConfig
from udbench.methods.nn.ensemble import (
    _DTYPES,
    NN_PARAM_CONSTRAINTS,
    NN_SEARCH_SPACE,
    SN_PARAM_CONSTRAINTS,
    GaussianNNEnsemble,
)
from udbench.methods.nn.spectral import cap_exact
from udbench.methods.nn.swag import swag_moments
from udbench.methods.nn.training import TrainConfig, train_members_with_iterates

__all__ = ["NNSwag", "swag_moments"]


_cap_members = jax.jit(jax.vmap(cap_exact, in_axes=(0, None)))


class NNSwag(GaussianNNEnsemble):
    """Diagonal SWAG network (NN-SWAG; Maddox et al., 2019; paper App. C.4).

    Parameters
    ----------
    n_members : int, default 30
        Number M of weight vectors sampled from the SWAG posterior (fixed at 30 in the
        search space, chosen here).
    swa_lr : float, default 0.001
        Constant learning rate of the SWA phase. Search space [1e-4, 1e-2] log (chosen here);
        default its geometric centre.
    swa_epochs : int, default 30
        Epochs of the SWA phase, one collected iterate per epoch (≥ 2 for a spread).
        Search space 10–50 (chosen here); default its centre.
    hidden_dim, n_blocks, activation, dropout, lr, momentum, weight_decay : see below
    n_epochs, batch_size, eps, dtype, random_state
        As :class:`udbench.methods.nn_ens.NNEnsemble`; ``n_epochs`` is the MAP phase.
    spectral_norm : bool, default False
        Spectrally normalise the backbone (‖W‖₂ ≤ ``sn_coeff`` for every dense layer; the
        option of every neural method, :mod:`udbench.methods.nn.spectral`; paper D.4). The MAP
        and SWA phases train under SN; the collected iterates are the normalised
        weights, and every weight vector sampled from the SWAG Gaussian is projected onto
        the bound exactly (Notes).
    sn_coeff : float, default 1.0
        The bound of spectral normalisation (used only with ``spectral_norm=True``).

    Notes
    -----
    Fitted attributes: ``map_params_`` (the MAP network, member axis of 1), ``swag_mean_``,
    ``swag_var_`` (parameter pytrees, float64),
    ``params_`` (the M sampled weight vectors, member-stacked), ``history_`` (MAP epochs),
    ``swa_history_`` (SWA epochs). The SWA phase uses the MAP phase's weight decay, momentum
    and batch size; its own minibatch order (stream ``"swa"``); samples from stream
    ``"swag-samples"``.

    With ``spectral_norm=True`` both phases train under spectral normalisation and the
    iterates collected in the SWA phase are the normalised weights (each baked like a final
    network, ‖W‖₂ ≤ c), so μ_SWAG and σ²_SWAG are moments of the functions actually trained
    (‖μ_SWAG‖₂ ≤ c too: the spectral norm is convex). A weight vector drawn from
    N(μ_SWAG, diag σ²_SWAG) can exceed the bound; each drawn member is therefore projected
    exactly, W ← W·min(1, c/σ_max(W)) per constrained layer
    (:func:`udbench.methods.nn.spectral.cap_exact`, the final step SN applies to every trained
    network). Chosen over leaving samples unprojected because SN is a reparametrisation of the
    network: the method with the option predicts only with bounded networks, as every other
    method with it does. ``swag_mean_`` and ``swag_var_`` are the unprojected moments.
    """

    name: ClassVar[str] = "nn-swag"
    paper_index: ClassVar[int | None] = 19  # SPEC §8's list
    family: ClassVar[str] = "nn"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    description: ClassVar[str] = (
        "Diagonal SWAG weight samples on the residual-MLP backbone (paper C.4)"
    )
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_SEARCH_SPACE,
        "n_members": {"type": "categorical", "choices": [30]},
        "swa_lr": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True},
        "swa_epochs": {"type": "int", "low": 10, "high": 50},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_PARAM_CONSTRAINTS,
        "swa_lr": {"type": "float", "low": 0.0, "low_open": True},
        "swa_epochs": {"type": "int", "low": 2},
        **SN_PARAM_CONSTRAINTS,
    }
    smoke_params: ClassVar[dict[str, Any]] = {
        "n_members": 10,
        "swa_epochs": 10,
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
        self.swa_lr = swa_lr
        self.swa_epochs = swa_epochs
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
        return 1

    def _swa_iterates(
        self,
        map_params: Any,
        Xs: np.ndarray,
        y: np.ndarray,
        model: BackboneConfig,
        train: TrainConfig,
    ) -> tuple[Any, np.ndarray]:
        """SWA phase from the (member-stacked, M = 1) MAP parameters.

        Returns the collected iterates (pytree, leading axis ``swa_epochs``) and the SWA
        phase's epoch losses. Runs inside the method's precision scope.
        """
        swa_train = dataclasses.replace(train, n_epochs=int(self.swa_epochs), lr=float(self.swa_lr))
        key = jax.random.key(self._seed("swa", bits=31))
        rows = np.arange(y.size)[None, :]
        _, _, hist, iterates = train_members_with_iterates(
            map_params, Xs, y, rows, jax.random.split(key, 1), model, swa_train
        )
        return jax.tree_util.tree_map(lambda a: a[0], iterates), np.asarray(hist[0], np.float64)

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        model, train = self._configs(X.shape[1])
        with self._precision():
            self._fit_members_impl(X, y, model, train)  # MAP: params_, history_, x_loc_, …
            map_params = self.params_
            Xs = (X - self.x_loc_) / self.x_scale_
            iterates, swa_hist = self._swa_iterates(map_params, Xs, y, model, train)
            mean, var = swag_moments(iterates)
            rng = self._rng("swag-samples")
            M = int(self.n_members)
            dtype = _DTYPES[self.dtype]
            self.params_ = jax.tree_util.tree_map(
                lambda mu, v: jnp.asarray(
                    mu + np.sqrt(v) * rng.standard_normal((M, *np.shape(mu))), dtype
                ),
                mean,
                var,
            )
            if model.spectral_norm:  # SN reparametrises every network the method predicts with
                self.params_ = _cap_members(self.params_, model.sn_coeff)
        self.map_params_ = map_params
        self.swag_mean_ = mean
        self.swag_var_ = var
        self.swa_history_ = swa_hist

    def _predict(self, X: np.ndarray) -> Prediction:
        return self._predict_ensemble(X)
