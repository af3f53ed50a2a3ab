"""The suite-run campaign (issue 36, items 3–4): a regression suite's cells, with default and
with tuned configurations, as resumable units.

A ``generate`` part of one unit per instance, then three parts of one unit per (instance,
method) cell of the suite (default ``gp-small``: 240 instances × 19 methods), run
**method-major** (cheapest method first; a method's untuned cells, its tuned ones, then their
``transfer`` units), so the tuned leaderboard grows one complete method at a time:

``generate``
    For an instance whose reference posterior is sampled by MCMC (HBART, BNN truths:
    minutes per instance), its task file, made in the work folder where the cells read it
    (or found there), and its SPEC §7 checks (:func:`udbench.tasks.checks.generation_record`,
    pooled per family by :func:`generation_table`) with the file's numbers checksum: generated
    and checked once, before any cell needs it. An exact (GP) truth's file takes seconds and
    is made by the instance's first cell, as it always was (gp-small has no such units).
``untuned``
    The cell with the suite's method configuration (``udbench suite``'s defaults).
``tuned``
    The cell with the configuration of the suite's shipped tuning record of the cell's
    condition (:mod:`udbench.tuning.shipped`, made by ``udbench campaign run tuning``): the
    configuration ``udbench run --tuned <suite>`` uses, labelled ``<label>[tuned]``. A
    (method, condition) without a usable record (not tuned yet, its sweep failed, or stale:
    :func:`udbench.tuning.records.shipped_staleness`) has no units yet; it is listed by
    :func:`udbench.campaigns._runs_tuned.tuned_configurations` as waiting, and a later run,
    after the tuning campaign has committed the record, adds them. The record's tuned values
    are among the unit's settings, so a re-tuned record makes its cells stale.
``transfer``
    The tuned cell's predictions scored under alternative oracles and losses
    (:mod:`udbench.campaigns._runs_transfer`; issue 36, item 4). With the campaign's records
    folder, also one ``oracle-fit`` unit per (instance, ``gp:KERNEL`` oracle), before the
    instance's first transfer unit: the fit all its methods are scored against.

A unit evaluates its cell exactly as ``udbench run`` does
(:func:`udbench.evaluation.cell.evaluate_cell` on the instance's task file, generated into
``WORK/<family>-v<N>/tasks``, the tuning campaign's folder layout, or reused there; the same
seed, :func:`udbench.evaluation.runner.method_seed`) and records the cell's results row as
JSON. The per-point predictions (needed by ``udbench transfer``) are big artefacts: they are
written to ``WORK/predictions/<part>/<task id>/<method>.parquet``, not into the record.
:func:`export_results` writes both parts as the results folders ``udbench run`` would have
written (with the predictions found in the work folder), and :func:`runs_summary` compares
the methods complete in both parts with :func:`udbench.analyses.tuned_compare.
tuned_vs_untuned`.

Numerics versions: a unit depends on its task family's prior numerics
(:func:`udbench.priors.family_numerics_version`); a cell's settings hold its configuration and
its hash (a changed default makes the untuned cells stale).
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from udbench._validation import check_choice, param_error
from udbench.campaigns._mcmc_costs import MULTI_SECONDS
from udbench.campaigns._runs_fits import ORACLE_FIT_KIND, fit_check, fit_units, fits_kernel
from udbench.campaigns._runs_transfer import (
    TRANSFER_LOSSES,
    TRANSFER_ORACLES,
    TRANSFER_PART,
    predictions_path,
    transfer_summary,
    transfer_unit,
)
from udbench.campaigns._runs_tuned import tuned_configurations
from udbench.campaigns._runs_versions import _numerics, all_checks, task_version_check
from udbench.campaigns.engine import Unit, current_records, jsonable

__all__ = [
    "GENERATE_PART",
    "KINDS",
    "ORACLE_FIT_KIND",
    "PARTS",
    "ROW_PARTS",
    "TRANSFER_LOSSES",
    "TRANSFER_ORACLES",
    "campaign_units",
    "export_results",
    "generate_units",
    "generation_table",
    "instance_specs",
    "predictions_path",
    "runs_summary",
    "transfer_summary",
    "tuned_configurations",
    "waiting_cells",
]

#: The part that generates and checks the suite's task files (one unit per instance, first).
GENERATE_PART = "generate"
#: The parts of the campaign (generation, then per method, in this order).
PARTS: tuple[str, ...] = (GENERATE_PART, "untuned", "tuned", "transfer")
#: Every kind of unit the parts make: the ``transfer`` part also makes ``oracle-fit`` units.
KINDS: tuple[str, ...] = (*PARTS, ORACLE_FIT_KIND)
#: The parts whose records hold a results row (one cell each).
ROW_PARTS: tuple[str, ...] = ("untuned", "tuned")

Generate = Callable[[Any, str | None], Any]


def instance_specs(
    suite: str | dict[str, Any] = "gp-small", data_dir: str | None = None
) -> list[Any]:
    """The task specs of a regression suite's grid (:func:`udbench.recipes.suites.suite_grid`).

    Raises
    ------
    UdbenchError
        Not a regression suite; what ``suite_grid`` refuses.
    """
    from udbench.recipes.suites import load_suite, suite_grid, suite_task_type

    cfg = load_suite(suite) if isinstance(suite, str) else dict(suite)
    if suite_task_type(cfg) != "regression":
        from udbench.recipes.suites import SUITES

        ours = [n for n in SUITES if suite_task_type(load_suite(n)) == "regression"]
        raise param_error(
            "campaign runs", "suite", f"be a regression suite ({', '.join(ours)})", cfg.get("name")
        )
    return suite_grid(cfg, data_dir)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cell_work(
    spec: Any,
    mc: Any,
    extra: dict[str, Any],
    part: str,
    work_dir: str,
    data_dir: str | None,
    generate: Generate | None,
    suite: dict[str, Any],
) -> dict[str, Any]:
    from udbench.campaigns._cells import cell_unit_result
    from udbench.campaigns._runs_versions import ready_task_file
    from udbench.evaluation.runner import plan_cells

    path, arrays = ready_task_file(spec, work_dir, data_dir, generate, suite)
    cells, _ = plan_cells([path], [mc], configure=lambda _spec, _mc: (mc, dict(extra)))
    out = predictions_path(work_dir, part, spec.task_id, mc.name, mc.config_hash)
    out.unlink(missing_ok=True)  # a failed redo leaves no stale predictions
    result, predictions = cell_unit_result(cells[0], keep_predictions=True)
    sha = None
    if predictions is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        predictions.to_parquet(tmp, index=False)
        tmp.replace(out)
        sha = _sha256(out)
    return {**result, "predictions_sha256": sha, "task_arrays_sha256": arrays}


def _generate_work(
    spec: Any,
    work_dir: str,
    data_dir: str | None,
    generate: Generate | None,
    suite: dict[str, Any],
) -> dict[str, Any]:
    from udbench.campaigns._runs_versions import ready_task_file
    from udbench.tasks import Task
    from udbench.tasks.checks import generation_record

    path, arrays = ready_task_file(spec, work_dir, data_dir, generate, suite)
    return {**generation_record(Task.load(path)), "task_arrays_sha256": arrays}


#: The dataset whose measured generation seconds (the MCMC campaign's multi-family records,
#: :data:`udbench.campaigns._mcmc_costs.MULTI_SECONDS`) a generate unit's estimate scales.
_MEASURED_ON = "concrete"


def _generate_seconds(spec: Any) -> float | None:
    """Projected CPU seconds of a generate unit: the family's measured seconds on concrete
    times the ratio of training sizes (HBART and BNN sweeps are linear in n: kin8nm/concrete
    is 9.3 and 7.6 in those records for a 9.0 ratio of n); None when unmeasured."""
    from udbench.data import get_dataset_spec

    base = MULTI_SECONDS.get(spec.family, {}).get(_MEASURED_ON)
    try:
        n = int(get_dataset_spec(spec.dataset).n_train or 0)
        n_ref = int(get_dataset_spec(_MEASURED_ON).n_train or 0)
    except Exception:
        return None
    return None if base is None or n <= 0 or n_ref <= 0 else base * n / n_ref


def generate_units(
    specs: Sequence[Any],
    where: tuple[str, str | None, Generate | None, dict[str, Any]],
) -> list[Unit]:
    """One ``generate`` unit per instance of an MCMC family (module docstring), in the grid's
    order; none for the others.

    Parameters
    ----------
    specs : sequence of TaskSpec
        The suite's instances.
    where : tuple
        ``(work_dir, data_dir, generate, suite)`` as the cells take them.
    """
    from udbench.priors import MCMC_FAMILIES

    suite = where[3]
    units = []
    for spec in (s for s in specs if s.family in MCMC_FAMILIES):
        estimate = _generate_seconds(spec)
        units.append(
            Unit(
                unit_id=f"{GENERATE_PART}/{spec.task_id}",
                kind=GENERATE_PART,
                settings={
                    "suite": str(suite.get("name")),
                    "part": GENERATE_PART,
                    "task_id": spec.task_id,
                    "fidelity": str(spec.fidelity),
                    "n_draws": int(spec.n_draws),
                },
                numerics=_numerics(spec.family),
                work=functools.partial(_generate_work, spec, *where),
                estimate_seconds=estimate,
                estimate_note=None if estimate else "no measured generation of its family",
                accepts=task_version_check(suite, spec),
            )
        )
    return units


def generation_table(records: str | Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Pooled SPEC §7 checks per family of a suite's ``generate`` records
    (:func:`udbench.campaigns._mcmc_tables.multi_family_table` with ``kind="generate"``).

    Parameters
    ----------
    records : str or Path
        The suite's runs-campaign records folder (``docs/validation/runs/<suite>``).

    Returns
    -------
    (by_family, notes) : tuple
        As :func:`~udbench.campaigns._mcmc_tables.multi_family_table`.
    """
    from udbench.campaigns._mcmc_tables import multi_family_table

    return multi_family_table(records, kind=GENERATE_PART)


