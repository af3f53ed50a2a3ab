"""The Gaussian-process reference prior: f ~ GP(0, a²·k) with exact conditioning (SPEC §5).

Kernel parts come from GPJax (Matérn-1/2, 3/2, 5/2, RBF, rational quadratic, powered
exponential, periodic, linear, arc-cosine); a dataset's kernel family is a sum of parts, e.g.
``"rq+linear"``. The fitted *unit kernel* is

    k̃(x, x') = Σ_i w_i k_i(x, x'),   Σ_i w_i = 1,

where every part k_i has its GPJax variance fixed to 1 and w_i = v_i / Σ_j v_j are the
relative weights of the fitted part variances v_i. The prior kernel is a²·k̃: the fitted
overall variance Σ_j v_j is replaced by a² (SPEC §5, paper B.2), the relative weights kept.

Hyperparameters (ARD lengthscales, weights, RQ α, periodic periods, powered-exponential
power, arc-cosine order/weight/bias variances) are fitted to the standardised real target
by maximising the log marginal likelihood with a homoscedastic Gaussian noise term
(L-BFGS-B on the JAX gradient, several restarts), on at most 2000 candidate rows.

Numerics: every computation runs in float64 inside a scoped ``jax.enable_x64(True)``. Kernel
matrices are jitted GPJax code; the dense linear algebra runs in JAX on an accelerator and in
SciPy's LAPACK on CPU (faster there than JAX's CPU kernels). Cholesky factorisations use
an adaptive jitter: none first for the noisy training matrix, then ``1e-10·mean(diag)`` for
covariance matrices, multiplied by 10 until the factorisation is finite (at most
``1e-4·mean(diag)``); the jitter used is recorded in the diagnostics.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
import scipy.linalg.blas
import scipy.optimize
from gpjax import kernels as gk

from udbench import __version__
from udbench._seeding import derive_seed, make_rng
from udbench._validation import UdbenchError, check_array, check_choice, param_error
from udbench.priors.base import (
    FIDELITIES,
    SCALE_N_DRAWS,
    Posterior,
    scale_from_unit_draws,
)

__all__ = [
    "FIT_SETTINGS",
    "KERNEL_PARTS",
    "GPPrior",
    "KernelFit",
    "build_prior",
    "fit_cache_path",
    "fit_kernel",
    "kernel_matrix",
    "log_marginal_likelihood",
    "parse_kernel_family",
]

#: Kernel part name -> the shape hyperparameters it has (besides its weight).
KERNEL_PARTS: dict[str, tuple[str, ...]] = {
    "matern12": ("lengthscale",),
    "matern32": ("lengthscale",),
    "matern52": ("lengthscale",),
    "rbf": ("lengthscale",),
    "rq": ("lengthscale", "alpha"),
    "powexp": ("lengthscale", "power"),
    "periodic": ("lengthscale", "period"),
    "linear": (),
    "arccosine": ("weight_variance", "bias_variance"),
}

#: Kernel-fit settings per fidelity. ``paper`` and ``standard`` share one fit (the GP has
#: no sampler settings, so both give the same prior); ``smoke`` fits on few rows, for tests.
FIT_SETTINGS: dict[str, dict[str, int]] = {
    "paper": {"max_rows": 2000, "restarts": 3, "maxiter": 300},
    "standard": {"max_rows": 2000, "restarts": 3, "maxiter": 300},
    "smoke": {"max_rows": 200, "restarts": 2, "maxiter": 50},
}

_ARCCOS_ORDERS = (0, 1, 2)
_NOISE_FLOOR = 1e-6
_JITTER_START = 1e-10
_JITTER_MAX = 1e-4


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


# --------------------------------------------------------------------------------------
# Kernels (GPJax parts; unit variance, weighted sum)
# --------------------------------------------------------------------------------------
def _part_kernel(part: dict[str, Any], variance: Any) -> gk.AbstractKernel:
    name = part["kernel"]
    if name in ("matern12", "matern32", "matern52", "rbf"):
        cls = {
            "matern12": gk.Matern12,
            "matern32": gk.Matern32,
            "matern52": gk.Matern52,
            "rbf": gk.RBF,
        }[name]
        return cls(lengthscale=jnp.asarray(part["lengthscale"]), variance=variance)
    if name == "rq":
        return gk.RationalQuadratic(
            lengthscale=jnp.asarray(part["lengthscale"]),
            variance=variance,
            alpha=jnp.asarray(part["alpha"]),
        )
    if name == "powexp":
        return gk.PoweredExponential(
            lengthscale=jnp.asarray(part["lengthscale"]),
            variance=variance,
            power=jnp.asarray(part["power"]),
        )
    if name == "periodic":
        return gk.Periodic(
            lengthscale=jnp.asarray(part["lengthscale"]),
            variance=variance,
            period=jnp.asarray(part["period"]),
        )
    if name == "linear":
        return gk.Linear(variance=variance)
    if name == "arccosine":
        return gk.ArcCosine(
            order=int(part["order"]),
            variance=variance,
            weight_variance=jnp.asarray(part["weight_variance"]),
            bias_variance=jnp.asarray(part["bias_variance"]),
        )
    raise param_error("GP kernel", "kernel", f"be one of {list(KERNEL_PARTS)}", name)


def _sum_kernel(parts: list[dict[str, Any]], variances: list[Any]) -> gk.AbstractKernel:
    kernel = _part_kernel(parts[0], variances[0])
    for part, v in zip(parts[1:], variances[1:], strict=True):
        kernel = kernel + _part_kernel(part, v)
    return kernel


def _cross(kernel: gk.AbstractKernel, X1: Any, X2: Any) -> jax.Array:
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
    return _cross(_sum_kernel(parts, [p["weight"] for p in parts]), X1, X2)


# --------------------------------------------------------------------------------------
# Marginal-likelihood fit
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelFit:
    """Result of :func:`fit_kernel`.

    Attributes
    ----------
    hyper : dict
        ``{"kernel_family": str, "parts": [{"kernel", "weight", ...shape params}]}`` with
        weights summing to 1 (the unit kernel k̃).
    total_variance : float
        Fitted overall variance Σ v_i on the standardised target (replaced by a² later).
    noise_variance : float
        Fitted homoscedastic noise variance on the standardised target.
    lml_initial, lml_final : float
        Log marginal likelihood at the first restart's initial values and at the optimum.
    initial : dict
        The first restart's initial hyperparameters in the same layout as ``hyper`` plus
        ``total_variance`` and ``noise_variance``.
    settings : dict
        ``max_rows``, ``restarts``, ``maxiter``, ``n_rows`` used, ``seed``.
    """

    hyper: dict[str, Any]
    total_variance: float
    noise_variance: float
    lml_initial: float
    lml_final: float
    initial: dict[str, Any]
    settings: dict[str, Any]


def _init_theta(parts: tuple[str, ...], d: int) -> dict[str, jax.Array]:
    """Unconstrained (log-space) initial values, restart 0: lengthscales √d/2 etc."""
    theta: dict[str, jax.Array] = {"log_noise": jnp.log(jnp.asarray(0.1))}
    for i, p in enumerate(parts):
        theta[f"{i}.log_variance"] = jnp.log(jnp.asarray(1.0 / len(parts)))
        if "lengthscale" in KERNEL_PARTS[p]:
            ls = 0.5 * np.sqrt(d) if p != "periodic" else 1.0
            theta[f"{i}.log_lengthscale"] = jnp.full((d,), np.log(ls))
        if p == "rq":
            theta[f"{i}.log_alpha"] = jnp.log(jnp.asarray(1.0))
        if p == "powexp":  # power = 2·sigmoid(u), initial 1.0
            theta[f"{i}.logit_power"] = jnp.asarray(0.0)
        if p == "periodic":
            theta[f"{i}.log_period"] = jnp.full((d,), np.log(1.0))
        if p == "arccosine":
            theta[f"{i}.log_weight_variance"] = jnp.full((d,), np.log(1.0))
            theta[f"{i}.log_bias_variance"] = jnp.log(jnp.asarray(1.0))
    return theta


def _constrain(
    theta: dict[str, Any], parts: tuple[str, ...], orders: tuple[int, ...]
) -> tuple[list[dict[str, Any]], list[Any], Any]:
    specs, variances = [], []
    for i, p in enumerate(parts):
        spec: dict[str, Any] = {"kernel": p}
        if "lengthscale" in KERNEL_PARTS[p]:
            spec["lengthscale"] = jnp.exp(theta[f"{i}.log_lengthscale"])
        if p == "rq":
            spec["alpha"] = jnp.exp(theta[f"{i}.log_alpha"])
        if p == "powexp":
            spec["power"] = 2.0 * jax.nn.sigmoid(theta[f"{i}.logit_power"])
        if p == "periodic":
            spec["period"] = jnp.exp(theta[f"{i}.log_period"])
        if p == "arccosine":
            spec["order"] = orders[i]
            spec["weight_variance"] = jnp.exp(theta[f"{i}.log_weight_variance"])
            spec["bias_variance"] = jnp.exp(theta[f"{i}.log_bias_variance"])
        specs.append(spec)
        variances.append(jnp.exp(theta[f"{i}.log_variance"]))
    noise = _NOISE_FLOOR + jnp.exp(theta["log_noise"])
    return specs, variances, noise


def log_marginal_likelihood(K: Any, y: Any, noise_var: Any) -> Any:
    """Gaussian log marginal likelihood log N(y | 0, K + diag(noise_var)).

    Rasmussen & Williams (2006), eq. 2.30. ``K`` (n, n), ``y`` (n,), ``noise_var`` scalar
    or (n,). Returns a scalar (NaN if K + noise is not positive definite).
    """
    n = y.shape[0]
    B = K + jnp.diag(jnp.broadcast_to(noise_var, (n,)))
    L = jnp.linalg.cholesky(B)
    alpha = jax.scipy.linalg.solve_triangular(L, y, lower=True)
    return -0.5 * alpha @ alpha - jnp.sum(jnp.log(jnp.diag(L))) - 0.5 * n * jnp.log(2 * jnp.pi)


def _make_objective(
    X: np.ndarray, y: np.ndarray, parts: tuple[str, ...], orders: tuple[int, ...], unravel: Any
) -> Any:
    """Jitted value and gradient of the negative log marginal likelihood (flat θ)."""
    Xj, yj = jnp.asarray(X), jnp.asarray(y)

    def neg_lml(flat: jax.Array) -> jax.Array:
        specs, variances, noise = _constrain(unravel(flat), parts, orders)
        K = _cross(_sum_kernel(specs, variances), Xj, Xj)
        return -log_marginal_likelihood(K, yj, noise)

    return jax.jit(jax.value_and_grad(neg_lml))


def _fit_one(
    value_and_grad: Any, flat0: np.ndarray, maxiter: int
) -> tuple[np.ndarray, float, float]:
    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        v, g = value_and_grad(jnp.asarray(x))
        v, g = float(v), np.asarray(g, dtype=np.float64)
        if not np.isfinite(v) or not np.all(np.isfinite(g)):
            return 1e300, np.zeros_like(g)
        return v, g

    lml0 = -fun(flat0)[0]
    res = scipy.optimize.minimize(
        fun,
        flat0,
        jac=True,
        method="L-BFGS-B",
        bounds=[(-12.0, 12.0)] * flat0.size,
        options={"maxiter": maxiter},
    )
    return np.asarray(res.x), lml0, -float(res.fun)


def _to_hyper(
    theta: dict[str, Any], parts: tuple[str, ...], orders: tuple[int, ...], family: str
) -> tuple[dict[str, Any], float, float]:
    specs, variances, noise = _constrain(theta, parts, orders)
    v = np.array([float(x) for x in variances])
    out_parts = []
    for spec, vi in zip(specs, v, strict=True):
        entry: dict[str, Any] = {"kernel": spec["kernel"], "weight": float(vi / v.sum())}
        for k, val in spec.items():
            if k == "kernel":
                continue
            arr = np.asarray(val, dtype=np.float64)
            entry[k] = arr.tolist() if arr.ndim else (int(val) if k == "order" else float(arr))
        out_parts.append(entry)
    return {"kernel_family": family, "parts": out_parts}, float(v.sum()), float(noise)


def fit_kernel(
    X: np.ndarray,
    y: np.ndarray,
    kernel_family: str,
    *,
    seed: int = 0,
    restarts: int = 3,
    maxiter: int = 300,
) -> KernelFit:
    """Fit the kernel's hyperparameters to (X, y) by maximising the marginal likelihood.

    ``y`` is standardised (mean 0, SD 1) here. Restart 0 starts from fixed defaults
    (ARD lengthscales √d/2, periodic lengthscales and periods 1, RQ α 1, power 1, arc-cosine
    variances 1, equal part variances, noise 0.1); restarts 1, 2, … perturb every log-scale
    value by N(0, 1) from a stream derived from ``seed``. The best final optimum wins. For an
    arc-cosine part every order in {0, 1, 2} is fitted and the best kept.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Inputs (at most a few thousand rows; cost O(n³) per iteration).
    y : ndarray, shape (n,)
        Real target (any units).
    kernel_family : str
        E.g. ``"matern32"`` or ``"rq+linear"`` (see :data:`KERNEL_PARTS`).
    seed : int
        Seed for the restarts' perturbations.
    restarts, maxiter : int
        Number of starts and L-BFGS-B iterations per start.

    Returns
    -------
    KernelFit

    Raises
    ------
    UdbenchError
        Bad shapes, a constant target, or an unknown kernel part.
    """
    X = check_array("fit_kernel", "X", X, ndim=2)
    y = check_array("fit_kernel", "y", y, shape=(X.shape[0],))
    parts = parse_kernel_family(kernel_family)
    if not np.std(y) > 0:
        raise param_error("fit_kernel", "y", "not be constant", float(y[0]))
    ys = (y - y.mean()) / y.std()
    d = X.shape[1]
    arc = [i for i, p in enumerate(parts) if p == "arccosine"]
    order_choices = [
        tuple(o if i in arc else 0 for i in range(len(parts)))
        for o in (_ARCCOS_ORDERS if arc else (0,))
    ]
    rng = make_rng("gp-fit-restarts", seed)
    best: tuple[float, dict[str, Any], tuple[int, ...]] | None = None
    lml_initial = float("nan")
    initial: dict[str, Any] = {}
    with jax.enable_x64(True):
        theta0 = _init_theta(parts, d)
        starts = [theta0]
        for _ in range(1, max(1, restarts)):
            starts.append({k: v + rng.standard_normal(np.shape(v)) for k, v in theta0.items()})
        from jax.flatten_util import ravel_pytree

        _, unravel = ravel_pytree(theta0)
        for oi, orders in enumerate(order_choices):
            objective = _make_objective(X, ys, parts, orders, unravel)
            for si, start in enumerate(starts):
                flat0 = np.asarray(ravel_pytree(start)[0], dtype=np.float64)
                flat, lml0, lml1 = _fit_one(objective, flat0, maxiter)
                if oi == 0 and si == 0:
                    lml_initial = lml0
                    h0, v0, n0 = _to_hyper(start, parts, orders, kernel_family)
                    initial = {**h0, "total_variance": v0, "noise_variance": n0}
                if np.isfinite(lml1) and (best is None or lml1 > best[0]):
                    best = (lml1, unravel(jnp.asarray(flat)), orders)
        if best is None:
            raise UdbenchError(f"fit_kernel: no restart of {kernel_family!r} converged")
        hyper, total_var, noise = _to_hyper(best[1], parts, best[2], kernel_family)
    return KernelFit(
        hyper=hyper,
        total_variance=total_var,
        noise_variance=noise,
        lml_initial=lml_initial,
        lml_final=best[0],
        initial=initial,
        settings={
            "restarts": restarts,
            "maxiter": maxiter,
            "n_rows": int(X.shape[0]),
            "seed": seed,
        },
    )


# --------------------------------------------------------------------------------------
# Linear algebra helpers
# --------------------------------------------------------------------------------------
def _on_accelerator() -> bool:
    """True when JAX runs on a GPU/TPU: the linear algebra then stays in JAX; on CPU it
    uses SciPy's LAPACK, which is faster there than JAX's CPU kernels."""
    return jax.default_backend() != "cpu"


def _xp() -> Any:
    return jnp if _on_accelerator() else np


def _cholesky(A: Any) -> Any | None:
    if _on_accelerator():
        L = jnp.linalg.cholesky(A)
        return L if bool(jnp.all(jnp.isfinite(jnp.diag(L)))) else None
    try:
        return scipy.linalg.cholesky(A, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return None


def _solve(L: Any, B: Any, *, trans: bool = False) -> Any:
    """L⁻¹B (or L⁻ᵀB with ``trans``) for lower-triangular L."""
    if _on_accelerator():
        return jax.scipy.linalg.solve_triangular(L, B, lower=True, trans=1 if trans else 0)
    return scipy.linalg.solve_triangular(
        L, B, lower=True, trans=1 if trans else 0, check_finite=False
    )


def _add_diag(A: Any, value: Any) -> Any:
    """A + diag(value) (value scalar or vector), without forming an identity matrix."""
    if _on_accelerator():
        return A + jnp.diag(jnp.broadcast_to(value, (A.shape[0],)))
    out = np.array(A, dtype=np.float64, copy=True)
    out[np.diag_indices_from(out)] += value
    return out


def _tri_matmul_T(z: Any, L: Any) -> Any:
    """z @ Lᵀ for lower-triangular L (BLAS trmm on CPU: half the flops of a dense product)."""
    if _on_accelerator():
        return z @ L.T
    trmm = scipy.linalg.blas.get_blas_funcs("trmm", (L,))
    # (L zᵀ)ᵀ computed in Fortran order: zᵀ is an F-contiguous view of C-contiguous z
    out = trmm(1.0, np.asfortranarray(L), np.asfortranarray(z.T), lower=1)
    return np.ascontiguousarray(out.T)


def _chol(A: Any, *, start: float | None) -> tuple[Any, float]:
    """Cholesky factor with adaptive jitter; returns (L, jitter added)."""
    xp = _xp()
    scale = float(xp.mean(xp.diag(A)))
    jitter = 0.0 if start is None else start * scale
    while True:
        L = _cholesky(_add_diag(A, jitter) if jitter else A)
        if L is not None:
            return L, jitter
        jitter = _JITTER_START * scale if jitter == 0.0 else jitter * 10.0
        if jitter > _JITTER_MAX * scale * (1 + 1e-9):
            raise UdbenchError(
                "GPPrior: covariance matrix is not positive definite even with jitter "
                f"{_JITTER_MAX:g}·mean(diag)"
            )


def _normals(key: int, shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(int(key)).standard_normal(shape)


# --------------------------------------------------------------------------------------
# The prior
# --------------------------------------------------------------------------------------
class GPPrior:
    """GP reference prior f ~ GP(0, a²·k̃) bound to one dataset (SPEC §5, paper B.2, B.5).

    Parameters
    ----------
    hyper : dict
        Unit-kernel hyperparameters (``{"kernel_family", "parts"}``, weights summing to 1),
        as returned by :func:`fit_kernel`.
    scale : float
        The scale constant a (SPEC §5); the prior variance of a stationary kernel is a².
    settings : dict, optional
        Extra provenance recorded in :attr:`settings` (dataset, fidelity, fit summary).
    draws_at_train : bool, default True
        Whether :meth:`condition` also returns joint posterior draws at the training inputs
        (SPEC §6, for checks), by Matheron's rule on the joint prior at (eval, train).
    """

    family = "gp"

    def __init__(
        self,
        hyper: dict[str, Any],
        scale: float,
        settings: dict[str, Any] | None = None,
        draws_at_train: bool = True,
    ) -> None:
        parse_kernel_family(hyper["kernel_family"])
        self.hyper = hyper
        self._scale = float(scale)
        self._settings = dict(settings or {})
        self.draws_at_train = bool(draws_at_train)
        self._chol_cache: tuple[str, tuple[Any, float, Any]] | None = None

    @property
    def scale(self) -> float:
        """The scale constant a."""
        return self._scale

    @property
    def settings(self) -> dict[str, Any]:
        """JSON-serialisable description: family, kernel hyperparameters, a, provenance."""
        return {
            "family": "gp",
            "scale": self._scale,
            "kernel": self.hyper,
            "draws_at_train": self.draws_at_train,
            **self._settings,
        }

    def covariance(self, X1: np.ndarray, X2: np.ndarray | None = None) -> np.ndarray:
        """Prior covariance a²·k̃(X1, X2), float64, shape (m1, m2)."""
        with jax.enable_x64(True):
            return np.asarray(self._scale**2 * kernel_matrix(self.hyper, X1, X2))

    def sample(self, X: np.ndarray, key: int, n_draws: int = 1) -> np.ndarray:
        """Joint prior draws of f at ``X``.

        Parameters
        ----------
        X : ndarray, shape (m, d)
        key : int
            Seed of the standard-normal stream (NumPy PCG64).
        n_draws : int

        Returns
        -------
        ndarray, shape (n_draws, m), float64
            ``z @ L.T`` with L the Cholesky factor of a²·k̃(X, X) + jitter·I.
        """
        X = check_array("GPPrior.sample", "X", X, ndim=2)
        with jax.enable_x64(True):
            L, _, _ = self._prior_chol(X)
            z = _xp().asarray(_normals(key, (int(n_draws), X.shape[0])))
            return np.asarray(_tri_matmul_T(z, L))

    def _prior_chol(self, X: np.ndarray) -> tuple[Any, float, Any]:
        """(Cholesky factor of a²k̃(X, X) + jitter·I, jitter, a²k̃(X, X)); the last one is
        kept, so that drawing f* and conditioning at the same inputs factorise once."""
        fp = _fingerprint(X) + f"-{X.shape}"
        if self._chol_cache is not None and self._chol_cache[0] == fp:
            return self._chol_cache[1]
        K = _xp().asarray(self._scale**2 * kernel_matrix(self.hyper, X))
        L, jitter = _chol(K, start=_JITTER_START)
        self._chol_cache = (fp, (L, jitter, K))
        return L, jitter, K

    def condition(
        self,
        X_train: np.ndarray,
        y: np.ndarray,
        noise_var_train: np.ndarray,
        X_eval: np.ndarray,
        key: int,
        n_draws: int,
    ) -> Posterior:
        """Exact GP posterior with known heteroscedastic noise (R&W 2006 eq. 2.22–2.24).

        With B = a²K_tt + diag(σ²) = LLᵀ and A = L⁻¹ a²K_te, the exact posterior mean is
        m_S = Aᵀ L⁻¹ y and the exact variance σ_f² = a²k(x, x) − colsum(A²) (no jitter).

        Draws, with ``draws_at_train`` (default): joint draws at (eval, train) by Matheron's
        rule (Wilson et al. 2020, "pathwise conditioning"): f ~ N(0, a²K_JJ + jitter·I) at
        J = (eval, train), ε ~ N(0, diag σ²), f_post = f + a²K_Jt B⁻¹ (y − f_t − ε). This has
        exactly the posterior distribution of the jittered prior; the Cholesky factor of
        a²K_JJ is shared with the f* draw when both are made at the same inputs (as in
        :func:`udbench.tasks.make_task`). Without ``draws_at_train``: the eval-only
        posterior covariance a²K_ee − AᵀA is factorised (adaptive jitter) and
        ``mean + z @ chol(C)ᵀ``. Standard normals z come from ``key``.

        Parameters
        ----------
        X_train : ndarray, shape (n, d)
        y : ndarray, shape (n,)
            Noisy training targets.
        noise_var_train : ndarray, shape (n,)
            Known noise variances σ²(x_i) > 0, target units squared.
        X_eval : ndarray, shape (n_eval, d)
        key : int
            Seed of the draws.
        n_draws : int
            D.

        Returns
        -------
        Posterior
            ``draws_eval`` (D, n_eval), ``draws_train`` (D, n) or None, exact ``mean`` and
            ``var`` (n_eval,), diagnostics ``{"jitter_train", "jitter_posterior"}``.

        Raises
        ------
        UdbenchError
            Bad shapes, non-positive noise variances.
        """
        comp = "GPPrior.condition"
        X_train = check_array(comp, "X_train", X_train, ndim=2)
        n, d = X_train.shape
        y = check_array(comp, "y", y, shape=(n,))
        s2 = check_array(comp, "noise_var_train", noise_var_train, shape=(n,), nonnegative=True)
        if n and not np.min(s2) > 0:
            raise param_error(comp, "noise_var_train", "be > 0", float(np.min(s2)))
        X_eval = check_array(comp, "X_eval", X_eval, shape=(None, d))
        D = int(n_draws)
        if D < 1:
            raise param_error(comp, "n_draws", "be >= 1", n_draws)
        m = X_eval.shape[0]
        a2 = self._scale**2
        with jax.enable_x64(True):
            xp = _xp()
            s2j = xp.asarray(s2)
            yj = xp.asarray(y)
            if self.draws_at_train:
                # Matheron's rule on the joint prior at J = (eval, train)
                XJ = np.vstack([X_eval, X_train])
                LJ, jit_c, KJ = self._prior_chol(XJ)
                K_te, K_tt = KJ[m:, :m], KJ[m:, m:]
            else:
                K_tt = xp.asarray(a2 * kernel_matrix(self.hyper, X_train))
                K_te = xp.asarray(a2 * kernel_matrix(self.hyper, X_train, X_eval))
            L, jit_t = _chol(_add_diag(K_tt, s2j), start=None)
            A = _solve(L, K_te)  # (n, m)
            w = _solve(L, yj)
            mean = A.T @ w
            if self.draws_at_train:
                var = xp.clip(xp.diag(KJ)[:m] - xp.sum(A * A, axis=0), 0.0, None)
                z = xp.asarray(_normals(key, (D, m + 2 * n)))
                f_prior = _tri_matmul_T(z[:, : m + n], LJ)  # (D, m + n) prior draws at J
                eps = z[:, m + n :] * xp.sqrt(s2j)[None, :]
                resid = yj[None, :] - f_prior[:, m:] - eps  # (D, n)
                W = _solve(L, resid.T)  # L⁻¹ r, (n, D)
                V = _solve(L, W, trans=True)  # B⁻¹ r
                # eval block: a²K_et B⁻¹ r = Aᵀ L⁻¹ r; train block: a²K_tt B⁻¹ r = r − Σ B⁻¹ r
                update = xp.concatenate([A.T @ W, resid.T - s2j[:, None] * V], axis=0)
                draws = f_prior + update.T
            else:
                K_ee = xp.asarray(a2 * kernel_matrix(self.hyper, X_eval))
                var = xp.clip(xp.diag(K_ee) - xp.sum(A * A, axis=0), 0.0, None)
                C = K_ee - A.T @ A
                Lc, jit_c = _chol(0.5 * (C + C.T), start=_JITTER_START)
                z = xp.asarray(_normals(key, (D, m)))
                draws = mean[None, :] + _tri_matmul_T(z, Lc)
            draws_np = np.asarray(draws)
            post = Posterior(
                draws_eval=np.ascontiguousarray(draws_np[:, :m]),
                draws_train=np.ascontiguousarray(draws_np[:, m:]) if self.draws_at_train else None,
                mean=np.asarray(mean),
                var=np.asarray(var),
                diagnostics={
                    "jitter_train": float(jit_t),
                    "jitter_prior" if self.draws_at_train else "jitter_posterior": float(jit_c),
                    "draws_method": "matheron" if self.draws_at_train else "posterior_cholesky",
                },
            )
        return post


# --------------------------------------------------------------------------------------
# Binding to a dataset: fit (cached) and scale constant
# --------------------------------------------------------------------------------------
def _cache_root() -> Path:
    from udbench._cache import cache_dir

    return cache_dir()


def _fingerprint(*arrays: np.ndarray) -> str:
    h = hashlib.blake2b(digest_size=8)
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def fit_cache_path(key: str, kernel_family: str, fit: dict[str, int], fingerprint: str) -> Path:
    """Path of the JSON cache of one dataset's GP fit (``$UDBENCH_CACHE_DIR/priors/gp``)."""
    tag = f"r{fit['max_rows']}-s{fit['restarts']}-i{fit['maxiter']}"
    name = f"{key}__{kernel_family}__{tag}__{fingerprint}.json"
    return _cache_root() / "priors" / "gp" / name


