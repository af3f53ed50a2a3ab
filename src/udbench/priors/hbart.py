"""HBART reference prior (SPEC §5, paper B.2/B.5): a BART sum-of-trees prior over f, with
each observation's known noise variance in the likelihood when conditioning.

Prior draws come from our own vectorised NumPy sampler of the tree ensemble
(:func:`sample_forests`, :func:`evaluate_forests`); conditioning runs the BART MCMC of
``bartz`` on exactly the same prior, through its extension points:

- the threshold grid: inputs are binned here, in float64, onto the 255 equally spaced
  thresholds t_s = s/256 (s = 1..255), and handed to ``bartz.Bart`` as bin indices with
  an identity :class:`~bartz.prepcovars.Binner` (``GridBinner``), so bartz's cut
  point s means exactly "left iff x ≤ s/256";
- the leaf variance a²/m: ``tau_num = a``, ``k = 1`` (bartz's leaf SD is tau_num/(k√m)),
  ``offset = 0`` (prior mean of f is 0);
- the tree prior: ``base = 0.95``, ``power = 2``, ``maxdepth = max_depth + 1`` (bartz counts
  levels from 1), and ``min_points_per_decision_node = None`` through ``init_kw`` (bartz's
  default of 10 would make the prior depend on the training inputs);
- the known noise: ``error_scale = σ(x_i)``; bartz still samples a global error precision
  λ (per-point precision λ/σ²(x_i)), so the run callback ``KnownNoiseTempering``
  overwrites λ after every MCMC step with 1/T, T the likelihood temperature of the next
  step: T runs geometrically from 3 to 1 in ten equal stages over the first 75 % of the
  warm-up (``np.geomspace(3, 1, 10)``), then 1. A tempered likelihood at temperature T is
  the Gaussian likelihood with variance T·σ²(x_i), so this is all the tempering needs.

bartz fails with JAX x64 switched on, so it runs inside ``jax.enable_x64(False)``
(float32 internally); inputs to it are bin indices, and everything else (prior draws,
returned posterior draws) is float64.
"""

from __future__ import annotations

import functools
import time
from typing import Any

import numpy as np

from udbench._validation import check_array, check_positive, param_error
from udbench.priors._hbart_forest import (
    Forest,
    bin_inputs,
    evaluate_forests,
    sample_forests,
    split_probabilities,
    threshold_grid,
)
from udbench.priors.base import DEFAULT_FIDELITY, FAMILY_CAPABILITIES, Fidelity, Posterior
from udbench.priors.mcmc import HBARTDiagnostics, MCMCPrior

__all__ = [
    "FIDELITY_SETTINGS",
    "PRIOR_CLASS",
    "Forest",
    "HBARTPrior",
    "bin_inputs",
    "build_prior",
    "evaluate_forests",
    "sample_forests",
    "split_probabilities",
    "temperature_schedule",
    "threshold_grid",
]

#: Sampler settings per fidelity. ``paper`` is SPEC §5. ``standard`` (20 chains × 50 draws
#: thinned by 120 after 1000 warm-up, ≈ 11 CPU minutes of one thread at full kin8nm size) is
#: the MCMC campaign's ``lean`` layout, the cheapest that passed SPEC §7's warm-up
#: sensitivity validation on 16 full-size protein and kin8nm instances (2026-12-04; record
#: ``priors/validations/hbart-standard.json``, docs/validation/mcmc.md). It replaced 1500
#: warm-up thinned by 240 (twice the cost, chosen when R̂ gated HBART, never validated).
#: ``smoke`` is for tests (not a reference posterior).
#: D = n_chains × draws per chain; draws per chain = n_draws / n_chains.
FIDELITY_SETTINGS: dict[str, dict[str, Any]] = {
    "paper": {
        "n_chains": 250,
        "n_warmup": 5000,
        "thin": 25,
        "temper_start": 3.0,
        "temper_stages": 10,
        "temper_fraction": 0.75,
    },
    "standard": {
        "n_chains": 20,
        "n_warmup": 1000,
        "thin": 120,
        "temper_start": 3.0,
        "temper_stages": 10,
        "temper_fraction": 0.75,
    },
    "smoke": {
        "n_chains": 20,
        "n_warmup": 500,
        "thin": 10,
        "temper_start": 3.0,
        "temper_stages": 10,
        "temper_fraction": 0.75,
    },
}


