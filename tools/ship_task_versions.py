"""Write a suite's reference task versions (package data) from generated task files.

Usage::

    uv run python tools/ship_task_versions.py gp-small WORK/gp-v2/tasks

Every instance of the suite must have its file in the folder (as ``udbench campaign run
runs`` or ``udbench generate`` writes them). Writes
``src/udbench/recipes/task_versions/<suite>.json``: the numbers and content checksums of each
task, the suite's task settings, the numerics versions of its families, and where and when it
was made. Remaking it changes
which records the runs campaign keeps (:mod:`udbench.recipes.task_versions`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess
from pathlib import Path

from udbench.priors import family_numerics_version
from udbench.recipes.suites import load_suite, suite_grid
from udbench.recipes.task_versions import (
    TASK_SETTINGS,
    TASK_VERSIONS_DIR,
    blas_kernel,
    task_arrays_sha256,
)
from udbench.tasks import Task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite")
    parser.add_argument("tasks", type=Path)
    args = parser.parse_args()
    suite = load_suite(args.suite)
    specs = suite_grid(suite)
    tasks: dict[str, dict[str, str]] = {}
    families = set()
    for spec in specs:
        path = args.tasks / f"{spec.task_id}.npz"
        task = Task.load(path)
        if task.spec.task_id != spec.task_id:
            raise SystemExit(f"{path}: holds task {task.spec.task_id}")
        tasks[spec.task_id] = {
            "arrays_sha256": task_arrays_sha256(path),
            "content_sha256": str(task.content_sha256),
        }
        families.add(spec.family)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    out = {
        "suite": args.suite,
        "numerics": {f: family_numerics_version(f) for f in sorted(families)},
        "settings": {k: suite[k] for k in TASK_SETTINGS},
        "made": {
            "machine": platform.node(),
            "processor": platform.processor() or platform.machine(),
            "blas": blas_kernel(),
            "commit": commit,
            "date": datetime.date.today().isoformat(),
        },
        "tasks": dict(sorted(tasks.items())),
    }
    TASK_VERSIONS_DIR.mkdir(parents=True, exist_ok=True)
    target = TASK_VERSIONS_DIR / f"{args.suite}.json"
    target.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{len(tasks)} task versions written to {target}")


if __name__ == "__main__":
    main()
