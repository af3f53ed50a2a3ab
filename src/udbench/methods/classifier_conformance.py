"""The conformance battery of classifiers: the classifier contract on small synthetic data.

Each check reports passed, failed (with the reason) or skipped, in the report type of the
regression battery (:class:`udbench.methods.conformance.ConformanceReport`), so a pass cannot
hide checks that did not run. Every check builds a fresh classifier from its class's
``smoke_params`` (plus overrides) and fits it on fixed synthetic data (three classes from a
softmax of two linear functions at temperature 0.5 on 60 rows in [0, 1]³, stream
``("classifier-conformance", "data")``).

Checks (in order): ``hyperparameter_declarations``, ``clone``, ``error_before_fit``,
``fit_returns_self``, ``output_shapes``, ``probabilities_on_simplex``,
``nonnegative_uncertainty``, ``both_losses``, ``determinism``, ``no_input_mutation``,
``two_classes``, ``absent_class``, ``bad_labels``, ``wrong_feature_count``,
``constant_aleatoric_flag``.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import softmax
from sklearn.base import clone

from udbench._seeding import make_rng
from udbench._validation import UdbenchError
from udbench.methods.base import check_hyperparameter
from udbench.methods.classification import PROB_ATOL, BaseClassifier, ClassPrediction
from udbench.methods.classifiers import classifier_class_of
from udbench.methods.conformance import FAILED, PASSED, SKIPPED, CheckResult, ConformanceReport

__all__ = ["CLASSIFIER_CHECKS", "check_classifier"]


class _Skip(Exception):
    pass


class _Fail(AssertionError):
    pass


def _data(n: int, n_classes: int, seed_part: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = make_rng("classifier-conformance", "data", seed_part, n, n_classes)
    X = rng.uniform(size=(n, 3))
    X_test = rng.uniform(size=(15, 3))
    W = np.array([[3.0, -2.0, 0.0], [-1.0, 2.5, 1.0], [0.0, 0.0, -2.0]])[:n_classes]
    p = softmax((X @ W.T) / 0.5, axis=1)
    y = (rng.random(n)[:, None] >= np.cumsum(p, axis=1)).sum(axis=1)
    return X, np.minimum(y, n_classes - 1).astype(np.int64), X_test


class _Battery:
    def __init__(self, cls: type[BaseClassifier], params: dict[str, Any], random_state: int):
        self.cls = cls
        self.params = params
        self.random_state = random_state
        self.X, self.y, self.X_test = _data(60, 3, "main")

    def new(self, **extra: Any) -> BaseClassifier:
        return self.cls(**{**self.params, "random_state": self.random_state, **extra})

    def fitted(self, **extra: Any) -> BaseClassifier:
        return self.new(**extra).fit(self.X.copy(), self.y.copy(), n_classes=3)

    def pred(self, method: BaseClassifier, loss: str = "multiclass_log") -> ClassPrediction:
        return method._predict_unchecked(self.X_test.copy(), loss)

    # -- checks -----------------------------------------------------------------------
    def hyperparameter_declarations(self) -> str:
        cls = self.cls
        names = set(cls().get_params(deep=False))
        if "random_state" not in names:
            raise _Fail("the constructor has no 'random_state' keyword")
        for decl_name, decl in (
            ("search_space", cls.search_space),
            ("smoke_params", cls.smoke_params),
            ("param_constraints", cls.param_constraints),
        ):
            missing = sorted(set(decl) - names)
            if missing:
                raise _Fail(f"{decl_name} names {missing}, not constructor keywords")
        cls().validate_hyperparameters()
        self.new().validate_hyperparameters()
        for key, spec in cls.search_space.items():
            rule = cls.param_constraints.get(key)
            for value in spec.get("choices", [spec.get("low"), spec.get("high")]):
                if rule is not None and value is not None:
                    check_hyperparameter(cls.__name__, f"{key} (search_space)", value, rule)
        if cls.task_type != "classification":
            raise _Fail(f"task_type is {cls.task_type!r}, not 'classification'")
        return f"{len(names)} hyperparameters"

    def clone(self) -> str:
        method = self.new()
        a, b = method.get_params(deep=False), clone(method).get_params(deep=False)
        if a.keys() != b.keys() or any(repr(a[k]) != repr(b[k]) for k in a):
            raise _Fail("clone() changed hyperparameters")
        return ""

    def error_before_fit(self) -> str:
        try:
            self.new().predict(self.X_test)
        except UdbenchError as err:
            if "fit" not in str(err):
                raise _Fail(f"error before fit does not mention fit: {err}") from None
            return ""
        raise _Fail("predict before fit did not raise a UdbenchError")

    def fit_returns_self(self) -> str:
        method = self.new()
        if method.fit(self.X, self.y, n_classes=3) is not method:
            raise _Fail("fit did not return self")
        return ""

    def output_shapes(self) -> str:
        pred = self.pred(self.fitted())
        m = self.X_test.shape[0]
        for name, arr, shape in (
            ("probs", pred.probs, (m, 3)),
            ("aleatoric", pred.aleatoric, (m,)),
            ("epistemic", pred.epistemic, (m,)),
        ):
            arr = np.asarray(arr)
            if arr.shape != shape:
                raise _Fail(f"{name} has shape {arr.shape}, expected {shape}")
            if not np.all(np.isfinite(arr)):
                raise _Fail(f"{name} has NaN/inf entries")
        return ""

    def probabilities_on_simplex(self) -> str:
        p = np.asarray(self.pred(self.fitted()).probs)
        if p.min() < 0:
            raise _Fail(f"negative probability {p.min():.3g}")
        dev = float(np.max(np.abs(p.sum(axis=1) - 1.0)))
        if dev > PROB_ATOL:
            raise _Fail(f"rows sum to 1 only within {dev:.3g} (atol {PROB_ATOL:g})")
        return f"largest row-sum deviation {dev:.1e}"

    def nonnegative_uncertainty(self) -> str:
        pred = self.pred(self.fitted())
        for name in ("aleatoric", "epistemic"):
            arr = np.asarray(getattr(pred, name))
            if np.any(arr < 0):
                raise _Fail(f"{name} has negative entries (min {arr.min():.3g})")
        return ""

    def both_losses(self) -> str:
        method = self.fitted()
        log, brier = self.pred(method, "multiclass_log"), self.pred(method, "brier")
        if not np.allclose(log.probs, brier.probs, rtol=0, atol=1e-12):
            raise _Fail("π̂ depends on the loss the uncertainties are stated in")
        K = 3
        if np.any(log.aleatoric > np.log(K) + 1e-9) or np.any(brier.aleatoric > 1 - 1 / K + 1e-9):
            raise _Fail("AU above the entropy / Gini impurity of the uniform distribution")
        total_log = log.aleatoric + log.epistemic
        ent = -(log.probs * np.log(np.clip(log.probs, 1e-300, None))).sum(axis=1)
        if np.any(total_log > ent + 1e-6):
            raise _Fail("log-loss AU + EU exceeds the entropy of π̂ (EU is not I(Y; F))")
        return ""

    def determinism(self) -> str:
        a, b = self.pred(self.fitted()), self.pred(self.fitted())
        for name in ("probs", "aleatoric", "epistemic"):
            if np.asarray(getattr(a, name)).tobytes() != np.asarray(getattr(b, name)).tobytes():
                raise _Fail(f"same random_state, different {name}")
        return "bit-identical outputs from two fits"

    def no_input_mutation(self) -> str:
        X, y, Xt = self.X.copy(), self.y.copy(), self.X_test.copy()
        method = self.new().fit(X, y, n_classes=3)
        method._predict_unchecked(Xt, "multiclass_log")
        for name, now, before in (("X", X, self.X), ("y", y, self.y), ("X_test", Xt, self.X_test)):
            if now.tobytes() != before.tobytes():
                raise _Fail(f"the method changed its input {name}")
        return ""

    def two_classes(self) -> str:
        X, y, Xt = _data(60, 2, "binary")
        pred = self.new().fit(X, y, n_classes=2).predict(Xt)
        if pred.probs.shape != (Xt.shape[0], 2):
            raise _Fail(f"K = 2 gives probs of shape {pred.probs.shape}")
        return ""

    def absent_class(self) -> str:
        keep = self.y != 2
        method = self.new().fit(self.X[keep], self.y[keep], n_classes=3)
        pred = method.predict(self.X_test)
        if pred.probs.shape != (self.X_test.shape[0], 3) or not np.all(pred.probs > 0):
            raise _Fail("a class absent from training must get a column with π̂ > 0")
        return f"absent class gets π̂ ≤ {float(pred.probs[:, 2].max()):.3g}"

    def bad_labels(self) -> str:
        bad: list[tuple[str, Any, dict[str, Any]]] = [
            ("label = K", np.where(self.y == 0, 3, self.y), {"n_classes": 3}),
            ("negative label", np.where(self.y == 0, -1, self.y), {"n_classes": 3}),
            ("non-integer label", self.y + 0.5, {"n_classes": 3}),
            ("K = 1", self.y * 0, {"n_classes": 1}),
        ]
        for what, y, kw in bad:
            try:
                self.new().fit(self.X, y, **kw)
            except UdbenchError as err:
                if "\n" in str(err):
                    raise _Fail(f"{what}: the error is not one line") from None
                continue
            raise _Fail(f"{what}: fit did not raise a UdbenchError")
        return f"{len(bad)} bad inputs rejected"

    def wrong_feature_count(self) -> str:
        method = self.fitted()
        try:
            method.predict(self.X_test[:, :2])
        except UdbenchError:
            return ""
        raise _Fail("predict with too few columns did not raise")

    def constant_aleatoric_flag(self) -> str:
        if not self.cls.constant_aleatoric:
            raise _Skip("the method declares heteroscedastic AU")
        au = np.asarray(self.pred(self.fitted()).aleatoric)
        if float(np.ptp(au)) > 1e-9:
            raise _Fail("declares constant AU but AU varies over x")
        return ""


#: The checks, in order.
CLASSIFIER_CHECKS: tuple[str, ...] = (
    "hyperparameter_declarations",
    "clone",
    "error_before_fit",
    "fit_returns_self",
    "output_shapes",
    "probabilities_on_simplex",
    "nonnegative_uncertainty",
    "both_losses",
    "determinism",
    "no_input_mutation",
    "two_classes",
    "absent_class",
    "bad_labels",
    "wrong_feature_count",
    "constant_aleatoric_flag",
)


def check_classifier(
    cls_or_name: str | type[BaseClassifier],
    *,
    params: dict[str, Any] | None = None,
    random_state: int = 0,
    checks: tuple[str, ...] | None = None,
) -> ConformanceReport:
    """Run the classifier battery (module docstring) on a classifier class.

    Parameters
    ----------
    cls_or_name : str or type
        A :class:`~udbench.methods.classification.BaseClassifier` subclass or a name of
        :data:`udbench.methods.classifiers.CLASSIFIERS`.
    params : dict, optional
        Overrides of the class's ``smoke_params``.
    random_state : int, default 0
    checks : tuple of str, optional
        A subset of :data:`CLASSIFIER_CHECKS`.

    Returns
    -------
    ConformanceReport

    Raises
    ------
    UdbenchError
        Unknown classifier or check name.
    """
    cls, label = classifier_class_of(cls_or_name, "check_classifier")
    selected = CLASSIFIER_CHECKS if checks is None else tuple(checks)
    for name in selected:
        if name not in CLASSIFIER_CHECKS:
            raise UdbenchError(
                f"check_classifier: parameter 'checks' must contain names from "
                f"{list(CLASSIFIER_CHECKS)}; got {name!r}"
            )
    used = {**cls.smoke_params, **(params or {})}
    battery = _Battery(cls, used, random_state)
    report = ConformanceReport(method=label, params=used)
    for name in selected:
        fn: Callable[[], Any] = getattr(battery, name)
        start = time.perf_counter()
        try:
            status, message = PASSED, fn() or ""
        except _Skip as err:
            status, message = SKIPPED, str(err)
        except _Fail as err:
            status, message = FAILED, str(err)
        except Exception as err:  # a crashing check is a failure, with where it crashed
            where = traceback.extract_tb(err.__traceback__)[-1]
            status = FAILED
            message = f"raised {type(err).__name__}: {err} (at {where.name}, line {where.lineno})"
        report.results.append(CheckResult(name, status, message, time.perf_counter() - start))
    return report
