"""``udbench transfer``: rescore stored predictions under alternative oracles (docs/transfer.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from udbench._lock import folder_lock
from udbench._losses import loss_help
from udbench._resampling import DEFAULT_N_RESAMPLES
from udbench._validation import check_int, check_seed
from udbench.commands._console import make_console
from udbench.commands._options import DATA_DIR_HELP, check_out_dir, check_resamples, out_path


def register(app: typer.Typer) -> None:
    """Add ``transfer``."""

    @app.command("transfer")
    def transfer_cmd(
        results: Path = typer.Argument(
            ..., help="Results folder of 'udbench run --keep-predictions'."
        ),
        oracle: list[str] = typer.Option(
            ...,
            "--oracle",
            help="Alternative oracle (repeatable, or comma-separated): gp:KERNEL (e.g. "
            "gp:rbf, gp:matern12, gp:rq+linear; refitted on each task's training sample), "
            "gp:prior (the dataset's GP prior) or family:FAMILY (gp, hbart, bnn).",
        ),
        out: Path | None = typer.Option(
            None,
            "--out",
            "-o",
            help="Output folder (default RESULTS/transfer).",
            parser=out_path,
        ),
        tasks: list[Path] = typer.Option(
            [], "--tasks", help="Folder with the task files, if moved since the run (repeatable)."
        ),
        data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
        metric: list[str] = typer.Option(
            [],
            "--metric",
            help="Metric ordering the methods (repeatable; default rho_eu_risk and rho_eu_var).",
        ),
        bootstrap_unit: str = typer.Option(
            "instance",
            "--bootstrap-unit",
            help="Resample instances within datasets ('instance') or whole datasets ('dataset').",
        ),
        n_resamples: int = typer.Option(
            DEFAULT_N_RESAMPLES, "--n-resamples", help="Bootstrap replicates."
        ),
        seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap resampling."),
        fit_rows: int | None = typer.Option(
            None, "--fit-rows", help="gp:KERNEL: most training points the fit uses."
        ),
        fit_restarts: int | None = typer.Option(
            None, "--fit-restarts", help="gp:KERNEL: starts of the marginal-likelihood fit."
        ),
        fit_iters: int | None = typer.Option(
            None, "--fit-iters", help="gp:KERNEL: L-BFGS-B iterations per start."
        ),
        loss: str = typer.Option(
            "squared",
            "--loss",
            help="Loss of the oracle targets: squared (default), "
            f"{loss_help(scored=True, closed_form=True)} (Gaussian closed forms from each "
            "oracle's posterior moments and the task's own; tables in OUT/<oracle>/<loss>/).",
        ),
    ) -> None:
        """Rescore kept predictions under alternative oracles; Kendall's τ and rank shifts.

        Recomputes EU*_risk and EU*_var of every kept prediction under another reference
        posterior (same training sample, same known noise), scores every method against
        both oracles, and reports Kendall's τ between the two method orderings (bootstrap
        interval over instances) and each method's rank shift, pooled and per factor level.
        With --loss crps or log, the same for that loss's targets (docs/transfer.md).
        """
        name = "udbench transfer"
        # numbers first: before JAX (the oracles' fits) is imported
        check_resamples(name, n_resamples)
        check_seed(name, "--seed", seed)
        check_int(name, "--fit-rows", fit_rows, minimum=1, allow_none=True)
        check_int(name, "--fit-restarts", fit_restarts, minimum=1, allow_none=True)
        check_int(name, "--fit-iters", fit_iters, minimum=1, allow_none=True)
        from udbench._threads import fix_xla_threads
        from udbench._validation import check_choice

        fix_xla_threads()  # one XLA thread, as in task generation: before JAX is first used
        from udbench.analyses._common import BOOTSTRAP_UNITS
        from udbench.analyses.transfer import TRANSFER_METRICS, run_transfer
        from udbench.evaluation.transfer import parse_oracle

        specs = [parse_oracle(part, name) for o in oracle for part in o.split(",") if part]
        check_choice(name, "--bootstrap-unit", bootstrap_unit, BOOTSTRAP_UNITS)
        if out is not None:
            check_out_dir(name, out)
        given = {"max_rows": fit_rows, "restarts": fit_restarts, "maxiter": fit_iters}
        overrides = {k: v for k, v in given.items() if v is not None}
        console = make_console()

        def progress(done: int, total: int, task_id: str) -> None:
            console.print(f"  [{done}/{total}] {task_id}", highlight=False, markup=False)

        # one writer per output folder (default RESULTS/transfer)
        with folder_lock(results / "transfer" if out is None else out, name):
            res = run_transfer(
                results,
                specs,
                out=out,
                task_dirs=tasks,
                data_dir=data_dir,
                metrics=tuple(metric) or TRANSFER_METRICS,
                bootstrap_unit=bootstrap_unit,
                n_resamples=n_resamples,
                random_state=seed,
                loss=loss,
                on_task=progress,
                fit_settings=overrides or None,
            )
        for text, tau in res.tau.items():
            cells = res.cells[text]
            n_ok = int((cells["oracle_status"] == "ok").sum())
            console.print(
                f"{text}: {n_ok}/{len(cells)} cells rescored; files in {res.folders[text]}",
                highlight=False,
                markup=False,
            )
            for r in tau[tau["factor"] == "all"].to_dict(orient="records"):
                t = float(r["tau"])
                shown = "–" if t != t else f"{t:.3f} [{r['tau_low']:.3f}, {r['tau_high']:.3f}]"
                console.print(
                    f"  Kendall's τ ({r['metric']}, pooled): {shown}  ({r['n_methods']} "
                    f"methods, {r['n_instances']} instances)",
                    highlight=False,
                    markup=False,
                )
            ranks = res.ranks[text]
            first = ranks[(ranks["factor"] == "all") & (ranks["metric"] == ranks["metric"].iloc[0])]
            moved = first[first["rank_shift"].abs() > 0].sort_values("rank_shift")
            for r in moved.to_dict(orient="records"):
                console.print(
                    f"    {r['method']}: rank {r['rank_correct']:g} -> {r['rank_alternative']:g}",
                    highlight=False,
                    markup=False,
                )
