"""Named configurations of a method: a subclass that differs only in defaults (e.g. NN-Lap-SN).

A configuration such as "NN-Lap on the spectrally normalised backbone" is a registry row of its
own (results are stored under its name) but not a copy of the method: it is a minimal
subclass that sets ``name``, its search space and the defaults it fixes, with the base's
constructor re-used through :func:`init_with_defaults`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["init_with_defaults"]


def init_with_defaults(init: Callable[..., None], **defaults: Any) -> Callable[..., None]:
    """A constructor equal to ``init`` except for the defaults of some keywords.

    The result has ``init``'s signature with the given defaults replaced (scikit-learn's
    ``get_params`` / ``clone`` read the signature), and fills the new defaults when the
    caller omits them.

    Parameters
    ----------
    init : callable
        The base class's ``__init__`` (keyword parameters only besides ``self``).
    **defaults
        New default per keyword; each must be a parameter of ``init``.

    Raises
    ------
    TypeError
        A keyword that ``init`` does not take (a programming error of the subclass).
    """
    sig = inspect.signature(init)
    unknown = sorted(set(defaults) - set(sig.parameters))
    if unknown:
        raise TypeError(f"init_with_defaults: {init.__qualname__} has no parameters {unknown}")
    params = [
        p.replace(default=defaults[p.name]) if p.name in defaults else p
        for p in sig.parameters.values()
    ]

    @functools.wraps(init)
    def __init__(self: Any, **kwargs: Any) -> None:
        init(self, **{**defaults, **kwargs})

    __init__.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return __init__
