"""BNN reference prior (SPEC §5, paper B.2/B.5): a one-hidden-layer tanh network with
standard-normal weights, centred on fixed reference inputs and scaled by a; conditioned by
NUTS (NumPyro) on all weights in float64.

    u(x) = H^−½ Σ_h v_h · tanh(d^−½ · w_hᵀ(2x − 1) + c_h),     v, w, c ~ N(0, 1)
    f(x) = b + a · (u(x) − (1/R) Σ_r u(x_r^ref)),               b ~ N(0, 1)

with H = 50 hidden units and R = 65 reference inputs: evaluation-pool rows chosen once
per dataset (:func:`choose_reference_rows`). The centring makes b the mean of f over the
reference inputs, so the level and the shape of f have separate priors.

NUTS runs its chains in parallel on the available devices: with ``chain_method="auto"``
(the default) NumPyro's ``parallel`` method when there are at least as many JAX devices as
chains (several GPUs, or CPU cores exposed as devices with
``XLA_FLAGS=--xla_force_host_platform_device_count=N``), and otherwise ``vectorized`` (all
chains in one program on one device). NumPyro's ``parallel`` method silently runs the
chains one after another when there are fewer devices than chains, so asking for it
explicitly then is an error.
Float64 is switched on only inside :meth:`BNNPrior.condition` (``jax.enable_x64(True)``),
for the presets' ``dtype = "float64"``; ``"float32"`` runs NUTS in single precision
(half the CPU per gradient at kin8nm size, :func:`udbench.priors.bnn_cost.gradient_seconds`).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any

import numpy as np

from udbench._seeding import make_rng
from udbench._validation import check_array, check_choice, check_positive, param_error
from udbench.priors.base import DEFAULT_FIDELITY, FAMILY_CAPABILITIES, Fidelity, Posterior
from udbench.priors.mcmc import MCMCPrior, NUTSDiagnostics

#: Accepted values of ``chain_method`` (:func:`resolve_chain_method`).
CHAIN_METHODS: tuple[str, ...] = ("auto", "parallel", "vectorized", "sequential")

__all__ = [
    "CHAIN_METHODS",
    "DTYPES",
    "FIDELITY_SETTINGS",
    "N_HIDDEN",
    "N_REFERENCE",
    "PRIOR_CLASS",
    "STEP_COST",
    "BNNPrior",
    "build_prior",
    "choose_reference_rows",
    "network_u",
    "resolve_chain_method",
]

#: Hidden units H (SPEC §5).
N_HIDDEN: int = 50
#: Number R of reference inputs for the centring (SPEC §5).
N_REFERENCE: int = 65

#: NUTS settings per fidelity. ``paper`` is SPEC §5 (float64); ``standard`` is the setting
#: chosen by the full-size sweep of issue 34 among those that passed the SPEC §7 R̂ rule
#: (target acceptance 0.8, max tree depth 8, in float32: 1.81× the ESS of f per leapfrog step
#: of the former 0.9 / depth 9 at 0.51 of its CPU per step, 3.5× its ESS per second at equal
#: load; the same model, coverage and SBC alike; docs/priors-mcmc.md, "BNN NUTS settings at
#: full size"; until 2026-12-03 it was 0.9 / depth 9 in float64);
#: ``smoke`` is for tests (not a reference posterior). D = n_chains × draws per chain.
#: ``dtype`` is NUTS's arithmetic (:data:`DTYPES`).
FIDELITY_SETTINGS: dict[str, dict[str, Any]] = {
    "paper": {
        "n_chains": 4,
        "n_warmup": 500,
        "target_accept": 0.9,
        "max_tree_depth": 10,
        "dense_mass": False,
        "dtype": "float64",
    },
    "standard": {
        "n_chains": 4,
        "n_warmup": 400,
        "target_accept": 0.8,
        "max_tree_depth": 8,
        "dense_mass": False,
        "dtype": "float32",
    },
    "smoke": {
        "n_chains": 2,
        "n_warmup": 300,
        "target_accept": 0.9,
        "max_tree_depth": 8,
        "dense_mass": False,
        "dtype": "float64",
    },
}
#: Floating-point types NUTS can run in (``dtype`` of :data:`FIDELITY_SETTINGS`): the
#: sampler's arithmetic (weights, gradient, energy); stored draws are float64 either way.
DTYPES: tuple[str, ...] = ("float64", "float32")
#: CPU of one leapfrog step relative to float64 (:func:`udbench.priors.bnn_cost.
#: gradient_seconds` at kin8nm size, n = 3136, 4 chains, in the process of the sweep unit
#: ``f32-accept0.8-d8``, 2026-12-03: 0.98 ms against 0.50 ms per chain-step); read by
#: :meth:`BNNPrior.instance_work`.
STEP_COST: dict[str, float] = {"float64": 1.0, "float32": 0.51}


def network_u(
    X: np.ndarray, v: np.ndarray, w: np.ndarray, c: np.ndarray, xp: Any = np
) -> np.ndarray:
    """The un-centred network u(x) = H^−½ Σ_h v_h tanh(d^−½ w_hᵀ(2x − 1) + c_h) (SPEC §5).

    Parameters
    ----------
    X : array, shape (..., m, d), inputs in [0, 1] (leading axes broadcast with the weights')
    v : array, shape (..., H)
    w : array, shape (..., H, d)
    c : array, shape (..., H)
    xp : module, default numpy
        Array namespace (``numpy`` or ``jax.numpy``).

    Returns
    -------
    array, shape (..., m)
    """
    d = X.shape[-1]
    H = v.shape[-1]
    pre = xp.einsum("...md,...hd->...mh", 2.0 * X - 1.0, w) / np.sqrt(d) + c[..., None, :]
    return xp.einsum("...mh,...h->...m", xp.tanh(pre), v) / np.sqrt(H)


def _f(X: Any, X_ref: Any, v: Any, w: Any, c: Any, b: Any, scale: float, xp: Any = np) -> Any:
    """f(x) = b + a (u(x) − mean_r u(x_r)), batched over leading weight axes."""
    u = network_u(X, v, w, c, xp)
    u_ref = network_u(X_ref, v, w, c, xp).mean(axis=-1)
    return b[..., None] + scale * (u - u_ref[..., None])


def choose_reference_rows(n_eval: int, dataset: str, n_reference: int = N_REFERENCE) -> np.ndarray:
    """Positions (into the evaluation pool) of the R reference inputs, fixed per dataset.

    Drawn uniformly without replacement with a stream derived from ``("bnn-reference",
    dataset)``; sorted.

    Returns
    -------
    ndarray, shape (min(n_reference, n_eval),), int
    """
    rng = make_rng("bnn-reference", dataset)
    return np.sort(rng.choice(int(n_eval), size=min(int(n_reference), int(n_eval)), replace=False))


def _model(X: Any, X_r: Any, sd: Any, y_obs: Any, scale: Any, n_hidden: int = N_HIDDEN) -> None:
    """NumPyro model for R independent data sets (leading axis of X, sd, y_obs): one
    set of weights each, all N(0, 1); Gaussian likelihood with known per-point SD."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    R, H, d = X.shape[0], n_hidden, X.shape[-1]
    v = numpyro.sample("v", dist.Normal(0.0, 1.0).expand([R, H]).to_event(2))
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([R, H, d]).to_event(3))
    c = numpyro.sample("c", dist.Normal(0.0, 1.0).expand([R, H]).to_event(2))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand([R]).to_event(1))
    f = _f(X, X_r, v, w, c, b, scale, xp=jnp)
    numpyro.sample("y", dist.Normal(f, sd).to_event(2), obs=y_obs)


