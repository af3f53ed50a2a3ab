"""The report's note on the reference posteriors of MCMC families: the preset validation
record each (family, fidelity) in the results was made with (SPEC §7)."""

from __future__ import annotations

import html
from typing import Any

__all__ = ["preset_validation_html"]


def preset_validation_html(results: Any) -> list[str]:
    """HTML lines on the preset validation of every MCMC (family, fidelity) in ``results``.

    One row per pair: verdict, date, numerics version and datasets of the shipped record
    (:func:`udbench.priors.preset_validation_status`), and a warning line for every preset
    without a passing record. Empty when the results hold no MCMC family.
    """
    from udbench.priors import (
        MCMC_FAMILIES,
        WARMUP_VALIDATED_FAMILIES,
        no_record_verdict,
        preset_validation_status,
    )
    from udbench.tasks.pooling import record_verdict

    if "family" not in results or "fidelity" not in results:
        return []
    pairs = sorted(
        {
            (str(f), str(fid))
            for f, fid in zip(results["family"], results["fidelity"], strict=True)
            if str(f) in MCMC_FAMILIES
        }
    )
    if not pairs:
        return []
    rows, warnings = [], []
    for family, fidelity in pairs:
        summary, warning = preset_validation_status(family, fidelity)
        if summary is None:
            cells = [no_record_verdict(family), "–", "–", "–"]
        else:
            verdict = record_verdict(summary)  # as udbench check says it
            if family not in WARMUP_VALIDATED_FAMILIES:  # BNN: gated per instance by R̂
                verdict = f"not a gate ({verdict})"
            elif not summary["applies"] and verdict == "pass":
                verdict = "pass, does not apply (see the warning)"
            cells = [
                verdict,
                str(summary["date"] or "–"),
                "–" if summary["numerics_version"] is None else f"v{summary['numerics_version']}",
                ", ".join(summary["datasets"]),
            ]
        rows.append(
            "<tr>"
            + "".join(f"<td>{html.escape(c)}</td>" for c in [family, fidelity, *cells])
            + "</tr>"
        )
        if warning is not None:
            warnings.append(f"<p class='note'><b>Warning:</b> {html.escape(warning)}.</p>")
    head = "".join(
        f"<th>{c}</th>"
        for c in ("family", "fidelity", "preset validation", "date", "numerics", "datasets")
    )
    return [
        "<h2>Reference posteriors: preset validation (SPEC §7)</h2>",
        "<p class='note'>MCMC reference posteriors are as good as their preset: the warm-up "
        "sensitivity record shipped with udbench for each preset in these results.</p>",
        f"<table><tr>{head}</tr>",
        *rows,
        "</table>",
        *warnings,
    ]
