"""Aleatoric noise models σ²(x) (SPEC §4, paper B.3) and the law of the noise.

The four modes of SPEC §4 draw Gaussian noise; they are the benchmark grid
(:data:`NOISE_MODES`, what ``--noise all`` means). One more mode, ``student-t``, is generated
only when named (:data:`ALL_NOISE_MODES`): Student-t noise with ν = 4 degrees of freedom,
scaled to the variance σ²(x) of ``smooth-monotone``. The reference posterior still conditions
with a Gaussian likelihood of variance σ²(x), so for this mode it is misspecified (approximate):
the task file says so and ``udbench check`` reports it (docs/transfer.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from udbench._validation import check_choice, check_positive, param_error
from udbench.data.covariates import Covariates

__all__ = [
    "ALL_NOISE_MODES",
    "NOISE_MODES",
    "NOISE_MODE_TABLE",
    "STUDENT_T_DF",
    "NoiseMode",
    "NoiseModel",
    "get_noise_mode",
    "unit_noise",
]

#: Degrees of freedom ν of the ``student-t`` noise mode (finite variance needs ν > 2).
STUDENT_T_DF: float = 4.0


@dataclass(frozen=True)
class NoiseMode:
    """One row of the noise-mode table (SPEC §4).

    Attributes
    ----------
    name : str
        The mode's name (task ids, CLI).
    shape : callable or None
        ``shape(z) -> raw shape`` of the noise score z (ndarray (m,) -> (m,), float64),
        standardised over the evaluation pool by :class:`NoiseModel`; None for the
        homoscedastic mode (h ≡ 0, no standardisation).
    description : str
        One line for listings and docs.
    law : {"gaussian", "student-t"}, default "gaussian"
        The law of the standardised noise ε in y = f(x) + σ(x)·ε (:meth:`unit_noise`).
    df : float or None, default None
        Degrees of freedom ν of a Student-t law (> 2).
    in_grid : bool, default True
        Part of the benchmark grid of SPEC §4 (:data:`NOISE_MODES`, ``--noise all``);
        False: generated only when named.

    Notes
    -----
    A mode whose law is not Gaussian is *misspecified* for the reference posterior, which
    conditions with a Gaussian likelihood of variance σ²(x) (:attr:`gaussian`).
    """

    name: str
    shape: Callable[[np.ndarray], np.ndarray] | None
    description: str
    law: str = "gaussian"
    df: float | None = None
    in_grid: bool = True

    @property
    def gaussian(self) -> bool:
        """True when the noise is Gaussian (the reference posterior is then exact)."""
        return self.law == "gaussian"

    def unit_noise(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Draw ``size`` standardised noise values ε (mean 0, variance 1) from ``rng``.

        Gaussian: ``rng.standard_normal(size)`` (the stream every Gaussian mode has always
        used). Student-t with ν degrees of freedom: T·√((ν − 2)/ν) with T ~ t_ν
        (``rng.standard_t``), so Var ε = 1 (Var T = ν/(ν − 2)); for ν = 4 its kurtosis is
        infinite (heavier tails than any Gaussian).

        Returns
        -------
        ndarray, shape (size,), float64
        """
        if self.law == "student-t":
            nu = float(self.df if self.df is not None else STUDENT_T_DF)
            return np.asarray(rng.standard_t(nu, size) * np.sqrt((nu - 2.0) / nu))
        return np.asarray(rng.standard_normal(size))


def _linear(z: np.ndarray) -> np.ndarray:
    return z


def _square(z: np.ndarray) -> np.ndarray:
    return z**2


def _step(z: np.ndarray) -> np.ndarray:
    return (z > 0).astype(np.float64)


#: The four noise modes of SPEC §4 and the ``student-t`` mode, one row each, in table order
#: (named functions, so a :class:`NoiseModel` pickles for worker processes).
NOISE_MODE_TABLE: tuple[NoiseMode, ...] = (
    NoiseMode("homoscedastic", None, "constant variance: shape 0"),
    NoiseMode("smooth-monotone", _linear, "log-variance linear in the noise score: shape z"),
    NoiseMode("u-shaped", _square, "log-variance largest at both ends of z: shape z²"),
    NoiseMode("step", _step, "two variance levels: shape 1 if z > 0 else 0"),
    NoiseMode(
        "student-t",
        _linear,
        "Student-t noise (ν = 4) with the variance of smooth-monotone; misspecified for the "
        "Gaussian-likelihood reference posterior (approximate)",
        law="student-t",
        df=STUDENT_T_DF,
        in_grid=False,
    ),
)

#: Names of the noise modes of the benchmark grid (SPEC §4; ``--noise all``), in table order.
NOISE_MODES: tuple[str, ...] = tuple(m.name for m in NOISE_MODE_TABLE if m.in_grid)
#: Names of every noise mode, the grid's and those generated only when named.
ALL_NOISE_MODES: tuple[str, ...] = tuple(m.name for m in NOISE_MODE_TABLE)

