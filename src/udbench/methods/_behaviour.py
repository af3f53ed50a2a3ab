"""The behaviour battery: semantic checks of a method's uncertainty on seeded 1-D problems.

The conformance battery (:mod:`udbench.methods.conformance`) checks the *contract* (shapes,
determinism, units); this battery checks that the numbers *behave* like AU and EU. Each check
fits the method (its ``smoke_params`` plus overrides) on a small synthetic problem with a
known truth and reports one measured ``value``, the ``threshold`` it is compared with and a
verdict (passed / failed / skipped). Problems: ``x`` in one dimension, f*(x) = sin(3x) + x/2,
Gaussian noise; all data drawn from fixed seed components (:func:`udbench._seeding.make_rng`).

Checks, in order (:data:`BEHAVIOUR_CHECKS`):

``eu_gap_and_outside``
    Training inputs on [-1, -0.4] ∪ [0.4, 1] (n = :data:`N_SMALL`, σ = :data:`NOISE_SD`).
    Value: min(median EU in the gap [-0.15, 0.15], median EU outside [1.5, 2] ∪ [-2, -1.5])
    / median EU inside ([-0.9, -0.5] ∪ [0.5, 0.9]). Pass if ≥ :data:`MIN_EU_RATIO_AWAY`.
``eu_shrinks_with_n``
    Training inputs uniform on [-1, 1], n = :data:`N_SMALL` and 4·n. Value: median EU (4n) /
    median EU (n) on a grid over [-0.9, 0.9]. Pass if ≤ :data:`MAX_EU_RATIO_4N`.
``au_tracks_noise``
    Heteroscedastic noise σ(x) = 0.05 + 0.225·(x + 1), n = 4·:data:`N_SMALL`. Value:
    Spearman ρ(AU, σ²) on the grid. Pass if ≥ :data:`MIN_AU_SPEARMAN`. Skipped for a method
    with ``constant_aleatoric = True`` (constant AU has no rank order).
``au_stable_with_n``
    The two fits of ``eu_shrinks_with_n``. Value: median AU (4n) / median AU (n). Pass if
    ≥ :data:`MIN_AU_RATIO_4N` (AU estimates the noise, which does not shrink with n).
``mean_vs_baseline``
    The 4n fit. Value: MSE(mean, f*) / MSE(baseline, f*) on the grid, the baseline a
    scikit-learn ``GradientBoostingRegressor`` (defaults, ``random_state=0``) fitted on the
    same data. Pass if ≤ :data:`MAX_MSE_RATIO` (no silent under-fitting).
``affine_equivariance``
    The n fit again on y' = :data:`AFFINE_SCALE`·y + :data:`AFFINE_SHIFT`, same
    ``random_state``. Value: the largest error of the mapped outputs, relative to the
    baseline fit's (mean: over sd(y); AU, EU: over their largest value). Pass if
    ≤ :data:`MAX_AFFINE_ERROR`.

Thresholds are written once here, the same for every method; they were set from the values
the five methods registered first (blr, gp, ngboost-bag, catboost-ps, nn-ens; smoke
configurations, nn-ens also with ``n_epochs=200``) measure, with a margin
(docs/methods.md, "The behaviour battery", has the table). A method that cannot pass a
check by its nature is skipped with the reason, never held to a weaker threshold.
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from scipy.stats import spearmanr

from udbench._seeding import make_rng
from udbench.methods.base import BaseMethod, Prediction

__all__ = [
    "AFFINE_SCALE",
    "AFFINE_SHIFT",
    "BEHAVIOUR_CHECKS",
    "MAX_AFFINE_ERROR",
    "MAX_EU_RATIO_4N",
    "MAX_MSE_RATIO",
    "MIN_AU_RATIO_4N",
    "MIN_AU_SPEARMAN",
    "MIN_EU_RATIO_AWAY",
    "NOISE_SD",
    "N_SMALL",
    "BehaviourReport",
    "BehaviourResult",
    "run_behaviour",
    "run_checks",
]

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"

#: Training-set size of the small fits (the large fit has 4x as many points).
N_SMALL = 100
#: Noise SD of the homoscedastic problems.
NOISE_SD = 0.1
#: Test points per region (gap, outside, inside) and on the grid.
N_TEST = 60

# -- thresholds, the same for every method (set from the first five methods, with margin) --
#: ``eu_gap_and_outside``: EU away from the data / EU inside must be at least this.
MIN_EU_RATIO_AWAY = 2.0
#: ``eu_shrinks_with_n``: EU(4n) / EU(n) must be at most this (ideal ~0.25).
MAX_EU_RATIO_4N = 0.8
#: ``au_tracks_noise``: Spearman rho(AU, sigma^2) must be at least this.
MIN_AU_SPEARMAN = 0.5
#: ``au_stable_with_n``: AU(4n) / AU(n) must be at least this (ideal ~1).
MIN_AU_RATIO_4N = 0.5
#: ``mean_vs_baseline``: MSE(method) / MSE(gradient boosting) must be at most this.
MAX_MSE_RATIO = 3.0
#: ``affine_equivariance``: the map y -> AFFINE_SCALE * y + AFFINE_SHIFT.
AFFINE_SCALE = 250.0
AFFINE_SHIFT = -1000.0
#: ``affine_equivariance``: largest relative error of the mapped outputs.
MAX_AFFINE_ERROR = 1e-4


def _f_star(x: np.ndarray) -> np.ndarray:
    return np.sin(3.0 * x) + 0.5 * x


def _sigma_het(x: np.ndarray) -> np.ndarray:
    return 0.05 + 0.225 * (x + 1.0)


@dataclass(frozen=True)
class BehaviourResult:
    """The outcome of one behaviour check.

    Attributes
    ----------
    name : str
        One of :data:`BEHAVIOUR_CHECKS`.
    status : str
        ``"passed"``, ``"failed"`` or ``"skipped"``.
    value : float or None
        The measured value (None when skipped or when the method crashed).
    threshold : float
        The bound the value is compared with.
    rule : str
        ``">="`` or ``"<="``: passed when ``value rule threshold``.
    message : str
        Details (the parts of the value) or the reason for a skip/failure.
    seconds : float
        Wall-clock time of the check (fits shared with earlier checks are not counted again).
    """

    name: str
    status: str
    value: float | None
    threshold: float
    rule: str
    message: str = ""
    seconds: float = 0.0


class CheckTally:
    """Counts of a battery's results by status; shared by the contract and behaviour reports.

    A subclass has a ``results`` list whose items have a ``status`` (passed/failed/skipped).
    """

    method: str
    params: dict[str, Any]
    results: list[Any]
    #: Appended to :meth:`summary` (e.g. ``" (behaviour)"``).
    summary_suffix: ClassVar[str] = ""

    def summary(self) -> str:
        """``"<method>: N passed, N failed, N skipped"`` plus :attr:`summary_suffix`."""
        return (
            f"{self.method}: {self.n_passed} passed, {self.n_failed} failed, "
            f"{self.n_skipped} skipped{self.summary_suffix}"
        )

    def _counts_dict(self) -> dict[str, Any]:
        """The report's method, parameters (as ``repr``) and counts, for :meth:`to_dict`."""
        return {
            "method": self.method,
            "params": {k: repr(v) for k, v in self.params.items()},
            "passed": self.n_passed,
            "failed": self.n_failed,
            "skipped": self.n_skipped,
        }

    def _count(self, status: str) -> int:
        return sum(r.status == status for r in self.results)

    @property
    def n_passed(self) -> int:
        """Number of passed checks."""
        return self._count(PASSED)

    @property
    def n_failed(self) -> int:
        """Number of failed checks."""
        return self._count(FAILED)

    @property
    def n_skipped(self) -> int:
        """Number of skipped checks."""
        return self._count(SKIPPED)

    @property
    def ok(self) -> bool:
        """True when no check failed."""
        return self.n_failed == 0


