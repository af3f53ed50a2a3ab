"""``udbench validate-prior``: warm-up sensitivity validation of an MCMC preset (SPEC §7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from udbench._validation import check_int, param_error
from udbench.commands._console import make_console
from udbench.commands._options import (
    DATA_DIR_HELP,
    check_data_dir,
    out_path,
    parse_choice_list,
    parse_seeds,
)
from udbench.tasks.spec import MAX_DRAWS, MIN_DRAWS

__all__ = ["register", "validate_prior_command"]


def _ci(pair: list[float]) -> str:
    return f"[{pair[0]:.4f}, {pair[1]:.4f}]"


def print_validation(record: dict[str, Any], console: Console) -> None:
    """The figures and verdict of a :func:`udbench.tasks.validate_prior` record as tables."""
    table = Table(
        title=(
            f"Warm-up sensitivity: {record['family']} {record['fidelity']} "
            f"(warm-up {record['warmup']} vs {record['warmup_long']}, D = {record['n_draws']})"
        )
    )
    for col in (
        "dataset",
        "instances",
        "coverage 90 % [95 % CI]",
        f"coverage, {record['warmup_factor']}x warm-up",
        "change [95 % CI]",
        "|ΔSD|/SD median / p95",
        "equal warm-up floor median / p95",
        "corr(mean, f*)",
        "verdict",
    ):
        table.add_column(col)
    rows = [*record["per_dataset"].items(), ("pooled", record["pooled"])]
    for name, r in rows:
        verdict = "" if name == "pooled" else ("pass" if r["passed"] else "FAIL")
        table.add_row(
            name,
            str(r["n_instances"]),
            f"{r['coverage_base']:.4f} {_ci(r['coverage_base_ci'])}",
            f"{r['coverage_long']:.4f} {_ci(r['coverage_long_ci'])}",
            f"{r['coverage_change']:+.4f} {_ci(r['coverage_change_ci'])}",
            f"{r['sd_change_median']:.4f} / {r['sd_change_p95']:.4f}",
            f"{r['sd_floor_median']:.4f} / {r['sd_floor_p95']:.4f}",
            f"{r['corr_mean_fstar_median']:.3f}",
            verdict,
        )
    console.print(table)
    verdict = "PASS" if record["passed"] else "FAIL"
    console.print(f"verdict (SPEC §7 thresholds): {verdict}", highlight=False)
    for failure in record["failures"]:
        console.print(f"  failed: {failure}", highlight=False)
    if record["protocol_issues"]:
        console.print(
            "not the full SPEC §7 protocol: " + "; ".join(record["protocol_issues"]),
            highlight=False,
        )
    if record.get("minutes_per_instance") is not None:
        console.print(
            f"{record['minutes_per_instance']:.2f} min per instance at the preset "
            "(one conditioning run)",
            highlight=False,
        )


def validate_prior_command(
    family: str = typer.Option("hbart", "--family", help="MCMC prior family (hbart or bnn)."),
    fidelity: str = typer.Option("standard", "--fidelity", help="Preset to validate."),
    datasets: str = typer.Option(
        "protein,kin8nm", "--datasets", help="Comma list (SPEC §7: protein,kin8nm)."
    ),
    noise: str = typer.Option("all", "--noise", help="Noise modes: comma list or 'all'."),
    coverage: str = typer.Option("all", "--coverage", help="Coverages: comma list or 'all'."),
    seeds: str = typer.Option("0", "--seeds", help="E.g. 0 or 0-1."),
    warmup_factor: int = typer.Option(4, "--warmup-factor", help="Long run's warm-up factor."),
    draws: int = typer.Option(1000, "--draws", help="Posterior draws D per run."),
    max_train: int | None = typer.Option(
        None, "--max-train", help="Subsample training inputs (a reduced, cheaper validation)."
    ),
    max_eval: int | None = typer.Option(
        None, "--max-eval", help="Subsample the evaluation pool (reduced validation)."
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Also write the record to this JSON file.", parser=out_path
    ),
    record: bool = typer.Option(
        False,
        "--record",
        help="Store the record with the preset's documentation (the package's "
        "priors/validations/<family>-<fidelity>.json), where udbench check shows it.",
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the record as JSON."),
) -> None:
    """Validate an MCMC fidelity preset by warm-up sensitivity (SPEC §7).

    Runs the same instances at the preset and with a --warmup-factor times longer warm-up
    (and once more at the preset with another seed: the Monte Carlo floor), and reports the
    pooled 90 % coverage of both with bootstrap intervals, the change, the median and 95th
    percentile of the relative change of the posterior SD, and the verdict. Exit status 0
    whether the preset passes or not (the verdict is in the output).
    """
    comp = "udbench validate-prior"
    # numbers first: before any heavy import or data read
    check_int(comp, "--warmup-factor", warmup_factor, minimum=2)
    check_int(comp, "--draws", draws, minimum=MIN_DRAWS, maximum=MAX_DRAWS)
    check_int(comp, "--max-train", max_train, minimum=2, allow_none=True)
    check_int(comp, "--max-eval", max_eval, minimum=2, allow_none=True)
    from udbench.data import list_datasets
    from udbench.design import COVERAGES, NOISE_MODES
    from udbench.priors import record_path, save_validation
    from udbench.tasks import validate_prior

    check_data_dir("validate-prior", data_dir)
    keys = [s.key for s in list_datasets(include_ood=False)]
    ds = parse_choice_list("validate-prior", "datasets", datasets, keys)
    modes = parse_choice_list("validate-prior", "noise", noise, list(NOISE_MODES))
    covs = parse_choice_list("validate-prior", "coverage", coverage, list(COVERAGES))
    for name, value in (("max-train", max_train), ("max-eval", max_eval)):
        if value is not None and value < 2:
            raise param_error("validate-prior", name, "be an integer >= 2", value)
    console = make_console(width=160)
    progress = None if as_json else (lambda line: console.print(line, highlight=False))
    result = validate_prior(
        family,
        fidelity,
        ds,
        noise_modes=modes,
        coverages=covs,
        seeds=parse_seeds(seeds, command="validate-prior"),
        warmup_factor=warmup_factor,
        n_draws=draws,
        max_train=max_train,
        max_eval=max_eval,
        data_dir=None if data_dir is None else str(data_dir),
        progress=progress,
    )
    written = []
    if out is not None:
        written.append(save_validation(result, out))
    if record:
        written.append(save_validation(result, record_path(family, result["fidelity"])))
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    print_validation(result, console)
    for path in written:
        console.print(f"record written to {path}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``validate-prior`` to ``app``."""
    app.command("validate-prior")(validate_prior_command)
