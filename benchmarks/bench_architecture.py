"""Issue 33's performance check: the architecture work made nothing slower.

Two figures, each measured for this tree and for the commit before the work (``--base``,
default ``c5825dc~1``, checked out in a temporary git worktree and imported in subprocesses
with its own ``src`` first on ``sys.path``), alternating old and new in the same run:

1. The runner's own overhead per cell (:func:`bench_runner.compare`: a trivial method on many
   small GP cells in-process, runner wall time minus a bare load/fit/predict/score loop).
2. The start-up of the listing commands (``udbench --help``, ``methods``, ``datasets``): the
   median wall time of fresh processes minus that of ``python -c pass`` measured in the same
   run (the interpreter's own start).

Last line: ``architecture_overhead_ratio_new_vs_old: <x>``, the larger of the two new/old
ratios (target ≤ 1.05).

    uv run python benchmarks/bench_architecture.py [--base REV] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_runner  # the script's folder is on sys.path

REPO = Path(__file__).resolve().parents[1]
COMMANDS = (["--help"], ["methods"], ["datasets"])
_CLI = "import sys; from udbench.cli import main; raise SystemExit(main(sys.argv[1:]))"


def _wall(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, check=False)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode()[-500:]}")
    return took


def cli_ratio(trees: dict[str, Path], repeats: int) -> float:
    """New/old ratio of the listing commands' own start-up (largest median of the three)."""
    envs = {side: dict(os.environ, PYTHONPATH=str(src)) for side, src in trees.items()}
    bare = [sys.executable, "-c", "pass"]
    own: dict[str, float] = {}
    for side in trees:  # warm the OS file cache of both trees
        for cmd in COMMANDS:
            _wall([sys.executable, "-c", _CLI, *cmd], envs[side])
    times: dict[tuple[str, str], list[float]] = {}
    python: list[float] = []
    for i in range(repeats):
        python.append(_wall(bare, envs["new"]))
        for side in ("old", "new") if i % 2 == 0 else ("new", "old"):
            for cmd in COMMANDS:
                t = _wall([sys.executable, "-c", _CLI, *cmd], envs[side])
                times.setdefault((side, " ".join(cmd)), []).append(t)
    start = statistics.median(python)
    for side in trees:
        worst = max(statistics.median(times[(side, " ".join(c))]) for c in COMMANDS)
        own[side] = worst - start
        print(f"{side}: slowest listing command {worst:.3f} s wall, {own[side]:.3f} s own")
    return own["new"] / own["old"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="c5825dc~1", help="the commit before the work")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-arch-"))
    paths = bench_runner._make_tasks(tmp / "tasks")
    runner = bench_runner.compare(args.base, paths, tmp)
    print(f"runner overhead per cell, new/old: {runner:.3f}")
    old, created = bench_runner._old_tree(args.base)
    try:
        cli = cli_ratio({"old": old / "src", "new": REPO / "src"}, args.repeats)
    finally:
        if created:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(old)],
                cwd=REPO,
                check=False,
                capture_output=True,
            )
    print(f"listing start-up (own), new/old: {cli:.3f}")
    print(f"architecture_overhead_ratio_new_vs_old: {max(runner, cli):.3f}")


if __name__ == "__main__":
    main()
