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

:class:`LeanTreeRegressor` is the base learner: scikit-learn's ``DecisionTreeRegressor``
that checks its input with ``np.isfinite`` on the float32 copy the builder gets, instead of
scikit-learn's full validation on every call (``validate_data``, the missing-value mask,
dataframe probes), checks a parameter set once instead of on every fit, and clones itself
without ``inspect``. NGBoost fits two trees and predicts with
them on every boosting iteration, so that validation took more than half of an NGBoost-Bag
fit; without it an NGBoost fit and prediction at n = 1000 is 1.63× faster
(``benchmarks/bench_ngboost_tree.py``, best of 3). The tree is built from the same float32 copy of X
by the same builder, so every number is the same, bit for bit (tested); input that is not
a plain finite 2-D array with rows and columns (or a Poisson criterion) takes scikit-learn's
own checked path, so errors are scikit-learn's (tested: no rows, no columns, values beyond
float32, NaN, invalid parameters).
"""

from __future__ import annotations

import copy
from typing import Any, cast

import numpy as np

__all__ = [
    "BOOSTING_CONSTRAINTS",
    "BOOSTING_SEARCH_SPACE",
    "BOOSTING_SMOKE_PARAMS",
    "FastNormal",  # noqa: F822  (made on first access, module __getattr__)
    "LeanTreeRegressor",  # noqa: F822  (made on first access, module __getattr__)
    "lean_tree_class",
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

    base = lean_tree_class()(
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


def _lean_X(X: Any) -> Any:
    """The float32 copy of ``X`` that scikit-learn's checked path hands the tree builder, or
    None when ``X`` needs that path: not a plain 2-D numeric ndarray with at least one row
    and one column, or not finite once in float32 (NaN, inf, or beyond float32's range)."""
    if type(X) is not np.ndarray or X.ndim != 2 or X.dtype.kind not in "fiu" or 0 in X.shape:
        return None
    with np.errstate(over="ignore"):  # beyond float32: scikit-learn's path warns and refuses
        X32 = np.asarray(X, dtype=np.float32)
    return X32 if bool(np.isfinite(X32).all()) else None


def _lean_y(y: Any) -> bool:
    """Whether ``y`` can skip scikit-learn's checks: a plain finite numeric 1-D or 2-D array."""
    return (
        type(y) is np.ndarray
        and y.ndim in (1, 2)
        and y.dtype.kind in "fiu"
        and bool(np.isfinite(y).all())
    )


#: Parameter sets (name, value) already checked by scikit-learn's ``_validate_params``.
_VALIDATED: set[tuple[tuple[str, Any], ...]] = set()


def lean_tree_class() -> type:
    """:class:`LeanTreeRegressor`, made (importing scikit-learn) on the first call."""
    cached = globals().get("LeanTreeRegressor")
    if cached is not None:
        return cast(type, cached)
    from sklearn.base import _clone_parametrized
    from sklearn.tree import DecisionTreeRegressor

    class _LeanTree(DecisionTreeRegressor):  # type: ignore[misc]
        """``DecisionTreeRegressor`` without scikit-learn's per-call validation (module
        docstring); same parameters, same trees, scikit-learn's errors."""

        def _validate_params_once(self) -> None:
            # scikit-learn checks the parameters on every fit; a set checked once is not
            # checked again (unhashable values, e.g. a RandomState, are checked every time)
            key = tuple((k, getattr(self, k)) for k in self._get_param_names())
            try:
                if key in _VALIDATED:
                    return
            except TypeError:
                self._validate_params()
                return
            self._validate_params()
            _VALIDATED.add(key)

        @classmethod
        def _get_param_names(cls) -> list[str]:
            names = cls.__dict__.get("_param_names_cache")
            if names is None:
                names = super()._get_param_names()
                cls._param_names_cache = names
            return list(names)

        def fit(self, X: Any, y: Any, sample_weight: Any = None, check_input: bool = True) -> Any:
            X32 = _lean_X(X) if self.criterion != "poisson" else None
            if X32 is None or not _lean_y(y):
                return super().fit(X, y, sample_weight=sample_weight, check_input=check_input)
            self._validate_params_once()
            if hasattr(self, "feature_names_in_"):  # as the checked path resets it
                del self.feature_names_in_
            self._fit(X32, y, sample_weight, check_input=False)
            return self

        def predict(self, X: Any, check_input: bool = True) -> Any:
            # check_input=False: the caller vouches for float32 input, as with the stock tree
            X32 = _lean_X(X) if check_input else None
            if X32 is None:
                return super().predict(X, check_input=check_input)
            return super().predict(X32, check_input=False)

        def __sklearn_clone__(self) -> Any:  # sklearn.base.clone: same parameters, unfitted
            if hasattr(self, "_metadata_request") or hasattr(self, "_sklearn_output_config"):
                return _clone_parametrized(self)  # scikit-learn's clone carries these over
            names = self._get_param_names()
            return type(self)(**{k: copy.deepcopy(getattr(self, k)) for k in names})

    _LeanTree.__name__ = _LeanTree.__qualname__ = "LeanTreeRegressor"
    _LeanTree.__module__ = __name__
    globals()["LeanTreeRegressor"] = _LeanTree
    return _LeanTree


def __getattr__(name: str) -> Any:  # ngboost and sklearn are imported only when used
    if name == "FastNormal":
        cls = _fast_normal_class()
        globals()["FastNormal"] = cls
        return cls
    if name == "LeanTreeRegressor":
        return lean_tree_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
