"""The method contract: what every UQ method in udbench is (DESIGN.md, SPEC §8).

A method is a scikit-learn-style estimator. Its constructor only stores hyperparameters,
unchanged; ``fit(X, y)`` returns ``self`` and leaves fitted state in attributes ending in
``_``; ``predict(X)`` returns a :class:`Prediction` with a point prediction and aleatoric
(AU) and epistemic (EU) variance estimates, in target units.

Subclasses implement ``_fit(X, y)`` and ``_predict(X)`` on *standardised* targets;
:class:`BaseMethod` validates inputs, standardises ``y`` (mean 0, SD 1) before ``_fit`` and
maps ``_predict``'s output back (mean ``m_y + s_y * mu``, variances ``s_y**2 * v``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator

from udbench._validation import UdbenchError, check_array, param_error

__all__ = ["BaseMethod", "NotFittedError", "Prediction"]


class NotFittedError(UdbenchError, AttributeError):
    """``predict`` was called before ``fit``."""


@dataclass(frozen=True)
class Prediction:
    """A method's output at n evaluation points.

    Attributes
    ----------
    mean : ndarray, shape (n,)
        Point prediction â(x), target units.
    aleatoric : ndarray, shape (n,)
        Aleatoric-uncertainty estimate (a variance, target units squared), >= 0.
    epistemic : ndarray, shape (n,)
        Epistemic-uncertainty estimate (a variance, target units squared), >= 0.
    """

    mean: np.ndarray
    aleatoric: np.ndarray
    epistemic: np.ndarray

    @property
    def total(self) -> np.ndarray:
        """Total predictive variance AU + EU, shape (n,)."""
        return self.aleatoric + self.epistemic

    def validate(self, n: int | None = None, component: str = "Prediction") -> Prediction:
        """Check shapes (n,), finiteness and non-negative variances; return ``self``.

        Raises
        ------
        UdbenchError
            Naming the offending field and what it held.
        """
        size = np.shape(self.mean)[0] if np.ndim(self.mean) == 1 else None
        want = (n if n is not None else size,)
        check_array(component, "mean", self.mean, shape=want)
        check_array(component, "aleatoric", self.aleatoric, shape=want, nonnegative=True)
        check_array(component, "epistemic", self.epistemic, shape=want, nonnegative=True)
        return self

    def rescale(self, loc: float, scale: float) -> Prediction:
        """Map a prediction on standardised targets back: mean·scale + loc, variances·scale²."""
        s2 = scale * scale
        return Prediction(
            mean=np.asarray(self.mean, dtype=np.float64) * scale + loc,
            aleatoric=np.asarray(self.aleatoric, dtype=np.float64) * s2,
            epistemic=np.asarray(self.epistemic, dtype=np.float64) * s2,
        )


class BaseMethod(BaseEstimator):
    """Base class of every udbench UQ method (scikit-learn conventions).

    Class attributes (declared by each subclass)
    --------------------------------------------
    name : str
        Registry name, the paper's method name in lower case (``"nn-ens"``).
    family : str
        ``"linear"``, ``"gp"``, ``"trees"`` or ``"nn"`` (SPEC §8 grouping).
    constant_aleatoric : bool
        True if AU is constant in x (its AU correlations are undefined; SPEC §8).
    epistemic_from : str
        ``"samples"`` (spread of members/draws) or ``"closed_form"``.
    search_space : dict
        Hyperparameter search space for tuning (SPEC §9), name -> spec dict, e.g.
        ``{"type": "float", "low": 1e-4, "high": 1e-1, "log": True}``,
        ``{"type": "int", "low": 1, "high": 4}``, ``{"type": "categorical", "choices": [...]}``.
    smoke_params : dict
        A fast configuration for tests and quick runs.

    Subclasses implement ``_fit(X, y)`` (y standardised) and ``_predict(X) -> Prediction``
    (standardised units).
    """

    name: ClassVar[str] = "base"
    family: ClassVar[str] = "base"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    search_space: ClassVar[dict[str, dict[str, Any]]] = {}
    smoke_params: ClassVar[dict[str, Any]] = {}

    # -- public API ---------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> BaseMethod:
        """Fit on training inputs ``X`` (n, d) and targets ``y`` (n,); return ``self``.

        Raises
        ------
        UdbenchError
            Wrong shapes, NaN/inf in ``X`` or ``y``, fewer than 2 rows.
        """
        X = check_array(type(self).__name__, "X", X, ndim=2)
        y = check_array(type(self).__name__, "y", y, shape=(X.shape[0],))
        if X.shape[0] < 2:
            raise param_error(type(self).__name__, "X", "have at least 2 rows", X.shape)
        loc = float(np.mean(y))
        scale = float(np.std(y))
        if not np.isfinite(scale) or scale <= 1e-12 * max(1.0, abs(loc)):
            scale = 1.0  # constant target: nothing to standardise
        self.y_loc_ = loc
        self.y_scale_ = scale
        self.n_features_in_ = X.shape[1]
        self._fit(X, (y - loc) / scale)
        return self

    def predict(self, X: Any) -> Prediction:
        """Predict at ``X`` (m, d); return a :class:`Prediction` in target units.

        Raises
        ------
        NotFittedError
            If called before :meth:`fit`.
        UdbenchError
            Wrong number of features, NaN/inf in ``X``.
        """
        if not hasattr(self, "y_scale_"):
            raise NotFittedError(
                f"{type(self).__name__}: not fitted; call fit(X, y) before predict(X)"
            )
        X = check_array(type(self).__name__, "X", X, ndim=2)
        if X.shape[1] != self.n_features_in_:
            raise param_error(
                type(self).__name__, "X", f"have {self.n_features_in_} columns", X.shape
            )
        pred = self._predict(X).rescale(self.y_loc_, self.y_scale_)
        return pred

    # -- to implement ---------------------------------------------------------------
    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _predict(self, X: np.ndarray) -> Prediction:  # pragma: no cover - abstract
        raise NotImplementedError