def waiting_cells(
    suite: str = "gp-small",
    methods: Sequence[str] | None = None,
    data_dir: str | None = None,
    records: str | Path | None = None,
) -> list[str]:
    """Why some ``tuned`` cells have no units yet: per method, the conditions without a usable
    shipped record (:func:`udbench.campaigns._runs_tuned.tuned_configurations`)."""
    from udbench.methods.configs import resolve_methods
    from udbench.recipes.suites import load_suite, method_specs

    cfg = load_suite(suite)
    configs = resolve_methods(list(methods) if methods is not None else method_specs(cfg))
    return tuned_configurations(suite, configs, instance_specs(cfg, data_dir), records)[1]


def _seconds(method: str, dataset: str, table: Any) -> float | None:
    from udbench.data import get_dataset_spec

    try:
        spec = get_dataset_spec(dataset)
        n, points = int(spec.n_train or 0), int(spec.n_eval or 0)
    except Exception:
        return None
    per = table.method_seconds(method, n, points) if n > 0 and points > 0 else None
    return None if per is None else float(per)


def _unit_names(configs: Sequence[Any], suite_configs: Sequence[Any]) -> dict[str, str]:
    """Config hash -> the name in its unit ids: the method's name for the suite's own
    configuration of it, ``<method>+<hash[:10]>`` for any other (so two specs of one method
    never share records)."""
    ours = {mc.name: mc.config_hash for mc in suite_configs}
    return {  # resolve_methods keeps one configuration per hash
        mc.config_hash: mc.name
        if ours.get(mc.name) == mc.config_hash
        else f"{mc.name}+{mc.config_hash[:10]}"
        for mc in configs
    }


