"""Reading the MCMC campaign's records back (issue 34): the HBART validation record per
layout and the pooled multi-family checks, from the records alone.

Re-exported by :mod:`udbench.campaigns.mcmc`, whose units write these records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from udbench.campaigns.engine import load_done_records

__all__ = [
    "VALIDATION_DATASETS",
    "hbart_validation_records",
    "multi_family_table",
    "numerics_versions",
]

#: The datasets of the HBART warm-up validation (SPEC §7), in campaign order.
VALIDATION_DATASETS: tuple[str, ...] = ("kin8nm", "protein")


def numerics_versions() -> dict[str, int]:
    """``{family: numerics_version}`` of every prior family."""
    from udbench.priors import family_numerics_version, list_prior_families

    return {f: family_numerics_version(f) for f in list_prior_families()}


def _stuck(record: dict[str, Any]) -> bool:
    """Whether a record's chains look stuck (:func:`udbench.tasks.checks.stuck_chains`)."""
    from udbench.tasks.checks import stuck_chains

    m, chains = record["result"].get("mcse_var_median_rel"), record["settings"]["sampler"]
    return stuck_chains(m, chains.get("n_chains")) is not None  # test priors: no chains


def _combine(recs: list[dict[str, Any]]) -> dict[str, Any]:
    """:func:`~udbench.tasks.validation.combine_validation` of one layout's unit records."""
    from udbench.design import COVERAGES, NOISE_MODES
    from udbench.tasks.validation import combine_validation

    first = recs[0]["settings"]
    datasets = [d for d in VALIDATION_DATASETS if any(x["result"]["dataset"] == d for x in recs)]
    datasets += sorted({x["result"]["dataset"] for x in recs} - set(datasets))
    return combine_validation(
        "hbart",
        "standard",
        [x["result"] for x in recs],
        datasets=datasets,
        noise_modes=list(NOISE_MODES),
        coverages=list(COVERAGES),
        seeds=sorted({int(x["settings"]["seed"]) for x in recs}),
        warmup_factor=int(first["warmup_factor"]),
        n_draws=int(first["n_draws"]),
        max_train=first["max_train"],
        max_eval=first["max_eval"],
    )


def _without(recs: list[dict[str, Any]], task_ids: list[str]) -> dict[str, Any]:
    """The verdict of ``recs`` leaving out ``task_ids``: a sensitivity figure, not SPEC §7."""
    drop = set(task_ids)
    kept = [x for x in recs if str(x["settings"]["task_id"]) not in drop]
    try:
        sub = _combine(kept) if kept else None
    except Exception as err:  # e.g. no complete instance left: said, not hidden
        return {"left_out": task_ids, "error": str(err)}
    if sub is None:
        return {"left_out": task_ids, "error": "no record left"}
    keys = (
        "n_instances",
        "coverage_base",
        "coverage_base_ci",
        "coverage_change",
        "sd_change_median",
        "passed",
    )
    return {
        "left_out": task_ids,
        "passed": sub["passed"],
        "failures": sub["failures"],
        "protocol_issues": sub["protocol_issues"],
        "per_dataset": {d: {k: r[k] for k in keys} for d, r in sub["per_dataset"].items()},
        "pooled": {k: sub["pooled"][k] for k in keys if k != "passed"},
    }


def _add_mcse(instances: list[dict[str, Any]], recs: list[dict[str, Any]]) -> None:
    """Give each instance the largest relative MCSE of σ_f² over its runs (the run that
    :func:`udbench.tasks.checks.stuck_chains` would flag first) and the effective draws per
    chain it implies (ESS = 2/m² / chains; None without chains)."""
    worst: dict[str, dict[str, Any]] = {}
    for x in recs:
        m = x["result"].get("mcse_var_median_rel")
        key = str(x["settings"]["task_id"])
        have = worst.get(key)
        if m is not None and (have is None or m > have["result"]["mcse_var_median_rel"]):
            worst[key] = x
    from udbench.tasks.checks import mcse_implied_ess

    for inst in instances:
        w = worst.get(str(inst["task_id"]))
        m = None if w is None else w["result"]["mcse_var_median_rel"]
        chains = None if w is None else w["settings"]["sampler"].get("n_chains")
        ess = mcse_implied_ess(m)
        inst["mcse_var_median_rel"] = m
        inst["ess_per_chain"] = None if ess is None or not chains else ess / int(chains)


