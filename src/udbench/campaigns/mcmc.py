"""The MCMC reference-posterior campaign (issue 34): BNN NUTS settings, HBART preset
validation at full size, and the multi-family task set, as resumable units.

Three parts, each a list of :class:`~udbench.campaigns.engine.Unit` (run in this order by
``udbench campaign run mcmc``):

``bnn-sweep``
    NUTS settings for the BNN (SPEC §5) on one real full-size task (:data:`BNN_SWEEP_TASK`,
    kin8nm: n = 3136, 1500 evaluation inputs, D = 1000): ``standard`` with one setting changed
    per unit (:data:`BNN_SWEEP`: maximum tree depth 6–11, dense mass, longer warm-up, lower
    target acceptance). Each records the bulk ESS of f at every evaluation input (median and
    5th percentile, ArviZ), per CPU and wall second, R̂, tree depths and the calibration
    (coverage of f*, SBC), to compare efficiency *and* posterior. The BNN prior has no scale
    hyperparameter (weights N(0, 1), a fixed), so it is already non-centred.
``hbart-validation``
    SPEC §7's warm-up sensitivity validation of HBART layouts (:data:`HBART_LAYOUTS`) on
    protein and kin8nm at full size, 8 instances each, D = 1000: one unit per instance and
    run (preset, 4× warm-up, second seed), each recording the per-point reductions of
    :func:`udbench.tasks.validation.validation_run`. The record is rebuilt from the units by
    :func:`udbench.tasks.validation.combine_validation`, the same function the in-memory
    ``udbench validate-prior`` uses, so both give the same verdict.
``multi-family``
    The 96-instance task set (concrete and kin8nm × gp, hbart, bnn × four noise modes × two
    coverages × seeds 0–1, ``standard``): one unit per task, which generates the task file
    into the work folder (outside the repository) and records its SPEC §7 checks and seed
    replacements; :func:`multi_family_table` pools them per family.

A unit depends on its family's :attr:`~udbench.priors.base.Prior.numerics_version` and its
sampler settings: changing either makes its record stale (redone); other commits do not.
The records are read back by :func:`bnn_sweep_table`, :func:`hbart_validation_records` and
:func:`multi_family_table` (the latter two defined in ``udbench.campaigns._mcmc_tables``,
re-exported here).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from udbench._validation import check_choice, param_error
from udbench.campaigns._mcmc_costs import MULTI_SECONDS, VALIDATION_SECONDS, bnn_sweep_seconds
from udbench.campaigns._mcmc_tables import (
    VALIDATION_DATASETS,
    hbart_validation_records,
    multi_family_table,
    numerics_versions,
)
from udbench.campaigns.engine import Unit, load_done_records

__all__ = [
    "BNN_SWEEP",
    "BNN_SWEEP_BASE",
    "BNN_SWEEP_TASK",
    "HBART_LAYOUTS",
    "MULTI_FAMILY",
    "PARTS",
    "bnn_sweep_table",
    "bnn_sweep_units",
    "campaign_units",
    "hbart_validation_records",
    "hbart_validation_units",
    "multi_family_table",
    "multi_family_units",
    "numerics_versions",
]

#: The parts of the campaign, in the order ``udbench campaign run mcmc`` runs them.
PARTS: tuple[str, ...] = ("bnn-sweep", "hbart-validation", "multi-family")

#: The real task of the BNN sweep: (dataset, noise, coverage, seed).
BNN_SWEEP_TASK: tuple[str, str, str, int] = ("kin8nm", "smooth-monotone", "balanced", 0)

#: The baseline the BNN sweep overrides at ``standard``: the ``standard`` preset the sweep
#: began with (depth 9, diagonal mass), fixed so that a preset change neither stales the
#: sweep's records nor moves ``d9``, the baseline of the ratio.
BNN_SWEEP_BASE: dict[str, Any] = {
    "n_chains": 4,
    "n_warmup": 400,
    "target_accept": 0.9,
    "max_tree_depth": 9,
    "dense_mass": False,
}

#: BNN NUTS settings swept (name -> overrides of :data:`BNN_SWEEP_BASE`), in run order. On
#: 2026-12-03 depths 7, 6 and the knobs at depth 8 were put first (d9 and d8 end every
#: iteration at the maximum depth; docs/priors-mcmc.md, "BNN NUTS settings at full size").
#: On 2026-12-04 the same knobs at depths 9-10 (dense mass at 9 and 10, 800 warm-up and
#: acceptance 0.8 at 9; 2.5 CPU-h by the estimates) were dropped: each was measured at depth
#: 8, where the preset sits and every iteration already reaches the maximum depth, so at a
#: depth shown to give less ESS per step they could not change the choice.
BNN_SWEEP: dict[str, dict[str, Any]] = {
    "d9": {},
    "d8": {"max_tree_depth": 8},
    "d7": {"max_tree_depth": 7},
    "d6": {"max_tree_depth": 6},
    "accept0.8-d8": {"target_accept": 0.8, "max_tree_depth": 8},
    "accept0.8-d7": {"target_accept": 0.8, "max_tree_depth": 7},
    "accept0.7-d8": {"target_accept": 0.7, "max_tree_depth": 8},
    "warmup800-d8": {"n_warmup": 800, "max_tree_depth": 8},
    "dense-d8": {"dense_mass": True, "max_tree_depth": 8},
    "f32-accept0.8-d8": {"dtype": "float32", "target_accept": 0.8, "max_tree_depth": 8},
    "d10": {"max_tree_depth": 10},
    "d11": {"max_tree_depth": 11},
}

#: HBART layouts validated (name -> overrides of the ``standard`` preset), cheapest first.
#: ``lean`` (20 chains × 1000 warm-up, thin 120: 706 CPU seconds per run at full kin8nm size)
#: passed SPEC §7 on all 16 instances (2026-12-04) and became ``standard``; its overrides are
#: kept so that its records stay current. The former ``standard`` (1500 warm-up, thin 240),
#: the next candidate had ``lean`` failed, is no longer validated (its one record was removed).
HBART_LAYOUTS: dict[str, dict[str, Any]] = {
    "lean": {"n_warmup": 1000, "thin": 120},
}

#: The multi-family task set of issue 34.
MULTI_FAMILY: dict[str, Any] = {
    "datasets": ("concrete", "kin8nm"),
    "families": ("gp", "bnn", "hbart"),
    "seeds": (0, 1),
    "fidelity": "standard",
    "n_draws": 1000,
}


def _preset(family: str, fidelity: str, overrides: dict[str, Any]) -> dict[str, Any]:
    from udbench.priors.bnn import FIDELITY_SETTINGS as BNN_SETTINGS
    from udbench.priors.hbart import FIDELITY_SETTINGS as HBART_SETTINGS

    table = {"hbart": HBART_SETTINGS, "bnn": BNN_SETTINGS}[family]
    unknown = sorted(set(overrides) - set(table[fidelity]))
    if unknown:
        raise param_error("campaign", "overrides", f"be settings of {family}", unknown)
    return {**table[fidelity], **overrides}


def _single_threaded(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> dict[str, Any]:
        from udbench._threads import cell_threads

        with cell_threads():
            return fn(*args, **kwargs)

    return wrapper


# ---------------------------------------------------------------- BNN sweep


@_single_threaded
def _bnn_sweep_work(
    overrides: dict[str, Any],
    task: tuple[str, str, str, int],
    fidelity: str,
    n_draws: int,
    data_dir: str | None,
) -> dict[str, Any]:
    import time

    import arviz as az

    from udbench.design import NoiseModel
    from udbench.priors import Fidelity
    from udbench.tasks.checks import acceptance_checks
    from udbench.tasks.generate import draw_instance, get_covariates, get_prior, training_inputs
    from udbench.tasks.spec import TaskSpec

    dataset, noise, coverage, seed = task
    spec = TaskSpec(dataset, "bnn", noise, coverage, seed, Fidelity(fidelity), n_draws)
    cov = get_covariates(dataset, data_dir)
    prior: Any = get_prior("bnn", dataset, fidelity, data_dir)
    if overrides:
        prior = prior.with_sampler_overrides(dict(overrides))
    X = np.asarray(cov.X, dtype=np.float64)
    X_eval = X[np.asarray(cov.eval_idx)]
    X_train = X[training_inputs(spec, cov)]
    nv = np.asarray(NoiseModel(cov, noise).variance(X_train), dtype=np.float64)
    f_eval, _, y = draw_instance(spec, prior, X_eval, X_train, nv)
    c0 = time.process_time()
    post = prior.condition(X_train, y, nv, X_eval, spec.seed_for("posterior"), n_draws)
    cpu = time.process_time() - c0
    diag = post.diagnostics
    n_chains = int(diag["n_chains"])
    chains = post.draws_eval.reshape(n_chains, -1, post.draws_eval.shape[1])
    ds = az.convert_to_dataset(chains)
    ess = np.asarray(az.ess(ds, method="bulk")["x"].values, dtype=np.float64).reshape(-1)
    ess = ess[np.isfinite(ess)]
    checks, _ = acceptance_checks(f_eval, post.draws_eval, n_chains=n_chains)
    wall = float(diag["wall_seconds"])
    med, p5 = float(np.median(ess)), float(np.quantile(ess, 0.05))
    leapfrog = float(diag["leapfrog_steps_mean"]) * n_chains * int(diag["draws_per_chain"])
    cost: dict[
        str, Any
    ] = {}  # a float32 run's cost per step against float64's, timed in this process
    if prior.sampler_settings.get("dtype", "float64") != "float64":
        from udbench.priors.bnn_cost import gradient_seconds

        cost["gradient_seconds"] = g = gradient_seconds(X_train, nv, prior.X_ref, prior.scale)
        cost["step_cost_ratio_f64"] = g["float64"] / g[prior.sampler_settings["dtype"]]
    return {
        **cost,
        "task_id": spec.task_id,
        "sampler_settings": dict(prior.sampler_settings),
        "ess_bulk_f_median": med,
        "ess_bulk_f_p5": p5,
        "ess_median_per_cpu_second": med / cpu,
        "ess_p5_per_cpu_second": p5 / cpu,
        "ess_median_per_wall_second": med / wall,
        "ess_median_per_kgrad_kept": 1000.0 * med / leapfrog,
        "sampler_cpu_seconds": cpu,
        "sampler_wall_seconds": wall,
        "rhat_max": diag.get("rhat_max"),
        "rhat_iid_max": diag.get("rhat_iid_max"),
        "accepted": bool(diag.get("rhat_max", np.inf) <= 1.05),
        "n_divergent": diag.get("n_divergent"),
        "accept_prob_mean": diag.get("accept_prob_mean"),
        "tree_depth_mean": diag.get("tree_depth_mean"),
        "share_at_max_tree_depth": diag.get("share_at_max_tree_depth"),
        "leapfrog_steps_mean": diag.get("leapfrog_steps_mean"),
        "step_size_per_chain": diag.get("step_size_per_chain"),
        "coverage_90": checks["coverage_90"],
        "sbc_max_bin_deviation": checks["sbc_max_bin_deviation"],
        "mcse_var_rel_median": checks["mcse_var_rel_median"],
        "corr_mean_fstar": checks["corr_mean_fstar"],
    }


def bnn_sweep_units(
    settings: dict[str, dict[str, Any]] | None = None,
    *,
    task: tuple[str, str, str, int] = BNN_SWEEP_TASK,
    fidelity: str = "standard",
    n_draws: int = 1000,
    data_dir: str | None = None,
) -> list[Unit]:
    """One unit per BNN NUTS setting (default :data:`BNN_SWEEP`) on ``task``.

    ``task`` is (dataset, noise mode, coverage, seed); ``fidelity`` and ``n_draws`` the
    preset the settings override and D (smaller in tests).
    """
    version = {"bnn": numerics_versions()["bnn"]}
    current = _preset("bnn", fidelity, {})
    base = dict(BNN_SWEEP_BASE) if fidelity == "standard" else current
    units = []
    for name, overrides in (settings or BNN_SWEEP).items():
        _preset("bnn", fidelity, overrides)  # unknown keys are refused
        sampler = {**base, **overrides}
        # the work applies its settings to the fidelity's current preset: pass what differs
        # (a setting without a dtype ran in float64, which the presets then did not name)
        delta = {k: v for k, v in {"dtype": "float64", **sampler}.items() if current.get(k) != v}
        units.append(
            Unit(
                unit_id=f"bnn-sweep/{name}",
                kind="bnn-sweep",
                settings={
                    "setting": name,
                    "task": list(task),
                    "fidelity": fidelity,
                    "n_draws": int(n_draws),
                    "sampler": sampler,
                },
                numerics=version,
                work=functools.partial(
                    _bnn_sweep_work, delta, tuple(task), fidelity, int(n_draws), data_dir
                ),
                estimate_seconds=bnn_sweep_seconds(sampler),
            )
        )
    return units


def bnn_sweep_table(records: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of the BNN sweep from its records (one per setting, baseline ``d9`` first).

    Each row: ``setting``, the figures of the unit's result, ``ess_per_cpu_ratio_vs_d9``
    (ESS median per CPU second over the baseline's) and ``ess_per_step_ratio_vs_d9`` (ESS
    median per leapfrog step of the kept phase over the baseline's: the ESS-per-second ratio
    at a common cost per step, which records made under different loads do not share) and
    ``ess_per_second_ratio_vs_d9`` (the latter × the float32 step's measured cost ratio to
    float64, ``step_cost_ratio_f64``; 1 for float64); None without a baseline record.

    Returns
    -------
    (rows, notes) : tuple
        ``notes`` names records left out (:func:`~udbench.campaigns.engine.load_done_records`).
    """
    done, notes = load_done_records(records, "bnn-sweep", {"bnn": numerics_versions()["bnn"]})
    rows = [{"setting": r["settings"]["setting"], **r["result"]} for r in done]
    base = next((r for r in rows if r["setting"] == "d9"), None)
    for r in rows:  # per step × the step's cost ratio to float64: ESS/s at a common load
        cpu, step = "ess_median_per_cpu_second", "ess_median_per_kgrad_kept"
        r["ess_per_cpu_ratio_vs_d9"] = None if base is None else r[cpu] / base[cpu]
        r["ess_per_step_ratio_vs_d9"] = None if base is None else r[step] / base[step]
        r["ess_per_second_ratio_vs_d9"] = (
            None if base is None else r[step] / base[step] * r.get("step_cost_ratio_f64", 1.0)
        )
    order = list(BNN_SWEEP)
    rows.sort(key=lambda r: order.index(r["setting"]) if r["setting"] in order else len(order))
    return rows, notes