def campaign_units(
    parts: Sequence[str] = PARTS,
    *,
    work_dir: str | Path,
    data_dir: str | None = None,
    suite: str | dict[str, Any] = "gp-small",
    methods: Sequence[str] | None = None,
    records: str | Path | None = None,
    generate: Generate | None = None,
    transfer_oracles: Sequence[str] = TRANSFER_ORACLES,
    campaign_records: str | Path | None = None,
) -> list[Unit]:
    """The units of the named ``parts``, method-major (module docstring).

    Parameters
    ----------
    parts : sequence of str
        Some of :data:`PARTS`.
    work_dir : str or Path
        Folder for the task files and predictions (not committed).
    data_dir : str, optional
        Raw-data folder.
    suite : str or dict, default "gp-small"
        A preset regression suite (its tuned cells use its shipped records), or
        :func:`udbench.recipes.suites.load_suite`'s dict of one (with ``records``).
    methods : sequence of str, optional
        Method specs (default: the suite's, :func:`udbench.recipes.suites.method_specs`).
        A spec that is not the suite's configuration of its method has unit ids of its own
        (``<method>+<config hash[:10]>``), so it never shares records with the suite's.
    records : str or Path, optional
        The tuning records of the ``tuned`` part (default: the suite's shipped records).
    generate : callable, optional
        Replaces :func:`udbench.tasks.generate_task` (tests).
    transfer_oracles : sequence of str, default :data:`TRANSFER_ORACLES`
        The alternative oracles of the ``transfer`` part (:func:`udbench.evaluation.transfer.
        parse_oracle` specs; among its units' settings).
    campaign_records : str or Path, optional
        The campaign's own records folder (``udbench campaign run runs`` passes it). With it,
        the ``transfer`` part has an ``oracle-fit`` unit
        (:data:`udbench.campaigns._runs_fits.ORACLE_FIT_KIND`) per
        (instance, ``gp:KERNEL`` oracle), which the instance's transfer units require and
        whose committed fit they condition on (:mod:`udbench.campaigns._runs_transfer`,
        "One fit per (instance, oracle)"); without it, each transfer unit uses this
        machine's fit.

    Raises
    ------
    UdbenchError
        An unknown part; a suite that is not a regression one; a spec that does not resolve.
    """
    from udbench.methods.configs import resolve_methods
    from udbench.recipes.suites import load_suite, method_specs
    from udbench.tuning.calibration import load_calibration
    from udbench.tuning.records import Condition

    for part in parts:
        check_choice("campaign runs", "parts", part, PARTS)
    cfg = load_suite(suite) if isinstance(suite, str) else dict(suite)
    specs = instance_specs(cfg, data_dir)
    suite_configs = resolve_methods(method_specs(cfg))
    configs = suite_configs if methods is None else resolve_methods(list(methods))
    names = _unit_names(configs, suite_configs)
    chosen: dict[tuple[str, str], tuple[Any, dict[str, Any]]] = {}
    if "tuned" in parts or TRANSFER_PART in parts:
        chosen, _ = tuned_configurations(str(cfg.get("name")), configs, specs, records)
    try:
        table = load_calibration()
    except Exception:  # no table: the status table says the units are unmeasured
        table = None
    seconds = {
        (mc.name, d): (None if table is None else _seconds(mc.name, d, table))
        for mc in configs
        for d in {s.dataset for s in specs}
    }
    order = sorted(
        configs, key=lambda mc: sum(v or 0.0 for (m, _), v in seconds.items() if m == mc.name)
    )
    units: list[Unit] = []
    tuned_of: dict[str, Unit] = {}  # a transfer unit's tuned cell: its requirement and redo
    fits_of: dict[str, tuple[Unit, ...]] = {}  # an instance's oracle-fit units
    fit_records = None if campaign_records is None else str(campaign_records)
    fitted = [o for o in transfer_oracles if fits_kernel(o)] if fit_records else []
    built = (set(parts) - {GENERATE_PART}) | ({"tuned"} if TRANSFER_PART in parts else set())
    where = (str(work_dir), data_dir, generate, cfg)
    if GENERATE_PART in parts:
        units += generate_units(specs, where)
    for mc in order:
        for part in (p for p in PARTS if p in built):
            for spec in specs:
                cell_mc, extra = mc, dict[str, Any]()
                settings: dict[str, Any] = {
                    "suite": str(cfg.get("name")),
                    "part": part,
                    "task_id": spec.task_id,
                    "fidelity": str(spec.fidelity),
                    "n_draws": int(spec.n_draws),
                    "method": mc.name,
                }
                if part in ("tuned", TRANSFER_PART):
                    hit = chosen.get((mc.config_hash, Condition.of(spec).key))
                    if hit is None:
                        continue
                    cell_mc, extra = hit
                    settings["tuned_record"] = extra["tuned_record"]
                settings.update(
                    method_label=cell_mc.label,
                    config=jsonable(cell_mc.params),
                    config_hash=cell_mc.config_hash,
                )
                estimate = seconds[(mc.name, spec.dataset)]
                work = functools.partial(_cell_work, spec, cell_mc, extra, part, *where)
                key = f"{spec.task_id}/{names[mc.config_hash]}"
                tuned = tuned_of[key] if part == TRANSFER_PART else None  # built before
                fits: tuple[Unit, ...] = ()
                if tuned is not None:
                    more, work, estimate = transfer_unit(
                        spec,
                        cell_mc,
                        transfer_oracles,
                        tuned,
                        str(work_dir),
                        data_dir,
                        cfg,
                        fit_records,
                    )
                    settings.update(more)
                    if fitted and spec.task_id not in fits_of:  # before its first transfer
                        fits_of[spec.task_id] = fit_units(spec, fitted, where)
                        units.extend(fits_of[spec.task_id])
                    fits = fits_of.get(spec.task_id, ())
                unit = Unit(
                    unit_id=f"{part}/{key}",
                    kind=part,
                    settings=settings,
                    numerics=_numerics(spec.family),
                    work=work,
                    estimate_seconds=estimate,
                    estimate_note=None if estimate else "no calibration entry",
                    requires=() if tuned is None else (tuned, *fits),
                    accepts=all_checks(
                        task_version_check(cfg, spec),
                        fit_check(fit_records, fits) if tuned else None,
                    ),
                )
                tuned_of.update({key: unit} if part == "tuned" else {})
                units.append(unit)
    kinds = set(parts) | ({ORACLE_FIT_KIND} if TRANSFER_PART in parts else set())
    return [u for u in units if u.kind in kinds]


