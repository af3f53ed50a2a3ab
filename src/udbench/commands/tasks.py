"""``udbench generate`` (task instances to files) and ``udbench check`` (pooled acceptance)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from udbench._lock import folder_lock
from udbench._validation import (
    MAX_WORKERS_PER_CORE,
    UdbenchError,
    check_int,
)
from udbench.commands._check import APPROXIMATE_SUFFIX, check_directory, check_tasks
from udbench.commands._check_tables import print_check_tables
from udbench.commands._console import make_console
from udbench.commands._options import (
    DATA_DIR_HELP,
    ClusterConfigOpt,
    SchedulerOpt,
    check_data_dir,
    check_out_dir,
    execution_options,
    out_path,
    parse_seeds,
)
from udbench.priors import DEFAULT_FIDELITY, MAX_N_CLASSES, Fidelity
from udbench.tasks.grid import GridPlan, GridProgress, expand_grid, generate_grid
from udbench.tasks.replacement import MAX_REPLACEMENTS
from udbench.tasks.spec import DEFAULT_DRAWS, MAX_DRAWS, MIN_DRAWS

__all__ = [
    "APPROXIMATE_SUFFIX",
    "EXIT_CHECK_FAILED",
    "check_directory",
    "check_tasks",
    "expand_grid",
    "parse_seeds",
    "register",
]

#: Most seed replacements ``--max-replacements`` accepts (each one a whole new instance).
MAX_REPLACE_LIMIT = 100

_FIDELITY_HELP = (
    f"Prior preset: {', '.join(x.value for x in Fidelity)}; only "
    f"{', '.join(x.value for x in Fidelity if x.is_reference)} give reference posteriors "
    "(BNN held to the R̂ rule; HBART presets validated by warm-up sensitivity, SPEC §7)."
)


def generate_command(
    datasets: str = typer.Option("diabetes", "--datasets", help="Comma list or 'all'."),
    families: str = typer.Option(
        "gp",
        "--families",
        help="Comma list or 'all' (the regression families); the classification family "
        "'gpc' when named.",
    ),
    noise: str = typer.Option(
        "all",
        "--noise",
        help="Noise modes: comma list or 'all' (the four of SPEC §4); 'student-t' (approximate "
        "reference posterior) only when named.",
    ),
    coverage: str = typer.Option("all", "--coverage", help="Coverages: comma list or 'all'."),
    seeds: str = typer.Option("0", "--seeds", help="E.g. 0-9, 0,2,5 or 'all' (0-9)."),
    draws: int = typer.Option(
        DEFAULT_DRAWS,
        "--draws",
        help=f"Posterior draws D per instance ({MIN_DRAWS} to {MAX_DRAWS}; for MCMC families a "
        "multiple of the preset's chains).",
    ),
    fidelity: str = typer.Option(
        DEFAULT_FIDELITY.value,
        "--fidelity",
        help=_FIDELITY_HELP,
    ),
    out: Path = typer.Option(
        Path("udbench-out/tasks"), "--out", help="Output folder.", parser=out_path
    ),
    jobs: int = typer.Option(
        1,
        "--workers",
        "-w",
        "--jobs",
        "-j",
        help="Local worker processes generating instances in parallel (Dask); 1 or 0: in this "
        f"process; at most {MAX_WORKERS_PER_CORE} × the usable cores.",
    ),
    scheduler: SchedulerOpt = None,
    cluster_config: ClusterConfigOpt = None,
    max_replacements: int = typer.Option(
        MAX_REPLACEMENTS,
        "--max-replacements",
        help="Seed replacements tried for an MCMC instance rejected by the R̂ rule (SPEC §7) "
        f"before it is reported as failed (0 to {MAX_REPLACE_LIMIT}); 0 fails at the first "
        "rejection.",
    ),
    classes: str | None = typer.Option(
        None,
        "--classes",
        help="Classification families (gpc) only: the numbers of classes K, a comma list of "
        f"integers from 2 to {MAX_N_CLASSES}; default 3. An error without gpc in --families.",
    ),
    difficulty: str | None = typer.Option(
        None,
        "--difficulty",
        help="Classification families (gpc) only: the temperature level rule's difficulties "
        "(easy, medium, hard), a comma list or 'all'; default medium. An error without gpc "
        "in --families.",
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    draws_train: bool | None = typer.Option(
        None,
        "--draws-train/--no-draws-train",
        help="Also store the posterior draws at the training inputs (D × n float32). Default: "
        "off for the GP (its checks use the exact posterior), on for the MCMC families.",
    ),
    overwrite: bool = typer.Option(
        False,
        "--overwrite",
        help="Replace existing task files made with other settings (fidelity, draws) or from "
        "other data; without it such a clash is an error and nothing is generated.",
    ),
) -> None:
    """Generate task instances (SPEC §6) as files in --out.

    An existing file of the same instance, settings and data is skipped (an interrupted run
    resumes); a damaged one is generated again; one made with other settings or from other
    data is an error (exit 2) unless --overwrite.
    """
    comp = "udbench generate"
    # numbers first, before anything heavy is imported (JAX: seconds)
    check_int(comp, "--draws", draws, minimum=MIN_DRAWS, maximum=MAX_DRAWS)
    execution = execution_options(comp, jobs, scheduler, cluster_config)
    check_int(comp, "--max-replacements", max_replacements, minimum=0, maximum=MAX_REPLACE_LIMIT)
    execution.check_deployment()  # fail fast, before any work
    check_data_dir("generate", data_dir)
    check_out_dir("generate", out)
    dd = None if data_dir is None else str(data_dir)
    specs = expand_grid(
        datasets,
        families,
        noise,
        coverage,
        seeds,
        fidelity,
        draws,
        dd,
        classes=classes,
        difficulty=difficulty,
    )
    with folder_lock(out, comp):
        _generate(
            specs,
            out,
            dd,
            jobs,
            scheduler,
            cluster_config,
            max_replacements,
            draws_train,
            overwrite,
        )


class _GenerateProgress(GridProgress):
    """``udbench generate``'s lines and progress bars for :func:`generate_grid`."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.bar: Progress | None = None
        self._bar_task: Any = None

    def _progress(self) -> Progress:
        if self.bar is None:  # started after the inline fits (their spinner is a live display)
            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
            )
            self.bar.start()
        return self.bar

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()

    def planned(self, plan: GridPlan, out: Path) -> None:
        n_clash, n_todo = len(plan.clashes), len(plan.todo)
        self.console.print(
            f"{len(plan.specs)} instances selected, {plan.n_done} already done, "
            f"{n_todo} to generate in {out}"
            + (f" ({n_clash} replacing files made with other settings)" if n_clash else "")
            + (
                f" ({plan.n_damaged} damaged or old-format files generated again)"
                if plan.n_damaged
                else ""
            ),
            highlight=False,
        )

    def fitting_prior(self, key: tuple[str, str, Any]) -> Any:
        # a GP prior's kernel fit takes minutes to most of an hour on one core (once; then
        # read from the cache): show that something is happening, and how long. A status
        # line is always markup (rich's Spinner): the dataset name is escaped
        return self.console.status(
            escape(f"prior {key[0]} on {key[1]} ({key[2]}): fitting, or reading the cache …")
        )

    def priors_on_workers(self, n: int) -> None:
        self._bar_task = self._progress().add_task("fitting priors", total=n)

    def prior_ready(self, key: tuple[str, str, Any], seconds: float, on_worker: bool) -> None:
        self.console.print(
            f"prior {key[0]} on {key[1]} ({key[2]}): ready in {seconds:.1f} s"
            + (" (on a worker)" if on_worker else ""),
            highlight=False,
        )
        if on_worker:
            self._progress().advance(self._bar_task)

    def generating(self, n: int) -> None:
        self._bar_task = self._progress().add_task("generating", total=n)

    def instance_done(self, spec: Any, error: str) -> None:
        self._progress().advance(self._bar_task)


