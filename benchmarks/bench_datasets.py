"""Time of ``udbench datasets add`` on a synthetic 50,000-row table (no target: no kernel fit).

Writes a gzip CSV of ``--rows`` rows × ``--cols`` continuous covariates (a few missing values,
one constant column, one categorical column left out with ``--drop``), then times
:func:`udbench.recipes.own_data.add_dataset` in this process (imports warmed first): reading,
cleaning, feasibility checks, geometry (noise score and shells), the stratified split, the
design quantities and writing the table and registry file into a temporary data folder. The
kernel-family fit (only with a target) is excluded, as the issue asks.

    uv run python benchmarks/bench_datasets.py [--rows 50000] [--cols 8] [--repeats 3]

Last line: ``datasets_add_seconds: <x>``, the median wall time over the repeats; target ≤ 30.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def make_table(path: Path, rows: int, cols: int, seed: int = 0) -> None:
    """A synthetic table: correlated continuous covariates, 0.1 % missing, a constant and a
    categorical column."""
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(cols, cols)) / np.sqrt(cols)
    X = rng.standard_gamma(2.0, size=(rows, cols)) @ mixing
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(cols)])
    frame = frame.mask(rng.uniform(size=frame.shape) < 0.001 / cols)
    frame["site"] = 1.0
    frame["batch"] = rng.choice(["a", "b", "c"], size=rows)
    frame.to_csv(path, index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--cols", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from udbench.recipes.own_data import add_dataset  # imports are not timed

    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "table.csv.gz"
        make_table(table, args.rows, args.cols)
        times = []
        for r in range(args.repeats):
            start = time.perf_counter()
            added = add_dataset(
                table, "bench", drop=["batch"], duplicates="drop", data_dir=Path(tmp) / f"d{r}"
            )
            times.append(time.perf_counter() - start)
        s = added.spec
        print(
            f"rows={args.rows} cols={args.cols}: N={s.n_rows} d={s.n_features} "
            f"n_eval={s.n_eval} n={s.n_train} ρ={s.rho} kernel={s.kernel_family}"
        )
        print("runs (s): " + ", ".join(f"{t:.2f}" for t in times))
    print(f"datasets_add_seconds: {statistics.median(times):.2f}")


if __name__ == "__main__":
    main()
