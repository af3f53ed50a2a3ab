"""NN-Lap-Softmax: last-layer Laplace classifier on the shared backbone (Daxberger et al. 2021).

One network of the shared residual MLP (:mod:`udbench.methods.nn`, paper App. C.4) with a
K-way softmax head is MAP-trained by the categorical cross-entropy (as one member of
:mod:`udbench.methods.nn_ens_softmax`). The head's weights and biases W (p × K, p = hidden + 1,
features φ = [h(x), 1]) get the Laplace posterior N(W_MAP, Λ⁻¹) with the generalised
Gauss–Newton precision of the softmax likelihood (which is its exact Hessian for a linear
layer),

    Λ = τI + Σᵢ (φᵢφᵢᵀ) ⊗ (diag πᵢ − πᵢπᵢᵀ),   πᵢ = softmax(W_MAPᵀφᵢ)

(MacKay 1992; Daxberger et al., NeurIPS 2021, "Laplace Redux — Effortless Bayesian Deep
Learning", §2 and the last-layer variant of §3; the Kronecker form of the softmax GGN:
Ritter, Botev & Barber 2018). The predictive is approximated by Monte Carlo: S =
``n_members`` weight draws, π_s(x) = softmax(W_sᵀφ(x)) (laplace-torch's ``link_approx="mc"``),
decomposed by :func:`udbench.methods.classification.sample_decomposition` (AU = expected
entropy, EU = mutual information; Brier analogues); π̂ is their mean.

τ (``prior_precision``) is a tuned hyperparameter (held-out NLL, SPEC §9), as for the
regression NN-Lap (:mod:`udbench.methods.nn_lap`), not fitted by the marginal likelihood.
The linear algebra reuses :mod:`udbench.methods.nn.laplace` (bias column, weight draws by a
Cholesky factor of Λ, in float64).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.special import softmax

from udbench.methods._softmax_nn import SOFTMAX_NN_CONSTRAINTS, SoftmaxNNClassifier
from udbench.methods.nn.backbone import NN_DEFAULTS
from udbench.methods.nn.distance import member_features
from udbench.methods.nn.ensemble import NN_SEARCH_SPACE
from udbench.methods.nn.laplace import add_bias_column, sample_weights

__all__ = ["NNLaplaceSoftmax", "softmax_last_layer_precision"]


def softmax_last_layer_precision(
    Phi: np.ndarray, probs: np.ndarray, prior_precision: float
) -> np.ndarray:
    """Λ = τI + Σᵢ (φᵢφᵢᵀ) ⊗ (diag πᵢ − πᵢπᵢᵀ) of the flattened last-layer weights.

    The weights W (p, K) are flattened row-major (entry (j, k) at index j·K + k), so that the
    logits are f = (φᵀ ⊗ I_K) vec(W).

    Parameters
    ----------
    Phi : ndarray, shape (n, p)
        Training features (with the bias column).
    probs : ndarray, shape (n, K)
        The MAP network's class probabilities at the training points.
    prior_precision : float
        τ > 0.

    Returns
    -------
    ndarray, shape (p·K, p·K), float64
        Symmetric positive definite.
    """
    Phi = np.asarray(Phi, dtype=np.float64)
    P = np.asarray(probs, dtype=np.float64)
    n, p = Phi.shape
    K = P.shape[1]
    # Σᵢ φᵢφᵢᵀ ⊗ diag πᵢ  −  Σᵢ (φᵢ ⊗ πᵢ)(φᵢ ⊗ πᵢ)ᵀ
    diag_part = np.einsum("ij,il,ik->jkl", Phi, Phi, P)  # (p, K, p): [j, k, l]
    ggn = np.zeros((p, K, p, K))
    idx = np.arange(K)
    ggn[:, idx, :, idx] = np.moveaxis(diag_part, 1, 0)
    outer = (Phi[:, :, None] * P[:, None, :]).reshape(n, p * K)
    lam = ggn.reshape(p * K, p * K) - outer.T @ outer
    lam = lam + float(prior_precision) * np.eye(p * K)
    return 0.5 * (lam + lam.T)


class NNLaplaceSoftmax(SoftmaxNNClassifier):
    """Last-layer Laplace classifier (module docstring).

    Parameters
    ----------
    prior_precision : float, default 1.0
        τ of the N(0, τ⁻¹I) prior on the head's weights and biases. Search space [1e-4, 1e2]
        log-uniform (the regression NN-Lap's).
    n_members : int, default 256
        Number S of weight draws (the regression NN-Lap's, fixed in the search space).
    hidden_dim, n_blocks, activation, dropout, lr, momentum, weight_decay, n_epochs,
    batch_size, dtype
        The shared network's settings, as for
        :class:`udbench.methods.nn_ens_softmax.NNEnsembleSoftmax`.
    random_state : int or None, default 0
        Root seed of initialisation, minibatch order and the weight draws (stream
        ``"laplace"``; the same draws at every ``predict``).

    Notes
    -----
    Fitted attributes beyond the base's: ``precision_`` (p·K, p·K), ``head_map_`` (p, K).
    """

    name: ClassVar[str] = "nn-lap-softmax"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    description: ClassVar[str] = (
        "Last-layer Laplace, residual-MLP backbone, softmax head (Daxberger et al. 2021)"
    )
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_SEARCH_SPACE,
        "prior_precision": {"type": "float", "low": 1e-4, "high": 1e2, "log": True},
        "n_members": {"type": "categorical", "choices": [256]},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        **SOFTMAX_NN_CONSTRAINTS,
        "prior_precision": {"type": "float", "low": 0.0, "low_open": True},
    }
    smoke_params: ClassVar[dict[str, Any]] = {
        "n_members": 64,
        "hidden_dim": 16,
        "n_blocks": 1,
        "n_epochs": 20,
        "batch_size": 64,
        "lr": 3e-3,
    }

    def __init__(
        self,
        prior_precision: float = 1.0,
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
        dtype: str = NN_DEFAULTS.dtype,
        random_state: int | None = NN_DEFAULTS.random_state,
    ) -> None:
        self.prior_precision = prior_precision
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

    def _n_networks(self) -> int:
        return 1

    def _phi(self, X: np.ndarray) -> np.ndarray:
        with self._precision():
            H = member_features(self.params_, self._standardised(X), self.model_config_)[0]
        return add_bias_column(H)

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        super()._fit(X, y)
        head = self.params_["head"]
        self.head_map_ = np.vstack(
            [np.asarray(head["w"][0], np.float64), np.asarray(head["b"][0], np.float64)[None]]
        )
        Phi = self._phi(X)
        probs = softmax(Phi @ self.head_map_, axis=1)
        self.precision_ = softmax_last_layer_precision(Phi, probs, float(self.prior_precision))

    def _predict_samples(self, X: np.ndarray) -> np.ndarray:
        p, K = self.head_map_.shape
        draws = sample_weights(
            self.head_map_.reshape(-1), self.precision_, int(self.n_members), self._rng("laplace")
        ).reshape(-1, p, K)
        logits = np.einsum("mj,sjk->smk", self._phi(X), draws)
        return softmax(logits, axis=2)
