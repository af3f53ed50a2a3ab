"""``udbench run``, ``leaderboard``, ``report`` and ``quickstart``: the main job end to end."""

from __future__ import annotations

import glob
import json
import os
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from udbench.commands._options import check_out_dir, out_path

_METHODS_HELP = (
    "Method spec: registry name or import path with optional overrides, e.g. "
    "'nn-ens:n_members=5,lr=0.01'. Repeat the option, or list several after it."
)


def _split_tasks_and_methods(tasks: list[str], methods: list[str]) -> tuple[list[str], list[str]]:
    """Let ``--methods a b c`` work: positionals that are registered methods, not paths, move."""
    from udbench.methods import get_method_class
    from udbench.methods.registry import parse_method_spec

    keep: list[str] = []
    extra: list[str] = []
    for item in tasks:
        if Path(item).exists() or glob.has_magic(item):
            keep.append(item)
            continue
        try:
            get_method_class(parse_method_spec(item)[0])
        except Exception:
            keep.append(item)
        else:
            extra.append(item)
    specs = [s for text in methods for s in text.split()] + extra
    return keep, specs


def _tuned_configure(tuned: Path, fallback: str, task_args: list[str], specs: list[str]):  # type: ignore[no-untyped-def]
    """The per-task configurations of ``run --tuned`` (every condition checked up front)."""
    from udbench.methods.configs import resolve_methods
    from udbench.tasks import Task
    from udbench.tasks.discovery import find_task_files
    from udbench.tuning.records import tuned_configurer

    task_specs = []
    for path in find_task_files(task_args):
        try:
            task_specs.append(Task.load(path).spec)
        except Exception:  # an unreadable file: its cells fail, recorded by the run
            continue
    return tuned_configurer(tuned, resolve_methods(specs), task_specs, fallback=fallback)


def _console() -> Console:
    """A console; when not writing to a terminal, wide enough for the leaderboard."""
    console = Console()
    return console if console.is_terminal else Console(width=200)


