"""Bayesian linear regression with evidence maximisation (paper Appendix C.1).

Model (on standardised targets, inputs centred by their training mean): ``w ~ N(0, λ⁻¹ I)``,
``y | x, w ~ N(wᵀx, α⁻¹)``; the prior precision λ and the noise precision α maximise the
evidence (type-II maximum likelihood, MacKay 1992), as implemented by scikit-learn's
:class:`~sklearn.linear_model.BayesianRidge` (which calls the noise precision ``alpha_`` and
the prior precision ``lambda_``; with ``fit_intercept=True`` the intercept is the target
mean, not a random coefficient). With Σ = (λI + α XᵀX)⁻¹ and m = α Σ Xᵀy:

- point prediction: mᵀx (+ intercept);
- AU = α⁻¹, constant in x;
- EU = xᵀ Σ x, the posterior variance of the linear function at x.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn.linear_model import BayesianRidge

from udbench.methods.base import BaseMethod, Prediction

__all__ = ["BLR"]

_HYPERPRIOR = {"type": "float", "low": 1e-8, "high": 1e-4, "log": True}


class BLR(BaseMethod):
    """Bayesian linear regression, prior and noise precision by evidence maximisation.

    Parameters
    ----------
    max_iter : int, default 300
        Maximum number of evidence-maximisation (fixed-point) iterations.
    tol : float, default 1e-6
        Stop when the weights change by less than ``tol``.
    alpha_1, alpha_2 : float, default 1e-6
        Shape and rate of the Gamma hyperprior on the noise precision (1e-6: nearly flat,
        the geometric centre of the declared search space [1e-8, 1e-4]).
    lambda_1, lambda_2 : float, default 1e-6
        Shape and rate of the Gamma hyperprior on the weight-prior precision.
    random_state : int or None, default 0
        Unused (the fit is deterministic); accepted by the contract.

    Attributes
    ----------
    model_ : sklearn.linear_model.BayesianRidge
        The fitted model (standardised target units).
    noise_variance_ : float
        α⁻¹ in target units.
    prior_precision_ : float
        λ (standardised units).

    Notes
    -----
    Source: paper Appendix C.1 (model); Bishop (2006) §3.5 and MacKay (1992) for evidence
    maximisation; scikit-learn's ``BayesianRidge`` for the implementation. The paper's
    search space for BLR is not part of the excerpt; the declared one (Gamma hyperprior
    parameters, log-uniform on [1e-8, 1e-4]) is udbench's choice (docs/methods.md).
    """

    name: ClassVar[str] = "blr"
    paper_index: ClassVar[int | None] = 1  # SPEC §8's list
    family: ClassVar[str] = "linear"
    constant_aleatoric: ClassVar[bool] = True
    epistemic_from: ClassVar[str] = "closed_form"
    description: ClassVar[str] = "Bayesian linear regression, evidence maximisation (paper C.1)"
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        "alpha_1": _HYPERPRIOR,
        "alpha_2": _HYPERPRIOR,
        "lambda_1": _HYPERPRIOR,
        "lambda_2": _HYPERPRIOR,
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        "max_iter": {"type": "int", "low": 1},
        "tol": {"type": "float", "low": 0.0, "low_open": True},
        "alpha_1": {"type": "float", "low": 0.0},
        "alpha_2": {"type": "float", "low": 0.0},
        "lambda_1": {"type": "float", "low": 0.0},
        "lambda_2": {"type": "float", "low": 0.0},
    }
    smoke_params: ClassVar[dict[str, Any]] = {"max_iter": 100}

    def __init__(
        self,
        max_iter: int = 300,
        tol: float = 1e-6,
        alpha_1: float = 1e-6,
        alpha_2: float = 1e-6,
        lambda_1: float = 1e-6,
        lambda_2: float = 1e-6,
        random_state: int | None = 0,
    ) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.alpha_1 = alpha_1
        self.alpha_2 = alpha_2
        self.lambda_1 = lambda_1
        self.lambda_2 = lambda_2
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        model = BayesianRidge(
            max_iter=self.max_iter,
            tol=self.tol,
            alpha_1=self.alpha_1,
            alpha_2=self.alpha_2,
            lambda_1=self.lambda_1,
            lambda_2=self.lambda_2,
            fit_intercept=True,
            compute_score=False,
        )
        self.model_ = model.fit(X, y)
        self.noise_variance_ = float(self.y_scale_**2 / model.alpha_)
        self.prior_precision_ = float(model.lambda_)

    def _predict(self, X: np.ndarray) -> Prediction:
        model = self.model_
        mean = model.predict(X)
        # EU = xᵀΣx on the centred inputs (the intercept is the centred-target mean).
        Xc = X - model.X_offset_
        epistemic = np.einsum("ij,jk,ik->i", Xc, model.sigma_, Xc)
        aleatoric = np.full(X.shape[0], 1.0 / model.alpha_)
        return Prediction(mean=mean, aleatoric=aleatoric, epistemic=np.maximum(epistemic, 0.0))
