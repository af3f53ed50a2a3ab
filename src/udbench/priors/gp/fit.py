"""Marginal-likelihood fit of the GP prior's kernel (SPEC §5).

Hyperparameters (ARD lengthscales, part weights, RQ α, periodic periods, powered-exponential
power, arc-cosine order/weight/bias variances; see the rows of
:data:`udbench.priors.gp.kernels.PARTS`) are fitted to the standardised real target by
maximising the log marginal likelihood with a homoscedastic Gaussian noise term: L-BFGS-B
on the JAX gradient (log-parameterised, bounds e^±12), several restarts.

:class:`~udbench._optim.LBFGSBObjective` (a JAX value-and-gradient as SciPy's L-BFGS-B takes
it) is the ground-layer driver shared with the GP *methods* (:mod:`udbench.methods.gp`,
:mod:`udbench.methods.vlgp`), re-exported here; the objectives themselves differ (there: a
Matérn-5/2 + linear kernel on softplus parameters with a hand-written gradient).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from udbench._optim import LBFGSBObjective
from udbench._seeding import make_rng
from udbench._validation import UdbenchError, check_array, param_error
from udbench.priors.gp.kernels import PARTS, cross, parse_kernel_family, sum_kernel

__all__ = [
    "FIT_SETTINGS",
    "KernelFit",
    "LBFGSBObjective",
    "default_kernel_hyper",
    "fit_kernel",
    "log_marginal_likelihood",
    "select_kernel_family",
]

#: Kernel-fit settings per fidelity. ``paper`` and ``standard`` share one fit (the GP has
#: no sampler settings, so both give the same prior); ``smoke`` fits on few rows, for tests.
FIT_SETTINGS: dict[str, dict[str, int]] = {
    "paper": {"max_rows": 2000, "restarts": 3, "maxiter": 300},
    "standard": {"max_rows": 2000, "restarts": 3, "maxiter": 300},
    "smoke": {"max_rows": 200, "restarts": 2, "maxiter": 50},
}

_NOISE_FLOOR = 1e-6
#: Bound of every unconstrained (log-scale) parameter during the fit.
_BOUND = 12.0


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
    """Unconstrained (log-space) initial values, restart 0: lengthscales √d/2 etc.

    The key order (noise, then per part its variance and shape parameters in table order)
    fixes the order in which restarts draw their perturbations.
    """
    theta: dict[str, jax.Array] = {"log_noise": jnp.log(jnp.asarray(0.1))}
    for i, p in enumerate(parts):
        theta[f"{i}.log_variance"] = jnp.log(jnp.asarray(1.0 / len(parts)))
        for param in PARTS[p].params:
            theta[f"{i}.{param.key}"] = param.initial(d)
    return theta


def _constrain(
    theta: dict[str, Any], parts: tuple[str, ...], orders: tuple[int, ...]
) -> tuple[list[dict[str, Any]], list[Any], Any]:
    """Constrained part specs, part variances and the fitted noise (None if the noise is known)."""
    specs, variances = [], []
    for i, p in enumerate(parts):
        part = PARTS[p]
        spec: dict[str, Any] = {"kernel": p}
        if part.orders:
            spec["order"] = orders[i]
        for param in part.params:
            spec[param.name] = param.constrain(theta[f"{i}.{param.key}"])
        specs.append(spec)
        variances.append(jnp.exp(theta[f"{i}.log_variance"]))
    noise = _NOISE_FLOOR + jnp.exp(theta["log_noise"]) if "log_noise" in theta else None
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
    X: np.ndarray,
    y: np.ndarray,
    parts: tuple[str, ...],
    orders: tuple[int, ...],
    unravel: Any,
    noise_var: np.ndarray | None = None,
) -> Any:
    """Jitted value and gradient of the negative log marginal likelihood (flat θ).

    With ``noise_var`` (shape (n,)) the noise is known and not part of θ.
    """
    Xj, yj = jnp.asarray(X), jnp.asarray(y)
    known = None if noise_var is None else jnp.asarray(noise_var)

    def neg_lml(flat: jax.Array) -> jax.Array:
        specs, variances, noise = _constrain(unravel(flat), parts, orders)
        K = cross(sum_kernel(specs, variances), Xj, Xj)
        return -log_marginal_likelihood(K, yj, noise if known is None else known)

    return jax.jit(jax.value_and_grad(neg_lml))


def _fit_one(
    value_and_grad: Any, flat0: np.ndarray, maxiter: int
) -> tuple[np.ndarray, float, float]:
    fun = LBFGSBObjective(
        lambda x: value_and_grad(jnp.asarray(x)), penalty=lambda _: 1e300, x0=flat0
    )
    lml0 = -fun(flat0)[0]
    res = fun.minimize(flat0, [(-_BOUND, _BOUND)] * flat0.size, maxiter)
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
    noise_value = float("nan") if noise is None else float(noise)
    return {"kernel_family": family, "parts": out_parts}, float(v.sum()), noise_value


def fit_kernel(
    X: np.ndarray,
    y: np.ndarray,
    kernel_family: str,
    *,
    seed: int = 0,
    restarts: int = 3,
    maxiter: int = 300,
    noise_var: np.ndarray | None = None,
) -> KernelFit:
    """Fit the kernel's hyperparameters to (X, y) by maximising the marginal likelihood.

    ``y`` is standardised (mean 0, SD 1) here, and a homoscedastic noise variance is fitted
    with the kernel. With ``noise_var`` (the known noise variance of every observation, as
    in a task's training sample) the noise is not fitted and ``y`` is used as given (no
    centring or scaling: the prior has mean zero and the noise is in the units of ``y``), so
    :attr:`KernelFit.total_variance` is the fitted prior variance a² in those units and
    :attr:`KernelFit.noise_variance` is NaN; restart 0 then starts from a total variance
    max(Var(y) − mean(noise_var), 0.1·Var(y)), shared equally by the parts.

    Restart 0 starts from fixed defaults (ARD lengthscales √d/2, periodic lengthscales and
    periods 1, RQ α 1, power 1, arc-cosine variances 1, equal part variances, noise 0.1);
    restarts 1, 2, … perturb every log-scale value by N(0, 1) from a stream derived from
    ``seed``. The best final optimum wins. For an
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
    noise_var : ndarray, shape (n,), optional
        Known noise variances (> 0, units of ``y`` squared); see above.

    Returns
    -------
    KernelFit

    Raises
    ------
    UdbenchError
        Bad shapes, a constant target, non-positive known noise variances, or an unknown
        kernel part.
    """
    X = check_array("fit_kernel", "X", X, ndim=2)
    y = check_array("fit_kernel", "y", y, shape=(X.shape[0],))
    parts = parse_kernel_family(kernel_family)
    if not np.std(y) > 0:
        raise param_error("fit_kernel", "y", "not be constant", float(y[0]))
    known: np.ndarray | None = None
    if noise_var is None:
        ys = (y - y.mean()) / y.std()
    else:
        known = check_array("fit_kernel", "noise_var", noise_var, shape=(X.shape[0],))
        if not np.min(known) > 0:
            raise param_error("fit_kernel", "noise_var", "be > 0", float(np.min(known)))
        ys = y
    d = X.shape[1]
    # each arc-cosine order in turn (the same order for every arc-cosine part)
    arc = [i for i, p in enumerate(parts) if PARTS[p].orders]
    arc_orders = PARTS["arccosine"].orders
    order_choices = [
        tuple(o if i in arc else 0 for i in range(len(parts)))
        for o in (arc_orders if arc else (0,))
    ]
    rng = make_rng("gp-fit-restarts", seed)
    best: tuple[float, dict[str, Any], tuple[int, ...]] | None = None
    lml_initial = float("nan")
    initial: dict[str, Any] = {}
    with jax.enable_x64(True):
        theta0 = _init_theta(parts, d)
        if known is not None:  # known noise: not fitted; start near the signal's variance
            del theta0["log_noise"]
            total0 = max(float(np.var(y) - np.mean(known)), 0.1 * float(np.var(y)))
            for i in range(len(parts)):
                theta0[f"{i}.log_variance"] = jnp.log(jnp.asarray(total0 / len(parts)))
        starts = [theta0]
        for _ in range(1, max(1, restarts)):
            starts.append({k: v + rng.standard_normal(np.shape(v)) for k, v in theta0.items()})
        from jax.flatten_util import ravel_pytree

        _, unravel = ravel_pytree(theta0)
        for oi, orders in enumerate(order_choices):
            objective = _make_objective(X, ys, parts, orders, unravel, known)
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
            **({"known_noise": True} if known is not None else {}),
        },
    )


#: Arc-cosine order used by :func:`default_kernel_hyper` (order 1: the ReLU-network kernel).
DEFAULT_ARCCOSINE_ORDER = 1


def default_kernel_hyper(kernel_family: str, d: int) -> dict[str, Any]:
    """Unit-kernel hyperparameters of ``kernel_family`` at the fit's fixed starting values.

    Used for a dataset without a real target, where nothing can be fitted: ARD lengthscales
    √d/2, periodic lengthscales and periods 1, RQ α 1, power 1, arc-cosine variances 1 and
    order :data:`DEFAULT_ARCCOSINE_ORDER`, equal part weights (restart 0 of
    :func:`fit_kernel`).

    Parameters
    ----------
    kernel_family : str
        E.g. ``"rbf"`` or ``"rq+linear"``.
    d : int
        Number of covariates.

    Returns
    -------
    dict
        ``{"kernel_family", "parts"}`` as :attr:`KernelFit.hyper` (weights sum to 1).
    """
    parts = parse_kernel_family(kernel_family)
    orders = tuple(DEFAULT_ARCCOSINE_ORDER if PARTS[p].orders else 0 for p in parts)
    with jax.enable_x64(True):
        hyper, _, _ = _to_hyper(_init_theta(parts, int(d)), parts, orders, kernel_family)
    return hyper


def select_kernel_family(
    X: np.ndarray,
    y: np.ndarray,
    families: Sequence[str],
    *,
    seed: int = 0,
    restarts: int = 3,
    maxiter: int = 300,
) -> tuple[str, dict[str, float]]:
    """Choose the kernel family of largest maximised log marginal likelihood (type-II ML).

    Every family of ``families`` is fitted to (X, y) by :func:`fit_kernel` with the same
    rows, seed and settings; the family whose best optimum has the largest log marginal
    likelihood wins (ties: the first in ``families``). Type-II maximum likelihood over a
    small fixed set of families (Rasmussen & Williams 2006, §5.4); no complexity penalty
    beyond the one the marginal likelihood carries.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Scaled covariates (at most a few thousand rows).
    y : ndarray, shape (n,)
        The real target (standardised inside :func:`fit_kernel`).
    families : sequence of str
        Candidate families (``udbench datasets add`` passes SPEC §2's families,
        :func:`udbench.data.user.spec_kernel_families`).
    seed, restarts, maxiter : int
        Passed to :func:`fit_kernel`.

    Returns
    -------
    family : str
        The chosen family.
    lml : dict of str to float
        The maximised log marginal likelihood of every family (nats, standardised target).

    Raises
    ------
    UdbenchError
        Empty ``families``, an unknown kernel part, bad shapes or a constant target; no
        family converged.
    """
    if not families:
        raise param_error("select_kernel_family", "families", "be non-empty", list(families))
    lml: dict[str, float] = {}
    for family in families:
        try:
            fit = fit_kernel(X, y, family, seed=seed, restarts=restarts, maxiter=maxiter)
        except UdbenchError as err:
            if "converged" not in str(err):
                raise
            continue
        lml[family] = fit.lml_final
    if not lml:
        raise UdbenchError(f"select_kernel_family: no family of {list(families)} converged")
    best = max(lml, key=lambda f: (lml[f], -list(families).index(f)))
    return best, lml