def hbart_validation_records(
    records: str | Path,
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The validation record of every HBART layout with a complete instance, from the units.

    Parameters
    ----------
    records : str or Path
        The MCMC campaign's records folder (``docs/validation/mcmc``).

    Returns
    -------
    (by_layout, notes) : tuple
        ``by_layout``: layout name -> the record of
        :func:`udbench.tasks.validation.combine_validation`, plus ``layout``, ``n_units``,
        ``cpu_hours``, ``cpu_minutes_per_instance``, ``numerics_version``, ``stuck_chains``
        (task ids of the instances any of whose runs :func:`udbench.tasks.checks.stuck_chains`
        flags; each of ``instances`` also gets the largest ``mcse_var_median_rel`` of its runs
        and the ``ess_per_chain`` it implies) and, where that list is not empty,
        ``without_stuck_chains``: the verdict, failures and per-dataset figures recomputed
        without those instances (a sensitivity figure for the open question of what to do
        with them; not the SPEC §7 verdict, which ``passed`` keeps). ``notes``: records left
        out, and layouts with no complete instance.
    """
    done, notes = load_done_records(
        records, "hbart-validation", {"hbart": numerics_versions()["hbart"]}
    )
    by: dict[str, list[dict[str, Any]]] = {}
    for r in done:
        by.setdefault(r["settings"]["layout"], []).append(r)
    out: dict[str, dict[str, Any]] = {}
    for layout, recs in by.items():
        runs: dict[str, set[str]] = {}
        for x in recs:
            runs.setdefault(str(x["settings"]["task_id"]), set()).add(str(x["settings"]["run"]))
        if not any({"base", "long", "floor"} <= r for r in runs.values()):  # just started
            notes.append(f"layout {layout}: {len(recs)} record(s), no instance with all 3 runs yet")
            continue
        try:
            record = _combine(recs)
        except Exception as err:  # e.g. records of mixed protocols: named, not hidden
            notes.append(f"layout {layout}: {err}")
            continue
        cpu_h = sum(float(x["cpu_seconds"]) for x in recs) / 3600
        record.update(layout=layout, n_units=len(recs), cpu_hours=cpu_h)
        record["numerics_version"] = numerics_versions()["hbart"]
        record["stuck_chains"] = sorted(  # udbench check's warning, per instance
            {str(x["settings"]["task_id"]) for x in recs if _stuck(x)}
        )
        if record["stuck_chains"]:
            record["without_stuck_chains"] = _without(recs, record["stuck_chains"])
        _add_mcse(record["instances"], recs)
        base_cpu = [float(x["cpu_seconds"]) for x in recs if x["settings"]["run"] == "base"]
        record["cpu_minutes_per_instance"] = float(np.mean(base_cpu)) / 60 if base_cpu else None
        out[layout] = record
    return out, notes


def multi_family_table(
    records: str | Path, kind: str = "multi-family"
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Pooled SPEC §7 checks per family from the records of generated tasks
    (:func:`udbench.tasks.checks.generation_record`).

    Parameters
    ----------
    records : str or Path
        The MCMC campaign's records folder (``docs/validation/mcmc``), or a runs campaign's
        (``docs/validation/runs/<suite>``, with ``kind="generate"``).
    kind : str, default "multi-family"
        The records' unit kind: ``"multi-family"`` (MCMC campaign) or ``"generate"`` (the
        runs campaign's generation part).

    Returns
    -------
    (by_family, notes) : tuple
        ``by_family``: family -> :func:`udbench.tasks.pooling.pool_checks` of its instances,
        plus ``replaced`` (task id -> seed used and reasons, for instances whose seed was
        replaced) and ``cpu_hours``.
    """
    from udbench.tasks.pooling import pool_checks

    done, notes = load_done_records(records, kind, numerics_versions())
    by: dict[str, list[dict[str, Any]]] = {}
    for r in done:
        by.setdefault(r["result"]["family"], []).append(r)
    out: dict[str, dict[str, Any]] = {}
    for family, recs in by.items():
        summaries = [{**x["result"]["checks"], **x["result"]["mcmc"]} for x in recs]
        pooled = pool_checks(summaries)
        pooled["replaced"] = {
            x["result"]["task_id"]: {
                "used_seed": x["result"]["seed_replacement"].get("used_seed"),
                "reasons": [e.get("reason") for e in x["result"]["seed_replacement"]["log"]],
            }
            for x in recs
            if x["result"]["seed_replacement"].get("log")
        }
        pooled["cpu_hours"] = sum(float(x["cpu_seconds"]) for x in recs) / 3600
        out[family] = pooled
    return out, notes