def temperature_schedule(
    n_warmup: int, start: float = 3.0, n_stages: int = 10, fraction: float = 0.75
) -> np.ndarray:
    """Likelihood temperature at every warm-up iteration (SPEC §5 / paper B.5).

    The first ``fraction`` of the warm-up is cut into ``n_stages`` equal stages whose
    temperatures run geometrically from ``start`` to 1 (``np.geomspace(start, 1,
    n_stages)``); the rest of the warm-up and all kept iterations use T = 1.

    Returns
    -------
    ndarray, shape (n_warmup,), float64
    """
    stage_len = int(fraction * n_warmup) // n_stages
    temps = np.ones(n_warmup)
    if stage_len > 0:
        levels = np.geomspace(start, 1.0, n_stages)
        temps[: stage_len * n_stages] = np.repeat(levels, stage_len)
    return temps


@functools.cache
def _bartz_extensions() -> tuple[type, type]:
    """The bartz extension classes (imported lazily: importing bartz initialises JAX)."""
    import jax.numpy as jnp
    from bartz.mcmcloop import Callback
    from bartz.prepcovars import Binner
    from equinox import tree_at

    class GridBinner(Binner):
        """Identity binner: the inputs are already bin indices on our threshold grid."""

        max_split: Any
        _splits: Any

        def __init__(self, X: Any, *, key: Any = None, n_thresholds: int = 255) -> None:
            del key
            p = X.shape[0]
            self.max_split = jnp.full(p, n_thresholds, dtype=jnp.uint8)
            self._splits = jnp.asarray(
                np.tile(threshold_grid(n_thresholds), (p, 1)), dtype=jnp.float32
            )

        def bin(self, X: Any) -> Any:
            return jnp.asarray(X).astype(jnp.uint8)

    class KnownNoiseTempering(Callback):
        """Run callback: after each step set the global error precision to 1/T(next step).

        ``temps`` holds T for every warm-up iteration; past the warm-up T = 1. With
        ``error_scale = σ(x_i)`` the per-point precision is then 1 / (T σ²(x_i)).
        """

        temps: Any

        def __call__(self, *, state: Any, i_total: Any, **_: Any) -> tuple[Any, Any]:
            nxt = i_total + 1
            n = self.temps.shape[0]
            temp = jnp.where(nxt < n, self.temps[jnp.minimum(nxt, n - 1)], 1.0)
            value = state.error_cov_inv.value
            new = jnp.broadcast_to(1.0 / temp, value.shape).astype(value.dtype)
            return tree_at(lambda s: s.error_cov_inv.value, state, new), self

    return GridBinner, KnownNoiseTempering


