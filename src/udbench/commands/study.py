"""``udbench study``: the studies of the paper's Appendix D (``docs/studies.md``).

Sub-commands of the ``study`` group: ``wine-ood`` (D.3). Each prints the projected cost of
its full design and of the selection from the measured times of ``udbench plan``
(:func:`udbench.tuning.plan.plan_grid`) before it starts, and asks for ``--yes`` above one
hour of projected CPU time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from udbench._validation import UdbenchError, param_error
from udbench.commands._options import (
    DATA_DIR_HELP,
    check_data_dir,
    check_out_dir,
    out_path,
    parse_choice_list,
    parse_seeds,
)

#: Projected CPU-hours above which a study needs ``--yes``.
CONFIRM_CPU_HOURS = 1.0

study_app = typer.Typer(
    name="study",
    help="Studies beyond the benchmark table (paper Appendix D): wine OOD detection.",
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
        for key, secs in part.seconds.items():
            found.seconds.setdefault(key, []).extend(secs)
        for key, ds in part.datasets.items():
            found.datasets.setdefault(key, set()).update(ds)
    return found


def print_projection(
    console: Console,
    selected: list[Any],
    full: list[Any],
    methods: list[str],
    measured: Any,
    full_methods: list[str] | None = None,
) -> float:
    """Print the projected cost (generate + run) of the selection and of the full design.

    The full design runs ``full_methods`` (default: every registered method). Returns the
    selection's measured CPU-hours (unknown parts count 0; they are listed).
    """
    from udbench.methods.registry import registered_methods
    from udbench.tuning.plan import plan_grid

    names = [m.split(":", 1)[0] for m in methods]
    all_names = list(registered_methods()) if full_methods is None else full_methods
    totals = {}
    for what, specs, meths in (("full design", full, all_names), ("this run", selected, names)):
        counts, rows = plan_grid(specs, meths, 1, measured)
        rows = [r for r in rows if r.stage != "tune"]  # the study tunes nothing
        hours = sum(r.cpu_hours or 0.0 for r in rows)
        unknown = [f"{r.stage} {r.key}" for r in rows if r.cpu_hours is None]
        totals[what] = (hours, unknown, counts, rows)
    hours, unknown, counts, rows = totals["this run"]
    table = Table(title="projected CPU-hours of this run (count × median measured seconds)")
    for head in ("stage", "method / family", "count", "measured", "median s", "CPU-h"):
        table.add_column(head, justify="left" if head.startswith(("stage", "method")) else "right")
    for r in rows:
        table.add_row(
            r.stage,
            r.key,
            str(r.count),
            str(r.n_measured),
            "unknown" if r.median_s is None else f"{r.median_s:.3g}",
            "unknown" if r.cpu_hours is None else f"{r.cpu_hours:.3g}",
        )
    console.print(table)
    for what, (h, unk, c, _) in totals.items():
        console.print(
            f"{what}: {c['instances']} instances × {c['methods']} methods = {c['fits']} fits; "
            f"{h:.3g} CPU-h measured"
            + (
                f" + {len(unk)} unknown ({', '.join(unk[:6])}{', …' if len(unk) > 6 else ''})"
                if unk
                else ""
            ),
            highlight=False,
        )
    return hours


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
        [], "--measured", help="Results/tuning/task folder with measured times (repeatable)."
    ),
    workers: int | None = typer.Option(
        None, "--workers", "-w", help="Local Dask workers (default: usable cores; 0: inline)."
    ),
    timeout: float | None = typer.Option(None, "--timeout", help="Per-cell limit in seconds."),
    n_resamples: int = typer.Option(2000, "--n-resamples", help="Bootstrap replicates."),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Run even when the projection is above one CPU-hour."
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
) -> None:
    """Red-vs-white wine OOD detection vs the benchmark ranking (paper D.3).

    Generates the white-wine instances with red-wine query points into OUT/tasks, runs every
    method into OUT/results (resumable: a re-run skips finished instances and cells) and
    writes tables and figures to OUT/analysis.
    """
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
    console = Console(stderr=True)
    folders = [*measured] + [p for p in (out / "tasks", out / "results") if p.is_dir()]
    hours = print_projection(console, design.specs(), full, names, _measurements(folders))
    if hours > CONFIRM_CPU_HOURS and not yes:
        raise UdbenchError(
            f"udbench study wine-ood: the projected cost of this run is {hours:.3g} CPU-hours "
            f"(> {CONFIRM_CPU_HOURS:g}); pass --yes to run it, or select less with "
            "--seeds/--families/--methods"
        )
    n_new, failures = wo.generate_tasks(design, out / "tasks", data_dir=dd, workers=workers)
    console.print(f"instances: {n_new} generated in {out / 'tasks'}", highlight=False)
    for task_id, err in failures:
        console.print(f"[red]failed[/] {escape(task_id)}: {escape(err)}", highlight=False)
    method_specs: list[Any] = names
    if smoke:
        from udbench.methods.registry import get_method_class, make_method

        method_specs = []
        for n in names:
            name = n.split(":", 1)[0]
            params = dict(get_method_class(name).smoke_params)
            method_specs.append((n, make_method(name, **params)))
    summary = wo.run_cells(
        out / "tasks", method_specs, out / "results", tuned=tuned, workers=workers, timeout=timeout
    )
    console.print(
        f"cells: {summary.n_ok} ok, {summary.n_failed} failed, {summary.n_skipped} already done",
        highlight=False,
    )
    for key, err in summary.failures[:10]:
        console.print(f"[red]failed[/] {escape(key)}: {escape(err)}", highlight=False)
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
    Console().print(view)
    console.print(f"tables and figures in {out / 'analysis'}", highlight=False)
    if failures or summary.n_failed:
        raise typer.Exit(3)


def register(app: typer.Typer) -> None:
    """Add the ``study`` group."""
    app.add_typer(study_app, name="study")