def runs_summary(
    records: str | Path,
    units: Sequence[Unit] | None = None,
    *,
    n_resamples: int = 2000,
    tuning: str | Path | None = None,
) -> dict[str, Any]:
    """Progress per method and part, and the tuned leaderboard of the methods complete in both.

    Parameters
    ----------
    records : str or Path
        The campaign's records folder.
    units : sequence of Unit, optional
        The campaign's units: records with other settings or numerics, and records of
        units not among them, are left out (:func:`udbench.campaigns.engine.current_records`),
        and a method is complete when every one of its units has a current record and it has
        as many tuned as untuned units (no condition waits for a tuning record). Without
        units every record counts, stale ones included, and a method is complete when its
        cells cover the same instances in both parts.
    n_resamples : int, default 2000
        Bootstrap replicates of the intervals.
    tuning : str or Path, optional
        The tuning records folder the tuned cells used (the suite's shipped one): adds, per
        method compared, what the tuner changed most from the default in the records those
        cells name (:func:`udbench.tuning.choices.largest_changes`; issue 36, item 3).

    Returns
    -------
    dict
        ``progress`` (unit name, i.e. the method, or ``<method>+<hash[:10]>`` for a
        configuration other than the suite's -> part -> {"done", "failed", "units",
        "cpu_hours"}),
        ``complete`` (methods in the comparison), ``cost_hours`` (method -> CPU-hours of
        its tuning, untuned, tuned and transfer units and their total:
        :func:`udbench.campaigns._runs_analyses.cost_section`), ``comparison``
        (:class:`~udbench.analyses.tuned_compare.TunedComparison` or None), ``notes`` and
        ``markdown``.
    """
    import pandas as pd

    from udbench.analyses.tuned_compare import tuned_vs_untuned
    from udbench.campaigns._runs_analyses import (
        changes_section,
        cost_section,
        stability_and_proxies_section,
    )

    frames: dict[str, pd.DataFrame] = {}
    notes: list[str] = []
    cpu: dict[tuple[str, str], float] = {}
    for part in ROW_PARTS:
        recs, n = current_records(records, part, units, include_failed=True)
        notes += [x for x in n if x not in notes]  # an unreadable file is noted once
        # "_unit": the unit's method name (the method, or <method>+<hash> for a configuration
        # other than the suite's), so two configurations of one method are never pooled
        frames[part] = pd.DataFrame(
            [{**r["result"]["row"], "_unit": _unit_name(r["unit_id"])} for r in recs]
        )
        for r in recs:  # the records summarised, stale ones left out
            key = (_unit_name(r["unit_id"]), part)
            cpu[key] = cpu.get(key, 0.0) + float(r.get("cpu_seconds") or 0.0) / 3600
    progress: dict[str, dict[str, dict[str, Any]]] = {}
    for part, df in frames.items():
        for m in [] if df.empty else sorted(df["_unit"].unique()):
            sub = df[df["_unit"] == m]
            progress.setdefault(m, {})[part] = {
                "done": int((sub["status"] == "ok").sum()),
                "failed": int((sub["status"] != "ok").sum()),
            }
    if units is not None:
        for u in units:
            if u.kind in (ORACLE_FIT_KIND, GENERATE_PART):  # an instance's, not a method's
                continue
            entry = progress.setdefault(_unit_name(u.unit_id), {}).setdefault(
                u.kind, {"done": 0, "failed": 0}
            )
            entry["units"] = entry.get("units", 0) + 1
    for m, parts in progress.items():
        for part, entry in parts.items():
            entry["cpu_hours"] = round(cpu.get((m, part), 0.0), 4)
    complete = []
    for m, parts in sorted(progress.items()):
        a, b = parts.get("untuned"), parts.get("tuned")
        if not a or not b or a["failed"] or b["failed"] or not a["done"]:
            continue
        # every unit done, and as many tuned as untuned units: no condition waits for a
        # tuning record, so both parts cover the same instances
        if units is not None and not (a["done"] == a.get("units") == b["done"] == b.get("units")):
            continue
        if units is None:
            ids = [set(frames[p].loc[frames[p]["_unit"] == m, "task_id"]) for p in ROW_PARTS]
            if ids[0] != ids[1]:
                continue
        complete.append(m)
    comparison = None
    if complete:
        pick = {
            p: frames[p][frames[p]["_unit"].isin(complete)].drop(columns="_unit") for p in ROW_PARTS
        }
        comparison = tuned_vs_untuned(pick["untuned"], pick["tuned"], n_resamples=n_resamples)
    lines = [
        "| method | untuned done | tuned done | CPU-h untuned | CPU-h tuned |",
        "|---|---|---|---|---|",
    ]
    for m, parts in sorted(progress.items()):
        cells, hours = [], []
        for part in ROW_PARTS:
            e = parts.get(part, {})
            total = e.get("units")
            cells.append(
                f"{e.get('done', 0)}"
                + (f" / {total}" if total is not None else "")
                + (f" ({e['failed']} failed)" if e.get("failed") else "")
            )
            hours.append(f"{e.get('cpu_hours', 0.0):.2f}")
        lines.append(f"| `{m}` | {cells[0]} | {cells[1]} | {hours[0]} | {hours[1]} |")
    md = "## Progress\n\n" + "\n".join(lines) + "\n"
    if comparison is not None:
        md += (
            f"\n## Tuned against untuned (the {len(complete)} method(s) complete in both)\n\n"
            + comparison.markdown()
            + "\n"
        )
        if tuning is not None:
            md += changes_section(comparison, pick["tuned"], tuning)
        md += stability_and_proxies_section(pick["untuned"], pick["tuned"], n_resamples=n_resamples)
    else:
        md += "\nNo method is complete in both parts yet: no comparison.\n"
    cost_md, cost = cost_section(records, units, tuning)
    md += cost_md
    if notes:
        md += "\n## Records left out\n\n" + "\n".join(f"- {n}" for n in notes[:50]) + "\n"
        if len(notes) > 50:
            md += f"- … ({len(notes)} in all)\n"
    return {
        "progress": progress,
        "complete": complete,
        "comparison": comparison,
        "notes": notes,
        "cost_hours": cost,
        "markdown": md,
    }