_BY_NAME: dict[str, NoiseMode] = {m.name: m for m in NOISE_MODE_TABLE}


def get_noise_mode(name: str) -> NoiseMode:
    """The row of :data:`NOISE_MODE_TABLE` named ``name``.

    Raises
    ------
    UdbenchError
        Unknown mode (the message lists :data:`ALL_NOISE_MODES`).
    """
    return _BY_NAME[check_choice("get_noise_mode", "mode", name, ALL_NOISE_MODES)]


def unit_noise(mode: str, rng: np.random.Generator, size: int) -> np.ndarray:
    """Standardised noise ε of noise mode ``mode`` (:meth:`NoiseMode.unit_noise`).

    A name outside :data:`NOISE_MODE_TABLE` (a task built by hand with
    :func:`udbench.tasks.make_task` under its own label) draws Gaussian noise, as every task
    did before the table had a non-Gaussian law.
    """
    row = _BY_NAME.get(mode)
    return row.unit_noise(rng, size) if row is not None else np.asarray(rng.standard_normal(size))


class NoiseModel:
    """Heteroscedastic noise variance σ²(x) of one dataset (SPEC §4).

    log σ²(x) = c + s·h(x), where h is the mode's shape of the noise score z(x),
    standardised to mean 0 and SD 1 (ddof=0) over the evaluation pool (h ≡ 0 for
    ``homoscedastic``), and the level c = log ρ − log mean_pool(e^{s·h}) makes the mean
    of σ² over the evaluation pool equal ρ (paper B.3, "Strength and level").

    Parameters
    ----------
    cov : Covariates
        The dataset (its noise score and evaluation pool).
    mode : {"homoscedastic", "smooth-monotone", "u-shaped", "step", "student-t"}
        Shape of the noise along z (``student-t`` has the shape, hence the variance, of
        ``smooth-monotone``; its law is in :attr:`law`).
    strength : float, default 1.0
        s ≥ 0, the SD of log σ² over the evaluation pool.
    rho : float, optional
        Noise-to-signal ratio ρ > 0, the mean σ² over the pool in target units;
        defaults to the dataset's ρ (SPEC §2).

    Attributes
    ----------
    level : float
        c.
    law : str
        The law of the standardised noise (:class:`NoiseMode`): ``"gaussian"`` or
        ``"student-t"``.
    shape_mean, shape_sd : float
        Mean and SD of the raw shape over the evaluation pool (used to standardise h).

    Raises
    ------
    UdbenchError
        Unknown mode, negative or non-finite strength, ρ ≤ 0, or a dataset without a
        ρ and an evaluation pool (out-of-distribution-only data) when ``rho`` is omitted.
    """

    def __init__(
        self, cov: Covariates, mode: str, strength: float = 1.0, rho: float | None = None
    ) -> None:
        self.cov = cov
        self.mode = check_choice("NoiseModel", "mode", mode, ALL_NOISE_MODES)
        self._shape = _BY_NAME[self.mode].shape
        self.law = _BY_NAME[self.mode].law
        self.strength = check_positive("NoiseModel", "strength", strength, strict=False)
        if rho is None:
            rho = cov.spec.rho
            if rho is None:
                raise param_error("NoiseModel", "rho", "be given for this dataset", rho)
        self.rho = check_positive("NoiseModel", "rho", rho)
        shape = self._raw_shape(cov.z[cov.eval_idx])
        self.shape_mean = float(shape.mean())
        sd = float(shape.std())
        if self._shape is not None and not sd > 0:
            raise param_error("NoiseModel", "mode", "vary over the evaluation pool", mode)
        self.shape_sd = sd if sd > 0 else 1.0
        h = self._standardised(shape)
        n = h.shape[0]
        self.level = float(np.log(self.rho) - (logsumexp(self.strength * h) - np.log(n)))

    def _raw_shape(self, z: np.ndarray) -> np.ndarray:
        """The mode's shape of z before standardisation (zeros for ``homoscedastic``)."""
        return np.zeros_like(z) if self._shape is None else self._shape(z)

    def _standardised(self, shape: np.ndarray) -> np.ndarray:
        if self._shape is None:
            return np.zeros_like(shape)
        return (shape - self.shape_mean) / self.shape_sd

    def log_variance(self, X: object) -> np.ndarray:
        """log σ²(x) of scaled rows ``X`` (m, d) -> (m,)."""
        z = self.cov.noise_score(X)
        return self.level + self.strength * self._standardised(self._raw_shape(z))

    def variance(self, X: object) -> np.ndarray:
        """Noise variance σ²(x) in target units of scaled rows ``X`` (m, d) -> (m,).

        A function of each row alone: the same point gets the same variance in any batch.
        """
        return np.exp(self.log_variance(X))

    def __repr__(self) -> str:
        return (
            f"NoiseModel({self.cov.key!r}, mode={self.mode!r}, strength={self.strength}, "
            f"rho={self.rho})"
        )
