"""NN-Drop-Softmax: Monte Carlo dropout classifier on the shared backbone (Gal & Ghahramani 2016).

One network of the shared residual MLP (:mod:`udbench.methods.nn`, paper App. C.4) with a
K-way softmax head is trained by the categorical cross-entropy with dropout after the input
layer and after the first layer of every residual block (the backbone's dropout positions, as
for the regression NN-Drop, :mod:`udbench.methods.nn_drop`). At prediction dropout stays on
and S = ``n_members`` stochastic forward passes are drawn in one vectorised computation; each
pass is one thinned network (one mask per dropout layer shared by every prediction point,
``dropout_per_row=False``, so a point's output does not depend on the rest of the batch).
The passes' probabilities π_s(x) = softmax(logits_s(x)) are a sample of the approximate
posterior predictive (Gal & Ghahramani 2016, "Dropout as a Bayesian Approximation", §3 and
eq. 8, MC dropout), decomposed by :func:`udbench.methods.classification.sample_decomposition`
(AU = expected entropy, EU = mutual information, Gal, Islam & Ghahramani 2017 "Deep Bayesian
Active Learning with Image Data", BALD; Brier analogues); π̂ is their mean.
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from udbench.methods._softmax_nn import SOFTMAX_NN_CONSTRAINTS, SoftmaxNNClassifier, renormalise
from udbench.methods.nn.backbone import NN_DEFAULTS, BackboneConfig, features, head_outputs
from udbench.methods.nn.ensemble import NN_SEARCH_SPACE

__all__ = ["NNDropoutSoftmax", "mc_dropout_probs"]


@partial(jax.jit, static_argnames=("model",))
def _passes(params: Any, X: jax.Array, keys: jax.Array, *, model: BackboneConfig) -> jax.Array:
    def one(k: jax.Array) -> jax.Array:
        h = features(params, X, model, dropout_key=k, dropout_per_row=False)
        return jax.nn.softmax(head_outputs(params, h), axis=1)

    return jax.vmap(one)(keys)


def mc_dropout_probs(params: Any, X: Any, model: BackboneConfig, keys: jax.Array) -> np.ndarray:
    """Class probabilities of MC-dropout passes of one network, one pass per key.

    Parameters
    ----------
    params : pytree
        One network's parameters (no member axis).
    X : array, shape (m, d)
        Standardised inputs.
    model : BackboneConfig
        Its ``dropout`` is the rate of every pass.
    keys : jax.Array, shape (S,) of PRNG keys
        One key per pass; a key selects one mask per dropout layer, shared by all rows.

    Returns
    -------
    numpy.ndarray, shape (S, m, K), float64
        Rows renormalised to sum to 1.
    """
    dtype = jax.tree_util.tree_leaves(params)[0].dtype
    return renormalise(_passes(params, jnp.asarray(X, dtype), keys, model=model))


class NNDropoutSoftmax(SoftmaxNNClassifier):
    """Monte Carlo dropout classifier (module docstring).

    Parameters
    ----------
    n_members : int, default 128
        Number S of stochastic forward passes at prediction (as the regression NN-Drop's,
        fixed in the search space). One network is trained.
    dropout : float, default 0.2
        Dropout rate in training and prediction; search space [0.05, 0.35] (the regression
        NN-Drop's). With ``dropout=0`` every pass is the same network: one pass is computed
        and EU is exactly 0.
    hidden_dim, n_blocks, activation, lr, momentum, weight_decay, n_epochs, batch_size, dtype
        The shared network's settings, as for
        :class:`udbench.methods.nn_ens_softmax.NNEnsembleSoftmax`.
    random_state : int or None, default 0
        Root seed of initialisation, minibatch order, training masks and the prediction
        passes' masks (stream ``"passes"``: the same masks at every ``predict``, so
        predictions are deterministic).
    """

    name: ClassVar[str] = "nn-drop-softmax"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    description: ClassVar[str] = (
        "MC dropout, residual-MLP backbone, softmax head (Gal & Ghahramani 2016)"
    )
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_SEARCH_SPACE,
        "n_members": {"type": "categorical", "choices": [128]},
        "dropout": {"type": "float", "low": 0.05, "high": 0.35},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = SOFTMAX_NN_CONSTRAINTS
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
        dtype: str = NN_DEFAULTS.dtype,
        random_state: int | None = NN_DEFAULTS.random_state,
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
        self.dtype = dtype
        self.random_state = random_state

    def _n_networks(self) -> int:
        return 1

    def _predict_samples(self, X: np.ndarray) -> np.ndarray:
        n_passes = int(self.n_members) if self.model_config_.dropout > 0.0 else 1
        with self._precision():
            params = jax.tree_util.tree_map(lambda a: a[0], self.params_)
            keys = jax.random.split(jax.random.key(self._seed("passes", bits=31)), n_passes)
            return mc_dropout_probs(params, self._standardised(X), self.model_config_, keys)
