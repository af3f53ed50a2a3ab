"""The classification campaign (issues 37 and 38): the reference posteriors' checks over many
``gpc`` instances, and the full ``clf-small`` run, as resumable units.

Two parts, each a list of :class:`~udbench.campaigns.engine.Unit` (run in this order by
``udbench campaign run classification``):

``gpc-check``
    One unit per task instance of the suite (default ``clf-small``: 3 datasets × ``gpc``
    K = 3 ``medium`` × 4 temperature modes × 2 coverages × seeds 0–4 = 120 instances; a
    suite with fewer than :data:`MIN_INSTANCES` gets more seeds, :func:`instance_specs`).
    The unit generates the task file into the work folder
    (``WORK/gpc-v<numerics version>/tasks/<task id>.npz``, not committed; a file already
    there is reused), verifies it as ``udbench check`` does and records the instance's
    ``udbench check`` figures: the stored SPEC §7 checks of π* among the draws of π (the
    20-bin SBC counts of the ranks, the coverage counts ``covered_90`` of ``n_points`` and
    the D null counts of the coverage test, the relative MCSE median and 95th percentile,
    corr(mean, π*)), the sampler's R̂ (:func:`udbench.tasks.checks.mcmc_summary`) and
    whether it passes the R̂ rule (max ≤ 1.05), the seed replacements with their reasons,
    the task file's checksum and the generation seconds.
    :func:`gpc_check_summary` pools them.
``clf-small``
    One unit per (instance, classifier) cell of the suite, task-major, with the suite's
    method configurations (``clf-small``: the 11 classifiers, untuned defaults). The unit
    evaluates the cell exactly as ``udbench run`` does (:func:`udbench.evaluation.cell.
    evaluate_cell` on the instance's task file, reused from ``gpc-check``'s work folder or
    generated there) and records its row (every column of the results frame: ρ(EU,
    EU*_risk), …, the Brier columns, fit and predict seconds) as JSON. A failed cell is a
    failed record holding its row and error (the campaign goes on; the next run retries it).
    :func:`clf_small_summary` rebuilds the results frame from the records and calls
    :func:`udbench.evaluation.leaderboard.leaderboard` on it, as ``udbench leaderboard``.

Numerics versions: every unit depends on the ``gpc`` family's
:attr:`~udbench.priors.base.Prior.numerics_version` (read through
:func:`udbench.priors.family_numerics_version`); the classifiers have no numerics version of
their own, so a cell's settings hold its configuration and its hash (a changed default makes
the cell's record stale, as tuning records pin a method by its base configuration). Task
files live in a folder named after the version, so a bump never reuses an older file.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from udbench._validation import check_choice, param_error
from udbench.campaigns.engine import Unit, current_records, jsonable
from udbench.campaigns.mcmc import _single_threaded

__all__ = [
    "CELL_KIND",
    "CELL_SECONDS",
    "CHECK_KIND",
    "MIN_INSTANCES",
    "PARTS",
    "campaign_units",
    "cell_rows",
    "cell_units",
    "check_units",
    "clf_small_summary",
    "expected_max_share_excess",
    "gpc_check_summary",
    "instance_specs",
    "task_folder",
]

#: The parts of the campaign, in the order ``udbench campaign run classification`` runs them.
PARTS: tuple[str, ...] = ("gpc-check", "clf-small")
CHECK_KIND = "gpc-check"
CELL_KIND = "clf-small"
#: Fewest instances the checks pool (issue 37); a smaller suite grid gets more seeds.
MIN_INSTANCES = 24
#: Replicates of the Monte Carlo expectation of the SBC deviation
#: (:func:`expected_max_share_excess`).
N_NULL_REPLICATES = 4000

#: Per-unit wall seconds guessed before a record of the same shape exists (the status
#: table's projection; udbench plan has no classification projection). Generation: ≈ 70 s
#: wall at n ≈ 800 with both cores (docs/classification.md, "Fidelities and measured
#: costs"), one core per unit here and n ≈ 340-580, so ≈ 90 s. Cells: the CPU seconds
#: measured at kin8nm size (n = 3136, docs/classification.md), an upper bound here.
_CHECK_SECONDS = 90.0
#: Classifier → guessed CPU seconds of one clf-small cell (fit + predict at kin8nm size, the
#: comment above; also the tuning campaign's per-trial guess for a classifier).
CELL_SECONDS: dict[str, float] = {
    "logreg-lap": 1.0,
    "gpc-lap": 76.0,
    "nn-ens-softmax": 15.0,
    "catboost-ve": 2.0,
    "nn-drop-softmax": 7.0,
    "nn-bag-softmax": 10.0,
    "nn-edl-dirichlet": 6.0,
    "nn-lap-softmax": 3.0,
    "sngp-softmax": 17.0,
    "nn-swag-softmax": 4.0,
    "ngboost-cat-bag": 58.0,
}

#: ``generate(spec, data_dir) -> Task``: how a missing task file is made (tests pass a toy).
Generate = Callable[[Any, "str | None"], Any]


def _version() -> dict[str, int]:
    from udbench.priors import family_numerics_version

    return {"gpc": family_numerics_version("gpc")}


def task_folder(work_dir: str | Path) -> Path:
    """``WORK/gpc-v<N>/tasks``: the task files of the current ``gpc`` numerics version."""
    return Path(work_dir) / f"gpc-v{_version()['gpc']}" / "tasks"


def _ensure_task(spec: Any, work_dir: str, data_dir: str | None, generate: Generate | None):  # type: ignore[no-untyped-def]
    """The task file of ``spec`` in :func:`task_folder` (made if absent) and whether it was
    made now."""
    from udbench.campaigns._taskfiles import ensure_task_file

    path = task_folder(work_dir) / f"{spec.task_id}.npz"
    made = ensure_task_file(
        path, spec, data_dir, component="udbench campaign classification", generate=generate
    )
    return path, made


def instance_specs(
    suite: str | dict[str, Any] = "clf-small",
    data_dir: str | None = None,
    min_instances: int = MIN_INSTANCES,
) -> list[Any]:
    """The task specs of a classification suite's grid, with more seeds when it is small.

    Parameters
    ----------
    suite : str or dict
        A preset name, a ``.toml`` file or :func:`udbench.recipes.suites.load_suite`'s dict.
    data_dir : str, optional
        Raw-data folder.
    min_instances : int, default 24
        When the grid holds fewer instances, the seeds after the suite's largest are added
        (to every condition) until it holds at least this many.

    Returns
    -------
    list of TaskSpec
        In :func:`udbench.recipes.suites.suite_grid`'s order, added seeds last.

    Raises
    ------
    UdbenchError
        Not a classification suite; what :func:`~udbench.recipes.suites.suite_grid` refuses.
    """
    from udbench.recipes.suites import load_suite, suite_grid, suite_task_type

    cfg = load_suite(suite) if isinstance(suite, str) else dict(suite)
    if suite_task_type(cfg) != "classification":
        raise param_error("campaign classification", "suite", "be a classification suite", suite)
    specs = suite_grid(cfg, data_dir)
    seeds = sorted({int(s.seed) for s in specs})
    conditions = list({dataclasses.replace(s, seed=0): None for s in specs})
    extra: list[Any] = []
    seed = max(seeds) + 1
    while len(specs) + len(extra) < min_instances:
        extra += [dataclasses.replace(c, seed=seed) for c in conditions]
        seed += 1
    return specs + extra


def _sampler(spec: Any) -> dict[str, Any]:
    from udbench.priors.gp_classification import GPClassificationPrior

    return dict(GPClassificationPrior.presets[spec.fidelity])


# ---------------------------------------------------------------- gpc-check


@_single_threaded
def _check_work(
    spec: Any, work_dir: str, data_dir: str | None, generate: Generate | None
) -> dict[str, Any]:
    from udbench.priors import RHAT_THRESHOLD
    from udbench.tasks import Task
    from udbench.tasks.checks import mcmc_summary

    t0 = time.perf_counter()
    path, made = _ensure_task(spec, work_dir, data_dir, generate)
    seconds = time.perf_counter() - t0
    task = Task.load(path).verify()
    checks = {**task.diagnostics["checks"], **mcmc_summary(task.diagnostics)}
    rhat = checks.get("rhat_max")
    record = task.diagnostics.get("seed_replacement") or {}
    return {
        "task_id": spec.task_id,
        "dataset": spec.dataset,
        "noise": spec.noise,
        "coverage": spec.coverage,
        "seed": int(spec.seed),
        "checks": checks,
        "rhat_passed": rhat is not None and math.isfinite(rhat) and rhat <= RHAT_THRESHOLD,
        "seed_replacement": {
            "requested_seed": record.get("requested_seed"),
            "used_seed": record.get("used_seed"),
            "log": [
                {
                    "rejected": r.get("rejected"),
                    "replacement": r.get("replacement"),
                    "reason": r.get("reason"),
                }
                for r in record.get("log", [])
            ],
        },
        "generated": made,
        "generate_seconds": seconds if made else None,
        "task_file": path.name,
        "task_sha256": task.content_sha256,
    }


def check_units(
    specs: Sequence[Any],
    work_dir: str | Path,
    data_dir: str | None = None,
    *,
    generate: Generate | None = None,
) -> list[Unit]:
    """One ``gpc-check`` unit per task spec (module docstring); ``generate`` replaces
    :func:`udbench.tasks.generate_task` (tests)."""
    version = _version()
    return [
        Unit(
            unit_id=f"{CHECK_KIND}/{spec.task_id}",
            kind=CHECK_KIND,
            settings={
                "task_id": spec.task_id,
                "fidelity": str(spec.fidelity),
                "n_draws": int(spec.n_draws),
                "sampler": _sampler(spec),
            },
            numerics=version,
            work=functools.partial(_check_work, spec, str(work_dir), data_dir, generate),
            estimate_seconds=_CHECK_SECONDS,
        )
        for spec in specs
    ]


def expected_max_share_excess(
    n_points: int, shares: np.ndarray, n_rep: int = N_NULL_REPLICATES, seed: int = 0
) -> tuple[float, float]:
    """Mean and 95th percentile of (largest bin share − 1/bins) for independent ranks.

    ``n_points`` ranks fall independently into the bins with probabilities ``shares``
    (:func:`udbench.tasks.checks.sbc_expected_shares`: the rank of π* uniform on 0..D); the
    largest share of the multinomial counts, less 1/bins, by Monte Carlo over ``n_rep``
    replicates (seeded: the same figures on every machine).

    Raises
    ------
    UdbenchError
        ``n_points < 1``.
    """
    from udbench._seeding import make_rng

    if int(n_points) < 1:
        raise param_error("expected_max_share_excess", "n_points", "be >= 1", n_points)
    p = np.asarray(shares, dtype=np.float64)
    counts = make_rng("campaign-classification", "sbc-null", seed).multinomial(
        int(n_points), p / p.sum(), size=int(n_rep)
    )
    excess = counts.max(axis=1) / float(n_points) - 1.0 / p.size
    return float(excess.mean()), float(np.quantile(excess, 0.95))


def _pool(results: list[dict[str, Any]]) -> dict[str, Any]:
    from udbench.tasks.checks import sbc_expected_shares
    from udbench.tasks.pooling import pool_checks

    summaries = [r["checks"] for r in results]
    pooled = pool_checks(summaries)
    hist = np.asarray(pooled["sbc_hist"], dtype=np.float64)
    draws = {int(s["n_draws"]) for s in summaries if "n_draws" in s}
    shares = (
        sbc_expected_shares(draws.pop(), hist.size)
        if len(draws) == 1 and len(summaries) == sum("n_draws" in s for s in summaries)
        else np.full(hist.size, 1.0 / hist.size)
    )
    mean, p95 = expected_max_share_excess(int(hist.sum()), shares)
    passed = [bool(r["rhat_passed"]) for r in results]
    return {
        "n_instances": pooled["n_instances"],
        "n_points": pooled["n_points"],
        "coverage_90": pooled["coverage_90"],
        "coverage_90_ci": pooled["coverage_90_ci"],
        "coverage_90_expected": pooled["coverage_90_expected"],
        "coverage_90_p": pooled["coverage_90_p"],
        "sbc_hist": pooled["sbc_hist"],
        "sbc_max_share_excess": float(hist.max() / hist.sum() - 1.0 / hist.size),
        "sbc_max_share_excess_expected": mean,
        "sbc_max_share_excess_p95": p95,
        "sbc_max_bin_deviation": pooled["sbc_max_bin_deviation"],
        "mcse_var_median": pooled["mcse_var_median"],
        "mcse_var_p95": pooled["mcse_var_p95"],
        "corr_mean_fstar_median": pooled["corr_mean_fstar_median"],
        "rhat_max": pooled.get("rhat_max"),
        "rhat_pass_fraction": float(np.mean(passed)),
        "n_rhat_failed": len(passed) - sum(passed),
    }


def gpc_check_summary(
    records: str | Path, units: Sequence[Unit] | None = None
) -> tuple[dict[str, Any] | None, list[str]]:
    """The ``gpc-check`` figures pooled over the instances with records.

    Returns
    -------
    (summary, notes) : tuple
        ``summary`` (None without records): ``pooled`` and ``datasets`` (dataset → the same)
        each with ``n_instances, n_points``, ``coverage_90`` (pooled over every point) and
        ``coverage_90_ci`` (95 % percentile bootstrap over whole instances,
        :func:`udbench.tasks.pooling.pool_checks`), ``coverage_90_expected``,
        ``coverage_90_p``, ``sbc_hist`` (pooled 20-bin counts), ``sbc_max_share_excess``
        (largest bin share − 1/20) with ``sbc_max_share_excess_expected`` and ``_p95``
        (:func:`expected_max_share_excess` at that count), ``sbc_max_bin_deviation``,
        ``mcse_var_median, mcse_var_p95, corr_mean_fstar_median, rhat_max``,
        ``rhat_pass_fraction`` and ``n_rhat_failed``; and ``replaced`` (task id → used
        seed, reasons), ``cpu_hours``, ``wall_seconds_median``. ``notes``: records left out.
    """
    done, notes = current_records(records, CHECK_KIND, units, _version())
    if not done:
        return None, notes
    results = [r["result"] for r in done]
    by: dict[str, list[dict[str, Any]]] = {}
    for res in results:
        by.setdefault(res["dataset"], []).append(res)
    return {
        "pooled": _pool(results),
        "datasets": {ds: _pool(rs) for ds, rs in sorted(by.items())},
        "replaced": {
            r["task_id"]: {
                "used_seed": r["seed_replacement"]["used_seed"],
                "reasons": [e["reason"] for e in r["seed_replacement"]["log"]],
            }
            for r in results
            if r["seed_replacement"]["log"]
        },
        "cpu_hours": sum(float(r["cpu_seconds"]) for r in done) / 3600,
        "wall_seconds_median": float(np.median([float(r["wall_seconds"]) for r in done])),
    }, notes


# ---------------------------------------------------------------- clf-small cells


def _cell_work(
    spec: Any, method_spec: str, work_dir: str, data_dir: str | None, generate: Generate | None
) -> dict[str, Any]:
    from udbench._threads import cell_threads
    from udbench.campaigns._cells import cell_unit_result
    from udbench.evaluation.runner import classifiers_as_instances, plan_cells
    from udbench.methods.configs import resolve_methods

    with cell_threads():
        path, _ = _ensure_task(spec, work_dir, data_dir, generate)
    mc = resolve_methods(classifiers_as_instances([method_spec]))[0]
    cells, _ = plan_cells([path], [mc])
    return cell_unit_result(cells[0])[0]


def _cell_name(method_spec: str, mc: Any) -> str:
    """The method's name, plus its configuration hash when the spec has overrides."""
    return mc.name if method_spec.strip() == mc.name else f"{mc.name}+{mc.config_hash[:10]}"


