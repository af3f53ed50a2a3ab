"""The L-BFGS-B driver shared by the GP prior's kernel fit and the GP-family methods.

:class:`LBFGSBObjective` wraps a value-and-gradient function (e.g. a jitted
``jax.value_and_grad``) as SciPy's L-BFGS-B takes it: float64 conversion, a guard against
non-finite trial points, and the best point seen. It lives in the ground layer so that the
truth generator (:mod:`udbench.priors.gp.fit`) and the methods under test
(:mod:`udbench.methods.gp`, :mod:`udbench.methods.vlgp`) share this driver without the methods
importing anything from :mod:`udbench.priors` (the import-layer rule forbids
``methods -> priors``, see :data:`udbench._layers.FORBIDDEN`). It needs only NumPy and SciPy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.optimize

__all__ = ["LBFGSBObjective"]


class LBFGSBObjective:
    """A value-and-gradient as SciPy's L-BFGS-B takes it, remembering the best point.

    Calling the object with a float64 vector returns ``(value, gradient)`` as a Python
    float and a float64 NumPy array. Where the value or the gradient is not finite (a
    trial step left the region where the Cholesky factorisation succeeds) it returns
    ``penalty(best finite value so far)`` and a zero gradient, so the line search
    backtracks instead of aborting. ``best_value`` and ``best_x`` hold the lowest
    finite value seen and its point (L-BFGS-B may end on an abnormal line search).

    Parameters
    ----------
    value_and_grad : callable
        ``value_and_grad(x) -> (value, gradient)`` (e.g. a jitted ``jax.value_and_grad``),
        ``x`` of shape ``(p,)``, the gradient of shape ``(p,)``.
    penalty : callable
        ``penalty(best_value) -> float``, the value reported at a non-finite point
        (``best_value`` is ``inf`` before any finite one).
    x0 : ndarray of shape (p,)
        The start; ``best_x`` until a finite value is seen (a copy is kept).

    References
    ----------
    Byrd, Lu, Nocedal & Zhu (1995), "A limited memory algorithm for bound constrained
    optimization", SIAM J. Sci. Comput. 16(5); SciPy's ``minimize(method="L-BFGS-B")``.
    """

    def __init__(
        self,
        value_and_grad: Callable[[np.ndarray], tuple[Any, Any]],
        penalty: Callable[[float], float],
        x0: np.ndarray,
    ) -> None:
        self.value_and_grad = value_and_grad
        self.penalty = penalty
        self.best_value: float = np.inf
        self.best_x: np.ndarray = x0.copy()

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = self.value_and_grad(x)
        v, g = float(value), np.asarray(grad, dtype=np.float64)
        if not (np.isfinite(v) and np.all(np.isfinite(g))):
            return self.penalty(self.best_value), np.zeros_like(g)
        if v < self.best_value:
            self.best_value, self.best_x = v, np.array(x, dtype=np.float64)
        return v, g

    def minimize(
        self,
        x0: np.ndarray,
        bounds: Sequence[tuple[float | None, float | None]],
        maxiter: int,
    ) -> scipy.optimize.OptimizeResult:
        """SciPy's L-BFGS-B from ``x0`` (shape ``(p,)``), at most ``maxiter`` iterations.

        ``bounds`` holds one ``(lower, upper)`` pair per coordinate (``None``: unbounded).
        """
        return scipy.optimize.minimize(
            self,
            x0,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": maxiter},
        )