def _write_json_atomic(path: Path, obj: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(obj, fh, indent=2, sort_keys=True)
        fh.write("\n")
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, path)


def build_prior(cov: Any, fidelity: str = "standard", *, use_cache: bool = True) -> GPPrior:
    """Fit (or load from cache) the dataset's kernel and set the scale constant a.

    Steps (SPEC §5): choose at most ``max_rows`` candidate rows with a stream derived from
    the dataset key; fit the kernel family of ``cov.spec.kernel_family`` to the real target
    ``cov.y_real`` at those rows (:func:`fit_kernel`); draw :data:`SCALE_N_DRAWS` unit-scale
    prior draws at the evaluation pool and set a = 1 / median SD. Fit and a are cached as
    JSON with the package version; a cache written by another version is refitted.

    Parameters
    ----------
    cov : udbench.data.Covariates
    fidelity : str
        One of :data:`~udbench.priors.base.FIDELITIES`; selects :data:`FIT_SETTINGS`.
    use_cache : bool
        Read and write the cache file.

    Returns
    -------
    GPPrior
    """
    check_choice("build_prior", "fidelity", fidelity, FIDELITIES)
    fit_set = FIT_SETTINGS[fidelity]
    family = cov.spec.kernel_family
    if not family:
        raise param_error("build_prior", "cov", "be a dataset with a GP kernel family", cov.key)
    X = np.asarray(cov.X, dtype=np.float64)
    fp = _fingerprint(X, np.asarray(cov.y_real, dtype=np.float64), np.asarray(cov.eval_idx))
    path = fit_cache_path(cov.key, family, fit_set, fp)
    record: dict[str, Any] | None = None
    if use_cache and path.is_file():
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            record = None
        if record is not None and record.get("udbench_version") != __version__:
            record = None
    if record is None:
        cand = np.asarray(cov.cand_idx)
        rng = make_rng("gp-fit-rows", cov.key)
        k = min(fit_set["max_rows"], cand.size)
        rows = np.sort(rng.choice(cand, size=k, replace=False))
        fit = fit_kernel(
            X[rows],
            np.asarray(cov.y_real, dtype=np.float64)[rows],
            family,
            seed=derive_seed("gp-fit", cov.key),
            restarts=fit_set["restarts"],
            maxiter=fit_set["maxiter"],
        )
        unit = GPPrior(fit.hyper, 1.0, draws_at_train=False)
        draws = unit.sample(
            X[np.asarray(cov.eval_idx)], derive_seed("gp-scale", cov.key), SCALE_N_DRAWS
        )
        a = scale_from_unit_draws(draws, "GP scale constant")
        record = {
            "udbench_version": __version__,
            "dataset": cov.key,
            "kernel_family": family,
            "fit_settings": {**fit_set, **fit.settings},
            "data_fingerprint": fp,
            "hyperparameters": fit.hyper,
            "fitted_total_variance": fit.total_variance,
            "fitted_noise_variance": fit.noise_variance,
            "lml_initial": fit.lml_initial,
            "lml_final": fit.lml_final,
            "initial": fit.initial,
            "scale": a,
            "scale_n_draws": SCALE_N_DRAWS,
        }
        if use_cache:
            _write_json_atomic(path, record)
    settings = {
        "dataset": cov.key,
        "fidelity": fidelity,
        "fit_settings": record["fit_settings"],
        "lml_initial": record["lml_initial"],
        "lml_final": record["lml_final"],
        "fitted_noise_variance": record["fitted_noise_variance"],
    }
    return GPPrior(record["hyperparameters"], record["scale"], settings=settings)
