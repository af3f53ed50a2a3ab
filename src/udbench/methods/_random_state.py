"""Per-component seeds for a method's random streams (members, resamples, initialisation).

A method's ``random_state`` is combined with the method name and the name of the stream
(``"member", 3, "resample"``) by :func:`udbench._seeding.derive_seed`, so member 3's
resample never depends on how many members there are or on any other stream.
"""

from __future__ import annotations

import numpy as np

from udbench._seeding import derive_seed
from udbench._validation import param_error

__all__ = ["base_seed", "stream_seed"]


def base_seed(component: str, random_state: object) -> int:
    """Return the integer root seed of a method from its ``random_state``.

    Parameters
    ----------
    component : str
        The method's class name (used in error messages).
    random_state : int, numpy integer or None
        An integer >= 0; ``None`` means 0 (udbench is deterministic by default, as in
        the method contract).

    Raises
    ------
    UdbenchError
        If ``random_state`` is neither ``None`` nor a non-negative integer.
    """
    if random_state is None:
        return 0
    if isinstance(random_state, bool) or not isinstance(random_state, int | np.integer):
        raise param_error(component, "random_state", "be a non-negative int or None", random_state)
    if int(random_state) < 0:
        raise param_error(component, "random_state", "be a non-negative int or None", random_state)
    return int(random_state)


def stream_seed(name: str, root: int, *components: object, bits: int = 31) -> int:
    """Seed of one named random stream of method ``name`` with root seed ``root``.

    ``bits=31`` (default) suits libraries that take a 32-bit signed seed (scikit-learn,
    NGBoost, CatBoost, JAX keys); use ``bits=63`` for NumPy generators. Same formula as the
    contract's ``BaseMethod._seed`` (``derive_seed("method", name, random_state, ...)``).
    """
    return derive_seed("method", name, int(root), *components, bits=bits)
