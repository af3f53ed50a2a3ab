"""The latent-GP classification prior and its reference posterior by elliptical slice sampling.

Model (docs/spec.md §11, docs/classification.md). On a dataset's covariates, K latent
functions are independent draws of the dataset's GP prior (:mod:`udbench.priors.gp`: the
fitted unit kernel k̃ and scale constant a of SPEC §5, unchanged, with the prior's nugget ν):

    f_k ~ GP(0, a²k̃ + ν·δ)  (k = 1…K),   π*(x) = softmax(f*(x) / τ(x)),   y ~ Categorical(π*(x)).

The temperature τ(x) > 0 is known, like the noise variance of a regression task: it is the
noise's role (a larger τ flattens π*, a higher Bayes error). Its level and heteroscedastic
shapes are :class:`udbench.design.temperature.TemperatureModel`; the level rule (a target mean
prior-expected Bayes error over the evaluation pool) is :func:`temperature_level` here.

Reference posterior. p(f | S) with S = (X_train, y) is not Gaussian. Two exact reductions
and one sampler:

1. *Contrasts.* Rotate the K latents at every point by the orthonormal Helmert matrix Q
   (:func:`contrast_basis`): u = Q f gives one shift u₀ = Σ_k f_k/√K and K − 1 contrasts.
   Independent GPs with one kernel stay independent with that kernel under a rotation, and
   softmax(f/τ) depends on the contrasts only, so the shift's posterior is its prior (drawn
   exactly) and only the (K − 1)·n training contrasts V are sampled; every contrast column
   has the prior N(0, Σ_t), Σ_t = a²K̃_tt + ν·I.
2. *Elliptical slice sampling* (ESS; Murray, Adams & MacKay 2010, AISTATS; BlackJAX's
   ``elliptical_proposal``) in its generalised form (Nishihara, Murray & Adams 2014, JMLR
   15): the target N(V; 0, Σ_t)·L(V) is written as N(V; m, S)·R(V) with a Gaussian
   *reference* N(m, S) and R = target / reference, and ESS is run with respect to the
   reference. This is exact for any reference; a reference close to the posterior makes
   the ellipse moves long. ``reference="laplace-full"``: the Laplace approximation with the
   full (K − 1) × (K − 1) curvature block H_i of the likelihood at every point: m is the
   exact posterior mode by a damped (monotone) Newton iteration in the stable form of
   R&W 2006 Alg. 3.1 with per-point blocks, S = (Σ_t⁻¹ ⊗ I + diag(H_i))⁻¹, factored once
   as S = AAᵀ so that a momentum is m + Az (those of up to 50 iterations at once: one
   product AZ, ``_gpc_sampler._run_chains``), and R(V) costs O(nK²) per evaluation
   (formulas: ``_gpc_sampler._reference_full``). ``reference="laplace"``:
   m is found by the MM iteration of Böhning's bound (the softmax Hessian is ≼ ½I in
   orthonormal contrasts; Böhning 1992; linear convergence, stopped at ``mode_max_iter``),
   and S = (Σ_t⁻¹ + W)⁻¹ with W the diagonal of the likelihood's curvature at m (averaged
   over contrasts): a Laplace approximation without the cross-contrast terms (R&W 2006 §3.4
   for the binary case). Momenta from N(0, S) by Matheron's rule with B = I + W^½Σ_tW^½
   (two factorisations of n × n matrices in all); R(V) costs O(nK) per evaluation.
   The presets' reference and measured costs: docs/classification.md, "Fidelities".
   ``reference="prior"`` is plain ESS (m = 0, S = Σ_t);
   measured at kin8nm size it does not converge in a usable time (docs/classification.md).
   Several chains start from independent draws of the reference, run a burn-in
   (``n_warmup``; ESS has nothing to adapt), then keep every ``thin``-th state.

The evaluation latents are exact given each kept training draw (the GP conditional with the
prior's nugget, R&W 2006 eq. 2.19 with noise-free targets), per rotated component: with
W_t = L_t⁻¹U_t (L_t = chol Σ_t) and A = L_t⁻¹ a²K̃_te,

    u_e | u_t ~ N(Aᵀ W_t,  a²K̃_ee + ν·I − AᵀA),

drawn as Aᵀ W_t + L_c Z′ (L_c = chol of the conditional covariance, adaptive jitter
recorded), then f_e = Qᵀu_e. The posterior of π at the evaluation points is
softmax(f_e / τ_e) per draw.

Seed streams (the rule of :mod:`udbench.priors.base`, family ``"gpc"``): ``"gpc-prior"``
(prior latent draws, :meth:`GPClassificationPrior.sample`), ``"gpc-mcmc"`` (the chains:
initial states, momenta, slice variables; a JAX key) and ``"gpc-conditional"`` (the shift
draws and the normals of the evaluation latents). The level rule's Monte Carlo normals
are a build stream, ``("gpc-level", K)``.

The family is registered as ``"gpc"`` in :data:`udbench.priors.base.PRIOR_FAMILIES` with
``PriorCapabilities.task_type == "classification"``; :func:`build_prior` is its builder
(``make_prior("gpc", cov, fidelity, n_classes=K)``) and ``udbench generate --families gpc``
makes its tasks (docs/classification.md, "Classification tasks").
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from udbench._validation import check_array, check_choice, param_error
from udbench.priors._gpc_likelihood import (
    DIFFICULTIES,
    check_labels,
    check_n_classes,
    check_temperature,
    class_probabilities,
    draw_labels,
    expected_bayes_error_curve,
    log_class_probabilities,
    temperature_level,
)
from udbench.priors._gpc_sampler import (
    ClassificationPosterior,
    ESSDiagnostics,
    _ess_bulk,
    _reference,
    _reference_full,
    _run_chains,
    contrast_basis,
)
from udbench.priors.base import (
    DEFAULT_FIDELITY,
    FAMILY_CAPABILITIES,
    Fidelity,
    PriorCapabilities,
    call_seed,
)
from udbench.priors.base import DEFAULT_N_CLASSES as _DEFAULT_N_CLASSES
from udbench.priors.diagnostics import summarise_function_draws
from udbench.priors.gp.linalg import JITTER_START, add_diag, chol_jitter, solve_lower, tri_matmul_T
from udbench.priors.gp.linalg import xp as _xp
from udbench.priors.mcmc import MCMCPrior

#: The references the chains can be run around (module docstring): ``"laplace-full"``
#: (Newton mode, full curvature blocks), ``"laplace"`` (Böhning-bound mode, diagonal
#: curvature averaged over contrasts), ``"prior"`` (plain ESS).
REFERENCES: tuple[str, ...] = ("laplace-full", "laplace", "prior")

__all__ = [
    "DEFAULT_N_CLASSES",
    "DIFFICULTIES",
    "PRIOR_CLASS",
    "ClassificationPosterior",
    "ESSDiagnostics",
    "GPClassificationPrior",
    "build_classification_prior",
    "build_prior",
    "check_labels",
    "check_n_classes",
    "check_temperature",
    "class_probabilities",
    "draw_labels",
    "expected_bayes_error_curve",
    "log_class_probabilities",
    "temperature_level",
]

#: Number of classes K when none is given (:data:`udbench.priors.base.DEFAULT_N_CLASSES`).
DEFAULT_N_CLASSES: int = _DEFAULT_N_CLASSES


# --------------------------------------------------------------------------------------
# The prior
# --------------------------------------------------------------------------------------
class GPClassificationPrior(MCMCPrior):
    """Latent-GP softmax classification prior bound to one dataset (module docstring).

    Parameters
    ----------
    gp : udbench.priors.gp.GPPrior
        The dataset's GP prior (fitted unit kernel k̃ and scale a, SPEC §5), as returned by
        :func:`udbench.priors.gp.build_prior`; every latent function is one of its draws.
    n_classes : int, default 3
        K >= 2.
    fidelity : Fidelity or str, default "standard"
        Sampler preset (:attr:`presets`).
    dataset : str, optional
        Dataset key (recorded).
    sampler_kwargs : dict, optional
        Overrides of single preset entries (``n_chains``, ``n_warmup``, ``thin``).

    Raises
    ------
    UdbenchError
        K < 2, an unknown fidelity or override key.

    Attributes
    ----------
    family : "gpc"
        Family name (seed streams ``"gpc-<use>"``).
    task_type : "classification"
        What the prior's tasks are (regression priors have no such attribute yet; issue 33
        moves these capabilities onto the Prior protocol).
    likelihood : "categorical-softmax"
        y ~ Categorical(softmax(f/τ)), τ known.
    numerics_version : int
        Bumped only by a change that alters the draws for the same settings and key.
    rhat_gate : True
        The SPEC §7 R̂ rule applies to reference presets.
    """

    family: ClassVar[str] = "gpc"
    capabilities: ClassVar[PriorCapabilities] = FAMILY_CAPABILITIES["gpc"]
    task_type: ClassVar[str] = "classification"
    likelihood: ClassVar[str] = "categorical-softmax"
    numerics_version: ClassVar[int] = 2  # 2: blocked momenta (issue 37), a new stream
    rhat_gate: ClassVar[bool] = True
    seed_bits: ClassVar[int] = 32
    #: Sampler presets (measured costs: docs/classification.md, "Fidelities").
    presets: ClassVar[dict[str, dict[str, Any]]] = {
        Fidelity.SMOKE: {
            "n_chains": 2,
            "n_warmup": 100,
            "thin": 2,
            "reference": "laplace-full",
            "mode_max_iter": 200,
        },
        Fidelity.STANDARD: {
            "n_chains": 4,
            "n_warmup": 500,
            "thin": 40,
            "reference": "laplace-full",
            "mode_max_iter": 200,
        },
        Fidelity.PAPER: {
            "n_chains": 4,
            "n_warmup": 1000,
            "thin": 80,
            "reference": "laplace-full",
            "mode_max_iter": 500,
        },
    }

    def __init__(
        self,
        gp: Any,
        n_classes: int = DEFAULT_N_CLASSES,
        fidelity: Fidelity | str = DEFAULT_FIDELITY,
        *,
        dataset: str | None = None,
        sampler_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.n_classes = check_n_classes("GPClassificationPrior", n_classes)
        self.gp = gp
        super().__init__(gp.scale, fidelity, dataset=dataset, sampler_kwargs=sampler_kwargs)
        cfg = self.sampler_settings
        for key in ("n_chains", "thin"):
            value = cfg[key]
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise param_error("GPClassificationPrior", key, "be an integer >= 1", value)
        warm = cfg["n_warmup"]
        if isinstance(warm, bool) or not isinstance(warm, int | np.integer) or warm < 0:
            raise param_error("GPClassificationPrior", "n_warmup", "be an integer >= 0", warm)
        check_choice("GPClassificationPrior", "reference", cfg["reference"], REFERENCES)

    @classmethod
    def instance_work(cls, fidelity: str, n_draws: int = 1000) -> float:
        """Chain iterations of one instance at ``fidelity``: n_chains × (n_warmup + (D /
        n_chains) × thin), D = ``n_draws`` (:func:`udbench.tuning.calibration.work_ratio`)."""
        s = cls.presets[Fidelity.parse("GPClassificationPrior", fidelity)]
        return float(s["n_chains"] * (s["n_warmup"] + n_draws / s["n_chains"] * s["thin"]))

    @classmethod
    def synthetic(
        cls, fidelity: str, X_eval: np.ndarray, n_classes: int = DEFAULT_N_CLASSES
    ) -> GPClassificationPrior:
        """A classification prior at ``fidelity`` on the synthetic GP prior
        (:meth:`udbench.priors.gp.GPPrior.synthetic`, scale a = 1), for timing."""
        from udbench.priors.gp import GPPrior

        return cls(GPPrior.synthetic(fidelity, X_eval), n_classes, fidelity)

    def _model_settings(self) -> dict[str, Any]:
        return {
            "task_type": self.task_type,
            "likelihood": self.likelihood,
            "n_classes": self.n_classes,
            "latent_prior": {"family": "gp", "kernel": self.gp.hyper, "scale": self.gp.scale},
        }

    def _engine_settings(self) -> dict[str, Any]:
        import blackjax

        return {"engine": "blackjax elliptical_slice", "blackjax_version": blackjax.__version__}

    # -- prior --------------------------------------------------------------------------
    def marginal_sd(self, X: np.ndarray) -> np.ndarray:
        """Prior SD of one latent, a·√k̃(x, x), at ``X`` (m, d) -> (m,) (the nugget, ~1e-5·a,
        is left out)."""
        from udbench.priors.gp.prior import _diag_kernel

        X = check_array("GPClassificationPrior.marginal_sd", "X", X, ndim=2)
        with jax.enable_x64(True):
            return np.asarray(self.scale * np.sqrt(_diag_kernel(self.gp.hyper, X)))

    def sample(self, X: np.ndarray, key: int, n_draws: int = 1) -> np.ndarray:
        """Joint prior draws of the K latents at ``X`` (m, d).

        The K·``n_draws`` latent functions are independent joint draws of the GP prior
        (:meth:`udbench.priors.gp.GPPrior.sample`, stream ``("gpc-prior", key)``), draw j's
        class k being GP draw j·K + k. Drawing at J = (X_eval, X_train) keeps the joint
        factor, whose jitter is the nugget :meth:`condition` then uses.

        Returns
        -------
        ndarray, shape (n_draws, m, K), float64
        """
        X = check_array("GPClassificationPrior.sample", "X", X, ndim=2)
        D = int(n_draws)
        if D < 1:
            raise param_error("GPClassificationPrior.sample", "n_draws", "be >= 1", n_draws)
        f = self.gp.sample(X, call_seed(self.family, "prior", key), D * self.n_classes)
        return np.ascontiguousarray(f.reshape(D, self.n_classes, X.shape[0]).transpose(0, 2, 1))

    def probabilities(self, latents: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """π = softmax(f/τ) (:func:`class_probabilities`): (..., m, K) -> (..., m, K)."""
        return class_probabilities(latents, tau)

    def log_probabilities(self, latents: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """log π, exact where π rounds to 1.0 (:func:`log_class_probabilities`)."""
        return log_class_probabilities(latents, tau)

    @staticmethod
    def draw_labels(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Labels y_i ~ Categorical(π_i) (:func:`draw_labels`): (m, K) -> (m,) int64."""
        return draw_labels(probs, rng)

    # -- posterior ----------------------------------------------------------------------
    def _train_prior(self, X_train: np.ndarray, nu: float) -> tuple[Any, Any, float]:
        """(Σ_t = a²K̃_tt + (ν + jitter)·I, its Cholesky factor, the jitter beyond ν)."""
        K_tt = _xp().asarray(self.gp.covariance(X_train))
        L, jit = chol_jitter(add_diag(K_tt, nu), start=None)
        return add_diag(K_tt, nu + jit), L, float(jit)

    def condition(
        self,
        X_train: np.ndarray,
        labels: np.ndarray,
        tau_train: np.ndarray,
        X_eval: np.ndarray,
        key: int,
        n_draws: int,
        *,
        tau_eval: np.ndarray,
        nugget: float | None = None,
    ) -> ClassificationPosterior:
        """Reference posterior p(f | S): (generalised) ESS on the K − 1 training contrasts
        around the preset's reference, the shift drawn exactly, then the exact GP
        conditional at ``X_eval`` (module docstring).

        Parameters
        ----------
        X_train : ndarray, shape (n, d)
        labels : ndarray, shape (n,)
            Integer labels in 0 … K − 1.
        tau_train : ndarray, shape (n,)
            Known temperatures τ(x_i) > 0.
        X_eval : ndarray, shape (m, d)
        key : int
            The call's key (streams ``"gpc-mcmc"`` and ``"gpc-conditional"``).
        n_draws : int
            D, a positive multiple of the preset's ``n_chains``.
        tau_eval : ndarray, shape (m,)
            Temperatures at the evaluation points.
        nugget : float, optional
            ν; default :meth:`udbench.priors.gp.GPPrior.nugget` at (X_eval, X_train) (the
            jitter of the joint factor f* was drawn with, when it was drawn there).

        Returns
        -------
        ClassificationPosterior

        Raises
        ------
        UdbenchError
            Bad shapes, labels outside 0 … K − 1, τ <= 0, D not a multiple of the chains.
        """
        comp = "GPClassificationPrior.condition"
        K = self.n_classes
        X_train = check_array(comp, "X_train", X_train, ndim=2)
        n, d = X_train.shape
        if n < 1:
            raise param_error(comp, "X_train", "have at least 1 row", X_train.shape)
        y = check_labels(comp, labels, n, K)
        t_tr = check_temperature(comp, "tau_train", tau_train, n)
        X_eval = check_array(comp, "X_eval", X_eval, shape=(None, d))
        m = X_eval.shape[0]
        t_ev = check_temperature(comp, "tau_eval", tau_eval, m)
        n_chains, per = self._chain_layout(comp, n_draws)
        D = n_chains * per
        cfg = self.sampler_settings
        if nugget is None:
            nu = float(self.gp.nugget(X_eval, X_train))
        else:
            nu = float(nugget)
            if not (np.isfinite(nu) and nu >= 0):
                raise param_error(comp, "nugget", "be a finite number >= 0", nugget)
        t0 = time.perf_counter()
        C_ = K - 1
        Q = contrast_basis(K)
        with jax.enable_x64(True):
            xp = _xp()
            Sigma, L_t, jit_t = self._train_prior(X_train, nu)
            inv_tau = 1.0 / t_tr
            full = cfg["reference"] == "laplace-full"
            ops: dict[str, Any] = {"labels": y, "inv_tau": inv_tau, "Q2": Q[1:]}
            if full:
                m_ref, alpha, A_ref, H_ref, ref_record = _reference_full(
                    L_t, Sigma, y, inv_tau, Q[1:], int(cfg["mode_max_iter"])
                )
                ops.update({"A": A_ref, "H": H_ref})
            elif cfg["reference"] == "laplace":
                m_ref, alpha, LB, sw, ref_record = _reference(
                    L_t, Sigma, y, inv_tau, Q[1:], int(cfg["mode_max_iter"])
                )
            else:  # plain ESS: the prior is the reference
                m_ref, alpha = np.zeros((n, C_)), np.zeros((n, C_))
                LB, sw, ref_record = xp.eye(n), np.zeros(n), {}
            if not full:
                ops.update({"L": L_t, "Sigma": Sigma, "LB": LB, "sqrt_w": sw})
            ops.update({"m": m_ref, "alpha": alpha})
            keys = jax.random.split(jax.random.key(self._sampler_seed(key)), n_chains)
            out = _run_chains(
                {k: jnp.asarray(v) for k, v in ops.items()},
                keys,
                n_warmup=int(cfg["n_warmup"]),
                n_keep=per,
                thin=int(cfg["thin"]),
                full=full,
            )
            if full:
                del ops, A_ref  # the (nC)² factor is not needed past the chains
            out = {k: np.asarray(v) for k, v in out.items()}
            t1 = time.perf_counter()
            # whitened training latents in the rotated basis u = Q f: the shift u₀ is a prior
            # draw (its posterior is its prior), the contrasts are the chains' states
            rng = np.random.default_rng(call_seed(self.family, "conditional", key))
            v = out["v"].reshape(D, n, C_)
            w_shift = rng.standard_normal((D, n))
            w_con = np.asarray(solve_lower(L_t, xp.asarray(v.transpose(1, 0, 2).reshape(n, -1))))
            Wu = np.concatenate([w_shift.T[:, :, None], w_con.reshape(n, D, C_)], axis=2)
            # evaluation latents: u_e = Aᵀ W + L_c Z', A = L_t⁻¹ a²K_te, then f = u Q
            K_te = xp.asarray(self.gp.covariance(X_train, X_eval))
            K_ee = xp.asarray(self.gp.covariance(X_eval))
            A = solve_lower(L_t, K_te)  # (n, m)
            Cc = add_diag(K_ee - A.T @ A, nu)
            L_c, jit_c = chol_jitter(0.5 * (Cc + Cc.T), start=None if nu > 0 else JITTER_START)
            mean_e = np.asarray(A.T @ xp.asarray(Wu.reshape(n, D * K)))  # (m, D·K)
            z = xp.asarray(rng.standard_normal((D * K, m)))
            noise = np.asarray(tri_matmul_T(z, L_c))  # (D·K, m)
            u_e = mean_e.reshape(m, D, K).transpose(1, 0, 2) + noise.reshape(D, K, m).transpose(
                0, 2, 1
            )
            f_e = np.ascontiguousarray(u_e @ Q, dtype=np.float64)
            shift_t = np.asarray(tri_matmul_T(xp.asarray(w_shift), L_t))  # (D, n)
            u_t = np.concatenate([shift_t[:, :, None], v], axis=2)
            f_t = np.ascontiguousarray(u_t @ Q, dtype=np.float64)
        probs = class_probabilities(f_e, t_ev)
        t2 = time.perf_counter()
        diag = _ess_diagnostics(
            self.fidelity.value,
            cfg,
            out,
            probs,
            v,
            n_chains=n_chains,
            per=per,
            times=(t0, t1, t2),
            jitters=(jit_t, jit_c),
            nu=nu,
            ref_record=ref_record,
        )
        return ClassificationPosterior(
            prob_draws=probs,
            latent_eval=f_e,
            latent_train=f_t,
            n_chains=n_chains,
            diagnostics=diag.to_dict(),
        )


