"""Exact Gaussian-process regression with a Matérn-5/2 ARD + linear kernel (paper Appendix C.1).

Kernel (on standardised inputs): ``k(x, x') = σ_m² k_{5/2}(x, x'; ℓ_1..ℓ_d) + σ_l² xᵀx'``,
zero mean (targets standardised), Gaussian likelihood with one noise variance σ_n².
All of σ_m², ℓ_1..ℓ_d, σ_l², σ_n² maximise the log marginal likelihood (type-II ML).
Prediction at x: the latent posterior mean m(x), EU = the latent posterior variance
Var[f(x) | S], AU = σ_n² (constant in x); Rasmussen & Williams (2006) eqs. 2.25–2.26.

Implementation: the model, the kernels and the marginal likelihood are GPJax's
(``Matern52 + Linear``, ``Gaussian``, ``conjugate_mll``, exact conditioning); the
optimiser is SciPy's L-BFGS-B on GPJax's unconstrained (softplus) parameterisation, with
the objective and its gradient compiled once per data shape by ``equinox.filter_jit`` (so
repeated fits of the same size do not recompile). Everything runs in float64 inside a
scoped ``jax.enable_x64(True)``; the same code runs on GPU when JAX has one.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.optimize import minimize

from udbench._validation import UdbenchError
from udbench.methods.base import BaseMethod, Prediction

__all__ = ["GP"]


def _gpjax() -> Any:
    import gpjax

    return gpjax


def _neg_mll(params: Any, static: Any, data: Any) -> Any:
    import equinox as eqx

    gpx = _gpjax()
    model = eqx.combine(params, static)
    return -gpx.objectives.conjugate_mll(model, data)


_COMPILED: dict[str, Any] = {}


def _compiled(name: str) -> Any:
    """Module-level compiled functions (created lazily so importing udbench stays light)."""
    if not _COMPILED:
        import equinox as eqx
        import jax

        @eqx.filter_jit
        def value_and_grad(params: Any, static: Any, data: Any) -> Any:
            return jax.value_and_grad(_neg_mll)(params, static, data)

        @eqx.filter_jit
        def predict(model: Any, data: Any, X_test: Any) -> Any:
            dist = model.condition(data)(X_test, covariance="diagonal")
            return dist.mean, dist.variance

        _COMPILED["value_and_grad"] = value_and_grad
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
    standardize_X : bool, default True
        Centre and scale each input column by its training mean and SD before the kernel
        (a column with SD 0 is only centred).
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
    """

    name: ClassVar[str] = "gp"
    family: ClassVar[str] = "gp"
    constant_aleatoric: ClassVar[bool] = True
    epistemic_from: ClassVar[str] = "closed_form"
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
        standardize_X: bool = True,
        random_state: int | None = 0,
    ) -> None:
        self.init_lengthscale = init_lengthscale
        self.init_signal_variance = init_signal_variance
        self.init_linear_variance = init_linear_variance
        self.init_noise_std = init_noise_std
        self.max_iter = max_iter
        self.standardize_X = standardize_X
        self.random_state = random_state

    # -- helpers --------------------------------------------------------------------
    def _transform(self, X: np.ndarray) -> np.ndarray:
        return (X - self.x_loc_) / self.x_scale_

    def _build(self, d: int) -> Any:
        import jax.numpy as jnp

        gpx = _gpjax()
        kernel = gpx.kernels.Matern52(
            lengthscale=jnp.full(d, float(self.init_lengthscale)),
            variance=float(self.init_signal_variance),
        ) + gpx.kernels.Linear(variance=float(self.init_linear_variance))
        prior = gpx.gps.Prior(mean_function=gpx.mean_functions.Zero(), kernel=kernel)
        return prior * gpx.likelihoods.Gaussian(obs_stddev=float(self.init_noise_std))

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        import equinox as eqx
        import jax
        import jax.numpy as jnp
        from jax.flatten_util import ravel_pytree

        gpx = _gpjax()
        if self.standardize_X:
            self.x_loc_ = X.mean(axis=0)
            sd = X.std(axis=0)
            self.x_scale_ = np.where(sd > 0, sd, 1.0)
        else:
            self.x_loc_ = np.zeros(X.shape[1])
            self.x_scale_ = np.ones(X.shape[1])
        Z = self._transform(X)
        with jax.enable_x64(True):
            data = gpx.Dataset(X=jnp.asarray(Z), y=jnp.asarray(y)[:, None])
            model = self._build(X.shape[1])
            params, static = eqx.partition(model, eqx.is_array)
            flat0, unravel = ravel_pytree(params)
            value_and_grad = _compiled("value_and_grad")

            def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
                value, grad = value_and_grad(unravel(jnp.asarray(theta)), static, data)
                return float(value), np.asarray(ravel_pytree(grad)[0], dtype=np.float64)

            result = minimize(
                fun,
                np.asarray(flat0, dtype=np.float64),
                jac=True,
                method="L-BFGS-B",
                options={"maxiter": int(self.max_iter)},
            )
            theta = result.x
            if not np.isfinite(result.fun) or not np.all(np.isfinite(theta)):
                raise UdbenchError(
                    f"GP: the marginal-likelihood optimisation diverged ({result.message})"
                )
            fitted = eqx.combine(unravel(jnp.asarray(theta)), static)
            matern, linear = fitted.prior.kernel.kernels
            from gpjax.kernels.base import val

            self.lengthscale_ = np.asarray(val(matern.lengthscale), dtype=np.float64)
            self.signal_variance_ = float(val(matern.variance))
            self.linear_variance_ = float(val(linear.variance))
            noise_std = float(val(fitted.likelihood.obs_stddev))
        self.model_ = fitted
        self.jitter_ = float(fitted.prior.jitter)
        self.data_ = data
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