# ---------------------------------------------------------------- HBART validation


def _validation_specs(datasets: Sequence[str], seeds: Sequence[int]) -> list[Any]:
    """Instances interleaved across datasets, so a partial campaign covers both."""
    from udbench.design import COVERAGES, NOISE_MODES
    from udbench.tasks.validation import validation_specs

    per = [
        validation_specs("hbart", "standard", [d], NOISE_MODES, COVERAGES, seeds, 1000)
        for d in datasets
    ]
    return [spec for group in zip(*per, strict=True) for spec in group]


def _validation_work(
    spec: Any, run: str, overrides: dict[str, Any], kw: dict[str, Any]
) -> dict[str, Any]:
    from udbench.tasks.validation import validation_run

    return validation_run(spec, run, sampler_overrides=overrides or None, **kw)


def hbart_validation_units(
    layouts: dict[str, dict[str, Any]] | None = None,
    *,
    datasets: Sequence[str] = VALIDATION_DATASETS,
    seeds: Sequence[int] = (0,),
    max_train: int | None = None,
    max_eval: int | None = None,
    data_dir: str | None = None,
    prior_factory: Any = None,
) -> list[Unit]:
    """Units of the HBART warm-up sensitivity validation (one per layout, instance, run).

    ``max_train`` / ``max_eval`` make a reduced validation (tests); ``prior_factory`` as in
    :func:`udbench.tasks.validation.validation_run`.
    """
    from udbench.priors import RUNS, WARMUP_FACTOR

    version = {"hbart": numerics_versions()["hbart"]}
    units = []
    for name, overrides in (layouts or HBART_LAYOUTS).items():
        sampler = _preset("hbart", "standard", overrides)
        for spec in _validation_specs(datasets, seeds):
            for run in RUNS:
                kw = {
                    "warmup_factor": WARMUP_FACTOR,
                    "max_train": max_train,
                    "max_eval": max_eval,
                    "data_dir": data_dir,
                    "prior_factory": prior_factory,
                }
                units.append(
                    Unit(
                        unit_id=f"hbart-validation/{name}/{spec.task_id}/{run}",
                        kind="hbart-validation",
                        settings={
                            "layout": name,
                            "task_id": spec.task_id,
                            "seed": int(spec.seed),
                            "run": run,
                            "sampler": sampler,
                            "warmup_factor": WARMUP_FACTOR,
                            "n_draws": int(spec.n_draws),
                            "max_train": max_train,
                            "max_eval": max_eval,
                        },
                        numerics=version,
                        work=functools.partial(_validation_work, spec, run, overrides, kw),
                        estimate_seconds=VALIDATION_SECONDS.get(name, {}).get(run),
                    )
                )
    return units


