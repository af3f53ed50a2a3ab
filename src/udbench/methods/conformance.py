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

from udbench._validation import UdbenchError, check_timeout, param_error
from udbench.methods._behaviour import (
    BEHAVIOUR_CHECKS,
    BehaviourReport,
    CheckTally,
    run_behaviour,
)
from udbench.methods._conformance_checks import CHECKS, _Battery, _Fail, _Skip
from udbench.methods.base import BaseMethod
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
