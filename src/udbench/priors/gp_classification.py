"""The latent-GP classification prior and its reference posterior by elliptical slice sampling.

Model (docs/spec.md §11, docs/classification.md). On a dataset's covariates, K latent
functions are independent draws of the dataset's GP prior (:mod:`udbench.priors.gp`: the
fitted unit kernel k̃ and scale constant a of SPEC §5, unchanged, with the prior's nugget ν):

    f_k ~ GP(0, a²k̃ + ν·δ)  (k = 1…K),   π*(x) = softmax(f*(x) / τ(x)),   y ~ Categorical(π*(x)).

The temperature τ(x) > 0 is known, like the noise variance of a regression task: it is the
noise's role (a larger τ flattens π*, a higher Bayes error). Its level and heteroscedastic
shapes are :class:`udbench.design.TemperatureModel`; the level rule (a target mean
prior-expected Bayes error over the evaluation pool) is :func:`temperature_level` here.

Reference posterior. p(f | S) with S = (X_train, y) is not Gaussian. The training latents
F_t ∈ R^{n×K} (all K·n jointly; the prior covariance is block-diagonal over k, every block
Σ_t = a²K̃_tt + ν·I) are drawn by elliptical slice sampling (ESS; Murray, Adams & MacKay 2010,
AISTATS; BlackJAX's ``elliptical_proposal``), which needs no tuning and leaves the Gaussian
prior invariant exactly. The momentum generator draws Z ~ N(0, I) (n, K) and returns the pair
(L_t Z, Z) with L_t = chol Σ_t: the chain's position is the pair (F_t, W_t) with
F_t = L_t W_t, rotated on the same ellipse, so the whitened latents W_t = L_t⁻¹F_t come for free.
Several chains start from independent prior draws, run a burn-in (``n_warmup`` iterations: ESS
has nothing to adapt), then keep every ``thin``-th state.

The evaluation latents are exact given each kept training draw (the GP conditional with the
prior's nugget, R&W 2006 eq. 2.19 with noise-free targets): with A = L_t⁻¹ a²K̃_te,

    f_e | f_t ~ N(Aᵀ W_t,  a²K̃_ee + ν·I − AᵀA),

drawn as Aᵀ W_t + L_c Z' (L_c = chol of the conditional covariance, adaptive jitter recorded).
The posterior of π at the evaluation points is then softmax(f_e / τ_e) per draw.

Seed streams (the rule of :mod:`udbench.priors.base`, family ``"gpc"``): ``"gpc-prior"``
(prior latent draws, :meth:`GPClassificationPrior.sample`), ``"gpc-mcmc"`` (the chains:
initial states, momenta, slice variables; a JAX key) and ``"gpc-conditional"`` (the normals
of the evaluation latents). The level rule's Monte Carlo normals are a build stream,
``("gpc-level", K)``.

Not wired yet: task generation, task files, the CLI and the runner do not know this family
(docs/classification.md, "Integration"); it is not in
:data:`udbench.priors.base.PRIOR_FAMILIES`.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
import scipy.special

from udbench._seeding import make_rng
from udbench._validation import check_array, param_error
from udbench.priors.base import DEFAULT_FIDELITY, Fidelity, call_seed
from udbench.priors.diagnostics import summarise_function_draws
from udbench.priors.gp.linalg import JITTER_START, add_diag, chol_jitter, solve_lower, tri_matmul_T
from udbench.priors.gp.linalg import xp as _xp
from udbench.priors.mcmc import MCMCDiagnostics, MCMCPrior

__all__ = [
    "DEFAULT_N_CLASSES",
    "DIFFICULTIES",
    "PRIOR_CLASS",
    "ClassificationPosterior",
    "ESSDiagnostics",
    "GPClassificationPrior",
    "build_classification_prior",
    "check_labels",
    "check_n_classes",
    "check_temperature",
    "class_probabilities",
    "draw_labels",
    "expected_bayes_error_curve",
    "temperature_level",
]

#: Number of classes K when none is given.
DEFAULT_N_CLASSES: int = 3

#: Named difficulty levels: the target of the level rule, the mean over the evaluation pool of
#: the prior-expected Bayes error divided by its chance value 1 − 1/K (:func:`temperature_level`).
DIFFICULTIES: dict[str, float] = {"easy": 0.1, "medium": 0.3, "hard": 0.6}

#: Monte Carlo draws of the level rule's curve g(r) (one fixed stream per K).
LEVEL_MC_DRAWS: int = 16384
#: Grid of signal ratios r = sd f / τ on which g(r) is tabulated (log-spaced, interpolated).
_LEVEL_GRID = np.geomspace(1e-3, 1e3, 241)


# --------------------------------------------------------------------------------------
# Checks (each value is checked where it enters, with one error template)
# --------------------------------------------------------------------------------------
def check_n_classes(component: str, n_classes: Any) -> int:
    """``n_classes`` as an int K >= 2.

    Raises
    ------
    UdbenchError
        K not an integer or K < 2.
    """
    if isinstance(n_classes, bool) or not isinstance(n_classes, int | np.integer):
        raise param_error(component, "n_classes", "be an integer >= 2", n_classes)
    if int(n_classes) < 2:
        raise param_error(component, "n_classes", "be an integer >= 2", n_classes)
    return int(n_classes)


def check_temperature(component: str, name: str, tau: Any, n: int | None = None) -> np.ndarray:
    """Temperatures τ, shape (n,), finite and > 0.

    Raises
    ------
    UdbenchError
        Wrong shape, NaN/inf, or an entry <= 0 (the message gives the smallest value).
    """
    arr = check_array(component, name, tau, shape=(n,))
    if arr.size and not np.min(arr) > 0:
        raise param_error(component, name, "be > 0 everywhere", f"minimum {float(np.min(arr))!r}")
    return arr


def check_labels(component: str, labels: Any, n: int, n_classes: int) -> np.ndarray:
    """Class labels, shape (n,), integers in 0 … K − 1; returned as int64.

    Raises
    ------
    UdbenchError
        Wrong shape, non-integer values, or a label outside 0 … K − 1.
    """
    raw = np.asarray(labels)
    if raw.shape != (n,):
        raise param_error(component, "labels", f"have shape ({n},)", f"shape {raw.shape}")
    if raw.dtype.kind not in "iu":
        if raw.dtype.kind != "f" or not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw)):
            raise param_error(component, "labels", "hold integers", f"dtype {raw.dtype}")
    out = raw.astype(np.int64)
    if out.size and (out.min() < 0 or out.max() >= n_classes):
        bad = out[(out < 0) | (out >= n_classes)][0]
        raise param_error(component, "labels", f"lie in 0 … {n_classes - 1}", int(bad))
    return out


# --------------------------------------------------------------------------------------
# The likelihood: class probabilities and labels
# --------------------------------------------------------------------------------------
def class_probabilities(latents: Any, tau: Any) -> np.ndarray:
    """π = softmax(f / τ) along the class axis.

    Parameters
    ----------
    latents : array_like, shape (..., m, K)
        Latent function values f_k(x) at m inputs (target units of the GP prior).
    tau : array_like, shape (m,)
        Temperatures τ(x) > 0.

    Returns
    -------
    ndarray, shape (..., m, K), float64
        Rows on the simplex (SciPy's stable softmax).

    Raises
    ------
    UdbenchError
        NaN/inf, fewer than 2 classes, τ of the wrong length or <= 0.
    """
    f = check_array("class_probabilities", "latents", latents)
    if f.ndim < 2 or f.shape[-1] < 2:
        raise param_error(
            "class_probabilities", "latents", "have shape (..., m, K) with K >= 2", f.shape
        )
    t = check_temperature("class_probabilities", "tau", tau, f.shape[-2])
    return np.asarray(scipy.special.softmax(f / t[:, None], axis=-1), dtype=np.float64)


def draw_labels(probs: Any, rng: np.random.Generator) -> np.ndarray:
    """One label per row, y_i ~ Categorical(π_i), by inverse CDF with one uniform per row.

    Parameters
    ----------
    probs : array_like, shape (m, K)
        Class probabilities (rows on the simplex, atol 1e-6).
    rng : numpy.random.Generator
        The stream of the labels (the task passes its own, named stream).

    Returns
    -------
    ndarray, shape (m,), int64
        Labels in 0 … K − 1.

    Raises
    ------
    UdbenchError
        Rows that are not probability vectors.
    """
    p = check_array("draw_labels", "probs", probs, ndim=2, nonnegative=True)
    if p.shape[1] < 2:
        raise param_error("draw_labels", "probs", "have K >= 2 columns", p.shape)
    dev = float(np.max(np.abs(p.sum(axis=1) - 1.0))) if p.size else 0.0
    if dev > 1e-6:
        raise param_error("draw_labels", "probs", "have rows summing to 1", f"deviation {dev:.3g}")
    u = np.asarray(rng.random(p.shape[0]))
    cdf = np.cumsum(p, axis=1)
    cdf[:, -1] = np.inf  # rounding never lets u fall past the last class
    return np.asarray((u[:, None] >= cdf).sum(axis=1), dtype=np.int64)


# --------------------------------------------------------------------------------------
# The level rule of the temperature
# --------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=16)
def _level_curves(n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(normalised Bayes error g(r), normalised expected entropy e(r)) on :data:`_LEVEL_GRID`."""
    z = make_rng("gpc-level", n_classes).standard_normal((LEVEL_MC_DRAWS, n_classes))
    chance = 1.0 - 1.0 / n_classes
    g = np.empty(_LEVEL_GRID.size)
    e = np.empty(_LEVEL_GRID.size)
    for i, r in enumerate(_LEVEL_GRID):
        p = scipy.special.softmax(r * z, axis=1)
        g[i] = float(np.mean(1.0 - p.max(axis=1))) / chance
        e[i] = float(np.mean(scipy.special.entr(p).sum(axis=1))) / np.log(n_classes)
    return g, e


def expected_bayes_error_curve(
    signal_ratio: Any, n_classes: int, quantity: str = "bayes_error"
) -> np.ndarray:
    """Prior-expected Bayes error (or entropy) at x as a function of r = sd f(x) / τ(x).

    Under the prior the K latents at x are independent N(0, v(x)), so
    π(x) = softmax(√v(x)·Z / τ(x)) with Z ~ N(0, I_K) depends on x only through
    r(x) = √v(x)/τ(x). Returns g(r) = E[1 − max_k π_k] / (1 − 1/K) (``"bayes_error"``) or
    E[H(π)] / log K (``"entropy"``), both in [0, 1] and decreasing in r (the tempered softmax
    sharpens monotonically). Tabulated once per K by Monte Carlo (:data:`LEVEL_MC_DRAWS`
    fixed normals, stream ``("gpc-level", K)``; SD of the table entries below 0.003) on a
    log grid r ∈ [1e-3, 1e3] and interpolated linearly in log r (clamped outside the grid).

    Parameters
    ----------
    signal_ratio : array_like, shape (m,)
        r(x) > 0.
    n_classes : int
        K >= 2.
    quantity : {"bayes_error", "entropy"}

    Returns
    -------
    ndarray, shape (m,)

    Raises
    ------
    UdbenchError
        K < 2, r <= 0 or NaN, or an unknown quantity.
    """
    K = check_n_classes("expected_bayes_error_curve", n_classes)
    r = check_temperature("expected_bayes_error_curve", "signal_ratio", signal_ratio)
    if quantity not in ("bayes_error", "entropy"):
        raise param_error(
            "expected_bayes_error_curve", "quantity", "be 'bayes_error' or 'entropy'", quantity
        )
    g, e = _level_curves(K)
    table = g if quantity == "bayes_error" else e
    return np.interp(np.log(r), np.log(_LEVEL_GRID), table)


def temperature_level(
    latent_sd: Any,
    shape: Any,
    strength: float,
    n_classes: int,
    target: float,
) -> float:
    """Level c of log τ(x) = c + (s/2)·h(x) so that the pool's mean Bayes error is ``target``.

    The level rule (docs/spec.md §11): over the evaluation pool, the mean of the prior-expected
    Bayes error divided by its chance value, mean_x g(sd(x) / τ(x)) with
    g = :func:`expected_bayes_error_curve`, equals ``target``. It is decreasing in r, hence
    increasing in c, so the root is unique (Brent's method, SciPy).

    Parameters
    ----------
    latent_sd : array_like, shape (m,)
        Prior SD √v(x) of one latent at the pool's points (a·√k̃(x, x)).
    shape : array_like, shape (m,)
        Standardised shape h(x) at the pool (zeros for homoscedastic).
    strength : float
        s >= 0, the SD of log τ² over the pool (τ² plays the noise variance's role).
    n_classes : int
        K >= 2.
    target : float
        In (0, 1): normalised mean Bayes error (e.g. :data:`DIFFICULTIES`).

    Returns
    -------
    float
        c.

    Raises
    ------
    UdbenchError
        Bad shapes, K < 2, s < 0, a target outside (0, 1) or one the grid cannot reach.
    """
    comp = "temperature_level"
    sd = check_temperature(comp, "latent_sd", latent_sd)
    h = check_array(comp, "shape", shape, shape=sd.shape)
    K = check_n_classes(comp, n_classes)
    s = float(strength)
    if not (np.isfinite(s) and s >= 0):
        raise param_error(comp, "strength", "be a finite number >= 0", strength)
    t = float(target)
    if not 0.0 < t < 1.0:
        raise param_error(comp, "target", "be in (0, 1)", target)
    g, _ = _level_curves(K)

    def excess(c: float) -> float:
        r = sd * np.exp(-(c + 0.5 * s * h))
        return float(np.mean(np.interp(np.log(r), np.log(_LEVEL_GRID), g))) - t

    lo, hi = -12.0, 12.0
    if not excess(lo) < 0 < excess(hi):
        raise param_error(comp, "target", "be reachable with τ in [e^-12, e^12]", target)
    return float(scipy.optimize.brentq(excess, lo, hi, xtol=1e-10))


# --------------------------------------------------------------------------------------
# Elliptical slice sampling of the training latents (BlackJAX)
# --------------------------------------------------------------------------------------
def _loglik(state: tuple[jax.Array, jax.Array], labels: jax.Array, inv_tau: jax.Array) -> Any:
    """Σ_i log softmax(f_i / τ_i)[y_i] of the position (F (n, K), W (n, K))."""
    f = state[0] * inv_tau[:, None]
    logp = jax.nn.log_softmax(f, axis=1)
    return jnp.sum(jnp.take_along_axis(logp, labels[:, None], axis=1))


@partial(jax.jit, static_argnames=("n_classes", "n_warmup", "n_keep", "thin"))
def _run_chains(
    L: jax.Array,
    labels: jax.Array,
    inv_tau: jax.Array,
    keys: jax.Array,
    *,
    n_classes: int,
    n_warmup: int,
    n_keep: int,
    thin: int,
) -> dict[str, jax.Array]:
    """Run one ESS chain per key (vmapped); return the kept states and slice statistics.

    The position is the pair (F, W) with F = L W (module docstring); the momentum generator
    returns (L Z, Z), so BlackJAX's ellipse rotates both with the same angle.

    Returns
    -------
    dict
        ``"f"``, ``"w"`` (chains, n_keep, n, K); ``"loglik"`` (chains, n_keep);
        ``"subiter"`` (chains, n_warmup + n_keep·thin): likelihood evaluations of every
        iteration (1 = the first proposal on the ellipse was accepted); ``"theta"``
        (chains, n_keep·thin): |accepted angle| of the kept phase.
    """
    from blackjax.mcmc.elliptical_slice import EllipSliceState, elliptical_proposal

    n = labels.shape[0]

    def loglik(position: tuple[jax.Array, jax.Array]) -> Any:
        return _loglik(position, labels, inv_tau)

    def momentum(key: jax.Array, position: Any) -> tuple[jax.Array, jax.Array]:
        z = jax.random.normal(key, position[0].shape, dtype=position[0].dtype)
        return (L @ z, z)

    def one_chain(key: jax.Array) -> dict[str, jax.Array]:
        k_init, k_warm, k_keep = jax.random.split(key, 3)
        w0 = jax.random.normal(k_init, (n, n_classes), dtype=L.dtype)
        pos = (L @ w0, w0)  # an independent prior draw: chains start over-dispersed
        step = elliptical_proposal(loglik, momentum, jnp.zeros((), L.dtype))  # prior mean 0
        state = EllipSliceState(pos, loglik(pos))

        def body(st: Any, k: jax.Array) -> tuple[Any, tuple[jax.Array, jax.Array]]:
            st, info = step(k, st)
            return st, (info.subiter, jnp.abs(info.theta))

        state, (sub_w, _) = jax.lax.scan(body, state, jax.random.split(k_warm, n_warmup))

        def keep(st: Any, k: jax.Array) -> tuple[Any, tuple[Any, ...]]:
            st, (sub, th) = jax.lax.scan(body, st, jax.random.split(k, thin))
            return st, (st.position[0], st.position[1], st.logdensity, sub, th)

        state, (f, w, ll, sub_k, th) = jax.lax.scan(keep, state, jax.random.split(k_keep, n_keep))
        return {
            "f": f,
            "w": w,
            "loglik": ll,
            "subiter": jnp.concatenate([sub_w, sub_k.reshape(-1)]),
            "theta": th.reshape(-1),
        }

    return jax.vmap(one_chain)(keys)


# --------------------------------------------------------------------------------------
# The posterior and its diagnostics
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ESSDiagnostics(MCMCDiagnostics):
    """:class:`~udbench.priors.mcmc.MCMCDiagnostics` of the elliptical slice sampler.

    ``convergence`` (flattened into :meth:`to_dict`) is
    :func:`~udbench.priors.diagnostics.summarise_function_draws` of π at the evaluation
    points, one variable per (point, class), point-major (``rhat[i·K + k]`` is point i,
    class k); ``rhat_max_train`` / ``rhat_train`` are the split-R̂ of the training latents
    f_k(x_i) (same order). ``rhat_gate`` is True: the SPEC §7 R̂ rule applies (few long
    chains, as for the BNN).

    Attributes
    ----------
    n_classes : int
        K.
    thin : int
        Iterations per kept draw.
    rhat_max_per_class : list of float
        Largest split-R̂ of π_k over the evaluation points, per class k.
    ess_bulk_min, ess_bulk_median : float
        Bulk effective sample size of π (ArviZ, rank-normalised) over the (point, class)
        variables: smallest and median.
    subiter_mean_warmup, subiter_mean_kept : float
        Mean likelihood evaluations per iteration (1 + slice shrinks) in the burn-in and in
        the kept phase; ``subiter_max`` the largest of any iteration.
    subiter_max : int
    theta_abs_mean : float
        Mean |accepted angle| on the ellipse in the kept phase (π/2 ≈ 1.57 for a flat
        likelihood; small values mean short moves).
    loglik_mean_first_half, loglik_mean_second_half : float
        Mean log-likelihood of the kept draws in each half of the chains (a drift between
        them means the burn-in was too short).
    jitter_train : float
        Jitter added to Σ_t = a²K̃_tt + ν·I beyond the nugget (0 when it factorised).
    jitter_conditional : float
        Jitter of the evaluation-latent conditional covariance factor.
    nugget : float
        ν, the prior's nugget (target units²).
    sampler_seconds, conditional_seconds : float
        Wall time of the chains (compilation included) and of the evaluation latents.
    """

    n_classes: int
    thin: int
    rhat_max_per_class: list[float]
    ess_bulk_min: float
    ess_bulk_median: float
    subiter_mean_warmup: float
    subiter_mean_kept: float
    subiter_max: int
    theta_abs_mean: float
    loglik_mean_first_half: float
    loglik_mean_second_half: float
    jitter_train: float
    jitter_conditional: float
    nugget: float
    sampler_seconds: float
    conditional_seconds: float


@dataclass(frozen=True)
class ClassificationPosterior:
    """Draws of the reference posterior of a latent-GP classification task.

    Attributes
    ----------
    prob_draws : ndarray, shape (D, n_eval, K), float64
        π_F(x) = softmax(f_e(x)/τ(x)) per draw at the evaluation points (the input of
        :func:`udbench.risk.classification_oracle_targets`).
    latent_eval : ndarray, shape (D, n_eval, K), float64
        Evaluation latents f_k(x), draws chain-major (``n_chains`` blocks of D / n_chains).
    latent_train : ndarray, shape (D, n, K), float64
        Training latents (the ESS chains' kept states).
    n_chains : int
        Chains; draw d is chain d // (D / n_chains).
    diagnostics : dict
        :meth:`ESSDiagnostics.to_dict` (JSON-serialisable).
    """

    prob_draws: np.ndarray
    latent_eval: np.ndarray
    latent_train: np.ndarray
    n_chains: int
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def mean_probs(self) -> np.ndarray:
        """The posterior predictive π̄(x) = mean over draws of π_F(x), shape (n_eval, K)."""
        return np.asarray(self.prob_draws.mean(axis=0))

    def chains(self, what: str = "prob_draws") -> np.ndarray:
        """``prob_draws``, ``latent_eval`` or ``latent_train`` as (chains, per chain, m, K)."""
        arr = getattr(self, what)
        return arr.reshape(self.n_chains, -1, *arr.shape[1:])


def _ess_bulk(chains: np.ndarray) -> np.ndarray:
    """Bulk ESS (ArviZ, rank-normalised) of every variable of (chains, draws, m) draws."""
    import warnings

    import arviz as az

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="More chains", category=UserWarning)
        ds = az.convert_to_dataset(chains)
    return np.asarray(az.ess(ds, method="bulk")["x"].values, dtype=np.float64).reshape(-1)


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

    Class attributes
    ----------------
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
    task_type: ClassVar[str] = "classification"
    likelihood: ClassVar[str] = "categorical-softmax"
    numerics_version: ClassVar[int] = 1
    rhat_gate: ClassVar[bool] = True
    seed_bits: ClassVar[int] = 32
    #: Sampler presets (measured costs: docs/classification.md, "Fidelities").
    presets: ClassVar[dict[str, dict[str, Any]]] = {
        Fidelity.SMOKE: {"n_chains": 2, "n_warmup": 100, "thin": 2},
        Fidelity.STANDARD: {"n_chains": 4, "n_warmup": 1000, "thin": 10},
        Fidelity.PAPER: {"n_chains": 4, "n_warmup": 4000, "thin": 40},
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

    # -- posterior ----------------------------------------------------------------------
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
        """Reference posterior p(f | S) by ESS on the training latents, then the exact GP
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
        with jax.enable_x64(True):
            xp = _xp()
            K_tt = xp.asarray(self.gp.covariance(X_train))
            L_t, jit_t = chol_jitter(add_diag(K_tt, nu), start=None)
            keys = jax.random.split(jax.random.key(self._sampler_seed(key)), n_chains)
            out = _run_chains(
                jnp.asarray(L_t),
                jnp.asarray(y),
                jnp.asarray(1.0 / t_tr),
                keys,
                n_classes=K,
                n_warmup=int(cfg["n_warmup"]),
                n_keep=per,
                thin=int(cfg["thin"]),
            )
            out = {k: np.asarray(v) for k, v in out.items()}
            t1 = time.perf_counter()
            # evaluation latents: f_e = Aᵀ W + L_c Z', A = L_t⁻¹ a²K_te
            K_te = xp.asarray(self.gp.covariance(X_train, X_eval))
            K_ee = xp.asarray(self.gp.covariance(X_eval))
            A = solve_lower(L_t, K_te)  # (n, m)
            C = add_diag(K_ee - A.T @ A, nu)
            L_c, jit_c = chol_jitter(0.5 * (C + C.T), start=None if nu > 0 else JITTER_START)
            W = out["w"].reshape(D, n, K).transpose(1, 0, 2).reshape(n, D * K)
            mean_e = np.asarray(A.T @ xp.asarray(W))  # (m, D·K)
            rng = np.random.default_rng(call_seed(self.family, "conditional", key))
            z = xp.asarray(rng.standard_normal((D * K, m)))
            noise = np.asarray(tri_matmul_T(z, L_c))  # (D·K, m)
            f_e = mean_e.reshape(m, D, K).transpose(1, 0, 2) + noise.reshape(D, K, m).transpose(
                0, 2, 1
            )
            f_e = np.ascontiguousarray(f_e, dtype=np.float64)
        probs = class_probabilities(f_e, t_ev)
        t2 = time.perf_counter()
        f_t = np.ascontiguousarray(out["f"].reshape(D, n, K), dtype=np.float64)
        conv = summarise_function_draws(probs.reshape(n_chains, per, m * K))
        train_conv = summarise_function_draws(f_t.reshape(n_chains, per, n * K), rhat_only=True)
        rhat = np.asarray(conv["rhat"], dtype=np.float64).reshape(m, K)
        ess = _ess_bulk(probs.reshape(n_chains, per, m * K))
        ll = out["loglik"]
        half = max(per // 2, 1)
        n_iter = int(cfg["n_warmup"]) + per * int(cfg["thin"])
        wall = time.perf_counter() - t0
        diag = ESSDiagnostics(
            sampler="blackjax elliptical_slice",
            fidelity=self.fidelity.value,
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
        )
        return ClassificationPosterior(
            prob_draws=probs,
            latent_eval=f_e,
            latent_train=f_t,
            n_chains=n_chains,
            diagnostics=diag.to_dict(),
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
