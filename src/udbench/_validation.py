"""One error template and small argument checks shared by every udbench component.

Every user-facing error names the component, the parameter, the rule it broke and the
value received (the habit of scikit-learn's ``_param_validation`` and GPJax's
parameter checks), so a failure can be fixed without reading a traceback.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "UdbenchError",
    "UdbenchWarning",
    "check_array",
    "check_choice",
    "check_positive",
    "check_writable",
    "param_error",
]


class UdbenchError(ValueError):
    """Bad input to a udbench component (a user error, not a bug).

    Subclasses :class:`ValueError` so that callers that already catch ``ValueError``
    keep working. The command-line interface prints these without a traceback.
    """


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