def _generate(
    specs: list[Any],
    out: Path,
    dd: str | None,
    jobs: int,
    scheduler: str | None,
    cluster_config: Path | None,
    max_replacements: int,
    draws_train: bool | None,
    overwrite: bool,
) -> None:
    """The body of ``udbench generate`` once its options are checked (the folder is locked):
    :func:`udbench.tasks.grid.generate_grid` with a progress display."""
    console = make_console(stderr=True)
    progress = _GenerateProgress(console)
    try:
        # the same executor as ``udbench run``: inline, a local Dask cluster, a scheduler or
        # a cluster file (SLURM)
        result = generate_grid(
            specs,
            out,
            data_dir=dd,
            workers=jobs,
            scheduler=scheduler,
            cluster_config=cluster_config,
            max_replacements=max_replacements,
            draws_train=draws_train,
            overwrite=overwrite,
            progress=progress,
        )
    finally:
        progress.close()
    for task_id, err in result.failures:
        console.print(
            f"[red]failed[/] {escape(task_id)}: {escape(err)}", highlight=False, markup=True
        )
    if result.failures:
        raise UdbenchError(
            f"generate: {len(result.failures)} of {len(result.plan.todo)} instances failed"
        )


#: ``udbench check --strict`` exit status when a SPEC §7 check fails.
EXIT_CHECK_FAILED = 4


