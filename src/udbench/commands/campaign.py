"""``udbench campaign``: long work run as resumable units with committed records.

``run`` does every unit without a valid record (resumable, one writer per unit),
``status`` counts done / stale / failed / missing units and projects the CPU-hours left, and
``summarise`` rebuilds the figures and verdicts from the records alone (and, with
``--write``, the generated documentation page and the preset validation records).
See docs/campaigns.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from udbench._validation import param_error
from udbench.commands._campaign_checks import (
    check_records,
    check_run_limits,
    check_work,
    download_note,
    select_units,
)
from udbench.commands._campaign_estimates import (
    SIBLING_NOTE,
    _estimate,
    _hours_left,
    _shape_means,
    estimate_ratios,
    wall_projection,
)
from udbench.commands._campaign_help import (
    _ONLY_HELP,
    _PRUNER_HELP,
    _RECORDS_HELP,
    _SUITE_HELP,
    _TRIALS_HELP,
    _TUNE_METHODS_HELP,
    _UNIT_TIMEOUT_HELP,
    _WORK_HELP,
    _WORKERS_HELP,
)
from udbench.commands._campaign_runs import _shown, summarise_classification
from udbench.commands._campaign_workers import WORKER_OPTIONS as _WORKER_OPTIONS
from udbench.commands._campaign_workers import start_workers, watch_parent
from udbench.commands._console import make_console
from udbench.commands._options import DATA_DIR_HELP, check_data_dir, parse_choice_list
from udbench.tuning._measured import record_cpu_seconds

campaign_app = typer.Typer(
    name="campaign",
    help=(
        "Long work (validations, sweeps) as resumable units, each leaving a small record to "
        "commit: run, status, summarise."
    ),
    no_args_is_help=True,
)

_CAMPAIGNS = ("mcmc", "tuning", "classification", "runs")


def _tuning_only(campaign: str, pruner: str | None, trials: int | None) -> tuple[str, int]:
    """--pruner and --trials belong to the tuning campaign: refused elsewhere when given;
    their values (defaults "auto" and SPEC §9's 30) for the tuning campaign."""
    if campaign != "tuning":
        for name, value in (("--pruner", pruner), ("--trials", trials)):
            if value is not None:
                raise param_error(
                    f"udbench campaign {campaign}", name, "be left out (a tuning option)", value
                )
    return ("auto" if pruner is None else pruner), (30 if trials is None else trials)


def _check_campaign(campaign: str) -> None:
    if campaign not in _CAMPAIGNS:
        raise param_error("udbench campaign", "campaign", f"be one of {list(_CAMPAIGNS)}", campaign)


def _suite(campaign: str, suite: str | None) -> str:
    """The suite option's value, or the campaign's default suite."""
    if suite is not None:
        return suite
    return "clf-small" if campaign == "classification" else "gp-small"


def _records(campaign: str, records: Path | None, suite: str = "gp-small") -> Path:
    if records is not None:
        return records
    if campaign == "tuning":
        from udbench.tuning.shipped import shipped_folder

        return shipped_folder(suite)
    if campaign == "runs":
        return _docs() / "validation" / "runs" / suite
    return _docs() / "validation" / campaign


def _docs() -> Path:
    """The docs folder of the checkout udbench runs from (its records are committed there;
    defaults independent of the current folder), else ``docs`` of the current folder."""
    import udbench

    checkout = Path(udbench.__file__).resolve().parents[2] / "docs"
    return checkout if (checkout / "validation").is_dir() else Path("docs")


def _work(campaign: str, work: Path | None, suite: str = "gp-small") -> Path:
    if work is not None:
        return work
    base = os.environ.get("UDBENCH_CACHE_DIR") or str(Path.home() / ".cache" / "udbench")
    folder = Path(base) / "campaigns" / campaign
    return folder / suite if campaign in ("tuning", "runs") else folder


def _tuning_units(  # type: ignore[no-untyped-def]
    suite: str,
    methods: str | None,
    pruner: str,
    trials: int,
    work: Path,
    data_dir: Path | None,
    parts: str,
    layouts: str | None,
    records: Path | None = None,
):
    from udbench.campaigns.tuning import tuning_units
    from udbench.recipes.suites import SUITES

    comp = "udbench campaign tuning"
    if parts.strip().lower() != "all" or layouts is not None:
        raise param_error(comp, "parts/layouts", "be left out (mcmc options)", parts)
    if suite not in SUITES:  # shipped records are a preset suite's
        raise param_error(comp, "suite", f"be a preset suite ({sorted(SUITES)})", suite)
    chosen = None
    if methods is not None:
        chosen = [m.strip() for m in methods.split(",") if m.strip()]
    return tuning_units(
        suite,
        work_dir=work,
        methods=chosen,
        pruner=pruner,
        trials=trials,
        data_dir=None if data_dir is None else str(data_dir),
        records=records,
    )


def _suite_units(  # type: ignore[no-untyped-def]
    campaign: str,
    suite: str,
    methods: str | None,
    parts: str,
    layouts: str | None,
    work: Path,
    data_dir: Path | None,
    records: Path | None = None,
):
    """The units of the classification or runs campaign (``campaign_units`` of its module)."""
    import importlib

    from udbench.recipes.suites import SUITES

    module = importlib.import_module(f"udbench.campaigns.{campaign}")
    comp = f"udbench campaign {campaign}"
    if layouts is not None:
        raise param_error(comp, "layouts", "be left out (an mcmc option)", layouts)
    if campaign == "runs" and suite not in SUITES:  # tuned cells read a preset's shipped records
        raise param_error(comp, "suite", f"be a preset suite ({sorted(SUITES)})", suite)
    chosen = parse_choice_list(comp, "parts", parts, list(module.PARTS))
    specs = None if methods is None else [m.strip() for m in methods.split(",") if m.strip()]
    if specs is not None and not specs:
        raise param_error(comp, "--methods", "name at least one method spec", methods)
    if campaign == "runs":
        from udbench.methods.registry import registered_methods

        known = sorted(registered_methods())
        for spec in specs or []:
            if spec.split(":", 1)[0].strip() not in known:
                raise param_error(comp, "--methods", f"name registered methods ({known})", spec)
    return module.campaign_units(
        chosen,
        work_dir=work,
        data_dir=None if data_dir is None else str(data_dir),
        suite=suite,
        methods=specs,
        **({"campaign_records": records} if campaign == "runs" else {}),  # its oracle fits
    )


def _units(campaign: str, parts: str, layouts: str | None, work: Path, data_dir: Path | None):  # type: ignore[no-untyped-def]
    from udbench.campaigns import mcmc

    _check_campaign(campaign)
    chosen = parse_choice_list("udbench campaign", "parts", parts, list(mcmc.PARTS))
    lays = (
        None
        if layouts is None
        else parse_choice_list("udbench campaign", "layouts", layouts, list(mcmc.HBART_LAYOUTS))
    )
    return mcmc.campaign_units(
        chosen, work_dir=work, data_dir=None if data_dir is None else str(data_dir), layouts=lays
    )


def _campaign_units(  # type: ignore[no-untyped-def]
    command, campaign, suite, methods, pruner, trials, work, data_dir, parts, layouts, folder, only
):
    """The units of ``campaign`` that ``command`` (``udbench campaign run`` or ``status``)
    takes, from their options (``--only``: those whose ids match one of its patterns)."""
    if campaign == "tuning":
        units = _tuning_units(
            suite,
            methods,
            pruner,
            trials,
            _work(campaign, work, suite),
            data_dir,
            parts,
            layouts,
            folder,
        )
    elif campaign in ("classification", "runs"):
        where = _work(campaign, work, suite) if campaign == "runs" else _work(campaign, work)
        units = _suite_units(campaign, suite, methods, parts, layouts, where, data_dir, folder)
    else:
        units = _units(campaign, parts, layouts, _work(campaign, work), data_dir)
    return select_units(command, units, only)


def run_command(
    campaign: str = typer.Argument(
        ..., help="Campaign name: mcmc, tuning, classification or runs."
    ),
    parts: str = typer.Option(
        "all",
        "--parts",
        help="Comma list of parts, or 'all' (mcmc: bnn-sweep, hbart-validation, multi-family; "
        "classification: gpc-check, clf-small; runs: generate, untuned, tuned, transfer).",
    ),
    layouts: str | None = typer.Option(
        None, "--layouts", help="HBART layouts to validate (default all, cheapest first)."
    ),
    suite: str | None = typer.Option(None, "--suite", help=_SUITE_HELP),
    methods: str | None = typer.Option(None, "--methods", "-m", help=_TUNE_METHODS_HELP),
    pruner: str | None = typer.Option(None, "--pruner", help=_PRUNER_HELP),
    trials: int | None = typer.Option(None, "--trials", help=_TRIALS_HELP),
    records: Path | None = typer.Option(None, "--records", help=_RECORDS_HELP),
    work: Path | None = typer.Option(None, "--work", help=_WORK_HELP),
    max_hours: float | None = typer.Option(
        None,
        "--max-hours",
        help="Start no new unit after this many hours (from the command's start).",
    ),
    max_units: int | None = typer.Option(None, "--max-units", help="Run at most this many units."),
    finish_within: float | None = typer.Option(
        None,
        "--finish-within",
        help="Start a unit only if it is projected to finish within this many hours of the "
        "start (the mean wall time of finished units of its shape, else its estimate scaled "
        "by the records' median wall/CPU ratio); the "
        "others are left for the next run, shorter ones after them still run.",
    ),
    unit_timeout: float | None = typer.Option(None, "--unit-timeout", help=_UNIT_TIMEOUT_HELP),
    nice: int = typer.Option(
        19, "--nice", help="Lower this process's priority by this much (0-19) first."
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    only: str | None = typer.Option(None, "--only", help=_ONLY_HELP),
    workers: int = typer.Option(1, "--workers", help=_WORKERS_HELP),
) -> None:
    """Run every unit that has no valid record, in order; each writes its record when done.

    mcmc: the MCMC reference-posterior validation (--parts, --layouts). tuning: one SPEC §9
    sweep per (method, condition) of --suite (--methods, --pruner, --trials), cheapest
    method first; its records are the package's shipped tuned configurations.
    classification: the gpc-check part (one unit per instance of --suite, default clf-small:
    generate the task into --work, record its udbench check figures), then the clf-small part
    (one unit per (instance, classifier) cell, its results row). runs: the generate part
    (one unit per instance of the regression --suite, default gp-small: its task file made
    into --work and its SPEC §7 checks recorded), then every (instance, method) cell of the
    suite, with the suite's configuration
    (untuned) and with its shipped tuning record's (tuned, where the record exists), then each
    tuned cell scored under three refitted GP-kernel oracles and the CRPS and log losses
    (transfer), method by method; records hold the results rows and the transfer figures,
    --work the predictions and the oracles' moments.
    Kill it at any time: the unit in progress leaves no record and is redone by the next
    run; finished units are skipped. A failed unit is recorded and the run goes on. A unit
    whose dataset's raw table is not on this machine writes no record (it stays missing) and
    the run ends with exit status 1. A run does one unit at a time: to use more cores, give
    --workers N (or start several runs of the same command, also on several machines sharing
    --records); each skips the units another is working on, so none is done twice.
    """
    given = {k: v for k, v in locals().items() if k in _WORKER_OPTIONS}  # as typed, for workers
    import time

    from udbench._priority import check_nice, lower_priority
    from udbench._threads import fix_xla_threads
    from udbench.campaigns import run_campaign

    started = time.perf_counter()  # --max-hours and --finish-within count from here

    _check_campaign(campaign)
    pruner, trials = _tuning_only(campaign, pruner, trials)
    check_data_dir("campaign run", data_dir)
    check_run_limits(max_hours, max_units, finish_within, workers, unit_timeout)
    check_nice(nice)
    # lowered in each worker, not in the command that starts them (it only waits)
    note = lower_priority(nice) if workers == 1 else None  # the session's autogroup too
    # one XLA compute thread per unit, as every instance and cell (udbench._threads); before
    # the units are built, since importing a sampler library may create JAX's backends
    fix_xla_threads()
    console = make_console(highlight=False)
    if note:
        console.print(f"note: {note}", markup=False)
    suite = _suite(campaign, suite)
    folder = _records(campaign, records, suite)
    check_records(campaign, folder, writing=True)
    check_work(campaign, _work(campaign, work, suite))
    units = _campaign_units(  # checks --methods, --only, ... (once, before any worker starts)
        "udbench campaign run",
        *(campaign, suite, methods, pruner, trials, work, data_dir, parts, layouts, folder, only),
    )
    if workers > 1:
        raise typer.Exit(start_workers(given, workers, time.perf_counter() - started))
    watch_parent()  # a worker of --workers: stop when the command that started it is gone
    needs = download_note(units, data_dir)
    if needs:
        console.print(f"note: {needs}", markup=False)
    projected = None
    if finish_within is not None:
        from udbench.campaigns.engine import load_done_records

        projected = wall_projection(load_done_records(folder)[0])
    counts = run_campaign(
        units,
        folder,
        max_seconds=None if max_hours is None else max_hours * 3600,
        max_units=max_units,
        finish_within=None if finish_within is None else finish_within * 3600,
        projected=projected,
        progress=console.print,
        started=started,
        unit_timeout=None if unit_timeout is None else unit_timeout * 3600,
    )
    console.print(
        f"{counts['done']} unit(s) done, {counts['failed']} failed, {counts['skipped']} "
        f"already done, {counts['left']} left"
        + (
            f", {counts['unavailable']} not run (an input is missing on this machine, see above)"
            if counts["unavailable"]
            else ""
        )
        + (f", {counts['busy']} being run by another process" if counts["busy"] else "")
        + (
            f"; records in {folder}"
            if counts["done"] + counts["failed"] + counts["skipped"]
            else "; no record written"
        )
    )
    if counts["unavailable"]:  # the user has to act: not a clean exit
        raise typer.Exit(1)


#: Campaign settings that a command-line option sets: named in the note on stale records.
_SETTING_OPTIONS = {"trials": "--trials", "pruner": "--pruner"}
#: At most this many (setting, values) notes on stale records; the commonest first.
_SAID_DIFFS = 5


def _shown_value(value: Any) -> str:
    """A setting's value as a note shows it (one line, at most 60 characters)."""
    text = " ".join(str(value).split())
    return text if len(text) <= 60 else text[:57] + "..."


def status_command(
    campaign: str = typer.Argument(
        ..., help="Campaign name: mcmc, tuning, classification or runs."
    ),
    parts: str = typer.Option("all", "--parts", help="Comma list of parts, or 'all'."),
    layouts: str | None = typer.Option(None, "--layouts", help="HBART layouts (default all)."),
    suite: str | None = typer.Option(None, "--suite", help=_SUITE_HELP),
    methods: str | None = typer.Option(None, "--methods", "-m", help=_TUNE_METHODS_HELP),
    pruner: str | None = typer.Option(None, "--pruner", help=_PRUNER_HELP),
    trials: int | None = typer.Option(None, "--trials", help=_TRIALS_HELP),
    records: Path | None = typer.Option(None, "--records", help=_RECORDS_HELP),
    work: Path | None = typer.Option(None, "--work", help=_WORK_HELP),
    only: str | None = typer.Option(None, "--only", help=_ONLY_HELP),
    per_method: bool = typer.Option(
        False,
        "--per-method",
        help="runs, classification: one row per part and method (the cells' units), to see "
        "where the hours go; tuning rows are always per method.",
    ),
) -> None:
    """Units done, stale, failed and missing per part (tuning: per method), and the CPU-hours
    left (projected: one thread's CPU time of finished units of the same shape, else each
    unit's estimate)."""
    from udbench.campaigns import unit_status
    from udbench.campaigns.engine import claimed_units, load_done_records, settings_difference

    _check_campaign(campaign)
    pruner, trials = _tuning_only(campaign, pruner, trials)
    if per_method and campaign == "mcmc":
        raise param_error(
            "udbench campaign status", "--per-method", "be left out (mcmc units have no method)",
            True,
        )  # fmt: skip
    suite = _suite(campaign, suite)
    folder = _records(campaign, records, suite)
    folder_notes = check_records(campaign, folder, writing=False)
    units = _campaign_units(
        "udbench campaign status",
        *(campaign, suite, methods, pruner, trials, work, None, parts, layouts, folder, only),
    )
    done, load_notes = load_done_records(folder)
    means = _shape_means(done)
    table = Table(title=f"campaign {campaign}: {folder}")
    for col in ("part", "done", "stale", "failed", "missing", "CPU-h done", "CPU-h left (est.)"):
        table.add_column(col)
    rows: dict[str, dict[str, Any]] = {}
    pairs: list[tuple[str, float, float]] = []  # (kind, measured, estimated) of finished units
    from_estimates: set[str] = set()  # kinds with units projected from their own estimates
    diffs: dict[tuple[str, str, str], int] = {}  # (setting, recorded, this status's): records
    for unit in units:
        status, rec = unit_status(unit, folder)
        part = unit.unit_id.split("/")[0]
        if per_method and "method" in unit.settings and unit.unit_id.count("/") == 2:  # a cell
            part += "/" + unit.unit_id.rsplit("/", 1)[1]
        if unit.kind == "hbart-validation":
            part += "/" + unit.settings["layout"]
        row = rows.setdefault(
            part,
            {
                "done": 0,
                "stale": 0,
                "failed": 0,
                "missing": 0,
                "cpu": 0.0,
                "left": 0.0,
                "?": 0,
                "notes": {},
            },
        )
        row["corrupt" if status == "corrupt" else status] = row.get(status, 0) + 1
        if status == "stale" and rec is not None:
            for key, was, now in settings_difference(unit, rec):
                diff = (key, _shown_value(was), _shown_value(now))
                diffs[diff] = diffs.get(diff, 0) + 1
        if status == "done" and rec is not None:
            cpu = record_cpu_seconds(rec)
            row["cpu"] += (cpu or 0.0) / 3600
            if cpu is not None and unit.estimate_seconds:
                pairs.append((unit.kind, cpu, float(unit.estimate_seconds)))
            continue
        est, note = _estimate(unit, means)
        if est is None:
            row["?"] += 1
        else:
            row["left"] += est / 3600
            if note:
                row["notes"][note] = row["notes"].get(note, 0) + 1
            if note != SIBLING_NOTE and est == unit.estimate_seconds:
                from_estimates.add(unit.kind)
    keys = ("done", "stale", "failed", "missing", "corrupt", "cpu", "left", "?")
    total: dict[str, Any] = {k: sum(r.get(k, 0) for r in rows.values()) for k in keys}
    total["notes"] = {}
    for r in rows.values():
        for note, n in r["notes"].items():
            total["notes"][note] = total["notes"].get(note, 0) + n
    for part, r in [*rows.items(), *([("total", total)] if len(rows) > 1 else [])]:
        if part == "total":
            table.add_section()
        table.add_row(
            part,
            str(r["done"]),
            str(r["stale"]),
            str(r["failed"]),
            str(r["missing"] + r.get("corrupt", 0)),
            f"{r['cpu']:.2f}",
            _hours_left(r),
        )
    console = make_console(highlight=False, width=120)
    console.print(table)
    for (key, was, now), n in sorted(diffs.items(), key=lambda kv: -kv[1])[:_SAID_DIFFS]:
        option = _SETTING_OPTIONS.get(key)
        hint = f" (give {option} {was} to count them)" if option else ""
        console.print(
            f"note: {n} stale record(s) were made with {key} = {was}, where this status has "
            f"{now}{hint}",
            markup=False,
        )
    for line in folder_notes + [n for n in load_notes if "unreadable record" in n]:
        console.print(f"note: {line}", markup=False)  # corrupt records count as missing
    ratios = estimate_ratios(pairs)
    shown = [f"{k} {r:.2f}x ({n} units)" for k, (r, n) in ratios.items() if k in from_estimates]
    if shown:
        console.print(
            "note: the projection takes units without a measured mean of their shape at their "
            "own estimates; the finished units took, in CPU, measured / estimated = "
            + "; ".join(shown),
            markup=False,
        )
    running = claimed_units(folder)
    mine = [u.unit_id for u in units if u.unit_id in running]
    if mine:
        pids = sorted({f"{running[u].get('pid')}@{running[u].get('host')}" for u in mine})
        console.print(
            f"note: {len(mine)} unit(s) without a current record being run now ({', '.join(pids)})",
            markup=False,
        )
    chosen_parts = {p.strip() for p in parts.split(",")}
    if campaign == "runs" and (chosen_parts & {"all", "tuned", "transfer"}):
        from udbench.campaigns.runs import waiting_cells

        chosen = None if methods is None else [m.strip() for m in methods.split(",") if m.strip()]
        for line in waiting_cells(suite, chosen):
            make_console(highlight=False, width=120).print(f"tuned: {line}", markup=False)


def summarise_command(
    campaign: str = typer.Argument(
        ..., help="Campaign name: mcmc, tuning, classification or runs."
    ),
    suite: str | None = typer.Option(None, "--suite", help=_SUITE_HELP),
    methods: str | None = typer.Option(None, "--methods", "-m", help=_TUNE_METHODS_HELP),
    pruner: str | None = typer.Option(None, "--pruner", help=_PRUNER_HELP),
    trials: int | None = typer.Option(None, "--trials", help=_TRIALS_HELP),
    records: Path | None = typer.Option(None, "--records", help=_RECORDS_HELP),
    write: bool = typer.Option(
        False,
        "--write",
        help="Write the generated page (mcmc: docs/validation/mcmc.md beside the records and, "
        "for an HBART layout equal to a shipped preset, that preset's validation record; "
        "tuning: docs/validation/tuning-<suite>.md, from the repo root; classification: "
        "<records>.md beside the records, docs/validation/classification.md by default; runs: "
        "<records>.md beside the records, docs/validation/runs/<suite>.md by default).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    results: Path | None = typer.Option(
        None,
        "--results",
        help="classification: also write the clf-small cells' rows to this new folder as the "
        "results folder udbench run writes (for udbench analyze, report and leaderboard); runs: "
        "write RESULTS/untuned and RESULTS/tuned, with the predictions found in --work (for "
        "udbench transfer too).",
    ),
    work: Path | None = typer.Option(
        None, "--work", help="runs: the run's work folder, where --results finds predictions."
    ),
) -> None:
    """Figures and verdicts rebuilt from the records alone."""
    import json

    from udbench.campaigns.report import mcmc_summary, write_mcmc_summary

    _check_campaign(campaign)
    pruner, trials = _tuning_only(campaign, pruner, trials)
    suite = _suite(campaign, suite)
    folder = _records(campaign, records, suite)
    for line in check_records(campaign, folder, writing=False):
        typer.echo(f"note: {line}", err=True)
    if results is not None and campaign not in ("classification", "runs"):
        raise param_error(
            "udbench campaign summarise",
            "--results",
            "go with the classification or runs campaign",
            campaign,
        )
    if campaign == "runs":
        from udbench.commands._campaign_runs import summarise_runs

        runs_work = _work(campaign, work, suite)
        units = _suite_units("runs", suite, methods, "all", None, runs_work, None, folder)
        summarise_runs(folder, suite, units, write, as_json, results, runs_work)
        return
    if campaign == "classification":
        cls_work = _work("classification", None)
        units = _suite_units("classification", suite, methods, "all", None, cls_work, None)
        summarise_classification(folder, units, write, as_json, results)
        return
    if campaign == "tuning":
        from udbench.campaigns.tuning import tuning_summary

        units = _tuning_units(
            suite, methods, pruner, trials, _work(campaign, None, suite), None, "all", None, folder
        )
        tsummary = tuning_summary(folder, units)
        if as_json:
            out = {k: v for k, v in tsummary.items() if k != "markdown"}
            choices = out["choices"].astype(object)  # NaN (not applicable) as JSON null
            out["choices"] = choices.where(choices.notna(), None).to_dict(orient="records")
            typer.echo(json.dumps(out, indent=1, allow_nan=False))
        else:  # plain lines: a table row is not wrapped at the terminal's width
            typer.echo(tsummary["markdown"])
        if write:
            page = _docs() / "validation" / f"tuning-{suite}.md"
            page.parent.mkdir(parents=True, exist_ok=True)
            head = (
                f"# Tuning campaign: {suite}\n\nGenerated by `udbench campaign summarise tuning "
                f"--suite {suite} --write` from the records in `{_shown(folder)}`; do not edit.\n\n"
            )
            page.write_text(head + tsummary["markdown"] + "\n", encoding="utf-8")
            make_console(highlight=False).print(f"written: {page}")
        return
    summary = mcmc_summary(folder)
    console = make_console(highlight=False)
    if as_json:
        typer.echo(json.dumps(summary, indent=1, default=str))
    else:  # plain lines, as above
        typer.echo(summary["markdown"])
    if write:
        for path in write_mcmc_summary(summary, folder):
            console.print(f"written: {path}")


def register(app: typer.Typer) -> None:
    """Add the ``campaign`` group."""
    campaign_app.command("run")(run_command)
    campaign_app.command("status")(status_command)
    campaign_app.command("summarise")(summarise_command)
    app.add_typer(campaign_app, name="campaign")
