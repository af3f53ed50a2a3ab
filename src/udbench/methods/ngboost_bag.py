"""NGBoost-Bag: a bagged ensemble of Gaussian NGBoost regressors (paper App. C.3).

Each of ``n_regressors`` members is an :class:`ngboost.NGBRegressor` with a Normal predictive
distribution trained under the log score (Duan et al., 2020) on its own resample of
⌊sample_fraction·n⌋ training rows, drawn with or without replacement (Breiman, 1996). The
prediction averages the member means; AU is the average member variance, EU the variance of
the member means.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from udbench.methods._ensemble import aggregate_members, bagging_rows, member_moments
from udbench.methods._ngboost import (
    BOOSTING_CONSTRAINTS,
    BOOSTING_SEARCH_SPACE,
    BOOSTING_SMOKE_PARAMS,
    ngboost_regressor,
)
from udbench.methods.base import BaseMethod, Prediction

__all__ = ["NGBoostBag"]


def _ngboost_moments(member: Any, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    params = member.pred_dist(X).params  # Normal: loc and scale (an SD)
    return params["loc"], params["scale"] ** 2


class NGBoostBag(BaseMethod):
    """Bagged NGBoost ensemble with Gaussian members (NGBoost-Bag; paper App. C.3).

    Parameters
    ----------
    n_estimators : int, default 500
        Boosting iterations per member.
    learning_rate : float, default 0.0224
        NGBoost learning rate (centre of the log-uniform range [0.005, 0.1]).
    max_depth : int, default 4
        Depth of the regression-tree base learners.
    minibatch_frac : float, default 0.75
        Fraction of rows used in each boosting iteration.
    col_sample : float, default 0.75
        Fraction of columns used in each boosting iteration.
    natural_gradient : bool, default True
        Use the natural gradient (Fisher-preconditioned) of the log score.
    n_regressors : int, default 15
        Number of members.
    sample_fraction : float, default 0.775
        Size of each member's resample as a fraction of n.
    replace : bool, default True
        Resample with replacement (bootstrap) or without.
    standardize_y : bool, default True
        Fit members on standardised targets (True) or on targets in their own units.
        Either way the outputs are in target units.
    random_state : int or None, default 0
        Root seed; member m's resample and NGBoost/tree seeds derive from it and m.

    Notes
    -----
    Per point, with member Normal(μ_m, s_m²): mean = avg μ_m, AU = avg s_m²,
    EU = (1/M) Σ (μ_m − mean)². A member whose resample has a constant target predicts that
    constant with variance 0 (NGBoost cannot fit a zero-variance Normal).
    """

    name: ClassVar[str] = "ngboost-bag"
    paper_index: ClassVar[int | None] = 7  # SPEC §8's list
    family: ClassVar[str] = "trees"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    progress_param: ClassVar[str | None] = "n_regressors"  # reports the bag so far
    description: ClassVar[str] = "Bagged NGBoost ensemble, Gaussian members (paper C.3)"
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **BOOSTING_SEARCH_SPACE,
        "n_regressors": {"type": "int", "low": 5, "high": 25},
        "sample_fraction": {"type": "float", "low": 0.6, "high": 0.95},
        "replace": {"type": "categorical", "choices": [True, False]},
        "standardize_y": {"type": "categorical", "choices": [True, False]},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        **BOOSTING_CONSTRAINTS,
        "n_regressors": {"type": "int", "low": 1},
        "sample_fraction": {"type": "float", "low": 0.0, "low_open": True, "high": 1.0},
        "replace": {"type": "bool"},
        "standardize_y": {"type": "bool"},
    }
    smoke_params: ClassVar[dict[str, Any]] = {
        **BOOSTING_SMOKE_PARAMS,
        "n_regressors": 3,
    }

    def __init__(
        self,
        n_estimators: int = 500,
        learning_rate: float = 0.0224,
        max_depth: int = 4,
        minibatch_frac: float = 0.75,
        col_sample: float = 0.75,
        natural_gradient: bool = True,
        n_regressors: int = 15,
        sample_fraction: float = 0.775,
        replace: bool = True,
        standardize_y: bool = True,
        random_state: int | None = 0,
    ) -> None:
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.minibatch_frac = minibatch_frac
        self.col_sample = col_sample
        self.natural_gradient = natural_gradient
        self.n_regressors = n_regressors
        self.sample_fraction = sample_fraction
        self.replace = replace
        self.standardize_y = standardize_y
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        from udbench.methods._ngboost import FastNormal  # ngboost's Normal, same numbers

        # the member targets: standardised (BaseMethod) or back in target units
        if self.standardize_y:
            # NGBoost's greedy tree splits flip on rounding-level (1e-16) differences of the
            # targets, which would break invariance to the units of y; rounding the
            # standardised targets to 1e-12 (far below any noise level) removes them.
            t_loc, t_scale = 0.0, 1.0
            target = np.round(y, 12)
        else:
            t_loc, t_scale = self.y_loc_, self.y_scale_
            target = y * t_scale + t_loc
        members: list[Any] = []
        self.target_loc_ = t_loc
        self.target_scale_ = t_scale
        checkpoints = self._progress_checkpoints()  # a reporting tuning trial: bag so far
        for m in range(int(self.n_regressors)):
            rng = self._rng("member", m, "rows")
            rows = bagging_rows(X.shape[0], float(self.sample_fraction), bool(self.replace), rng)
            ym = target[rows]
            if np.ptp(ym) == 0.0:
                members.append(float(ym[0]))
            else:
                seed = self._seed("member", m, "ngboost", bits=31)
                reg = ngboost_regressor(FastNormal, self, seed)
                members.append(reg.fit(X[rows], ym))
            if m + 1 in checkpoints:
                self.members_ = list(members)
                self._report_progress(m + 1, self._predict)
        self.members_ = members

    def _predict_members(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Member means and variances (M, m) in standardised target units."""
        return member_moments(
            self.members_, X, _ngboost_moments, self.target_loc_, self.target_scale_
        )

    def _predict(self, X: np.ndarray) -> Prediction:
        return aggregate_members(*self._predict_members(X))
