"""Measure udbench's shipped cost-calibration table (``src/udbench/tuning/calibration.json``).

What ``udbench plan --calibrate`` does on a user's machine, with the held-out size added:
every registered method and every prior family at the training-set sizes of
``udbench.tuning.calibration.FIT_SIZES`` plus ``HELDOUT_SIZE`` (not used for the check's
fit), and the GP kernel fit of every dataset (its per-evaluation seconds; the evaluation
counts of full fits come from ``--evals FILE``, a JSON ``{dataset: n_evals}``, or from the
table already shipped). Entries already in ``--out`` are kept unless named again, so the
parts can be measured in separate runs (``--only methods``, ``--only families``,
``--only prior-fits``).

Run (niced; one compute thread, as a cell)::

    nice -n 5 uv run python benchmarks/calibration_table.py --only methods,families
    nice -n 5 uv run python benchmarks/calibration_table.py --only prior-fits --evals evals.json

Last line: ``calibration_heldout_median_abs_rel_error: <x>`` (median over entries of
|predicted / measured − 1| at the held-out size).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

from udbench.tuning.calibrating import calibrate
from udbench.tuning.calibration import (
    FIT_SIZES,
    HELDOUT_SIZE,
    CalibrationTable,
    _read_table,
    _shipped_path,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(_shipped_path()))
    ap.add_argument("--only", default="methods,families,prior-fits")
    ap.add_argument("--methods", default=None, help="comma list (default: all registered)")
    ap.add_argument("--families", default="gp,hbart,bnn")
    ap.add_argument("--datasets", default=None, help="comma list (default: all with a kernel)")
    ap.add_argument("--evals", default=None, help="JSON {dataset: evaluations of a full fit}")
    ap.add_argument("--budget-min", type=float, default=45.0)
    ap.add_argument(
        "--pruning-summary",
        default=None,
        help="summary.json of bench_tuning.py pruning: adds tune-pruning:<method> entries",
    )
    ap.add_argument(
        "--pruner",
        default="sha",
        help="which pruner's CPU ratios of --pruning-summary go into the table (default sha: "
        "the pruner udbench tune --pruner auto uses; plan applies an entry only for its pruner)",
    )
    args = ap.parse_args()
    parts = set(args.only.split(","))
    out = Path(args.out)
    old = _read_table(out, str(out)) if out.is_file() else CalibrationTable({}, {})
    if args.evals:
        evals = json.loads(Path(args.evals).read_text())
        for ds, k in evals.items():
            old.entries.setdefault(f"prior-fit:{ds}", {})["n_evals"] = int(k)

    def said(key: str, entry: dict | None) -> None:
        if entry is None:
            print(f"{key}: skipped", flush=True)
            return
        held = (entry.get("heldout") or {}).get("rel_error")
        law = entry.get("law")
        print(f"{key}: law {law} heldout {held} seconds {entry.get('seconds')}", flush=True)

    methods = None if args.methods is None else args.methods.split(",")
    datasets = None if args.datasets is None else args.datasets.split(",")
    table = calibrate(
        methods=methods if "methods" in parts else [],
        families=args.families.split(",") if "families" in parts else (),
        datasets=datasets if "prior-fits" in parts else [],
        sizes=FIT_SIZES,
        heldout=HELDOUT_SIZE,
        budget_s=60.0 * args.budget_min,
        base=old,
        on_entry=said,
    )
    merged = CalibrationTable({**old.entries, **table.entries}, old.meta)
    if args.pruning_summary:
        summaries = json.loads(Path(args.pruning_summary).read_text())
        summary = summaries[args.pruner]
        for method, v in summary["methods"].items():
            merged.entries[f"tune-pruning:{method}"] = {
                "kind": "tune-pruning",
                "method": method,
                "cpu_ratio": v["cpu_pruned"] / v["cpu_none"],
                "pruner": args.pruner,
                "sweeps": v["n_pairs"],
                "source": "benchmarks/bench_tuning.py pruning",
                "measured_on": summary.get("measured_on"),
            }
    runs = list(merged.meta.get("runs", []))
    runs.append({**table.meta, "parts": sorted(parts), "entries": sorted(table.entries)})
    merged.meta = {
        **table.meta,
        "runs": runs,
        "note": "measured by benchmarks/calibration_table.py; 'runs' lists each run's machine "
        "load and what it measured",
    }
    merged.write(out)
    errors = [
        abs(e["heldout"]["rel_error"])
        for e in merged.entries.values()
        if (e.get("heldout") or {}).get("rel_error") is not None
    ]
    print(f"wrote {out} ({len(merged.entries)} entries); load {os.getloadavg()}")
    print(f"calibration_heldout_median_abs_rel_error: {float(np.median(errors)):.3f}")


if __name__ == "__main__":
    main()
