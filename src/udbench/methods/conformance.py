"""The conformance battery: run any method through the contract on small synthetic data.

Each check reports ``passed``, ``failed`` (with the reason) or ``skipped`` (with the reason),
so a "pass" cannot hide checks that did not run (the habit of scikit-learn's
``estimator_checks`` and benchopt's solver tests). Every check builds a fresh method from the
class's smoke configuration (``smoke_params``), so the battery is fast for every registered
method. The data are derived from fixed seed components (:func:`udbench._seeding.make_rng`),
the same on every run.

Checks (in order): ``hyperparameter_declarations``, ``clone``, ``error_before_fit``,
``fit_returns_self``, ``output_shapes_finite``, ``nonnegative_variances``,
``constant_aleatoric_flag``, ``determinism``, ``no_input_mutation``,
``hyperparameters_unchanged``, ``refit_independence``, ``target_units``,
``bad_input_errors``, ``constant_target``, ``single_feature``, ``constant_feature``.

Each check runs under a wall-clock limit (``timeout``, default :data:`DEFAULT_TIMEOUT` s). A
check over it is reported failed with the reason, and the checks after it are reported
skipped (not run): the method's code cannot be stopped from outside its thread and may still
be running, so the battery ends instead of hanging. Inputs (``random_state``, overrides,
``timeout``) are validated before any check runs.

Beside this contract battery, :func:`check_behaviour` runs the behaviour battery (semantic
checks of AU and EU with measured value, threshold and verdict; :mod:`udbench.methods._behaviour`).

In a user's own pytest suite, :func:`parametrize_with_checks` turns the battery into one test
per (method, check), as scikit-learn's ``sklearn.utils.estimator_checks.parametrize_with_checks``
does; pytest is imported only when that helper is called.
"""

from __future__ import annotations

import inspect
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone

from udbench._seeding import make_rng
from udbench._validation import UdbenchError, check_timeout, param_error
from udbench.methods._behaviour import (
    BEHAVIOUR_CHECKS,
    BehaviourReport,
    CheckTally,
    run_behaviour,
)
from udbench.methods.base import BaseMethod, Prediction, check_hyperparameter
from udbench.methods.registry import get_method_class

__all__ = [
    "BEHAVIOUR_CHECKS",
    "CHECKS",
    "DEFAULT_TIMEOUT",
    "BehaviourReport",
    "CheckResult",
    "ConformanceCheck",
    "ConformanceReport",
    "check_behaviour",
    "check_method",
    "parametrize_with_checks",
]

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"

#: Scale factors c of the ``target_units`` check's exact part, y -> c*y: powers of two near
#: 1e-15, 1e-6, 1e6 and 1e15, so that c*y and the standardised targets are exact (the method
#: sees bit for bit the same standardised targets, whatever it does with them).
TARGET_SCALES: tuple[float, ...] = (2.0**-50, 2.0**-20, 2.0**20, 2.0**50)
#: ``(c, b)`` pairs of the check's rounded part, y -> c*y + b: an affine map and (b from
#: :data:`TARGET_OFFSET`) a large offset; both round y, so the standardised targets differ by
#: ~1 rounding unit.
TARGET_AFFINE: tuple[float, float] = (100.0, -50.0)
#: The constants of the ``constant_target`` check (scale-free tolerances).
CONSTANT_TARGETS: tuple[float, ...] = (3.7e-12, 3.7, -2.5e6, 3.7e12)
#: The ``constant_feature`` check's columns: (training value c, shift at prediction). Each is
#: fitted exactly constant and constant up to rounding (c ± up to 20 rounding units).
CONSTANT_FEATURES: tuple[tuple[float, float], ...] = ((3.7, 0.1), (1e6 + 0.3, 1.0))
#: The ``target_units`` check's large offset, in SDs of the battery's targets.
TARGET_OFFSET = 1e4
#: Default wall-clock limit of one check in seconds (smoke configurations take seconds).
DEFAULT_TIMEOUT: float = 300.0


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: ``status`` is ``"passed"``, ``"failed"`` or ``"skipped"``."""

    name: str
    status: str
    message: str = ""
    seconds: float = 0.0


@dataclass
class ConformanceReport(CheckTally):
    """All check results for one method.

    Attributes
    ----------
    method : str
        Registry name or import path of the method checked.
    params : dict
        The hyperparameters the battery used (the smoke configuration plus overrides).
    results : list of CheckResult
        One per check, in battery order.
    """

    method: str
    params: dict[str, Any]
    results: list[CheckResult] = field(default_factory=list)

    def failed(self) -> list[CheckResult]:
        """The failed checks."""
        return [r for r in self.results if r.status == FAILED]

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (for JSON)."""
        return {
            **self._counts_dict(),
            "results": [
                {"name": r.name, "status": r.status, "message": r.message, "seconds": r.seconds}
                for r in self.results
            ],
        }