@dataclass
class BehaviourReport(CheckTally):
    """All behaviour-check results for one method (see :func:`run_behaviour`)."""

    method: str
    params: dict[str, Any]
    results: list[BehaviourResult] = field(default_factory=list)

    summary_suffix: ClassVar[str] = " (behaviour)"

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (for JSON)."""
        return {
            **self._counts_dict(),
            "results": [
                {
                    "name": r.name,
                    "status": r.status,
                    "value": r.value,
                    "threshold": r.threshold,
                    "rule": r.rule,
                    "message": r.message,
                    "seconds": r.seconds,
                }
                for r in self.results
            ],
        }


class _Skip(Exception):
    """Raised inside a check to mark it skipped."""


def _median(a: Any) -> float:
    return float(np.median(np.asarray(a, dtype=np.float64)))


def _ratio(num: float, den: float) -> float:
    if den > 0:
        return num / den
    return math.inf if num > 0 else 1.0


class _Behaviour:
    def __init__(self, cls: type[BaseMethod], params: dict[str, Any], random_state: int) -> None:
        self.cls = cls
        self.params = params
        self.random_state = random_state
        self._fits: dict[str, tuple[np.ndarray, np.ndarray, BaseMethod]] = {}
        self.grid = np.linspace(-0.9, 0.9, N_TEST)[:, None]

    def new(self) -> BaseMethod:
        kwargs = dict(self.params)
        if "random_state" in self.cls().get_params(deep=False):
            kwargs["random_state"] = self.random_state
        return self.cls(**kwargs)

    def data(self, kind: str) -> tuple[np.ndarray, np.ndarray]:
        rng = make_rng("behaviour", kind)
        if kind == "gap":
            n = N_SMALL
            x = rng.uniform(0.4, 1.0, size=n) * rng.choice([-1.0, 1.0], size=n)
            sd: np.ndarray | float = NOISE_SD
        elif kind in ("small", "large"):
            n = N_SMALL if kind == "small" else 4 * N_SMALL
            x = rng.uniform(-1.0, 1.0, size=n)
            sd = NOISE_SD
        else:  # heteroscedastic
            n = 4 * N_SMALL
            x = rng.uniform(-1.0, 1.0, size=n)
            sd = _sigma_het(x)
        y = _f_star(x) + sd * rng.standard_normal(n)
        return x[:, None], y

    def fit(self, kind: str) -> tuple[np.ndarray, np.ndarray, BaseMethod]:
        if kind not in self._fits:
            X, y = self.data(kind)
            self._fits[kind] = (X, y, self.new().fit(X, y))
        return self._fits[kind]

    def predict(self, kind: str, X: np.ndarray) -> Prediction:
        return self.fit(kind)[2].predict(X)

    # -- checks ---------------------------------------------------------------------------
    def eu_gap_and_outside(self) -> tuple[float, str]:
        t = np.linspace(0.0, 1.0, N_TEST // 2)
        inside = np.concatenate([-0.9 + 0.4 * t, 0.5 + 0.4 * t])[:, None]
        gap = np.linspace(-0.15, 0.15, N_TEST)[:, None]
        outside = np.concatenate([-2.0 + 0.5 * t, 1.5 + 0.5 * t])[:, None]
        eu_in = _median(self.predict("gap", inside).epistemic)
        eu_gap = _median(self.predict("gap", gap).epistemic)
        eu_out = _median(self.predict("gap", outside).epistemic)
        r_gap, r_out = _ratio(eu_gap, eu_in), _ratio(eu_out, eu_in)
        return min(r_gap, r_out), f"gap/inside {r_gap:.3g}, outside/inside {r_out:.3g}"

    def eu_shrinks_with_n(self) -> tuple[float, str]:
        small = _median(self.predict("small", self.grid).epistemic)
        large = _median(self.predict("large", self.grid).epistemic)
        return _ratio(large, small), f"median EU {small:.3g} (n={N_SMALL}) -> {large:.3g} (4n)"

    def au_tracks_noise(self) -> tuple[float, str]:
        if self.cls.constant_aleatoric:
            raise _Skip("the method declares constant AU (constant_aleatoric=True)")
        au = np.asarray(self.predict("het", self.grid).aleatoric)
        sigma2 = _sigma_het(self.grid[:, 0]) ** 2
        if np.ptp(au) == 0.0:
            return 0.0, "AU is constant over x although the method declares it heteroscedastic"
        rho = float(spearmanr(au, sigma2).statistic)
        return rho, f"true sigma^2 from {sigma2.min():.3g} to {sigma2.max():.3g}"

    def au_stable_with_n(self) -> tuple[float, str]:
        small = _median(self.predict("small", self.grid).aleatoric)
        large = _median(self.predict("large", self.grid).aleatoric)
        return _ratio(large, small), (
            f"median AU {small:.3g} (n={N_SMALL}) -> {large:.3g} (4n); true {NOISE_SD**2:.3g}"
        )

    def mean_vs_baseline(self) -> tuple[float, str]:
        from sklearn.ensemble import GradientBoostingRegressor

        X, y, _ = self.fit("large")
        truth = _f_star(self.grid[:, 0])
        mse = float(np.mean((np.asarray(self.predict("large", self.grid).mean) - truth) ** 2))
        base = GradientBoostingRegressor(random_state=0).fit(X, y).predict(self.grid)
        mse_base = float(np.mean((base - truth) ** 2))
        return _ratio(mse, mse_base), f"MSE vs f* {mse:.3g}, gradient boosting {mse_base:.3g}"

    def affine_equivariance(self) -> tuple[float, str]:
        X, y, _ = self.fit("small")
        base = self.predict("small", self.grid)
        moved = self.new().fit(X, AFFINE_SCALE * y + AFFINE_SHIFT).predict(self.grid)
        errors = {}
        for name, loc, unit, size in (
            ("mean", AFFINE_SHIFT, AFFINE_SCALE, float(np.std(y))),
            ("AU", 0.0, AFFINE_SCALE**2, float(np.max(base.aleatoric))),
            ("EU", 0.0, AFFINE_SCALE**2, float(np.max(base.epistemic))),
        ):
            ref = np.asarray(getattr(base, {"AU": "aleatoric", "EU": "epistemic"}.get(name, name)))
            got = np.asarray(getattr(moved, {"AU": "aleatoric", "EU": "epistemic"}.get(name, name)))
            err = float(np.max(np.abs((got - loc) / unit - ref)))
            errors[name] = err / size if size > 0 else (0.0 if err == 0 else math.inf)
        detail = ", ".join(f"{k} {v:.2g}" for k, v in errors.items())
        return max(errors.values()), f"y -> {AFFINE_SCALE:g}*y{AFFINE_SHIFT:+g}: {detail}"


#: The behaviour checks in order, with their comparison rule and threshold.
BEHAVIOUR_CHECKS: dict[str, tuple[str, float]] = {
    "eu_gap_and_outside": (">=", MIN_EU_RATIO_AWAY),
    "eu_shrinks_with_n": ("<=", MAX_EU_RATIO_4N),
    "au_tracks_noise": (">=", MIN_AU_SPEARMAN),
    "au_stable_with_n": (">=", MIN_AU_RATIO_4N),
    "mean_vs_baseline": ("<=", MAX_MSE_RATIO),
    "affine_equivariance": ("<=", MAX_AFFINE_ERROR),
}


def run_behaviour(
    cls: type[BaseMethod],
    *,
    label: str,
    params: dict[str, Any],
    random_state: int = 0,
    checks: tuple[str, ...] | None = None,
) -> BehaviourReport:
    """Run the behaviour battery on ``cls`` built with ``params`` (validated by the caller).

    Use :func:`udbench.methods.conformance.check_behaviour`, which resolves names and checks
    its inputs; this function assumes a ``BaseMethod`` subclass and valid ``params``.

    Returns
    -------
    BehaviourReport
        One :class:`BehaviourResult` per check. A check whose fit or predict raises is
        failed with the exception; a NaN value is failed.
    """
    battery = _Behaviour(cls, params, random_state)
    report = BehaviourReport(method=label, params=params)
    names = checks if checks is not None else tuple(BEHAVIOUR_CHECKS)
    report.results.extend(run_checks(battery, BEHAVIOUR_CHECKS, names))
    return report


def run_checks(
    battery: object, table: dict[str, tuple[str, float]], names: tuple[str, ...]
) -> list[BehaviourResult]:
    """Run the checks ``names`` of ``table`` (name -> (rule, threshold)) on ``battery``.

    Each name is a method of ``battery`` returning ``(value, message)``; it may raise
    :class:`_Skip` (skipped, with the reason). Shared by the regression battery and the
    classifier battery (:mod:`udbench.methods.classifier_behaviour`).

    Returns
    -------
    list of BehaviourResult
        In the order of ``names``. A check that raises is failed with the exception; a NaN
        value is failed (it compares false).
    """
    results = []
    for name in names:
        rule, threshold = table[name]
        fn: Callable[[], tuple[float, str]] = getattr(battery, name)
        start = time.perf_counter()
        try:
            value, message = fn()
        except _Skip as skip:
            result = BehaviourResult(name, SKIPPED, None, threshold, rule, str(skip))
        except Exception as err:
            where = traceback.extract_tb(err.__traceback__)[-1]
            result = BehaviourResult(
                name,
                FAILED,
                None,
                threshold,
                rule,
                f"raised {type(err).__name__}: {err} (at {where.name}, line {where.lineno})",
            )
        else:
            ok = value >= threshold if rule == ">=" else value <= threshold
            result = BehaviourResult(
                name, PASSED if ok else FAILED, value, threshold, rule, message
            )
        results.append(
            BehaviourResult(**{**result.__dict__, "seconds": time.perf_counter() - start})
        )
    return results
