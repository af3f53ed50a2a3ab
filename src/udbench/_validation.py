"""One error template and small argument checks shared by every udbench component.

Every user-facing error names the component, the parameter, the rule it broke and the
value received (the habit of scikit-learn's ``_param_validation`` and GPJax's
parameter checks), so a failure can be fixed without reading a traceback.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "MAX_ABS_INPUT",
    "MAX_SEED",
    "MAX_TIMEOUT_S",
    "MAX_WORKERS_PER_CORE",
    "InputUnavailableError",
    "UdbenchError",
    "UdbenchWarning",
    "as_list",
    "check_array",
    "check_choice",
    "check_int",
    "check_positive",
    "check_seed",
    "check_timeout",
    "check_workers",
    "check_writable",
    "param_error",
    "unknown_name_error",
    "usable_core_count",
]

#: Most local worker processes per usable core (``--workers``, ``workers=``). Each worker
#: computes with one thread, so more workers than cores only wait; a few per core are
#: allowed (I/O, uneven cells), beyond that a typo (``--workers 1000``: hundreds of processes,
#: leaked semaphores, minutes before anything is reported) is refused.
MAX_WORKERS_PER_CORE = 4
#: Longest per-cell / per-trial time limit in seconds (30 days); no limit: give none. Larger
#: values overflow the timers of the operating system (``--timeout 1e308``).
MAX_TIMEOUT_S = 30 * 24 * 3600.0
#: Largest seed (seeds are unsigned 32-bit integers in NumPy, Optuna and JAX streams).
MAX_SEED = 2**32 - 1
#: Largest magnitude of a method's inputs and targets: their squares (variances in target
#: units, kernels, least squares) stay finite in float64 (max ≈ 1.8e308) with a margin of 100;
#: 1e300-scaled data gave NaN output or a raw ``OverflowError``. Targets up to it keep the
#: methods' equivariance under y -> c·y (tested to c = 1e150).
MAX_ABS_INPUT = 1e153


class UdbenchError(ValueError):
    """Bad input to a udbench component (a user error, not a bug).

    Subclasses :class:`ValueError` so that callers that already catch ``ValueError``
    keep working. The command-line interface prints these without a traceback.
    """


class InputUnavailableError(UdbenchError):
    """An input the work needs is not on this machine (e.g. a dataset's raw table).

    Nothing failed: the work cannot start here until the input is provided. A campaign
    (:func:`udbench.campaigns.engine.run_campaign`) therefore writes no record for a unit
    that raises it; the unit stays missing and runs once the input is there.

    Parameters
    ----------
    message : str
        The full message: what is missing, where it was looked for, how to provide it.
    what : str
        Short name of the missing input (e.g. ``"the raw table of kin8nm"``), used to say it
        once per run rather than once per unit.
    """

    def __init__(self, message: str, what: str) -> None:
        super().__init__(message)
        self.what = what

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        # rebuilt with ``what`` when pickled (an error raised in a worker process)
        return (type(self), (str(self), self.what))


class UdbenchWarning(UserWarning):
    """Something the user should know that does not stop the work (e.g. a skipped file).

    The command-line interface prints these as one line, ``warning: <message>``.
    """


#: Longest repr of a value shown in an error message. Strings and paths get a much longer limit:
#: a file path cut at 80 characters (as under pytest's deep temporary folders or a cluster's
#: scratch paths) would hide the very part that tells the user which file is wrong.
_SHORT_LIMIT = 80
_TEXT_LIMIT = 1000


def _short(value: Any, limit: int | None = None) -> str:
    # a path is shown as the user typed it ('x.npz'), not as PosixPath('x.npz')
    is_text = isinstance(value, (str, os.PathLike))
    text = repr(os.fspath(value) if isinstance(value, os.PathLike) else value)
    if limit is None:
        limit = _TEXT_LIMIT if is_text else _SHORT_LIMIT
    return text if len(text) <= limit else text[: limit - 3] + "..."


def param_error(component: str, parameter: str, rule: str, value: Any) -> UdbenchError:
    """Build the standard error for a parameter that breaks a rule.

    Parameters
    ----------
    component : str
        What was called, e.g. ``"NoiseModel"`` or ``"squared_loss_decomposition"``.
    parameter : str
        The offending argument's name.
    rule : str
        The rule it must satisfy, phrased to follow "must", e.g. ``"be > 0"``.
    value : Any
        The value received, shown by its repr: strings and paths whole up to 1000 characters,
        other values up to 80 (longer ones end in ``...``).

    Returns
    -------
    UdbenchError
        The error, to be raised by the caller.

    Examples
    --------
    >>> str(param_error("NoiseModel", "rho", "be > 0", -1.0))
    "NoiseModel: parameter 'rho' must be > 0; got -1.0"
    """
    return UdbenchError(f"{component}: parameter {parameter!r} must {rule}; got {_short(value)}")


def unknown_name_error(component: str, kind: str, name: str, valid: Iterable[str]) -> UdbenchError:
    """Build the error for a name that is not one of the valid ones (e.g. a misspelt key).

    The message names the unknown name (not its value), suggests the closest valid one
    (:func:`difflib.get_close_matches`) and lists them all.

    Parameters
    ----------
    component : str
        What was called, e.g. ``"GP"``.
    kind : str
        What a valid name is, e.g. ``"hyperparameter of 'gp'"``.
    name : str
        The name received.
    valid : iterable of str
        The names accepted.

    Returns
    -------
    UdbenchError
        The error, to be raised by the caller.

    Examples
    --------
    >>> str(unknown_name_error("GP", "hyperparameter", "max_iters", ["max_iter", "tol"]))
    "GP: 'max_iters' is not a hyperparameter; did you mean 'max_iter'? Valid: ['max_iter', 'tol']"
    """
    options = sorted(valid)
    close = difflib.get_close_matches(str(name), options, n=1)
    hint = f"did you mean {close[0]!r}?" if close else "no close match."
    return UdbenchError(f"{component}: {_short(name)} is not a {kind}; {hint} Valid: {options}")


def check_choice(component: str, parameter: str, value: Any, choices: Iterable[Any]) -> Any:
    """Return ``value`` if it is one of ``choices``; raise :class:`UdbenchError` otherwise."""
    options = list(choices)
    if value not in options:
        raise param_error(component, parameter, f"be one of {options}", value)
    return value


def check_positive(component: str, parameter: str, value: float, *, strict: bool = True) -> float:
    """Return ``value`` as float if it is finite and > 0 (or >= 0 when ``strict=False``)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise param_error(component, parameter, "be a real number", value) from None
    if not np.isfinite(v) or (v <= 0 if strict else v < 0):
        raise param_error(component, parameter, "be > 0" if strict else "be >= 0", value)
    return v


def check_array(
    component: str,
    parameter: str,
    value: Any,
    *,
    ndim: int | tuple[int, ...] | None = None,
    shape: tuple[int | None, ...] | None = None,
    finite: bool = True,
    nonnegative: bool = False,
    dtype: Any = np.float64,
    max_abs: float | None = None,
) -> np.ndarray:
    """Convert ``value`` to an array and check it.

    Parameters
    ----------
    component, parameter : str
        Used in the error message.
    value : array_like
        The input.
    ndim : int or tuple of int, optional
        Allowed numbers of dimensions.
    shape : tuple of (int or None), optional
        Required shape; ``None`` entries match any length.
    finite : bool, default True
        Reject NaN and infinity.
    nonnegative : bool, default False
        Reject negative entries (e.g. variances).
    dtype : numpy dtype, default float64
        Target dtype; ``None`` keeps the input's dtype.
    max_abs : float, optional
        Reject entries of larger magnitude (e.g. :data:`MAX_ABS_INPUT`, whose squares are
        still finite in float64).

    Returns
    -------
    numpy.ndarray
        The converted array (a new array only where conversion needed one).

    Raises
    ------
    UdbenchError
        If any rule is broken; the message names the parameter and what was received.
    """
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise param_error(component, parameter, "be a numeric array", value) from None
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            raise param_error(
                component, parameter, f"have ndim in {list(allowed)}", f"shape {arr.shape}"
            )
    if shape is not None:
        if arr.ndim != len(shape) or any(
            s is not None and s != a for s, a in zip(shape, arr.shape, strict=True)
        ):
            want = ", ".join("*" if s is None else str(s) for s in shape)
            raise param_error(component, parameter, f"have shape ({want})", f"shape {arr.shape}")
    if finite and arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        n_bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise param_error(
            component, parameter, "contain only finite values", f"{n_bad} NaN/inf entries"
        )
    if max_abs is not None and arr.size and arr.dtype.kind in "fiuc":
        largest = float(np.max(np.abs(arr)))
        if largest > max_abs:
            raise param_error(
                component,
                parameter,
                f"have entries of magnitude <= {max_abs:g} (squares and variances must be "
                "finite in float64; rescale the data)",
                f"largest magnitude {largest:g}",
            )
    if nonnegative and arr.size and np.nanmin(arr) < 0:
        raise param_error(
            component, parameter, "be non-negative", f"minimum {float(np.nanmin(arr))!r}"
        )
    return arr


def check_writable(component: str, parameter: str, path: str | os.PathLike[str]) -> Path:
    """Check, before any work, that udbench can create files at ``path`` (a folder).

    ``path`` need not exist yet: then its nearest existing ancestor must be a folder in
    which a file can be created (``path`` is made there later). The test creates and removes
    a hidden temporary file, so it sees what a write would see: permissions, ACLs, read-only
    mounts and root squash alike (``os.access`` misses most of these when run as root).

    Parameters
    ----------
    component, parameter : str
        Used in the error message (e.g. ``"udbench run"``, ``"--out"``).
    path : str or Path
        The output folder.

    Returns
    -------
    pathlib.Path
        ``path`` as a :class:`~pathlib.Path`.

    Raises
    ------
    UdbenchError
        If ``path`` is empty, is or lies under a file, or no file can be created there; the
        message names the path and the operating system's reason.
    """
    if not str(path).strip():
        raise param_error(component, parameter, "name a folder (not an empty string)", path)
    target = Path(path).expanduser()
    existing = next((p for p in (target, *target.absolute().parents) if p.exists()), None)
    if existing is None:  # pragma: no cover - "/" always exists
        return target
    if not existing.is_dir():
        rule = (
            "be a folder (or not exist yet), not a file"
            if existing == target
            else "lie under a folder, not under a file"
        )
        raise param_error(component, parameter, rule, str(target))
    try:
        fd, probe = tempfile.mkstemp(prefix=".udbench-write-test-", dir=existing)
    except OSError as err:
        # not param_error: its value is shortened, and the path and the reason both matter
        raise UdbenchError(
            f"{component}: parameter {parameter!r} must be a folder udbench can write to; "
            f"got {str(target)!r} (creating a file in {str(existing)!r}: "
            f"{err.strerror or err})"
        ) from None
    os.close(fd)
    os.unlink(probe)
    return target


def check_int(
    component: str,
    parameter: str,
    value: Any,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    allow_none: bool = False,
) -> int | None:
    """Return ``value`` as an int if it is an integer within [minimum, maximum].

    Booleans and non-integral numbers (``2.5``, ``"3"``) are refused, as is None unless
    ``allow_none``.

    Raises
    ------
    UdbenchError
        Naming the parameter, the rule (``be an integer from 1 to 100``) and the value.
    """
    if value is None and allow_none:
        return None
    if minimum is not None and maximum is not None:
        rule = f"be an integer from {minimum} to {maximum}"
    elif minimum is not None:
        rule = f"be an integer >= {minimum}"
    elif maximum is not None:
        rule = f"be an integer <= {maximum}"
    else:
        rule = "be an integer"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise param_error(component, parameter, rule, value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise param_error(component, parameter, rule, value)
    return int(value)


def usable_core_count() -> int:
    """Number of cores this process may run on (its CPU affinity; all cores elsewhere)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def check_workers(component: str, parameter: str, value: Any) -> int | None:
    """Return a local worker count: None (the default) or an integer from 0 to
    :data:`MAX_WORKERS_PER_CORE` × the usable cores.

    Raises
    ------
    UdbenchError
        A negative, non-integer or too large count, with the cap and how it was computed.
    """
    cores = usable_core_count()
    cap = MAX_WORKERS_PER_CORE * cores
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or not (0 <= value <= cap)
    ):
        raise param_error(
            component,
            parameter,
            f"be an integer from 0 to {cap} ({MAX_WORKERS_PER_CORE} × the {cores} usable "
            "cores; for more processes use a Dask scheduler or a cluster file)",
            value,
        )
    return int(value)


def check_timeout(component: str, parameter: str, value: Any) -> float | None:
    """Return a time limit in seconds: None (no limit) or a number in (0, 30 days].

    Raises
    ------
    UdbenchError
        Not a number, NaN, infinite, <= 0 or above :data:`MAX_TIMEOUT_S`.
    """
    if value is None:
        return None
    rule = f"be a number of seconds in (0, {MAX_TIMEOUT_S:.0f}] (30 days; omit it for no limit)"
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise param_error(component, parameter, rule, value)
    v = float(value)
    if not (np.isfinite(v) and 0.0 < v <= MAX_TIMEOUT_S):
        raise param_error(component, parameter, rule, value)
    return v


def check_seed(component: str, parameter: str, value: Any) -> int:
    """Return a seed: an integer from 0 to :data:`MAX_SEED` (2³² − 1)."""
    out = check_int(component, parameter, value, minimum=0, maximum=MAX_SEED)
    assert out is not None
    return out


def as_list(
    component: str,
    parameter: str,
    value: Any,
    kinds: tuple[type, ...] | None = None,
    *,
    what: str = "items",
) -> list[Any]:
    """One item or a sequence of items, as a list: strings and paths are one item.

    A ``str`` or :class:`os.PathLike` (``"DIR"``, ``Path("x.npz")``, ``"crps"``) is one item,
    never the sequence of its characters; so is an instance of ``kinds`` other than a
    container (a tuple is always a sequence). A list, tuple,
    set or other iterable (not a mapping, not bytes) gives its items, each of which must be an
    instance of ``kinds`` when given.

    Parameters
    ----------
    component, parameter : str
        Named in the message.
    value : object
        The argument.
    kinds : tuple of type, optional
        Allowed item types (None: any).
    what : str
        What an item is, for the message (``"task files, folders or globs"``).

    Raises
    ------
    UdbenchError
        ``value`` is neither an item nor an iterable of items (a number, a dict, bytes), or
        an item has another type.
    """
    containers = (list, tuple, set, frozenset)
    if isinstance(value, (str, os.PathLike)) or (
        kinds and isinstance(value, tuple(kinds)) and not isinstance(value, containers)
    ):
        return [value]  # one item; a tuple is always a sequence (a ("label", spec) pair too)
    if isinstance(value, (bytes, bytearray, dict)) or not isinstance(value, Iterable):
        raise param_error(component, parameter, f"be one or a sequence of {what}", value)
    items = list(value)
    if kinds:
        for item in items:
            if not isinstance(item, tuple(kinds)) or isinstance(item, bool):
                raise param_error(component, parameter, f"hold only {what}", f"an item {item!r}")
    return items
