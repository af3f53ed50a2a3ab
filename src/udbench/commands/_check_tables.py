"""The tables ``udbench check`` prints: pooled figures, verdicts, MCMC diagnostics, preset
validation and seed replacements (from :func:`udbench.commands.tasks.check_tasks`'s report)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from udbench.commands._console import styled

__all__ = ["print_check_tables"]


def _fmt(value: Any, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def _coverage_text(stats: dict[str, Any]) -> str:
    """``0.902 [0.880, 0.921]``: pooled coverage and its bootstrap interval (none for one
    instance)."""
    ci = stats.get("coverage_90_ci")
    text = f"{stats['coverage_90']:.3f}"
    return text if ci is None else f"{text} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _expected_coverage_text(stats: dict[str, Any]) -> str:
    """``0.902 [0.851, 0.947]``: a correct posterior's coverage at these D and the 99 % range
    of the pooled coverage it gives (:func:`udbench.tasks.pool_checks`)."""
    expected, null = stats.get("coverage_90_expected"), stats.get("coverage_90_null_range")
    if expected is None:
        return "–"
    return f"{expected:.3f}" + ("" if null is None else f" [{null[0]:.3f}, {null[1]:.3f}]")


def _summary_table(result: dict[str, Any], title: str) -> Table:
    """The pooled figures, a row per family (and per family and dataset with --by-dataset)."""
    table = Table(title=f"Acceptance checks: {title}")
    # what the checks rank: f* (regression), π* (classification, docs/classification.md)
    truths = sorted(
        {t for r in result.values() for t in str(r.get("truth", "f*")).split(" / ")}
    ) or ["f*"]
    for col in (
        "family",
        "instances",
        "coverage 90 % [95 % CI]",
        "correct posterior [99 % range]",
        "max SBC bin dev.",
        "MCSE σ_f² rel. (median / p95)",
        f"corr(mean, {' / '.join(truths)}) median",
        "MC = exact",
    ):
        table.add_column(col)
    rows = [(fam, r) for fam, r in result.items()]
    rows += [
        (f"{fam} · {ds}", d) for fam, r in result.items() for ds, d in r.get("datasets", {}).items()
    ]
    for fam, r in rows:
        agree = r.get("mc_agree_fraction")
        table.add_row(
            fam,
            str(r["n_instances"]),
            _coverage_text(r),
            _expected_coverage_text(r),
            f"{r['sbc_max_bin_deviation']:.4f}",
            f"{r['mcse_var_median']:.3f} / {r['mcse_var_p95']:.3f}",
            f"{r['corr_mean_fstar_median']:.3f}",
            "–" if agree is None else f"{agree:.0%}",
        )
    return table


def _verdict_table(result: dict[str, Any]) -> Table:
    """Each family's SPEC §7 verdicts, each figure beside its threshold."""
    verdicts = Table(title="Verdicts (SPEC §7): each figure beside its threshold")
    for col in ("family", "check", "figure", "threshold", "verdict"):
        verdicts.add_column(col)
    style = {"pass": "green", "FAIL": "bold red"}
    for fam, r in result.items():
        for v in r["verdicts"]:
            colour = style.get(v["verdict"].split(" ")[0], "dim")
            verdicts.add_row(
                fam, v["check"], v["figure"], v["threshold"], styled(v["verdict"], colour)
            )
    return verdicts


def _print_nugget_note(old: list[dict[str, Any]], console: Console) -> None:
    """The note on GP task files made before the exact moments included the nugget."""
    if old:
        n_fail = sum(not r["mc_agree"] for r in old)
        console.print(
            f"note: {len(old)} GP task file(s) were made before the exact moments included the "
            f'prior\'s nugget (no sampler.nugget; docs/tasks.md, "Jitter and the nugget"): '
            f"their moments lack the nugget ν ≈ 1e-10 × the prior variance; {n_fail} of "
            "them fail MC = exact, which this explains only where the targets are nearly "
            "noise-free. Delete and regenerate them for the current reference.",
            highlight=False,
        )


