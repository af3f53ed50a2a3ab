"""``udbench study``: the studies of the paper's Appendix D (``docs/studies.md``).

Sub-commands of the ``study`` group: ``wine-ood`` (D.3) and ``spectral-norm`` (D.4,
:mod:`udbench.studies.spectral_norm`). Each prints the projected cost of
its full design and of the selection from the measured times of ``udbench plan``
(:func:`udbench.tuning.plan.plan_grid`) before it starts, each figure in its clock as
``udbench plan`` prints it (CPU-hours where the records measured CPU seconds, wall-clock
hours, labelled so, where they measured elapsed time: :mod:`udbench.tuning.clocks`), and
asks for ``--yes`` when the CPU-hours plus the wall-clock hours (an upper bracket: a
single-threaded cell's elapsed time is at least its CPU time) are above one hour, or when a
stage is not measured (:func:`gate_message`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from udbench._lock import folder_lock
from udbench._resampling import DEFAULT_N_RESAMPLES
from udbench._validation import (
    UdbenchError,
    check_int,
    check_timeout,
    param_error,
)
from udbench.commands._console import make_console
from udbench.commands._options import (
    DATA_DIR_HELP,
    WorkersOpt,
    check_data_dir,
    check_out_dir,
    check_resamples,
    execution_options,
    out_path,
    parse_choice_list,
    parse_seeds,
)
from udbench.tasks.spec import MAX_DRAWS, MIN_DRAWS

#: Projected hours above which a study needs ``--yes``: CPU-hours + wall-clock hours
#: (:func:`udbench.tuning.clocks.gate_hours`).
CONFIRM_CPU_HOURS = 1.0

study_app = typer.Typer(
    name="study",
    help=(
        "Studies beyond the benchmark table (paper Appendix D): wine OOD detection (D.3), "
        "the spectral-normalisation ablation (D.4)."
    ),
    no_args_is_help=True,
)


def _method_names(methods: str) -> list[str]:
    from udbench.methods.registry import registered_methods

    known = list(registered_methods())
    if methods.strip().lower() == "registered":
        return known
    names = [m.strip() for m in methods.split(",") if m.strip()]
    bad = [m for m in names if m.split(":", 1)[0] not in known]
    if bad or not names:
        raise param_error(
            "udbench study", "methods", f"be 'registered' or a comma list of {known}", methods
        )
    return names


def _measurements(folders: list[Path]) -> Any:
    from udbench.tuning.plan import Measurements, collect_measurements

    found = Measurements()
    for folder in folders:
        try:
            part = collect_measurements([folder])
        except UdbenchError:
            continue  # an empty study folder measures nothing yet
        found.merge(part)
    return found


def print_projection(
    console: Console,
    selected: list[Any],
    full: list[Any],
    methods: list[str],
    measured: Any,
    full_methods: list[str] | None = None,
    done: Any = None,
) -> tuple[float, float, list[str]]:
    """Print the projected cost (generate + run) of the selection and of the full design.

    The full design runs ``full_methods`` (default: every registered method). ``done``
    (:func:`udbench.tuning.plan.finished_work`) is what a re-run skips: the selection's table
    and the returned hours count only the instances and cells still to make, so resuming a
    study that was stopped does not ask for ``--yes`` again for work already done. Hours
    are kept in their clock as ``udbench plan`` keeps them (:mod:`udbench.tuning.clocks`):
    CPU-hours where the records measured CPU seconds, wall-clock hours (labelled so, never
    called CPU time) where they measured elapsed seconds (a results folder's cells).

    Returns
    -------
    cpu_hours, wall_hours, unknown
        The remaining selection's measured CPU-hours and wall-clock hours (unknown parts
        count 0), and its ``"stage key"`` figures with no measurement that hold the
        ``--yes`` gate (:func:`udbench.tuning.clocks.unmeasured`: work left, GP generation
        excepted).
    """
    from udbench.methods.registry import registered_methods
    from udbench.tuning.clocks import hours_text, row_basis_text, row_hours_text, split_hours
    from udbench.tuning.plan import FinishedWork, plan_grid, remaining_rows, unmeasured

    names = [m.split(":", 1)[0] for m in methods]
    all_names = list(registered_methods()) if full_methods is None else full_methods
    done = done if done is not None else FinishedWork()
    totals = {}
    for what, specs, meths in (("full design", full, all_names), ("this run", selected, names)):
        counts, rows = plan_grid(specs, meths, 1, measured)
        rows = [r for r in rows if r.stage != "tune"]  # the study tunes nothing
        if what == "this run" and done:
            rows = remaining_rows(rows, specs, 1, done)
        unknown = [f"{r.stage} {r.key}" for r in rows if r.cpu_hours is None and r.count]
        totals[what] = (split_hours(rows), unknown, counts, rows)
    (cpu, wall), _, counts, rows = totals["this run"]
    table = Table(
        title="projected time of this run: CPU time, or wall-clock time where the basis says "
        "wall (count × median measured seconds)"
        + ("; finished instances and cells not counted" if done else "")
    )
    for head in ("stage", "method / family", "count", "basis", "median", "time"):
        table.add_column(
            head, justify="left" if head.startswith(("stage", "method", "basis")) else "right"
        )
    for r in rows:
        table.add_row(
            r.stage,
            r.key,
            str(r.count),
            row_basis_text(r),
            _fmt(r.median_s),
            row_hours_text(r),
        )
    console.print(table)
    for what, ((c_h, w_h), unk, c, rs) in totals.items():
        to_do = ""
        if what == "this run" and done:
            n_gen = sum(r.count for r in rs if r.stage == "generate")
            n_fit = sum(r.count for r in rs if r.stage == "run")
            to_do = f" (to do: {n_gen} instances, {n_fit} fits)"
        console.print(
            f"{what}: {c['instances']} instances × {c['methods']} methods = {c['fits']} fits"
            f"{to_do}; measured {hours_text(c_h, w_h)}"
            + (
                f" + {len(unk)} unknown ({', '.join(unk[:6])}{', …' if len(unk) > 6 else ''})"
                if unk
                else ""
            ),
            highlight=False,
        )
    return cpu, wall, unmeasured(rows)


def gate_message(cpu_hours: float, wall_hours: float, unknown: list[str]) -> str | None:
    """Why a study needs ``--yes``, or None when it does not.

    The gate compares CPU-hours + wall-clock hours (:func:`udbench.tuning.clocks.gate_hours`:
    an hour of measured elapsed time counts as a CPU-hour, an upper bracket of the work of
    single-threaded cells) with :data:`CONFIRM_CPU_HOURS`, and asks for ``--yes`` too when a
    stage is not measured (``unknown``).

    Parameters
    ----------
    cpu_hours, wall_hours : float
        The projection's hours per clock (:func:`udbench.tuning.clocks.split_hours`).
    unknown : list of str
        ``"stage key"`` figures with no measurement.

    Returns
    -------
    str or None
        E.g. ``"the projected cost of this run is 30 CPU-min + 1.5 h wall-clock (measured
        elapsed time, not CPU), 2 h counted against the limit of 1 h (wall-clock hours
        counted as CPU-hours, an upper bracket)"``.
    """
    from udbench.tuning.clocks import duration_text, gate_hours, hours_text

    total = gate_hours(cpu_hours, wall_hours)
    if total > CONFIRM_CPU_HOURS:
        why = f"the projected cost of this run is {hours_text(cpu_hours, wall_hours)}"
        if wall_hours:
            why += (
                f", {duration_text(total)} counted against the limit of "
                f"{duration_text(CONFIRM_CPU_HOURS)} "
                "(wall-clock hours counted as CPU-hours, an upper bracket)"
            )
        else:
            why += f" (> {duration_text(CONFIRM_CPU_HOURS)})"
        return why
    if unknown:
        return (
            f"the cost of {len(unknown)} stage(s) is not measured yet "
            f"({', '.join(unknown[:4])}{' …' if len(unknown) > 4 else ''})"
        )
    return None


@study_app.command("wine-ood")
def wine_ood_cmd(
    out: Path = typer.Option(..., "--out", "-o", help="Study folder.", parser=out_path),
    datasets: str = typer.Option(
        "white_wine", "--datasets", help="In-distribution datasets (comma list)."
    ),
    families: str = typer.Option("all", "--families", help="Oracle families: comma list or 'all'."),
    seeds: str = typer.Option("0-4", "--seeds", help="E.g. 0-4, 0,2 (grid seeds)."),
    methods: str = typer.Option(
        "registered", "--methods", "-m", help="'registered' or a comma list of method specs."
    ),
    smoke: bool = typer.Option(
        False, "--smoke", help="Run each method with its class's smoke configuration."
    ),
    fidelity: str = typer.Option("standard", "--fidelity", help="paper, standard or smoke."),
    draws: int = typer.Option(1000, "--draws", help="Posterior draws D per instance."),
    n_query: int = typer.Option(1500, "--n-query", help="Red wines queried per instance."),
    tuned: Path | None = typer.Option(
        None, "--tuned", help="Tuning folder: the tuned record where one exists."
    ),
    benchmark: Path | None = typer.Option(
        None,
        "--benchmark",
        help="Benchmark results folder whose ranking Kendall's W compares with (default: "
        "the study's own rows).",
    ),
    measured: list[Path] = typer.Option(
        [],
        "--measured",
        help="Results, tuning, runs campaign records or task folder with measured times "
        "(repeatable): CPU seconds where the records have them, else wall-clock seconds.",
    ),
    workers: WorkersOpt = None,
    timeout: float | None = typer.Option(None, "--timeout", help="Per-cell limit in seconds."),
    n_resamples: int = typer.Option(
        DEFAULT_N_RESAMPLES, "--n-resamples", help="Bootstrap replicates."
    ),
    yes: bool = typer.Option(
        False,
        "--yes",
        "-y",
        help="Run even when the projection (CPU-hours + measured wall-clock hours) is above "
        "one hour or unknown.",
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
) -> None:
    """Red-vs-white wine OOD detection vs the benchmark ranking (paper D.3).

    Generates the white-wine instances with red-wine query points into OUT/tasks, runs every
    method into OUT/results (resumable: a re-run skips finished instances and cells) and
    writes tables and figures to OUT/analysis.
    """
    comp = "udbench study wine-ood"
    # numbers first: before any heavy import or data read
    check_int(comp, "--draws", draws, minimum=MIN_DRAWS, maximum=MAX_DRAWS)
    check_int(comp, "--n-query", n_query, minimum=1)
    workers = execution_options(comp, workers).workers
    check_timeout(comp, "--timeout", timeout)
    check_resamples(comp, n_resamples)
    from udbench.priors import PRIOR_FAMILIES, Fidelity
    from udbench.studies import wine_ood as wo

    check_out_dir("udbench study wine-ood", out)
    check_data_dir("udbench study wine-ood", data_dir)
    dd = None if data_dir is None else str(data_dir)
    names = _method_names(methods)
    if smoke and any(":" in n for n in names):
        raise param_error(
            "udbench study wine-ood",
            "methods",
            "be plain method names with --smoke (it sets every hyperparameter)",
            methods,
        )
    ds = tuple(v.strip() for v in datasets.split(",") if v.strip())
    if not ds:
        raise param_error("udbench study wine-ood", "datasets", "name a dataset", datasets)
    design = wo.WineOODDesign(
        datasets=ds,
        families=tuple(
            parse_choice_list("udbench study wine-ood", "families", families, list(PRIOR_FAMILIES))
        ),
        seeds=tuple(parse_seeds(seeds, command="udbench study wine-ood")),
        fidelity=Fidelity.parse("udbench study wine-ood", fidelity),
        n_draws=draws,
        n_query=n_query,
    )
    for d in ds:  # fail fast on a table without the red-wine covariates or a bad n_query
        wo.red_query_points(d, design.ood_dataset, n_query, dd)
    full = wo.WineOODDesign(fidelity=design.fidelity, n_draws=draws).specs()
    console = make_console(stderr=True)
    folders = [*measured] + [p for p in (out / "tasks", out / "results") if p.is_dir()]
    from udbench.tuning.plan import finished_work

    done = finished_work(out / "tasks", out / "results")
    cpu_h, wall_h, unknown = print_projection(
        console, design.specs(), full, names, _measurements(folders), done=done
    )
    # as spectral-norm: an unmeasured run stage (or MCMC generation) is not shown to be under
    # the hour; GP generation (seconds per instance once the kernel is fitted) does not count
    why = gate_message(cpu_h, wall_h, unknown)
    if why is not None and not yes:
        raise UdbenchError(
            f"udbench study wine-ood: {why}; pass --yes to run it, or select less with "
            "--seeds/--families/--methods (or measure first: --measured with a results folder)"
        )
    with folder_lock(out, comp):  # one writer per study folder
        n_new, failures = wo.generate_tasks(design, out / "tasks", data_dir=dd, workers=workers)
        console.print(f"instances: {n_new} generated in {out / 'tasks'}", highlight=False)
        for task_id, err in failures:
            console.print(
                f"[red]failed[/] {escape(task_id)}: {escape(err)}", highlight=False, markup=True
            )
        method_specs: list[Any] = names
        if smoke:
            from udbench.methods.registry import get_method_class, make_method

            method_specs = []
            for n in names:
                name = n.split(":", 1)[0]
                params = dict(get_method_class(name).smoke_params)
                method_specs.append((n, make_method(name, **params)))
        summary = wo.run_cells(
            out / "tasks",
            method_specs,
            out / "results",
            tuned=tuned,
            workers=workers,
            timeout=timeout,
        )
        console.print(
            f"cells: {summary.n_ok} ok, {summary.n_failed} failed, "
            f"{summary.n_skipped} already done",
            highlight=False,
        )
        for key, err in summary.failures[:10]:
            console.print(
                f"[red]failed[/] {escape(key)}: {escape(err)}", highlight=False, markup=True
            )
        result = wo.analyse(
            out / "results",
            out / "tasks",
            out / "analysis",
            benchmark=benchmark,
            n_resamples=n_resamples,
        )
        table = result.tables["auroc"]
        view = Table(title="wine OOD: mean AUROC of EU (red vs held-out white)")
        for head in ("score", "all points", "matched", "EU ratio (matched)", "partial ρ_S"):
            view.add_column(head, justify="left" if head == "score" else "right")
        for score, r in table.sort_values("auroc_all", ascending=False).iterrows():
            view.add_row(
                str(score),
                f"{r['auroc_all']:.3f}",
                f"{r['auroc_matched']:.3f}",
                f"{r['eu_ratio_matched']:.3g}",
                f"{r['partial_spearman']:.3f}",
            )
        make_console().print(view)
        console.print(f"tables and figures in {out / 'analysis'}", highlight=False)
        if failures or summary.n_failed:
            raise typer.Exit(3)


def _fmt(seconds: float | None) -> str:
    from udbench.tuning.clocks import duration_text

    return "unknown" if seconds is None else duration_text(seconds / 3600)


def _print_study_plan(
    console: Console,
    plan: Any,
    sn: Any,
    specs: list[Any],
    trials: int,
    measured: list[Path],
    out: Path,
    fidelity: str | None,
    draws: int | None,
    data_dir: str | None,
) -> None:
    """The spectral-norm study's projection: its rows (hours in their clock, as ``udbench
    plan``), its totals and, for a selection, the full design's."""
    from udbench.tuning.clocks import hours_text, row_basis_text, row_hours_text

    table = Table(
        title="projected time: CPU time, or wall-clock time where the basis says wall "
        "(udbench plan: count × median measured seconds)"
    )
    for col in ("stage", "method / family", "count", "basis", "median", "time"):
        table.add_column(
            col, justify="left" if col in ("stage", "method / family", "basis") else "right"
        )
    for r in plan.rows:
        table.add_row(
            r.stage,
            r.key,  # the console prints table cells as they are
            str(r.count),
            row_basis_text(r),
            _fmt(r.median_s),
            row_hours_text(r),
        )
    c = plan.counts
    console.print(
        f"{c['instances']} instances, {len(plan.arms)} arm configurations "
        f"({len(plan.arms) // 3} methods × 3 arms) → {c['sweeps']} sweeps × {plan.trials} "
        f"trials = {c['trials']} trials; {c['fits']} fits",
        highlight=False,
    )
    console.print(table)
    console.print(
        f"projected: measured {hours_text(plan.known_cpu_hours, plan.known_wall_hours)}"
        + (
            f" + {len(plan.unknown)} unmeasured ({', '.join(plan.unknown[:4])} …)"
            if plan.unknown
            else ""
        ),
        highlight=False,
    )
    full = sn.study_specs(
        "all", sn.FULL_SEEDS, sn.FAMILIES, fidelity=fidelity, draws=draws, data_dir=data_dir
    )
    if len(full) != len(specs):
        _, _, known, unknown = sn.project_cost(
            full,
            [str(type(a.estimator).name) for a in plan.arms],
            trials,
            [*measured, out / "tasks", out / "tuning", out / "results"],
        )
        console.print(
            f"full design ({len(full)} instances): measured {hours_text(*known)}"
            + (f" + {len(unknown)} unmeasured" if unknown else ""),
            highlight=False,
        )


