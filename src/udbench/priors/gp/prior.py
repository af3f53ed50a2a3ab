"""The Gaussian-process reference prior: f ~ GP(0, a²·k) with exact conditioning (SPEC §5).

The fitted *unit kernel* (:mod:`udbench.priors.gp.kernels`) is

    k̃(x, x') = Σ_i w_i k_i(x, x'),   Σ_i w_i = 1,

where every part k_i has its GPJax variance fixed to 1 and w_i = v_i / Σ_j v_j are the
relative weights of the fitted part variances v_i (:func:`udbench.priors.gp.fit.fit_kernel`,
on at most 2000 candidate rows). The prior kernel is a²·k̃: the fitted overall variance
Σ_j v_j is replaced by a² (SPEC §5, paper B.2), the relative weights kept.

Numerics: every computation runs in float64 inside a scoped ``jax.enable_x64(True)``. Kernel
matrices are jitted GPJax code; the dense linear algebra and its jitter rule are
:mod:`udbench.priors.gp.linalg` (JAX on an accelerator, SciPy's LAPACK on CPU). The jitter
used is recorded in the diagnostics.

The nugget: a joint prior draw at inputs J is made from the Cholesky factor of
a²k̃(J, J) + ν·I, where ν is the jitter that factorisation needs (at least
``JITTER_START·mean diag``). The drawn f therefore carries a white-noise nugget of variance ν
at every input, and the reference posterior is that of the prior a²k̃ + ν·δ: the training
matrix is B = a²K_tt + diag(σ² + ν) and the posterior variance gets + ν. f*, the posterior
draws and the exact moments then describe one model. Without the nugget in the moments they
disagree where the posterior variance comes down to ν (≈ 1e-10 relative: nearly noise-free
targets), e.g. white_wine × ``u-shaped`` (docs/tasks.md, "Jitter").
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import jax
import numpy as np

from udbench import __version__
from udbench._cache import seal, seal_status
from udbench._seeding import derive_seed, make_rng
from udbench._validation import UdbenchWarning, check_array, param_error
from udbench.priors.base import (
    DEFAULT_FIDELITY,
    FAMILY_CAPABILITIES,
    SCALE_N_DRAWS,
    Fidelity,
    Posterior,
    call_seed,
    scale_from_unit_draws,
)
from udbench.priors.gp.fit import FIT_SETTINGS, default_kernel_hyper, fit_kernel
from udbench.priors.gp.fit_store import (
    SHIPPED_FITS_DIR,
    _write_json_atomic,
    data_fingerprint,
    fit_cache_path,
    shipped_fit,
)
from udbench.priors.gp.kernels import kernel_matrix, parse_kernel_family
from udbench.priors.gp.linalg import (
    JITTER_START,
    add_diag,
    chol_jitter,
    cholesky_or_none,
    solve_lower,
    tri_matmul_T,
)
from udbench.priors.gp.linalg import xp as _xp

__all__ = [
    "PRIOR_CLASS",
    "SHIPPED_FITS_DIR",
    "GPPrior",
    "build_prior",
    "fit_cache_path",
    "shipped_fit",
]


def _normals(key: int, shape: tuple[int, ...]) -> np.ndarray:
    """The call's one stream of standard normals: the direct rule of the seed-stream
    convention (:mod:`udbench.priors.base`), ``key`` itself seeds NumPy's PCG64."""
    return np.random.default_rng(call_seed("gp", None, key)).standard_normal(shape)