def _print_mcmc(result: dict[str, Any], console: Console) -> None:
    """The pooled MCMC diagnostics of the families that have them (if any)."""
    mcmc = {fam: r for fam, r in result.items() if "rhat_max" in r}
    if mcmc:
        diag = Table(title="MCMC diagnostics (pooled over instances)")
        for col in (
            "family",
            "max R̂",
            "R̂ gate",
            "max R̂ if iid",
            "points R̂ > 1.05",
            "instances R̂ > 1.05",
            "divergent",
            "mean acceptance",
            "tree depth mean / share at max",
            "replaced seeds",
        ):
            diag.add_column(col)
        for fam, r in mcmc.items():
            depth = r.get("tree_depth_mean")
            diag.add_row(
                fam,
                f"{r['rhat_max']:.4f}",
                {True: "yes", False: "no"}.get(r.get("rhat_gate"), "–"),
                _fmt(r.get("rhat_iid_max"), ".4f"),
                _fmt(r.get("rhat_share_above_1_05"), ".2%"),
                str(r["n_rhat_above_1_05"]),
                _fmt(r.get("n_divergent"), "d"),
                _fmt(r.get("accept_rate_mean"), ".3f"),
                "–"
                if depth is None
                else f"{depth:.2f} / {_fmt(r.get('share_at_max_tree_depth'), '.0%')}",
                _fmt(r.get("n_seed_replacements"), "d"),
            )
        console.print(diag)


def _print_validation(result: dict[str, Any], console: Console) -> None:
    """The preset validation by warm-up sensitivity, and its warnings (if any family has one)."""
    from udbench.priors import WARMUP_VALIDATED_FAMILIES, no_record_verdict
    from udbench.tasks.pooling import record_verdict

    validations = [
        (fam, r.get("family", fam), fid, v)
        for fam, r in result.items()
        for fid, v in (r.get("preset_validation") or {}).items()
    ]
    if validations:
        val = Table(title="Preset validation by warm-up sensitivity (SPEC §7)")
        for col in (
            "family",
            "fidelity",
            "verdict",
            "coverage 90 % → long warm-up",
            "|ΔSD|/SD median / p95 (floor)",
            "datasets (instances)",
            "protocol",
            "date / numerics",
        ):
            val.add_column(col)
        for fam, family, fid, v in validations:  # fam: the row's label, family: the prior
            if v is None:
                val.add_row(fam, fid, no_record_verdict(family), "–", "–", "–", "–", "–")
                continue
            verdict = record_verdict(v)
            if family not in WARMUP_VALIDATED_FAMILIES:  # BNN: gated per instance by R̂
                verdict = f"not a gate ({verdict})"
            val.add_row(
                fam,
                fid,
                verdict,
                f"{_fmt(v['coverage_base'], '.4f')} → {_fmt(v['coverage_long'], '.4f')} "
                f"({_fmt(v['coverage_change'], '+.4f')})",
                f"{_fmt(v['sd_change_median'], '.3f')} / {_fmt(v['sd_change_p95'], '.3f')} "
                f"({_fmt(v['sd_floor_median'], '.3f')})",
                f"{','.join(v['datasets'])} ({_fmt(v['n_instances'], 'd')})",
                "SPEC §7" if v["full_protocol"] else "reduced: " + "; ".join(v["protocol_issues"]),
                f"{v['date'] or '–'} / v{_fmt(v['numerics_version'], 'd')}"
                + (" (now other)" if v["numerics_match"] is False else ""),
            )
        console.print(val)
        for r in result.values():
            for line in r.get("preset_validation_warnings") or []:
                console.print(f"warning: {line}", highlight=False)


def _print_replacements(result: dict[str, Any], console: Console) -> None:
    """The seed replacements of all families (if any seed was replaced)."""
    replaced = [(fam, x) for fam, r in result.items() for x in r["seed_replacements"]]
    if replaced:
        log = Table(title="Seed replacements (SPEC §7)")
        for col in ("task", "rejected seed", "replacement seed", "reason"):
            log.add_column(col)
        for _, x in replaced:
            log.add_row(x["task_id"], str(x["rejected"]), str(x["replacement"]), x["reason"])
        console.print(log)


def print_check_tables(report: dict[str, Any], title: str, console: Console) -> None:
    """Print the tables of a ``udbench check`` report (``check_tasks`` output) on ``console``.

    ``title`` names the tasks checked in the first table's title.
    """
    result = report["families"]
    console.print(_summary_table(result, title))
    console.print(_verdict_table(result))
    _print_nugget_note(report["before_nugget"], console)
    _print_mcmc(result, console)
    _print_validation(result, console)
    _print_replacements(result, console)
