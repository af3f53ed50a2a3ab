"""The known temperature τ(x) of a classification task: the noise's role (docs/spec.md §11).

In a latent-GP classification task π*(x) = softmax(f*(x)/τ(x)) (:mod:`udbench.priors.
gp_classification`); τ flattens the class probabilities exactly as σ² widens the regression
noise, so it gets the same four shapes of SPEC §4:

    log τ(x)² = 2c + s·h(x),   i.e.   log τ(x) = c + (s/2)·h(x),

with h the mode's standardised shape of the noise score z (the one :class:`~udbench.design.
NoiseModel` uses, h ≡ 0 for ``homoscedastic``) and s the SD of log τ² over the evaluation pool
(default 1, as the SD of log σ² in SPEC §4: τ² plays the noise variance's role, since
f/τ has signal-to-noise ratio v(x)/τ(x)²). The level c follows the level rule
(:func:`udbench.priors.gp_classification.temperature_level`): the mean over the evaluation
pool of the prior-expected Bayes error, relative to its chance value 1 − 1/K, equals the
difficulty's target (:data:`~udbench.priors.gp_classification.DIFFICULTIES`: easy 0.1,
medium 0.3, hard 0.6).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from udbench._validation import check_choice, check_positive, param_error
from udbench.data.covariates import Covariates
from udbench.design.noise import NOISE_MODES, NoiseModel
from udbench.priors.base import DEFAULT_DIFFICULTY as _DEFAULT_DIFFICULTY
from udbench.priors.gp_classification import (
    DIFFICULTIES,
    check_n_classes,
    expected_bayes_error_curve,
    temperature_level,
)

__all__ = ["DEFAULT_DIFFICULTY", "TemperatureModel"]

#: The difficulty used when none is named (:data:`udbench.priors.base.DEFAULT_DIFFICULTY`).
DEFAULT_DIFFICULTY: str = _DEFAULT_DIFFICULTY


class TemperatureModel:
    """Known temperature τ(x) of a latent-GP classification task (module docstring).

    Parameters
    ----------
    cov : Covariates
        The dataset (noise score, evaluation pool).
    mode : {"homoscedastic", "smooth-monotone", "u-shaped", "step"}
        Shape of log τ along z (the SPEC §4 grid; ``student-t`` is a noise law, not a shape).
    latent_sd : array_like, shape (n_eval,)
        Prior SD of one latent at the evaluation pool, in pool order
        (:meth:`~udbench.priors.gp_classification.GPClassificationPrior.marginal_sd` of
        ``cov.X[cov.eval_idx]``).
    n_classes : int, default 3
        K >= 2.
    difficulty : str or float, default "medium"
        A key of :data:`DIFFICULTIES` or the target itself, in (0, 1).
    strength : float, default 1.0
        s >= 0, the SD of log τ² over the pool.

    Attributes
    ----------
    level : float
        c.
    target : float
        The level rule's target (normalised mean Bayes error).
    pool_bayes_error, pool_entropy : float
        Mean over the pool of the prior-expected Bayes error (raw, not normalised) and of
        the prior-expected entropy E[H(π)] in nats, at this level.

    Raises
    ------
    UdbenchError
        Unknown mode or difficulty, K < 2, s < 0, a target outside (0, 1), ``latent_sd`` of
        the wrong length or not > 0.
    """

    def __init__(
        self,
        cov: Covariates,
        mode: str,
        latent_sd: Any,
        n_classes: int = 3,
        difficulty: str | float = DEFAULT_DIFFICULTY,
        strength: float = 1.0,
    ) -> None:
        comp = "TemperatureModel"
        self.cov = cov
        self.mode = check_choice(comp, "mode", mode, NOISE_MODES)
        self.n_classes = check_n_classes(comp, n_classes)
        self.strength = check_positive(comp, "strength", strength, strict=False)
        if isinstance(difficulty, str):
            name = check_choice(comp, "difficulty", difficulty, DIFFICULTIES)
            self.difficulty: str | float = name
            self.target = DIFFICULTIES[difficulty]
        else:
            t = float(difficulty)
            if not 0.0 < t < 1.0:
                raise param_error(comp, "difficulty", "be a name or a number in (0, 1)", difficulty)
            self.difficulty = t
            self.target = t
        sd = np.asarray(latent_sd, dtype=np.float64)
        n_eval = int(np.asarray(cov.eval_idx).shape[0])
        if sd.shape != (n_eval,) or not np.all(np.isfinite(sd)) or not np.all(sd > 0):
            raise param_error(
                comp, "latent_sd", f"be {n_eval} finite values > 0 (the pool)", f"shape {sd.shape}"
            )
        # the standardised shape h of SPEC §4, exactly as the noise model computes it
        self._shape_model = NoiseModel(cov, self.mode, strength=1.0, rho=1.0)
        X_pool = np.asarray(cov.X)[np.asarray(cov.eval_idx)]
        h = self.shape(X_pool)
        self.level = temperature_level(sd, h, self.strength, self.n_classes, self.target)
        tau = self.temperature(X_pool)
        r = sd / tau
        K = self.n_classes
        self.pool_bayes_error = float(
            np.mean(expected_bayes_error_curve(r, K, "bayes_error")) * (1.0 - 1.0 / K)
        )
        self.pool_entropy = float(np.mean(expected_bayes_error_curve(r, K, "entropy")) * np.log(K))

    def shape(self, X: Any) -> np.ndarray:
        """Standardised shape h(x) of scaled rows ``X`` (m, d) -> (m,) (SPEC §4)."""
        return self._shape_model.log_variance(X) - self._shape_model.level

    def log_temperature(self, X: Any) -> np.ndarray:
        """log τ(x) = c + (s/2)·h(x) of scaled rows ``X`` (m, d) -> (m,)."""
        return self.level + 0.5 * self.strength * self.shape(X)

    def temperature(self, X: Any) -> np.ndarray:
        """τ(x) > 0 of scaled rows ``X`` (m, d) -> (m,); a function of each row alone."""
        return np.exp(self.log_temperature(X))

    def settings(self) -> dict[str, Any]:
        """JSON-serialisable record (for a future task file)."""
        return {
            "mode": self.mode,
            "n_classes": self.n_classes,
            "difficulty": self.difficulty,
            "target": self.target,
            "strength": self.strength,
            "level": self.level,
            "pool_bayes_error": self.pool_bayes_error,
            "pool_entropy": self.pool_entropy,
        }

    def __repr__(self) -> str:
        return (
            f"TemperatureModel({self.cov.key!r}, mode={self.mode!r}, K={self.n_classes}, "
            f"difficulty={self.difficulty!r}, strength={self.strength})"
        )
