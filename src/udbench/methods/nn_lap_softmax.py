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
Ritter, Botev & Barber 2018). The predictive is integrated over the logits, which are
Gaussian at each point, f(x) ~ N(W_MAPᵀφ, Σ(x)), Σ(x)_kl = Σ_ij φ_i φ_j (Λ⁻¹)_[(i,k),(j,l)]
(laplace-torch's ``link_approx="mc"`` draws the same logits): S = ``n_members`` draws
π_s(x) = softmax(W_MAPᵀφ + L(x) z_s), Σ(x) = L Lᵀ, with z_s the randomised quasi-Monte Carlo
normal draws of :func:`udbench.methods.classification.qmc_standard_normal` (scrambled Sobol'
in K dimensions, the same at every point and call), decomposed by
:func:`udbench.methods.classification.sample_decomposition` (AU = expected entropy, EU =
mutual information; Brier analogues); π̂ is their mean.

Integration error (measured, docs/classification.md "Monte Carlo error of the Laplace
predictives"): at the default S = 4096 every class probability above 0.05 is within 5 %
(relative) of a 2·10⁵-draw reference on the d = 2, K = 3 toy of the test, against 38 % of
them off by more than 5 % with the former 256 plain Monte Carlo weight draws.

τ (``prior_precision``) is a tuned hyperparameter (held-out NLL, SPEC §9), as for the
regression NN-Lap (:mod:`udbench.methods.nn_lap`), not fitted by the marginal likelihood.
The linear algebra reuses :mod:`udbench.methods.nn.laplace` (bias column, weight draws by a
Cholesky factor of Λ, in float64).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.linalg
from scipy.special import softmax

from udbench.methods._softmax_nn import SOFTMAX_NN_CONSTRAINTS, SoftmaxNNClassifier
from udbench.methods.classification import (
    ClassPrediction,
    gaussian_softmax_samples,
    qmc_standard_normal,
    row_chunked_decomposition,
)
from udbench.methods.nn.backbone import NN_DEFAULTS
from udbench.methods.nn.distance import member_features
from udbench.methods.nn.ensemble import NN_SEARCH_SPACE
from udbench.methods.nn.laplace import add_bias_column

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
    n_members : int, default 4096
        S, the randomised quasi-Monte Carlo draws of the logits per point (fixed in the
        search space; module docstring: the integration error at the default).
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
        "n_members": {"type": "categorical", "choices": [4096]},
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
        n_members: int = 4096,
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
        p, K = self.head_map_.shape
        self._cov_w_ = scipy.linalg.cho_solve(
            scipy.linalg.cho_factor(self.precision_, lower=True), np.eye(p * K)
        ).reshape(p, K, p, K)

    def _predict_samples(self, X: np.ndarray) -> np.ndarray:
        Phi = self._phi(X)
        cov = np.einsum("mi,ikjl,mj->mkl", Phi, self._cov_w_, Phi)  # Σ(x), (m, K, K)
        z = qmc_standard_normal(int(self.n_members), self.n_classes_, self._rng("laplace"))
        return gaussian_softmax_samples(Phi @ self.head_map_, cov, z)

    def _predict(self, X: np.ndarray, loss: str) -> ClassPrediction:
        return row_chunked_decomposition(
            self._predict_samples, X, int(self.n_members), self.n_classes_, loss
        )
