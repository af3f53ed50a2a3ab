"""``udbench analyze``: the paper's analyses of a results folder as tables and figures."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from udbench._lock import folder_lock
from udbench._losses import CLASSIFICATION_BOARD_LOSSES, loss_help, loss_names
from udbench._resampling import DEFAULT_CONFIDENCE, DEFAULT_N_RESAMPLES
from udbench._validation import check_seed
from udbench.commands._console import make_console
from udbench.commands._options import check_level, check_out_dir, check_resamples, out_path

if TYPE_CHECKING:
    import pandas as pd

#: The classification losses of ``--clf-loss`` (those of ``udbench leaderboard --loss``).
CLASSIFICATION_LOSSES = tuple(CLASSIFICATION_BOARD_LOSSES)
#: Every ``--loss`` value some task type takes.
ANALYSIS_LOSSES = (*loss_names(), *(n for n in CLASSIFICATION_LOSSES if n not in loss_names()))


def register(app: typer.Typer) -> None:
    """Add ``analyze``."""

    @app.command("analyze")
    def analyze_cmd(
        results: Path = typer.Argument(..., help="Results directory (or Parquet file)."),
        out: Path = typer.Option(
            Path("udbench-out/analyses"), "--out", "-o", help="Output folder.", parser=out_path
        ),
        bootstrap_unit: str = typer.Option(
            "instance",
            "--bootstrap-unit",
            help="Resample instances within datasets ('instance') or whole datasets ('dataset').",
        ),
        n_resamples: int = typer.Option(
            DEFAULT_N_RESAMPLES, "--n-resamples", help="Bootstrap replicates."
        ),
        confidence: float = typer.Option(
            DEFAULT_CONFIDENCE, "--confidence", help="Interval coverage."
        ),
        seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap resampling."),
        loss: str | None = typer.Option(
            None,
            "--loss",
            help=f"Loss whose AU/EU decomposition the regression analyses use: {loss_help()} "
            "(stored by udbench run/score --loss; default squared). Results holding other "
            "losses also get loss_agreement: Kendall's τ of each loss's ranking with the "
            "squared-loss one. Classification rows: log (the multiclass log loss, default) "
            "or brier (ρ and Δ_ent against the Brier-score oracle targets, as udbench "
            "leaderboard --loss brier); each task type takes --loss when it is one of its "
            "losses, else its default (--loss brier: Brier for classification rows, squared "
            "for regression ones; --loss log: log for both); a loss that fits no row is an "
            "error.",
        ),
        clf_loss: str | None = typer.Option(
            None,
            "--clf-loss",
            help="Classification loss alone, log or brier (default: --loss when it is one, "
            "else log), for results with regression rows too: --loss crps --clf-loss brier. "
            "Classification rows holding the Brier columns also get clf_loss_agreement: "
            "Kendall's τ of the log-loss and Brier-score rankings of the classifiers.",
        ),
    ) -> None:
        """Headline table, Kendall's W stability, matched-prior advantage, entanglement,
        per-shell EU quality and accuracy, with bootstrap intervals: CSV + LaTeX tables,
        PNG + SVG figures and an HTML page (analyses.html) in --out."""
        comp = "udbench analyze"
        check_resamples(comp, n_resamples)  # numbers first, before any import or read
        check_level(comp, "--confidence", confidence)
        check_seed(comp, "--seed", seed)
        from udbench._validation import check_choice
        from udbench.analyses import analyze
        from udbench.analyses._common import BOOTSTRAP_UNITS
        from udbench.evaluation.store import read_results

        check_choice("udbench analyze", "--bootstrap-unit", bootstrap_unit, BOOTSTRAP_UNITS)
        # a name no task type knows fails before the read; whether it fits these rows after
        check_choice("udbench analyze", "--loss", loss or "squared", ANALYSIS_LOSSES)
        check_choice("udbench analyze", "--clf-loss", clf_loss or "log", CLASSIFICATION_LOSSES)
        check_out_dir("udbench analyze", out)
        with folder_lock(out, comp):
            res = analyze(
                read_results(results),
                out,
                bootstrap_unit=bootstrap_unit,
                n_resamples=n_resamples,
                confidence=confidence,
                random_state=seed,
                loss=loss,
                clf_loss=clf_loss,
            )
        console = make_console()
        head = res.tables.get("headline", res.tables.get("clf_headline"))
        console.print(
            f"{0 if head is None else len(head)} methods; {len(res.files)} files written to "
            f"{out} (tables/*.csv|tex, figures/*.png|svg)",
            highlight=False,
        )
        for name in ("stability", "clf_stability"):
            _print_w(console, res.tables.get(name), "classification, " if "clf" in name else "")
        agree = res.tables.get("loss_agreement")
        if agree is not None:
            for r in agree[agree["factor"] == "all"].to_dict(orient="records"):
                tau = float(r["tau"])
                text = "–" if tau != tau else f"{tau:.3f} [{r['tau_low']:.3f}, {r['tau_high']:.3f}]"
                console.print(
                    f"  Kendall's τ, squared vs {r['loss']} ranking ({r['criterion_label']}): "
                    f"{text}  ({r['n_methods']} methods)",
                    highlight=False,
                    markup=False,
                )
        clf_agree = res.tables.get("clf_loss_agreement")
        for r in [] if clf_agree is None else clf_agree.to_dict(orient="records"):
            console.print(
                f"  Kendall's τ, log-loss vs Brier-score ranking of the classifiers "
                f"({r['criterion_label']}): {_interval(r, 'tau')}  ({r['n_methods']} methods)",
                highlight=False,
                markup=False,
            )
        console.print(f"page: {res.html}", highlight=False)


def _interval(r: Mapping[Any, Any], key: str) -> str:
    v = float(r[key])
    return "–" if v != v else f"{v:.3f} [{r[f'{key}_low']:.3f}, {r[f'{key}_high']:.3f}]"


def _print_w(console: Any, stab: pd.DataFrame | None, what: str) -> None:
    """One line per Kendall's W of a stability table (none when the table is absent)."""
    for r in [] if stab is None else stab.to_dict(orient="records"):
        console.print(
            f"  Kendall's W ({what}{r['criterion']}, {r['factor']}): {_interval(r, 'W')}  "
            f"({r['n_methods']} methods, {r['n_levels']} levels)",
            highlight=False,
            markup=False,
        )