# --------------------------------------------------------------------------------------
# The prior
# --------------------------------------------------------------------------------------
def _conditioning_inputs(
    comp: str, X_train: Any, y: Any, noise_var_train: Any, X_eval: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Checked (X_train (n, d), y (n,), σ² (n,) > 0, X_eval (m, d)) of a conditioning call."""
    X_train = check_array(comp, "X_train", X_train, ndim=2)
    n, d = X_train.shape
    y = check_array(comp, "y", y, shape=(n,))
    s2 = check_array(comp, "noise_var_train", noise_var_train, shape=(n,), nonnegative=True)
    if n and not np.min(s2) > 0:
        raise param_error(comp, "noise_var_train", "be > 0", float(np.min(s2)))
    X_eval = check_array(comp, "X_eval", X_eval, shape=(None, d))
    return X_train, y, s2, X_eval


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
    #: Exact moments, a nugget, no training-input draws by default, a per-dataset kernel fit.
    capabilities = FAMILY_CAPABILITIES["gp"]
    #: Version of the GP reference numerics (bumped by a change that alters the moments or
    #: draws for the same settings and key; 2: the prior's nugget is part of the model).
    numerics_version = 2

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

    @classmethod
    def synthetic(cls, fidelity: str, X_eval: np.ndarray) -> GPPrior:
        """A GP prior with fixed settings for synthetic inputs, for timing
        (:mod:`udbench.tuning.calibration`): a Matérn-3/2 kernel with ARD lengthscales
        0.4..1.2 over the d = ``X_eval.shape[1]`` covariates, scale a = 1 (the fidelity
        changes nothing of an instance)."""
        ls = np.linspace(0.4, 1.2, X_eval.shape[1])
        hyper = {
            "kernel_family": "matern32",
            "parts": [{"kernel": "matern32", "weight": 1.0, "lengthscale": ls.tolist()}],
        }
        return cls(hyper, 1.0)

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
            return np.asarray(tri_matmul_T(z, L))

    def nugget(self, X_eval: np.ndarray, X_train: np.ndarray) -> float:
        """Variance ν of the white-noise nugget carried by joint prior draws at
        J = (X_eval, X_train) (module docstring).

        The jitter of the cached joint Cholesky factor when it was made at exactly these
        inputs (as :func:`udbench.tasks.make_task` draws f* there first); otherwise its
        first value, ``JITTER_START·mean(diag a²k̃(J, J))``, computed from the diagonal only
        (O(m + n)). The two differ only if that factorisation needed more jitter.

        Parameters
        ----------
        X_eval : ndarray, shape (m, d)
        X_train : ndarray, shape (n, d)

        Returns
        -------
        float
            ν, target units squared.
        """
        cached = self._cached_chol(self._chol_key(np.vstack([X_eval, X_train])))
        if cached is not None:
            return float(cached[1])
        with jax.enable_x64(True):
            diag = np.concatenate(
                [_diag_kernel(self.hyper, X_eval), _diag_kernel(self.hyper, X_train)]
            )
        return float(JITTER_START * float(np.mean(self._scale**2 * diag)))

    @staticmethod
    def _chol_key(X: np.ndarray) -> str:
        return data_fingerprint(X) + f"-{X.shape}"

    def _cached_chol(self, key: str) -> tuple[Any, float, Any] | None:
        """The kept joint factor :meth:`_prior_chol` made at the inputs of ``key``
        (:meth:`_chol_key`), or None."""
        if self._chol_cache is not None and self._chol_cache[0] == key:
            return self._chol_cache[1]
        return None

    def _prior_chol(self, X: np.ndarray, nugget: float | None = None) -> tuple[Any, float, Any]:
        """(Cholesky factor of a²k̃(X, X) + jitter·I, jitter, a²k̃(X, X)); the last one is
        kept, so that drawing f* and conditioning at the same inputs factorise once.
        ``nugget`` given: that jitter first (the adaptive rule only if it does not factorise)."""
        key = self._chol_key(X)
        cached = self._cached_chol(key)
        if cached is not None and (nugget is None or cached[1] == nugget):
            return cached
        K = _xp().asarray(self._scale**2 * kernel_matrix(self.hyper, X))
        L = None
        if nugget is not None:
            L, jitter = cholesky_or_none(add_diag(K, nugget)), nugget
        if L is None:
            L, jitter = chol_jitter(K, start=JITTER_START)
        self._chol_cache = (key, (L, jitter, K))
        return L, jitter, K

    def moments(
        self,
        X_train: np.ndarray,
        y: np.ndarray,
        noise_var_train: np.ndarray,
        X_eval: np.ndarray,
        nugget: float | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact posterior mean and variance of f at ``X_eval``, without draws.

        The moments of :meth:`condition` (R&W 2006 eq. 2.22–2.24 with the nugget ν of the
        module docstring: B = a²K_tt + diag(σ² + ν) = LLᵀ, A = L⁻¹a²K_te, m_S = Aᵀ L⁻¹ y,
        σ_f² = a²k(x, x) + ν − colsum A²), at O(n³ + n²m) cost: no joint prior factor and no
        sampling. Used by ``udbench transfer`` for alternative GP oracles, where only the
        moments are needed.

        Parameters
        ----------
        X_train : ndarray, shape (n, d)
        y : ndarray, shape (n,)
        noise_var_train : ndarray, shape (n,)
            Known noise variances σ²(x_i) > 0.
        X_eval : ndarray, shape (m, d)
        nugget : float, optional
            ν (>= 0, target units squared), e.g. a task's recorded ``sampler.nugget``;
            default :meth:`nugget` at (X_eval, X_train).

        Returns
        -------
        mean, var : ndarray, shape (m,), float64

        Raises
        ------
        UdbenchError
            Bad shapes, non-positive noise variances.
        """
        comp = "GPPrior.moments"
        X_train, y, s2, X_eval = _conditioning_inputs(comp, X_train, y, noise_var_train, X_eval)
        nu = _checked_nugget(comp, nugget)
        if nu is None:
            nu = self.nugget(X_eval, X_train)
        a2 = self._scale**2
        with jax.enable_x64(True):
            xp = _xp()
            K_tt = xp.asarray(a2 * kernel_matrix(self.hyper, X_train))
            K_te = xp.asarray(a2 * kernel_matrix(self.hyper, X_train, X_eval))
            prior_var = xp.asarray(a2 * _diag_kernel(self.hyper, X_eval))
            L, _ = chol_jitter(add_diag(K_tt, xp.asarray(s2 + nu)), start=None)
            A = solve_lower(L, K_te)
            mean = A.T @ solve_lower(L, xp.asarray(y))
            var = xp.clip(prior_var + nu - xp.sum(A * A, axis=0), 0.0, None)
            return np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64)

    def condition(
        self,
        X_train: np.ndarray,
        y: np.ndarray,
        noise_var_train: np.ndarray,
        X_eval: np.ndarray,
        key: int,
        n_draws: int,
        nugget: float | None = None,
    ) -> Posterior:
        """Exact GP posterior with known heteroscedastic noise (R&W 2006 eq. 2.22–2.24).

        The prior is a²k̃ plus the nugget ν of the module docstring (the jitter of the joint
        prior factor at J = (eval, train), with which f* is drawn). With
        B = a²K_tt + diag(σ² + ν) = LLᵀ and A = L⁻¹ a²K_te, the exact posterior mean is
        m_S = Aᵀ L⁻¹ y and the exact variance σ_f² = a²k(x, x) + ν − colsum(A²).

        Draws, with ``draws_at_train`` (default): joint draws at (eval, train) by Matheron's
        rule (Wilson et al. 2020, "pathwise conditioning"): f ~ N(0, a²K_JJ + ν·I) at
        J = (eval, train), ε ~ N(0, diag σ²), f_post = f + (a²K + νI)_Jt B⁻¹ (y − f_t − ε).
        This has exactly the posterior distribution of the nugget prior, whose moments are
        the exact ones above; the Cholesky factor of a²K_JJ + νI is shared with the f* draw
        when both are made at the same inputs (as in :func:`udbench.tasks.make_task`).
        Without ``draws_at_train``: ν is :meth:`nugget`, and the eval-only posterior
        covariance a²K_ee + νI − AᵀA is factorised (adaptive jitter, recorded as
        ``jitter_posterior``) and ``mean + z @ chol(C)ᵀ``. Standard normals z come from
        ``key``.

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
        nugget : float, optional
            ν (>= 0, target units²): the nugget f* was drawn with, when the conditioning
            inputs are not the f* draw's (e.g. query points added to the pool:
            :func:`udbench.tasks.make_task` passes :meth:`nugget` at (eval, train)). Default:
            the joint factor's own jitter (``draws_at_train``) or :meth:`nugget`. If the joint
            covariance does not factorise with it, the adaptive rule takes over and
            ``sampler.nugget`` records the value used.

        Returns
        -------
        Posterior
            ``draws_eval`` (D, n_eval), ``draws_train`` (D, n) or None, exact ``mean`` and
            ``var`` (n_eval,), diagnostics ``{"jitter_train", "jitter_prior"`` (or
            ``"jitter_posterior"``), ``"nugget", "draws_method"}``.

        Raises
        ------
        UdbenchError
            Bad shapes, non-positive noise variances.
        """
        comp = "GPPrior.condition"
        X_train, y, s2, X_eval = _conditioning_inputs(comp, X_train, y, noise_var_train, X_eval)
        nugget = _checked_nugget(comp, nugget)
        n = X_train.shape[0]
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
                LJ, nu, KJ = self._prior_chol(XJ, nugget)
                K_te, K_tt = KJ[m:, :m], KJ[m:, m:]
            else:
                nu = self.nugget(X_eval, X_train) if nugget is None else nugget
                K_tt = xp.asarray(a2 * kernel_matrix(self.hyper, X_train))
                K_te = xp.asarray(a2 * kernel_matrix(self.hyper, X_train, X_eval))
            L, jit_t = chol_jitter(add_diag(K_tt, s2j + nu), start=None)
            A = solve_lower(L, K_te)  # (n, m)
            w = solve_lower(L, yj)
            mean = A.T @ w
            if self.draws_at_train:
                jit_c = nu
                var = xp.clip(xp.diag(KJ)[:m] + nu - xp.sum(A * A, axis=0), 0.0, None)
                z = xp.asarray(_normals(key, (D, m + 2 * n)))
                f_prior = tri_matmul_T(z[:, : m + n], LJ)  # (D, m + n) prior draws at J
                eps = z[:, m + n :] * xp.sqrt(s2j)[None, :]
                resid = yj[None, :] - f_prior[:, m:] - eps  # (D, n)
                W = solve_lower(L, resid.T)  # L⁻¹ r, (n, D)
                V = solve_lower(L, W, trans=True)  # B⁻¹ r
                # eval block: a²K_et B⁻¹ r = Aᵀ L⁻¹ r (no nugget across distinct inputs);
                # train block: (a²K_tt + νI) B⁻¹ r = r − Σ B⁻¹ r, Σ = diag σ²
                update = xp.concatenate([A.T @ W, resid.T - s2j[:, None] * V], axis=0)
                draws = f_prior + update.T
            else:
                K_ee = xp.asarray(a2 * kernel_matrix(self.hyper, X_eval))
                var = xp.clip(xp.diag(K_ee) + nu - xp.sum(A * A, axis=0), 0.0, None)
                C = add_diag(K_ee - A.T @ A, nu)
                Lc, jit_c = chol_jitter(0.5 * (C + C.T), start=None if nu > 0 else JITTER_START)
                z = xp.asarray(_normals(key, (D, m)))
                draws = mean[None, :] + tri_matmul_T(z, Lc)
            draws_np = np.asarray(draws)
            post = Posterior(
                draws_eval=np.ascontiguousarray(draws_np[:, :m]),
                draws_train=np.ascontiguousarray(draws_np[:, m:]) if self.draws_at_train else None,
                mean=np.asarray(mean),
                var=np.asarray(var),
                diagnostics={
                    "jitter_train": float(jit_t),
                    "jitter_prior" if self.draws_at_train else "jitter_posterior": float(jit_c),
                    "nugget": float(nu),
                    "draws_method": "matheron" if self.draws_at_train else "posterior_cholesky",
                },
            )
        return post


