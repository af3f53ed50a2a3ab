"""``udbench score``: add other losses' metrics (CRPS, log score) to a finished results folder."""

from __future__ import annotations

from pathlib import Path

import typer

from udbench._lock import folder_lock
from udbench._losses import loss_help
from udbench._validation import param_error
from udbench.commands._console import make_console

#: Exit status when some ok cells could not be scored (predictions not kept, task file gone).
EXIT_CELLS_SKIPPED = 3


def register(app: typer.Typer) -> None:
    """Add ``score``."""

    @app.command("score")
    def score_cmd(
        results: Path = typer.Argument(..., help="Results folder written by udbench run."),
        loss: str = typer.Option(
            ...,
            "--loss",
            help=f"Losses to score, comma-separated ({loss_help(scored=True)}; squared is always "
            f"stored) — {loss_help(scored=True, described=True)}.",
        ),
        force: bool = typer.Option(
            False, "--force", help="Score cells that already hold a loss again."
        ),
        tasks: list[Path] = typer.Option(
            [],
            "--tasks",
            help="Task files or folders to find a cell's task file in by its id, when the "
            "stored path is gone (the tasks were moved). Repeatable.",
        ),
    ) -> None:
        """Score the stored predictions under the CRPS / log-score decompositions (Table 2).

        Every ok cell run with --keep-predictions gets the columns <metric>_<loss>: oracle
        targets from its task file's reference draws, the method's terms from its Gaussian
        predictive N(mean, AU + EU) in closed form. Its other columns keep their values. Then
        'udbench leaderboard RESULTS --loss crps' and 'udbench analyze RESULTS --loss crps'
        rank under that loss. Exit status 3 when some ok cells could not be scored (listed).
        """
        from udbench.evaluation.loss_rescoring import score_results
        from udbench.evaluation.losses import parse_losses

        losses = parse_losses("udbench score", loss)
        if not results.is_dir():
            raise param_error(
                "udbench score", "RESULTS", "be a results folder written by 'udbench run'", results
            )
        with folder_lock(results, "udbench score"):  # it rewrites the folder's cells
            summary = score_results(results, losses, force=force, task_dirs=tasks)
        console = make_console()
        console.print(
            f"{summary.n_ok} ok cells: {summary.n_scored} scored under "
            f"{','.join(summary.losses) or '(squared only: nothing to do)'}, "
            f"{summary.n_already} already scored, {len(summary.skipped)} could not be scored",
            highlight=False,
            markup=False,
        )
        for key, reason in summary.skipped[:10]:
            console.print(f"  not scored {key}: {reason}", highlight=False, markup=False)
        if len(summary.skipped) > 10:
            console.print(f"  … and {len(summary.skipped) - 10} more", highlight=False)
        if summary.n_no_predictions:
            console.print(
                f"{summary.n_no_predictions} cell(s) were run without --keep-predictions, so "
                "there is nothing to score: run those methods again with --keep-predictions "
                "into a new --out (a finished cell is skipped in its own folder)",
                highlight=False,
                markup=False,
            )
        if summary.skipped:
            raise typer.Exit(EXIT_CELLS_SKIPPED)
