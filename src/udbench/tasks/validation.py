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
    RUNS,
    WARMUP_FACTOR,
    Fidelity,
    Prior,
    decode_run,
    encode_run,
    family_numerics_version,
    protocol_issues,
    summarise_run,
    warmup_figures,
    warmup_verdict,
)
from udbench.tasks.generate import draw_instance, get_covariates, get_prior, training_inputs
from udbench.tasks.spec import TaskSpec

__all__ = ["combine_validation", "validate_prior", "validation_run", "validation_specs"]

#: ``prior_factory(family, dataset, fidelity) -> Prior``; the default binds the real prior.
PriorFactory = Callable[[str, str, Fidelity], Prior]


def _subsample(idx: np.ndarray, limit: int | None, *stream: Any) -> np.ndarray:
    if limit is None or idx.size <= limit:
        return idx
    pick = make_rng("validate-prior", *stream).choice(idx.size, size=int(limit), replace=False)
    return idx[np.sort(pick)]


def _check_factor(comp: str, warmup_factor: int) -> None:
    check_positive(comp, "warmup_factor", warmup_factor)
    if int(warmup_factor) < 2:
        raise param_error(comp, "warmup_factor", "be an integer >= 2", warmup_factor)


def validation_run(
    spec: TaskSpec,
    run: str,
    *,
    warmup_factor: int = WARMUP_FACTOR,
    max_train: int | None = None,
    max_eval: int | None = None,
    sampler_overrides: dict[str, Any] | None = None,
    data_dir: str | None = None,
    prior_factory: PriorFactory | None = None,
) -> dict[str, Any]:
    """One of the three conditioning runs of one validation instance (SPEC §7).

    The instance is the one ``udbench generate`` makes for ``spec`` (training inputs, f*,
    y; optionally subsampled by ``max_train`` / ``max_eval``, seeded by the task id and the
    dataset). ``run`` is ``"base"`` (the preset, posterior key ``seed_for("posterior")``),
    ``"long"`` (the warm-up × ``warmup_factor``, same key) or ``"floor"`` (the preset with
    the key ``derive_seed("warmup-floor", key)``). This is one unit of the validation
    campaign (:mod:`udbench.campaigns.mcmc`); :func:`validate_prior` runs all of them in
    memory and :func:`combine_validation` turns them into the record.

    Parameters
    ----------
    spec : TaskSpec
        Family, dataset, noise mode, coverage, seed, fidelity and D of the instance.
    run : {"base", "long", "floor"}
    warmup_factor : int, default 4
    max_train, max_eval : int, optional
        Subsample sizes (a reduced validation).
    sampler_overrides : dict, optional
        Sampler settings that replace the preset's (a candidate layout), applied to all three
        runs before the long run's warm-up factor.
    data_dir : str, optional
    prior_factory : callable, optional
        As in :func:`validate_prior`.

    Returns
    -------
    dict
        JSON-ready: ``task_id``, ``dataset``, ``run``, ``n_train``, ``n_eval``,
        ``full_size``, ``sampler_settings`` (the preset's, after ``sampler_overrides``),
        ``run_sampler_settings`` (this run's), ``rhat_max``, ``mcse_var_median_rel``,
        ``wall_seconds`` (the conditioning alone) and the per-point reductions of
        :func:`~udbench.priors.validation.encode_run`.

    Raises
    ------
    UdbenchError
        Unknown run, a family without a warm-up, a bad factor.
    """
    from udbench._threads import cell_threads

    comp = "validation_run"
    check_choice(comp, "run", run, RUNS)
    _check_factor(comp, warmup_factor)
    factory = prior_factory or (lambda f, d, fi: get_prior(f, d, fi, data_dir))
    prior: Any = factory(spec.family, spec.dataset, spec.fidelity)
    if "n_warmup" not in getattr(prior, "sampler_settings", {}) or not hasattr(
        prior, "with_sampler_overrides"
    ):
        raise param_error(comp, "family", "be an MCMC family with a warm-up", spec.family)
    if sampler_overrides:
        prior = prior.with_sampler_overrides(dict(sampler_overrides))
    preset = dict(prior.sampler_settings)
    if run == "long":
        prior = prior.with_sampler_overrides({"n_warmup": int(warmup_factor) * preset["n_warmup"]})
    from udbench.design import NoiseModel

    cov = get_covariates(spec.dataset, data_dir)
    X = np.asarray(cov.X, dtype=np.float64)
    eval_all = np.asarray(cov.eval_idx, dtype=np.int64)
    eval_idx = _subsample(eval_all, max_eval, "eval", spec.dataset)
    train_all = training_inputs(spec, cov)
    train_idx = _subsample(train_all, max_train, "train", spec.task_id)
    X_eval, X_train = X[eval_idx], X[train_idx]
    nv = np.asarray(NoiseModel(cov, spec.noise).variance(X_train), dtype=np.float64)
    f_eval, _, y = draw_instance(spec, prior, X_eval, X_train, nv)
    key = spec.seed_for("posterior")
    if run == "floor":
        key = derive_seed("warmup-floor", key)
    t0 = time.perf_counter()
    with cell_threads():  # one compute thread, as every instance (docs/running.md)
        post = prior.condition(X_train, y, nv, X_eval, key, int(spec.n_draws))
    seconds = time.perf_counter() - t0
    diag = post.diagnostics
    return {
        "task_id": spec.task_id,
        "dataset": spec.dataset,
        "run": run,
        "n_train": int(train_idx.size),
        "n_eval": int(eval_idx.size),
        "full_size": bool(eval_idx.size == eval_all.size and train_idx.size == train_all.size),
        "sampler_settings": preset,
        "run_sampler_settings": dict(prior.sampler_settings),
        "rhat_max": diag.get("rhat_max"),
        "mcse_var_median_rel": diag.get("mcse_var_median_rel"),
        "wall_seconds": seconds,
        **encode_run(summarise_run(f_eval, post.draws_eval)),
    }