# ---------------------------------------------------------------- multi-family task set


@_single_threaded
def _multi_family_work(spec: Any, work_dir: str, data_dir: str | None) -> dict[str, Any]:
    from udbench.tasks import generate_task
    from udbench.tasks.checks import generation_record

    task = generate_task(spec, data_dir=data_dir)
    path = Path(work_dir) / "tasks" / f"{spec.task_id}.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    task.save(path)
    return {**generation_record(task), "task_file": path.name}


def multi_family_units(
    work_dir: str | Path, data_dir: str | None = None, *, design: dict[str, Any] | None = None
) -> list[Unit]:
    """One unit per task of ``design`` (default :data:`MULTI_FAMILY`; GP, then BNN, then
    HBART), each generating its task file under ``work_dir/tasks``."""
    from udbench.design import COVERAGES, NOISE_MODES
    from udbench.priors import MCMC_FAMILIES, Fidelity
    from udbench.tasks.spec import TaskSpec

    versions = numerics_versions()
    cfg = {**MULTI_FAMILY, **(design or {})}
    fidelity = Fidelity.parse("multi_family_units", cfg["fidelity"])  # design: a user value
    units = []
    for family in cfg["families"]:
        sampler = _preset(family, cfg["fidelity"], {}) if family in MCMC_FAMILIES else {}
        for dataset in cfg["datasets"]:
            for noise in cfg.get("noise_modes", NOISE_MODES):
                for coverage in cfg.get("coverages", COVERAGES):
                    for seed in cfg["seeds"]:
                        spec = TaskSpec(
                            dataset, family, noise, coverage, seed, fidelity, cfg["n_draws"]
                        )
                        units.append(
                            Unit(
                                unit_id=f"multi-family/{spec.task_id}",
                                kind="multi-family",
                                settings={
                                    "task_id": spec.task_id,
                                    "fidelity": cfg["fidelity"],
                                    "n_draws": cfg["n_draws"],
                                    "sampler": sampler,
                                },
                                numerics={family: versions[family]},
                                work=functools.partial(
                                    _multi_family_work, spec, str(work_dir), data_dir
                                ),
                                estimate_seconds=MULTI_SECONDS.get(family, {}).get(dataset),
                            )
                        )
    return units


