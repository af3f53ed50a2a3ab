"""Figures and the generated page of the classification campaign, from its records alone
(``udbench campaign summarise classification``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from udbench.campaigns.engine import Unit

__all__ = ["classification_summary", "export_cell_results", "write_classification_summary"]

#: Leaderboard columns of the page: (leaderboard metric, header).
_BOARD_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rho_eu_risk", "ρ(EU, EU*_risk)"),
    ("rho_au", "ρ(AU, AU*)"),
    ("delta_ent_risk", "Δ_ent"),
    ("rho_eu_var", "ρ(EU, EU*_var)"),
    ("rho_eu_point", "ρ(EU, EU*_point)"),
)
_LABEL_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("accuracy", "accuracy", ".3f"),
    ("nll", "NLL", ".2f"),
    ("brier", "Brier", ".3f"),
    ("ece", "ECE", ".3f"),
)


def _f(value: Any, spec: str) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    return format(value, spec)


def _check_markdown(summary: dict[str, Any]) -> list[str]:
    out = [
        "## Reference posteriors (gpc-check)",
        "",
        "`udbench check` figures of every instance, π* ranked among the D draws of π at every "
        "(evaluation point, class). Coverage: pooled over all points, 95 % percentile "
        "bootstrap over whole instances; SBC: the pooled 20-bin histogram's largest bin share "
        "− 5 %, beside its Monte Carlo mean (and 95th percentile) for independent ranks at the "
        "same count; R̂: split-R̂ of π, the rule max ≤ 1.05 per instance.",
        "",
        "| set | instances | coverage 90 % [95 % CI] | correct posterior | SBC max share − 5 % "
        "| independent ranks: mean / p95 | MCSE median / p95 | corr median | R̂ max | R̂ pass |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows = [("pooled", summary["pooled"]), *summary["datasets"].items()]
    for name, r in rows:
        ci = r["coverage_90_ci"]
        ci_text = "" if ci is None else f" [{ci[0]:.4f}, {ci[1]:.4f}]"
        out.append(
            f"| {name} | {r['n_instances']} | {r['coverage_90']:.4f}{ci_text} | "
            f"{_f(r['coverage_90_expected'], '.4f')} | {r['sbc_max_share_excess']:.4f} | "
            f"{r['sbc_max_share_excess_expected']:.4f} / {r['sbc_max_share_excess_p95']:.4f} | "
            f"{r['mcse_var_median']:.3f} / {r['mcse_var_p95']:.3f} | "
            f"{r['corr_mean_fstar_median']:.3f} | {_f(r['rhat_max'], '.4f')} | "
            f"{r['rhat_pass_fraction']:.0%} ({r['n_rhat_failed']} fail) |"
        )
    out += ["", f"Seeds replaced: {len(summary['replaced'])}."]
    for tid, rep in summary["replaced"].items():
        out.append(f"- `{tid}`: seed {rep['used_seed']} ({'; '.join(map(str, rep['reasons']))})")
    out.append(
        f"CPU hours {summary['cpu_hours']:.2f}; median wall seconds per instance "
        f"{summary['wall_seconds_median']:.0f}."
    )
    return out


def _board_markdown(records: list[dict[str, Any]], ranking: str | None) -> list[str]:
    head = ["#", "method", *(h for _, h in _BOARD_COLUMNS), *(h for _, h, _ in _LABEL_COLUMNS)]
    out = [
        "## Leaderboard (clf-small cells)",
        "",
        "Mean over instances ± half the 95 % bootstrap interval, as `udbench leaderboard` "
        f"prints ({ranking or 'rank by the mean ρ(EU, EU*_risk)'}).",
        "",
        "| " + " | ".join([*head, "valid"]) + " |",
        "|" + "---|" * (len(head) + 1),
    ]
    for r in records:
        cells = [str(r["rank"]) if r["rank"] is not None else "–", f"`{r['method']}`"]
        for key, _ in _BOARD_COLUMNS:
            mean, lo, hi = r.get(key), r.get(f"{key}_low"), r.get(f"{key}_high")
            half = None if lo is None or hi is None else (hi - lo) / 2
            cells.append(_f(mean, ".3f") + ("" if half is None else f" ± {half:.3f}"))
        cells += [_f(r.get(key), spec) for key, _, spec in _LABEL_COLUMNS]
        failed = int(r["n_failed"])
        cells.append(f"{r['n_valid']}" + (f" ({failed} ✗)" if failed else ""))
        out.append("| " + " | ".join(cells) + " |")
    return out


def classification_summary(
    records: str | Path, units: Sequence[Unit] | None = None
) -> dict[str, Any]:
    """Both parts' figures from the records, and the markdown of the page.

    Parameters
    ----------
    records : str or Path
        The campaign's records folder.
    units : sequence of Unit, optional
        The campaign's units: records made with other settings are then left out.

    Returns
    -------
    dict
        ``gpc_check`` (:func:`udbench.campaigns.classification.gpc_check_summary`, None
        without records), ``leaderboard`` (its rows,
        :func:`udbench.evaluation.leaderboard.leaderboard_records`; None without records),
        ``ranking`` (the leaderboard's note), ``notes`` (records left out) and
        ``markdown``.
    """
    from udbench.campaigns.classification import clf_small_summary, gpc_check_summary
    from udbench.evaluation.leaderboard import leaderboard_records

    check, notes = gpc_check_summary(records, units)
    board, cell_notes = clf_small_summary(records, units)
    notes = notes + cell_notes
    lines: list[str] = []
    if check is not None:
        lines += _check_markdown(check)
    rows = None if board is None else leaderboard_records(board)
    ranking = None if board is None else board.attrs.get("ranking")
    if rows is not None:
        lines += ["", *_board_markdown(rows, ranking)]
    if not lines:
        lines = [
            f"No finished records yet in {records} (`udbench campaign run classification` "
            "makes them; `udbench campaign status classification` shows what is left)."
        ]
    if notes:
        lines += ["", "Left out:", *(f"- {n}" for n in notes)]
    return {
        "gpc_check": check,
        "leaderboard": rows,
        "ranking": ranking,
        "notes": notes,
        "markdown": "\n".join(lines),
    }


def write_classification_summary(summary: dict[str, Any], records: str | Path) -> Path:
    """Write the page ``<records>.md`` beside the records folder (e.g.
    ``docs/validation/classification.md``) and return its path."""
    folder = Path(records)
    page = folder.with_name(folder.name + ".md")
    head = (
        "# Classification campaign\n\nGenerated by `udbench campaign summarise classification "
        f"--write` from the records in `{folder}`; do not edit.\n\n"
    )
    page.write_text(head + summary["markdown"] + "\n", encoding="utf-8")
    return page


def export_cell_results(
    records: str | Path, out: str | Path, units: Sequence[Unit] | None = None
) -> tuple[int, list[str]]:
    """Write the cells' rows as the results folder ``udbench run`` would have written.

    The rows of :func:`udbench.campaigns.classification.cell_rows`, as
    :func:`clf_small_summary` reads them, go through
    :class:`udbench.evaluation.store.ResultsStore` (one part per cell, then compacted), so
    ``udbench leaderboard``, ``udbench analyze`` and ``udbench report`` read the committed
    campaign as they read a run. Per-point predictions are not in the records, so analyses
    that need them (transfer) are not possible on the folder.

    Parameters
    ----------
    records : str or Path
        The campaign's records folder.
    out : str or Path
        The results folder; it must not hold results already.
    units : sequence of Unit, optional
        The campaign's units (records made with other settings are left out and noted).

    Returns
    -------
    (n_rows, notes) : tuple
        Rows written and the records left out.

    Raises
    ------
    UdbenchError
        ``out`` already holds results (``results.parquet`` or ``cells/``), or no record
        holds a row.
    """
    from udbench._validation import param_error
    from udbench.campaigns.classification import CELL_KIND, cell_rows
    from udbench.evaluation.store import ResultsStore

    store = ResultsStore(out)
    if store.has_results:
        raise param_error(
            "export_cell_results",
            "out",
            "be a folder without results (no results.parquet, no cells/)",
            str(out),
        )
    rows, notes = cell_rows(records, units)
    if not rows:
        raise param_error(
            "export_cell_results",
            "records",
            f"hold {CELL_KIND} records with a results row",
            str(records),
        )
    for row in rows:
        store.write_cell(row)
    return store.compact(), notes
