"""Figures, verdicts and the generated documentation page of the MCMC campaign, from its
records alone (``udbench campaign summarise mcmc``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["mcmc_summary", "write_mcmc_summary"]


def _f(value: Any, spec: str) -> str:
    if value is None:
        return "–"
    try:
        return format(value, spec)
    except (TypeError, ValueError):
        return str(value)


def _bnn_markdown(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "## BNN NUTS settings (bnn-sweep)",
        "",
        "Real task `kin8nm__bnn__smooth-monotone__balanced__s0` at full size (n = 3136, "
        "1500 evaluation inputs, D = 1000, 4 chains); one setting of the `standard` preset "
        "changed per row. ESS: bulk effective sample size of f at the evaluation inputs "
        "(ArviZ), per CPU second of the sampler (one thread) and per 1000 leapfrog steps of "
        "the kept phase. The records come from sessions under different loads (CPU seconds "
        "per leapfrog step differ between them), so the settings compare at equal load by "
        "the ratio of ESS per leapfrog step (diagonal mass: every step costs one gradient) "
        "times the step's cost relative to a float64 step, timed in the unit's own process "
        "(`udbench.priors.bnn_cost.gradient_seconds`; 1 for float64, the dense mass matrix's "
        "extra product is left out); the ratio per CPU second is as measured.",
        "",
        "| setting | ESS median / p5 | ESS/CPU-s (median) | ratio vs d9, per CPU-s | ESS per "
        "1000 leapfrog | ratio vs d9, per step | step cost vs float64 | ratio vs d9, per second "
        "at equal load | CPU min | max R̂ (gate ≤ 1.05) | tree depth mean / at max | "
        "divergent | coverage 90 % | SBC max dev. |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| `{r['setting']}` | {_f(r['ess_bulk_f_median'], '.0f')} / "
            f"{_f(r['ess_bulk_f_p5'], '.0f')} | {_f(r['ess_median_per_cpu_second'], '.3f')} | "
            f"{_f(r['ess_per_cpu_ratio_vs_d9'], '.2f')} | "
            f"{_f(r['ess_median_per_kgrad_kept'], '.2f')} | "
            f"{_f(r['ess_per_step_ratio_vs_d9'], '.2f')} | "
            f"{_f(1 / r.get('step_cost_ratio_f64', 1.0), '.2f')} | "
            f"{_f(r['ess_per_second_ratio_vs_d9'], '.2f')} | "
            f"{_f(r['sampler_cpu_seconds'] / 60, '.1f')} | {_f(r['rhat_max'], '.3f')} | "
            f"{_f(r['tree_depth_mean'], '.2f')} / {_f(r['share_at_max_tree_depth'], '.0%')} | "
            f"{_f(r['n_divergent'], 'd')} | {_f(r['coverage_90'], '.3f')} | "
            f"{_f(r['sbc_max_bin_deviation'], '.3f')} |"
        )
    return out


def _hbart_markdown(by_layout: dict[str, dict[str, Any]]) -> list[str]:
    out = [
        "## HBART warm-up sensitivity (hbart-validation)",
        "",
        "SPEC §7: the same instances at the layout and with a 4× longer warm-up; the "
        "preset passes when the pooled 90 % coverage changes by < 0.005 and the median "
        "|ΔSD|/SD is ≤ 0.05 and ≤ 1.5× the equal-warm-up floor, per dataset.",
        "",
    ]
    for layout, rec in by_layout.items():
        s = rec["sampler_settings"]
        out += [
            f"### `{layout}`: {s['n_chains']} chains × {s['n_warmup']} warm-up, thin "
            f"{s['thin']} — {'PASS' if rec['passed'] else 'FAIL'}"
            + ("" if not rec["protocol_issues"] else " (incomplete)"),
            "",
            "| dataset | instances | coverage 90 % [95 % CI] | 4× warm-up | change [95 % CI] "
            "| floor change | \\|ΔSD\\|/SD median / p95 | floor median / p95 | corr(mean, f*) "
            "| verdict |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        rows = [*rec["per_dataset"].items(), ("pooled", rec["pooled"])]
        for name, r in rows:
            verdict = "" if name == "pooled" else ("pass" if r["passed"] else "fail")
            lo, hi = r["coverage_base_ci"]
            clo, chi = r["coverage_change_ci"]
            out.append(
                f"| {name} | {r['n_instances']} | {r['coverage_base']:.4f} [{lo:.4f}, "
                f"{hi:.4f}] | {r['coverage_long']:.4f} | {r['coverage_change']:+.4f} "
                f"[{clo:+.4f}, {chi:+.4f}] | {r['coverage_change_floor']:+.4f} | "
                f"{r['sd_change_median']:.4f} / {r['sd_change_p95']:.4f} | "
                f"{r['sd_floor_median']:.4f} / {r['sd_floor_p95']:.4f} | "
                f"{r['corr_mean_fstar_median']:.3f} | {verdict} |"
            )
        out.append("")
        if rec["failures"]:
            out.append("Failed: " + "; ".join(rec["failures"]) + ".")
        if rec["protocol_issues"]:
            out.append("Not yet the SPEC §7 protocol: " + "; ".join(rec["protocol_issues"]) + ".")
        if rec.get("incomplete"):
            out.append(f"Instances with fewer than three runs: {len(rec['incomplete'])}.")
        if rec.get("stuck_chains"):
            out.append(
                "Instances whose chains look stuck (MCSE of σ_f² implying ≤ 1.5 effective draws "
                "per chain, as `udbench check` warns; their posterior variance looks inflated, "
                "and the warm-up rule cannot see it): " + ", ".join(rec["stuck_chains"]) + "."
            )
        if rec.get("without_stuck_chains"):
            out.append(_without_markdown(rec["without_stuck_chains"]))
        out += ["", *_instances_markdown(rec["instances"], set(rec.get("stuck_chains", [])))]
        out += [
            f"Minutes per preset run: {_f(rec.get('cpu_minutes_per_instance'), '.1f')} of CPU "
            f"(one thread), {_f(rec['minutes_per_instance'], '.1f')} of wall time (grows with "
            f"the machine's load); CPU-hours spent: {_f(rec['cpu_hours'], '.2f')}; HBART "
            "numerics version "
            f"{rec['numerics_version']}.",
            "",
        ]
    return out


def _instances_markdown(instances: list[dict[str, Any]], stuck: set[str]) -> list[str]:
    """Per complete instance: coverage, SD change, R̂ and the MCSE's effective draws."""
    out = [
        "Per instance (R̂ of the preset run; MCSE: the largest relative MCSE m of σ_f² over "
        "the three runs, and the effective draws per chain it implies, 2/m² / chains):",
        "",
        "| instance | coverage 90 % | 4× warm-up | \\|ΔSD\\|/SD median (floor) | "
        "corr(mean, f*) | max R̂ | MCSE σ_f² rel. | ESS per chain | stuck |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(instances, key=lambda r: str(r["task_id"])):
        out.append(
            f"| {str(r['task_id']).replace('__hbart__', ' × ').replace('__', ' × ')} | "
            f"{r['coverage_base']:.3f} | {r['coverage_long']:.3f} | "
            f"{r['sd_change_median']:.3f} ({r['sd_floor_median']:.3f}) | "
            f"{r['corr_mean_fstar']:.3f} | {_f(r['rhat_max'].get('base'), '.2f')} | "
            f"{_f(r.get('mcse_var_median_rel'), '.3f')} | {_f(r.get('ess_per_chain'), '.1f')} | "
            f"{'yes' if r['task_id'] in stuck else ''} |"
        )
    return [*out, ""]


def _without_markdown(w: dict[str, Any]) -> str:
    """One line: the verdict without the stuck-chain instances (a sensitivity figure)."""
    head = (
        f"Without those {len(w['left_out'])} instance(s) (a sensitivity figure for the open "
        "question of what to do with them, not the SPEC §7 verdict): "
    )
    if "error" in w:
        return head + f"not computable ({w['error']})."
    parts = [
        f"{d}: {r['n_instances']} instances, coverage {r['coverage_base']:.4f} "
        f"[{r['coverage_base_ci'][0]:.4f}, {r['coverage_base_ci'][1]:.4f}], change "
        f"{r['coverage_change']:+.4f}, median |ΔSD|/SD {r['sd_change_median']:.4f}, "
        + ("pass" if r["passed"] else "fail")
        for d, r in w["per_dataset"].items()
    ]
    verdict = "PASS" if w["passed"] else "FAIL"
    if w["protocol_issues"]:
        verdict += " (incomplete)"
    return head + verdict + " — " + "; ".join(parts) + "."


def _multi_markdown(by_family: dict[str, dict[str, Any]]) -> list[str]:
    return generation_markdown(
        by_family,
        "Multi-family task set (multi-family)",
        "concrete and kin8nm × four noise modes × two coverages × seeds 0–1 at `standard`, "
        "D = 1000",
    )


def generation_markdown(by_family: dict[str, dict[str, Any]], title: str, design: str) -> list[str]:
    """The page section of generated, checked task sets: one row per family.

    Parameters
    ----------
    by_family : dict
        Family -> pooled checks (:func:`udbench.campaigns.mcmc.multi_family_table`,
        :func:`udbench.campaigns.runs.generation_table`).
    title : str
        The section's heading.
    design : str
        The set's design in words (its first sentence).

    Returns
    -------
    list of str
        Markdown lines: a table of coverage of the 90 % intervals with its bootstrap interval,
        SBC, MCSE, corr(mean, f*), R̂, replaced seeds and CPU-hours per family (SPEC §7), then
        one line per replaced seed.
    """
    out = [
        f"## {title}",
        "",
        f"{design}; pooled per family (task files outside the repository).",
        "",
        "| family | instances | coverage 90 % [95 % CI] | SBC max dev. | MCSE σ_f² rel. median "
        "/ p95 | corr(mean, f*) median | max R̂ | replaced seeds | CPU-h |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for family, r in by_family.items():
        lo, hi = r["coverage_90_ci"] or (float("nan"), float("nan"))
        out.append(
            f"| {family} | {r['n_instances']} | {r['coverage_90']:.4f} [{lo:.4f}, {hi:.4f}] | "
            f"{r['sbc_max_bin_deviation']:.4f} | {r['mcse_var_median']:.3f} / "
            f"{r['mcse_var_p95']:.3f} | {r['corr_mean_fstar_median']:.3f} | "
            f"{_f(r.get('rhat_max'), '.3f')} | {len(r['replaced'])} | {r['cpu_hours']:.2f} |"
        )
    for family, r in by_family.items():
        for task, rep in r["replaced"].items():
            out.append(f"- {family}: `{task}` used seed {rep['used_seed']}: {rep['reasons']}")
    out.append("")
    return out


def _where(records: str | Path) -> str:
    """The records folder as the page names it: relative to the checkout (or the working
    directory) when below it, so a page does not carry one machine's path."""
    folder = Path(records).resolve()
    for root in (Path(__file__).resolve().parents[3], Path.cwd().resolve()):
        if folder.is_relative_to(root):
            return folder.relative_to(root).as_posix()
    return str(folder)


def mcmc_summary(records: str | Path) -> dict[str, Any]:
    """Everything the MCMC campaign's records say, rebuilt from them alone.

    Returns
    -------
    dict
        ``bnn_sweep`` (rows of :func:`~udbench.campaigns.mcmc.bnn_sweep_table`),
        ``hbart_validation`` (layout -> validation record), ``multi_family`` (family ->
        pooled checks), ``notes`` (records left out) and ``markdown`` (the generated page).
    """
    from udbench.campaigns import mcmc

    bnn, n1 = mcmc.bnn_sweep_table(records)
    hbart, n2 = mcmc.hbart_validation_records(records)
    multi, n3 = mcmc.multi_family_table(records)
    notes = n1 + n2 + n3
    lines = [
        "# MCMC campaign: records and verdicts",
        "",
        "<!-- generated by `udbench campaign summarise mcmc --write` from the records in "
        f"{_where(records)}/; do not edit by hand -->",
        "",
    ]
    lines += _bnn_markdown(bnn) if bnn else ["## BNN NUTS settings: no record yet", ""]
    lines += ["", *_hbart_markdown(hbart)] if hbart else ["## HBART validation: no record yet", ""]
    lines += ["", *_multi_markdown(multi)] if multi else ["## Multi-family set: no record yet", ""]
    if notes:
        lines += ["## Records left out", "", *[f"- {n}" for n in notes], ""]
    return {
        "bnn_sweep": bnn,
        "hbart_validation": hbart,
        "multi_family": multi,
        "notes": notes,
        "markdown": "\n".join(lines).rstrip() + "\n",
    }


def write_mcmc_summary(summary: dict[str, Any], records: str | Path) -> list[Path]:
    """Write the generated page beside the records folder and the preset records.

    ``<records>.md`` gets ``summary["markdown"]``. For every HBART layout whose sampler
    settings equal a shipped preset's, that preset's validation record
    (:func:`udbench.priors.save_validation`) is written with the campaign's figures.

    Returns
    -------
    list of Path
        The files written.
    """
    from udbench.priors import record_path, save_validation
    from udbench.priors.hbart import FIDELITY_SETTINGS

    folder = Path(records)
    page = folder.with_suffix(".md")
    page.write_text(summary["markdown"], encoding="utf-8")
    written = [page]
    for rec in summary["hbart_validation"].values():
        for fid, preset in FIDELITY_SETTINGS.items():
            if dict(preset) == dict(rec["sampler_settings"]):
                out = {**rec, "fidelity": fid}
                written.append(save_validation(out, record_path("hbart", fid)))
    return written