def _ess_diagnostics(
    fidelity: str,
    cfg: dict[str, Any],
    out: dict[str, np.ndarray],
    probs: np.ndarray,
    v: np.ndarray,
    *,
    n_chains: int,
    per: int,
    times: tuple[float, float, float],
    jitters: tuple[float, float],
    nu: float,
    ref_record: dict[str, Any],
) -> ESSDiagnostics:
    """The :class:`ESSDiagnostics` of one :meth:`GPClassificationPrior.condition` call.

    ``out`` holds the chains' outputs (:func:`_run_chains`), ``probs`` (D, m, K) the
    evaluation-point probabilities, ``v`` (D, n, K − 1) the kept training contrasts;
    ``times`` are the clock readings at the start, after the chains and after the
    evaluation latents; ``jitters`` those of the training and conditional factors.
    """
    t0, t1, t2 = times
    jit_t, jit_c = jitters
    m, K = probs.shape[1], probs.shape[2]
    n, C_ = v.shape[1], v.shape[2]
    D = n_chains * per
    conv = summarise_function_draws(probs.reshape(n_chains, per, m * K))
    train_conv = summarise_function_draws(v.reshape(n_chains, per, n * C_), rhat_only=True)
    rhat = np.asarray(conv["rhat"], dtype=np.float64).reshape(m, K)
    ess = _ess_bulk(probs.reshape(n_chains, per, m * K))
    ll = out["loglik"]
    half = max(per // 2, 1)
    n_iter = int(cfg["n_warmup"]) + per * int(cfg["thin"])
    wall = time.perf_counter() - t0
    return ESSDiagnostics(
        sampler="blackjax elliptical_slice",
        fidelity=fidelity,
        n_chains=n_chains,
        n_warmup=int(cfg["n_warmup"]),
        draws_per_chain=per,
        n_draws=D,
        convergence=conv,
        rhat_max_train=float(train_conv["rhat_max"]),
        rhat_train=list(train_conv["rhat"]),
        wall_seconds=float(wall),
        chain_iterations_per_second=float(n_chains * n_iter / max(t1 - t0, 1e-12)),
        n_classes=K,
        thin=int(cfg["thin"]),
        rhat_max_per_class=[
            float(np.nanmax(rhat[:, k])) if np.isfinite(rhat[:, k]).any() else float("nan")
            for k in range(K)
        ],
        ess_bulk_min=float(np.nanmin(ess)) if np.isfinite(ess).any() else float("nan"),
        ess_bulk_median=float(np.nanmedian(ess)) if np.isfinite(ess).any() else float("nan"),
        subiter_mean_warmup=(
            float(out["subiter"][:, : int(cfg["n_warmup"])].mean())
            if int(cfg["n_warmup"])
            else float("nan")
        ),
        subiter_mean_kept=float(out["subiter"][:, int(cfg["n_warmup"]) :].mean()),
        subiter_max=int(out["subiter"].max()),
        theta_abs_mean=float(out["theta"].mean()),
        loglik_mean_first_half=float(ll[:, :half].mean()),
        loglik_mean_second_half=float(ll[:, half:].mean()) if per > 1 else float("nan"),
        jitter_train=float(jit_t),
        jitter_conditional=float(jit_c),
        nugget=nu,
        sampler_seconds=float(t1 - t0),
        conditional_seconds=float(t2 - t1),
        reference=str(cfg["reference"]),
        mode_iterations=int(ref_record.get("mode_iterations", 0)),
        mode_loglik=float(ref_record.get("mode_loglik", float("nan"))),
        reference_curvature_mean=float(ref_record.get("reference_curvature_mean", 0.0)),
        mode_grad_max=float(ref_record.get("mode_grad_max", float("nan"))),
        mode_converged=bool(ref_record.get("mode_converged", False)),
        reference_jitter=float(ref_record.get("reference_jitter", 0.0)),
        reference_seconds=float(ref_record.get("reference_seconds", float("nan"))),
    )


#: The family's prior class (its capabilities, e.g. ``numerics_version``, ``task_type``).
PRIOR_CLASS = GPClassificationPrior


def build_classification_prior(
    cov: Any,
    n_classes: int = DEFAULT_N_CLASSES,
    fidelity: Fidelity | str = DEFAULT_FIDELITY,
    *,
    sampler_kwargs: dict[str, Any] | None = None,
    use_cache: bool = True,
) -> GPClassificationPrior:
    """The latent-GP classification prior of the dataset ``cov``.

    The latent GP is exactly the dataset's GP prior (:func:`udbench.priors.gp.build_prior`:
    the same cached kernel fit and scale constant a at this fidelity; nothing is refitted).

    Parameters
    ----------
    cov : udbench.data.Covariates
    n_classes : int, default 3
    fidelity : Fidelity or str, default "standard"
        Selects the GP fit settings and the sampler preset.
    sampler_kwargs : dict, optional
        Preset overrides.
    use_cache : bool, default True
        Read and write the GP fit cache.

    Returns
    -------
    GPClassificationPrior

    Raises
    ------
    UdbenchError
        K < 2, an unknown fidelity, a dataset without a GP kernel family.
    """
    from udbench.priors.gp import build_prior

    K = check_n_classes("build_classification_prior", n_classes)
    fidelity = Fidelity.parse("build_classification_prior", fidelity)
    gp = build_prior(cov, fidelity, use_cache=use_cache)
    return GPClassificationPrior(gp, K, fidelity, dataset=cov.key, sampler_kwargs=sampler_kwargs)


def build_prior(
    cov: Any, fidelity: Fidelity | str = DEFAULT_FIDELITY, n_classes: int = DEFAULT_N_CLASSES
) -> GPClassificationPrior:
    """The family's builder for :func:`udbench.priors.base.make_prior` (``"gpc"``).

    :func:`build_classification_prior` with the builders' argument order (``cov``,
    ``fidelity``) and K as a keyword (a task setting).
    """
    return build_classification_prior(cov, n_classes, fidelity)