def _print_board(board, console: Console) -> None:  # type: ignore[no-untyped-def]
    import math

    from pandas import NA as _NA

    def fmt(r: dict, m: str) -> str:
        v, lo, hi = r[m], r[f"{m}_low"], r[f"{m}_high"]
        if m in ("rho_au", "delta_ent_risk") and r.get("constant_aleatoric"):
            return "n/a (const. AU)"
        if v is None or not math.isfinite(v):
            return "–"
        if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
            return f"{v:.3f}"
        return f"{v:.3f} [{lo:.2f}, {hi:.2f}]"

    table = Table(title="udbench leaderboard (mean over instances, 95% bootstrap interval)")
    heads = [
        ("rank", "rank"),
        ("method", "method"),
        ("ρ EU·EU*risk", "rho_eu_risk"),
        ("ρ EU·EU*var", "rho_eu_var"),
        ("ρ EU·EU*point", "rho_eu_point"),
        ("ρ AU·AU*", "rho_au"),
        ("Δ_ent", "delta_ent_risk"),
        ("RMSE vs f*", "rmse"),
        ("valid", "n_valid"),
        ("failed", "n_failed"),
    ]
    for h, _ in heads:
        table.add_column(h, justify="left" if h == "method" else "right", no_wrap=h == "method")
    for r in board.to_dict(orient="records"):
        row = []
        for _, key in heads:
            if key == "rank" and r[key] is _NA:
                row.append("–")
            elif key in ("rank", "method", "n_valid", "n_failed"):
                row.append(str(r[key]))
            else:
                row.append(fmt(r, key))
        table.add_row(*row)
    console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``run``, ``leaderboard``, ``report`` and ``quickstart``."""

    @app.command("run")
    def run_cmd(
        tasks: list[str] = typer.Argument(
            ..., help="Task files, folders (searched recursively) or quoted globs."
        ),
        methods: list[str] = typer.Option(..., "--methods", "-m", help=_METHODS_HELP),
        out: Path = typer.Option(
            Path("udbench-out/results"), "--out", "-o", help="Results dir.", parser=out_path
        ),
        workers: int | None = typer.Option(
            None, "--workers", "-w", help="Local Dask workers (default: usable cores; 0: inline)."
        ),
        scheduler: str | None = typer.Option(
            None, "--scheduler", help="Address of a running Dask scheduler (tcp://host:8786)."
        ),
        cluster_config: Path | None = typer.Option(
            None, "--cluster-config", help="YAML/TOML file naming a cluster class (e.g. SLURM)."
        ),
        pin: bool | None = typer.Option(
            None,
            "--pin/--no-pin",
            help="Pin each worker to its own core(s), 1 BLAS thread per core "
            "(default: on for local workers, off otherwise).",
        ),
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
            help="Tuning folder (udbench tune --out): each task's method gets its "
            "condition's tuned configuration.",
        ),
        fallback: str = typer.Option(
            "error",
            "--fallback",
            help="With --tuned, a condition without a record: 'error' or 'default' "
            "(the configuration as given).",
        ),
    ) -> None:
        """Fit every method on every task, score it against the oracle, store one row per cell.

        A re-run with the same --out skips finished cells. A user's method class is imported
        from the current directory too (as ``udbench check-method`` does); local workers inherit
        it.
        """
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        from udbench.commands._progress import cell_progress
        from udbench.evaluation.runner import run_benchmark

        check_out_dir("udbench run", out)
        if scheduler is not None or cluster_config is not None:  # fail fast, before any work
            from udbench.evaluation.cluster import check_scheduler_address, load_cluster_config

            if scheduler is not None:
                check_scheduler_address(scheduler)
            if cluster_config is not None:
                load_cluster_config(cluster_config)
        task_args, specs = _split_tasks_and_methods(tasks, methods)
        configure = None
        if tuned is not None:
            configure = _tuned_configure(tuned, fallback, task_args, specs)
            configure.copy_to(out / "tuned")  # the results folder carries its configurations
        with cell_progress(progress) as on_cell:
            summary = run_benchmark(
                task_args,
                specs,
                out,
                workers=workers,
                scheduler=scheduler,
                cluster_config=cluster_config,
                pin=pin,
                timeout=timeout,
                keep_predictions=keep_predictions,
                retry_failed=retry_failed,
                on_cell=on_cell,
                configure=configure,
            )
        console = Console()
        console.print(
            f"{summary.n_cells} cells: {summary.n_ok} ok, {summary.n_failed} failed, "
            f"{summary.n_skipped} already finished → {summary.out}",
            highlight=False,
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

    @app.command("leaderboard")
    def leaderboard_cmd(
        results: Path = typer.Argument(..., help="Results directory (or Parquet file)."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON (a list of objects)."),
        as_csv: bool = typer.Option(False, "--csv", help="Print CSV."),
        rank_by: str = typer.Option("rho_eu_risk", "--by", help="Metric to rank by."),
        n_resamples: int = typer.Option(2000, "--n-resamples", help="Bootstrap replicates."),
    ) -> None:
        """Per method: mean ρ of EU/AU with the oracle targets, Δ_ent, RMSE, intervals, rank."""
        from udbench._validation import param_error
        from udbench.evaluation.leaderboard import leaderboard, leaderboard_records
        from udbench.evaluation.store import read_results

        if as_json and as_csv:
            raise param_error("udbench leaderboard", "--json/--csv", "be given alone", "both")
        board = leaderboard(read_results(results), rank_by=rank_by, n_resamples=n_resamples)
        if as_json:
            typer.echo(json.dumps(leaderboard_records(board), indent=2))
        elif as_csv:
            board.to_csv(sys.stdout, index=False)
        else:
            _print_board(board, _console())

    @app.command("report")
    def report_cmd(
        results: Path = typer.Argument(..., help="Results directory (or Parquet file)."),
        out: Path = typer.Option(
            Path("udbench-out/report"), "--out", "-o", help="Report folder.", parser=out_path
        ),
    ) -> None:
        """Write a self-contained HTML report (figures embedded, PNGs beside it)."""
        from udbench.evaluation.store import read_results
        from udbench.report.html import write_report

        check_out_dir("udbench report", out)
        extra: dict[str, Any] = {}
        if (results / "tuned").is_dir():  # written by run --tuned
            from udbench.tuning.records import load_records

            extra["tuned"] = load_records(results / "tuned")
        path = write_report(read_results(results), out, **extra)
        Console().print(f"report written to {path}", highlight=False)

    @app.command("quickstart")
    def quickstart_cmd(
        out: Path = typer.Option(
            Path("quickstart-out"), "--out", "-o", help="Output folder.", parser=out_path
        ),
        workers: int | None = typer.Option(
            None, "--workers", "-w", help="Local Dask workers (default: usable cores; 0: inline)."
        ),
    ) -> None:
        """Offline demo on the embedded diabetes table: tasks, five methods, leaderboard, report."""
        from udbench.commands._progress import cell_progress
        from udbench.recipes.quickstart import quickstart

        check_out_dir("udbench quickstart", out)
        console = _console()
        with cell_progress(console=console) as on_cell:
            board, report = quickstart(out, workers=workers, console=console, on_cell=on_cell)
        _print_board(board, console)
        console.print(f"report written to {report}", highlight=False)
