"""``udbench tune``, ``tune-summary`` and ``plan``: hyperparameter sweeps and the cost of a grid."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from udbench._lock import folder_lock
from udbench._validation import check_int, check_seed, check_timeout
from udbench.commands._console import make_console
from udbench.commands._options import (
    ClusterConfigOpt,
    PinOpt,
    SchedulerOpt,
    WorkersOpt,
    check_out_dir,
    execution_options,
    out_path,
    split_tasks_and_methods,
)
from udbench.priors.base import DEFAULT_FIDELITY
from udbench.tasks.grid import expand_grid
from udbench.tasks.spec import DEFAULT_DRAWS

__all__ = ["register"]

_METHODS_HELP = (
    "Method spec: registry name or import path with optional overrides (the base "
    "configuration of the sweep), or a classifier's name for classification (gpc) tasks. "
    "Repeat the option, or list several after it."
)


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def register(app: typer.Typer) -> None:
    """Add ``tune``, ``tune-summary`` and ``plan``."""

    @app.command("tune")
    def tune_cmd(
        tasks: list[str] = typer.Argument(
            ..., help="Task files, folders or quoted globs; each condition's lowest seed is used."
        ),
        methods: list[str] = typer.Option(..., "--methods", "-m", help=_METHODS_HELP),
        trials: int = typer.Option(30, "--trials", help="Finished trials per sweep."),
        out: Path = typer.Option(
            Path("udbench-out/tuning"), "--out", "-o", help="Tuning folder.", parser=out_path
        ),
        sampler: str = typer.Option("tpe", "--sampler", help="tpe (default) or random."),
        seed: int = typer.Option(0, "--seed", help="Seed of the samplers."),
        in_flight: int | None = typer.Option(
            None,
            "--in-flight",
            help="Most trials of one sweep at once (default: all workers; 1: sequential).",
        ),
        timeout: float | None = typer.Option(
            None, "--timeout", help="Per-trial limit in seconds for fit + predict."
        ),
        pruner: str = typer.Option(
            "auto",
            "--pruner",
            help="auto (default), none, sha (successive halving), hyperband or median (median "
            "stopping rule): stop unpromising trials of iterative methods early (their "
            "intermediate held-out NLL). auto: sha for catboost-ps, dkl, ngboost-bag and "
            "ngboost-nig (measured to lose no more than the seed-to-seed spread), none for "
            "every other method; records and journals hold the resolved pruner.",
        ),
        workers: WorkersOpt = None,
        scheduler: SchedulerOpt = None,
        cluster_config: ClusterConfigOpt = None,
        pin: PinOpt = None,
        progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar."),
    ) -> None:
        """One Optuna sweep per (method, condition); resumable; a record per finished sweep.

        The score is the Gaussian NLL of a held-out 20 % of the condition's training sample
        (SPEC §9); for classifiers on classification tasks (family gpc), the categorical NLL
        of the held-out labels. Re-running with the same --out resumes every sweep from its
        journal.
        """
        comp = "udbench tune"
        # numbers first: before any heavy import (Optuna, Dask, the methods)
        check_int(comp, "--trials", trials, minimum=1)
        check_seed(comp, "--seed", seed)
        check_int(comp, "--in-flight", in_flight, minimum=1, allow_none=True)
        check_timeout(comp, "--timeout", timeout)
        execution = execution_options(comp, workers, scheduler, cluster_config, pin)
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        from udbench.tuning.sweep import tune

        check_out_dir("udbench tune", out)
        execution.check_deployment()  # fail fast, before any work
        tasks, specs = split_tasks_and_methods(tasks, methods)
        console = make_console(stderr=True)

        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
        with folder_lock(out, comp):  # one driver per tuning folder (its journals)
            with Progress(*columns, console=console, disable=not progress) as bar:
                ids: list[Any] = []

                def on_trial(done: int, total: int, key: str, text: str) -> None:
                    if not ids:
                        ids.append(bar.add_task("trials", total=total))
                    bar.update(ids[0], completed=done, total=total)

                summary = tune(
                    tasks,
                    specs,
                    out,
                    trials=trials,
                    sampler=sampler,
                    seed=seed,
                    in_flight=in_flight,
                    timeout=timeout,
                    pruner=pruner,
                    **execution.kwargs(),
                    on_trial=on_trial,
                )
        make_console().print(
            f"{summary.n_sweeps} sweeps: {summary.n_trials_run} trials run "
            f"({summary.n_trials_failed} failed, {summary.n_trials_pruned} pruned), "
            f"{summary.n_resumed_trials} kept from earlier "
            f"runs, {summary.n_interrupted} interrupted; {len(summary.records)} records → "
            f"{summary.out}",
            highlight=False,
        )
        make_console().print(
            f"next: udbench tune-summary {out}  ·  udbench run TASKS -m … --tuned {out}",
            highlight=False,
            markup=False,
        )

    @app.command("tune-summary")
    def tune_summary_cmd(
        folder: Path = typer.Argument(
            ..., help="Tuning folder (udbench tune --out), or a suite's name (shipped records)."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print JSON (a list of objects)."),
    ) -> None:
        """List the sweeps' records: winning configuration, score, trial counts."""
        from udbench.tuning.records import load_records, summary_rows
        from udbench.tuning.shipped import resolve_tuned

        where, shipped = resolve_tuned(folder, "udbench tune-summary")
        rows = summary_rows(load_records(where)) if where.is_dir() or shipped is None else []
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return
        table = Table(title=f"tuned configurations in {folder}")
        heads = ("method", "condition", "status", "NLL", "best", "trials", "failed", "pruned")
        for head in (*heads, "params"):
            table.add_column(head, overflow="fold")
        for r in rows:
            params = ", ".join(f"{k}={_fmt(v, 3)}" for k, v in (r["tuned_params"] or {}).items())
            table.add_row(
                r["method"],
                r["condition"],
                r["status"],
                _fmt(r["score"]),
                _fmt(r["best_trial"]),
                f"{r['n_complete']}/{r['n_trials']}",
                str(r["n_failed"]),
                str(r["n_pruned"]),
                params,
            )
        make_console(width=200 if not sys.stdout.isatty() else None).print(table)

    @app.command("plan")
    def plan_cmd(
        datasets: str = typer.Option("all", "--datasets", help="Comma list or 'all'."),
        families: str = typer.Option("all", "--families", help="Comma list or 'all'."),
        noise: str = typer.Option("all", "--noise", help="Noise modes: comma list or 'all'."),
        coverage: str = typer.Option("all", "--coverage", help="Coverages: comma list or 'all'."),
        seeds: str = typer.Option("all", "--seeds", help="E.g. 0-9, 0,2,5 or 'all' (0-9)."),
        fidelity: str = typer.Option(
            str(DEFAULT_FIDELITY), "--fidelity", help="smoke, standard or paper (as generate)."
        ),
        methods: str = typer.Option(
            "registered",
            "--methods",
            "-m",
            help="Comma list of method names, 'registered' or 'paper' (the paper's 19).",
        ),
        trials: int = typer.Option(
            30, "--trials", help="Trials per sweep (0: no tune stage, as udbench suite)."
        ),
        measured: list[Path] = typer.Option(
            [],
            "--measured",
            help="Results, tuning, runs campaign records or task folder whose measured times "
            "to use (repeatable): CPU seconds where a record has them (tuning and runs "
            "campaign records), else wall-clock seconds, shown as wall hours apart from the "
            "CPU-hours.",
        ),
        workers: int | None = typer.Option(
            None, "--workers", "-w", help="Workers for the wall time (default: usable cores)."
        ),
        calibration: Path | None = typer.Option(
            None,
            "--calibration",
            help="Calibration table (default: yours from --calibrate, else the shipped one).",
        ),
        use_calibration: bool = typer.Option(
            True,
            "--calibrated/--no-calibration",
            help="Use the calibration table for rows without measurements.",
        ),
        calibrate_now: bool = typer.Option(
            False,
            "--calibrate",
            help="Measure the calibration table on this machine first (see --budget).",
        ),
        budget: float = typer.Option(
            30.0, "--budget", help="CPU minutes --calibrate may spend (default 30)."
        ),
        pruner: str = typer.Option(
            "auto",
            "--pruner",
            help="Project tuning as udbench tune --pruner (default auto: sha for "
            "catboost-ps, dkl, ngboost-bag and ngboost-nig, none for the others): a pruned "
            "method's trials cost the measured pruned/unpruned CPU ratio of the table's "
            "tune-pruning entry for that pruner, where it has one.",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Count instances, sweeps, trials and fits of a grid; project CPU-hours per stage
        and method and the wall time on W workers.

        Figures come from --measured folders, else from the calibration table (CPU seconds
        measured at a few training-set sizes with a power law in n, evaluated at each
        dataset's size), else they are unknown (never guessed). A measured figure is CPU
        time where the record measured it (the cpu_seconds of tuning campaign records, per
        sweep, and of runs campaign records, per cell: docs/validation/runs/SUITE), else
        wall-clock time (fit + predict seconds of cells and trials, generation logs), which
        is printed as wall hours, apart from the CPU-hours. --calibrate re-measures the
        table on this machine within --budget CPU minutes and stores it in the cache folder.
        """
        from udbench._validation import param_error
        from udbench.methods.registry import paper_methods, registered_methods
        from udbench.tuning.plan import collect_measurements, project
        from udbench.tuning.pruning import PRUNERS

        check_int("udbench plan", "--trials", trials, minimum=0)
        if pruner not in PRUNERS:
            raise param_error("udbench plan", "pruner", f"be one of {list(PRUNERS)}", pruner)
        if workers is not None and workers < 1:
            raise param_error("udbench plan", "workers", "be an integer >= 1", workers)
        if calibrate_now and not budget > 0:
            raise param_error("udbench plan", "budget", "be > 0 CPU minutes", budget)
        specs = expand_grid(
            datasets,
            families,
            noise,
            coverage,
            seeds,
            fidelity,
            DEFAULT_DRAWS,
            command="udbench plan",
        )
        known = list(registered_methods())
        if methods.strip().lower() == "registered":
            names = known
        elif methods.strip().lower() == "paper":
            names = list(paper_methods())
        else:
            names = [m.strip() for m in methods.split(",") if m.strip()]
            bad = [m for m in names if m not in known and m not in paper_methods()]
            if bad or not names:
                raise param_error(
                    "udbench plan", "methods", "name registered or paper methods", methods
                )
        found = collect_measurements(measured)
        table = None
        if calibrate_now:
            table = _calibrate(names, specs, budget)
        elif use_calibration:
            from udbench.tuning.calibration import load_calibration

            table = load_calibration(calibration)
        if workers is None:
            workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
        proj = project(specs, names, trials, found, table, workers=workers, pruner=pruner)
        unregistered = [m for m in names if m not in known]
        if as_json:
            out = {**proj.as_dict(), "unregistered": unregistered}
            out["calibration"] = None if table is None else table.source
            typer.echo(json.dumps(out, indent=2))
            return
        _print_plan(proj, trials, unregistered, table)


def _calibrate(names: list[str], specs: list[Any], budget_min: float) -> Any:
    """``plan --calibrate``: measure the table for these methods, families and datasets."""
    from udbench.tuning.calibrating import calibrate
    from udbench.tuning.calibration import (
        default_calibration_path,
        load_calibration,
    )

    console = make_console(stderr=True)
    console.print(
        f"calibrating on this machine: at most {budget_min:g} CPU minutes "
        f"(methods, families and kernel fits of this grid)",
        highlight=False,
    )

    def said(key: str, entry: Any) -> None:
        console.print(f"  {key}: {'measured' if entry else 'skipped (budget)'}", highlight=False)

    from udbench.methods.registry import registered_methods
    from udbench.priors import prior_capabilities

    known = set(registered_methods())
    table = calibrate(
        methods=[m for m in names if m in known],
        families=sorted({s.family for s in specs}),
        datasets=sorted(
            {
                s.dataset
                for s in specs
                if prior_capabilities(s.family, strict=False).fitted_per_dataset
            }
        ),
        budget_s=60.0 * budget_min,
        on_entry=said,
    )
    path = table.write(default_calibration_path())
    console.print(f"calibration table → {path}", highlight=False)
    return load_calibration(path)


def _print_plan(proj: Any, trials: int, unregistered: list[str], table: Any) -> None:
    from udbench.tuning.clocks import duration_text, hours_text, row_basis_text, row_hours_text

    counts = proj.counts
    console = make_console(width=200 if not sys.stdout.isatty() else None)
    tuning = (
        f"{counts['sweeps']} sweeps × {trials} trials = {counts['trials']} trials"
        if trials
        else "no tune stage (--trials 0)"
    )
    console.print(
        f"{counts['instances']} instances in {counts['conditions']} conditions; "
        f"{counts['methods']} methods → {tuning}; {counts['fits']} fits",
        highlight=False,
    )
    title = (
        "projected time: CPU time, or wall-clock time where the basis says wall "
        "(measured: count × median; calibrated: power law at each n, CPU)"
    )
    tab = Table(title=title)
    for head in ("stage", "method / family / dataset", "count", "basis", "per unit", "time"):
        tab.add_column(head, justify="left" if head[0] in "smb" else "right")
    totals: dict[str, list[float]] = {}
    for r in proj.rows:
        note = " (not registered)" if r.key in unregistered else ""
        per = r.seconds_per_unit
        basis, hours = row_basis_text(r), row_hours_text(r)
        tab.add_row(
            r.stage,
            r.key + note,
            str(r.count),
            basis,
            "–" if per is None else duration_text(per / 3600),
            hours,
        )
        tot = totals.setdefault(r.stage, [0.0, 0.0, 0.0])  # CPU-h, wall-clock h, unknown rows
        if r.cpu_hours is None:
            tot[2] += 1
        else:
            tot[1 if r.clock == "wall" else 0] += r.cpu_hours
    console.print(tab)
    for stage, (cpu, wall, n_unknown) in totals.items():
        console.print(f"{stage}: {hours_text(cpu, wall, int(n_unknown))}", highlight=False)
    unknown = f" + {len(proj.unknown)} unknown rows" if proj.unknown else ""
    total = hours_text(proj.cpu_hours, proj.wall_clock_hours)
    console.print(f"total: {total}{unknown}", highlight=False)
    if proj.wall_hours_low is not None:
        console.print(
            f"wall time on {proj.workers} worker(s): "
            f"{duration_text(proj.wall_hours_low, proj.wall_hours_high)} "
            f"(longest chain {duration_text(proj.chain_hours)}: {proj.chain})",
            highlight=False,
        )
    for r in proj.rows:
        config_note = r.config_note()
        if config_note:
            console.print(f"note: {config_note}", highlight=False)
    if proj.unknown:
        console.print(f"unknown (not in the total): {', '.join(proj.unknown)}", highlight=False)
    if table is not None:
        console.print(f"calibration: {table.source}", highlight=False)
