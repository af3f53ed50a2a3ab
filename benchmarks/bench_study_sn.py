"""Cost of the spectral-normalisation study (paper D.4): a small version, measured, projected.

Usage::

    UDBENCH_DATA_DIR=... uv run python benchmarks/bench_study_sn.py [--out DIR]
        [--datasets concrete] [--methods "nn-lap"] [--trials 2] [--seeds 0] [--workers 1]

Runs ``udbench study spectral-norm`` on the small version given (default: concrete, GP oracle,
seed 0, smoke fidelity, nn-lap, 2 trials per sweep; 1 instance, 3 sweeps, 6 trials, 3 cells),
prints its wall time and the fit + predict seconds stored by the tuner and the runner, then the
projection of the full design (13 datasets × gp/hbart/bnn × seeds 0-4, the same methods, 30
trials per sweep) from those measurements by ``udbench plan``'s machinery.

Last two lines: ``sn_study_full_design_measured_cpu_hours: <y>`` and, the headline,
``sn_study_full_design_measured_wall_hours: <x>`` (formerly printed as ``…_cpu_hours``,
though measured as wall time), the measured part of the projection in each clock (the
study's folders hold fit + predict seconds, elapsed time, so the small version's figures are
wall-clock hours, never CPU-hours: :mod:`udbench.tuning.clocks`); the lines above say which
stages are unmeasured, e.g. generating HBART/BNN instances.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from udbench.cli import main
from udbench.evaluation.store import read_results
from udbench.studies import spectral_norm as sn
from udbench.tuning.clocks import row_hours_text
from udbench.tuning.records import load_records


def run(args: argparse.Namespace) -> None:
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-study-sn-")) / "sn"
    argv = [
        "study", "spectral-norm", "--out", str(out), "--datasets", args.datasets,
        "--seeds", args.seeds, "--families", "gp", "--methods", args.methods,
        "--trials", str(args.trials), "--fidelity", "smoke", "--workers", str(args.workers),
        "--n-resamples", "200", "--no-progress", "--yes",
    ]  # fmt: skip
    start = time.perf_counter()
    status = main(argv)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"the study exited with status {status}")
    rows = read_results(out / "results")
    fits = float((rows["fit_time_s"] + rows["predict_time_s"]).sum())
    trials = sum(
        (h.get("fit_time_s") or 0.0) + (h.get("predict_time_s") or 0.0)
        for r in load_records(out / "tuning")
        for h in r["history"]
    )
    print(f"small version: {len(rows)} cells, wall {wall:.1f} s (generation, workers included)")
    print(f"  fit + predict seconds: cells {fits:.1f}, tuning trials {trials:.1f}")
    methods = args.methods.replace(";", " ").split()
    full = sn.study_specs("all", sn.FULL_SEEDS, sn.FAMILIES)
    plan = sn.plan_study(full, methods, out, trials=30)
    print(
        f"full design: {plan.counts['instances']} instances, {plan.counts['trials']} trials, "
        f"{plan.counts['fits']} fits"
    )
    for r in plan.rows:  # hours in their clock: the study's folders measure wall-clock time
        med = r.median_s or float("nan")
        print(f"  {r.stage:8s} {r.key:12s} {r.count:6d} × {med:.3g} s = {row_hours_text(r)}")
    print(f"unmeasured: {', '.join(plan.unknown) or 'none'}")
    # the headline last: the study's folders measure wall-clock time, so the measured part
    # of the projection is in wall hours (the CPU line, from campaign records only, is ~0)
    print(f"sn_study_full_design_measured_cpu_hours: {plan.known_cpu_hours:.4g}")
    print(f"sn_study_full_design_measured_wall_hours: {plan.known_wall_hours:.4g}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    p.add_argument("--datasets", default="concrete")
    p.add_argument("--methods", default="nn-lap")
    p.add_argument("--seeds", default="0")
    p.add_argument("--trials", type=int, default=2)
    p.add_argument("--workers", type=int, default=1)
    run(p.parse_args())
