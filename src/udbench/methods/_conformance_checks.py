"""The checks of the regression conformance battery.

One method of ``_Battery`` per check, named as in :data:`CHECKS`; each builds a fresh method
from the class's smoke configuration on small synthetic data derived from fixed seed
components (:func:`udbench._seeding.make_rng`), returns a message on a pass and raises
``_Skip``/``_Fail`` otherwise. The runner (:func:`udbench.methods.conformance.check_method`),
its time limit and the reports live in :mod:`udbench.methods.conformance`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import clone

from udbench._seeding import make_rng
from udbench._validation import UdbenchError
from udbench.methods.base import BaseMethod, Prediction, check_hyperparameter

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