def cell_units(
    specs: Sequence[Any],
    method_specs: Sequence[str],
    work_dir: str | Path,
    data_dir: str | None = None,
    *,
    suite_name: str = "clf-small",
    generate: Generate | None = None,
) -> list[Unit]:
    """One ``clf-small`` unit per (task spec, method spec), task-major (module docstring).

    ``method_specs`` are ``udbench run -m`` specs of classifiers; ``generate`` as in
    :func:`check_units`.

    Raises
    ------
    UdbenchError
        A spec that is not a classifier's, or that does not resolve.
    """
    from udbench.evaluation.runner import classifiers_as_instances
    from udbench.methods.configs import resolve_methods

    version = _version()
    configs = []
    for mspec in method_specs:
        mc = resolve_methods(classifiers_as_instances([mspec]))[0]
        if mc.task_type != "classification":
            raise param_error("campaign classification", "methods", "be classifiers", mspec)
        configs.append((mspec, mc))
    units = []
    for spec in specs:
        for mspec, mc in configs:
            units.append(
                Unit(
                    unit_id=f"{CELL_KIND}/{spec.task_id}/{_cell_name(mspec, mc)}",
                    kind=CELL_KIND,
                    settings={
                        "suite": suite_name,
                        "task_id": spec.task_id,
                        "fidelity": str(spec.fidelity),
                        "n_draws": int(spec.n_draws),
                        "sampler": _sampler(spec),
                        "method": mc.name,
                        "method_label": mc.label,
                        "method_spec": mspec,
                        "config": jsonable(mc.config),
                        "config_hash": mc.config_hash,
                    },
                    numerics=version,
                    work=functools.partial(
                        _cell_work, spec, mspec, str(work_dir), data_dir, generate
                    ),
                    estimate_seconds=CELL_SECONDS.get(mc.name),
                )
            )
    return units


