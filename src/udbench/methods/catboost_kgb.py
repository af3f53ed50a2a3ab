"""CatBoost-KGB: kernel gradient boosting samples of a GP posterior (paper C.3).

CatBoost's :func:`catboost.sample_gaussian_process` implements Algorithm 4 of Ustimenko et
al. (2023, "Gradient boosting performs Gaussian process inference"): each of
``n_regressors`` samples is a prior tree function (``prior_iterations`` random trees, scaled
by ``sigma``) plus a Langevin-boosted fit (``posterior_iterations`` trees) of the residual
``y - prior + N(0, delta²)``, an approximate draw from the posterior of
``f ~ GP(0, sigma² K + delta² I)``. The prediction is the mean of the samples, EU their
variance (ddof = 0). The routine gives no noise estimate, so AU is constant in x, from held-out
residuals as for DEUP (paper C.3): a second ensemble with the same hyperparameters is fitted on
a random ``1 - holdout_frac`` (90 %) of the training rows, and AU is its mean squared error on
the remaining rows. The final ensemble is then fitted on all rows.

``sample_gaussian_process`` exposes neither ``thread_count`` nor ``allow_writing_files``: the
method calls it with ``CatBoostRegressor.__init__`` wrapped, for the duration of the call and
under a lock, so that every regressor it builds pins both (determinism, no ``catboost_info/``
in the working directory).

Scale of the sampled functions (checked against the routine, catboost 1.2): each prior tree's
leaf values are drawn with variance N/√w (N fitted rows, w the leaf's rows) and the sum of
``prior_iterations`` trees is scaled by σ/√prior_iterations, so a prior function's variance at
a point is σ²·κ with κ the mean of N/√w over the trees — measured 25–160 for N = 100–1600 and
depth 4–6, growing like √(N·2^depth). ``sigma`` is therefore CatBoost's kernel scale, not the
prior SD of f (which is σ√κ, about 1.4 standardised units at the range's centre 0.158 for
N = 400, depth 6: samples then interpolate the data and EU ≈ var(y)). The default is the low
end of the paper's range, 0.05 (docs/methods.md, measured coverage). The posterior fit shrinks
the model by ``model_shrink_rate = (random_strength/sigma)²/N`` per iteration, and CatBoost
requires ``model_shrink_rate · learning_rate < 1``: small N with a large ratio (the corner
``random_strength=1, sigma=0.05, learning_rate=0.3`` below N = 121 fitted rows) is refused
before any tree is built, with the rule.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar
from unittest import mock

import numpy as np

from udbench._validation import UdbenchError
from udbench.methods._ensemble import aggregate_members, member_moments
from udbench.methods.base import BaseMethod, Prediction

__all__ = ["CatBoostKGB"]

_PATCH_LOCK = threading.Lock()


def _sample_functions(
    X: np.ndarray, y: np.ndarray, params: dict[str, Any], seed: int, thread_count: int
) -> list[Any]:
    """``catboost.sample_gaussian_process`` with thread count pinned and no files written."""
    import catboost
    from catboost import CatBoostRegressor

    original_init = CatBoostRegressor.__init__

    def pinned_init(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs.update(thread_count=thread_count, allow_writing_files=False)
        original_init(self, *args, **kwargs)

    with _PATCH_LOCK, mock.patch.object(CatBoostRegressor, "__init__", pinned_init):
        return list(catboost.sample_gaussian_process(X, y, random_seed=seed, **params))


def _sample_moments(member: Any, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = np.asarray(member.predict(X), dtype=np.float64)
    return mean, np.zeros_like(mean)


class CatBoostKGB(BaseMethod):
    """Kernel-gradient-boosting GP posterior samples (CatBoost-KGB; paper App. C.3).

    Defaults are the centres of the paper's ranges (geometric centre of a log range; an
    integer centre rounded half to even), except ``sigma`` (the range's low end, see below).

    Parameters
    ----------
    posterior_iterations : int, default 600
        Trees of each sample's posterior (Langevin boosting) fit; range [200, 1000].
    prior_iterations : int, default 175
        Random trees of each sample's prior function; range [50, 300].
    learning_rate : float, default 0.0949
        Step of the posterior fit, in (0, 1]; range [0.03, 0.3] log.
    depth : int, default 6
        Depth of the symmetric trees, 1 ... 16; range [4, 8].
    sigma : float, default 0.05
        CatBoost's kernel scale σ; range [0.05, 0.5] log. The prior functions' variance is
        σ²·κ, κ ≈ 25–160 (grows like √(N·2^depth); module docstring), in standardised target
        units when ``standardize_y``. Default: the range's low end (its centre, 0.158, gives
        prior functions of about 2× var(y) at N = 400 and EU ≈ var(y)).
    delta : float, default 0.0707
        SD of the homogeneous noise term of the prior (acts as observation noise), >= 0;
        range [0.01, 0.5] log.
    random_strength : float, default 0.2236
        Langevin noise strength (β in Ustimenko et al.), > 0; range [0.05, 1] log.
    eps : float, default 1e-4
        Precision of the prior estimation, in (0, 1]; range [1e-5, 1e-3] log.
    n_regressors : int, default 12
        Number of posterior samples (>= 2: EU is their variance); range [5, 20].
    standardize_y : bool, default True
        Fit on standardised targets (True) or on targets in their own units.
    holdout_frac : float, default 0.1
        Share of training rows held out for the AU estimate (paper: 10 %), in (0, 0.5];
        ⌊holdout_frac·n⌋ rows, at least 1, and at least 2 rows left to fit. Not tuned.
    thread_count : int, default 1
        CatBoost threads (explicit: the runner pins workers to cores; determinism).
    random_state : int or None, default 0
        Root seed of the split and of both ensembles.

    Notes
    -----
    Fitted attributes: ``samples_`` (the final ensemble's models), ``holdout_samples_`` (the
    ensemble fitted without the held-out rows), ``holdout_rows_`` (sorted indices of the
    held-out rows) and ``aleatoric_`` (AU in standardised target units).

    CatBoost quantises each feature with borders placed between training values, so every
    input, in a gap or outside the training range, falls into a bin that holds training rows:
    its EU is that of the nearest training bin's edge, not a distance-driven growth as for a GP
    with a stationary kernel (docs/methods.md).
    """

    name: ClassVar[str] = "catboost-kgb"
    paper_index: ClassVar[int | None] = 9  # SPEC §8's list
    family: ClassVar[str] = "trees"
    constant_aleatoric: ClassVar[bool] = True
    epistemic_from: ClassVar[str] = "samples"
    description: ClassVar[str] = (
        "CatBoost kernel-gradient-boosting GP posterior samples, held-out AU (paper C.3)"
    )
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        "posterior_iterations": {"type": "int", "low": 200, "high": 1000},
        "prior_iterations": {"type": "int", "low": 50, "high": 300},
        "learning_rate": {"type": "float", "low": 0.03, "high": 0.3, "log": True},
        "depth": {"type": "int", "low": 4, "high": 8},
        "sigma": {"type": "float", "low": 0.05, "high": 0.5, "log": True},
        "delta": {"type": "float", "low": 0.01, "high": 0.5, "log": True},
        "random_strength": {"type": "float", "low": 0.05, "high": 1.0, "log": True},
        "eps": {"type": "float", "low": 1e-5, "high": 1e-3, "log": True},
        "n_regressors": {"type": "int", "low": 5, "high": 20},
        "standardize_y": {"type": "categorical", "choices": [True, False]},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        "posterior_iterations": {"type": "int", "low": 1},
        "prior_iterations": {"type": "int", "low": 1},
        "learning_rate": {"type": "float", "low": 0.0, "low_open": True, "high": 1.0},
        "depth": {"type": "int", "low": 1, "high": 16},
        "sigma": {"type": "float", "low": 0.0, "low_open": True},
        "delta": {"type": "float", "low": 0.0},
        "random_strength": {"type": "float", "low": 0.0, "low_open": True},
        "eps": {"type": "float", "low": 0.0, "low_open": True, "high": 1.0},
        "n_regressors": {"type": "int", "low": 2},
        "standardize_y": {"type": "bool"},
        "holdout_frac": {"type": "float", "low": 0.0, "low_open": True, "high": 0.5},
        "thread_count": {"type": "int", "low": 1},
    }
    smoke_params: ClassVar[dict[str, Any]] = {
        "posterior_iterations": 40,
        "prior_iterations": 10,
        "learning_rate": 0.3,
        "depth": 3,
        "n_regressors": 3,
    }

    def __init__(
        self,
        posterior_iterations: int = 600,
        prior_iterations: int = 175,
        learning_rate: float = 0.0949,
        depth: int = 6,
        sigma: float = 0.05,
        delta: float = 0.0707,
        random_strength: float = 0.2236,
        eps: float = 1e-4,
        n_regressors: int = 12,
        standardize_y: bool = True,
        holdout_frac: float = 0.1,
        thread_count: int = 1,
        random_state: int | None = 0,
    ) -> None:
        self.posterior_iterations = posterior_iterations
        self.prior_iterations = prior_iterations
        self.learning_rate = learning_rate
        self.depth = depth
        self.sigma = sigma
        self.delta = delta
        self.random_strength = random_strength
        self.eps = eps
        self.n_regressors = n_regressors
        self.standardize_y = standardize_y
        self.holdout_frac = holdout_frac
        self.thread_count = thread_count
        self.random_state = random_state

    def _sampler_params(self) -> dict[str, Any]:
        return {
            "samples": int(self.n_regressors),
            "posterior_iterations": int(self.posterior_iterations),
            "prior_iterations": int(self.prior_iterations),
            "learning_rate": float(self.learning_rate),
            "depth": int(self.depth),
            "sigma": float(self.sigma),
            "delta": float(self.delta),
            "random_strength": float(self.random_strength),
            "eps": float(self.eps),
        }

    def _check_shrinkage(self, n_rows: int) -> None:
        """CatBoost's rule ``model_shrink_rate · learning_rate < 1`` for ``n_rows`` fitted rows.

        Raises
        ------
        UdbenchError
            Naming the parameters, the rule and the values, before any tree is built.
        """
        rate = (float(self.random_strength) / float(self.sigma)) ** 2 / n_rows
        if rate * float(self.learning_rate) >= 1.0:
            raise UdbenchError(
                f"{type(self).__name__}: parameters 'random_strength', 'sigma' and "
                f"'learning_rate' must satisfy (random_strength/sigma)²·learning_rate < N, the "
                f"rows of a fit (CatBoost's model_shrink_rate·learning_rate < 1, model_shrink_rate "
                f"= (random_strength/sigma)²/N); got random_strength={self.random_strength}, "
                f"sigma={self.sigma}, learning_rate={self.learning_rate}: "
                f"{rate * n_rows * float(self.learning_rate):.4g} >= N = {n_rows}"
            )

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        t_loc, t_scale = (0.0, 1.0) if self.standardize_y else (self.y_loc_, self.y_scale_)
        target = y * t_scale + t_loc
        n = X.shape[0]
        n_hold = min(max(1, int(np.floor(float(self.holdout_frac) * n))), n - 2)
        self._check_shrinkage(n - max(n_hold, 0))  # the smaller fit (the held-out one)
        params = self._sampler_params()
        threads = int(self.thread_count)
        if n_hold >= 1:
            perm = self._rng("holdout", "rows").permutation(n)
            hold, keep = np.sort(perm[:n_hold]), np.sort(perm[n_hold:])
            holdout_samples = _sample_functions(
                X[keep], target[keep], params, self._seed("holdout", "catboost", bits=31), threads
            )
            means, _ = member_moments(holdout_samples, X[hold], _sample_moments, t_loc, t_scale)
            aleatoric = float(np.mean((means.mean(axis=0) - y[hold]) ** 2))
        else:  # n = 2: no row can be held out with 2 left to fit; AU from the training fit
            hold, holdout_samples = np.arange(0), []
            aleatoric = float("nan")
        self.samples_ = _sample_functions(
            X, target, params, self._seed("final", "catboost", bits=31), threads
        )
        if not np.isfinite(aleatoric):
            means, _ = member_moments(self.samples_, X, _sample_moments, t_loc, t_scale)
            aleatoric = float(np.mean((means.mean(axis=0) - y) ** 2))
        self.holdout_samples_ = holdout_samples
        self.holdout_rows_ = hold
        self.aleatoric_ = aleatoric
        self.target_loc_ = t_loc
        self.target_scale_ = t_scale

    def _predict(self, X: np.ndarray) -> Prediction:
        means, variances = member_moments(
            self.samples_, X, _sample_moments, self.target_loc_, self.target_scale_
        )
        pred = aggregate_members(means, variances)
        return Prediction(
            mean=pred.mean,
            aleatoric=np.full(X.shape[0], self.aleatoric_),
            epistemic=pred.epistemic,
        )
