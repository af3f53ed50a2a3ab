"""VLGP: variational heteroscedastic GP (paper Appendix C.1; Lázaro-Gredilla & Titsias 2011).

Model (standardised inputs and targets)::

    y | f, g ~ N(f(x), exp(g(x))),   f ~ GP(0, k_f),   g ~ GP(μ₀, k_g),

with k_f the exact GP's kernel (Matérn-5/2 ARD + linear, :mod:`udbench.methods.gp`) and k_g a
Matérn-5/2 ARD kernel with its own lengthscales and variance. Prediction at x:
â = E_q[f(x)], EU = Var_q[f(x)] (latent), AU = E_q[exp g(x)] = exp(m_g + s_g/2), which
varies in x (METHODS.md).

Inference is sparse variational with m inducing inputs Z (a seeded random subset of
``num_inducing`` training rows, all of them when n ≤ ``num_inducing``), shared by f and g and
held fixed: q(u_g) = N(μ₀ + L_g a, L_g B Bᵀ L_gᵀ) in whitened form (K_zz = L_g L_gᵀ), and q(u_f)
*collapsed*: for a given q(g) the optimal q(u_f) is Gaussian in closed form (the tight bound of
Lázaro-Gredilla & Titsias 2011, here with Titsias's 2009 inducing points), leaving

    L = log N(y | 0, Q_ff + R) − ½ Σ w_i (k_f(x_i, x_i) − Q_ii) − ¼ Σ s_i − KL(q(v_g) ‖ N(0, I)),

R = diag(r), r_i = exp(m_i − s_i/2) = 1/w_i, Q_ff = K_fz K_zz⁻¹ K_zf, (m_i, s_i) the marginal
mean and variance of q(g(x_i)). This equals GPJax's ``heteroscedastic_elbo`` of the same q(g)
and the optimal q(u_f) (tested). It is maximised over the kernel hyperparameters of f and g,
μ₀, a and B (lower triangular) by SciPy's L-BFGS-B, at O(n m² + m³) per evaluation, in
float64. The fitted model is GPJax's: ``HeteroscedasticModel`` with a
``HeteroscedasticGaussian`` likelihood (log-normal noise transform, ``exp``) and a
``HeteroscedasticVariationalFamily`` holding q(u_f) and q(u_g); its ``predict`` gives the
four latent moments at new inputs.

With the noise GP held at a constant (k_g → 0, q(g) = μ₀) and Z = the training inputs, the
collapsed q(f) is the exact GP posterior with noise variance exp(μ₀): VLGP then equals the
exact GP at the same hyperparameters (tested to 1e-4).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from udbench._validation import UdbenchError
from udbench.methods._gp_linalg import gram
from udbench.methods.base import BaseMethod, Prediction

__all__ = ["VLGP", "collapsed_bound", "optimal_signal_q", "vlgp_family"]

_LOG_2PI = float(np.log(2.0 * np.pi))


def _tri(L: Any, B: Any) -> Any:
    from jax.scipy.linalg import solve_triangular

    return solve_triangular(L, B, lower=True)


def _constrain(p: dict[str, Any]) -> dict[str, Any]:
    """Unconstrained parameters → constrained ones (softplus, GPJax's bijection; tril B)."""
    import jax
    import jax.numpy as jnp

    sp = jax.nn.softplus
    return {
        "ls_f": sp(p["ls_f"]),
        "var_f": sp(p["var_f"]),
        "lin_f": sp(p["lin_f"]),
        "ls_g": sp(p["ls_g"]),
        "var_g": sp(p["var_g"]),
        "mu0": p["mu0"],
        "a": p["a"],
        "B": jnp.tril(p["B"]),
    }


def _noise_marginals(c: dict[str, Any], X: Any, Z: Any, jitter: float) -> tuple[Any, ...]:
    """Marginal mean and variance of q(g) at the rows of X, and the whitened KL of q(u_g)."""
    import jax.numpy as jnp

    m = Z.shape[0]
    Kzz = gram(Z, Z, c["ls_g"], c["var_g"], 0.0) + jitter * jnp.eye(m, dtype=Z.dtype)
    Lg = jnp.linalg.cholesky(Kzz)
    A = _tri(Lg, gram(Z, X, c["ls_g"], c["var_g"], 0.0))  # (m, n)
    mean = c["mu0"] + A.T @ c["a"]
    BtA = c["B"].T @ A
    var = jnp.maximum(c["var_g"] - jnp.sum(A * A, 0) + jnp.sum(BtA * BtA, 0), 0.0)
    B = c["B"]
    kl = 0.5 * (
        jnp.dot(c["a"], c["a"])
        + jnp.sum(B * B)
        - m
        - 2.0 * jnp.sum(jnp.log(jnp.abs(jnp.diagonal(B))))
    )
    return mean, var, kl, Lg


def _signal_factors(c: dict[str, Any], X: Any, w: Any, Z: Any, jitter: float) -> tuple[Any, ...]:
    """``L_f`` (chol K_zz), ``A_f = L_f⁻¹K_zx``, ``L_B`` (chol of I + A_f W A_fᵀ)."""
    import jax.numpy as jnp

    m = Z.shape[0]
    Kzz = gram(Z, Z, c["ls_f"], c["var_f"], c["lin_f"]) + jitter * jnp.eye(m, dtype=Z.dtype)
    Lf = jnp.linalg.cholesky(Kzz)
    Af = _tri(Lf, gram(Z, X, c["ls_f"], c["var_f"], c["lin_f"]))
    Aw = Af * jnp.sqrt(w)[None, :]
    LB = jnp.linalg.cholesky(jnp.eye(m, dtype=Z.dtype) + Aw @ Aw.T)
    return Lf, Af, Aw, LB


def collapsed_bound(c: dict[str, Any], X: Any, y: Any, Z: Any, jitter: float) -> Any:
    """The collapsed variational bound L (module docstring) at constrained parameters ``c``.

    Parameters
    ----------
    c : dict
        ``ls_f`` (d,), ``var_f``, ``lin_f``, ``ls_g`` (d,), ``var_g``, ``mu0``, ``a`` (m,),
        ``B`` (m, m) lower triangular — standardised units.
    X : array, shape (n, d)
    y : array, shape (n,)
    Z : array, shape (m, d)
        Inducing inputs.
    jitter : float
        Added to the diagonal of both K_zz.

    Returns
    -------
    scalar
        L, a lower bound on log p(y) (nats).
    """
    import jax.numpy as jnp

    n = X.shape[0]
    mg, sg, kl, _ = _noise_marginals(c, X, Z, jitter)
    w = jnp.exp(-mg + 0.5 * sg)
    _, Af, Aw, LB = _signal_factors(c, X, w, Z, jitter)
    cvec = _tri(LB, Aw @ (jnp.sqrt(w) * y))
    kdiag = c["var_f"] + c["lin_f"] * jnp.sum(X * X, 1)
    return (
        -0.5 * n * _LOG_2PI
        - 0.5 * jnp.sum(mg)  # −½Σ log r_i − ¼Σ s_i, with log r_i = m_i − s_i/2
        - jnp.sum(jnp.log(jnp.diagonal(LB)))
        - 0.5 * jnp.sum(w * y * y)
        + 0.5 * jnp.dot(cvec, cvec)
        - 0.5 * jnp.sum(w * (kdiag - jnp.sum(Af * Af, 0)))
        - kl
    )


def optimal_signal_q(c: dict[str, Any], X: Any, y: Any, Z: Any, jitter: float) -> tuple[Any, Any]:
    """The optimal q(u_f) = N(mean, root rootᵀ) given q(g), non-whitened, root lower triangular.

    Whitened, q(v_f) has precision I + A_f W A_fᵀ = L_B L_Bᵀ and mean L_B⁻ᵀ L_B⁻¹ A_f W y;
    u_f = L_f v_f. The lower-triangular root of L_f L_B⁻ᵀ (L_B⁻¹ L_fᵀ) is taken from a QR
    factorisation, without squaring the condition number.

    Returns
    -------
    mean : array, shape (m, 1)
    root : array, shape (m, m), lower triangular with a positive diagonal
    """
    import jax.numpy as jnp
    from jax.scipy.linalg import solve_triangular

    mg, sg, _, _ = _noise_marginals(c, X, Z, jitter)
    w = jnp.exp(-mg + 0.5 * sg)
    Lf, _, Aw, LB = _signal_factors(c, X, w, Z, jitter)
    cvec = _tri(LB, Aw @ (jnp.sqrt(w) * y))
    v_mean = solve_triangular(LB.T, cvec, lower=False)
    G = Lf @ solve_triangular(LB.T, jnp.eye(LB.shape[0], dtype=LB.dtype), lower=False)
    _, R = jnp.linalg.qr(G.T)  # G = Rᵀ Qᵀ, so G Gᵀ = Rᵀ R
    root = R.T * jnp.sign(jnp.diagonal(R))[None, :]
    return (Lf @ v_mean)[:, None], root


def vlgp_family(c: dict[str, Any], Z: Any, signal_q: tuple[Any, Any], jitter: float) -> Any:
    """GPJax's ``HeteroscedasticVariationalFamily`` for constrained parameters ``c``.

    q(u_f) is ``signal_q`` (from :func:`optimal_signal_q`); q(u_g) is the whitened
    N(a, BBᵀ) mapped to N(μ₀ + L_g a, L_g B (L_g B)ᵀ).
    """
    import gpjax as gpx
    import jax.numpy as jnp

    m = Z.shape[0]
    kf = gpx.kernels.Matern52(lengthscale=c["ls_f"], variance=c["var_f"]) + gpx.kernels.Linear(
        variance=c["lin_f"]
    )
    prior_f = gpx.gps.Prior(mean_function=gpx.mean_functions.Zero(), kernel=kf, jitter=jitter)
    kg = gpx.kernels.Matern52(lengthscale=c["ls_g"], variance=c["var_g"])
    prior_g = gpx.gps.Prior(
        mean_function=gpx.mean_functions.Constant(jnp.reshape(c["mu0"], (1,))),
        kernel=kg,
        jitter=jitter,
    )
    lik = gpx.likelihoods.HeteroscedasticGaussian(
        noise_transform=gpx.likelihoods.LogNormalTransform()
    )
    model = gpx.gps.HeteroscedasticModel(prior=prior_f, likelihood=lik, noise_prior=prior_g)
    Kzz = gram(Z, Z, c["ls_g"], c["var_g"], 0.0) + jitter * jnp.eye(m, dtype=Z.dtype)
    Lg = jnp.linalg.cholesky(Kzz)
    mean_f, root_f = signal_q
    return gpx.variational_families.HeteroscedasticVariationalFamily(
        model=model,
        inducing_inputs=Z,
        variational_mean_f=mean_f,
        variational_root_covariance_f=root_f,
        variational_mean_g=(c["mu0"] + Lg @ c["a"])[:, None],
        variational_root_covariance_g=Lg @ c["B"],
    )


_ORDER = ("ls_f", "var_f", "lin_f", "ls_g", "var_g", "mu0", "a", "B")


def _sizes(d: int, m: int) -> dict[str, tuple[int, ...]]:
    return {
        "ls_f": (d,),
        "var_f": (),
        "lin_f": (),
        "ls_g": (d,),
        "var_g": (),
        "mu0": (),
        "a": (m,),
        "B": (m, m),
    }


def _flatten(p: dict[str, Any]) -> np.ndarray:
    """The unconstrained parameters as one float64 vector (order :data:`_ORDER`)."""
    return np.concatenate([np.ravel(np.asarray(p[k], dtype=np.float64)) for k in _ORDER])


def _offset(key: str, d: int, m: int) -> int:
    """Position of the (scalar) parameter ``key`` in the flat vector."""
    i = 0
    for k, shape in _sizes(d, m).items():
        if k == key:
            return i
        i += int(np.prod(shape)) if shape else 1
    raise KeyError(key)


def _unflatten(theta: Any, d: int, m: int) -> dict[str, Any]:
    """Inverse of :func:`_flatten` for d inputs and m inducing points (static sizes)."""
    out, i = {}, 0
    for k, shape in _sizes(d, m).items():
        size = int(np.prod(shape)) if shape else 1
        out[k] = theta[i : i + size].reshape(shape)
        i += size
    return out


_COMPILED: dict[str, Any] = {}


def _compiled(name: str) -> Any:
    """Jitted objective and prediction, created lazily (one executable per data shape)."""
    if not _COMPILED:
        import equinox as eqx
        import jax

        def neg_bound(theta: Any, X: Any, y: Any, Z: Any, jitter: Any) -> Any:
            c = _constrain(_unflatten(theta, X.shape[1], Z.shape[0]))
            return -collapsed_bound(c, X, y, Z, jitter)

        _COMPILED["value_and_grad"] = jax.jit(jax.value_and_grad(neg_bound))

        @eqx.filter_jit
        def predict(family: Any, X_test: Any) -> Any:
            # the family's own ``predict`` forms dense test covariances; diagonals suffice
            f = family.signal_variational.condition(None)(X_test, covariance="diagonal")
            g = family.noise_variational.condition(None)(X_test, covariance="diagonal")
            return f.mean, f.variance, g.mean, g.variance

        _COMPILED["predict"] = predict
    return _COMPILED[name]


class VLGP(BaseMethod):
    """Variational heteroscedastic GP (sparse, collapsed signal), fitted by L-BFGS-B.

    Parameters
    ----------
    num_inducing : int, default 128
        Inducing inputs m (a seeded random subset of the training rows; all rows when
        n ≤ m). Cost per objective evaluation O(n m² + m³).
    init_lengthscale : float, default 0.7
        Initial ARD lengthscales of both kernels (standardised input units).
    init_signal_variance : float, default 0.7
        Initial Matérn variance of k_f (standardised target units).
    init_linear_variance : float, default 0.1
        Initial linear-kernel variance of k_f.
    init_noise_std : float, default 0.22
        Initial noise SD: μ₀ starts at log(init_noise_std²).
    init_noise_variance : float, default 0.5
        Initial variance of the noise GP's kernel k_g (units of log-variance squared).
    max_iter : int, default 300
        Maximum L-BFGS-B iterations.
    min_noise_std : float, default 0.01
        Floor on the noise GP's mean: μ₀ ≥ log(min_noise_std²) (standardised units; as
        the exact GP's floor). With the bounds of :meth:`_bounds` it keeps the fit finite
        on a constant target. Set 0 to disable the floor on μ₀.
    standardize_X : bool, default True
        Centre and scale each input column by its training mean and SD.
    random_state : int or None, default 0
        Seeds the choice of inducing inputs (stream ``"inducing"``).

    Attributes
    ----------
    params_ : dict
        Fitted constrained parameters (standardised units; see :func:`collapsed_bound`).
    inducing_inputs_ : ndarray, shape (m, d)
        Z, standardised input units.
    num_inducing_ : int
        m actually used (``min(n, num_inducing)``).
    bound_ : float
        The variational bound at the optimum (standardised targets).
    n_iter_ : int
        L-BFGS-B iterations used.

    Notes
    -----
    Source: paper Appendix C.1 (the model, VLGP of Lázaro-Gredilla & Titsias 2011) and
    METHODS.md (outputs). The paper gives no search space; the declared one is udbench's
    choice (docs/methods.md). A jitter of 1e-6 (GPJax's default) is added to both K_zz.
    """

    name: ClassVar[str] = "vlgp"
    paper_index: ClassVar[int | None] = 3  # SPEC §8's list
    family: ClassVar[str] = "gp"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "closed_form"
    description: ClassVar[str] = (
        "Variational heteroscedastic GP, sparse, noise GP exp(g(x)) (paper C.1)"
    )
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        "num_inducing": {"type": "int", "low": 64, "high": 256},
        "init_lengthscale": {"type": "float", "low": 0.1, "high": 5.0, "log": True},
        "init_signal_variance": {"type": "float", "low": 0.1, "high": 5.0, "log": True},
        "init_noise_std": {"type": "float", "low": 0.05, "high": 1.0, "log": True},
        "init_noise_variance": {"type": "float", "low": 0.1, "high": 2.0, "log": True},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        "num_inducing": {"type": "int", "low": 1},
        "init_lengthscale": {"type": "float", "low": 0.0, "low_open": True},
        "init_signal_variance": {"type": "float", "low": 0.0, "low_open": True},
        "init_linear_variance": {"type": "float", "low": 0.0, "low_open": True},
        "init_noise_std": {"type": "float", "low": 0.0, "low_open": True},
        "init_noise_variance": {"type": "float", "low": 0.0, "low_open": True},
        "max_iter": {"type": "int", "low": 1},
        "min_noise_std": {"type": "float", "low": 0.0},
        "standardize_X": {"type": "bool"},
    }
    smoke_params: ClassVar[dict[str, Any]] = {"num_inducing": 32, "max_iter": 60}

    def __init__(
        self,
        num_inducing: int = 128,
        init_lengthscale: float = 0.7,
        init_signal_variance: float = 0.7,
        init_linear_variance: float = 0.1,
        init_noise_std: float = 0.22,
        init_noise_variance: float = 0.5,
        max_iter: int = 300,
        min_noise_std: float = 0.01,
        standardize_X: bool = True,
        random_state: int | None = 0,
    ) -> None:
        self.num_inducing = num_inducing
        self.init_lengthscale = init_lengthscale
        self.init_signal_variance = init_signal_variance
        self.init_linear_variance = init_linear_variance
        self.init_noise_std = init_noise_std
        self.init_noise_variance = init_noise_variance
        self.max_iter = max_iter
        self.min_noise_std = min_noise_std
        self.standardize_X = standardize_X
        self.random_state = random_state

    _JITTER: ClassVar[float] = 1e-6

    def _transform(self, X: np.ndarray) -> np.ndarray:
        return (X - self.x_loc_) / self.x_scale_

    def _bounds(self, d: int, m: int) -> list[tuple[float | None, float | None]]:
        """L-BFGS-B bounds: μ₀ ≥ log min_noise_std², k_g variance ≤ 20, |a_j| ≤ 10.

        They keep exp(−g) finite (|g − μ₀| ≤ √20·‖a‖) where the bound would drive the noise
        to 0 (a constant or interpolable target); elsewhere they do not bind (a is whitened,
        N(0, 1) a priori; a log-variance SD of √20 ≈ 4.5 spans noise variances over e^±9).
        """
        floor = float(self.min_noise_std)
        mu_low = 2.0 * np.log(floor) if floor > 0 else None
        var_high = 20.0 + np.log(-np.expm1(-20.0))  # inverse softplus of 20
        per_key: dict[str, tuple[float | None, float | None]] = {
            "var_g": (None, var_high),
            "mu0": (mu_low, None),
            "a": (-10.0, 10.0),
        }
        out: list[tuple[float | None, float | None]] = []
        for key, shape in _sizes(d, m).items():
            out += [per_key.get(key, (None, None))] * (int(np.prod(shape)) if shape else 1)
        return out

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        import jax
        import jax.numpy as jnp

        from udbench._optim import LBFGSBObjective

        if self.standardize_X:  # BaseMethod's statistics (constant columns: loc 0, scale 1)
            self.x_loc_, self.x_scale_ = self.input_loc_, self.input_scale_
        else:
            self.x_loc_ = np.zeros(X.shape[1])
            self.x_scale_ = np.ones(X.shape[1])
        Xs = self._transform(X)
        n, d = Xs.shape
        m = min(n, int(self.num_inducing))
        rows = np.sort(self._rng("inducing").permutation(n)[:m]) if m < n else np.arange(n)
        Z = Xs[rows]

        def inv_sp(v: float) -> float:
            return float(v + np.log(-np.expm1(-v)))

        init = {
            "ls_f": np.full(d, inv_sp(float(self.init_lengthscale))),
            "var_f": np.asarray(inv_sp(float(self.init_signal_variance))),
            "lin_f": np.asarray(inv_sp(float(self.init_linear_variance))),
            "ls_g": np.full(d, inv_sp(float(self.init_lengthscale))),
            "var_g": np.asarray(inv_sp(float(self.init_noise_variance))),
            "mu0": np.asarray(
                2.0 * np.log(max(float(self.init_noise_std), float(self.min_noise_std)))
            ),
            "a": np.zeros(m),
            "B": np.eye(m),  # q(u_g) = p(u_g) at the start
        }
        with jax.enable_x64(True):
            theta0 = _flatten(init)
            vg = _compiled("value_and_grad")
            args = (jnp.asarray(Xs), jnp.asarray(y), jnp.asarray(Z), jnp.asarray(self._JITTER))
            fun = LBFGSBObjective(
                lambda t: vg(jnp.asarray(t), *args),
                penalty=lambda best: float(best) + 1e10,
                x0=theta0,
            )
            if np.all(y == y[0]):
                # no variation at all (a constant target): the bound grows without limit
                # as the noise goes to 0, so nothing is optimised; the start, with μ₀ at
                # the noise floor, is the fit (outputs: the constant, AU = floor²).
                theta0[_offset("mu0", d, m)] = 2.0 * np.log(max(float(self.min_noise_std), 1e-3))
                value, _ = fun(theta0)
                theta, nit, message = theta0, 0, "constant target: not optimised"
            else:
                result = fun.minimize(theta0, self._bounds(d, m), int(self.max_iter))
                theta = fun.best_x if fun.best_value <= result.fun else result.x
                value = min(float(fun.best_value), float(result.fun))
                nit, message = int(result.nit), result.message
            if not np.isfinite(value) or not np.all(np.isfinite(theta)):
                raise UdbenchError(f"VLGP: the variational-bound optimisation diverged ({message})")
            c = _constrain(_unflatten(jnp.asarray(theta), d, m))
            Zj = jnp.asarray(Z)
            q_f = optimal_signal_q(c, args[0], args[1], Zj, self._JITTER)
            self.family_ = vlgp_family(c, Zj, q_f, self._JITTER)
            self.params_ = {k: np.asarray(v) for k, v in c.items()}
        self.inducing_inputs_ = Z
        self.num_inducing_ = m
        self.bound_ = -value
        self.n_iter_ = nit

    def _predict(self, X: np.ndarray) -> Prediction:
        import jax
        import jax.numpy as jnp

        with jax.enable_x64(True):
            out = _compiled("predict")(self.family_, jnp.asarray(self._transform(X)))
            mean_f, var_f, mean_g, var_g = (
                np.asarray(v, dtype=np.float64).reshape(-1) for v in out
            )
        # GPJax adds its jitter to both predictive diagonals; the latent variances are without
        var_f = np.maximum(var_f - self._JITTER, 0.0)
        var_g = np.maximum(var_g - self._JITTER, 0.0)
        bad = ~(np.isfinite(mean_g) & np.isfinite(var_g))
        if bad.any():
            mean_g, var_g = self._repair_noise_marginals(X, mean_g, var_g, bad)
        return Prediction(mean=mean_f, aleatoric=np.exp(mean_g + 0.5 * var_g), epistemic=var_f)

    def _repair_noise_marginals(
        self, X: np.ndarray, mean_g: np.ndarray, var_g: np.ndarray, bad: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """q(g)'s marginals (shapes (n,), log-variance units of the standardised target) with
        the entries ``bad`` (not finite in GPJax's conditional) taken from the whitened form
        (:meth:`_noise_marginals_whitened`); where that is not finite either and k_g's
        variance has underflowed to 0, q(g) is exactly its constant mean μ₀ (K_g ≡ 0 makes
        A = 0; the NaN is 0·∞ from a distance that overflows as a lengthscale goes to 0).

        Raises
        ------
        UdbenchError
            Entries finite in no form.
        """
        mean_w, var_w = self._noise_marginals_whitened(X)
        mean_g, var_g = mean_g.copy(), var_g.copy()
        mean_g[bad], var_g[bad] = mean_w[bad], var_w[bad]
        still = ~(np.isfinite(mean_g) & np.isfinite(var_g))
        if still.any() and float(self.params_["var_g"]) == 0.0:
            mean_g[still], var_g[still] = float(self.params_["mu0"]), 0.0
            still[:] = False
        if still.any():
            raise UdbenchError(
                "VLGP.predict: the noise GP's predictive moments are not finite in either form "
                f"(GPJax's and the whitened one; {int(still.sum())} of {still.size} points)"
            )
        return mean_g, var_g

    def _noise_marginals_whitened(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """q(g)'s marginal mean and variance at the rows of X in the whitened form the bound
        uses (:func:`_noise_marginals`: μ₀ + Aᵀa and k(x, x) − ‖A‖² + ‖BᵀA‖², A = L_g⁻¹K_zx),
        the same moments as GPJax's conditional of N(μ₀ + L_g a, L_g B (L_g B)ᵀ) in exact
        arithmetic (tested). Used where that conditional is not finite: with long noise
        lengthscales K_zz is near singular and GPJax's un-whitened variance can come out NaN
        (tuned configurations on gp-small, 2026-12-05), while the whitened form, as GPflow's
        ``whiten=True`` (Hensman et al. 2015), needs only the L_g the fit itself used.
        Shapes (n,) each; log-variance units of the standardised target; not checked for
        finiteness (:meth:`_repair_noise_marginals`)."""
        import jax
        import jax.numpy as jnp

        with jax.enable_x64(True):
            c = {k: jnp.asarray(v) for k, v in self.params_.items()}
            Xs = jnp.asarray(self._transform(X))
            Z = jnp.asarray(self.inducing_inputs_)
            mean, var, _, _ = _noise_marginals(c, Xs, Z, self._JITTER)
        return np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64)