def resolve_chain_method(chain_method: str, n_chains: int, n_devices: int) -> str:
    """The NumPyro chain method to use for ``n_chains`` chains on ``n_devices`` devices.

    Parameters
    ----------
    chain_method : {"auto", "parallel", "vectorized", "sequential"}
        ``"auto"`` gives ``"parallel"`` (one chain per device, ``jax.pmap``) when
        ``n_devices >= n_chains > 1`` and ``"vectorized"`` (all chains in one program on
        one device) otherwise. The other values are returned unchanged.
    n_chains, n_devices : int
        Chains of the preset; ``jax.local_device_count()``.

    Returns
    -------
    str
        ``"parallel"``, ``"vectorized"`` or ``"sequential"``.

    Raises
    ------
    UdbenchError
        Unknown ``chain_method``, or ``"parallel"`` with fewer devices than chains (NumPyro
        would then silently run the chains one after another).
    """
    comp = "BNNPrior.condition"
    check_choice(comp, "chain_method", chain_method, CHAIN_METHODS)
    if chain_method == "auto":
        return "parallel" if n_devices >= n_chains > 1 else "vectorized"
    if chain_method == "parallel" and n_devices < n_chains:
        raise param_error(
            comp,
            "chain_method",
            f"not be 'parallel' with fewer JAX devices ({n_devices}) than chains "
            f"({n_chains}); use 'auto' or 'vectorized'",
            chain_method,
        )
    return chain_method