class _Skip(Exception):
    """Raised inside a check to mark it skipped."""


class _Fail(AssertionError):
    """Raised inside a check to mark it failed."""


@dataclass(frozen=True)
class _Data:
    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    X_other: np.ndarray
    y_other: np.ndarray


def _make_data(n: int = 40, n_test: int = 12, d: int = 3) -> _Data:
    rng = make_rng("conformance", "data", n, n_test, d)
    X = rng.uniform(size=(n, d))
    X_test = rng.uniform(size=(n_test, d))

    def f(Z: np.ndarray) -> np.ndarray:
        return np.sin(3.0 * Z[:, 0]) + Z[:, 1] ** 2 - 0.5 * Z[:, -1]

    y = f(X) + 0.1 * rng.standard_normal(n)
    X_other = rng.uniform(size=(n, d))
    y_other = -2.0 * f(X_other) + 0.3 * rng.standard_normal(n) + 5.0
    return _Data(X, y, X_test, X_other, y_other)


class _Battery:
    def __init__(self, cls: type[BaseMethod], params: dict[str, Any], random_state: int) -> None:
        self.cls = cls
        self.params = params
        self.random_state = random_state
        self._data = _make_data()

    @property
    def data(self) -> _Data:
        """Fresh copies every time, so a method that writes into its inputs cannot change
        what later checks see (the ``no_input_mutation`` check reports it instead)."""
        d = self._data
        return _Data(d.X.copy(), d.y.copy(), d.X_test.copy(), d.X_other.copy(), d.y_other.copy())

    # -- helpers ----------------------------------------------------------------------
    def new(self, **extra: Any) -> BaseMethod:
        kwargs = dict(self.params)
        if "random_state" in self.cls().get_params(deep=False):
            kwargs["random_state"] = self.random_state
        kwargs.update(extra)
        return self.cls(**kwargs)

    @staticmethod
    def raw(method: BaseMethod, X: np.ndarray) -> Prediction:
        return method._predict_unchecked(X)

    def fitted(self, X: np.ndarray | None = None, y: np.ndarray | None = None) -> BaseMethod:
        d = self.data
        return self.new().fit(d.X if X is None else X, d.y if y is None else y)

    @staticmethod
    def arrays(pred: Prediction) -> list[np.ndarray]:
        return [np.asarray(pred.mean), np.asarray(pred.aleatoric), np.asarray(pred.epistemic)]

    @staticmethod
    def valid(pred: Prediction, n: int, what: str) -> None:
        for field_name, arr in zip(
            ("mean", "aleatoric", "epistemic"), _Battery.arrays(pred), strict=True
        ):
            if arr.shape != (n,):
                raise _Fail(f"{what}: {field_name} has shape {arr.shape}, expected ({n},)")
            if not np.all(np.isfinite(arr)):
                raise _Fail(f"{what}: {field_name} has {int(np.sum(~np.isfinite(arr)))} NaN/inf")
        for field_name, arr in zip(
            ("aleatoric", "epistemic"), _Battery.arrays(pred)[1:], strict=True
        ):
            if np.any(arr < 0):
                raise _Fail(f"{what}: {field_name} has negative entries (min {arr.min():.3g})")

    # -- checks -----------------------------------------------------------------------
    def hyperparameter_declarations(self) -> str:
        cls = self.cls
        names = set(cls().get_params(deep=False))
        if "random_state" not in names:
            raise _Fail("the constructor has no 'random_state' keyword")
        for decl_name, decl in (
            ("search_space", cls.search_space),
            ("smoke_params", cls.smoke_params),
        ):
            missing = sorted(set(decl) - names)
            if missing:
                raise _Fail(f"{decl_name} names {missing}, not constructor keywords")
        missing = sorted(set(cls.param_constraints) - names)
        if missing:
            raise _Fail(f"param_constraints names {missing}, not constructor keywords")
        cls().validate_hyperparameters()  # defaults valid
        self.new().validate_hyperparameters()  # smoke configuration valid
        for key, spec in cls.search_space.items():
            rule = cls.param_constraints.get(key)
            if rule is None:
                continue
            ends = spec.get("choices", [spec.get("low"), spec.get("high")])
            for value in ends:
                if value is not None:
                    check_hyperparameter(cls.__name__, f"{key} (search_space)", value, rule)
        return f"{len(names)} hyperparameters, {len(cls.search_space)} in the search space"

    def clone(self) -> str:
        method = self.new()
        copy = clone(method)
        a, b = method.get_params(deep=False), copy.get_params(deep=False)
        if a.keys() != b.keys() or any(repr(a[k]) != repr(b[k]) for k in a):
            raise _Fail("clone() changed hyperparameters (constructor must store them unchanged)")
        return ""

    def error_before_fit(self) -> str:
        try:
            self.new().predict(self.data.X_test)
        except UdbenchError as err:
            if "fit" not in str(err):
                raise _Fail(f"error before fit does not mention fit: {err}") from None
            return ""
        except Exception as err:
            raise _Fail(
                f"predict before fit raised {type(err).__name__}, not a UdbenchError"
            ) from None
        raise _Fail("predict before fit did not raise")

    def fit_returns_self(self) -> str:
        method = self.new()
        out = method.fit(self.data.X, self.data.y)
        if out is not method:
            raise _Fail(f"fit returned {type(out).__name__}, not self")
        return ""

    def output_shapes_finite(self) -> str:
        d = self.data
        pred = self.raw(self.fitted(), d.X_test)
        for field_name, arr in zip(
            ("mean", "aleatoric", "epistemic"), self.arrays(pred), strict=True
        ):
            if arr.shape != (len(d.X_test),):
                raise _Fail(f"{field_name} has shape {arr.shape}, expected ({len(d.X_test)},)")
            if not np.all(np.isfinite(arr)):
                raise _Fail(f"{field_name} has {int(np.sum(~np.isfinite(arr)))} NaN/inf entries")
        one = self.raw(self.fitted(), d.X_test[:1])
        if np.shape(one.mean) != (1,):
            raise _Fail(f"a single test row gives mean of shape {np.shape(one.mean)}")
        return ""

    def nonnegative_variances(self) -> str:
        pred = self.raw(self.fitted(), self.data.X_test)
        for field_name in ("aleatoric", "epistemic"):
            arr = np.asarray(getattr(pred, field_name))
            if np.any(arr < 0):
                raise _Fail(f"{field_name} has negative entries (min {arr.min():.3g})")
        return ""

    def constant_aleatoric_flag(self) -> str:
        if not self.cls.constant_aleatoric:
            raise _Skip("the method declares heteroscedastic AU (constant_aleatoric=False)")
        au = np.asarray(self.raw(self.fitted(), self.data.X_test).aleatoric)
        spread = float(np.ptp(au))
        if spread > 1e-9 * max(1.0, float(np.max(np.abs(au)))):
            raise _Fail(f"declares constant AU but AU varies by {spread:.3g} over x")
        return ""

    def determinism(self) -> str:
        d = self.data
        a = self.arrays(self.raw(self.fitted(), d.X_test))
        b = self.arrays(self.raw(self.fitted(), d.X_test))
        for field_name, u, v in zip(("mean", "aleatoric", "epistemic"), a, b, strict=True):
            if u.tobytes() != v.tobytes():
                diff = float(np.max(np.abs(u - v)))
                raise _Fail(f"same random_state, different {field_name} (max diff {diff:.3g})")
        return "bit-identical outputs from two fits with the same random_state"

    def no_input_mutation(self) -> str:
        d = self.data
        X, y, Xt = self.data.X, self.data.y, self.data.X_test
        method = self.new().fit(X, y)
        self.raw(method, Xt)
        for arg, now, before in (("X", X, d.X), ("y", y, d.y), ("X (predict)", Xt, d.X_test)):
            if now.tobytes() != before.tobytes():
                raise _Fail(f"the method changed its input {arg}")
        return ""

    def hyperparameters_unchanged(self) -> str:
        method = self.new()
        before = {k: repr(v) for k, v in method.get_params(deep=False).items()}
        method.fit(self.data.X, self.data.y)
        after = {k: repr(v) for k, v in method.get_params(deep=False).items()}
        changed = sorted(k for k in before if before[k] != after.get(k))
        if changed:
            raise _Fail(f"fit changed hyperparameters {changed}")
        return ""

    def refit_independence(self) -> str:
        d = self.data
        method = self.new().fit(d.X, d.y).fit(d.X_other, d.y_other)
        a = self.arrays(self.raw(method, d.X_test))
        b = self.arrays(self.raw(self.fitted(d.X_other, d.y_other), d.X_test))
        for field_name, u, v in zip(("mean", "aleatoric", "epistemic"), a, b, strict=True):
            if not np.allclose(u, v, rtol=1e-7, atol=1e-9 * max(1.0, float(np.max(np.abs(v))))):
                raise _Fail(
                    f"refit depends on the previous fit: {field_name} differs by "
                    f"{float(np.max(np.abs(u - v))):.3g}"
                )
        return "refit on new data equals a fresh fit"

    def _unit_errors(
        self, base: Prediction, moved: Prediction, scale: float, shift: float
    ) -> dict[str, tuple[float, float]]:
        """Per field: (max error of ``moved`` against ``base`` mapped by y -> scale*y + shift,
        the reference size), both in ``base``'s units (so comparable across scales)."""
        out = {}
        for field_name, unit, loc in (
            ("mean", scale, shift),
            ("aleatoric", scale**2, 0.0),
            ("epistemic", scale**2, 0.0),
        ):
            ref = np.asarray(getattr(base, field_name), dtype=np.float64)
            got = (np.asarray(getattr(moved, field_name), dtype=np.float64) - loc) / unit
            # NaN/inf are output_shapes_finite's finding (one property per check)
            size = max(float(np.nanmax(np.abs(ref), initial=0.0)), 1e-300)
            out[field_name] = (float(np.nanmax(np.abs(got - ref), initial=0.0)), size)
        return out

    def target_units(self) -> str:
        d = self.data
        if self.new().get_params(deep=False).get("standardize_y") is False:
            raise _Skip("standardize_y=False: the method works on raw targets by design")
        base = self.raw(self.fitted(), d.X_test)
        # 1. Scale changes by powers of two: c*y is exact and so are the standardised targets,
        # so the method sees bit for bit the same inputs and, with the same random_state, must
        # give the same standardised outputs; rtol 1e-4 leaves room for nothing but its own use
        # of raw units (an absolute floor or jitter anywhere in 1e-15 ... 1e15 shows as an
        # error of order 1 or far more).
        tol = 1e-4
        for scale in TARGET_SCALES:
            moved = self.raw(self.fitted(y=scale * d.y), d.X_test)
            for field_name, (err, size) in self._unit_errors(base, moved, scale, 0.0).items():
                if err > tol * size:
                    raise _Fail(
                        f"y -> {scale:.3g}*y (2^{int(np.log2(scale))}, exact) does not map "
                        f"{field_name} into target units (relative error {err / size:.3g}, "
                        f"tolerance {tol:g})"
                    )
        # 2. Maps that round y: an affine c*y + b and a large offset. y + b is rounded to
        # ulp(b), so the standardised targets differ by ~1 rounding unit (~1e-16 for the affine
        # map, ~ulp(b)/sd(y) ~ 1e-12 for the offset). A method whose fit depends continuously
        # on the targets still agrees to rtol 1e-4; one with exact ties broken by rounding
        # (greedy tree splits, a random forest's) may give another, equally valid fit. So the
        # tolerance is the larger of rtol 1e-4 and 3x the change caused by another random_state.
        if "random_state" in self.new().get_params(deep=False):
            other = self.new(random_state=self.random_state + 1).fit(d.X, d.y)
            seed = self._unit_errors(base, self.raw(other, d.X_test), 1.0, 0.0)
        else:  # no randomness to compare with (hyperparameter_declarations reports it)
            seed = {k: (0.0, 1.0) for k in ("mean", "aleatoric", "epistemic")}
        offset = TARGET_OFFSET * float(np.std(d.y))
        for scale, shift, label in (
            (*TARGET_AFFINE, f"{TARGET_AFFINE[0]:g}*y{TARGET_AFFINE[1]:+g}"),
            (1.0, offset, f"y{offset:+.3g} (offset {TARGET_OFFSET:g} SD)"),
        ):
            moved = self.raw(self.fitted(y=scale * d.y + shift), d.X_test)
            for field_name, (err, size) in self._unit_errors(base, moved, scale, shift).items():
                allowed = max(tol * size, 3.0 * seed[field_name][0])
                if err > allowed:
                    raise _Fail(
                        f"y -> {label} does not map {field_name} into target units: off by "
                        f"{err:.3g}, tolerance {allowed:.3g} (max of rtol {tol:g} and 3x the "
                        f"change from another random_state)"
                    )
        return (
            f"outputs follow y -> c*y exactly for c = 2^-50 ... 2^50 (rtol {tol:g}), and "
            f"{TARGET_AFFINE[0]:g}*y{TARGET_AFFINE[1]:+g} and an offset of {TARGET_OFFSET:g} SD "
            f"within rounding"
        )

    def bad_input_errors(self) -> str:
        d = self.data
        bad_X = d.X.copy()
        bad_X[3, 1] = np.nan
        bad_y = d.y.copy()
        bad_y[0] = np.inf
        cases: list[tuple[str, Callable[[], Any], str]] = [
            ("NaN in X", lambda: self.new().fit(bad_X, d.y), "X"),
            ("inf in y", lambda: self.new().fit(d.X, bad_y), "y"),
            ("y of the wrong length", lambda: self.new().fit(d.X, d.y[:-1]), "y"),
            ("1-D X", lambda: self.new().fit(d.X[:, 0], d.y), "X"),
            (
                "predict with the wrong number of columns",
                lambda: self.fitted().predict(d.X_test[:, :2]),
                "X",
            ),
        ]
        for what, call, param in cases:
            try:
                call()
            except UdbenchError as err:
                if f"'{param}'" not in str(err):
                    raise _Fail(f"{what}: error does not name {param!r}: {err}") from None
                continue
            except Exception as err:
                raise _Fail(
                    f"{what}: raised {type(err).__name__}, not a UdbenchError: {err}"
                ) from None
            raise _Fail(f"{what}: no error raised")
        return f"{len(cases)} bad inputs rejected with errors naming the parameter"

    def constant_target(self) -> str:
        d = self.data
        wobble = make_rng("conformance", "constant_target").standard_normal(len(d.y))
        worst = 0.0
        for c in CONSTANT_TARGETS:
            # an exact constant, and one with a relative SD of 1e-14 (below float64's
            # resolution of the standardisation, TARGET_SCALE_RTOL = 1e-12)
            for what, target in (
                (f"constant target {c:g}", np.full(len(d.y), c)),
                (f"near-constant target {c:g}(1 + 1e-14 e)", c * (1.0 + 1e-14 * wobble)),
            ):
                try:
                    method = self.new().fit(d.X, target)
                except UdbenchError as err:
                    if "'y'" in str(err):
                        return f"rejected with a clear error: {err}"
                    raise
                pred = self.raw(method, d.X_test)
                self.valid(pred, len(d.X_test), what)
                off = float(np.max(np.abs(np.asarray(pred.mean) - c))) / abs(c)
                spread = float(np.sqrt(np.max(np.asarray(pred.total)))) / abs(c)
                # scale-free: a lost location or scale, or an absolute floor, gives errors of
                # order 1 or far more; a near-zero uncertainty stays far below 1e-3
                if off > 1e-3 or spread > 1e-3:
                    raise _Fail(
                        f"{what}: mean off by {off:.3g}·|c|, predictive SD {spread:.3g}·|c| "
                        f"(tolerance 1e-3·|c| each)"
                    )
                worst = max(worst, off, spread)
        return (
            f"finite outputs at {len(CONSTANT_TARGETS)} scales, mean and predictive SD within "
            f"{worst:.2g}·|c| of the constant"
        )

    def single_feature(self) -> str:
        d = self.data
        method = self.new().fit(d.X[:, :1], d.y)
        self.valid(self.raw(method, d.X_test[:, :1]), len(d.X_test), "single feature")
        return ""

    def constant_feature(self) -> str:
        d = self.data
        n = len(d.y)
        steps = make_rng("conformance", "constant_feature").integers(-20, 21, n)
        sd_y = float(np.std(d.y))
        worst = 0.0
        for c, shift in CONSTANT_FEATURES:
            preds = {}
            for kind, column in (
                ("constant", np.full(n, c)),
                ("constant up to rounding", c + steps * np.spacing(c)),
            ):
                fresh = self.data  # fresh copies per fit (input mutation is another check's)
                method = self.new().fit(np.column_stack([fresh.X, column]), fresh.y)
                for at in (c, c + shift):
                    what = f"a training column {kind} at {c:g}, predicted at {at:g}"
                    pred = self.raw(method, np.column_stack([d.X_test, np.full(len(d.X_test), at)]))
                    self.valid(pred, len(d.X_test), what)
                    # sane (scale-free): a division by a rounding-level SD gives 1e10 and more
                    off = float(np.max(np.abs(np.asarray(pred.mean) - np.mean(d.y)))) / sd_y
                    spread = float(np.sqrt(np.max(np.asarray(pred.total)))) / sd_y
                    if off > 100.0 or spread > 100.0:
                        raise _Fail(
                            f"{what}: mean off the training mean by {off:.3g} SD(y), predictive "
                            f"SD {spread:.3g} SD(y) (tolerance 100 each)"
                        )
                    worst = max(worst, off, spread)
                    preds[kind, at] = self.arrays(pred)
            # the column carries no information: the outputs may not depend on its value
            base = preds["constant", c]
            for key, arrays in preds.items():
                for field_name, u, v in zip(
                    ("mean", "aleatoric", "epistemic"), base, arrays, strict=True
                ):
                    size = max(float(np.max(np.abs(u))), 1e-300)
                    if float(np.max(np.abs(u - v))) > 1e-6 * size:
                        raise _Fail(
                            f"a training column {key[0]} at {c:g}, predicted at {key[1]:g}: "
                            f"{field_name} differs from the exactly constant column predicted at "
                            f"its training value by {float(np.max(np.abs(u - v))):.3g} (a column "
                            f"constant in training carries no information; rtol 1e-6)"
                        )
        return (
            f"{len(CONSTANT_FEATURES)} constant and {len(CONSTANT_FEATURES)} near-constant "
            f"columns ignored; outputs within {worst:.2g} SD(y) of the training mean"
        )


