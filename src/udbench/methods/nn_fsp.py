"""NN-FSP and NN-FSP-SN: function-space-prior Laplace on the shared backbone (paper C.4).

FSP-Laplace (Cinquin et al., NeurIPS 2024). **MAP training** with a Gaussian-process prior in
function space: the paper's objective

    n·ℓ̄_batch + ½ (μθ(C) − m(C))ᵀ K_CC⁻¹ (μθ(C) − m(C)),

divided by n (so the data term is the usual batch-mean NLL): per step, ℓ̄_batch +
(1/2n)·μθ(C)ᵀK_CC⁻¹μθ(C), with m = 0 and context points C drawn afresh every step —
``min(n, n_context // 2)`` training inputs (without replacement) plus the rest uniform in the
bounding box of the standardised training inputs. K is Matérn-5/2 on standardised inputs,
``prior_variance``·k(r/``prior_lengthscale``) (one lengthscale for all standardised columns),
plus a jitter of 1e-4·``prior_variance`` on the diagonal (:data:`FSP_JITTER`; float32
Cholesky of up to 256 context points).

**Laplace step**: the isotropic prior is replaced by the function-space prior restricted to
the last layer, Λ = Φ_Cᵀ K_CC⁻¹ Φ_C + Σᵢ φᵢφᵢᵀ / v_MAP(xᵢ) + 1e-6·I (:data:`LAPLACE_JITTER`),
Φ_C = [h(C), 1] at one context set drawn by the same rule at the end of training (seeded).
Outputs as NN-Lap (:class:`~udbench.methods.nn.laplace.LastLayerLaplace`).

NN-FSP-SN (:class:`NNFSPSN`) is the same method on the spectrally normalised backbone, a
registry row that changes only name, ``spectral_norm`` default and search space.
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from udbench.methods._variants import init_with_defaults
from udbench.methods.nn.backbone import NN_DEFAULTS, BackboneConfig, apply_gaussian
from udbench.methods.nn.ensemble import (
    NN_PARAM_CONSTRAINTS,
    NN_SEARCH_SPACE,
    SN_PARAM_CONSTRAINTS,
    SN_SEARCH_SPACE,
)
from udbench.methods.nn.laplace import PREDICTIVES, LastLayerLaplace, add_bias_column
from udbench.methods.nn.training import gaussian_loss

__all__ = [
    "FSP_JITTER",
    "LAPLACE_JITTER",
    "NNFSP",
    "NNFSPSN",
    "fsp_loss",
    "fsp_prior_term",
    "matern52",
]

#: Diagonal jitter of K_CC, relative to the prior variance.
FSP_JITTER = 1e-4
#: Jitter added to the last-layer precision Λ (standardised units).
LAPLACE_JITTER = 1e-6


def matern52(A: Any, B: Any, lengthscale: Any, variance: Any, xp: Any = jnp) -> Any:
    """Matérn-5/2 kernel matrix σ²(1 + √5 r + 5r²/3) e^{−√5 r}, r = ‖a − b‖/ℓ, shape (n_A, n_B).

    ``xp`` is the array namespace (``jax.numpy`` or ``numpy``).
    """
    d2 = xp.sum((A[:, None, :] - B[None, :, :]) ** 2, axis=-1)
    r = xp.sqrt(xp.maximum(d2, 0.0)) / lengthscale
    s5r = np.sqrt(5.0) * r
    return variance * (1.0 + s5r + 5.0 / 3.0 * r * r) * xp.exp(-s5r)


def fsp_prior_term(f: jax.Array, K: jax.Array) -> jax.Array:
    """½ fᵀ K⁻¹ f by a Cholesky solve (K symmetric positive definite, f of shape (c,))."""
    L = jnp.linalg.cholesky(K)
    a = jax.scipy.linalg.solve_triangular(L, f, lower=True)
    return 0.5 * jnp.sum(a * a)


def _context(key: jax.Array, state: dict[str, Any]) -> jax.Array:
    """Context points: training inputs without replacement plus uniform points in the box.

    The two counts are the lengths of the placeholder arrays ``state["ctx_train"]`` and
    ``state["ctx_uniform"]`` (shapes are static under ``jit``, values are not).
    """
    pool = state["pool"]
    k_rows, k_unif = jax.random.split(key)
    n_train, n_unif = state["ctx_train"].shape[0], state["ctx_uniform"].shape[0]
    rows = jax.random.choice(k_rows, pool.shape[0], (n_train,), replace=False)
    lo, hi = state["lo"], state["hi"]
    u = jax.random.uniform(k_unif, (n_unif, pool.shape[1]), pool.dtype)
    return jnp.concatenate([pool[rows], lo + (hi - lo) * u], axis=0)


def fsp_loss(
    params: Any,
    state: dict[str, Any],
    xb: jax.Array,
    yb: jax.Array,
    mask: jax.Array,
    key: jax.Array,
    model: BackboneConfig,
) -> tuple[jax.Array, dict[str, Any]]:
    """Per-step FSP objective of one network: batch-mean Gaussian NLL + (1/2n)·μ(C)ᵀK_CC⁻¹μ(C).

    ``state`` (per member; unchanged by the step): ``pool`` (n, d) standardised training
    inputs, ``lo``, ``hi`` (d,) their bounding box, ``lengthscale``, ``variance``,
    ``jitter`` (absolute, added to K's diagonal), ``inv_n`` = 1/n, and the placeholders
    ``ctx_train``, ``ctx_uniform`` whose lengths are the context counts. The NLL uses ``key``
    exactly as :func:`~udbench.methods.nn.training.gaussian_loss` does (dropout); the
    context is drawn from ``fold_in(key, 1)``.
    """
    nll, _ = gaussian_loss(params, state, xb, yb, mask, key, model)
    C = jax.lax.stop_gradient(_context(jax.random.fold_in(key, 1), state))
    f_C, _ = apply_gaussian(params, C, model)
    K = matern52(C, C, state["lengthscale"], state["variance"])
    K = K + state["jitter"] * jnp.eye(C.shape[0], dtype=K.dtype)
    return nll + state["inv_n"] * fsp_prior_term(f_C, K), state


class NNFSP(LastLayerLaplace):
    """FSP-Laplace on the Gaussian residual MLP (NN-FSP; paper C.4, Cinquin et al. 2024).

    Parameters
    ----------
    n_context : int, default 128
        Context points per training step (and for the Laplace step's prior).
    prior_lengthscale : float, default 1.0
        Lengthscale ℓ of the Matérn-5/2 prior on standardised inputs.
    prior_variance : float, default 1.0
        Prior variance σ² of the GP (standardised target units).
    predictive : {"closed_form", "samples"}, default "closed_form"
        As for :class:`~udbench.methods.nn_lap.NNLaplace`.
    n_members : int, default 256
        Sampled weight vectors with ``predictive="samples"``.
    hidden_dim, n_blocks, activation, dropout, lr, momentum, weight_decay, n_epochs,
    batch_size, eps, dtype, random_state, spectral_norm, sn_coeff
        The shared network, its training and spectral normalisation (as NN-Lap).

    Notes
    -----
    Search space (chosen here, METHODS): n_context ∈ {64, 128, 256}, prior lengthscale and
    variance ∈ [0.1, 5] log; the defaults are round values near their centres.
    """

    name: ClassVar[str] = "nn-fsp"
    paper_index: ClassVar[int | None] = 17  # SPEC §8's list
    family: ClassVar[str] = "nn"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "closed_form"
    description: ClassVar[str] = (
        "Function-space-prior Laplace on the residual-MLP backbone (paper C.4)"
    )
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_SEARCH_SPACE,
        "n_context": {"type": "categorical", "choices": [64, 128, 256]},
        "prior_lengthscale": {"type": "float", "low": 0.1, "high": 5.0, "log": True},
        "prior_variance": {"type": "float", "low": 0.1, "high": 5.0, "log": True},
        "n_members": {"type": "categorical", "choices": [256]},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        **NN_PARAM_CONSTRAINTS,
        **SN_PARAM_CONSTRAINTS,
        "predictive": {"type": "categorical", "choices": list(PREDICTIVES)},
        "n_context": {"type": "int", "low": 2},
        "prior_lengthscale": {"type": "float", "low": 0.0, "low_open": True},
        "prior_variance": {"type": "float", "low": 0.0, "low_open": True},
    }
    smoke_params: ClassVar[dict[str, Any]] = {
        "hidden_dim": 16,
        "n_blocks": 1,
        "n_epochs": 20,
        "batch_size": 64,
        "lr": 3e-3,
        "n_context": 32,
        "n_members": 32,
    }
    _loss_fn = staticmethod(fsp_loss)

    def __init__(
        self,
        n_context: int = 128,
        prior_lengthscale: float = 1.0,
        prior_variance: float = 1.0,
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
        self.n_context = n_context
        self.prior_lengthscale = prior_lengthscale
        self.prior_variance = prior_variance
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

    # -- training ---------------------------------------------------------------------
    def _context_counts(self, n: int) -> tuple[int, int]:
        n_train = min(n, int(self.n_context) // 2)
        return n_train, int(self.n_context) - n_train

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self._train_X = X  # read by _train_state (after the inputs are standardised)
        try:
            super()._fit(X, y)
        finally:
            del self._train_X

    def _train_state(self, n_networks: int, dtype: Any) -> dict[str, Any]:
        Xs = (self._train_X - self.x_loc_) / self.x_scale_
        n_train, n_unif = self._context_counts(Xs.shape[0])
        one = {
            "pool": Xs,
            "lo": Xs.min(axis=0),
            "hi": Xs.max(axis=0),
            "lengthscale": float(self.prior_lengthscale),
            "variance": float(self.prior_variance),
            "jitter": FSP_JITTER * float(self.prior_variance),
            "inv_n": 1.0 / Xs.shape[0],
            "ctx_train": np.zeros(n_train),
            "ctx_uniform": np.zeros(n_unif),
        }
        return {
            k: jnp.broadcast_to(jnp.asarray(v, dtype), (n_networks, *np.shape(v)))
            for k, v in one.items()
        }

    # -- Laplace step -----------------------------------------------------------------
    def _prior_precision(self, Xs: np.ndarray, p: int) -> np.ndarray:
        rng = self._rng("fsp-context")
        n_train, n_unif = self._context_counts(Xs.shape[0])
        lo, hi = Xs.min(axis=0), Xs.max(axis=0)
        C = np.concatenate(
            [
                Xs[rng.choice(Xs.shape[0], n_train, replace=False)],
                lo + (hi - lo) * rng.uniform(size=(n_unif, Xs.shape[1])),
            ]
        )
        self.context_ = C
        H_C, _, _ = self._network_outputs(C)
        Phi_C = add_bias_column(H_C)
        var = float(self.prior_variance)
        K = matern52(C, C, float(self.prior_lengthscale), var, xp=np)
        K[np.diag_indices_from(K)] += FSP_JITTER * var
        A = scipy.linalg.solve_triangular(scipy.linalg.cholesky(K, lower=True), Phi_C, lower=True)
        return A.T @ A + LAPLACE_JITTER * np.eye(p)


class NNFSPSN(NNFSP):
    """NN-FSP on the spectrally normalised backbone (NN-FSP-SN; paper C.4, D.4).

    :class:`NNFSP` with ``spectral_norm=True`` by default and the paper's additional search
    space (``spectral_norm`` = True, ``sn_coeff`` ∈ [0.5, 3], log); nothing else differs.
    """

    name: ClassVar[str] = "nn-fsp-sn"
    paper_index: ClassVar[int | None] = 18  # SPEC §8's list
    description: ClassVar[str] = (
        "Function-space-prior Laplace on the spectrally normalised backbone (paper C.4)"
    )
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **NNFSP.search_space,
        **SN_SEARCH_SPACE,
    }
    __init__ = init_with_defaults(NNFSP.__init__, spectral_norm=True)
