"""An adapter for scikit-learn regressors whose ``predict(X, return_std=True)`` returns an SD.

:class:`SklearnMethod` wraps such a regressor (e.g.
:class:`~sklearn.gaussian_process.GaussianProcessRegressor`,
:class:`~sklearn.linear_model.BayesianRidge`, :class:`~sklearn.linear_model.ARDRegression`)
as a udbench method. The returned SD is a *predictive* SD; which part of it is noise depends
on the estimator, so the split into AU and EU is taken as follows (on the standardised
targets the method is fitted to, then mapped back to target units):

- **fitted noise** (``noise="auto"`` or ``"fitted"``), where the fitted estimator exposes it:

  - ``GaussianProcessRegressor`` whose fitted kernel (``kernel_``) holds a
    :class:`~sklearn.gaussian_process.kernels.WhiteKernel`: AU = its ``noise_level`` (the sum
    over every ``WhiteKernel`` term of a sum kernel), times the variance of the training
    targets when ``normalize_y=True`` (its noise level is then in normalised units). The
    predictive variance of ``GaussianProcessRegressor`` includes the ``WhiteKernel`` noise
    and leaves out ``alpha`` (the diagonal jitter), so EU = SD² − AU is the latent-function
    variance;
  - ``BayesianRidge`` and ``ARDRegression``: AU = ``1 / alpha_`` (the fitted noise
    precision's inverse), which their predictive variance includes; EU = SD² − AU is the
    variance of the linear function.

- **held-out residuals** (``noise="auto"`` where the estimator exposes no noise, or
  ``noise="residuals"``): the returned SD² is taken as EU whole, and AU is the mean squared
  residual on a held-out ``holdout_fraction`` of the training rows (of a copy fitted on the
  rest) minus the mean EU there, at least 0; the final estimator is then fitted on every row.

AU is constant in x in every case. EU is clipped at 0 (SD² − AU can fall below it by
rounding).
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

import numpy as np
from sklearn.base import clone
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Kernel, Sum, WhiteKernel
from sklearn.linear_model import ARDRegression, BayesianRidge

from udbench._validation import param_error
from udbench.methods.base import BaseMethod, Prediction

__all__ = ["NOISE_SOURCES", "SklearnMethod", "fitted_noise_variance"]

#: Values of ``SklearnMethod(noise=...)``.
NOISE_SOURCES = ("auto", "fitted", "residuals")


def _white_noise(kernel: Kernel) -> float | None:
    """The summed ``noise_level`` of the ``WhiteKernel`` terms of a (sum) kernel, or None."""
    if isinstance(kernel, WhiteKernel):
        return float(kernel.noise_level)
    if isinstance(kernel, Sum):
        parts = [_white_noise(kernel.k1), _white_noise(kernel.k2)]
        found = [p for p in parts if p is not None]
        return float(sum(found)) if found else None
    return None


def fitted_noise_variance(estimator: Any, y: np.ndarray) -> float | None:
    """The noise variance a fitted scikit-learn regressor exposes, in the units of ``y``.

    Parameters
    ----------
    estimator : object
        A fitted regressor.
    y : ndarray, shape (n,)
        The targets it was fitted to (for ``GaussianProcessRegressor(normalize_y=True)``,
        whose noise level is in normalised units).

    Returns
    -------
    float or None
        ``GaussianProcessRegressor``: the ``noise_level`` of the ``WhiteKernel`` terms of
        ``kernel_`` (times ``var(y)`` when ``normalize_y``); ``BayesianRidge`` and
        ``ARDRegression``: ``1 / alpha_``; None for any other estimator, or a
        ``GaussianProcessRegressor`` without a ``WhiteKernel``.
    """
    if isinstance(estimator, GaussianProcessRegressor):
        level = _white_noise(estimator.kernel_)
        if level is None:
            return None
        return level * (float(np.var(y)) if estimator.normalize_y else 1.0)
    if isinstance(estimator, BayesianRidge | ARDRegression):
        return 1.0 / float(estimator.alpha_)
    return None


class SklearnMethod(BaseMethod):
    """A scikit-learn regressor with ``predict(X, return_std=True)`` as a udbench method.

    Parameters
    ----------
    estimator : regressor or None, default None
        Unfitted; cloned at each fit (never fitted in place). Its ``predict`` must accept
        ``return_std=True`` and return ``(mean, std)``. None: a
        ``GaussianProcessRegressor`` with kernel ``ConstantKernel · RBF(ARD) + WhiteKernel``
        (noise level 0.1 at the start, bounds [1e-6, 10]), on the standardised targets.
    noise : {"auto", "fitted", "residuals"}, default "auto"
        Where AU comes from (module docstring): ``"fitted"`` the noise the fitted estimator
        exposes (an error where it exposes none), ``"residuals"`` held-out residuals,
        ``"auto"`` the first where the estimator exposes it, else the second.
    holdout_fraction : float, default 0.2
        Share of the training rows held out for the residual AU (at least 1 row each side).
    random_state : int or None, default 0
        Seeds the held-out split and, where the estimator takes one, its ``random_state``.

    Attributes
    ----------
    estimator_ : regressor
        The fitted clone (standardised targets).
    noise_variance_ : float
        AU in target units.
    noise_source_ : str
        ``"fitted"`` or ``"residuals"``: where AU came from.

    Notes
    -----
    AU is constant in x (``constant_aleatoric``); EU = SD² − AU (fitted noise) or SD²
    (residuals), clipped at 0. Inputs are those of every udbench method: constant columns
    set to 0, the other columns as given (wrap the estimator in a pipeline to scale them).
    """

    name: ClassVar[str] = "sklearn"
    family: ClassVar[str] = "other"
    constant_aleatoric: ClassVar[bool] = True
    epistemic_from: ClassVar[str] = "closed_form"
    description: ClassVar[str] = (
        "scikit-learn regressor with predict(return_std=True); AU its fitted noise or "
        "held-out residuals"
    )
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        "noise": {"type": "categorical", "choices": list(NOISE_SOURCES)},
        "holdout_fraction": {
            "type": "float",
            "low": 0.0,
            "high": 1.0,
            "low_open": True,
            "high_open": True,
        },
    }

    def __init__(
        self,
        estimator: Any = None,
        noise: str = "auto",
        holdout_fraction: float = 0.2,
        random_state: int | None = 0,
    ) -> None:
        self.estimator = estimator
        self.noise = noise
        self.holdout_fraction = holdout_fraction
        self.random_state = random_state

    def validate_hyperparameters(self) -> None:
        """Check the declared hyperparameters and that ``estimator`` can return an SD.

        Raises
        ------
        UdbenchError
            A declared hyperparameter out of its range, or an ``estimator`` without
            ``fit`` and a ``predict`` that takes ``return_std``.
        """
        super().validate_hyperparameters()
        est = self.estimator
        if est is None:
            return
        predict = getattr(est, "predict", None)
        ok = False
        if callable(getattr(est, "fit", None)) and callable(predict):
            try:
                ok = "return_std" in inspect.signature(predict).parameters
            except (TypeError, ValueError):  # a signature Python cannot read
                ok = False
        if not ok:
            raise param_error(
                type(self).__name__,
                "estimator",
                "be a scikit-learn regressor whose predict takes return_std=True",
                est,
            )

    def _new_estimator(self, n_features: int, stream: str) -> Any:
        if self.estimator is None:
            kernel = ConstantKernel(1.0) * RBF(length_scale=np.ones(n_features)) + WhiteKernel(
                noise_level=0.1, noise_level_bounds=(1e-6, 10.0)
            )
            return GaussianProcessRegressor(kernel=kernel, random_state=self._seed(stream))
        est = clone(self.estimator)
        if "random_state" in est.get_params(deep=False):
            est.set_params(random_state=self._seed(stream))
        return est

    @staticmethod
    def _mean_var(est: Any, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean, std = est.predict(X, return_std=True)
        mean = np.asarray(mean, dtype=np.float64).reshape(-1)
        var = np.square(np.asarray(std, dtype=np.float64).reshape(-1))
        return mean, var

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        est = self._new_estimator(X.shape[1], "estimator").fit(X, y)
        noise = fitted_noise_variance(est, y) if self.noise != "residuals" else None
        if noise is None and self.noise == "fitted":
            raise param_error(
                type(self).__name__,
                "noise",
                f"be 'auto' or 'residuals' for {type(est).__name__} (it exposes no fitted "
                "noise: a GaussianProcessRegressor needs a WhiteKernel term)",
                self.noise,
            )
        if noise is None:
            self._noise_var = self._residual_noise(X, y)
            self.noise_source_ = "residuals"
        else:
            self._noise_var = float(noise)
            self.noise_source_ = "fitted"
        self.estimator_ = est
        self.noise_variance_ = self._noise_var * self.y_scale_**2

    def _residual_noise(self, X: np.ndarray, y: np.ndarray) -> float:
        """Mean held-out squared residual minus the mean EU there, at least 0."""
        n = X.shape[0]
        n_out = min(max(1, round(self.holdout_fraction * n)), n - 1)
        order = self._rng("holdout").permutation(n)
        held, kept = order[:n_out], order[n_out:]
        est = self._new_estimator(X.shape[1], "holdout").fit(X[kept], y[kept])
        mean, var = self._mean_var(est, X[held])
        return max(0.0, float(np.mean(np.square(y[held] - mean)) - np.mean(var)))

    def _predict(self, X: np.ndarray) -> Prediction:
        mean, var = self._mean_var(self.estimator_, X)
        if self.noise_source_ == "fitted":
            epistemic = np.maximum(var - self._noise_var, 0.0)
        else:
            epistemic = var
        aleatoric = np.full(mean.shape, self._noise_var)
        return Prediction(mean=mean, aleatoric=aleatoric, epistemic=epistemic)