def _checked_nugget(comp: str, nugget: Any) -> float | None:
    """``nugget`` as a float (None stays None); a NaN, inf or negative value raises."""
    if nugget is None:
        return None
    nu = float(nugget)
    if not (np.isfinite(nu) and nu >= 0):
        raise param_error(comp, "nugget", "be a finite number >= 0", nugget)
    return nu


def _diag_kernel(hyper: dict[str, Any], X: np.ndarray, block: int = 512) -> np.ndarray:
    """diag k̃(X, X), shape (m,), in row blocks (never the m × m matrix at once)."""
    out = np.empty(X.shape[0])
    for i in range(0, X.shape[0], block):
        Xb = X[i : i + block]
        out[i : i + block] = np.diag(np.asarray(kernel_matrix(hyper, Xb)))
    return out


# --------------------------------------------------------------------------------------
# Binding to a dataset: fit (cached) and scale constant
# --------------------------------------------------------------------------------------
#: The family's prior class (its capabilities, e.g. ``numerics_version``; read by
#: :func:`udbench.priors.base.family_numerics_version`).
PRIOR_CLASS = GPPrior


def build_prior(
    cov: Any,
    fidelity: Fidelity | str = DEFAULT_FIDELITY,
    *,
    use_cache: bool = True,
    shipped: bool = True,
) -> GPPrior:
    """Fit (or load from cache) the dataset's kernel and set the scale constant a.

    Steps (SPEC §5): choose at most ``max_rows`` candidate rows with a stream derived from
    the dataset key; fit the kernel family of ``cov.spec.kernel_family`` to the real target
    ``cov.y_real`` at those rows (:func:`fit_kernel`); draw :data:`SCALE_N_DRAWS` unit-scale
    prior draws at the evaluation pool and set a = 1 / median SD. Fit and a are cached as
    JSON with the package version and a content checksum (:func:`udbench._cache.seal`); a
    cache written by another version, without a checksum or not matching it (edited or
    damaged) is refitted and overwritten.

    Parameters
    ----------
    cov : udbench.data.Covariates
    fidelity : Fidelity or str, default DEFAULT_FIDELITY
        Selects :data:`FIT_SETTINGS`.
    use_cache : bool
        Read and write the cache file.
    shipped : bool
        Use the fit shipped with udbench for this dataset, fit settings and data when there
        is one (:func:`shipped_fit`; then nothing is fitted or cached). False fits (or reads
        the cache) as for any other dataset.

    Returns
    -------
    GPPrior

    Raises
    ------
    UdbenchError
        A dataset without a kernel family; an unreadable or incomplete shipped fit.

    Warns
    -----
    UdbenchWarning
        A cached fit that does not match its checksum (it is refitted), or a cache folder
        that cannot be written.
    """
    fidelity = Fidelity.parse("build_prior", fidelity)
    fit_set = FIT_SETTINGS[fidelity]
    family = cov.spec.kernel_family
    if not family:
        raise param_error("build_prior", "cov", "be a dataset with a GP kernel family", cov.key)
    X = np.asarray(cov.X, dtype=np.float64)
    fp = data_fingerprint(X, np.asarray(cov.y_real, dtype=np.float64), np.asarray(cov.eval_idx))
    path = fit_cache_path(cov.key, family, fit_set, fp)
    record: dict[str, Any] | None = shipped_fit(cov.key, family, fit_set, fp) if shipped else None
    if record is None and use_cache and path.is_file():
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            record = None
        if record is not None and record.get("udbench_version") != __version__:
            record = None
        if record is not None and (status := seal_status(record)) != "ok":
            if status == "mismatch":  # edited or damaged: never used (issue 68)
                warnings.warn(
                    f"build_prior: the cached GP fit {str(path)!r} does not match its checksum "
                    "(edited or damaged): refitting it",
                    UdbenchWarning,
                    stacklevel=2,
                )
            record = None  # no checksum (written before they were kept): refitted too
    fitted_here = record is None
    if record is None:
        y_all = np.asarray(cov.y_real, dtype=np.float64)
        if np.isnan(y_all).all():  # a user dataset without a target: nothing to fit
            hyper = default_kernel_hyper(family, X.shape[1])
            fit_record: dict[str, Any] = {
                "fit_settings": {"fitted": False, "reason": "no real target"},
                "fitted_total_variance": None,
                "fitted_noise_variance": None,
                "lml_initial": None,
                "lml_final": None,
                "initial": hyper,
            }
        else:
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
            hyper = fit.hyper
            fit_record = {
                "fit_settings": {**fit_set, **fit.settings},
                "fitted_total_variance": fit.total_variance,
                "fitted_noise_variance": fit.noise_variance,
                "lml_initial": fit.lml_initial,
                "lml_final": fit.lml_final,
                "initial": fit.initial,
            }
        unit = GPPrior(hyper, 1.0, draws_at_train=False)
        draws = unit.sample(
            X[np.asarray(cov.eval_idx)], derive_seed("gp-scale", cov.key), SCALE_N_DRAWS
        )
        a = scale_from_unit_draws(draws, "GP scale constant")
        record = {
            "udbench_version": __version__,
            "dataset": cov.key,
            "kernel_family": family,
            "data_fingerprint": fp,
            "hyperparameters": hyper,
            **fit_record,
            "scale": a,
            "scale_n_draws": SCALE_N_DRAWS,
        }
        if use_cache and fitted_here:
            try:
                _write_json_atomic(path, seal(record))
            except OSError as err:  # a cache is an optimisation: a read-only one is no error
                warnings.warn(
                    f"build_prior: could not cache the GP fit in {str(path.parent)!r} "
                    f"({err.strerror or err}); it is refitted in each process. Set "
                    "$UDBENCH_CACHE_DIR to a writable folder to keep it.",
                    UdbenchWarning,
                    stacklevel=2,
                )
    settings = {
        "dataset": cov.key,
        "fidelity": fidelity.value,
        "fit_settings": record["fit_settings"],
        "lml_initial": record["lml_initial"],
        "lml_final": record["lml_final"],
        "fitted_noise_variance": record["fitted_noise_variance"],
    }
    return GPPrior(record["hyperparameters"], record["scale"], settings=settings)
