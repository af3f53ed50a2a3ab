"""The architecture work changed no number: quickstart outputs are those of the base commit.

Issue 33: the stored metrics, task files and tuning records on the quickstart grid are bit for
bit those of the commit before the work (:data:`BASE`, checked out in a temporary git
worktree and run with its own ``src`` first on ``sys.path``, in a subprocess, as is this
tree). Compared: every task file's bytes; every metric column of the results (not the timing
columns, which are wall-clock seconds); a tuning record's best configuration, its validation
NLL and its trials. Slow (two quickstart runs of a few methods and two small sweeps); needs
the git history (``git worktree``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.slow

#: The commit before issue 33's work (its first commit is c5825dc).
BASE = "c5825dc~1"
REPO = Path(__file__).resolve().parents[1]
METHODS = "blr,gp,ngboost-nig,catboost-ps,nn-ens"
#: Columns that are measurements of time or of the machine, not results.
_NOT_RESULTS = (
    "seconds",
    "time",
    "wall",
    "rss",
    "memory",
    "host",
    "worker",
    "pid",
    "started",
    "path",
    "_at",
)
#: Columns that name the code, which differs by construction.
_CODE = ("version", "commit")

_RUN = r"""
import json, sys
from pathlib import Path
from udbench.cli import main
out = Path(sys.argv[1])
assert main(["quickstart", "--out", str(out), "--workers", "0", "-m", sys.argv[2]]) in (0, None)
task = sorted((out / "tasks").glob("*.npz"))[0]
code = main(["tune", str(task), "-m", "blr", "-m", "ngboost-nig", "--trials", "4",
             "--workers", "0", "--out", str(out / "tuning"), *sys.argv[3:]])
assert code in (0, None), code
"""


#: ``udbench tune`` options of this tree that give the base commit's sweep: ngboost-nig has
#: been pruned by default since the cost-model issue (a different, cheaper sweep by design),
#: and the base had no pruning.
TUNE_AS_BASE = ("--pruner", "none")


def _run(src: Path, out: Path, *tune_args: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(src), UDBENCH_CACHE_DIR=str(out / "cache"))
    env.pop("UDBENCH_DATA_DIR", None)
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, str(out), METHODS, *tune_args],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def _tree(tmp: Path) -> Path:
    tree = tmp / "base"
    subprocess.run(
        ["git", "worktree", "add", "--detach", "-f", str(tree), BASE],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    return tree


def _sums(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.npz")}


def _results(out: Path) -> pd.DataFrame:
    from udbench.evaluation.store import read_results

    frame = read_results(out / "results")
    keep = [c for c in frame.columns if not any(t in c.lower() for t in _NOT_RESULTS + _CODE)]
    return frame[keep].sort_values(["task_id", "method"]).reset_index(drop=True)


def _records(out: Path) -> list[dict]:
    rows = []
    for path in sorted((out / "tuning").rglob("*.json")):
        rec = json.loads(path.read_text())
        if "tuned_params" in rec:
            keys = ("method", "condition", "params", "tuned_params", "score", "n_complete")
            rows.append({k: rec.get(k) for k in keys})
    return rows


def test_quickstart_outputs_are_bit_for_bit_those_of_the_base_commit(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    try:
        _run(tree / "src", tmp_path / "old")
        _run(REPO / "src", tmp_path / "new", *TUNE_AS_BASE)
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, capture_output=True
        )
    old, new = tmp_path / "old", tmp_path / "new"
    assert _sums(old / "tasks") == _sums(new / "tasks") and _sums(new / "tasks")
    a, b = _results(old), _results(new)
    assert list(a.columns) == list(b.columns) and len(a) == len(b) > 0
    differ = []
    for col in a.columns:
        x, y = a[col], b[col]
        if pd.api.types.is_float_dtype(x):
            same = np.array_equal(x.to_numpy(), y.to_numpy(), equal_nan=True)
        else:
            same = x.astype(str).tolist() == y.astype(str).tolist()
        if not same:
            differ.append(f"{col}: {x.head(2).tolist()} vs {y.head(2).tolist()}")
    assert not differ, "\n".join(differ)
    assert _records(old) == _records(new) and _records(new)
