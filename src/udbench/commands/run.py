"""``udbench run``, ``leaderboard``, ``report`` and ``quickstart``: the main job end to end."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from udbench._lock import folder_lock
from udbench._losses import loss_help
from udbench._resampling import DEFAULT_N_RESAMPLES
from udbench._validation import check_timeout
from udbench.commands._console import make_console
from udbench.commands._interrupt import on_interrupt
from udbench.commands._options import (
    ClusterConfigOpt,
    PinOpt,
    SchedulerOpt,
    WorkersOpt,
    check_out_dir,
    check_resamples,
    execution_options,
    out_path,
    split_tasks_and_methods,
)

_METHODS_HELP = (
    "Method spec: registry name or import path with optional overrides, e.g. "
    "'nn-ens:n_members=5,lr=0.01'; on classification tasks a classifier's name "
    "(udbench methods, second table). Repeat the option, or list several after it."
)


#: Exit status of ``udbench run`` when every cell was stored but at least one failed (0: all
#: ok; 2: a user error before any work; 130: interrupted).
EXIT_CELLS_FAILED = 3


def _tuned_configure(tuned: Path, fallback: str, task_args: list[str], specs: list[str]):  # type: ignore[no-untyped-def]
    """The per-task configurations of ``run --tuned`` (every condition checked up front)."""
    from udbench.methods.configs import resolve_methods
    from udbench.recipes.suites import SUITES
    from udbench.tasks import Task
    from udbench.tasks.discovery import find_task_files
    from udbench.tuning.records import tuned_configurer
    from udbench.tuning.shipped import resolve_tuned

    folder, shipped = resolve_tuned(tuned, "udbench run --tuned", presets=list(SUITES))
    task_specs = []
    for path in find_task_files(task_args):
        try:
            task_specs.append(Task.load(path).spec)
        except Exception:  # an unreadable file: its cells fail, recorded by the run
            continue
    from udbench.evaluation.runner import classifiers_as_instances

    covered = None
    if shipped is not None:  # the conditions its campaign tunes (a suite grid reads no data)
        from udbench.recipes.suites import suite_grid
        from udbench.tuning.records import Condition

        covered = {Condition.of(s).key for s in suite_grid(SUITES[shipped])}
    configure = tuned_configurer(
        folder,
        resolve_methods(classifiers_as_instances(specs)),
        task_specs,
        fallback=fallback,
        shipped=shipped,
        suite_conditions=covered,
    )
    configure.warn_fallback()  # --fallback default: the cells run untuned are named
    return configure


def _console() -> Console:
    """A console; when not writing to a terminal, 100 columns for the notes (a leaderboard
    table is printed at its own full width there: :func:`udbench.commands._board.print_board`)."""
    console = make_console()
    return console if console.is_terminal else make_console(width=100)


def register(app: typer.Typer) -> None:
    """Add ``run``, ``leaderboard``, ``compare``, ``report`` and ``quickstart``."""

    @app.command("run")
    def run_cmd(
        tasks: list[str] = typer.Argument(
            ..., help="Task files, folders (searched recursively) or quoted globs."
        ),
        methods: list[str] = typer.Option(..., "--methods", "-m", help=_METHODS_HELP),
        out: Path = typer.Option(
            Path("udbench-out/results"), "--out", "-o", help="Results dir.", parser=out_path
        ),
        workers: WorkersOpt = None,
        scheduler: SchedulerOpt = None,
        cluster_config: ClusterConfigOpt = None,
        pin: PinOpt = None,
        timeout: float | None = typer.Option(
            None, "--timeout", help="Per-cell limit in seconds for fit + predict."
        ),
        keep_predictions: bool = typer.Option(
            False, "--keep-predictions", help="Store per-point predictions."
        ),
        retry_failed: bool = typer.Option(
            False, "--retry-failed", help="Re-run cells stored as failed."
        ),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar."),
        tuned: Path | None = typer.Option(
            None,
            "--tuned",
            help="Tuning folder (udbench tune --out), or a suite's name (gp-small) for the "
            "records shipped with udbench: each task's method gets its condition's tuned "
            "configuration.",
        ),
        fallback: str = typer.Option(
            "error",
            "--fallback",
            help="With --tuned, a condition without a record: 'error' or 'default' "
            "(the configuration as given).",
        ),
        loss: str | None = typer.Option(
            None,
            "--loss",
            help=f"Also score under these losses, comma-separated: {loss_help(scored=True)} "
            "(paper Table 2; squared loss is always scored). Columns <metric>_<loss>; see "
            f"docs/transfer.md. {loss_help(scored=True, described=True)}.",
        ),
    ) -> None:
        """Fit every method on every task, score it against the oracle, store one row per cell.

        A re-run with the same --out skips finished cells (--retry-failed: and re-runs the
        failed ones). A user's method class is imported from the current directory too (as
        ``udbench check-method`` does); local workers inherit it. Exit status: 0 all cells ok,
        3 some cells failed (all stored), 2 a user error, 130 interrupted.
        """
        comp = "udbench run"
        # numbers first: before any heavy import (the address and the file: below)
        execution = execution_options(comp, workers, scheduler, cluster_config, pin)
        check_timeout(comp, "--timeout", timeout)
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        from udbench.commands._progress import cell_progress
        from udbench.evaluation.losses import parse_losses
        from udbench.evaluation.runner import run_benchmark

        losses = parse_losses("udbench run", loss)
        check_out_dir("udbench run", out)
        execution.check_deployment()  # fail fast, before any work
        task_args, specs = split_tasks_and_methods(tasks, methods)
        configure = None
        if tuned is not None:  # every condition checked before the folder is made
            configure = _tuned_configure(tuned, fallback, task_args, specs)
        with folder_lock(out, comp):  # one writer per results folder
            if configure is not None:
                configure.copy_to(out / "tuned")  # the results folder carries its configurations
            stored = [0]  # cells this invocation stored, for the line after a Ctrl-C
            with on_interrupt(
                lambda: f"{stored[0]} cell(s) finished in this run are kept in {out}"
            ):
                with cell_progress(progress) as bar:

                    def on_cell(done: int, total: int, row: dict[str, Any] | None) -> None:
                        if row is not None:
                            stored[0] += 1
                        if bar is not None:
                            bar(done, total, row)

                    summary = run_benchmark(
                        task_args,
                        specs,
                        out,
                        **execution.kwargs(),
                        timeout=timeout,
                        keep_predictions=keep_predictions,
                        retry_failed=retry_failed,
                        on_cell=on_cell,
                        configure=configure,
                        losses=losses,
                    )
            console = make_console()
            console.print(
                f"{summary.n_cells} cells: {summary.n_ok} ok, {summary.n_failed} failed, "
                f"{summary.n_skipped} already finished → {summary.out}",
                highlight=False,
            )
            if losses and summary.n_skipped:
                console.print(
                    f"{summary.n_skipped} cell(s) were finished before and not scored again; add "
                    f"the {','.join(losses)} metrics to them with: udbench score {out} --loss "
                    f"{','.join(losses)}",
                    highlight=False,
                    markup=False,
                )
            for key, reason in summary.failures[:10]:
                console.print(f"  failed {key}: {reason}", highlight=False, markup=False)
            if len(summary.failures) > 10:
                console.print(f"  … and {len(summary.failures) - 10} more (see the results table)")
            console.print(
                f"next: udbench leaderboard {out}  ·  udbench report {out} --out REPORT_DIR",
                highlight=False,
                markup=False,
            )
        if summary.n_failed:
            console.print(
                f"{summary.n_failed} cell(s) failed (stored as failed, with their reasons); "
                "re-run with --retry-failed to try them again · exit status "
                f"{EXIT_CELLS_FAILED}",
                highlight=False,
                markup=False,
            )
            raise typer.Exit(EXIT_CELLS_FAILED)

    @app.command("leaderboard")
    def leaderboard_cmd(
        results: list[Path] = typer.Argument(
            ...,
            help="Results directories (or Parquet files); several are merged into one board "
            "(a cell in two of them counts once when its results agree, and is refused "
            "when they differ).",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print JSON (a list of objects)."),
        as_csv: bool = typer.Option(False, "--csv", help="Print CSV (every column)."),
        rank_by: str = typer.Option(
            "rho_eu_risk",
            "--by",
            help="Metric that ranks (rho_eu_risk, rho_au, rmse, …; classification results: "
            "also accuracy, nll, brier, ece and the Brier-target columns rho_eu_risk_brier, …).",
        ),
        rank_stat: str = typer.Option(
            "mean",
            "--rank-stat",
            help="Ranking statistic over the common instances: mean or mean_rank.",
        ),
        columns: str | None = typer.Option(
            None,
            "--columns",
            help="Comma-separated columns: rank_value, mean_rank, rho_eu_risk, rho_eu_var, "
            "rho_eu_point, rho_au, delta_ent_risk, rmse, n; for classification results also "
            "accuracy, nll, brier, ece and, against the Brier-score oracle targets, "
            "rho_eu_risk_brier, rho_eu_var_brier, rho_eu_point_brier, rho_au_brier, "
            "delta_ent_risk_brier (default: rho_eu_risk, rho_au, delta_ent_risk, rmse, n; "
            "classification: rho_eu_risk, rho_au, delta_ent_risk, accuracy, nll, n).",
        ),
        intervals: bool = typer.Option(
            False, "--intervals", help="Show \\[low, high] intervals instead of ±half-width."
        ),
        proxy_metrics: str | None = typer.Option(
            None,
            "--metrics",
            help="Proxy metrics to add as columns (docs/metrics.md), comma-separated or 'all': "
            "nll, crps, picp_50/90/95, mpiw_50/90/95, winkler_50/90/95, miscal_area, ence, "
            "sharpness, spearman_err_sd, ause, nll_f, crps_f, ause_f.",
        ),
        dataset: list[str] = typer.Option([], "--dataset", help="Only these datasets."),
        family: list[str] = typer.Option([], "--family", help="Only these oracle families."),
        noise: list[str] = typer.Option([], "--noise", help="Only these noise modes."),
        coverage: list[str] = typer.Option([], "--coverage", help="Only these coverages."),
        method: list[str] = typer.Option([], "--method", help="Only these method labels."),
        n_resamples: int = typer.Option(
            DEFAULT_N_RESAMPLES, "--n-resamples", help="Bootstrap replicates."
        ),
        loss: str | None = typer.Option(
            None,
            "--loss",
            help=f"Loss whose AU/EU decomposition the ρ and Δ_ent columns use: {loss_help()} "
            "(stored by udbench run/score --loss; default squared); classification results: "
            "log (the multiclass log loss, default) or brier (the Brier-score oracle "
            "targets, the *_brier columns). Other than the default, also prints Kendall's τ "
            "with the squared-loss (log-loss) ranking.",
        ),
    ) -> None:
        """Per method: mean ρ of EU/AU with the oracle targets, Δ_ent, RMSE, intervals, rank.

        Several results folders are merged (udbench leaderboard baselines/ mine/): your
        method's rows ranked among others' without re-running them. Filters repeat (--noise
        homoscedastic --noise linear) and combine (AND). The rank and what it is computed on
        are printed under the table.
        """
        check_resamples("udbench leaderboard", n_resamples)
        from udbench._validation import param_error
        from udbench.commands._board import (
            BRIER_COLUMNS,
            parse_columns,
            parse_metrics,
            print_board,
        )
        from udbench.evaluation.leaderboard import (
            LEADERBOARD_METRICS,
            filter_results,
            leaderboard_records,
        )
        from udbench.evaluation.proxies import PROXY_KEYS
        from udbench.evaluation.store import read_results_merged

        if as_json and as_csv:
            raise param_error("udbench leaderboard", "--json/--csv", "be given alone", "both")
        cols = parse_columns(columns)
        extra = parse_metrics(proxy_metrics)
        cols += [m for m in extra if m not in cols]
        averaged = {*PROXY_KEYS, *BRIER_COLUMNS}  # columns LEADERBOARD_METRICS leaves out
        wanted = [*extra, *(c for c in cols if c in averaged)]
        if rank_by in averaged:
            wanted.append(rank_by)
        metrics = list(dict.fromkeys([*LEADERBOARD_METRICS, *wanted]))
        from udbench.evaluation.board_loss import leaderboard_under_loss

        rows = filter_results(
            read_results_merged(results),
            dataset=dataset,
            family=family,
            noise=noise,
            coverage=coverage,
            method=method,
        )
        board = leaderboard_under_loss(
            rows,
            loss,
            metrics=metrics,
            rank_by=rank_by,
            rank_stat=rank_stat,
            n_resamples=n_resamples,
        )
        if board.attrs.get("task_type") == "classification" and columns is None:
            from udbench.commands._board import CLASSIFICATION_COLUMNS

            cols = parse_columns(",".join(CLASSIFICATION_COLUMNS)) + [
                m for m in extra if m not in CLASSIFICATION_COLUMNS
            ]
        if "reference_exact" in rows.columns:  # student-t noise: approximate oracle
            approx = rows["reference_exact"].astype("boolean").eq(False).fillna(False)
            if bool(approx.any()):
                n_approx = rows.loc[approx, "task_id"].nunique()
                board.attrs["ranking"] = (
                    str(board.attrs.get("ranking") or "")
                    + f" · {n_approx} instance(s) have an approximate reference posterior "
                    "(student-t noise, docs/transfer.md)"
                )
        if as_json:
            typer.echo(json.dumps(leaderboard_records(board), indent=2))
        elif as_csv:
            board.to_csv(sys.stdout, index=False)
        else:
            print_board(board, _console(), cols, intervals=intervals)

    @app.command("compare")
    def compare_cmd(
        results_a: Path = typer.Argument(..., help="Results directory A (the baseline)."),
        results_b: Path = typer.Argument(..., help="Results directory B."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON (a list of objects)."),
        n_resamples: int = typer.Option(
            DEFAULT_N_RESAMPLES, "--n-resamples", help="Bootstrap replicates."
        ),
    ) -> None:
        """Per method: mean difference B − A on the cells both hold, with 95% intervals.

        Common cells: the same method label on the same task instance with the same task
        content, valid in both. Paired differences, bootstrap over instances. A tuned run
        (labels <label>[tuned]) against a default one pairs <label>[tuned] with <label>.
        """
        check_resamples("udbench compare", n_resamples)
        from rich.table import Table

        from udbench.evaluation.compare import COMPARE_METRICS, compare_results
        from udbench.evaluation.leaderboard import METRIC_LABELS, leaderboard_records
        from udbench.evaluation.store import read_results

        table = compare_results(
            read_results(results_a), read_results(results_b), n_resamples=n_resamples
        )
        if as_json:
            typer.echo(json.dumps(leaderboard_records(table), indent=2))
            return
        view = Table(title="udbench compare · mean of B − A on common cells [95% interval]")
        view.add_column("method", overflow="fold")
        view.add_column("common", justify="right")
        for m in COMPARE_METRICS:
            view.add_column("Δ " + METRIC_LABELS.get(m, m), justify="right")

        def name(r: Any) -> str:  # a tuned label against a default one
            return str(r["method"]) + (
                "" if r["method_a"] == r["method"] else f" − {r['method_a']}"
            )

        for r in table.to_dict(orient="records"):
            cells = [name(r), str(r["n_common"])]
            for m in COMPARE_METRICS:
                d, lo, hi = r[f"{m}_diff"], r[f"{m}_low"], r[f"{m}_high"]
                if not (isinstance(d, float) and d == d):
                    cells.append("–")
                elif lo == lo and hi == hi:
                    cells.append(f"{d:+.3g} [{lo:+.2g}, {hi:+.2g}]")
                else:
                    cells.append(f"{d:+.3g}")
            view.add_row(*cells)
        console = _console()
        console.print(view)
        for r in table.to_dict(orient="records"):
            extra = [
                f"{r['n_only_a']} only in A" if r["n_only_a"] else "",
                f"{r['n_only_b']} only in B" if r["n_only_b"] else "",
                f"{r['n_changed_task']} with other task content (not compared)"
                if r["n_changed_task"]
                else "",
            ]
            if any(extra):
                console.print(
                    f"{name(r)}: " + ", ".join(e for e in extra if e),
                    highlight=False,
                    markup=False,
                )

    @app.command("report")
    def report_cmd(
        results: Path = typer.Argument(..., help="Results directory (or Parquet file)."),
        out: Path = typer.Option(
            Path("udbench-out/report"), "--out", "-o", help="Report folder.", parser=out_path
        ),
        bootstrap_unit: str = typer.Option(
            "instance",
            "--bootstrap-unit",
            help="Analyses: resample instances within datasets ('instance') or whole datasets.",
        ),
        cd_metric: list[str] = typer.Option(
            [],
            "--cd-metric",
            help="Metric of a critical-difference diagram (repeatable; default rho_eu_risk "
            "and crps): rho_eu_risk, rho_au, rmse, nmse or a proxy (udbench leaderboard "
            "--metrics).",
        ),
    ) -> None:
        """Write an HTML report (figures embedded, PNGs beside it) with the analyses of
        ``udbench analyze`` (tables and figures under REPORT/analyses/, linked)."""
        from udbench._validation import check_choice
        from udbench.analyses import BOOTSTRAP_UNITS
        from udbench.evaluation.leaderboard import METRIC_LABELS

        check_choice("udbench report", "--bootstrap-unit", bootstrap_unit, BOOTSTRAP_UNITS)
        for m in cd_metric:
            check_choice("udbench report", "--cd-metric", m, [*METRIC_LABELS, "rho_eu_au"])
        check_out_dir("udbench report", out)
        with folder_lock(out, "udbench report"):
            _report(results, out, bootstrap_unit, cd_metric)

    def _report(results: Path, out: Path, bootstrap_unit: str, cd_metric: list[str]) -> None:
        from udbench.analyses import analyze
        from udbench.evaluation.store import read_results
        from udbench.report.html import CD_METRICS, write_report

        df = read_results(results)
        extra = analyze(
            df, out / "analyses", bootstrap_unit=bootstrap_unit, link_prefix="analyses/"
        )
        folder = results if results.is_dir() else None  # kept predictions live there
        tuned: Any = None
        if results.is_dir() and (results / "tuned").is_dir():  # written by run --tuned
            from udbench.tuning.records import load_records

            tuned = load_records(results / "tuned")
        from udbench.analyses.transfer import transfer_sections

        sections = [*extra.sections, *(transfer_sections(results) if results.is_dir() else [])]
        path = write_report(
            df,
            out,
            sections=sections,
            results_dir=folder,
            tuned=tuned,
            cd_metrics=tuple(cd_metric) or CD_METRICS,
        )
        make_console().print(f"report written to {path}", highlight=False)

    @app.command("quickstart")
    def quickstart_cmd(
        out: Path = typer.Option(
            Path("quickstart-out"), "--out", "-o", help="Output folder.", parser=out_path
        ),
        workers: WorkersOpt = None,
        methods: list[str] = typer.Option(
            [],
            "--methods",
            "-m",
            help="Registered methods to run, each with its smoke settings (repeatable, or "
            "separated by commas or spaces; default: every method udbench registers; with "
            "--task classification: logreg-lap, gpc-lap, catboost-ve, nn-drop-softmax).",
        ),
        task: str = typer.Option(
            "regression",
            "--task",
            help="regression (GP tasks, every method, report) or classification (gpc tasks, "
            "a few fast classifiers, leaderboard; written under OUT/classification/).",
        ),
    ) -> None:
        """Offline demo on the embedded diabetes table: tasks, every method, leaderboard, report."""
        workers = execution_options("udbench quickstart", workers).workers
        from udbench._validation import check_choice
        from udbench.commands._board import CLASSIFICATION_COLUMNS, parse_columns, print_board
        from udbench.commands._progress import cell_progress
        from udbench.evaluation.runner import CellCallback
        from udbench.recipes.quickstart import (
            QUICKSTART_CLASSIFIERS,
            QUICKSTART_METHODS,
            quickstart,
            quickstart_classification,
        )

        check_choice("udbench quickstart", "--task", task, ["regression", "classification"])
        check_out_dir("udbench quickstart", out)
        names = tuple(n for m in methods for n in m.replace(",", " ").split())
        console = _console()
        root = out / "classification" if task == "classification" else out
        stored = [0]  # cells this invocation stored, for the line after a Ctrl-C

        def kept() -> str:
            return (
                f"the task files and {stored[0]} cell(s) finished in this run are kept in "
                f"{root / 'tasks'} and {root / 'results'}"
            )

        def counted(bar: CellCallback | None) -> CellCallback:
            def on_cell(done: int, total: int, row: dict[str, Any] | None) -> None:
                if row is not None:
                    stored[0] += 1
                if bar is not None:
                    bar(done, total, row)

            return on_cell

        if task == "classification":
            with (
                on_interrupt(kept),
                folder_lock(out, "udbench quickstart"),
                cell_progress(console=console) as bar,
            ):
                board = quickstart_classification(
                    out,
                    workers=workers,
                    methods=names or QUICKSTART_CLASSIFIERS,
                    console=console,
                    on_cell=counted(bar),
                )
            print_board(board, console, parse_columns(",".join(CLASSIFICATION_COLUMNS)))
            console.print(f"results in {out / 'classification' / 'results'}", highlight=False)
            return
        with (
            on_interrupt(kept),
            folder_lock(out, "udbench quickstart"),
            cell_progress(console=console) as bar,
        ):
            board, report = quickstart(
                out,
                workers=workers,
                methods=names or QUICKSTART_METHODS,
                console=console,
                on_cell=counted(bar),
            )
        print_board(board, console)
        console.print(f"report written to {report}", highlight=False)