def clf_small_summary(
    records: str | Path, units: Sequence[Unit] | None = None
) -> tuple[Any, list[str]]:
    """The classification leaderboard rebuilt from the cells' records.

    The rows of the done and failed cell records (current numerics, their unit's settings
    when ``units`` are given) form the results frame ``udbench run`` would have written, and
    :func:`udbench.evaluation.leaderboard.leaderboard` summarises it with its defaults (means
    with 95 % bootstrap intervals over instances, ranks by ρ(EU, EU*_risk); failed cells
    count in ``n_failed``).

    Returns
    -------
    (board, notes) : tuple
        ``board``: the leaderboard DataFrame (None without records); ``notes``: records
        left out.
    """
    import pandas as pd

    from udbench.evaluation.leaderboard import leaderboard

    rows, notes = cell_rows(records, units)
    if not rows:
        return None, notes
    return leaderboard(pd.DataFrame(rows)), notes


def cell_rows(
    records: str | Path, units: Sequence[Unit] | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """The results rows of the current cell records (done cells, then failed ones, each by
    unit id: the leaderboard's bootstrap follows row order) and the notes on the records
    left out (other numerics or settings; failed without a row)."""
    recs, notes = current_records(records, CELL_KIND, units, _version(), include_failed=True)
    return [r["result"]["row"] for r in recs], notes


# ---------------------------------------------------------------- the whole campaign


def campaign_units(
    parts: Sequence[str] = PARTS,
    *,
    work_dir: str | Path,
    data_dir: str | None = None,
    suite: str | dict[str, Any] = "clf-small",
    methods: Sequence[str] | None = None,
    generate: Generate | None = None,
    min_instances: int = MIN_INSTANCES,
) -> list[Unit]:
    """The units of the named ``parts`` of the classification campaign, in run order.

    Parameters
    ----------
    parts : sequence of str
        Some of :data:`PARTS`.
    work_dir : str or Path
        Folder for the task files (not committed).
    data_dir : str, optional
        Raw-data folder.
    suite : str or dict, default "clf-small"
        The classification suite whose instances and methods are run.
    methods : sequence of str, optional
        Method specs (default: the suite's, :func:`udbench.recipes.suites.method_specs`).
    generate : callable, optional
        Replaces :func:`udbench.tasks.generate_task` (tests).
    min_instances : int, default 24
        As in :func:`instance_specs`.

    Raises
    ------
    UdbenchError
        An unknown part; a suite that is not a classification one.
    """
    from udbench.recipes.suites import load_suite, method_specs

    for part in parts:
        check_choice("campaign classification", "parts", part, PARTS)
    cfg = load_suite(suite) if isinstance(suite, str) else dict(suite)
    specs = instance_specs(cfg, data_dir, min_instances)
    units: list[Unit] = []
    if "gpc-check" in parts:
        units += check_units(specs, work_dir, data_dir, generate=generate)
    if "clf-small" in parts:
        chosen = list(methods) if methods is not None else method_specs(cfg)
        units += cell_units(
            specs, chosen, work_dir, data_dir, suite_name=str(cfg.get("name")), generate=generate
        )
    return units