def _unit_name(unit_id: str) -> str:
    """The method part of a unit id ``<part>/<task id>/<name>``."""
    return unit_id.rsplit("/", 1)[-1]


def _copy_tuning_records(tuning: str | Path, ids: set[str], folder: Path) -> None:
    """Copy the tuning records ``<method>/<condition>`` named in ``ids`` from ``tuning`` to
    ``folder`` (``udbench run --tuned`` keeps the records it used in ``OUT/tuned``)."""
    from udbench.tuning.records import read_tuned_record, write_record

    for rid in sorted(i for i in ids if i and i != "None"):
        path = Path(tuning) / f"{rid}.json"
        if path.is_file():
            rec = read_tuned_record(path)
            rec.pop("_campaign", None)
            write_record(folder, rec)


def export_results(
    records: str | Path,
    out: str | Path,
    work_dir: str | Path,
    units: Sequence[Unit] | None = None,
    *,
    tuning: str | Path | None = None,
) -> dict[str, Any]:
    """Write each part's rows as the results folder ``udbench run`` would have written.

    ``OUT/untuned`` and ``OUT/tuned`` (:class:`udbench.evaluation.store.ResultsStore`), with
    each ok cell's per-point predictions where the work folder has the very file its record
    names (its checksum; so ``udbench transfer`` can rescore them), for ``udbench
    leaderboard``, ``analyze``, ``report`` and ``transfer``. With ``tuning`` (the tuning records
    the tuned cells used, e.g. the suite's shipped folder) they are copied to
    ``OUT/tuned/tuned`` as ``udbench run --tuned`` does. Without ``units`` every record counts
    (stale ones included): pass the campaign's units.

    Returns
    -------
    dict
        Per part: ``rows`` written and ``without_predictions`` (cells whose predictions are
        not in ``work_dir``: made on another machine); and ``notes`` (records left out).

    Raises
    ------
    UdbenchError
        ``OUT/<part>`` already holds results; no record holds a row.
    """
    import pandas as pd

    from udbench.evaluation.store import ResultsStore

    summary: dict[str, Any] = {"notes": []}
    stores = {p: ResultsStore(Path(out) / p) for p in ROW_PARTS}
    for part, store in stores.items():
        if store.has_results:
            raise param_error(
                "export_results",
                "out",
                "be a folder without results in untuned/ and tuned/",
                str(Path(out) / part),
            )
    total = 0
    for part, store in stores.items():
        recs, notes = current_records(records, part, units, include_failed=True)
        summary["notes"] += [x for x in notes if x not in summary["notes"]]
        missing = 0
        for rec in recs:
            row, res = rec["result"]["row"], rec["result"]
            path = predictions_path(
                work_dir, part, row["task_id"], row["method"], row["config_hash"]
            )
            # only an ok cell's own predictions: the checksum its record holds
            ok = row["status"] == "ok" and path.is_file()
            preds = None
            if ok and res.get("predictions_sha256") == _sha256(path):
                preds = pd.read_parquet(path)
            missing += preds is None and row["status"] == "ok"
            store.write_cell(row, preds)
        if recs:
            store.compact()
        if part == "tuned" and tuning is not None:  # the configurations, as run --tuned keeps them
            _copy_tuning_records(
                tuning,
                {str(r["result"]["row"].get("tuned_record")) for r in recs},
                store.root / "tuned",
            )
        summary[part] = {"rows": len(recs), "without_predictions": int(missing)}
        total += len(recs)
    if not total:
        raise param_error(
            "export_results", "records", "hold cell records with a results row", str(records)
        )
    return summary
