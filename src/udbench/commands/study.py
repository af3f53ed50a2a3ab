"""``udbench study ...``: the paper's follow-up studies (docs/studies.md).

- ``udbench study spectral-norm``: the spectral-normalisation ablation of the paper's D.4
  (:mod:`udbench.studies.spectral_norm`).
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from udbench._validation import UdbenchError
from udbench.commands._options import (
    DATA_DIR_HELP,
    check_data_dir,
    check_out_dir,
    out_path,
    parse_seeds,
)

__all__ = ["register", "study_app"]

#: Projected CPU-hours above which a study asks for ``--yes``.
YES_ABOVE_HOURS = 1.0

study_app = typer.Typer(
    name="study",
    help="The paper's follow-up studies (docs/studies.md).",
    no_args_is_help=True,
)


def _fmt(v: float | None) -> str:
    return "unknown" if v is None else f"{v:.3g}"


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
    workers: int | None = typer.Option(
        None, "--workers", help="Local Dask workers (default: one per core; 0: this process)."
    ),
    timeout: float | None = typer.Option(
        None, "--timeout", help="Per-trial and per-cell limit of fit + predict, seconds."
    ),
    measured: list[Path] = typer.Option(
        [], "--measured", help="Results/tuning/task folders whose times project the cost."
    ),
    n_resamples: int = typer.Option(2000, "--n-resamples", help="Bootstrap replicates."),
    yes: bool = typer.Option(
        False, "--yes", help="Run even if the projected CPU time is above an hour or unknown."
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
    from udbench.commands._progress import cell_progress  # imports pandas: not at --help
    from udbench.studies import spectral_norm as sn

    check_data_dir("study spectral-norm", data_dir)
    check_out_dir("study spectral-norm", out)
    dd = None if data_dir is None else str(data_dir)
    console = Console(stderr=True)
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
    table = Table(title="projected cost (udbench plan: count × median measured seconds)")
    for col in ("stage", "method / family", "count", "measured", "median s", "CPU-h"):
        table.add_column(col, justify="left" if col in ("stage", "method / family") else "right")
    for r in plan.rows:
        table.add_row(
            r.stage,
            escape(r.key),
            str(r.count),
            str(r.n_measured),
            _fmt(r.median_s),
            _fmt(r.cpu_hours),
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
        f"projected: {plan.known_cpu_hours:.3g} CPU-h measured"
        + (
            f" + {len(plan.unknown)} unmeasured ({', '.join(plan.unknown[:4])} …)"
            if plan.unknown
            else ""
        ),
        highlight=False,
    )
    full = sn.study_specs(
        "all", sn.FULL_SEEDS, sn.FAMILIES, fidelity=fidelity, draws=draws, data_dir=dd
    )
    if len(full) != len(specs):
        _, _, known, unknown = sn.project_cost(
            full,
            [str(type(a.estimator).name) for a in plan.arms],
            trials,
            [*measured, out / "tasks", out / "tuning", out / "results"],
        )
        console.print(
            f"full design ({len(full)} instances): {known:.3g} CPU-h measured"
            + (f" + {len(unknown)} unmeasured" if unknown else ""),
            highlight=False,
        )
    if not yes and (plan.known_cpu_hours > YES_ABOVE_HOURS or plan.unknown):
        why = (
            f"{plan.known_cpu_hours:.3g} CPU-h projected"
            if plan.known_cpu_hours > YES_ABOVE_HOURS
            else f"the cost of {len(plan.unknown)} stage(s) is not measured yet"
        )
        raise UdbenchError(
            f"study spectral-norm: {why} (above {YES_ABOVE_HOURS:g} h or unknown); pass --yes to "
            "run it, or measure a small version first (--datasets diabetes --seeds 0 "
            "--families gp --trials 2) and name its folders with --measured"
        )
    with cell_progress(progress, console) as on_cell:
        analysis = sn.run_study(
            plan,
            out,
            workers=workers,
            timeout=timeout,
            data_dir=dd,
            n_resamples=n_resamples,
            say=lambda text: console.print(escape(text), highlight=False),
            on_cell=on_cell,
        )
    paired = analysis.tables["paired"]
    from udbench.analyses import display_table

    Console().print(display_table(paired).to_string(index=False), highlight=False)
    console.print(f"tables, figures and study.html in {out / 'analysis'}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add the ``study`` sub-app to the root app."""
    app.add_typer(study_app, name="study")
