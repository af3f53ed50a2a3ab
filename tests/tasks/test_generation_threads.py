"""Task bytes do not depend on the cores a process may use (issue 11 item 6, for generate)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_SCRIPT = """
import hashlib, numpy as np
from udbench.tasks import TaskSpec, generate_task
t = generate_task(TaskSpec(dataset="diabetes", family="gp", noise="homoscedastic",
                           coverage="ood", seed=0, fidelity="smoke", n_draws=40))
arrays = t.arrays()
print(hashlib.sha256(b"".join(np.ascontiguousarray(arrays[k]).tobytes()
                              for k in sorted(arrays) if arrays[k] is not None)).hexdigest())
"""


def _digest(cores: set[int], cache: str) -> str:
    env = {**os.environ, "UDBENCH_CACHE_DIR": cache}
    pin = f"import os; os.sched_setaffinity(0, {sorted(cores)!r})\n"  # before JAX starts
    out = subprocess.run(
        [sys.executable, "-c", pin + _SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs two cores to compare with one",
)
def test_task_bytes_are_the_same_on_one_core_and_on_many(tmp_path):
    # fresh kernel-fit caches on both sides, so the fit itself is compared too
    many = _digest(set(os.sched_getaffinity(0)), str(tmp_path / "a"))
    one = _digest({min(os.sched_getaffinity(0))}, str(tmp_path / "b"))
    assert one == many


_CLI_THEN_DIGEST = """
import hashlib, sys, numpy as np
from udbench.cli import main
from udbench.tasks import Task
out = sys.argv[1]
assert main(["generate", "--noise", "homoscedastic", "--coverage", "ood", "--seeds", "0",
             "--fidelity", "smoke", "--draws", "40", "--out", out]) == 0
arrays = Task.load(out + "/diabetes__gp__homoscedastic__ood__s0.npz").arrays()
print(hashlib.sha256(b"".join(np.ascontiguousarray(arrays[k]).tobytes()
                              for k in sorted(arrays) if arrays[k] is not None)).hexdigest())
"""


@pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs two cores to compare with one",
)
def test_udbench_generate_fits_the_prior_as_the_library_does(tmp_path):
    """``udbench generate`` fits the prior in its own process before the instances; that fit
    must not use more threads than generate_task's (it once did: the CLI's tasks then
    depended on the submitting machine's cores and differed from the library's)."""
    env = {**os.environ, "UDBENCH_CACHE_DIR": str(tmp_path / "cli-cache")}
    out = subprocess.run(
        [sys.executable, "-c", _CLI_THEN_DIGEST, str(tmp_path / "tasks")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    cli = out.stdout.strip().splitlines()[-1]
    assert "could not fix JAX's CPU thread pool" not in out.stderr
    library = _digest({min(os.sched_getaffinity(0))}, str(tmp_path / "lib-cache"))
    assert cli == library