# ---------------------------------------------------------------- the whole campaign


def campaign_units(
    parts: Sequence[str] = PARTS,
    *,
    work_dir: str | Path,
    data_dir: str | None = None,
    layouts: Sequence[str] | None = None,
) -> list[Unit]:
    """The units of the named ``parts`` of the MCMC campaign, in run order.

    Parameters
    ----------
    parts : sequence of str
        Some of :data:`PARTS`.
    work_dir : str or Path
        Folder for big artefacts (the multi-family task files); not committed.
    data_dir : str, optional
        Raw-data folder.
    layouts : sequence of str, optional
        HBART layouts to validate (default: all of :data:`HBART_LAYOUTS`, cheapest first).

    Raises
    ------
    UdbenchError
        An unknown part or layout.
    """
    for part in parts:
        check_choice("campaign_units", "parts", part, PARTS)
    chosen = list(HBART_LAYOUTS) if layouts is None else list(layouts)
    for name in chosen:
        check_choice("campaign_units", "layouts", name, list(HBART_LAYOUTS))
    units: list[Unit] = []
    for part in PARTS:
        if part not in parts:
            continue
        if part == "bnn-sweep":
            units += bnn_sweep_units(data_dir=data_dir)
        elif part == "hbart-validation":
            units += hbart_validation_units(
                {k: HBART_LAYOUTS[k] for k in chosen}, data_dir=data_dir
            )
        else:
            units += multi_family_units(work_dir, data_dir)
    return units
