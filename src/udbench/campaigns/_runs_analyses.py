"""The parts of the runs campaign's summary beyond the tuned leaderboard (issue 36, item 3):
what the tuner changed, Kendall's W across the factors and the proxies' agreement, each for
the untuned and the tuned run side by side, and what the whole campaign cost per method."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["changes_section", "cost_section", "stability_and_proxies_section"]


def changes_section(comparison: Any, tuned: pd.DataFrame, tuning: str | Path) -> str:
    """:func:`udbench.tuning.choices.changes_markdown` over the tuning records the tuned
    cells name (``tuned_record``: a ``udbench tune`` record, or the tuning campaign's)."""
    from udbench.analyses.tuned_compare import TUNED_SUFFIX
    from udbench.tuning.choices import changes_markdown, tuned_choices
    from udbench.tuning.records import read_tuned_record

    ids = {str(i) for i in tuned["tuned_record"].dropna()} if "tuned_record" in tuned else set()
    paths = [Path(tuning) / f"{i}.json" for i in sorted(ids)]
    choices = tuned_choices(read_tuned_record(p) for p in paths if p.is_file())
    labels = {  # the comparison's labels are the untuned ones
        str(lab).removesuffix(TUNED_SUFFIX): str(m)
        for lab, m in zip(tuned["method_label"], tuned["method"], strict=True)
    }
    return changes_markdown(comparison.table, choices, comparison.rank_by, labels)


def _interval(value: float, low: float, high: float, note: str = "") -> str:
    if not math.isfinite(value):
        return f"– ({note})" if note else "–"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def stability_and_proxies_section(
    untuned: pd.DataFrame, tuned: pd.DataFrame, *, n_resamples: int
) -> str:
    """Kendall's W across each factor's levels (:func:`udbench.analyses.tables.
    stability_table`) and each proxy's pooled Kendall's τ with the oracle ranking
    (:func:`udbench.analyses.proxies.proxy_agreement_table`), untuned beside tuned, on the
    rows of the compared methods (as ``udbench analyze`` computes them on each run).

    Parameters
    ----------
    untuned, tuned : DataFrame
        Long-format results rows of the methods compared, one frame per run.
    n_resamples : int
        Bootstrap replicates of the intervals.

    Returns
    -------
    str
        Two Markdown sections.
    """
    from udbench.analyses.proxies import proxy_agreement_table
    from udbench.analyses.tables import stability_table

    runs = {"untuned": untuned, "tuned": tuned}
    st = {p: stability_table(df, n_resamples=n_resamples) for p, df in runs.items()}
    px = {
        p: proxy_agreement_table(df, factors=(), n_resamples=n_resamples) for p, df in runs.items()
    }
    lines = [
        "\n## Ranking stability across the factors\n",
        "Kendall's W of the method ranking across each factor's levels (1: every level ranks "
        "the methods alike), with its 95 % bootstrap interval:\n",
        "| criterion | factor | W untuned | W tuned | methods |",
        "|---|---|---|---|---|",
    ]
    skipped: list[str] = []
    tuned_w = {(r["criterion"], r["factor"]): r for r in st["tuned"].to_dict("records")}
    for a in st["untuned"].to_dict("records"):
        b = tuned_w[(a["criterion"], a["factor"])]
        if not (math.isfinite(a["W"]) or math.isfinite(b["W"])):
            skipped.append(f"W of {a['criterion']} across {a['factor']}: {a['note'] or b['note']}")
            continue
        cells = [_interval(r["W"], r["W_low"], r["W_high"], r["note"]) for r in (a, b)]
        lines.append(
            f"| {a['criterion']} | {a['factor']} | {cells[0]} | {cells[1]} | {a['n_methods']} |"
        )
    lines += [
        "\n## Proxy agreement\n",
        "Kendall's τ between each label-free proxy's method ranking and the oracle's, pooled, "
        "with its 95 % bootstrap interval:\n",
        "| criterion | proxy | τ untuned | τ tuned |",
        "|---|---|---|---|",
    ]
    undefined: dict[tuple[str, str], list[str]] = {}
    tuned_tau = {(r["criterion"], r["proxy"]): r for r in px["tuned"].to_dict("records")}
    for a in px["untuned"].to_dict("records"):
        b = tuned_tau[(a["criterion"], a["proxy"])]
        if not (math.isfinite(a["tau"]) or math.isfinite(b["tau"])):
            key = (a["criterion"], a["note"] or b["note"])
            undefined.setdefault(key, []).append(str(a["proxy_label"]))
            continue
        cells = [_interval(r["tau"], r["tau_low"], r["tau_high"], r["note"]) for r in (a, b)]
        label = str(a["proxy_label"]).replace("|", "\\|")  # ρ(|err|, SD) in a table cell
        lines.append(f"| {a['criterion']} | {label} | {cells[0]} | {cells[1]} |")
    skipped += [f"τ of {c} for {', '.join(ps)}: {n}" for (c, n), ps in undefined.items()]
    if skipped:  # undefined in both runs: said once each, not as rows of dashes
        lines += ["", "Undefined in both runs:", *(f"- {n}" for n in dict.fromkeys(skipped))]
    return "\n".join(lines) + "\n"


def task_versions_section(records: str | Path, units: Any) -> tuple[str, dict[str, int]]:
    """The instances whose cells were run on more than one version of their task file.

    A task id names a grid point, not a file's content: a GP task generated on another
    machine can differ (on 2026-12-04, 80 airfoil and 30 qsar_fish instances of gp-small had
    cells made on two versions). The rows record ``task_sha256``; cells of one instance on
    different versions would be compared as if they were one task. A suite with reference
    task versions (:mod:`udbench.recipes.task_versions`, gp-small) has its other versions'
    records left out as stale before this section, so it finds instances only in a suite
    without one. Returns the page's section (empty when every instance has one version) and,
    per dataset, how many instances have several.
    """
    from udbench.campaigns.engine import current_records

    shas: dict[str, set[str]] = {}
    dataset: dict[str, str] = {}
    for part in ("untuned", "tuned"):  # the parts whose records hold a row (runs.ROW_PARTS)
        recs, _ = current_records(records, part, units, include_failed=True)
        for rec in recs:
            row = rec["result"]["row"]
            shas.setdefault(str(row.get("task_id")), set()).add(str(row.get("task_sha256")))
            dataset[str(row.get("task_id"))] = str(row.get("dataset"))
    mixed = sorted(t for t, s in shas.items() if len(s) > 1)
    per: dict[str, int] = {}
    for task in mixed:
        per[dataset[task]] = per.get(dataset[task], 0) + 1
    if not mixed:
        return "", per
    counts = ", ".join(f"{d} {n}" for d, n in sorted(per.items()))
    return (
        "\n## Instances run on more than one task version\n\n"
        f"**{len(mixed)} of {len(shas)} instances** ({counts}) have cells whose rows name "
        "different task files (`task_sha256`): the cells were made on machines whose task "
        "files for the same task id differ, and the tables above compare them as one "
        f"instance. First: `{mixed[0]}`.\n",
        per,
    )


def cost_section(
    records: str | Path,
    units: Any,
    tuning: str | Path | None,
) -> tuple[str, dict[str, dict[str, float]]]:
    """CPU-hours per method of the whole campaign (issue 36, "Performance"): its tuning
    sweeps (the records in ``tuning``, the suite's shipped folder, done or failed), its
    untuned, tuned and transfer units (the records of ``units`` in ``records``, done or
    failed: a failed unit's hours were spent too), and the total; the instances' oracle
    fits, shared by every method, on a line of their own.

    CPU seconds of one thread as each record gives them (``cpu_seconds``); a tuning sweep
    resumed from its journal adds the trials an earlier process finished where its record
    knows them (:func:`udbench.tuning._measured.sweep_cpu_seconds`), and its method's
    tuning figure is marked ``≥`` (a lower bound: an interrupted trial and an earlier
    process's overheads are not counted).

    Returns
    -------
    (markdown, hours) : tuple
        ``hours``: method -> {"tuning", "untuned", "tuned", "transfer", "total"} in CPU-hours.
    """
    from udbench.campaigns._runs_fits import ORACLE_FIT_KIND
    from udbench.campaigns.engine import load_done_records
    from udbench.tuning._measured import record_cpu_seconds, sweep_resumed
    from udbench.tuning.shipped import CAMPAIGN_KIND

    def spent(kind: str) -> list[dict[str, Any]]:
        recs, _ = load_done_records(records, kind, include_failed=True)
        if units is None:
            return recs
        ids = {u.unit_id for u in units if u.kind == kind}
        return [r for r in recs if r["unit_id"] in ids]

    parts = ("untuned", "tuned", "transfer")
    hours: dict[str, dict[str, float]] = {}
    for part in parts:
        for r in spent(part):
            method = str(r["unit_id"]).rsplit("/", 1)[-1]  # <part>/<task id>/<method>
            row = hours.setdefault(method, {})
            row[part] = row.get(part, 0.0) + (record_cpu_seconds(r) or 0.0) / 3600
    fits = spent(ORACLE_FIT_KIND)
    fit_hours = sum(record_cpu_seconds(r) or 0.0 for r in fits) / 3600
    lower: set[str] = set()
    sweeps: dict[str, int] = {}
    if tuning is not None:
        for r in load_done_records(tuning, CAMPAIGN_KIND, include_failed=True)[0]:
            m = str((r.get("settings") or {}).get("method"))
            if m not in hours:  # a method the runs do not hold (yet)
                continue
            cpu = record_cpu_seconds(r)  # the earlier processes' trials where known
            if cpu is None or sweep_resumed(r.get("result") or {}, r.get("wall_seconds"))[0]:
                lower.add(m)
            hours[m]["tuning"] = hours[m].get("tuning", 0.0) + (cpu or 0.0) / 3600
            sweeps[m] = sweeps.get(m, 0) + 1
    cols = ("tuning", *parts)
    lines = [
        "| method | tuning sweeps | CPU-h tuning | CPU-h untuned | CPU-h tuned "
        "| CPU-h transfer | CPU-h total |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in sorted(hours, key=lambda k: (-sum(hours[k].values()), k)):
        row = hours[m]
        row["total"] = sum(row.get(c, 0.0) for c in cols)
        tune = ("≥ " if m in lower else "") + f"{row.get('tuning', 0.0):.2f}"
        figures = " | ".join(f"{row.get(c, 0.0):.2f}" for c in parts)
        lines.append(f"| `{m}` | {sweeps.get(m, 0)} | {tune} | {figures} | {row['total']:.2f} |")
    total = sum(r["total"] for r in hours.values())
    notes = [
        "Per method, from the records: its tuning sweeps"
        + ("" if tuning is not None else " (no tuning folder given: 0)")
        + ", its untuned, tuned and transfer units, and the total, most costly first (failed "
        "units count: their hours were spent; a method still running counts what is done).",
        "A transfer figure includes the oracles' moments where the method's unit was the "
        "first on its machine to need them (then cached for the instance's other methods).",
    ]
    if lower:
        notes.append(
            "`≥`: a sweep resumed from its journal (a lower bound: its earlier processes' "
            "interrupted trials and overheads, and where its record does not know them, their "
            "finished trials, are not counted)."
        )
    md = (
        "\n## Cost (CPU-hours of one thread)\n\n"
        + " ".join(notes)
        + "\n\n"
        + "\n".join(lines)
        + f"\n\nAll methods: {total:.2f} CPU-h; the instances' oracle fits, shared by every "
        f"method: {fit_hours:.2f} CPU-h ({len(fits)} records).\n"
    )
    return md, hours
