"""Shared pieces of the MCMC reference posteriors (HBART, BNN): SPEC §7 diagnostics and the
acceptance verdict of an instance (the seed-replacement rule that acts on it lives in
:mod:`udbench.tasks.replacement`).

Everything here works on plain arrays with explicit axes, ``draws`` of shape
``(n_chains, n_per_chain, m)`` (function values of f at m inputs, chains first).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, TypeVar

import numpy as np

from udbench._validation import check_array, check_choice, param_error

__all__ = [
    "MCSE_N_BATCHES",
    "RHAT_NOT_A_GATE",
    "RHAT_THRESHOLD",
    "acceptance",
    "batch_means_mcse_var",
    "function_space_rhat",
    "is_accepted",
    "rhat_gates",
    "rhat_iid_reference",
    "summarise_function_draws",
]

#: Instances with any function-space split-R̂ above this are rejected (SPEC §7).
RHAT_THRESHOLD: float = 1.05

#: Number of batches for the batch-means MCSE of σ_f² (SPEC §7).
MCSE_N_BATCHES: int = 20

T = TypeVar("T")


def sampler_settings(
    component: str,
    fidelity: str,
    presets: dict[str, dict[str, Any]],
    overrides: dict[str, Any] | None,
) -> dict[str, Any]:
    """The MCMC settings of a fidelity preset, updated with user ``overrides``.

    ``fidelity`` is trusted (a :class:`~udbench.priors.base.Fidelity` checked by the caller,
    :class:`~udbench.priors.mcmc.MCMCPrior`); every preset table has every fidelity.

    Raises
    ------
    UdbenchError
        An override key that the preset does not have.
    """
    cfg = dict(presets[fidelity])
    for k, v in (overrides or {}).items():
        check_choice(component, "sampler_kwargs", k, cfg)
        cfg[k] = v
    return cfg


def _check_draws(component: str, draws: Any) -> np.ndarray:
    arr = check_array(component, "draws", draws, ndim=3)
    if arr.shape[0] < 1 or arr.shape[1] < 2:
        raise param_error(
            component, "draws", "have >= 1 chain and >= 2 draws per chain", f"shape {arr.shape}"
        )
    return arr


def function_space_rhat(draws: np.ndarray) -> np.ndarray:
    """Rank-normalised split-R̂ of f at every input (SPEC §7).

    Computed on function values, not on raw parameters: tree ensembles and networks have
    many parameter configurations giving the same f (label switching, sign flips), so
    R̂ on parameters would flag chains that agree in function space.

    Parameters
    ----------
    draws : ndarray, shape (n_chains, n_per_chain, m)
        Draws of f(x) per chain, in sampling order.

    Returns
    -------
    ndarray, shape (m,)
        Rank-normalised split-R̂ (Vehtari et al. 2021, as implemented by
        :func:`arviz.rhat` with ``method="rank"``). NaN where f is constant across all
        draws (e.g. a tree ensemble that never splits near x).

    Raises
    ------
    UdbenchError
        If ``draws`` is not 3-dimensional with at least 2 draws per chain.
    """
    import arviz as az

    arr = _check_draws("function_space_rhat", draws)
    with warnings.catch_warnings():
        # the (chain, draw, input) layout is explicit; ArviZ's "more chains than draws"
        # shape guess does not apply (HBART runs many short chains by design)
        warnings.filterwarnings("ignore", message="More chains", category=UserWarning)
        ds = az.convert_to_dataset(arr)
    return np.asarray(az.rhat(ds, method="rank")["x"].values, dtype=np.float64).reshape(-1)


@functools.lru_cache(maxsize=16)
def rhat_iid_reference(n_chains: int, n_per_chain: int, n_inputs: int) -> tuple[float, float]:
    """Median and largest split-R̂ that *independent* draws give in a chain layout.

    The R̂ rule of SPEC §7 takes the largest R̂ over every evaluation input, and R̂ is
    itself a noisy estimate: with few draws per chain its spread is wide enough that the
    maximum over many inputs exceeds 1.05 even for perfectly mixed chains. This returns
    the median and maximum of :func:`function_space_rhat` over ``n_inputs`` inputs for
    standard-normal draws in the layout ``(n_chains, n_per_chain)`` (one seeded
    simulation, seed 0; a reference, not a bound). For example 250 chains × 4 draws over
    1500 inputs gives a maximum of about 1.075, 20 × 50 about 1.018, 4 × 250 about 1.016.

    Parameters
    ----------
    n_chains, n_per_chain, n_inputs : int
        The layout of the draws (``draws.shape``).

    Returns
    -------
    (median, max) : tuple of float

    Raises
    ------
    UdbenchError
        If the layout has fewer than 1 chain, 2 draws per chain or 1 input.
    """
    if n_chains < 1 or n_per_chain < 2 or n_inputs < 1:
        raise param_error(
            "rhat_iid_reference",
            "layout",
            "have >= 1 chain, >= 2 draws per chain and >= 1 input",
            (n_chains, n_per_chain, n_inputs),
        )
    rng = np.random.default_rng(0)
    rhat = function_space_rhat(rng.standard_normal((n_chains, n_per_chain, n_inputs)))
    rhat = rhat[np.isfinite(rhat)]
    if rhat.size == 0:
        return float("nan"), float("nan")
    return float(np.median(rhat)), float(rhat.max())


def _batches(n_chains: int, n_per_chain: int, n_batches: int) -> list[tuple[slice, slice]]:
    """Batches of whole chains (n_chains >= n_batches) or equal chain segments (otherwise)."""
    if n_chains >= n_batches:
        groups = np.array_split(np.arange(n_chains), n_batches)
        return [(slice(g[0], g[-1] + 1), slice(0, n_per_chain)) for g in groups]
    per_chain = max(1, round(n_batches / n_chains))
    per_chain = min(per_chain, n_per_chain)
    edges = np.linspace(0, n_per_chain, per_chain + 1).round().astype(int)
    return [
        (slice(c, c + 1), slice(int(edges[k]), int(edges[k + 1])))
        for c in range(n_chains)
        for k in range(per_chain)
    ]


def batch_means_mcse_var(draws: np.ndarray, n_batches: int = MCSE_N_BATCHES) -> np.ndarray:
    """Monte Carlo standard error of the posterior variance σ_f²(x) by batch means (SPEC §7).

    The pooled estimate is σ̂² = mean over all draws of g = (f − f̄)², f̄ the pooled mean.
    The draws are cut into ``n_batches`` batches: groups of whole chains when there are at
    least ``n_batches`` chains, otherwise each chain is cut into round(n_batches / n_chains)
    consecutive segments. With b_k the mean of g in batch k and B the number of batches,
    MCSE = SD(b_1..b_B) / √B (Flegal & Jones 2010, batch means; ``ddof=1``).

    Parameters
    ----------
    draws : ndarray, shape (n_chains, n_per_chain, m)
    n_batches : int, default 20

    Returns
    -------
    ndarray, shape (m,)
        MCSE of σ̂_f²(x), in target units squared.

    Raises
    ------
    UdbenchError
        Bad shape, or fewer than 2 batches possible.
    """
    arr = _check_draws("batch_means_mcse_var", draws)
    if int(n_batches) < 2:
        raise param_error("batch_means_mcse_var", "n_batches", "be >= 2", n_batches)
    n_chains, n_per, _ = arr.shape
    g = (arr - arr.mean(axis=(0, 1))) ** 2
    batches = _batches(n_chains, n_per, int(n_batches))
    if len(batches) < 2:
        raise param_error(
            "batch_means_mcse_var", "draws", "allow >= 2 batches", f"shape {arr.shape}"
        )
    # weight batches equally (they have equal or near-equal sizes by construction)
    means = np.stack([g[c, s].mean(axis=(0, 1)) for c, s in batches])
    return means.std(axis=0, ddof=1) / np.sqrt(len(batches))


def summarise_function_draws(draws: np.ndarray, rhat_only: bool = False) -> dict[str, Any]:
    """SPEC §7 convergence summary of function draws (chains first).

    Returns a JSON-serialisable dict: ``rhat_max``, ``rhat_median``, ``rhat_n_above``
    (count of inputs with R̂ > :data:`RHAT_THRESHOLD`), ``rhat_threshold`` and ``rhat``
    (per input, as a list); unless ``rhat_only`` (e.g. for the training inputs, which are
    only reported), also ``rhat_iid_median`` and ``rhat_iid_max`` (what independent draws
    in the same layout give, :func:`rhat_iid_reference`: an R̂ far above these means the
    chains disagree, not that the estimator is noisy), ``mcse_var_max_rel`` and
    ``mcse_var_median_rel`` (batch-means MCSE of σ_f² relative to σ̂_f², max and median
    over inputs), ``mcse_n_batches`` and ``mcse_var`` (per input, as a list).
    """
    rhat = function_space_rhat(draws)
    finite = rhat[np.isfinite(rhat)]
    out: dict[str, Any] = {
        "rhat_max": float(finite.max()) if finite.size else float("nan"),
        "rhat_median": float(np.median(finite)) if finite.size else float("nan"),
        "rhat_n_above": int(np.sum(finite > RHAT_THRESHOLD)),
        "rhat_threshold": RHAT_THRESHOLD,
        "rhat": rhat.tolist(),
    }
    if rhat_only:
        return out
    iid_median, iid_max = rhat_iid_reference(*(int(k) for k in draws.shape))
    mcse = batch_means_mcse_var(draws)
    var = draws.reshape(-1, draws.shape[-1]).var(axis=0)
    rel = np.where(var > 0, mcse / np.where(var > 0, var, 1.0), np.nan)
    return {
        **out,
        "rhat_iid_median": iid_median,
        "rhat_iid_max": iid_max,
        "mcse_var_max_rel": float(np.nanmax(rel)) if np.isfinite(rel).any() else float("nan"),
        "mcse_var_median_rel": float(np.nanmedian(rel)) if np.isfinite(rel).any() else float("nan"),
        "mcse_n_batches": MCSE_N_BATCHES,
        "mcse_var": mcse.tolist(),
    }


def is_accepted(diagnostics: dict[str, Any], threshold: float = RHAT_THRESHOLD) -> bool:
    """SPEC §7 R̂ rule for an MCMC reference posterior: no function-space R̂ > threshold.

    The rule alone, whether or not it gates the family (that is :func:`acceptance`).

    ``diagnostics`` is a :attr:`Posterior.diagnostics` dict with an ``"rhat"`` list (per
    evaluation and training input); inputs where f never varies (R̂ NaN) are ignored.
    A posterior without R̂ (an exact family) is accepted. A posterior whose R̂ is undefined
    at *every* input (e.g. fewer than 4 draws per chain, so split-R̂ cannot be computed) is
    rejected: the gate must not pass without checking anything.
    """
    raw = np.asarray(diagnostics.get("rhat", []), dtype=np.float64)
    if raw.size == 0:
        return True
    rhat = raw[np.isfinite(raw)]
    return bool(rhat.size > 0 and rhat.max() <= threshold)


#: The reason :func:`acceptance` gives for a posterior whose R̂ is not a gate (HBART).
RHAT_NOT_A_GATE = "split-R̂ recorded as a diagnostic, not a gate, for this sampler (SPEC §7)"


def rhat_gates(prior: Any) -> bool:
    """Whether the SPEC §7 R̂ rule gates the reference posteriors of ``prior``.

    The family's ``rhat_gate`` class attribute (:class:`~udbench.priors.mcmc.MCMCPrior`:
    True for the BNN, False for HBART); True for a prior without one (an exact family has
    no R̂, so its posteriors always pass the rule).
    """
    return bool(getattr(prior, "rhat_gate", True))


def acceptance(diagnostics: dict[str, Any], threshold: float = RHAT_THRESHOLD) -> tuple[bool, str]:
    """:func:`is_accepted` with a reason, in the form ``generate_with_seed_replacement`` takes.

    Returns ``(True, "")`` or ``(False, "rhat_max=1.0812 > 1.05 at 3 inputs")``; when
    the diagnostics carry ``rhat_iid_max`` above the threshold, the reason says that
    independent draws in this chain layout would already exceed it. Diagnostics with
    ``"rhat_gate": False`` (HBART, SPEC §7: many short chains, R̂ is a diagnostic only) are
    accepted whatever their R̂, with the reason :data:`RHAT_NOT_A_GATE`.
    """
    if diagnostics.get("rhat_gate", True) is False:
        return True, RHAT_NOT_A_GATE
    ok = is_accepted(diagnostics, threshold)
    if ok:
        return True, ""
    rhat = np.asarray(diagnostics.get("rhat", []), dtype=np.float64)
    rhat = rhat[np.isfinite(rhat)]
    if rhat.size == 0:
        return False, "split-R̂ undefined at every input (too few draws per chain?)"
    n_bad = int(np.sum(rhat > threshold))
    reason = f"rhat_max={rhat.max():.4f} > {threshold} at {n_bad} inputs"
    iid_max = float(diagnostics.get("rhat_iid_max", float("nan")))
    if np.isfinite(iid_max) and iid_max > threshold:
        reason += (
            f" (independent draws in this chain layout give max R̂ ≈ {iid_max:.3f}:"
            " use more draws per chain)"
        )
    return False, reason