class HBARTPrior(MCMCPrior):
    """HBART reference prior bound to a scale constant (SPEC §5).

    f = Σ_{j=1}^{m} g(x; tree_j), m = ``n_trees`` = 200, with the BART tree prior of
    :func:`sample_forests` and leaves N(0, a²/m), so Var f(x) = a² at every x.

    The scale constant a is the prior SD of f(x) at every x. Shared settings, seed streams
    and the chain layout come from :class:`~udbench.priors.mcmc.MCMCPrior`.

    Parameters
    ----------
    scale : float, default 1.0
        The scale constant a (target units), set by :func:`build_prior` per SPEC §5.
    fidelity : Fidelity or str, default DEFAULT_FIDELITY
        Sampler preset (:data:`FIDELITY_SETTINGS`).
    n_trees, max_depth, base, power, n_thresholds
        The tree prior (defaults: SPEC §5).
    dataset : str, optional
        Dataset key, recorded in :attr:`settings`.
    sampler_kwargs : dict, optional
        Overrides of single sampler settings of the preset (keys of
        :data:`FIDELITY_SETTINGS`), e.g. for a laptop run; recorded in :attr:`settings`.
    """

    family = "hbart"
    #: Draws only; query inputs clipped to the unit cube (its trees split in [0, 1]).
    capabilities = FAMILY_CAPABILITIES["hbart"]
    presets = FIDELITY_SETTINGS
    seed_bits = 31  # bartz takes a 31-bit seed
    rhat_gate = False  # R̂ recorded, never a gate; presets validated by warm-up sensitivity

    @classmethod
    def instance_work(cls, fidelity: str, n_draws: int = 1000) -> float:
        """Chain iterations of one instance at ``fidelity``: n_chains × (n_warmup + (D /
        n_chains) × thin), D = ``n_draws`` (bartz's cost per chain iteration is about constant
        at a given n, docs/priors-mcmc.md). Read by
        :func:`udbench.tuning.calibration.work_ratio`."""
        s = FIDELITY_SETTINGS[str(fidelity)]
        return float(s["n_chains"] * (s["n_warmup"] + n_draws / s["n_chains"] * s["thin"]))

    @classmethod
    def synthetic(cls, fidelity: str, X_eval: np.ndarray) -> HBARTPrior:
        """An HBART prior at ``fidelity`` with scale a = 1 for synthetic inputs ``X_eval``
        (n_eval, d), for timing (:mod:`udbench.tuning.calibration`)."""
        return cls(1.0, fidelity)

    def __init__(
        self,
        scale: float = 1.0,
        fidelity: Fidelity | str = DEFAULT_FIDELITY,
        *,
        n_trees: int = 200,
        max_depth: int = 6,
        base: float = 0.95,
        power: float = 2.0,
        n_thresholds: int = 255,
        dataset: str | None = None,
        sampler_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(scale, fidelity, dataset=dataset, sampler_kwargs=sampler_kwargs)
        self.n_trees = n_trees
        self.max_depth = max_depth
        self.base = base
        self.power = power
        self.n_thresholds = n_thresholds

    def _model_settings(self) -> dict[str, Any]:
        return {
            "n_trees": self.n_trees,
            "max_depth": self.max_depth,
            "split_base": self.base,
            "split_power": self.power,
            "n_thresholds": self.n_thresholds,
            "leaf_sd": self.scale / np.sqrt(self.n_trees),
        }

    def _engine_settings(self) -> dict[str, Any]:
        return {"engine": "bartz"}

    def _check_X(self, name: str, X: Any) -> np.ndarray:
        X = check_array("HBARTPrior", name, X, ndim=2)
        if X.size and (X.min() < 0 or X.max() > 1):
            raise param_error(
                "HBARTPrior", name, "lie in [0, 1] (min-max scaled)", (X.min(), X.max())
            )
        return X

    def sample(self, X: np.ndarray, key: int, n_draws: int = 1) -> np.ndarray:
        """Joint prior draws of f at ``X``.

        Parameters
        ----------
        X : ndarray, shape (m, d), inputs in [0, 1]
        key : int
            Seed; the same key gives the same draws (bit for bit).
        n_draws : int, default 1

        Returns
        -------
        ndarray, shape (n_draws, m), float64, target units.
        """
        X = self._check_X("X", X)
        check_positive("HBARTPrior", "n_draws", n_draws)
        check_positive("HBARTPrior", "scale", self.scale)
        rng = self._prior_rng(key)
        out = np.empty((int(n_draws), X.shape[0]))
        Xb = bin_inputs(X, self.n_thresholds)
        chunk = 16
        for start in range(0, int(n_draws), chunk):
            stop = min(int(n_draws), start + chunk)
            forest = sample_forests(
                rng,
                stop - start,
                X.shape[1],
                leaf_sd=self.scale / np.sqrt(self.n_trees),
                n_trees=self.n_trees,
                max_depth=self.max_depth,
                base=self.base,
                power=self.power,
                n_thresholds=self.n_thresholds,
            )
            out[start:stop] = evaluate_forests(forest, Xb)
        return out

    def condition(
        self,
        X_train: np.ndarray,
        y: np.ndarray,
        noise_var_train: np.ndarray,
        X_eval: np.ndarray,
        key: int,
        n_draws: int,
    ) -> Posterior:
        """Posterior draws of f given S with known noise variances, by bartz's BART MCMC.

        Parameters
        ----------
        X_train : ndarray, shape (n, d); y : ndarray, shape (n,)
        noise_var_train : ndarray, shape (n,)
            Known σ²(x_i), target units squared; held fixed (not sampled).
        X_eval : ndarray, shape (n_eval, d)
        key : int
            Seed of the MCMC (same key → same draws on the same platform).
        n_draws : int
            D; must be a multiple of the fidelity's number of chains.

        Returns
        -------
        Posterior
            ``draws_eval`` (D, n_eval) and ``draws_train`` (D, n), float64, chain-major
            (chain c holds rows c·D/C .. (c+1)·D/C − 1); ``mean``/``var`` None;
            ``diagnostics``: function-space split-R̂ and batch-means MCSE of σ_f² at every
            evaluation and training input, mean grow/prune acceptance (warm-up, kept),
            the temperature schedule, wall seconds, chain-iterations per second.

        Raises
        ------
        UdbenchError
            Bad shapes, non-positive noise variances, or D not a multiple of the chains.
        """
        X_train = self._check_X("X_train", X_train)
        X_eval = self._check_X("X_eval", X_eval)
        n = X_train.shape[0]
        y = check_array("HBARTPrior", "y", y, shape=(n,))
        noise_var = check_array("HBARTPrior", "noise_var_train", noise_var_train, shape=(n,))
        self._check_noise_var("HBARTPrior", noise_var)
        if X_eval.shape[1] != X_train.shape[1]:
            raise param_error(
                "HBARTPrior", "X_eval", f"have {X_train.shape[1]} columns", X_eval.shape
            )
        cfg = self.sampler_settings
        n_chains, per_chain = self._chain_layout("HBARTPrior.condition", n_draws)
        n_draws = n_chains * per_chain
        temps = temperature_schedule(
            int(cfg["n_warmup"]),
            float(cfg["temper_start"]),
            int(cfg["temper_stages"]),
            float(cfg["temper_fraction"]),
        )
        import jax

        GridBinner, KnownNoiseTempering = _bartz_extensions()
        from functools import partial

        import bartz
        import jax.numpy as jnp

        Xb_train = bin_inputs(X_train, self.n_thresholds)
        Xb_eval = bin_inputs(X_eval, self.n_thresholds)
        n_dev = len(jax.devices())
        chain_devices = n_dev if n_dev > 1 and n_chains % n_dev == 0 else None
        t0 = time.perf_counter()
        with jax.enable_x64(False):
            model = bartz.Bart(
                Xb_train.T,
                y.astype(np.float32),
                binner=partial(GridBinner, n_thresholds=self.n_thresholds),
                error_scale=np.sqrt(noise_var).astype(np.float32),
                k=1.0,
                tau_num=self.scale,
                offset=0.0,
                base=self.base,
                power=self.power,
                maxdepth=self.max_depth + 1,
                num_trees=self.n_trees,
                sigma_init=float(np.sqrt(temps[0])) if temps.size else 1.0,
                n_save=per_chain,
                n_burn=int(cfg["n_warmup"]),
                n_skip=int(cfg["thin"]),
                printevery=None,
                num_chains=n_chains,
                num_chain_devices=chain_devices,
                seed=self._sampler_seed(key),
                init_kw={"min_points_per_decision_node": None},
                run_mcmc_kw={
                    "callback": KnownNoiseTempering(
                        temps=jnp.asarray(temps if temps.size else np.ones(1), jnp.float32)
                    )
                },
            )
            draws_eval = np.asarray(model.predict(Xb_eval.T, kind="latent_samples"), np.float64)
            draws_train = np.asarray(model.predict(Xb_train.T, kind="latent_samples"), np.float64)
            accept = np.asarray(model.accept, np.float64)  # (chains, warmup + kept)
            split_kept = np.asarray(model._main_trace.split_tree)  # (chains, kept, trees, heap)
            prec = np.asarray(model.get_latent_prec(), np.float64)
        wall = time.perf_counter() - t0
        n_iter = int(cfg["n_warmup"]) + per_chain * int(cfg["thin"])
        n_w = int(cfg["n_warmup"])
        chains_eval = draws_eval.reshape(n_chains, per_chain, -1)
        chains_train = draws_train.reshape(n_chains, per_chain, -1)
        convergence, rhat_max_train, rhat_train = self._convergence(chains_eval, chains_train)
        diagnostics = HBARTDiagnostics(
            sampler="bartz BART MCMC",
            fidelity=self.fidelity.value,
            n_chains=n_chains,
            n_warmup=n_w,
            draws_per_chain=per_chain,
            n_draws=n_draws,
            convergence=convergence,
            rhat_max_train=rhat_max_train,
            rhat_train=rhat_train,
            wall_seconds=wall,
            chain_iterations_per_second=n_chains * n_iter / wall,
            thin=int(cfg["thin"]),
            accept_rate_warmup=float(accept[:, :n_w].mean()) if n_w else float("nan"),
            accept_rate_kept=float(accept[:, n_w:].mean()),
            error_precision_kept_max_abs_dev=float(np.abs(prec[:, n_w:] - 1.0).max()),
            decision_nodes_per_tree_mean=float((split_kept > 0).sum(axis=-1).mean()),
            temperature_levels=sorted(set(np.round(temps, 6).tolist()), reverse=True),
        )
        return Posterior(
            draws_eval=draws_eval, draws_train=draws_train, diagnostics=diagnostics.to_dict()
        )


#: The family's prior class (its capabilities, e.g. ``numerics_version``; read by
#: :func:`udbench.priors.base.family_numerics_version`).
PRIOR_CLASS = HBARTPrior


def build_prior(cov: Any, fidelity: Fidelity | str = DEFAULT_FIDELITY) -> HBARTPrior:
    """HBART prior for dataset ``cov`` with its scale constant a (SPEC §5).

    a = 1 / median over 100 unit-scale prior draws (key derived from ``("scale",
    cov.key, "hbart")``) of each draw's SD over the evaluation pool ``cov.X[cov.eval_idx]``.

    Parameters
    ----------
    cov : udbench.data.Covariates
    fidelity : Fidelity or str
        Checked by the prior's constructor.

    Returns
    -------
    HBARTPrior
    """
    unit = HBARTPrior(1.0, fidelity, dataset=cov.key)
    X_pool = np.asarray(cov.X)[np.asarray(cov.eval_idx)]
    a = unit._scale_from_pool(X_pool)
    return HBARTPrior(a, fidelity, dataset=cov.key)
