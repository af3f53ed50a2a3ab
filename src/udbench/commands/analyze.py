"""``udbench analyze``: the paper's analyses of a results folder as tables and figures."""

from __future__ import annotations

from pathlib import Path

import typer

from udbench._lock import folder_lock
from udbench._losses import loss_help, loss_names
from udbench._resampling import DEFAULT_CONFIDENCE, DEFAULT_N_RESAMPLES
from udbench._validation import check_seed
from udbench.commands._console import make_console
from udbench.commands._options import check_level, check_out_dir, check_resamples, out_path


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
        loss: str = typer.Option(
            "squared",
            "--loss",
            help=f"Loss whose AU/EU decomposition the analyses use: {loss_help()} "
            "(stored by udbench run/score --loss). Results holding other losses also get "
            "loss_agreement: Kendall's τ of each loss's ranking with the squared-loss one.",
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
        check_choice("udbench analyze", "--loss", loss, loss_names())
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
            )
        console = make_console()
        head = res.tables["headline"]
        console.print(
            f"{len(head)} methods; {len(res.files)} files written to {out} "
            f"(tables/*.csv|tex, figures/*.png|svg)",
            highlight=False,
        )
        stab = res.tables["stability"]
        for r in stab.to_dict(orient="records"):
            w = float(r["W"])
            text = "–" if w != w else f"{w:.3f} [{r['W_low']:.3f}, {r['W_high']:.3f}]"
            console.print(
                f"  Kendall's W ({r['criterion']}, {r['factor']}): {text}  "
                f"({r['n_methods']} methods, {r['n_levels']} levels)",
                highlight=False,
                markup=False,
            )
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
        console.print(f"page: {res.html}", highlight=False)
