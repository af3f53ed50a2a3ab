"""Speed of ``udbench analyze`` on a paper-size results frame.

A results table of the paper's size is fabricated (19 methods × 3120 instances = 59,280
cells, ``tests/_results.py``: 13 datasets × 3 prior families × 4 noise modes × 2 coverages ×
10 seeds), written as Parquet, and ``udbench analyze`` runs on it in this process with 2,000
bootstrap replicates (reading the table, every analysis, every CSV/LaTeX table and PNG/SVG
figure, the HTML page). The time of the whole command is measured once (after a warm-up
call on a tiny frame that pays for the imports). Target: <= 60 s.

Last line: ``analyze_seconds: <x>``.

Usage::

    uv run python benchmarks/bench_analyses.py [--n-resamples 2000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _results import fabricate_results
from udbench.cli import main


def run(n_resamples: int) -> float:
    """Seconds of one ``udbench analyze`` on the paper-size frame."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        small = fabricate_results(n_datasets=2, n_seeds=1)
        small.to_parquet(root / "small.parquet", index=False)
        args = ["analyze", str(root / "small.parquet"), "--out", str(root / "warm")]
        assert main([*args, "--n-resamples", "50"]) == 0  # imports, fonts
        df = fabricate_results(noise_sd=0.15)
        assert len(df) == 19 * 3120
        df.to_parquet(root / "results.parquet", index=False)
        args = ["analyze", str(root / "results.parquet"), "--out", str(root / "out")]
        t0 = time.perf_counter()
        assert main([*args, "--n-resamples", str(n_resamples)]) == 0
        seconds = time.perf_counter() - t0
        n_files = sum(1 for p in (root / "out").rglob("*") if p.is_file())
        print(f"cells: {len(df)}, replicates: {n_resamples}, files written: {n_files}")
    return seconds


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-resamples", type=int, default=2000)
    args = parser.parse_args()
    seconds = run(args.n_resamples)
    print("target: <= 60 s")
    print(f"analyze_seconds: {seconds:.2f}")


if __name__ == "__main__":
    main_()