def combine_validation(
    family: str,
    fidelity: Fidelity | str,
    runs: Sequence[dict[str, Any]],
    *,
    datasets: Sequence[str],
    noise_modes: Sequence[str],
    coverages: Sequence[str],
    seeds: Sequence[int],
    warmup_factor: int = WARMUP_FACTOR,
    n_draws: int = 1000,
    max_train: int | None = None,
    max_eval: int | None = None,
) -> dict[str, Any]:
    """The validation record (figures, verdict, protocol) from :func:`validation_run` results.

    Only instances with all three runs count; an instance with fewer is listed in
    ``incomplete``. Datasets are taken in the order of ``datasets``, instances within a
    dataset by task id, whatever the order of ``runs`` (so a record rebuilt from campaign
    records equals the one computed in memory).

    Parameters
    ----------
    family, fidelity : str
    runs : sequence of dict
        :func:`validation_run` results (or campaign records' results), any order.
    datasets, noise_modes, coverages, seeds
        The design the record claims (recorded; the protocol is judged on the instances
        actually complete).
    warmup_factor, n_draws, max_train, max_eval
        As in :func:`validate_prior` (recorded).

    Returns
    -------
    dict
        The record of :func:`validate_prior`, plus ``incomplete`` (task ids with fewer than
        three runs).

    Raises
    ------
    UdbenchError
        No complete instance; runs of one instance made with different preset settings.
    """
    comp = "combine_validation"
    fid = Fidelity.parse(comp, fidelity)
    by_task: dict[str, dict[str, dict[str, Any]]] = {}
    for r in runs:
        by_task.setdefault(str(r["task_id"]), {})[str(r["run"])] = r
    # sorted by task id, so the figures (bootstrap included) do not depend on the order of runs
    complete = {t: by_task[t] for t in sorted(by_task) if all(k in by_task[t] for k in RUNS)}
    incomplete = sorted(set(by_task) - set(complete))
    if not complete:
        raise param_error(comp, "runs", "hold all three runs of at least one instance", incomplete)
    settings: dict[str, Any] = {}
    per_dataset: dict[str, Any] = {}
    all_inst: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    full_size = True
    base_seconds: list[float] = []
    for dataset in datasets:
        inst: list[dict[str, Any]] = []
        n_train = n_eval = 0
        for task_id, rs in complete.items():
            if rs["base"]["dataset"] != dataset:
                continue
            presets = [rs[k]["sampler_settings"] for k in RUNS]
            if any(p != presets[0] for p in presets):
                raise param_error(comp, "runs", "share the preset settings per instance", task_id)
            settings = presets[0]
            summary: dict[str, Any] = {}
            for k in RUNS:
                for name, value in decode_run(rs[k]).items():
                    summary[f"{name}_{k}"] = value
                full_size &= bool(rs[k]["full_size"])
            inst.append(summary)
            n_train, n_eval = int(rs["base"]["n_train"]), int(rs["base"]["n_eval"])
            base_seconds.append(float(rs["base"]["wall_seconds"]))
            one = warmup_figures([summary], n_boot=10)
            rows.append(
                {
                    "task_id": task_id,
                    "coverage_base": one["coverage_base"],
                    "coverage_long": one["coverage_long"],
                    "sd_change_median": one["sd_change_median"],
                    "sd_floor_median": one["sd_floor_median"],
                    "corr_mean_fstar": summary["corr_base"],
                    "rhat_max": {k: rs[k]["rhat_max"] for k in RUNS},
                    "wall_seconds": {k: rs[k]["wall_seconds"] for k in RUNS},
                }
            )
        if not inst:
            continue
        figures = warmup_figures(inst)
        passed, failures = warmup_verdict(figures)
        per_dataset[dataset] = {
            **figures,
            "passed": passed,
            "failures": failures,
            "n_train": n_train,
            "n_eval": n_eval,
        }
        all_inst.extend(inst)
    if not all_inst:
        raise param_error(comp, "datasets", "name the datasets of the runs", list(datasets))
    pooled = warmup_figures(all_inst)
    failures = [f"{d}: {f}" for d, r in per_dataset.items() for f in r["failures"]]
    counts = {d: int(r["n_instances"]) for d, r in per_dataset.items()}
    warmup = int(settings["n_warmup"])
    return {
        "family": family,
        "fidelity": fid.value,
        "sampler_settings": settings,
        "warmup": warmup,
        "warmup_long": int(warmup_factor) * warmup,
        "warmup_factor": int(warmup_factor),
        "datasets": list(datasets),
        "noise_modes": list(noise_modes),
        "coverages": list(coverages),
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
        "incomplete": incomplete,
        "minutes_per_instance": float(np.mean(base_seconds)) / 60 if base_seconds else None,
        # the draws it judged: a record applies only under the same version (check, report)
        "numerics_version": family_numerics_version(family),
        "udbench_version": __version__,
        "date": datetime.date.today().isoformat(),
    }


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
        ``minutes_per_instance`` (mean wall minutes of one preset run), ``numerics_version``
        (the family's, :func:`~udbench.priors.family_numerics_version`: the record applies
        only under it), ``udbench_version``, ``date``.

    Raises
    ------
    UdbenchError
        A family without a warm-up (the GP), a bad factor, or the errors of task specs.
    """
    from udbench.design import COVERAGES, NOISE_MODES

    comp = "validate_prior"
    if prior_factory is None:
        check_choice(comp, "family", family, MCMC_FAMILIES)
    fid = Fidelity.parse(comp, fidelity)
    _check_factor(comp, warmup_factor)
    modes = list(NOISE_MODES) if noise_modes is None else list(noise_modes)
    covs = list(COVERAGES) if coverages is None else list(coverages)
    results: list[dict[str, Any]] = []
    for spec in validation_specs(family, fid, datasets, modes, covs, seeds, n_draws):
        runs = [
            validation_run(
                spec,
                run,
                warmup_factor=warmup_factor,
                max_train=max_train,
                max_eval=max_eval,
                data_dir=data_dir,
                prior_factory=prior_factory,
            )
            for run in RUNS
        ]
        results.extend(runs)
        if progress is not None:
            one = combine_validation(
                family, fid, runs, datasets=[spec.dataset], noise_modes=[spec.noise],
                coverages=[spec.coverage], seeds=[spec.seed], warmup_factor=warmup_factor,
                n_draws=n_draws,
            )["instances"][0]  # fmt: skip
            progress(
                f"{spec.task_id}: coverage {one['coverage_base']:.3f} -> "
                f"{one['coverage_long']:.3f}, median SD change "
                f"{one['sd_change_median']:.3f} (floor {one['sd_floor_median']:.3f}), "
                f"{sum(one['wall_seconds'].values()) / 60:.1f} min"
            )
    return combine_validation(
        family,
        fid,
        results,
        datasets=datasets,
        noise_modes=modes,
        coverages=covs,
        seeds=seeds,
        warmup_factor=warmup_factor,
        n_draws=n_draws,
        max_train=max_train,
        max_eval=max_eval,
    )


def validation_specs(
    family: str,
    fidelity: Fidelity | str,
    datasets: Sequence[str],
    noise_modes: Sequence[str],
    coverages: Sequence[str],
    seeds: Sequence[int],
    n_draws: int = 1000,
) -> list[TaskSpec]:
    """The instances of a validation, dataset × noise mode × coverage × seed, in that order.

    Returns
    -------
    list of TaskSpec
    """
    fid = Fidelity.parse("validation_specs", fidelity)
    return [
        TaskSpec(dataset, family, noise, coverage, int(seed), fid, int(n_draws))
        for dataset in datasets
        for noise in noise_modes
        for coverage in coverages
        for seed in seeds
    ]
