"""Running the warm-up sensitivity validation of an MCMC fidelity preset (SPEC §7).

:func:`validate_prior` builds real task instances (the same training inputs, f* and y as
``udbench generate``) and conditions each three times: at the preset, with a
:data:`~udbench.priors.validation.WARMUP_FACTOR` times longer warm-up (same seed), and at
the preset with another seed (the Monte Carlo noise floor). The figures, verdict and
departures from the SPEC §7 protocol come from :mod:`udbench.priors.validation`; the
record it returns is what ``udbench validate-prior`` prints and stores.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from udbench import __version__
from udbench._seeding import derive_seed, make_rng
from udbench._validation import check_choice, check_positive, param_error
from udbench.priors import (
    MCMC_FAMILIES,
    WARMUP_FACTOR,
    Fidelity,
    Prior,
    protocol_issues,
    summarise_instance,
    warmup_figures,
    warmup_verdict,
)
from udbench.tasks.generate import draw_instance, get_covariates, get_prior, training_inputs
from udbench.tasks.spec import TaskSpec

__all__ = ["validate_prior"]

#: ``prior_factory(family, dataset, fidelity) -> Prior``; the default binds the real prior.
PriorFactory = Callable[[str, str, Fidelity], Prior]


def _subsample(idx: np.ndarray, limit: int | None, *stream: Any) -> np.ndarray:
    if limit is None or idx.size <= limit:
        return idx
    pick = make_rng("validate-prior", *stream).choice(idx.size, size=int(limit), replace=False)
    return idx[np.sort(pick)]


def validate_prior(
    family: str = "hbart",
    fidelity: Fidelity | str = "standard",
    datasets: Sequence[str] = ("protein", "kin8nm"),
    *,
    noise_modes: Sequence[str] | None = None,
    coverages: Sequence[str] | None = None,
    seeds: Sequence[int] = (0,),
    warmup_factor: int = WARMUP_FACTOR,
    n_draws: int = 1000,
    max_train: int | None = None,
    max_eval: int | None = None,
    data_dir: str | None = None,
    prior_factory: PriorFactory | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Warm-up sensitivity validation of the preset ``fidelity`` of ``family`` (SPEC §7).

    For every dataset × noise mode × coverage × seed, the instance of ``udbench generate``
    (training inputs, f*, y; seeds as in :class:`~udbench.tasks.TaskSpec`) is conditioned
    at the preset (posterior key ``seed_for("posterior")``), with the warm-up multiplied by
    ``warmup_factor`` (same key) and at the preset with the key
    ``derive_seed("warmup-floor", key)``. Rejection by R̂ plays no part (HBART is not gated,
    SPEC §7); the R̂ of each run is recorded.

    Parameters
    ----------
    family : str, default "hbart"
        An MCMC family whose preset has ``n_warmup`` (``"hbart"`` or ``"bnn"``).
    fidelity : Fidelity or str, default "standard"
    datasets : sequence of str, default ("protein", "kin8nm")
    noise_modes, coverages : sequence of str, optional
        Default: all four noise modes and both coverages (SPEC §7: at least 8 instances
        per dataset).
    seeds : sequence of int, default (0,)
    warmup_factor : int, default 4
    n_draws : int, default 1000
        D per run (a multiple of the preset's chains).
    max_train, max_eval : int, optional
        Subsample the training inputs / evaluation pool to at most this many rows (seeded
        by the task id / dataset) to make a cheaper, *reduced* validation; recorded in
        ``protocol_issues``. Default: full size.
    data_dir : str, optional
        Raw-data folder (as ``udbench generate``).
    prior_factory : callable, optional
        ``(family, dataset, fidelity) -> prior`` (default: the cached real prior,
        :func:`udbench.tasks.generate.get_prior`). The prior needs ``sampler_settings``
        with ``n_warmup`` and ``with_sampler_overrides`` (:class:`udbench.priors.mcmc.MCMCPrior`).
    progress : callable, optional
        Called with one line per finished instance.

    Returns
    -------
    dict
        JSON-ready record: ``family``, ``fidelity``, ``sampler_settings`` (the preset's),
        ``warmup`` and ``warmup_long``, ``datasets``, ``n_draws``, ``warmup_factor``,
        ``max_train``, ``max_eval``, ``per_dataset`` (dataset -> figures of
        :func:`~udbench.priors.validation.warmup_figures` plus ``passed``, ``failures``,
        ``n_train``, ``n_eval``), ``pooled`` (all instances), ``instances`` (one row per
        instance: task id, coverages, SD change medians, R̂ maxima, wall seconds per run),
        ``passed`` (every dataset passes), ``failures``, ``protocol_issues``,
        ``minutes_per_instance`` (mean wall minutes of one preset run),
        ``udbench_version``, ``date``.

    Raises
    ------
    UdbenchError
        A family without a warm-up (the GP), a bad factor, or the errors of task specs.
    """
    from udbench.design import COVERAGES, NOISE_MODES, NoiseModel

    comp = "validate_prior"
    if prior_factory is None:
        check_choice(comp, "family", family, MCMC_FAMILIES)
    fid = Fidelity.parse(comp, fidelity)
    check_positive(comp, "warmup_factor", warmup_factor)
    if int(warmup_factor) < 2:
        raise param_error(comp, "warmup_factor", "be an integer >= 2", warmup_factor)
    modes = list(NOISE_MODES) if noise_modes is None else list(noise_modes)
    covs = list(COVERAGES) if coverages is None else list(coverages)
    factory = prior_factory or (lambda f, d, fi: get_prior(f, d, fi, data_dir))
    per_dataset: dict[str, Any] = {}
    all_inst: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    settings: dict[str, Any] = {}
    warmup = 0
    full_size = True
    base_seconds: list[float] = []
    for dataset in datasets:
        prior: Any = factory(family, dataset, fid)
        sampler = dict(getattr(prior, "sampler_settings", {}))
        if "n_warmup" not in sampler or not hasattr(prior, "with_sampler_overrides"):
            raise param_error(comp, "family", "be an MCMC family with a warm-up", family)
        settings, warmup = sampler, int(sampler["n_warmup"])
        long_prior = prior.with_sampler_overrides({"n_warmup": int(warmup_factor) * warmup})
        cov = get_covariates(dataset, data_dir)
        X = np.asarray(cov.X, dtype=np.float64)
        eval_all = np.asarray(cov.eval_idx, dtype=np.int64)
        eval_idx = _subsample(eval_all, max_eval, "eval", dataset)
        full_size &= eval_idx.size == eval_all.size
        inst: list[dict[str, Any]] = []
        n_train = 0
        for noise in modes:
            model = NoiseModel(cov, noise)
            for coverage in covs:
                for seed in seeds:
                    spec = TaskSpec(dataset, family, noise, coverage, int(seed), fid, n_draws)
                    train_all = training_inputs(spec, cov)
                    train_idx = _subsample(train_all, max_train, "train", spec.task_id)
                    full_size &= train_idx.size == train_all.size
                    n_train = int(train_idx.size)
                    X_eval, X_train = X[eval_idx], X[train_idx]
                    nv = np.asarray(model.variance(X_train), dtype=np.float64)
                    f_eval, _, y = draw_instance(spec, prior, X_eval, X_train, nv)
                    key = spec.seed_for("posterior")
                    keys = {"base": key, "long": key, "floor": derive_seed("warmup-floor", key)}
                    priors = {"base": prior, "long": long_prior, "floor": prior}
                    draws, seconds, rhat = {}, {}, {}
                    for run in ("base", "long", "floor"):
                        t0 = time.perf_counter()
                        post = priors[run].condition(
                            X_train, y, nv, X_eval, keys[run], int(n_draws)
                        )
                        seconds[run] = time.perf_counter() - t0
                        draws[run] = post.draws_eval
                        rhat[run] = post.diagnostics.get("rhat_max")
                    summary = summarise_instance(f_eval, draws)
                    inst.append(summary)
                    base_seconds.append(seconds["base"])
                    one = warmup_figures([summary], n_boot=10)
                    row = {
                        "task_id": spec.task_id,
                        "coverage_base": one["coverage_base"],
                        "coverage_long": one["coverage_long"],
                        "sd_change_median": one["sd_change_median"],
                        "sd_floor_median": one["sd_floor_median"],
                        "corr_mean_fstar": summary["corr_base"],
                        "rhat_max": rhat,
                        "wall_seconds": seconds,
                    }
                    rows.append(row)
                    if progress is not None:
                        progress(
                            f"{spec.task_id}: coverage {row['coverage_base']:.3f} -> "
                            f"{row['coverage_long']:.3f}, median SD change "
                            f"{row['sd_change_median']:.3f} (floor "
                            f"{row['sd_floor_median']:.3f}), "
                            f"{sum(seconds.values()) / 60:.1f} min"
                        )
        figures = warmup_figures(inst)
        passed, failures = warmup_verdict(figures)
        per_dataset[dataset] = {
            **figures,
            "passed": passed,
            "failures": failures,
            "n_train": n_train,
            "n_eval": int(eval_idx.size),
        }
        all_inst.extend(inst)
    pooled = warmup_figures(all_inst)
    failures = [f"{d}: {f}" for d, r in per_dataset.items() for f in r["failures"]]
    counts = {d: int(r["n_instances"]) for d, r in per_dataset.items()}
    return {
        "family": family,
        "fidelity": fid.value,
        "sampler_settings": settings,
        "warmup": warmup,
        "warmup_long": int(warmup_factor) * warmup,
        "warmup_factor": int(warmup_factor),
        "datasets": list(datasets),
        "noise_modes": modes,
        "coverages": covs,
        "seeds": [int(s) for s in seeds],
        "n_draws": int(n_draws),
        "max_train": max_train,
        "max_eval": max_eval,
        "per_dataset": per_dataset,
        "pooled": pooled,
        "passed": all(r["passed"] for r in per_dataset.values()),
        "failures": failures,
        "protocol_issues": protocol_issues(
            list(datasets), counts, int(n_draws), full_size, int(warmup_factor)
        ),
        "instances": rows,
        "minutes_per_instance": float(np.mean(base_seconds)) / 60 if base_seconds else None,
        "udbench_version": __version__,
        "date": datetime.date.today().isoformat(),
    }