#: The battery's check names, in order.
CHECKS: tuple[str, ...] = (
    "hyperparameter_declarations",
    "clone",
    "error_before_fit",
    "fit_returns_self",
    "output_shapes_finite",
    "nonnegative_variances",
    "constant_aleatoric_flag",
    "determinism",
    "no_input_mutation",
    "hyperparameters_unchanged",
    "refit_independence",
    "target_units",
    "bad_input_errors",
    "constant_target",
    "single_feature",
    "constant_feature",
)


def _input_problem(cls: type[BaseMethod], params: dict[str, Any], random_state: int) -> str:
    """Why the caller's ``params``/``random_state`` are invalid for ``cls`` ("" if they are not).

    Bad inputs are the caller's error, not a dozen failed checks: the class defaults plus the
    caller's values are judged by the method's own rules (``validate_hyperparameters``). If
    the class defaults alone are already rejected, the method is at fault and the battery
    reports it (``hyperparameter_declarations``), so nothing is blamed on the caller.
    """
    try:
        defaults = cls()
        kwargs = dict(params)
        if "random_state" in defaults.get_params(deep=False):
            kwargs["random_state"] = random_state
        try:
            cls(**kwargs).validate_hyperparameters()
        except (UdbenchError, TypeError) as err:
            defaults.validate_hyperparameters()  # raises if the method itself is at fault
            return " ".join(str(err).split())
    except Exception:
        return ""
    return ""


