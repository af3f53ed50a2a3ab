"""The NGBoost regressor the NGBoost-based methods share (paper C.3).

NGBoost-Bag (Gaussian members) and NGBoost-NIG (Normal-Inverse-Gamma) boost the same way and
differ only in the distribution, so the regressor is configured here once from the method's
boosting hyperparameters.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BOOSTING_CONSTRAINTS",
    "BOOSTING_SEARCH_SPACE",
    "BOOSTING_SMOKE_PARAMS",
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
