"""What the MCMC reference priors (HBART, BNN) share: :class:`MCMCPrior` and the typed
diagnostics records (SPEC §5, §7).

:class:`MCMCPrior` holds the scale constant, the fidelity preset with its overrides
(:attr:`MCMCPrior.sampler_settings`), the layout of the chains (D draws = chains × draws per
chain, chain-major), the seed streams of the rule written in :mod:`udbench.priors.base`
(``"<family>-prior"`` for prior draws and ``"<family>-mcmc"`` for the sampler, both from the
call's key by :func:`~udbench.priors.base.call_seed`; ``("scale", dataset, family)`` for the
scale constant) and the function-space convergence summary at the evaluation and training
inputs. Each family adds its model and its sampler.

The diagnostics of one posterior are a frozen record (:class:`MCMCDiagnostics`, with
:class:`HBARTDiagnostics` and :class:`NUTSDiagnostics` for the two samplers);
:meth:`MCMCDiagnostics.to_dict` gives the flat JSON-serialisable dict stored in
:attr:`udbench.priors.base.Posterior.diagnostics` and in the task files.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from udbench._seeding import derive_seed
from udbench._validation import param_error
from udbench.priors.base import (
    SCALE_N_DRAWS,
    Fidelity,
    PriorCapabilities,
    call_seed,
    scale_from_unit_draws,
)
from udbench.priors.diagnostics import sampler_settings, summarise_function_draws

__all__ = [
    "HBARTDiagnostics",
    "MCMCDiagnostics",
    "MCMCPrior",
    "NUTSDiagnostics",
]


@dataclass(frozen=True)
class MCMCDiagnostics:
    """Diagnostics of one MCMC reference posterior (what every sampler reports).

    Attributes
    ----------
    sampler : str
        Engine, e.g. ``"bartz BART MCMC"`` or ``"numpyro NUTS"``.
    fidelity : str
        The fidelity preset.
    n_chains, n_warmup, draws_per_chain, n_draws : int
        Chain layout: D = ``n_draws`` = ``n_chains`` × ``draws_per_chain`` kept draws,
        after ``n_warmup`` warm-up iterations per chain.
    convergence : dict
        :func:`~udbench.priors.diagnostics.summarise_function_draws` of the draws at the
        evaluation inputs (``rhat_max``, ``rhat``, ``mcse_var``, …); flattened into the dict.
    rhat_max_train : float
        Largest function-space split-R̂ at the training inputs (NaN if undefined everywhere).
    rhat_train : list of float
        Split-R̂ at every training input.
    wall_seconds : float
        Wall time of the sampler run (compilation included).
    chain_iterations_per_second : float
        ``n_chains`` × iterations per chain / ``wall_seconds``.
    rhat_gate : bool, class attribute
        Whether the SPEC §7 R̂ rule gates this sampler's posteriors (True: NUTS, four long
        chains; False: HBART's many short chains, where R̂ is recorded as a diagnostic
        only). Written to the flat dict as ``"rhat_gate"`` and read by
        :func:`~udbench.priors.diagnostics.acceptance`.
    """

    rhat_gate: ClassVar[bool] = True

    sampler: str
    fidelity: str
    n_chains: int
    n_warmup: int
    draws_per_chain: int
    n_draws: int
    convergence: dict[str, Any]
    rhat_max_train: float
    rhat_train: list[float]
    wall_seconds: float
    chain_iterations_per_second: float

    def to_dict(self) -> dict[str, Any]:
        """The flat dict stored in ``Posterior.diagnostics`` and task files.

        Every field by name, except ``convergence``, whose keys are merged in its place,
        and ``rhat_gate`` (the class attribute).
        """
        out: dict[str, Any] = {"rhat_gate": self.rhat_gate}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "convergence":
                out.update(value)
            else:
                out[f.name] = value
        return out


@dataclass(frozen=True)
class HBARTDiagnostics(MCMCDiagnostics):
    """:class:`MCMCDiagnostics` of bartz's BART MCMC (:class:`~udbench.priors.hbart.HBARTPrior`).

    Attributes
    ----------
    thin : int
        Iterations per kept draw.
    accept_rate_warmup, accept_rate_kept : float
        Mean grow/prune acceptance in the warm-up (NaN without one) and the kept iterations.
    error_precision_kept_max_abs_dev : float
        Largest deviation of bartz's global error precision from 1 after the warm-up (0
        when the known noise is applied exactly).
    decision_nodes_per_tree_mean : float
        Mean number of decision nodes per tree over the kept draws.
    temperature_levels : list of float
        Distinct likelihood temperatures of the warm-up, decreasing.

    ``rhat_gate`` is False: HBART pools many short chains after a tempered warm-up, so its
    split-R̂ is recorded but never gates (SPEC §7); its presets are validated by warm-up
    sensitivity instead (:mod:`udbench.priors.validation`).
    """

    rhat_gate: ClassVar[bool] = False

    thin: int
    accept_rate_warmup: float
    accept_rate_kept: float
    error_precision_kept_max_abs_dev: float
    decision_nodes_per_tree_mean: float
    temperature_levels: list[float]


@dataclass(frozen=True)
class NUTSDiagnostics(MCMCDiagnostics):
    """:class:`MCMCDiagnostics` of NumPyro's NUTS (:class:`~udbench.priors.bnn.BNNPrior`).

    Attributes
    ----------
    chain_method : str
        How the chains ran (``"parallel"``, ``"vectorized"``, ``"sequential"``).
    target_accept : float
        Target acceptance probability of the step-size adaptation.
    max_tree_depth : int
        Largest tree depth allowed.
    accept_prob_mean : float
        Mean acceptance probability of the kept iterations.
    accept_prob_per_chain : list of float
    n_divergent : int
        Divergent transitions among the kept iterations.
    tree_depth_mean, tree_depth_max, share_at_max_tree_depth : float, int, float
        Tree depths of the kept iterations (depth = ⌈log2(leapfrog steps + 1)⌉).
    leapfrog_steps_mean : float
    step_size_per_chain : list of float
        Adapted step size of every chain.
    n_datasets_in_run : int
        Data sets conditioned in the same run
        (:meth:`~udbench.priors.bnn.BNNPrior.condition_batch`); the sampler figures are shared
        between them.
    """

    chain_method: str
    target_accept: float
    max_tree_depth: int
    accept_prob_mean: float
    accept_prob_per_chain: list[float]
    n_divergent: int
    tree_depth_mean: float
    tree_depth_max: int
    share_at_max_tree_depth: float
    leapfrog_steps_mean: float
    step_size_per_chain: list[float]
    n_datasets_in_run: int


class MCMCPrior:
    """Base of the reference priors conditioned by MCMC (HBART, BNN).

    Subclasses set :attr:`family`, :attr:`presets` (fidelity → sampler settings, each with
    at least ``n_chains``) and :attr:`seed_bits`, and implement ``sample``, ``condition``,
    :meth:`_model_settings` and :meth:`_engine_settings`.

    Parameters
    ----------
    scale : float
        The scale constant a (target units).
    fidelity : Fidelity or str
        Sampler preset (a key of :attr:`presets`).
    dataset : str, optional
        Dataset key, recorded in :attr:`settings`.
    sampler_kwargs : dict, optional
        Overrides of single settings of the preset; recorded in :attr:`settings`.

    Raises
    ------
    UdbenchError
        Unknown fidelity or an override key the preset does not have (checked here, once;
        the methods trust :attr:`fidelity` and :attr:`sampler_settings`).
    """

    family: ClassVar[str]
    #: What the pipeline may ask of the family (:data:`udbench.priors.base.FAMILY_CAPABILITIES`;
    #: the defaults: draws only).
    capabilities: ClassVar[PriorCapabilities] = PriorCapabilities()
    #: Sampler settings per fidelity.
    presets: ClassVar[dict[str, dict[str, Any]]]
    #: Width of the sampler seed derived from the key (the sampler's seed type).
    seed_bits: ClassVar[int]
    #: Whether task generation gates this family's reference posteriors on the SPEC §7 R̂
    #: rule (and replaces rejected seeds). BNN: True; HBART: False (R̂ recorded only).
    rhat_gate: ClassVar[bool] = True
    #: Version of the family's numerics: bumped only by a change that alters the draws for
    #: the same settings and key (model, sampler code path, seed streams), never by other
    #: commits. Campaign records (:mod:`udbench.campaigns`) are keyed by it.
    numerics_version: ClassVar[int] = 1

    def __init__(
        self,
        scale: float,
        fidelity: str,
        *,
        dataset: str | None = None,
        sampler_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self._scale = scale
        self.fidelity = Fidelity.parse(type(self).__name__, fidelity)
        self.dataset = dataset
        self.sampler_kwargs = sampler_kwargs
        self._sampler_settings = sampler_settings(
            type(self).__name__, self.fidelity, self.presets, sampler_kwargs
        )

    @property
    def scale(self) -> float:
        """The scale constant a (target units)."""
        return float(self._scale)

    @property
    def sampler_settings(self) -> dict[str, Any]:
        """The MCMC settings: the fidelity preset updated with ``sampler_kwargs`` (a copy)."""
        return dict(self._sampler_settings)

    def with_sampler_overrides(self, overrides: dict[str, Any]) -> MCMCPrior:
        """A copy of this prior with further sampler overrides (e.g. a longer warm-up).

        The model (scale, dataset, family settings) is shared; ``overrides`` update the
        existing ``sampler_kwargs`` and are recorded in :attr:`settings` like them. Used by
        the warm-up sensitivity validation (:mod:`udbench.tasks.validation`).

        Raises
        ------
        UdbenchError
            An override key the preset does not have.
        """
        merged = {**(self.sampler_kwargs or {}), **overrides}
        settings = sampler_settings(type(self).__name__, self.fidelity, self.presets, merged)
        twin = copy.copy(self)
        twin.sampler_kwargs = merged
        twin._sampler_settings = settings
        return twin

    @property
    def settings(self) -> dict[str, Any]:
        """Prior and sampler settings (JSON-serialisable), recorded in every task."""
        return {
            "family": self.family,
            "dataset": self.dataset,
            "scale": self.scale,
            **self._model_settings(),
            "fidelity": self.fidelity.value,
            "sampler_overrides": sorted(self.sampler_kwargs or {}),
            "sampler": {**self._engine_settings(), **self.sampler_settings},
        }

    def _model_settings(self) -> dict[str, Any]:
        """The family's model settings in :attr:`settings` (after family, dataset, scale)."""
        raise NotImplementedError

    def _engine_settings(self) -> dict[str, Any]:
        """Sampler-engine entries of ``settings["sampler"]`` (before the preset's)."""
        raise NotImplementedError

    def sample(self, X: np.ndarray, key: int, n_draws: int = 1) -> np.ndarray:
        """Joint prior draws of f at ``X`` (m, d); returns (n_draws, m), float64."""
        raise NotImplementedError

    # -- shared steps of ``condition`` ----------------------------------------------
    def _prior_rng(self, key: int) -> np.random.Generator:
        """The stream of prior draws for ``key`` (``("<family>-prior", key)``)."""
        return np.random.default_rng(call_seed(self.family, "prior", key))

    def _sampler_seed(self, key: int) -> int:
        """The sampler's seed for ``key`` (``("<family>-mcmc", key)``, :attr:`seed_bits` bits)."""
        return call_seed(self.family, "mcmc", key, bits=self.seed_bits)

    def _chain_layout(self, component: str, n_draws: int) -> tuple[int, int]:
        """``(n_chains, draws per chain)`` for D = ``n_draws`` kept draws.

        Raises
        ------
        UdbenchError
            If D is not a positive multiple of the preset's number of chains.
        """
        n_chains = int(self.sampler_settings["n_chains"])
        n_draws = int(n_draws)
        if n_draws < n_chains or n_draws % n_chains:
            raise param_error(
                component,
                "n_draws",
                f"be a positive multiple of n_chains={n_chains} (fidelity {self.fidelity!r})",
                n_draws,
            )
        return n_chains, n_draws // n_chains

    @staticmethod
    def _check_noise_var(component: str, noise_var: np.ndarray) -> None:
        """Known noise variances must be > 0 (they are the likelihood's variances)."""
        if noise_var.size and noise_var.min() <= 0:
            raise param_error(component, "noise_var_train", "be > 0", float(noise_var.min()))

    @staticmethod
    def _convergence(
        chains_eval: np.ndarray, chains_train: np.ndarray
    ) -> tuple[dict[str, Any], float, list[float]]:
        """SPEC §7 summary of draws (chains, per chain, inputs) at the evaluation inputs, and
        the R̂ (largest, per input) at the training inputs."""
        diag_eval = summarise_function_draws(chains_eval)
        diag_train = summarise_function_draws(chains_train, rhat_only=True)
        return diag_eval, diag_train["rhat_max"], diag_train["rhat"]

    def _scale_from_pool(self, X_pool: np.ndarray) -> float:
        """The scale constant a from this (unit-scale) prior's draws at the evaluation pool.

        :data:`~udbench.priors.base.SCALE_N_DRAWS` draws with key ``("scale", dataset,
        family)``; a = 1 / median of the draws' SDs over the pool (SPEC §5).
        """
        key = derive_seed("scale", self.dataset, self.family)
        draws = self.sample(X_pool, key, SCALE_N_DRAWS)
        return scale_from_unit_draws(draws, f"{self.family}.build_prior")