@study_app.command("spectral-norm")
def spectral_norm_command(
    out: Path = typer.Option(
        Path("udbench-out/spectral-norm"),
        "--out",
        help="Study folder: tasks/, tuning/, results/, analysis/.",
        parser=out_path,
    ),
    datasets: str = typer.Option("all", "--datasets", help="Comma list or 'all' (the 13)."),
    seeds: str = typer.Option("0-4", "--seeds", help="Seeds per condition, e.g. 0-4 or 0,2."),
    methods: str = typer.Option(
        "",
        "--methods",
        "-m",
        help="Neural methods with the SN option, separated by spaces or ';' (overrides as in "
        "udbench run: 'nn-ens:n_epochs=50'); default every such registered method.",
    ),
    families: str = typer.Option("gp,hbart,bnn", "--families", help="Oracle families."),
    trials: int = typer.Option(30, "--trials", help="Tuning trials per arm and condition."),
    plain_tuning: Path | None = typer.Option(
        None,
        "--plain-tuning",
        help="A udbench tune folder with the benchmark's records of the plain methods: the "
        "plain arms use them instead of being tuned again.",
    ),
    fidelity: str | None = typer.Option(None, "--fidelity", help="Task fidelity (generate)."),
    draws: int | None = typer.Option(None, "--draws", help="Posterior draws D per instance."),
    workers: WorkersOpt = None,
    timeout: float | None = typer.Option(
        None, "--timeout", help="Per-trial and per-cell limit of fit + predict, seconds."
    ),
    measured: list[Path] = typer.Option(
        [],
        "--measured",
        help="Results, tuning, runs campaign records or task folders whose times project "
        "the cost (CPU seconds where the records have them, else wall-clock seconds).",
    ),
    n_resamples: int = typer.Option(
        DEFAULT_N_RESAMPLES, "--n-resamples", help="Bootstrap replicates."
    ),
    yes: bool = typer.Option(
        False,
        "--yes",
        help="Run even if the projection (CPU-hours + measured wall-clock hours) is above an "
        "hour or unknown.",
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar."),
) -> None:
    """Spectral-normalisation ablation (paper D.4): plain, SN and WD arms of the neural methods.

    Generates the instances (balanced coverage, smooth-monotone noise), tunes every arm
    (SN: sn_coeff in [0.5, 3]; WD: weight decay in [1e-2, 1]; the rest re-tuned), runs them
    with the same training seed per task, and writes the paired differences, regressions
    and tables to OUT/analysis. Resumable: run the same command again.
    """
    comp = "udbench study spectral-norm"
    # numbers first: before any heavy import or data read
    check_int(comp, "--trials", trials, minimum=1)
    check_int(comp, "--draws", draws, minimum=MIN_DRAWS, maximum=MAX_DRAWS, allow_none=True)
    workers = execution_options(comp, workers).workers
    check_timeout(comp, "--timeout", timeout)
    check_resamples(comp, n_resamples)
    from udbench.commands._progress import cell_progress  # imports pandas: not at --help
    from udbench.studies import spectral_norm as sn

    check_data_dir("study spectral-norm", data_dir)
    check_out_dir("study spectral-norm", out)
    dd = None if data_dir is None else str(data_dir)
    console = make_console(stderr=True)
    fams = [f.strip() for f in families.split(",") if f.strip()]
    specs = sn.study_specs(
        datasets,
        parse_seeds(seeds, len(sn.FULL_SEEDS), command="study spectral-norm"),
        fams,
        fidelity=fidelity,
        draws=draws,
        data_dir=dd,
    )
    names = methods.replace(";", " ").split() or sn.study_methods()
    plan = sn.plan_study(
        specs, names, out, trials=trials, measured=measured, plain_tuning=plain_tuning
    )
    _print_study_plan(console, plan, sn, specs, trials, [*measured], out, fidelity, draws, dd)
    why = gate_message(plan.known_cpu_hours, plan.known_wall_hours, plan.unknown)
    if why is not None and not yes:
        raise UdbenchError(
            f"study spectral-norm: {why}; pass --yes to run it, or measure a small version "
            "first (--datasets diabetes --seeds 0 --families gp --trials 2) and name its "
            "folders with --measured"
        )
    with folder_lock(out, comp):  # one writer per study folder
        with cell_progress(progress, console) as on_cell:
            analysis = sn.run_study(
                plan,
                out,
                workers=workers,
                timeout=timeout,
                data_dir=dd,
                n_resamples=n_resamples,
                say=lambda text: console.print(text, highlight=False),
                on_cell=on_cell,
            )
    paired = analysis.tables["paired"]
    from udbench.analyses import display_table

    make_console().print(display_table(paired).to_string(index=False), highlight=False)
    console.print(f"tables, figures and study.html in {out / 'analysis'}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add the ``study`` group."""
    app.add_typer(study_app, name="study")
