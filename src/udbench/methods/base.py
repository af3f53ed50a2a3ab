"""The method contract: what every UQ method in udbench is (DESIGN.md, SPEC §8).

A method is a scikit-learn-style estimator. Its constructor only stores hyperparameters,
unchanged; ``fit(X, y)`` returns ``self`` and leaves fitted state in attributes ending in
``_``; ``predict(X)`` returns a :class:`Prediction` with a point prediction and aleatoric
(AU) and epistemic (EU) variance estimates, in target units.

Subclasses implement ``_fit(X, y)`` and ``_predict(X)`` on *standardised* targets;
:class:`BaseMethod` validates inputs and hyperparameters, standardises ``y`` before ``_fit``
(:func:`standardise_targets`: mean 0, SD 1, with a scale-free rule for constant targets,
so outputs are equivariant under ``y -> c*y + b``) and maps ``_predict``'s output back
(mean ``m_y + s_y * mu``, variances ``s_y**2 * v``), then checks the output (shapes,
finiteness, non-negative variances).

Inputs have one home too: :func:`standardise_inputs` computes every training column's mean
and SD once, in ``fit`` (``input_loc_``, ``input_scale_``), with a relative floor. A column
*constant in relative terms* (SD at most ``INPUT_SCALE_RTOL * max|x|``, e.g. 3.7 everywhere up
to rounding) carries no information about how y depends on it, so it is handled explicitly for
every method (``input_constant_``): ``_fit`` and every ``_predict`` see it as exactly 0 (its loc
0, its scale 1), so every method predicts as if the column were absent — as a tree, which
cannot split on it, already does, and as scikit-learn's ``VarianceThreshold`` drops it —
instead of dividing by a rounding-level SD. Methods that standardise their inputs read
``input_loc_`` and ``input_scale_`` (``x̃ = (x - loc) / scale``).

Hyperparameter declarations
---------------------------
``search_space`` (the tuning ranges, SPEC §9) and ``param_constraints`` (the values a
method accepts at all) use the same small dict format, one entry per constructor keyword::

    {"type": "float", "low": 1e-4, "high": 1e-1, "log": True}   # bounds inclusive
    {"type": "float", "low": 0.0, "low_open": True}              # > 0, no upper bound
    {"type": "int", "low": 1}
    {"type": "bool"}
    {"type": "categorical", "choices": ["a", "b"]}
    {"type": "float", "low": 0.0, "none_ok": True}               # None also allowed
    {"type": "float", "low": 0.0, "low_open": True, "also": ["marglik"]}  # or these values
    {"type": "float", "low": 0.0, "high": 1.0, "when": {"kind": "b"}}  # tuned only if kind == "b"

``validate_hyperparameters`` checks the current values against ``param_constraints``; a
keyword declared only in ``search_space`` is checked for its type alone (a tuning range is
not a validity range: a smoke configuration may use fewer members than the tuned default).
``when`` (search spaces only) makes an entry conditional on one declared before it
(:mod:`udbench.tuning.space`).

Randomness
----------
Every method takes ``random_state`` (int, default 0; ``None`` means 0, so udbench is
deterministic by default). Subclasses draw every seed from :meth:`BaseMethod._seed` /
:meth:`BaseMethod._rng`, which derive independent streams per named component
(:func:`udbench._seeding.derive_seed`), so the same ``random_state`` gives the same bytes.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator

from udbench._seeding import derive_seed
from udbench._validation import MAX_ABS_INPUT, UdbenchError, check_array, param_error

__all__ = [
    "INPUT_SCALE_RTOL",
    "TARGET_SCALE_RTOL",
    "BaseMethod",
    "MethodOutputError",
    "NotFittedError",
    "Prediction",
    "check_hyperparameter",
    "invalid_hyperparameter_values",
    "standardise_inputs",
    "standardise_targets",
]

_TYPES = ("float", "int", "bool", "categorical", "str")


class NotFittedError(UdbenchError, AttributeError):
    """``predict`` was called before ``fit``."""


class MethodOutputError(UdbenchError):
    """A method returned an invalid prediction (wrong shape, NaN/inf, negative variance)."""


@dataclass(frozen=True)
class Prediction:
    """A method's output at n evaluation points.

    Attributes
    ----------
    mean : ndarray, shape (n,)
        Point prediction â(x), target units.
    aleatoric : ndarray, shape (n,)
        Aleatoric-uncertainty estimate (a variance, target units squared), >= 0.
    epistemic : ndarray, shape (n,)
        Epistemic-uncertainty estimate (a variance, target units squared), >= 0.
    """

    mean: np.ndarray
    aleatoric: np.ndarray
    epistemic: np.ndarray

    @property
    def total(self) -> np.ndarray:
        """Total predictive variance AU + EU, shape (n,)."""
        return self.aleatoric + self.epistemic

    def validate(self, n: int | None = None, component: str = "Prediction") -> Prediction:
        """Check shapes (n,), finiteness and non-negative variances; return ``self``.

        Raises
        ------
        MethodOutputError
            Naming the offending field and what it held.
        """
        size = np.shape(self.mean)[0] if np.ndim(self.mean) == 1 else None
        want = (n if n is not None else size,)
        try:
            check_array(component, "mean", self.mean, shape=want)
            check_array(component, "aleatoric", self.aleatoric, shape=want, nonnegative=True)
            check_array(component, "epistemic", self.epistemic, shape=want, nonnegative=True)
        except UdbenchError as err:
            raise MethodOutputError(str(err)) from None
        return self

    def rescale(self, loc: float, scale: float) -> Prediction:
        """Map a prediction on standardised targets back: mean·scale + loc, variances·scale²."""
        s2 = scale * scale
        return Prediction(
            mean=np.asarray(self.mean, dtype=np.float64) * scale + loc,
            aleatoric=np.asarray(self.aleatoric, dtype=np.float64) * s2,
            epistemic=np.asarray(self.epistemic, dtype=np.float64) * s2,
        )


def _describe(spec: dict[str, Any]) -> str:
    kind = spec.get("type", "float")
    if kind == "categorical":
        rule = f"be one of {list(spec['choices'])}"
    elif kind in ("float", "int"):
        parts = []
        if spec.get("low") is not None:
            parts.append((">" if spec.get("low_open") else ">=") + f" {spec['low']}")
        if spec.get("high") is not None:
            parts.append(("<" if spec.get("high_open") else "<=") + f" {spec['high']}")
        noun = "an integer" if kind == "int" else "a real number"
        rule = f"be {noun}" + (" " + " and ".join(parts) if parts else "")
    elif kind == "bool":
        rule = "be True or False"
    else:
        rule = "be a string"
    if spec.get("also"):
        rule += f" or one of {list(spec['also'])}"
    if spec.get("none_ok"):
        rule += " (or None)"
    return rule


def check_hyperparameter(component: str, name: str, value: Any, spec: dict[str, Any]) -> None:
    """Check one hyperparameter value against a declaration (format: module docstring).

    Parameters
    ----------
    component : str
        Method class name, for the message.
    name : str
        Hyperparameter name.
    value : Any
        The value to check.
    spec : dict
        ``{"type": ..., "low": ..., "high": ..., "low_open": ..., "high_open": ...,
        "choices": ..., "none_ok": ..., "also": ...}``; missing keys mean "no
        restriction"; ``also`` lists exact values accepted besides the rule (e.g. the
        string ``"marglik"`` beside a positive float).

    Raises
    ------
    UdbenchError
        ``"<component>: parameter '<name>' must <rule>; got <value>"``.
    """
    kind = spec.get("type", "float")
    if kind not in _TYPES:
        raise param_error(component, f"{name} (declaration)", f"have type in {_TYPES}", kind)
    if value is None and spec.get("none_ok"):
        return
    if any(value == c and type(value) is type(c) for c in spec.get("also", ())):
        return
    rule = _describe(spec)
    if kind == "categorical":
        if not any(value == c and type(value) is type(c) for c in spec["choices"]):
            raise param_error(component, name, rule, value)
        return
    if kind == "bool":
        if not isinstance(value, bool | np.bool_):
            raise param_error(component, name, rule, value)
        return
    if kind == "str":
        if not isinstance(value, str):
            raise param_error(component, name, rule, value)
        return
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise param_error(component, name, rule, value)
    if kind == "int" and not isinstance(value, numbers.Integral):
        raise param_error(component, name, rule, value)
    v = float(value)
    if not np.isfinite(v):
        raise param_error(component, name, rule, value)
    low, high = spec.get("low"), spec.get("high")
    if low is not None and (v <= low if spec.get("low_open") else v < low):
        raise param_error(component, name, rule, value)
    if high is not None and (v >= high if spec.get("high_open") else v > high):
        raise param_error(component, name, rule, value)


def invalid_hyperparameter_values(spec: dict[str, Any]) -> list[Any]:
    """Values that break a hyperparameter declaration, one per rule it states.

    The probe values of the parameter-validation check (as scikit-learn's
    ``check_param_validation``, tests/methods/test_param_validation.py): a value of the wrong
    type; for numbers a non-integer (``int``), NaN, and the first value past each bound (the
    bound itself where it is open, ``low - 1`` / ``high + 1`` where it is closed); for
    categories a name not among the choices; ``None`` where it is not allowed. Each is
    rejected by :func:`check_hyperparameter` with its one message template.

    Parameters
    ----------
    spec : dict
        A declaration (format: module docstring).

    Returns
    -------
    list
        The probe values (at least one).
    """
    kind = spec.get("type", "float")
    bad: list[Any] = [] if spec.get("none_ok") else [None]
    if kind == "categorical":
        return [*bad, "<not-a-choice>", 3.5]
    if kind == "bool":
        return [*bad, "yes", 1]
    if kind == "str":
        return [*bad, 3]
    bad += ["1", True, float("nan")]
    if kind == "int":
        bad.append(1.5)
    low, high = spec.get("low"), spec.get("high")
    if low is not None:
        bad.append(low if spec.get("low_open") else low - 1)
    if high is not None:
        bad.append(high if spec.get("high_open") else high + 1)
    return bad


#: Relative SD floor of the target standardisation: the scale is
#: ``max(sd(y), TARGET_SCALE_RTOL * max|y|)`` (see :func:`standardise_targets`).
TARGET_SCALE_RTOL = 1e-12


def standardise_targets(y: np.ndarray) -> tuple[float, float, np.ndarray]:
    """Standardise targets the same way at every scale: return ``(loc, scale, z)``.

    ``z = (y - loc) / scale`` with ``loc = mean(y)`` and
    ``scale = max(sd(y), TARGET_SCALE_RTOL * max|y|)`` (population SD; 1e-12), computed
    on ``y / max|y|`` so that neither the sum of squares nor the division over- or
    underflows. Both terms of ``scale`` are proportional to ``|c|`` under
    ``y -> c*y + b``, so ``loc -> c*loc + b``, ``scale -> |c|*scale`` and ``z`` is
    unchanged up to rounding, at every scale whose values stay normal floating-point
    numbers (about 1e-290 ... 1e290 for O(1) data); the rounding of ``y + b`` itself
    leaves ``z`` exact only to about ``ulp(b) / sd(y)``.

    **Constant targets.** The floor ``1e-12 * max|y|`` is what float64 still resolves
    (a few thousand rounding units of the values); it is scale-free and continuous (no
    cliff at a threshold). A target whose SD is below it is *constant in relative terms*:
    it is centred and divided by the floor, so the method sees ``|z| <= 1`` (exactly 0 for
    an exactly constant ``y``) and its outputs, mapped back, sit within ~1e-12·max|y| of
    the constant with variances of order (1e-12·max|y|)². Outputs remain equivariant
    under ``y -> c*y`` but not under a shift, which changes ``max|y|`` (a constant has no
    scale of its own). All-zero targets get ``scale = 1``.

    Parameters
    ----------
    y : ndarray, shape (n,)
        Finite targets (checked by the caller).

    Returns
    -------
    loc : float
        Target location (mean), target units.
    scale : float
        Target scale (> 0), target units.
    z : ndarray, shape (n,)
        The standardised targets (a new array).
    """
    y = np.asarray(y, dtype=np.float64)
    top = float(np.max(np.abs(y))) if y.size else 0.0
    if top == 0.0:
        return 0.0, 1.0, np.zeros_like(y)
    u = y / top  # in [-1, 1]: no overflow in the sum of squares at any scale
    mu = float(np.mean(u))
    sd = max(float(np.std(u)), TARGET_SCALE_RTOL)
    return top * mu, top * sd, (u - mu) / sd


#: Relative SD floor of the input standardisation: a training column with
#: ``sd <= INPUT_SCALE_RTOL * max|x|`` is constant in relative terms
#: (see :func:`standardise_inputs`).
INPUT_SCALE_RTOL = 1e-12


def standardise_inputs(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-column location and scale of training inputs, and which columns are constant.

    ``loc = mean(x)`` and ``scale = sd(x)`` (population SD) per column, exactly NumPy's
    ``X.mean(axis=0)`` and ``X.std(axis=0)`` (recomputed on ``X / max|x|`` only where those
    overflow, for |x| near the float64 limit). A column is **constant in relative terms** when
    ``sd <= INPUT_SCALE_RTOL * max|x|`` (1e-12: a few thousand rounding units of its values;
    the same rule as the targets', :data:`TARGET_SCALE_RTOL`; includes sd = 0 and an all-zero
    column). Its spread is rounding, not information: dividing by it would turn rounding into
    a feature of unit SD and a new value into one ~1e13 SDs away (measured before this rule:
    the GP's median EU 4.8e24 at 3.8 for a column 3.7 ± rounding). Such a column gets
    ``loc = 0`` and ``scale = 1``, and :class:`BaseMethod` replaces it by 0 at fit and at
    every prediction (:meth:`BaseMethod._inputs`), so no method's output depends on it.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Finite training inputs (checked by the caller), input units.

    Returns
    -------
    loc : ndarray, shape (d,)
        Column means, input units (0 for a constant column).
    scale : ndarray, shape (d,)
        Column SDs (> 0), input units (1 for a constant column).
    constant : ndarray of bool, shape (d,)
        True for a column constant in relative terms.
    """
    X = np.asarray(X, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        loc = X.mean(axis=0)
        sd = X.std(axis=0)
    top = np.max(np.abs(X), axis=0) if X.shape[0] else np.zeros(X.shape[1])
    bad = ~(np.isfinite(loc) & np.isfinite(sd))
    if bad.any():  # the sums overflowed: the same statistics on X / max|x| (in [-1, 1])
        u = X[:, bad] / top[bad]
        loc[bad] = top[bad] * u.mean(axis=0)
        sd[bad] = top[bad] * u.std(axis=0)
    constant = sd <= INPUT_SCALE_RTOL * top
    return np.where(constant, 0.0, loc), np.where(constant, 1.0, sd), constant


class BaseMethod(BaseEstimator):
    """Base class of every udbench UQ method (scikit-learn conventions).

    Each subclass declares the class attributes listed under Attributes.

    Attributes
    ----------
    name : str
        Registry name, the paper's method name in lower case (``"nn-ens"``).
    family : str
        ``"linear"``, ``"gp"``, ``"trees"`` or ``"nn"`` (SPEC §8 grouping).
    constant_aleatoric : bool
        True if AU is constant in x (its AU correlations are undefined; SPEC §8).
    epistemic_from : str
        ``"samples"`` (spread of members/draws) or ``"closed_form"``.
    description : str
        One line for ``udbench methods`` and the docs tables, with the paper section that
        describes the method.
    search_space : dict
        Hyperparameter search space for tuning (SPEC §9), name -> spec dict, e.g.
        ``{"type": "float", "low": 1e-4, "high": 1e-1, "log": True}``,
        ``{"type": "int", "low": 1, "high": 4}``, ``{"type": "categorical", "choices": [...]}``.
    param_constraints : dict
        The values each hyperparameter accepts at all (same format); checked by
        :meth:`validate_hyperparameters` at the start of :meth:`fit` and by
        :func:`udbench.methods.make_method`.
    smoke_params : dict
        A fast configuration for tests and quick runs (overrides of the defaults).
    progress_param : str or None
        The hyperparameter that counts an iterative method's training steps (``"n_epochs"``,
        ``"n_estimators"``, ``"n_regressors"``: members of a bag), whose fit reports
        intermediate predictions to an active reporter (:mod:`udbench.methods._progress`;
        pruned tuning). None (default): the method reports nothing.
    paper_index : int or None
        The method's place (1-19) in the paper's list of methods (SPEC §8), from which
        :func:`udbench.methods.registry.paper_methods` is derived; None (default): not one of
        the paper's methods (a later or a user's method). A subclass restates it: it is not
        inherited in meaning (``nn-lap-sn`` has its own).

    Subclasses implement ``_fit(X, y)`` (y standardised) and ``_predict(X) -> Prediction``
    (standardised units), take ``random_state`` as a constructor keyword, and draw seeds
    from :meth:`_seed` / :meth:`_rng`.
    """

    name: ClassVar[str] = "base"
    family: ClassVar[str] = "base"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    description: ClassVar[str] = ""
    search_space: ClassVar[dict[str, dict[str, Any]]] = {}
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {}
    smoke_params: ClassVar[dict[str, Any]] = {}
    progress_param: ClassVar[str | None] = None
    paper_index: ClassVar[int | None] = None

    # -- public API ---------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> BaseMethod:
        """Fit on training inputs ``X`` (n, d) and targets ``y`` (n,); return ``self``.

        Raises
        ------
        UdbenchError
            Invalid hyperparameters, wrong shapes, NaN/inf in ``X`` or ``y``, entries of
            magnitude above 1e153 (:data:`udbench._validation.MAX_ABS_INPUT`), fewer than
            2 rows.

        Notes
        -----
        ``y`` is standardised by :func:`standardise_targets` (stored as ``y_loc_``,
        ``y_scale_``): outputs are equivariant under ``y -> c*y + b`` (c > 0), and a target
        constant in relative terms (``sd(y) <= 1e-12 * max|y|``) is fitted, not rejected.
        The input columns' statistics are :func:`standardise_inputs`'s (``input_loc_``,
        ``input_scale_``, ``input_constant_``); a column constant in relative terms is
        replaced by 0 before ``_fit`` and before every ``_predict``.
        """
        self.validate_hyperparameters()
        X = check_array(type(self).__name__, "X", X, ndim=2, max_abs=MAX_ABS_INPUT)
        y = check_array(type(self).__name__, "y", y, shape=(X.shape[0],), max_abs=MAX_ABS_INPUT)
        if X.shape[0] < 2:
            raise param_error(type(self).__name__, "X", "have at least 2 rows", X.shape)
        if X.shape[1] < 1:
            raise param_error(type(self).__name__, "X", "have at least 1 column", X.shape)
        loc, scale, y_std = standardise_targets(y)
        self.y_loc_ = loc
        self.y_scale_ = scale
        self.n_features_in_ = X.shape[1]
        self.input_loc_, self.input_scale_, self.input_constant_ = standardise_inputs(X)
        # Copies: _fit may not see (and so cannot mutate) the caller's arrays.
        self._fit(self._inputs(X), y_std)
        return self

    def predict(self, X: Any) -> Prediction:
        """Predict at ``X`` (m, d); return a :class:`Prediction` in target units.

        Raises
        ------
        NotFittedError
            If called before :meth:`fit`.
        UdbenchError
            Wrong number of features, NaN/inf in ``X``, entries of magnitude above 1e153.
        MethodOutputError
            If the method's output has a wrong shape, NaN/inf or a negative variance.
        """
        pred = self._predict_unchecked(X)
        n_rows = int(np.shape(X)[0])  # X is 2-D here: _predict_unchecked checked it
        return pred.validate(n_rows, component=f"{type(self).__name__}.predict")

    def validate_hyperparameters(self) -> None:
        """Check every declared hyperparameter's current value.

        Keywords in ``param_constraints`` are checked against it; keywords declared only in
        ``search_space`` are checked for their type alone; ``random_state`` must be an
        integer >= 0 or None.

        Raises
        ------
        UdbenchError
            Naming the method, the hyperparameter, the rule and the value received.
        """
        component = type(self).__name__
        params = self.get_params(deep=False)
        for key, spec in self.param_constraints.items():
            if key in params:
                check_hyperparameter(component, key, params[key], spec)
        for key, spec in self.search_space.items():
            if key in params and key not in self.param_constraints:
                kind = spec.get("type", "float")
                if kind in ("int", "float", "bool"):
                    check_hyperparameter(component, key, params[key], {"type": kind})
        if "random_state" in params:
            check_hyperparameter(
                component,
                "random_state",
                params["random_state"],
                {"type": "int", "low": 0, "none_ok": True},
            )

    # -- helpers for subclasses -------------------------------------------------------
    def _seed(self, *components: object, bits: int = 32) -> int:
        """A seed for the stream ``components`` of this method under its ``random_state``.

        Same ``random_state`` and components give the same seed; different components give
        independent streams (:func:`udbench._seeding.derive_seed`).
        """
        rs = getattr(self, "random_state", None)
        return derive_seed(
            "method", self.name, 0 if rs is None else int(rs), *components, bits=bits
        )

    def _inputs(self, X: Any) -> np.ndarray:
        """A float64 copy of ``X`` (m, d) with every constant training column replaced by 0.

        What ``_fit`` and ``_predict`` see (:func:`standardise_inputs`); a method's own public
        entry points that take raw inputs (e.g. ``NNEvidential.predict_nig``) call it too.
        """
        out = np.array(X, dtype=np.float64)
        constant = getattr(self, "input_constant_", None)
        if constant is not None and constant.any():
            out[:, constant] = 0.0
        return out

    def _progress_checkpoints(self) -> tuple[int, ...]:
        """Steps after which this fit should call :meth:`_report_progress` (empty: no
        reporter is active, or the method declares no ``progress_param``)."""
        from udbench.methods._progress import current_reporter

        reporter = current_reporter()
        if reporter is None or self.progress_param is None:
            return ()
        return tuple(reporter.checkpoints(int(getattr(self, self.progress_param))))

    def _report_progress(self, step: int, predict: Any) -> None:
        """Hand the active reporter the model after ``step`` steps.

        ``predict(X)`` is the method's prediction at raw inputs on *standardised* targets
        (what ``_predict`` returns); it is mapped back to target units here. The reporter
        may raise :class:`~udbench.methods._progress.TrainingStopped`.
        """
        from udbench.methods._progress import current_reporter

        reporter = current_reporter()
        if reporter is None:
            return
        loc, scale = self.y_loc_, self.y_scale_

        def in_target_units(X: Any) -> Prediction:
            return predict(np.asarray(X, dtype=np.float64)).rescale(loc, scale)

        reporter.report(int(step), in_target_units)

    def _rng(self, *components: object) -> np.random.Generator:
        """A NumPy ``Generator`` for the stream ``components`` (see :meth:`_seed`)."""
        return np.random.default_rng(self._seed(*components, bits=63))

    def _predict_unchecked(self, X: Any) -> Prediction:
        """Input checks, ``_predict`` and mapping back to target units, without output checks.

        Used by :meth:`predict` and by the conformance battery (which checks the output
        itself, one property per check).
        """
        if not hasattr(self, "y_scale_"):
            raise NotFittedError(
                f"{type(self).__name__}: not fitted; call fit(X, y) before predict(X)"
            )
        X = check_array(type(self).__name__, "X", X, ndim=2, max_abs=MAX_ABS_INPUT)
        if X.shape[1] != self.n_features_in_:
            raise param_error(
                type(self).__name__, "X", f"have {self.n_features_in_} columns", X.shape
            )
        return self._predict(self._inputs(X)).rescale(self.y_loc_, self.y_scale_)

    # -- to implement ---------------------------------------------------------------
    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _predict(self, X: np.ndarray) -> Prediction:  # pragma: no cover - abstract
        raise NotImplementedError
