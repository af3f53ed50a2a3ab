"""A user's own methods, outside udbench, plugged in by import path in the tests.

``KNNEnsemble`` is a well-behaved method (bootstrap k-NN members: AU = mean member residual
variance, EU = variance of member means); the ``Broken*`` classes each break one rule of the
contract so the tests can show that the conformance battery fails the right check.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn.neighbors import KNeighborsRegressor

from udbench.methods import BaseMethod, Prediction


class KNNEnsemble(BaseMethod):
    """Bootstrap ensemble of k-nearest-neighbour regressors (heteroscedastic AU)."""

    name: ClassVar[str] = "knn-ens"
    family: ClassVar[str] = "other"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        "n_neighbors": {"type": "int", "low": 3, "high": 30},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        "n_neighbors": {"type": "int", "low": 1},
        "n_members": {"type": "int", "low": 2},
    }
    smoke_params: ClassVar[dict[str, Any]] = {"n_members": 4}

    def __init__(self, n_neighbors: int = 5, n_members: int = 8, random_state: int | None = 0):
        self.n_neighbors = n_neighbors
        self.n_members = n_members
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        rng = self._rng("bootstrap")
        n = X.shape[0]
        self.members_ = []
        for _ in range(self.n_members):
            idx = rng.integers(0, n, size=n)
            k = min(self.n_neighbors, n)
            member = KNeighborsRegressor(n_neighbors=k).fit(X[idx], y[idx])
            resid = float(np.mean((member.predict(X) - y) ** 2))
            self.members_.append((member, resid))

    def _predict(self, X: np.ndarray) -> Prediction:
        means = np.stack([m.predict(X) for m, _ in self.members_])
        au = np.mean([r for _, r in self.members_]) + 0.0 * means.mean(axis=0)
        au = au + 0.01 * np.abs(means.mean(axis=0))  # heteroscedastic on purpose
        return Prediction(mean=means.mean(axis=0), aleatoric=au, epistemic=means.var(axis=0))


class _Base(BaseMethod):
    """Predicts the training mean with unit AU and 0.1 EU (valid unless a subclass breaks it)."""

    name: ClassVar[str] = "broken"
    family: ClassVar[str] = "other"
    constant_aleatoric: ClassVar[bool] = True
    epistemic_from: ClassVar[str] = "closed_form"

    def __init__(self, scale: float = 1.0, random_state: int | None = 0):
        self.scale = scale
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self.level_ = float(np.mean(y))

    def _predict(self, X: np.ndarray) -> Prediction:
        n = X.shape[0]
        return Prediction(np.full(n, self.level_), np.full(n, self.scale), np.full(n, 0.1))


class BrokenNegativeVariance(_Base):
    def _predict(self, X: np.ndarray) -> Prediction:
        p = super()._predict(X)
        return Prediction(p.mean, p.aleatoric, -p.epistemic)


class BrokenNaN(_Base):
    def _predict(self, X: np.ndarray) -> Prediction:
        p = super()._predict(X)
        mean = p.mean.copy()
        mean[0] = np.nan
        return Prediction(mean, p.aleatoric, p.epistemic)


class BrokenShape(_Base):
    def _predict(self, X: np.ndarray) -> Prediction:
        p = super()._predict(X)
        return Prediction(p.mean[:, None], p.aleatoric, p.epistemic)


_CALLS = [0]


class BrokenNondeterministic(_Base):
    """Depends on hidden global state (a call counter): tiny, but not bit-reproducible."""

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        _CALLS[0] += 1
        self.level_ = float(np.mean(y)) + 1e-9 * _CALLS[0]


class BrokenMutatesInput(_Base):
    def fit(self, X: Any, y: Any) -> BrokenMutatesInput:
        y[0] = y[0] + 1.0  # writes into the caller's array
        super().fit(X, y)
        return self


class BrokenChangesHyperparameter(_Base):
    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        super()._fit(X, y)
        self.scale = 2.0 * self.scale


class BrokenRefit(_Base):
    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self.n_fits_ = getattr(self, "n_fits_", 0) + 1  # state carried over from earlier fits
        self.level_ = float(np.mean(y)) + 0.5 * (self.n_fits_ - 1)


class BrokenFlag(_Base):
    def _predict(self, X: np.ndarray) -> Prediction:
        p = super()._predict(X)
        return Prediction(p.mean, p.aleatoric + X[:, 0], p.epistemic)


class BrokenNoRandomState(BaseMethod):
    name: ClassVar[str] = "broken-no-rs"

    def __init__(self, scale: float = 1.0):
        self.scale = scale

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self.level_ = float(np.mean(y))

    def _predict(self, X: np.ndarray) -> Prediction:
        n = X.shape[0]
        return Prediction(np.full(n, self.level_), np.ones(n), np.ones(n))


class NotAMethod:
    """Not a BaseMethod: get_method_class must refuse it."""


class BrokenAbsoluteFloor(_Base):
    """AU floored at 1e-6 in *target* units (an absolute noise floor): wrong at tiny scales."""

    def _predict(self, X: np.ndarray) -> Prediction:
        p = super()._predict(X)
        floor = 1e-6 / self.y_scale_**2  # 1e-6 target units², in standardised units
        return Prediction(p.mean, np.maximum(p.aleatoric, floor), p.epistemic)


class BrokenUncentred(_Base):
    """Shrinks the mean towards 0 in *target* units (a prior mean that ignores the offset)."""

    def _predict(self, X: np.ndarray) -> Prediction:
        p = super()._predict(X)
        target_mean = 0.99 * (p.mean * self.y_scale_ + self.y_loc_)
        return Prediction((target_mean - self.y_loc_) / self.y_scale_, p.aleatoric, p.epistemic)


class BrokenRawConstantColumn(_Base):
    """Bypasses BaseMethod's input rule and divides each column by its own training SD
    (``sd > 0`` else 1), as a hand-written standardisation would: a column constant up to
    rounding becomes a feature of unit SD and a new value lies ~1e13 SDs away."""

    def _inputs(self, X: Any) -> np.ndarray:
        return np.array(X, dtype=np.float64)

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        super()._fit(X, y)
        self.loc_ = X.mean(axis=0)
        sd = X.std(axis=0)
        self.sd_ = np.where(sd > 0, sd, 1.0)

    def _predict(self, X: np.ndarray) -> Prediction:
        p = super()._predict(X)
        z2 = np.sum(((X - self.loc_) / self.sd_) ** 2, axis=1)  # EU grows with the distance
        return Prediction(p.mean, p.aleatoric, 0.01 * z2)
