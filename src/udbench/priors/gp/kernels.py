"""Kernel parts of the GP reference prior: one table row per part (SPEC §5).

Every part is a GPJax kernel (Matérn-1/2, 3/2, 5/2, RBF, rational quadratic, powered
exponential, periodic, linear, arc-cosine) described by a :class:`KernelPart` row of
:data:`PARTS`: its GPJax class, its shape hyperparameters (:class:`ShapeParam`: name, one
value per covariate or one scalar, initial value, link to the unconstrained fitting space)
and whether it has a discrete order (arc-cosine). A dataset's kernel family is a sum of
parts, e.g. ``"rq+linear"``; the *unit kernel* is k̃(x, x') = Σ_i w_i k_i(x, x') with every
part at GPJax variance 1 and weights w_i summing to 1 (:func:`kernel_matrix`).

Adding a part is one row of :data:`PARTS` (the fit in :mod:`udbench.priors.gp.fit` and the
prior read everything else from the row).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gpjax import kernels as gk

from udbench._validation import check_choice, param_error

__all__ = [
    "KERNEL_PARTS",
    "PARTS",
    "KernelPart",
    "ShapeParam",
    "kernel_matrix",
    "parse_kernel_family",
    "sum_kernel",
]


def _half_sqrt_d(d: int) -> float:
    """Initial ARD lengthscale √d/2 (inputs in [0, 1]^d: about half the cube's diagonal)."""
    return float(0.5 * np.sqrt(d))


@dataclass(frozen=True)
class ShapeParam:
    """One shape hyperparameter of a kernel part.

    Attributes
    ----------
    name : str
        GPJax keyword and key in the stored hyperparameters (e.g. ``"lengthscale"``).
    ard : bool
        One value per covariate (shape (d,)) instead of one scalar.
    init : float or callable
        Initial (constrained) value of restart 0, or ``init(d) -> float``.
    link : {"log", "logit2"}
        Map from the unconstrained fitting space: ``"log"``: value = exp(u);
        ``"logit2"``: value = 2·sigmoid(u), in (0, 2) (the powered-exponential power).
    """

    name: str
    ard: bool
    init: float | Callable[[int], float]
    link: str = "log"

    @property
    def key(self) -> str:
        """Name of the unconstrained parameter (``"log_lengthscale"``, ``"logit_power"``)."""
        return ("logit_" if self.link == "logit2" else "log_") + self.name

    def initial(self, d: int) -> jax.Array:
        """Unconstrained initial value: shape (d,) if :attr:`ard` else ()."""
        value = self.init(d) if callable(self.init) else float(self.init)
        u = np.log(value) if self.link == "log" else np.log(0.5 * value / (1.0 - 0.5 * value))
        return jnp.full((d,), u) if self.ard else jnp.asarray(u)

    def constrain(self, u: Any) -> Any:
        """Constrained value from the unconstrained ``u`` (JAX, differentiable)."""
        return jnp.exp(u) if self.link == "log" else 2.0 * jax.nn.sigmoid(u)


@dataclass(frozen=True)
class KernelPart:
    """One kernel part: a GPJax kernel class and its shape hyperparameters.

    Attributes
    ----------
    name : str
        Part name in a kernel family (``"matern32"``, ``"rq"``, …).
    gpjax_class : type
        The GPJax kernel, built with ``variance`` and the shape parameters as keywords.
    params : tuple of ShapeParam
        Shape hyperparameters besides the part's variance (weight).
    orders : tuple of int
        Discrete orders fitted by enumeration (arc-cosine: 0, 1, 2); empty if none.
    """

    name: str
    gpjax_class: type
    params: tuple[ShapeParam, ...] = ()
    orders: tuple[int, ...] = ()

    def build(self, spec: dict[str, Any], variance: Any) -> gk.AbstractKernel:
        """The GPJax kernel at hyperparameters ``spec`` (values by parameter name)."""
        kwargs: dict[str, Any] = {p.name: jnp.asarray(spec[p.name]) for p in self.params}
        if self.orders:
            kwargs["order"] = int(spec["order"])
        kernel: gk.AbstractKernel = self.gpjax_class(variance=variance, **kwargs)
        return kernel


_LENGTHSCALE = ShapeParam("lengthscale", ard=True, init=_half_sqrt_d)

#: The kernel parts, by name (SPEC §5; GPJax's kernels).
PARTS: dict[str, KernelPart] = {
    part.name: part
    for part in (
        KernelPart("matern12", gk.Matern12, (_LENGTHSCALE,)),
        KernelPart("matern32", gk.Matern32, (_LENGTHSCALE,)),
        KernelPart("matern52", gk.Matern52, (_LENGTHSCALE,)),
        KernelPart("rbf", gk.RBF, (_LENGTHSCALE,)),
        KernelPart(
            "rq", gk.RationalQuadratic, (_LENGTHSCALE, ShapeParam("alpha", ard=False, init=1.0))
        ),
        KernelPart(
            "powexp",
            gk.PoweredExponential,
            (_LENGTHSCALE, ShapeParam("power", ard=False, init=1.0, link="logit2")),
        ),
        KernelPart(
            "periodic",
            gk.Periodic,
            (
                ShapeParam("lengthscale", ard=True, init=1.0),
                ShapeParam("period", ard=True, init=1.0),
            ),
        ),
        KernelPart("linear", gk.Linear),
        KernelPart(
            "arccosine",
            gk.ArcCosine,
            (
                ShapeParam("weight_variance", ard=True, init=1.0),
                ShapeParam("bias_variance", ard=False, init=1.0),
            ),
            orders=(0, 1, 2),
        ),
    )
}

#: Kernel part name -> the shape hyperparameters it has (besides its weight).
KERNEL_PARTS: dict[str, tuple[str, ...]] = {
    name: tuple(p.name for p in part.params) for name, part in PARTS.items()
}


def parse_kernel_family(family: str) -> tuple[str, ...]:
    """Split a kernel family such as ``"rq+linear"`` into its parts.

    Raises
    ------
    UdbenchError
        If a part is not a key of :data:`KERNEL_PARTS`.
    """
    parts = tuple(p.strip().lower() for p in str(family).split("+"))
    for p in parts:
        check_choice("GP kernel", "kernel_family part", p, KERNEL_PARTS)
    return parts


def part_kernel(spec: dict[str, Any], variance: Any) -> gk.AbstractKernel:
    """The GPJax kernel of one part ``spec`` (``{"kernel": name, **hyperparameters}``)."""
    name = spec["kernel"]
    if name not in PARTS:
        raise param_error("GP kernel", "kernel", f"be one of {list(KERNEL_PARTS)}", name)
    return PARTS[name].build(spec, variance)


def sum_kernel(parts: list[dict[str, Any]], variances: list[Any]) -> gk.AbstractKernel:
    """Σ_i variances[i]·k_i as one GPJax kernel (parts as in :func:`part_kernel`)."""
    kernel = part_kernel(parts[0], variances[0])
    for part, v in zip(parts[1:], variances[1:], strict=True):
        kernel = kernel + part_kernel(part, v)
    return kernel


def cross(kernel: gk.AbstractKernel, X1: Any, X2: Any) -> jax.Array:
    """``kernel``'s cross-covariance matrix between the rows of X1 and X2."""
    return kernel.cross_covariance(jnp.asarray(X1), jnp.asarray(X2))


def kernel_matrix(hyper: dict[str, Any], X1: Any, X2: Any = None) -> Any:
    """Unit-kernel matrix k̃(X1, X2) (no a²), float64.

    Parameters
    ----------
    hyper : dict
        Fitted hyperparameters as stored in the cache (``{"kernel_family", "parts"}``).
    X1 : ndarray, shape (m1, d)
    X2 : ndarray, shape (m2, d), optional
        Defaults to ``X1``.

    Returns
    -------
    ndarray, shape (m1, m2)
        Σ_i w_i k_i(X1, X2), float64 (a JAX array).
    """
    with jax.enable_x64(True):
        structure, values = _split_hyper(hyper)
        A1 = jnp.asarray(X1, dtype=jnp.float64)
        A2 = A1 if X2 is None else jnp.asarray(X2, dtype=jnp.float64)
        return _kernel_matrix_jit(structure, values, A1, A2)


def _split_hyper(hyper: dict[str, Any]) -> tuple[tuple[Any, ...], list[dict[str, Any]]]:
    """Static structure (part names, arc-cosine orders) and numeric leaves of ``hyper``."""
    structure = tuple((p["kernel"], int(p.get("order", 0))) for p in hyper["parts"])
    values = [
        {k: jnp.asarray(v, dtype=jnp.float64) for k, v in p.items() if k not in ("kernel", "order")}
        for p in hyper["parts"]
    ]
    return structure, values


@partial(jax.jit, static_argnums=0)
def _kernel_matrix_jit(
    structure: tuple[Any, ...], values: list[dict[str, Any]], X1: Any, X2: Any
) -> jax.Array:
    parts = [
        {**v, "kernel": name, "order": order}
        for (name, order), v in zip(structure, values, strict=True)
    ]
    return cross(sum_kernel(parts, [p["weight"] for p in parts]), X1, X2)
