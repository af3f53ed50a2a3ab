"""Start-up time of udbench's listing commands, against a bare Python start in the same run.

Each command runs ``--repeats`` times as a fresh process (after one warm-up run, so the OS
file cache is warm); the figure is the median wall time. ``own`` subtracts the median of
``python -c pass`` measured in the same run (the interpreter's own start), which these noisy
machines make the only fair comparison.

    uv run python benchmarks/bench_cli.py [--repeats 5] [--tasks DIR]

``--tasks DIR`` adds ``udbench check DIR`` (a folder of task files). Last line:
``cli_listing_seconds: <x>``, the largest median wall time of the listing commands
(``--help``, ``methods``, ``datasets``, and ``check`` when given); target ≤ 1.5 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def _median_seconds(argv: list[str], repeats: int) -> float:
    subprocess.run(argv, capture_output=True, check=False)  # warm the OS file cache
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode()[-500:]}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tasks", type=Path, default=None, help="a folder for `udbench check`")
    args = parser.parse_args()
    udbench = str(BIN / "udbench")
    commands = {
        "udbench --help": [udbench, "--help"],
        "udbench methods": [udbench, "methods"],
        "udbench datasets": [udbench, "datasets"],
    }
    if args.tasks is not None:
        commands["udbench check"] = [udbench, "check", str(args.tasks)]
    python = _median_seconds([sys.executable, "-c", "pass"], args.repeats)
    print(f"python -c pass: {python:.3f} s (median of {args.repeats})")
    worst = 0.0
    for name, argv in commands.items():
        t = _median_seconds(argv, args.repeats)
        worst = max(worst, t)
        print(f"{name}: {t:.3f} s wall, {t - python:.3f} s own, ×{t / python:.1f} python start")
    print(f"cli_listing_seconds: {worst:.3f}")


if __name__ == "__main__":
    main()
