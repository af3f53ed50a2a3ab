"""Exact Gaussian-process regression with a Matérn-5/2 ARD + linear kernel (paper Appendix C.1).

Kernel (on standardised inputs): ``k(x, x') = σ_m² k_{5/2}(x, x'; ℓ_1..ℓ_d) + σ_l² xᵀx'``,
zero mean (targets standardised), Gaussian likelihood with one noise variance σ_n².
All of σ_m², ℓ_1..ℓ_d, σ_l², σ_n² maximise the log marginal likelihood (type-II ML).
Prediction at x: the latent posterior mean m(x), EU = the latent posterior variance
Var[f(x) | S], AU = σ_n² (constant in x); Rasmussen & Williams (2006) eqs. 2.25–2.26.

Implementation: the fitted model, its kernels and the prediction are GPJax's
(``Matern52 + Linear``, ``Gaussian``, exact conditioning). The type-II ML objective is
the same marginal likelihood written directly on a flat vector of unconstrained
(softplus, GPJax's bijection) hyperparameters: the Gram matrix as matrix products
(:func:`_gram`, tested equal to GPJax's ``gram``) and a hand-written gradient
``½(K⁻¹ − ααᵀ)`` for the Cholesky part (about 2.3n³ flops per value + gradient instead
of about 4.3n³ for reverse-mode through ``jnp.linalg.cholesky``), all in one
``jax.jit(jax.value_and_grad(...))`` compiled once per data shape. Profiling the former
GPJax ``conjugate_mll`` objective showed no recompilation per call; its cost was the
O(n³) linear algebra (and, at n = 3136, the per-pair ``vmap`` Gram matrix and its
transpose), see ``benchmarks/bench_methods.py`` and docs/methods.md. The optimiser is
SciPy's L-BFGS-B, driven through the ground-layer
:class:`~udbench._optim.LBFGSBObjective` (float64 conversion, non-finite guard,
best point seen). Everything runs in float64 inside a scoped ``jax.enable_x64(True)``;
the same code runs on GPU when JAX has one.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from udbench._validation import UdbenchError
from udbench.methods._gp_linalg import gaussian_nll_impl as _gaussian_nll_impl
from udbench.methods._gp_linalg import gram as _gram
from udbench.methods.base import BaseMethod, Prediction

__all__ = ["GP"]


def _gpjax() -> Any:
    import gpjax

    return gpjax


def _unpack(theta: Any) -> tuple[Any, Any, Any, Any]:
    """Unconstrained ``theta = (u_ℓ (d), u_σm², u_σl², u_σn)`` → constrained values.

    The bijection is GPJax's for its ``PositiveReal`` parameters (softplus), so the
    optimisation path is the one GPJax's own parameterisation would take.
    """
    import jax

    pos = jax.nn.softplus(theta)
    return pos[:-3], pos[-3], pos[-2], pos[-1]


def _neg_mll(theta: Any, Z: Any, y: Any, jitter: Any) -> Any:
    """Negative log marginal likelihood (R&W eq. 2.30) at unconstrained ``theta``.

    ``K + (σ_n² + jitter) I`` as GPJax's ``ExactPosterior`` forms it; one Cholesky.
    """
    import jax.numpy as jnp

    lengthscale, signal_var, linear_var, noise_std = _unpack(theta)
    K = _gram(Z, Z, lengthscale, signal_var, linear_var)
    K = K + (noise_std**2 + jitter) * jnp.eye(Z.shape[0], dtype=Z.dtype)
    return _compiled("nll")(K, y)


_COMPILED: dict[str, Any] = {}


def _compiled(name: str) -> Any:
    """Module-level compiled functions (created lazily so importing udbench stays light).

    ``jax.jit`` caches one executable per argument shape (and x64 mode), so repeated fits
    of the same size do not recompile.
    """
    if not _COMPILED:
        import equinox as eqx
        import jax

        _COMPILED["nll"] = _gaussian_nll_impl()
        _COMPILED["value_and_grad"] = jax.jit(jax.value_and_grad(_neg_mll))

        @eqx.filter_jit
        def predict(model: Any, data: Any, X_test: Any) -> Any:
            dist = model.condition(data)(X_test, covariance="diagonal")
            return dist.mean, dist.variance

        _COMPILED["predict"] = predict
    return _COMPILED[name]


class GP(BaseMethod):
    """Exact GP, Matérn-5/2 ARD + linear kernel, hyperparameters by marginal likelihood.

    Parameters
    ----------
    init_lengthscale : float, default 0.7
        Initial value of every ARD lengthscale (standardised input units).
    init_signal_variance : float, default 0.7
        Initial Matérn variance σ_m² (standardised target units).
    init_linear_variance : float, default 0.1
        Initial linear-kernel variance σ_l².
    init_noise_std : float, default 0.22
        Initial noise standard deviation σ_n (standardised target units).
    max_iter : int, default 200
        Maximum L-BFGS-B iterations of the marginal-likelihood optimisation.
    min_noise_std : float, default 0.01
        Lower bound on the fitted noise SD σ_n (standardised target units; 0.01 means a noise
        variance of at least 1e-4 of the target variance, the floor GPyTorch's Gaussian
        likelihood uses). Without it the type-II ML optimum can interpolate the data
        (σ_n² → 1e-29, measured on small diabetes tasks) and the Cholesky degenerates; on
        such samples the optimum may still sit at the floor. Set 0 to disable.
    standardize_X : bool, default True
        Centre and scale each input column by its training mean and SD before the kernel
        (:func:`udbench.methods.base.standardise_inputs`; a column constant in training is
        replaced by 0 whatever this setting, by :class:`~udbench.methods.base.BaseMethod`).
    random_state : int or None, default 0
        Unused (the fit is deterministic); accepted by the contract.

    Attributes
    ----------
    lengthscale_ : ndarray, shape (d,)
        Fitted ARD lengthscales (standardised input units).
    signal_variance_, linear_variance_ : float
        Fitted σ_m², σ_l² (standardised target units).
    noise_variance_ : float
        Fitted σ_n² in target units (the AU of every prediction).
    log_marginal_likelihood_ : float
        At the optimum, on standardised targets.
    n_iter_ : int
        L-BFGS-B iterations used.

    Notes
    -----
    Source: paper Appendix C.1 (kernel, type-II ML, EU = latent variance, AU = noise);
    the excerpt does not give the GP's search space: the declared one (initial values,
    log-uniform, the ranges of the paper's DKL search space in C.2) is udbench's choice and
    the defaults are its geometric centre (docs/methods.md). A jitter of 1e-6 (GPJax's
    default) is added to the training covariance.

    The optimum L-BFGS-B reaches is sensitive to the last bits of the gradient (the
    likelihood has several local optima on small samples), and those depend on how many
    threads XLA and OpenBLAS use: two fits agree bitwise only with the same thread counts.
    The runner computes every cell with one thread (docs/running.md, "Results do not depend
    on where a cell runs"); for direct use, see :func:`udbench._threads.cell_threads`.
    """

    name: ClassVar[str] = "gp"
    paper_index: ClassVar[int | None] = 2  # SPEC §8's list
    family: ClassVar[str] = "gp"
    constant_aleatoric: ClassVar[bool] = True
    epistemic_from: ClassVar[str] = "closed_form"
    description: ClassVar[str] = "Exact GP, Matérn-5/2 ARD + linear kernel, type-II ML (paper C.1)"
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        "init_lengthscale": {"type": "float", "low": 0.1, "high": 5.0, "log": True},
        "init_signal_variance": {"type": "float", "low": 0.1, "high": 5.0, "log": True},
        "init_noise_std": {"type": "float", "low": 0.05, "high": 1.0, "log": True},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        "init_lengthscale": {"type": "float", "low": 0.0, "low_open": True},
        "init_signal_variance": {"type": "float", "low": 0.0, "low_open": True},
        "init_linear_variance": {"type": "float", "low": 0.0, "low_open": True},
        "init_noise_std": {"type": "float", "low": 0.0, "low_open": True},
        "max_iter": {"type": "int", "low": 1},
        "min_noise_std": {"type": "float", "low": 0.0},
        "standardize_X": {"type": "bool"},
    }
    smoke_params: ClassVar[dict[str, Any]] = {"max_iter": 50}

    def __init__(
        self,
        init_lengthscale: float = 0.7,
        init_signal_variance: float = 0.7,
        init_linear_variance: float = 0.1,
        init_noise_std: float = 0.22,
        max_iter: int = 200,
        min_noise_std: float = 0.01,
        standardize_X: bool = True,
        random_state: int | None = 0,
    ) -> None:
        self.init_lengthscale = init_lengthscale
        self.init_signal_variance = init_signal_variance
        self.init_linear_variance = init_linear_variance
        self.init_noise_std = init_noise_std
        self.max_iter = max_iter
        self.min_noise_std = min_noise_std
        self.standardize_X = standardize_X
        self.random_state = random_state

    # -- helpers --------------------------------------------------------------------
    def _transform(self, X: np.ndarray) -> np.ndarray:
        return (X - self.x_loc_) / self.x_scale_

    def _build(
        self, lengthscale: Any, signal_var: float, linear_var: float, noise_std: float
    ) -> Any:
        """The GPJax model (prior × Gaussian likelihood) at the given hyperparameters."""
        import jax.numpy as jnp

        gpx = _gpjax()
        kernel = gpx.kernels.Matern52(
            lengthscale=jnp.asarray(lengthscale, dtype=jnp.float64), variance=signal_var
        ) + gpx.kernels.Linear(variance=linear_var)
        prior = gpx.gps.Prior(mean_function=gpx.mean_functions.Zero(), kernel=kernel)
        return prior * gpx.likelihoods.Gaussian(obs_stddev=noise_std)

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        import jax
        import jax.numpy as jnp

        from udbench._optim import LBFGSBObjective

        gpx = _gpjax()
        if self.standardize_X:  # BaseMethod's statistics (constant columns: loc 0, scale 1)
            self.x_loc_, self.x_scale_ = self.input_loc_, self.input_scale_
        else:
            self.x_loc_ = np.zeros(X.shape[1])
            self.x_scale_ = np.ones(X.shape[1])
        Z = self._transform(X)
        d = X.shape[1]
        init = np.concatenate(
            [
                np.full(d, float(self.init_lengthscale)),
                [
                    float(self.init_signal_variance),
                    float(self.init_linear_variance),
                    float(self.init_noise_std),
                ],
            ]
        )
        theta0 = init + np.log(-np.expm1(-init))  # inverse softplus (GPJax's bijection)
        # noise floor as an L-BFGS-B bound on the unconstrained noise parameter
        floor = float(self.min_noise_std)
        noise_lower = floor + np.log(-np.expm1(-floor)) if floor > 0 else None
        theta0[-1] = max(theta0[-1], noise_lower) if noise_lower is not None else theta0[-1]
        bounds = [(None, None)] * (d + 2) + [(noise_lower, None)]
        with jax.enable_x64(True):
            jitter = float(self._build(init[:d], *init[d:]).prior.jitter)  # GPJax's (1e-6)
            Zj, yj, jit = jnp.asarray(Z), jnp.asarray(y), jnp.asarray(jitter)
            value_and_grad = _compiled("value_and_grad")
            # a trial step that leaves the region where the Cholesky succeeds reports a
            # large finite value (best so far + 1e10), so the line search backtracks
            fun = LBFGSBObjective(
                lambda theta: value_and_grad(jnp.asarray(theta), Zj, yj, jit),
                penalty=lambda best: float(best) + 1e10,
                x0=theta0,
            )
            result = fun.minimize(theta0, bounds, int(self.max_iter))
            # the best finite point seen (L-BFGS-B may end on an abnormal line search)
            theta = fun.best_x if fun.best_value <= result.fun else result.x
            result.fun = min(float(fun.best_value), float(result.fun))
            if not np.isfinite(result.fun) or not np.all(np.isfinite(theta)):
                raise UdbenchError(
                    f"GP: the marginal-likelihood optimisation diverged ({result.message})"
                )
            pos = np.logaddexp(0.0, theta)  # softplus
            self.lengthscale_ = pos[:d]
            self.signal_variance_ = float(pos[d])
            self.linear_variance_ = float(pos[d + 1])
            noise_std = float(pos[d + 2])
            self.model_ = self._build(
                self.lengthscale_, self.signal_variance_, self.linear_variance_, noise_std
            )
            self.data_ = gpx.Dataset(X=Zj, y=yj[:, None])
        self.jitter_ = jitter
        self.noise_variance_std_ = noise_std**2
        self.noise_variance_ = noise_std**2 * self.y_scale_**2
        self.log_marginal_likelihood_ = -float(result.fun)
        self.n_iter_ = int(result.nit)

    def _predict(self, X: np.ndarray) -> Prediction:
        import jax
        import jax.numpy as jnp

        with jax.enable_x64(True):
            mean, var = _compiled("predict")(
                self.model_, self.data_, jnp.asarray(self._transform(X))
            )
            mean = np.asarray(mean, dtype=np.float64).reshape(-1)
            var = np.asarray(var, dtype=np.float64).reshape(-1)
        return Prediction(
            mean=mean,
            aleatoric=np.full(X.shape[0], self.noise_variance_std_),
            # GPJax adds its jitter to the predictive diagonal; EU is the latent variance.
            epistemic=np.maximum(var - self.jitter_, 0.0),
        )
