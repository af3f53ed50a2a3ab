"""CatBoost-PS: CatBoost members with posterior sampling and RMSEWithUncertainty (paper C.3).

Each of ``n_regressors`` members is a :class:`catboost.CatBoostRegressor` with the
``RMSEWithUncertainty`` objective (it predicts a mean and a variance) trained in CatBoost's
posterior-sampling mode — stochastic gradient Langevin boosting, so that a member
approximates a draw from the posterior over models (Malinin et al., 2021) — with a Bayesian
bootstrap of strength ``bagging_temperature`` and its own seed. With ``bagging_frac < 1``
each member is also trained on its own bootstrap sample of ⌊bagging_frac·n⌋ rows. The
prediction averages member means; AU is the average member variance, EU the variance of the
member means.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from udbench.methods._ensemble import aggregate_members, bagging_rows, member_moments
from udbench.methods.base import BaseMethod, Prediction

__all__ = ["CatBoostPS"]


def _catboost_moments(member: Any, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    out = np.asarray(member.predict(X), dtype=np.float64)  # RMSEWithUncertainty: (mean, var)
    return out[:, 0], out[:, 1]


class CatBoostPS(BaseMethod):
    """Ensemble of posterior-sampling CatBoost regressors (CatBoost-PS; paper App. C.3).

    Parameters
    ----------
    iterations : int, default 350
        Boosting iterations per member.
    learning_rate : float, default 0.0548
        Centre of the log-uniform range [0.01, 0.3].
    depth : int, default 6
        Depth of CatBoost's symmetric trees (centre 5.5 of [3, 8], rounded half to even).
    l2_leaf_reg : float, default 2.236
        L2 regularisation of leaf values.
    random_strength : float, default 1.0
        Randomness of split scores.
    bagging_temperature : float, default 1.0
        Strength of the Bayesian bootstrap (0: no resampling weights).
    n_regressors : int, default 12
        Number of members (centre 12.5 of [5, 20], rounded half to even).
    bagging_frac : float, default 0.8
        If < 1, each member trains on a bootstrap sample of ⌊bagging_frac·n⌋ rows.
    standardize_y : bool, default True
        Fit members on standardised targets (True) or on targets in their own units.
    thread_count : int, default 1
        CatBoost threads per member (explicit: the runner pins workers to cores).
    random_state : int or None, default 0
        Root seed; member m's seed and bootstrap sample derive from it and m.

    Notes
    -----
    ``RMSEWithUncertainty`` predicts (μ, log s) internally; ``predict`` returns (μ, s²), used
    as the member's mean and variance. A member whose training rows have a constant target
    predicts that constant with variance 0 (CatBoost refuses a constant target).
    """

    name: ClassVar[str] = "catboost-ps"
    paper_index: ClassVar[int | None] = 8  # SPEC §8's list
    family: ClassVar[str] = "trees"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    progress_param: ClassVar[str | None] = "n_regressors"  # reports the bag so far
    description: ClassVar[str] = (
        "CatBoost posterior-sampling members, RMSEWithUncertainty (paper C.3)"
    )
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        "iterations": {"type": "int", "low": 100, "high": 600},
        "learning_rate": {"type": "float", "low": 0.01, "high": 0.3, "log": True},
        "depth": {"type": "int", "low": 3, "high": 8},
        "l2_leaf_reg": {"type": "float", "low": 0.5, "high": 10.0, "log": True},
        "random_strength": {"type": "float", "low": 0.0, "high": 2.0},
        "bagging_temperature": {"type": "float", "low": 0.0, "high": 2.0},
        "n_regressors": {"type": "int", "low": 5, "high": 20},
        "bagging_frac": {"type": "float", "low": 0.6, "high": 1.0},
        "standardize_y": {"type": "categorical", "choices": [True, False]},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        "iterations": {"type": "int", "low": 1},
        "learning_rate": {"type": "float", "low": 0.0, "low_open": True},
        "depth": {"type": "int", "low": 1, "high": 16},
        "l2_leaf_reg": {"type": "float", "low": 0.0},
        "random_strength": {"type": "float", "low": 0.0},
        "bagging_temperature": {"type": "float", "low": 0.0},
        "n_regressors": {"type": "int", "low": 1},
        "bagging_frac": {"type": "float", "low": 0.0, "low_open": True, "high": 1.0},
        "standardize_y": {"type": "bool"},
        "thread_count": {"type": "int", "low": 1},
    }
    smoke_params: ClassVar[dict[str, Any]] = {
        "iterations": 40,
        "learning_rate": 0.2,
        "depth": 3,
        "n_regressors": 3,
    }

    def __init__(
        self,
        iterations: int = 350,
        learning_rate: float = 0.0548,
        depth: int = 6,
        l2_leaf_reg: float = 2.236,
        random_strength: float = 1.0,
        bagging_temperature: float = 1.0,
        n_regressors: int = 12,
        bagging_frac: float = 0.8,
        standardize_y: bool = True,
        thread_count: int = 1,
        random_state: int | None = 0,
    ) -> None:
        self.iterations = iterations
        self.learning_rate = learning_rate
        self.depth = depth
        self.l2_leaf_reg = l2_leaf_reg
        self.random_strength = random_strength
        self.bagging_temperature = bagging_temperature
        self.n_regressors = n_regressors
        self.bagging_frac = bagging_frac
        self.standardize_y = standardize_y
        self.thread_count = thread_count
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        from catboost import CatBoostRegressor

        t_loc, t_scale = (0.0, 1.0) if self.standardize_y else (self.y_loc_, self.y_scale_)
        target = y * t_scale + t_loc
        members: list[Any] = []
        self.target_loc_ = t_loc
        self.target_scale_ = t_scale
        checkpoints = self._progress_checkpoints()  # a reporting tuning trial: bag so far
        for m in range(int(self.n_regressors)):
            if float(self.bagging_frac) < 1.0:
                rng = self._rng("member", m, "rows")
                rows = bagging_rows(X.shape[0], float(self.bagging_frac), True, rng)
            else:
                rows = np.arange(X.shape[0])
            ym = target[rows]
            if np.ptp(ym) == 0.0:
                members.append(float(ym[0]))
                if m + 1 in checkpoints:
                    self.members_ = list(members)
                    self._report_progress(m + 1, self._predict)
                continue
            reg = CatBoostRegressor(
                loss_function="RMSEWithUncertainty",
                posterior_sampling=True,
                bootstrap_type="Bayesian",
                iterations=int(self.iterations),
                learning_rate=float(self.learning_rate),
                depth=int(self.depth),
                l2_leaf_reg=float(self.l2_leaf_reg),
                random_strength=float(self.random_strength),
                bagging_temperature=float(self.bagging_temperature),
                random_seed=self._seed("member", m, "catboost", bits=31),
                thread_count=int(self.thread_count),
                verbose=False,
                allow_writing_files=False,
            )
            members.append(reg.fit(X[rows], ym))
            if m + 1 in checkpoints:
                self.members_ = list(members)
                self._report_progress(m + 1, self._predict)
        self.members_ = members

    def _predict_members(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Member means and variances (M, m) in standardised target units."""
        return member_moments(
            self.members_, X, _catboost_moments, self.target_loc_, self.target_scale_
        )

    def _predict(self, X: np.ndarray) -> Prediction:
        return aggregate_members(*self._predict_members(X))