def _nuts_runner(
    n_hidden: int,
    n_features: int,
    n_chains: int,
    n_warmup: int,
    n_samples: int,
    target_accept: float,
    max_tree_depth: int,
    chain_method: str,
    dense_mass: bool = False,
) -> Any:
    """A fresh NumPyro ``MCMC`` object (re-running a vectorised one fails, NumPyro
    issue #1640; compilation is amortised by conditioning many data sets in one run,
    :meth:`BNNPrior.condition_batch`, instead). ``dense_mass`` adapts a dense mass matrix
    (NumPyro's ``dense_mass=True``) instead of a diagonal one."""
    from numpyro.infer import MCMC, NUTS

    kernel = NUTS(
        functools.partial(_model, n_hidden=n_hidden),
        target_accept_prob=target_accept,
        max_tree_depth=max_tree_depth,
        dense_mass=bool(dense_mass),
    )
    del n_features  # the model reads d from its inputs
    return MCMC(
        kernel,
        num_warmup=n_warmup,
        num_samples=n_samples,
        num_chains=n_chains,
        chain_method=chain_method,
        progress_bar=False,
    )


class BNNPrior(MCMCPrior):
    """BNN reference prior: tanh network with reference-input centring (SPEC §5).

    Shared settings, seed streams and the chain layout come from
    :class:`~udbench.priors.mcmc.MCMCPrior`.

    Parameters
    ----------
    X_ref : ndarray, shape (R, d)
        The reference inputs (65 evaluation-pool rows, :func:`choose_reference_rows`).
    scale : float, default 1.0
        The scale constant a (target units), set by :func:`build_prior`.
    fidelity : Fidelity or str, default DEFAULT_FIDELITY
        NUTS preset (:data:`FIDELITY_SETTINGS`).
    n_hidden : int, default 50
    dataset : str, optional
        Recorded in :attr:`settings`.
    sampler_kwargs : dict, optional
        Overrides of single NUTS settings of the preset (keys of
        :data:`FIDELITY_SETTINGS`); recorded in :attr:`settings`.
    """

    family = "bnn"
    #: Draws only (NUTS), matched with the NN methods.
    capabilities = FAMILY_CAPABILITIES["bnn"]
    presets = FIDELITY_SETTINGS
    seed_bits = 32  # JAX's PRNGKey takes a 32-bit seed

    @classmethod
    def instance_work(cls, fidelity: str, n_draws: int = 1000) -> float:
        """NUTS leapfrog steps of one instance at ``fidelity``, up to a constant: n_chains ×
        (n_warmup + D / n_chains) × 2^max_tree_depth, D = ``n_draws`` (trajectories mostly
        reach the maximum depth at the suite's sizes, docs/priors-mcmc.md; an upper bound
        where they stop earlier), times the step's relative CPU in the preset's dtype
        (:data:`STEP_COST`). Read by :func:`udbench.tuning.calibration.work_ratio`."""
        s = FIDELITY_SETTINGS[str(fidelity)]
        steps = float(s["n_chains"] * (s["n_warmup"] + n_draws / s["n_chains"]))
        return steps * 2.0 ** int(s["max_tree_depth"]) * STEP_COST[str(s.get("dtype", "float64"))]

    @classmethod
    def synthetic(cls, fidelity: str, X_eval: np.ndarray) -> BNNPrior:
        """A BNN prior at ``fidelity`` with scale a = 1 for synthetic inputs ``X_eval``
        (n_eval, d), reference rows chosen by the stream ``"calibration"``, for timing
        (:mod:`udbench.tuning.calibration`)."""
        ref = X_eval[choose_reference_rows(X_eval.shape[0], "calibration")]
        return cls(ref, 1.0, fidelity)

    def __init__(
        self,
        X_ref: np.ndarray,
        scale: float = 1.0,
        fidelity: Fidelity | str = DEFAULT_FIDELITY,
        *,
        n_hidden: int = N_HIDDEN,
        dataset: str | None = None,
        sampler_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(scale, fidelity, dataset=dataset, sampler_kwargs=sampler_kwargs)
        self.X_ref = X_ref
        self.n_hidden = n_hidden

    def _model_settings(self) -> dict[str, Any]:
        return {
            "n_hidden": self.n_hidden,
            "n_reference": int(np.asarray(self.X_ref).shape[0]),
            "X_ref": np.asarray(self.X_ref, dtype=np.float64).tolist(),
        }

    def _engine_settings(self) -> dict[str, Any]:
        return {
            "engine": "numpyro NUTS",
            "chain_method": "auto",  # resolved per run; the method used is in the diagnostics
            "dtype": "float64",
        }

    def _check_X(self, name: str, X: Any) -> np.ndarray:
        X = check_array("BNNPrior", name, X, ndim=2)
        d = np.asarray(self.X_ref).shape[1]
        if X.shape[1] != d:
            raise param_error("BNNPrior", name, f"have {d} columns like X_ref", X.shape)
        return X

    def sample_weights(self, key: int, n_draws: int = 1) -> dict[str, np.ndarray]:
        """Prior draws of all weights: v (n, H), w (n, H, d), c (n, H), b (n,), all N(0, 1)."""
        check_positive("BNNPrior", "n_draws", n_draws)
        rng = self._prior_rng(key)
        H, d, n = int(self.n_hidden), int(np.asarray(self.X_ref).shape[1]), int(n_draws)
        return {
            "v": rng.standard_normal((n, H)),
            "w": rng.standard_normal((n, H, d)),
            "c": rng.standard_normal((n, H)),
            "b": rng.standard_normal(n),
        }

    def function(self, X: np.ndarray, weights: dict[str, np.ndarray]) -> np.ndarray:
        """f at ``X`` (m, d) for a batch of weights (leading axes); returns (..., m) float64."""
        X = self._check_X("X", X)
        X_ref = np.asarray(self.X_ref, dtype=np.float64)
        return _f(X, X_ref, weights["v"], weights["w"], weights["c"], weights["b"], self.scale)

    def sample(self, X: np.ndarray, key: int, n_draws: int = 1) -> np.ndarray:
        """Joint prior draws of f at ``X``.

        Parameters
        ----------
        X : ndarray, shape (m, d)
        key : int
            Seed; the same key gives the same draws.
        n_draws : int, default 1

        Returns
        -------
        ndarray, shape (n_draws, m), float64, target units.
        """
        X = self._check_X("X", X)
        return self.function(X, self.sample_weights(key, n_draws))

    def condition(
        self,
        X_train: np.ndarray,
        y: np.ndarray,
        noise_var_train: np.ndarray,
        X_eval: np.ndarray,
        key: int,
        n_draws: int,
        *,
        chain_method: str = "auto",
    ) -> Posterior:
        """Posterior draws of f given S with known noise variances, by NUTS on all weights.

        Parameters
        ----------
        X_train : ndarray, shape (n, d); y : ndarray, shape (n,)
        noise_var_train : ndarray, shape (n,)
            Known σ²(x_i) (target units squared).
        X_eval : ndarray, shape (n_eval, d)
        key : int
            Seed (same key → same draws on the same platform).
        n_draws : int
            D; must be a multiple of the fidelity's number of chains (draws per chain =
            D / chains).
        chain_method : {"auto", "parallel", "vectorized", "sequential"}
            How NumPyro runs the chains (:func:`resolve_chain_method`). ``"auto"`` (the
            default, used for tasks) is ``"parallel"`` on at least ``n_chains`` devices
            and ``"vectorized"`` otherwise; ``"sequential"`` exists for the speed
            comparison. The method used is recorded in the diagnostics.

        Returns
        -------
        Posterior
            ``draws_eval`` (D, n_eval), ``draws_train`` (D, n), float64, chain-major;
            ``diagnostics``: function-space split-R̂ and batch-means MCSE of σ_f² at every
            evaluation input (R̂ also at training inputs), mean acceptance probability,
            divergences, tree depths (mean, max, share of iterations at the maximum),
            leapfrog steps, step sizes, wall seconds.

        Raises
        ------
        UdbenchError
            Bad shapes, non-positive noise variances, D not a multiple of the chains,
            or ``chain_method="parallel"`` with fewer devices than chains.
        """
        X_train = self._check_X("X_train", X_train)
        X_eval = self._check_X("X_eval", X_eval)
        n = X_train.shape[0]
        y = check_array("BNNPrior", "y", y, shape=(n,))
        noise_var = check_array("BNNPrior", "noise_var_train", noise_var_train, shape=(n,))
        return self.condition_batch(
            X_train[None],
            y[None],
            noise_var[None],
            X_eval[None],
            key,
            n_draws,
            chain_method=chain_method,
        )[0]

    def condition_batch(
        self,
        X_train: np.ndarray,
        y: np.ndarray,
        noise_var_train: np.ndarray,
        X_eval: np.ndarray,
        key: int,
        n_draws: int,
        *,
        chain_method: str = "auto",
    ) -> list[Posterior]:
        """Condition R independent data sets of equal size in one NUTS run.

        The R posteriors are independent, so NUTS on their product (one set of weights per
        data set, one shared step size and mass-matrix adaptation) samples each exactly;
        this amortises JAX compilation when many small problems are conditioned, as in
        simulation-based calibration. :meth:`condition` is the case R = 1.

        Parameters
        ----------
        X_train : ndarray, shape (R, n, d); y, noise_var_train : ndarray, shape (R, n)
        X_eval : ndarray, shape (R, n_eval, d)
        key, n_draws, chain_method
            As in :meth:`condition`.

        Returns
        -------
        list of Posterior
            One per data set, as from :meth:`condition`; shared sampler figures
            (acceptance, tree depth, step size, wall time) are repeated in each.
        """
        import jax
        import jax.numpy as jnp

        comp = "BNNPrior.condition"
        X_train = check_array(comp, "X_train", X_train, ndim=3)
        R, n, d = X_train.shape
        X_eval = check_array(comp, "X_eval", X_eval, ndim=3)
        y = check_array(comp, "y", y, shape=(R, n))
        noise_var = check_array(comp, "noise_var_train", noise_var_train, shape=(R, n))
        if X_eval.shape[0] != R or X_eval.shape[2] != d:
            raise param_error(comp, "X_eval", f"have shape ({R}, *, {d})", X_eval.shape)
        self._check_X("X_train", X_train[0])
        self._check_noise_var(comp, noise_var)
        cfg = self.sampler_settings
        n_chains = int(cfg["n_chains"])
        chain_method = resolve_chain_method(chain_method, n_chains, jax.local_device_count())
        n_chains, per_chain = self._chain_layout(comp, n_draws)
        n_draws = n_chains * per_chain
        H, a = int(self.n_hidden), float(self.scale)
        X_ref = np.asarray(self.X_ref, dtype=np.float64)
        max_depth = int(cfg["max_tree_depth"])
        dtype = str(cfg.get("dtype", "float64"))
        check_choice(comp, "dtype", dtype, DTYPES)
        cast = functools.partial(np.asarray, dtype=np.dtype(dtype))
        seed = self._sampler_seed(key)
        t0 = time.perf_counter()
        with jax.enable_x64(dtype == "float64"):
            mcmc = _nuts_runner(
                H,
                d,
                n_chains,
                int(cfg["n_warmup"]),
                per_chain,
                float(cfg["target_accept"]),
                max_depth,
                chain_method,
                bool(cfg.get("dense_mass", False)),
            )
            mcmc.run(
                jax.random.PRNGKey(seed),
                jnp.asarray(cast(X_train)),
                jnp.asarray(cast(X_ref)),
                jnp.asarray(cast(np.sqrt(noise_var))),
                jnp.asarray(cast(y)),
                jnp.asarray(cast(a)),
                extra_fields=("diverging", "num_steps", "accept_prob", "adapt_state.step_size"),
            )
            samples = {
                k: np.asarray(v, np.float64)
                for k, v in mcmc.get_samples(group_by_chain=True).items()
            }
            extra = {
                k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()
            }
        wall = time.perf_counter() - t0
        steps = extra["num_steps"].astype(np.float64)
        depth = np.ceil(np.log2(steps + 1.0))
        n_iter = int(cfg["n_warmup"]) + per_chain
        # the sampler's figures, the same for every data set; R̂ and MCSE added per data set
        shared = NUTSDiagnostics(
            sampler="numpyro NUTS",
            fidelity=self.fidelity.value,
            chain_method=chain_method,
            n_chains=n_chains,
            n_warmup=int(cfg["n_warmup"]),
            draws_per_chain=per_chain,
            n_draws=n_draws,
            target_accept=float(cfg["target_accept"]),
            max_tree_depth=max_depth,
            accept_prob_mean=float(extra["accept_prob"].mean()),
            accept_prob_per_chain=extra["accept_prob"].mean(axis=1).tolist(),
            n_divergent=int(extra["diverging"].sum()),
            tree_depth_mean=float(depth.mean()),
            tree_depth_max=int(depth.max()),
            share_at_max_tree_depth=float(np.mean(depth >= max_depth)),
            leapfrog_steps_mean=float(steps.mean()),
            step_size_per_chain=extra["adapt_state.step_size"][:, -1].tolist(),
            n_datasets_in_run=R,
            wall_seconds=wall,
            chain_iterations_per_second=n_chains * n_iter / wall,
            convergence={},
            rhat_max_train=float("nan"),
            rhat_train=[],
        )

        out = []
        for r in range(R):
            weights = {k: v[:, :, r] for k, v in samples.items()}  # (chains, per_chain, ...)
            f_eval = self.function(X_eval[r], weights)  # (chains, per_chain, n_eval)
            f_train = self.function(X_train[r], weights)
            convergence, rhat_max_train, rhat_train = self._convergence(f_eval, f_train)
            diagnostics = dataclasses.replace(
                shared,
                convergence=convergence,
                rhat_max_train=rhat_max_train,
                rhat_train=rhat_train,
            )
            out.append(
                Posterior(
                    draws_eval=f_eval.reshape(n_draws, -1),
                    draws_train=f_train.reshape(n_draws, -1),
                    diagnostics=diagnostics.to_dict(),
                )
            )
        return out


#: The family's prior class (its capabilities, e.g. ``numerics_version``; read by
#: :func:`udbench.priors.base.family_numerics_version`).
PRIOR_CLASS = BNNPrior


def build_prior(cov: Any, fidelity: Fidelity | str = DEFAULT_FIDELITY) -> BNNPrior:
    """BNN prior for dataset ``cov``: reference inputs and scale constant a (SPEC §5).

    The R = 65 reference inputs are evaluation-pool rows (:func:`choose_reference_rows`);
    a = 1 / median over 100 unit-scale prior draws (key from ``("scale", cov.key, "bnn")``)
    of each draw's SD over the evaluation pool (b shifts a draw, so it has no effect).

    Parameters
    ----------
    cov : udbench.data.Covariates
    fidelity : Fidelity or str
        Checked by the prior's constructor.

    Returns
    -------
    BNNPrior
    """
    X_pool = np.asarray(cov.X, dtype=np.float64)[np.asarray(cov.eval_idx)]
    X_ref = X_pool[choose_reference_rows(X_pool.shape[0], cov.key)]
    unit = BNNPrior(X_ref, 1.0, fidelity, dataset=cov.key)
    a = unit._scale_from_pool(X_pool)
    return BNNPrior(X_ref, a, fidelity, dataset=cov.key)
