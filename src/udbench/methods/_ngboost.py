"""The NGBoost regressor the NGBoost-based methods share (paper C.3).

NGBoost-Bag (Gaussian members) and NGBoost-NIG (Normal-Inverse-Gamma) boost the same way and
differ only in the distribution, so the regressor is configured here once from the method's
boosting hyperparameters.

:class:`FastNormal` is ngboost's ``Normal`` without its largest overhead: ngboost builds a
SciPy *frozen* distribution, ``scipy.stats.norm(loc, scale)``, for every distribution object,
i.e. several times per boosting iteration (the line search alone makes one per trial step),
and SciPy constructs a new distribution instance with its docstring each time (measured:
2.4 ms per object, about 40 % of an NGBoost-Bag fit at n = 280). :class:`FastNormal` keeps
(loc, scale) and calls the methods of SciPy's ``norm`` instance with them, which is what a
frozen distribution does (``rv_frozen.logpdf(x)`` is ``dist.logpdf(x, loc=…, scale=…)``),
so every number is the same, bit for bit (tested).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "BOOSTING_CONSTRAINTS",
    "BOOSTING_SEARCH_SPACE",
    "BOOSTING_SMOKE_PARAMS",
    "FastNormal",  # noqa: F822  (made on first access, module __getattr__)
    "ngboost_regressor",
]

#: Search space of the boosting hyperparameters (paper C.3, NGBoost-Bag's; NGBoost-NIG reuses it).
BOOSTING_SEARCH_SPACE: dict[str, dict[str, Any]] = {
    "n_estimators": {"type": "int", "low": 200, "high": 800},
    "learning_rate": {"type": "float", "low": 0.005, "high": 0.1, "log": True},
    "max_depth": {"type": "int", "low": 2, "high": 6},
    "minibatch_frac": {"type": "float", "low": 0.5, "high": 1.0},
    "col_sample": {"type": "float", "low": 0.5, "high": 1.0},
    "natural_gradient": {"type": "categorical", "choices": [True, False]},
}
#: Valid values of the boosting hyperparameters (checked by the method's constructor).
BOOSTING_CONSTRAINTS: dict[str, dict[str, Any]] = {
    "n_estimators": {"type": "int", "low": 1},
    "learning_rate": {"type": "float", "low": 0.0, "low_open": True},
    "max_depth": {"type": "int", "low": 1},
    "minibatch_frac": {"type": "float", "low": 0.0, "low_open": True, "high": 1.0},
    "col_sample": {"type": "float", "low": 0.0, "low_open": True, "high": 1.0},
    "natural_gradient": {"type": "bool"},
}
#: Smoke settings of the boosting part (seconds per fit).
BOOSTING_SMOKE_PARAMS: dict[str, Any] = {"n_estimators": 30, "learning_rate": 0.1, "max_depth": 2}


def ngboost_regressor(dist: Any, method: Any, seed: int, n_estimators: int | None = None) -> Any:
    """An unfitted ``ngboost.NGBRegressor`` with a depth-limited regression-tree base learner.

    Parameters
    ----------
    dist : type
        The ngboost distribution class (e.g. ``ngboost.distns.Normal``); scored by its log
        score (``ngboost.scores.LogScore``).
    method : BaseMethod
        Supplies ``max_depth``, ``natural_gradient``, ``n_estimators``, ``learning_rate``,
        ``minibatch_frac`` and ``col_sample`` (validated by the method's constructor).
    seed : int
        Seed of the tree base learner and of NGBoost's subsampling.
    n_estimators : int, optional
        Boosting iterations in place of ``method.n_estimators`` (NGBoost-NIG's refit with the
        number its validation split chose).

    Returns
    -------
    ngboost.NGBRegressor
    """
    from ngboost import NGBRegressor
    from ngboost.scores import LogScore
    from sklearn.tree import DecisionTreeRegressor

    base = DecisionTreeRegressor(
        criterion="squared_error", max_depth=int(method.max_depth), random_state=seed
    )
    return NGBRegressor(
        Dist=dist,
        Score=LogScore,
        Base=base,
        natural_gradient=bool(method.natural_gradient),
        n_estimators=int(method.n_estimators if n_estimators is None else n_estimators),
        learning_rate=float(method.learning_rate),
        minibatch_frac=float(method.minibatch_frac),
        col_sample=float(method.col_sample),
        verbose=False,
        random_state=seed,
    )


#: The frozen-distribution methods :class:`FrozenNormal` provides (those of ``rv_frozen``
#: whose arguments come before the distribution's own).
_FROZEN_METHODS = (
    "pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf",
    "mean", "var", "std", "median", "entropy", "stats", "moment", "interval", "support",
)  # fmt: skip


class FrozenNormal:
    """``scipy.stats.norm(loc, scale)`` without a new distribution object per instance.

    Each method listed in ``_FROZEN_METHODS`` calls ``scipy.stats.norm.<method>(…,
    loc=loc, scale=scale)``, as SciPy's frozen distribution does with its own copy of
    ``norm``; :meth:`rvs` takes ``size`` and ``random_state`` as ``rv_frozen.rvs`` does.

    Parameters
    ----------
    loc, scale : ndarray, shape (n,)
        Means and standard deviations.
    """

    __slots__ = ("loc", "scale")

    def __init__(self, loc: Any, scale: Any) -> None:
        self.loc = loc
        self.scale = scale

    def __getattr__(self, name: str) -> Any:
        if name not in _FROZEN_METHODS:
            raise AttributeError(name)
        from functools import partial

        from scipy.stats import norm

        return partial(getattr(norm, name), loc=self.loc, scale=self.scale)

    def __dir__(self) -> list[str]:
        return sorted({*_FROZEN_METHODS, "rvs", "loc", "scale"})

    def rvs(self, size: Any = None, random_state: Any = None) -> Any:
        """Draws, as ``rv_frozen.rvs(size, random_state)``."""
        from scipy.stats import norm

        return norm.rvs(loc=self.loc, scale=self.scale, size=size, random_state=random_state)


def _fast_normal_class() -> type:
    from ngboost.distns import Normal

    class _FastNormal(Normal):  # type: ignore[misc, valid-type]
        """ngboost's ``Normal`` holding a :class:`FrozenNormal` (module docstring)."""

        def __init__(self, params: Any) -> None:
            self._params = params  # Distn.__init__
            self.loc = params[0]
            self.scale = np.exp(params[1])
            self.var = self.scale**2
            self.dist = FrozenNormal(self.loc, self.scale)

        def __getattr__(self, name: str) -> Any:  # as Normal's: the frozen methods, else None
            if name in _FROZEN_METHODS or name == "rvs":
                return getattr(self.dist, name)
            if name.startswith("__") or name == "dist":  # pickle's and copy's probes
                raise AttributeError(name)
            return None

    _FastNormal.__name__ = _FastNormal.__qualname__ = "FastNormal"
    _FastNormal.__module__ = __name__
    return _FastNormal


def __getattr__(name: str) -> Any:  # ngboost is imported only when FastNormal is used
    if name == "FastNormal":
        cls = _fast_normal_class()
        globals()["FastNormal"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
