"""Closed-form last-layer Gaussian posteriors: the linear algebra of NN-Lap, NN-FSP, SNGP-Het.

A linear output ``f(x) = φ(x)ᵀw`` with a Gaussian likelihood of per-point variance v(xᵢ) and
a Gaussian prior of precision P on w has the (Laplace = exact, for a linear-Gaussian layer)
posterior precision::

    Λ = P + Σᵢ φ(xᵢ) φ(xᵢ)ᵀ / v(xᵢ)                 (paper C.2 SNGP-Het, C.4 NN-Lap)

and the epistemic variance of f at x is φ(x)ᵀ Λ⁻¹ φ(x). Everything here is NumPy float64
on a Cholesky factor of Λ (features computed by the network in float32 are promoted), so
the closed form and a direct dense computation agree to ~1e-12 relative
(tests/methods/test_nn_laplace.py).

Why not a library: `laplax` (JAX, version 0.0.2 on PyPI when this was written) targets
generalised-Gauss–Newton posteriors over whole networks; the three methods here need only
this p × p last-layer precision with per-point heteroscedastic weights 1/v(xᵢ) (and, for
NN-FSP, a function-space prior matrix in place of τI), which is a few lines and has no
pre-1.0 dependency.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import scipy.linalg

from udbench._validation import check_choice
from udbench.methods._ensemble import aggregate_members
from udbench.methods.base import Prediction
from udbench.methods.nn.distance import member_features
from udbench.methods.nn.ensemble import GaussianNNEnsemble
from udbench.methods.nn.training import predict_members

__all__ = [
    "MARGLIK_GRID",
    "PREDICTIVES",
    "LastLayerLaplace",
    "add_bias_column",
    "laplace_log_marginal_likelihood",
    "last_layer_precision",
    "posterior_variance",
    "sample_weights",
]


def add_bias_column(H: np.ndarray) -> np.ndarray:
    """``[H, 1]``: last-layer features with a constant for the bias, shape (n, p + 1), float64."""
    H = np.asarray(H, dtype=np.float64)
    return np.concatenate([H, np.ones((H.shape[0], 1))], axis=1)


def last_layer_precision(
    Phi: np.ndarray, variance: np.ndarray, prior_precision: float | np.ndarray
) -> np.ndarray:
    """Posterior precision Λ = P + Φᵀ diag(1/v) Φ of the last-layer weights.

    Parameters
    ----------
    Phi : ndarray, shape (n, p)
        Features of the training points.
    variance : ndarray, shape (n,)
        Per-point likelihood variances v(xᵢ) > 0 (same units as the targets squared).
    prior_precision : float or ndarray of shape (p, p)
        τ (the prior τI) or a full prior precision matrix P.

    Returns
    -------
    ndarray, shape (p, p), float64
        Symmetric Λ.
    """
    Phi = np.asarray(Phi, dtype=np.float64)
    w = 1.0 / np.asarray(variance, dtype=np.float64)
    lam = (Phi * w[:, None]).T @ Phi
    prior = np.asarray(prior_precision, dtype=np.float64)
    lam = lam + (prior * np.eye(Phi.shape[1]) if prior.ndim == 0 else prior)
    return 0.5 * (lam + lam.T)


def _cholesky(precision: np.ndarray) -> np.ndarray:
    return scipy.linalg.cholesky(np.asarray(precision, dtype=np.float64), lower=True)


def posterior_variance(Phi: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """diag(Φ Λ⁻¹ Φᵀ): the epistemic variance φ(x)ᵀΛ⁻¹φ(x) per row of ``Phi`` (m, p) -> (m,).

    Computed as ‖L⁻¹φ‖² with Λ = L Lᵀ (no inverse is formed).
    """
    L = _cholesky(precision)
    A = scipy.linalg.solve_triangular(L, np.asarray(Phi, dtype=np.float64).T, lower=True)
    return np.einsum("ij,ij->j", A, A)


def sample_weights(
    mean: np.ndarray, precision: np.ndarray, n_samples: int, rng: np.random.Generator
) -> np.ndarray:
    """Draws w ~ N(mean, Λ⁻¹), shape (n_samples, p): w = mean + L⁻ᵀ z with Λ = L Lᵀ, z ~ N(0, I)."""
    L = _cholesky(precision)
    z = rng.standard_normal((int(n_samples), L.shape[0]))
    return np.asarray(mean, dtype=np.float64) + scipy.linalg.solve_triangular(L.T, z.T).T


#: The prior precisions δ among which :func:`laplace_log_marginal_likelihood` selects: the
#: log grid 10⁻⁴ … 10⁴, 10 points per decade (the range of laplace-torch's
#: ``optimize_prior_precision`` grid search, ``log_prior_prec_min = -4``,
#: ``log_prior_prec_max = 4``; its ``method="marglik"`` climbs the same objective by
#: gradient steps on log δ instead of a grid).
MARGLIK_GRID: np.ndarray = np.logspace(-4.0, 4.0, 81)


def laplace_log_marginal_likelihood(
    log_likelihood: float,
    theta: np.ndarray,
    hessian: np.ndarray,
    prior_precisions: np.ndarray,
) -> np.ndarray:
    """Laplace approximation to log p(D | δ) for an isotropic Gaussian prior N(0, δ⁻¹I).

    At the MAP θ (P parameters) with H the (generalised Gauss–Newton) Hessian of the negative
    log-likelihood,

        log Z(δ) ≈ log p(D|θ) + log N(θ; 0, δ⁻¹I) + (P/2) log 2π − ½ log det(H + δI)
                 = log p(D|θ) − (δ/2)‖θ‖² + (P/2) log δ − ½ Σⱼ log(λⱼ + δ),

    λⱼ the eigenvalues of H (clipped at 0: a GGN is positive semi-definite up to rounding).
    MacKay 1992, "A practical Bayesian framework for backpropagation networks", Neural
    Comput. 4(3); Immer et al., ICML 2021, "Scalable marginal likelihood estimation for
    model selection in deep learning", §2 (the Laplace–GGN evidence); Daxberger et al., NeurIPS
    2021, "Laplace Redux", §3 (laplace-torch's ``log_marginal_likelihood``: log-likelihood
    − ½(log det ratio + scatter), the same expression).

    Parameters
    ----------
    log_likelihood : float
        log p(D | θ), summed over the training points.
    theta : ndarray, shape (P,)
        The parameters the posterior is placed on (flattened), at the MAP.
    hessian : ndarray, shape (P, P)
        H, symmetric positive semi-definite, without the prior's δI.
    prior_precisions : ndarray, shape (G,)
        The δ > 0 to evaluate.

    Returns
    -------
    ndarray, shape (G,), float64
        log Z(δ) per δ.
    """
    theta = np.asarray(theta, dtype=np.float64).ravel()
    lam = np.maximum(np.linalg.eigvalsh(np.asarray(hessian, dtype=np.float64)), 0.0)
    d = np.asarray(prior_precisions, dtype=np.float64)
    log_det = np.log(lam[None, :] + d[:, None]).sum(axis=1)
    return np.asarray(
        float(log_likelihood)
        - 0.5 * d * float(theta @ theta)
        + 0.5 * theta.size * np.log(d)
        - 0.5 * log_det,
        dtype=np.float64,
    )


# -- the shared base of the last-layer Laplace methods -------------------------------------

#: How the Laplace methods turn the weight posterior into EU.
PREDICTIVES = ("closed_form", "samples")


class LastLayerLaplace(GaussianNNEnsemble):
    """Abstract method: one MAP-trained Gaussian network, a Gaussian posterior on its last layer.

    The network is the shared backbone with its Gaussian head, trained once (``n_members``
    is the number of *sampled weight vectors*, not of networks). After training, the mean
    output's last-layer weights w = (w_μ, b_μ) get the posterior N(w_MAP, Λ⁻¹) with
    Λ = P + Σᵢ φᵢφᵢᵀ / v_MAP(xᵢ), φ = [h(x), 1] (paper C.4; Daxberger et al., 2021); P comes
    from :meth:`_prior_precision` (NN-Lap: τI; NN-FSP: the function-space prior).

    Outputs (standardised units, mapped back by the base class): mean = the MAP mean,
    AU = v_MAP(x), EU = φ(x)ᵀΛ⁻¹φ(x) with ``predictive="closed_form"``; with
    ``predictive="samples"``, ``n_members`` weight vectors w_m ~ N(w_MAP, Λ⁻¹) drawn once at
    fit are treated as members (mean = average of φᵀw_m, AU = v_MAP, EU = their variance,
    ddof 0), a Monte-Carlo estimate of the same EU.

    Fitted attributes (beside the base's): ``precision_`` (p, p), ``w_map_`` (p,),
    ``weight_samples_`` ((n_members, p) or None).
    """

    epistemic_from: ClassVar[str] = "closed_form"
    predictive: str

    def _n_networks(self) -> int:
        return 1

    def _prior_precision(self, Xs: np.ndarray, p: int) -> float | np.ndarray:  # pragma: no cover
        """Prior precision of the p last-layer weights (τ, or a (p, p) matrix)."""
        raise NotImplementedError

    def _network_outputs(self, Xs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Features h (m, H), MAP mean (m,) and variance (m,) at standardised inputs, float64."""
        with self._precision():
            H = member_features(self.params_, Xs, self.model_config_)[0]
            mean, var = predict_members(self.params_, Xs, self.model_config_)
        return H, mean[0], var[0]

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        check_choice(type(self).__name__, "predictive", self.predictive, PREDICTIVES)
        self._fit_members(X, y)
        Xs = (X - self.x_loc_) / self.x_scale_
        H, _, var = self._network_outputs(Xs)
        Phi = add_bias_column(H)
        self.precision_ = last_layer_precision(Phi, var, self._prior_precision(Xs, Phi.shape[1]))
        head = self.params_["head"]
        self.w_map_ = np.concatenate(
            [np.asarray(head["w"][0, :, 0], np.float64), np.asarray(head["b"][0, :1], np.float64)]
        )
        self.weight_samples_ = None
        if self.predictive == "samples":
            self.weight_samples_ = sample_weights(
                self.w_map_, self.precision_, self.n_members, self._rng("laplace-samples")
            )

    def _predict(self, X: np.ndarray) -> Prediction:
        H, mean, var = self._network_outputs((X - self.x_loc_) / self.x_scale_)
        Phi = add_bias_column(H)
        if self.weight_samples_ is not None:
            means = self.weight_samples_ @ Phi.T
            return aggregate_members(means, np.broadcast_to(var, means.shape))
        return Prediction(
            mean=mean, aleatoric=var, epistemic=posterior_variance(Phi, self.precision_)
        )