def _run_check(fn: Callable[[], Any], timeout: float) -> tuple[bool, Any, BaseException | None]:
    """Run ``fn`` in a daemon thread for at most ``timeout`` s: (finished, value, error)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:  # reported by the caller
            box["error"] = err

    thread = threading.Thread(target=target, daemon=True, name="udbench-conformance")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return False, None, None
    return True, box.get("value"), box.get("error")


def check_method(
    cls_or_name: str | type[BaseMethod],
    *,
    params: dict[str, Any] | None = None,
    random_state: int = 0,
    checks: tuple[str, ...] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> ConformanceReport:
    """Run the conformance battery on a method class.

    Parameters
    ----------
    cls_or_name : str or type
        A ``BaseMethod`` subclass, a registry name (``"gp"``) or an import path
        (``"package.module:ClassName"``).
    params : dict, optional
        Hyperparameters that override the class's ``smoke_params`` (the default
        configuration of the battery).
    random_state : int, default 0
        The ``random_state`` every fresh method gets.
    checks : tuple of str, optional
        A subset of :data:`CHECKS` to run (default: all).
    timeout : float, default :data:`DEFAULT_TIMEOUT`
        Wall-clock limit of each check in seconds. A check over it is failed
        (``"timeout: ..."``) and the remaining checks are skipped (its thread may still be
        running the method).

    Returns
    -------
    ConformanceReport
        Every check as passed, failed (with the reason, or the exception a check raised) or
        skipped (with the reason).

    Raises
    ------
    UdbenchError
        Unknown method or check name; ``random_state`` or an override the method rejects
        (its own ``validate_hyperparameters``); ``timeout`` not a positive number.
    """
    if isinstance(cls_or_name, str):
        label = cls_or_name
        cls = get_method_class(cls_or_name)
    else:
        if not (isinstance(cls_or_name, type) and issubclass(cls_or_name, BaseMethod)):
            raise UdbenchError(
                f"check_method: parameter 'cls_or_name' must be a BaseMethod subclass or a "
                f"method name; got {cls_or_name!r}"
            )
        cls = cls_or_name
        label = f"{cls.__module__}:{cls.__qualname__}"
    selected = CHECKS if checks is None else tuple(checks)
    for name in selected:
        if name not in CHECKS:
            raise UdbenchError(
                f"check_method: parameter 'checks' must contain names from {list(CHECKS)}; "
                f"got {name!r}"
            )
    # a number of seconds the thread timers take (1e308 overflowed them: OverflowError)
    check_timeout("check_method", "timeout", timeout)
    if isinstance(random_state, bool) or not isinstance(random_state, int) or random_state < 0:
        raise param_error("check_method", "random_state", "be an integer >= 0", random_state)
    used = {**cls.smoke_params, **(params or {})}
    battery = _Battery(cls, used, random_state)
    problem = _input_problem(cls, params or {}, random_state)
    if problem:
        raise UdbenchError(f"check_method: {problem}")
    report = ConformanceReport(method=label, params=used)
    stopped: str | None = None
    for name in selected:
        if stopped is not None:
            report.results.append(CheckResult(name, SKIPPED, stopped))
            continue
        start = time.perf_counter()
        finished, value, error = _run_check(getattr(battery, name), timeout)
        if not finished:
            status = FAILED
            message = f"timeout: the check did not finish within {timeout:g} s"
            stopped = f"not run: check {name!r} timed out (the method may still be running)"
        elif error is None:
            status, message = PASSED, value or ""
        elif isinstance(error, _Skip):
            status, message = SKIPPED, str(error)
        elif isinstance(error, _Fail):
            status, message = FAILED, str(error)
        elif isinstance(error, Exception):  # a crashing check is a failure, with where it crashed
            where = traceback.extract_tb(error.__traceback__)[-1]
            status = FAILED
            message = (
                f"raised {type(error).__name__}: {error} (at {where.name}, line {where.lineno})"
            )
        else:  # KeyboardInterrupt / SystemExit inside the method stop the battery
            raise error
        report.results.append(CheckResult(name, status, message, time.perf_counter() - start))
    return report


def check_behaviour(
    cls_or_name: str | type[BaseMethod],
    *,
    params: dict[str, Any] | None = None,
    random_state: int = 0,
    checks: tuple[str, ...] | None = None,
) -> BehaviourReport:
    """Run the behaviour battery (semantic checks of AU and EU) on a method class.

    The checks, their problems and thresholds are described in
    :mod:`udbench.methods._behaviour` and docs/methods.md ("The behaviour battery"); each
    result carries the measured value, the threshold and passed/failed/skipped.

    Parameters
    ----------
    cls_or_name : str or type
        A ``BaseMethod`` subclass, a registry name or an import path ``"module:Class"``.
    params : dict, optional
        Overrides of the class's ``smoke_params``.
    random_state : int, default 0
        The ``random_state`` of every fit.
    checks : tuple of str, optional
        A subset of :data:`BEHAVIOUR_CHECKS` (default: all, in order).

    Returns
    -------
    BehaviourReport

    Raises
    ------
    UdbenchError
        Unknown method or check name; ``random_state`` or an override the method rejects.
    """
    if isinstance(cls_or_name, str):
        label = cls_or_name
        cls = get_method_class(cls_or_name)
    elif isinstance(cls_or_name, type) and issubclass(cls_or_name, BaseMethod):
        cls = cls_or_name
        label = f"{cls.__module__}:{cls.__qualname__}"
    else:
        raise param_error(
            "check_behaviour",
            "cls_or_name",
            "be a BaseMethod subclass or a method name",
            cls_or_name,
        )
    for name in checks or ():
        if name not in BEHAVIOUR_CHECKS:
            raise param_error(
                "check_behaviour", "checks", f"contain names from {list(BEHAVIOUR_CHECKS)}", name
            )
    if isinstance(random_state, bool) or not isinstance(random_state, int) or random_state < 0:
        raise param_error("check_behaviour", "random_state", "be an integer >= 0", random_state)
    problem = _input_problem(cls, params or {}, random_state)
    if problem:
        raise UdbenchError(f"check_behaviour: {problem}")
    used = {**cls.smoke_params, **(params or {})}
    return run_behaviour(
        cls,
        label=label,
        params=used,
        random_state=random_state,
        checks=None if checks is None else tuple(checks),
    )


@dataclass(frozen=True)
class ConformanceCheck:
    """One check of the battery as a callable, the ``check`` of :func:`parametrize_with_checks`.

    Calling it on a method runs :func:`check_method` with that single check and turns the
    outcome into pytest's: a pass returns the :class:`CheckResult`, a failure raises
    ``AssertionError`` with the check's reason, a skip calls ``pytest.skip`` with its reason.

    Attributes
    ----------
    name : str
        The check, one of :data:`CHECKS`.
    params : dict
        Overrides of the method's ``smoke_params`` (see :func:`check_method`).
    random_state : int
        The ``random_state`` of every fit.
    timeout : float
        Wall-clock limit of the check in seconds.
    """

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    random_state: int = 0
    timeout: float = DEFAULT_TIMEOUT

    def __call__(self, method: str | type[BaseMethod]) -> CheckResult:
        """Run the check on ``method`` (a registered name, an import path or a class).

        Raises
        ------
        AssertionError
            The check failed (the message names the method, the check and the reason).
        pytest.skip.Exception
            The check was skipped (the reason is the skip's).
        UdbenchError
            Invalid method or options (see :func:`check_method`).
        """
        report = check_method(
            method,
            params=self.params,
            random_state=self.random_state,
            checks=(self.name,),
            timeout=self.timeout,
        )
        (result,) = report.results
        if result.status == FAILED:
            raise AssertionError(f"{report.method}: check {self.name!r} failed: {result.message}")
        if result.status == SKIPPED:
            import pytest  # only reached from a check run by pytest

            pytest.skip(f"{report.method}: {self.name}: {result.message}")
        return result


def _method_label(method: str | type[BaseMethod]) -> str:
    if isinstance(method, str):
        return method.strip()
    return str(getattr(method, "name", "") or "") or method.__qualname__


def parametrize_with_checks(
    methods: Iterable[str | type[BaseMethod]],
    *,
    checks: Iterable[str] | None = None,
    params: dict[str, Any] | None = None,
    random_state: int = 0,
    timeout: float = DEFAULT_TIMEOUT,
) -> Any:
    """A pytest decorator running the conformance battery, one test per (method, check).

    The counterpart of scikit-learn's ``parametrize_with_checks``::

        from udbench.methods.conformance import parametrize_with_checks
        from mypkg.mymod import MyMethod

        @parametrize_with_checks([MyMethod, "gp"])
        def test_udbench_conformance(method, check):
            check(method)

    Each test id is ``<method>-<check>`` (``my-method-determinism``), so ``pytest -k`` selects
    one method or one check; a failed check fails its test with the reason, a skipped check
    (e.g. ``constant_aleatoric_flag`` for a heteroscedastic method) is reported as skipped
    with the reason. Every check builds fresh methods from the class's ``smoke_params``.
    pytest is imported when this function is called, not when udbench is imported.

    Parameters
    ----------
    methods : iterable of str or type
        Registered names, import paths ``"package.module:ClassName"`` or ``BaseMethod``
        subclasses. Each is resolved now (at collection), so an unknown name is an error
        before any test runs.
    checks : iterable of str, optional
        A subset of :data:`CHECKS` (default: all, in battery order).
    params : dict, optional
        Overrides of every method's ``smoke_params`` (a key the method does not take is an
        error when its checks run).
    random_state : int, default 0
        The ``random_state`` of every fit.
    timeout : float, default :data:`DEFAULT_TIMEOUT`
        Wall-clock limit of each check in seconds.

    Returns
    -------
    pytest.MarkDecorator
        ``pytest.mark.parametrize(("method", "check"), ...)``: ``method`` is what was given
        (name, path or class), ``check`` a :class:`ConformanceCheck`.

    Raises
    ------
    ImportError
        pytest is not installed.
    UdbenchError
        An unknown method or check, or a method entry that is not a name, path or
        ``BaseMethod`` subclass.
    """
    try:
        import pytest
    except ImportError as err:  # pragma: no cover - pytest is a test dependency
        raise ImportError(
            "udbench.methods.conformance.parametrize_with_checks needs pytest; "
            "install it (pip install pytest) or call check_method instead"
        ) from err
    selected = CHECKS if checks is None else tuple(checks)
    for name in selected:
        if name not in CHECKS:
            raise param_error(
                "parametrize_with_checks", "checks", f"contain names from {list(CHECKS)}", name
            )
    entries = list(methods)
    if not entries:
        raise param_error("parametrize_with_checks", "methods", "name at least one method", [])
    cases = []
    for method in entries:
        if isinstance(method, str):
            get_method_class(method)  # unknown or unimportable: an error at collection
        elif not (inspect.isclass(method) and issubclass(method, BaseMethod)):
            raise param_error(
                "parametrize_with_checks",
                "methods",
                "contain method names, import paths or BaseMethod subclasses",
                method,
            )
        label = _method_label(method)
        for name in selected:
            check = ConformanceCheck(name, dict(params or {}), random_state, timeout)
            cases.append(pytest.param(method, check, id=f"{label}-{name}"))
    return pytest.mark.parametrize(("method", "check"), cases)
