"""Cost of a small ``udbench study wine-ood`` and the projection of the full design.

Runs the wine OOD study (paper D.3, ``docs/studies.md``) at a small size in a fresh folder
through the CLI — white wine, the chosen families and seeds, fidelity ``smoke``, the chosen
methods with their smoke configurations, on local Dask workers — and measures its wall-clock
time and CPU time (this process and its children: the Dask workers). Then it projects the full
design (3 families × 5 seeds × every registered method) from the times the run recorded
(``udbench plan``'s figures: MCMC sampler seconds per task, fit + predict seconds per cell),
by running the same command again (it resumes: nothing left to do but the analysis).
Needs the shared data (``UDBENCH_DATA_DIR``).

Last line: ``wine_ood_small_wall_seconds: <x>``.

Usage::

    uv run python benchmarks/bench_wine_ood.py [--families all] [--seeds 0] \
        [--methods blr,gp,nn-ens,ngboost-nig] [--draws 200] [--workers 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from udbench.cli import main


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default="all")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--methods", default="blr,gp,nn-ens,ngboost-nig")
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-wine-ood-"))
    cmd = ["study", "wine-ood", "--out", str(out), "--families", args.families]
    cmd += ["--seeds", args.seeds, "--methods", args.methods, "--smoke", "--fidelity", "smoke"]
    cmd += ["--draws", str(args.draws), "--workers", str(args.workers), "--yes"]
    t0, c0 = time.perf_counter(), _cpu()
    status = main(cmd)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    print(f"exit status {status}; study folder {out}")
    print(f"CPU seconds (this process and its children): {cpu:.0f}")
    # the same command again: nothing left to run; it prints the projection from the times
    # this run recorded (the full design: every registered method, unmeasured ones unknown)
    main(cmd)
    print(f"wine_ood_small_wall_seconds: {wall:.1f}")


if __name__ == "__main__":
    main_()