def check_command(
    tasks: list[str] = typer.Argument(
        ..., help="Task files, folders (searched recursively) or globs, as for run."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
    strict: bool = typer.Option(
        False, "--strict", help=f"Exit {EXIT_CHECK_FAILED} when any SPEC §7 verdict is FAIL."
    ),
    by_dataset: bool = typer.Option(
        False, "--by-dataset", help="Also pool per dataset (a row per family and dataset)."
    ),
) -> None:
    """Pooled acceptance checks of the reference posteriors in TASKS (SPEC §7).

    Every task file is verified (checksums of its metadata and arrays) first. Each family (each
    family and fidelity, when TASKS hold one family at several presets) gets a verdict per check
    with its threshold beside the figure (pass / FAIL, or "too few instances to judge"), judged
    against what a correct posterior gives at the tasks' D; the figures SPEC §7 records without
    a threshold are marked "not gated". Classification tasks whose training labels hold fewer
    than K classes are listed as degenerate (valid and pooled; --json: "degenerate"), and HBART
    instances whose chains look stuck (about one effective draw of σ_f² per chain; not a SPEC §7
    gate; --json: "stuck_chains"). Exit status 1 if any file is invalid (listed with the reason,
    left out of the tables; so is a file named for another task id than it holds), 2 for a bad
    argument, 4 with --strict when a verdict is FAIL.
    """
    report = check_tasks(tasks, by_dataset=by_dataset)
    result, invalid = report["families"], report["invalid"]
    failed = [
        (fam, v["check"])
        for fam, r in result.items()
        for v in r["verdicts"]
        if v["verdict"].startswith("FAIL")
    ]
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        if invalid:
            raise typer.Exit(code=1)
        if strict and failed:
            raise typer.Exit(code=EXIT_CHECK_FAILED)
        return
    console = make_console(width=max(120, os.get_terminal_size(0).columns if os.isatty(0) else 120))
    title = tasks[0] if len(tasks) == 1 else f"{len(tasks)} task arguments"
    print_check_tables(report, title, console)

    def say(text: str) -> None:  # plain text: task ids and paths hold brackets
        console.print(text, highlight=False, markup=False)

    approx = report.get("approximate") or []
    if approx:
        say(
            f"{len(approx)} task file(s) have an APPROXIMATE reference posterior (rows marked "
            f"'{APPROXIMATE_SUFFIX.strip()}'): {approx[0]['note']}. Their calibration "
            "figures measure the misspecification, not a sampler fault."
        )
    degenerate = report.get("degenerate") or []
    if degenerate:
        first = degenerate[0]
        say(
            f"{len(degenerate)} classification task(s) have training labels of fewer than K "
            f"classes (e.g. {first['task_id']}: no label of class(es) "
            f"{', '.join(map(str, first['missing_classes']))} of {first['n_classes']}): valid and "
            "pooled above, but their classifiers see fewer classes and their rank correlations "
            "say little (docs/classification.md, 'Degenerate instances'; --json lists them all)."
        )
    stuck = report.get("stuck_chains") or []
    if stuck:
        first = stuck[0]
        say(
            f"warning: {len(stuck)} instance(s) whose R̂ is not a gate look like stuck chains, "
            f"about one effective draw of σ_f² per chain (e.g. {first['task_id']}: "
            f"{first['ess_per_chain']:.2f}): their draws' spread is likely between chains, so "
            "their posterior variance and EU*_var look inflated (not a SPEC §7 gate; "
            "docs/priors-mcmc.md; --json lists them all)."
        )
    for bad in invalid:
        console.print(f"[bold red]invalid[/] {escape(bad['error'])}", highlight=False, markup=True)
    if invalid:
        total = len(invalid) + sum(r["n_instances"] for r in result.values())
        unreadable = sum(1 for bad in invalid if bad.get("unreadable"))
        misnamed = sum(1 for bad in invalid if bad.get("misnamed"))
        corrupt = len(invalid) - unreadable - misnamed
        if corrupt:
            console.print(
                f"{corrupt} of {total} task files are invalid (left out of the tables above); "
                "regenerate them with udbench generate",
                highlight=False,
            )
        if unreadable:
            console.print(
                f"{unreadable} of {total} task files cannot be read by this user (left out of "
                "the tables above): fix their permissions (chmod u+r) and check again",
                highlight=False,
            )
        if misnamed:
            console.print(
                f"{misnamed} of {total} task files are named for another task than they hold "
                "(left out of the tables above): rename each to the task id it holds, as "
                "its line says, and check again",
                highlight=False,
            )
        raise typer.Exit(code=1)
    if failed:
        console.print(
            "failed: " + "; ".join(f"{fam} {check}" for fam, check in failed), highlight=False
        )
        if strict:
            raise typer.Exit(code=EXIT_CHECK_FAILED)


def register(app: typer.Typer) -> None:
    """Add ``generate`` and ``check`` to ``app``."""
    app.command("generate")(generate_command)
    app.command("check")(check_command)
