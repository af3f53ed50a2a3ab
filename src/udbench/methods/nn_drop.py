"""NN-Drop: Monte Carlo dropout on the shared backbone (paper App. C.4; Gal & Ghahramani, 2016).

One instance of the shared Gaussian network is trained with dropout after the input layer and
after the first layer of every residual block (the backbone's dropout positions), by the
shared training loop. At prediction, dropout stays on and M = ``n_members`` stochastic
forward passes are drawn in one vectorised (``vmap``-ed) computation; each pass is one thinned
network (one mask per dropout layer, shared by every prediction point, so a point's output does
not depend on the other points of the batch), and the passes are aggregated like ensemble
members: mean = average pass mean, AU = average pass variance, EU = variance of the pass means.
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from udbench.methods.base import Prediction
from udbench.methods.nn.backbone import NN_DEFAULTS, BackboneConfig, apply_gaussian
from udbench.methods.nn.ensemble import (
    NN_PARAM_CONSTRAINTS,
    NN_SEARCH_SPACE,
    SN_PARAM_CONSTRAINTS,
    GaussianNNEnsemble,
)

__all__ = ["NNDropout", "mc_dropout_passes"]


@partial(jax.jit, static_argnames=("model",))
def _passes(params: Any, X: jax.Array, keys: jax.Array, *, model: BackboneConfig) -> Any:
    return jax.vmap(
        lambda k: apply_gaussian(params, X, model, dropout_key=k, dropout_per_row=False)
    )(keys)


def mc_dropout_passes(
    params: Any, X: Any, model: BackboneConfig, keys: jax.Array
) -> tuple[np.ndarray, np.ndarray]:
    """Means and variances of MC-dropout passes of one network, one pass per key.

    Parameters
    ----------
    params : pytree
        One network's parameters (no member axis).
    X : array, shape (m, d)
        Standardised inputs.
    model : BackboneConfig
        Its ``dropout`` is the rate used in every pass.
    keys : jax.Array, shape (M,) of PRNG keys
        One key per pass; a key selects one mask per dropout layer, shared by all rows.

    Returns
    -------
    mean, var : numpy.ndarray, each shape (M, m), float64
        Standardised target units.
    """
    dtype = jax.tree_util.tree_leaves(params)[0].dtype
    mean, var = _passes(params, jnp.asarray(X, dtype), keys, model=model)
    return np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64)


class NNDropout(GaussianNNEnsemble):
    """Monte Carlo dropout network (NN-Drop; paper App. C.4).

    Parameters
    ----------
    n_members : int, default 128
        Number M of stochastic forward passes at prediction (fixed at 128 in the paper's
        space). Only one network is trained.
    dropout : float, default 0.2
        Dropout rate during training and prediction. Paper space [0.05, 0.35]; default its
        centre. With ``dropout=0`` every pass is the same network, so one pass is computed
        and EU is exactly 0.
    hidden_dim, n_blocks, activation, lr, momentum, weight_decay : see below
    n_epochs, batch_size, eps, dtype, random_state
        As :class:`udbench.methods.nn_ens.NNEnsemble` (the shared network).
    spectral_norm : bool, default False
        Spectrally normalise the backbone (‖W‖₂ ≤ ``sn_coeff`` for every dense layer; the
        option of every neural method, :mod:`udbench.methods.nn.spectral`; paper D.4). The
        weights are bounded; dropout masks the activations, as in training.
    sn_coeff : float, default 1.0
        The bound of spectral normalisation (used only with ``spectral_norm=True``).

    Notes
    -----
    The dropout masks of the passes derive from ``random_state`` (stream ``"passes"``), the
    same at every call to ``predict``, so predictions are deterministic. Training uses a
    fresh mask per row and step (standard dropout); prediction draws one thinned network
    per pass, which makes the passes a sample of networks (Gal & Ghahramani, 2016) and a
    point's prediction independent of the batch it is predicted in.
    """

    name: ClassVar[str] = "nn-drop"
    paper_index: ClassVar[int | None] = 12  # SPEC §8's list
    family: ClassVar[str] = "nn"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    progress_param: ClassVar[str | None] = "n_epochs"  # reports while it trains
    description: ClassVar[str] = "MC dropout on the residual-MLP backbone (paper C.4)"
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_SEARCH_SPACE,
        "n_members": {"type": "categorical", "choices": [128]},
        "dropout": {"type": "float", "low": 0.05, "high": 0.35},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_PARAM_CONSTRAINTS,
        **SN_PARAM_CONSTRAINTS,
    }
    smoke_params: ClassVar[dict[str, Any]] = {
        "n_members": 32,
        "hidden_dim": 16,
        "n_blocks": 1,
        "n_epochs": 20,
        "batch_size": 64,
        "lr": 3e-3,
    }

    def __init__(
        self,
        n_members: int = 128,
        dropout: float = 0.2,
        hidden_dim: int = NN_DEFAULTS.hidden_dim,
        n_blocks: int = NN_DEFAULTS.n_blocks,
        activation: str = NN_DEFAULTS.activation,
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
        self.dropout = dropout
        self.hidden_dim = hidden_dim
        self.n_blocks = n_blocks
        self.activation = activation
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

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self._fit_members(X, y)

    def _predict_members(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Means and variances (M, m) of the M dropout passes, standardised units."""
        n_passes = int(self.n_members) if self.model_config_.dropout > 0.0 else 1
        with self._precision():
            Xs = (X - self.x_loc_) / self.x_scale_
            params = jax.tree_util.tree_map(lambda a: a[0], self.params_)
            keys = jax.random.split(jax.random.key(self._seed("passes", bits=31)), n_passes)
            return mc_dropout_passes(params, Xs, self.model_config_, keys)

    def _predict(self, X: np.ndarray) -> Prediction:
        return self._predict_ensemble(X)
