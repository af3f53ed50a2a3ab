"""JAX's persistent compilation cache (``udbench._cache.enable_compile_cache``, issue 35 item 4):
a later process loads the programs an earlier one compiled, with the same results bit for bit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import hashlib, json, sys
import numpy as np
from udbench._cache import compile_cache_dir
from udbench._threads import cell_threads
from udbench.methods import make_method
rng = np.random.default_rng(0)
X = rng.uniform(size=(60, 3)); y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=60)
out = {}
with cell_threads():
    for spec in ("gp:max_iter=20", "nn-ens:n_members=2,hidden_dim=8,n_blocks=1,n_epochs=5"):
        p = make_method(spec).fit(X, y).predict(X[:20])
        raw = b"".join(a.tobytes() for a in (p.mean, p.aleatoric, p.epistemic))
        out[spec] = hashlib.sha256(raw).hexdigest()
folder = compile_cache_dir()
files = [] if folder is None or not folder.is_dir() else list(folder.rglob("*"))
out["files"] = sum(1 for f in files if f.is_file())
print(json.dumps(out))
"""


def _run(tmp_path, cache: str) -> dict:
    env = {
        **os.environ,
        "UDBENCH_CACHE_DIR": str(tmp_path / "cache"),
        "UDBENCH_COMPILE_CACHE": cache,
        # store every program, however quick its compilation (JAX's default is >= 1 s)
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # three fresh processes (about a minute on an idle machine)
def test_a_second_process_loads_the_compiled_programs_and_gets_the_same_bits(tmp_path):
    off = _run(tmp_path, "off")
    assert off["files"] == 0
    cold = _run(tmp_path, "")  # default folder, empty: compiles and stores
    assert cold["files"] > 0
    warm = _run(tmp_path, "")  # loads them
    assert warm["files"] == cold["files"]  # nothing new to compile
    for spec in ("gp:max_iter=20", "nn-ens:n_members=2,hidden_dim=8,n_blocks=1,n_epochs=5"):
        assert off[spec] == cold[spec] == warm[spec]


def test_the_cache_folder_is_per_machine_and_can_be_moved(tmp_path, monkeypatch):
    from udbench._cache import compile_cache_dir

    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("UDBENCH_COMPILE_CACHE", raising=False)
    default = compile_cache_dir()
    assert default.parent == tmp_path / "jax" and len(default.name) == 12
    monkeypatch.setenv("UDBENCH_COMPILE_CACHE", str(tmp_path / "elsewhere"))
    assert compile_cache_dir().parent == tmp_path / "elsewhere"
    for off in ("off", "0", "no"):
        monkeypatch.setenv("UDBENCH_COMPILE_CACHE", off)
        assert compile_cache_dir() is None
    assert json.dumps(str(default))  # a plain path


def test_trimming_removes_the_oldest_entries_down_to_80_percent_of_the_cap(tmp_path):
    from udbench._cache import _trim

    for i in range(10):
        f = tmp_path / f"e{i}"
        f.write_bytes(b"x" * 100)
        os.utime(f, (1000 + i, 1000 + i))  # e0 oldest
    _trim(tmp_path, 1000)  # 1000 bytes: at the cap, nothing to do
    assert len(list(tmp_path.iterdir())) == 10
    _trim(tmp_path, 900)  # over: down to <= 720 bytes, oldest first
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"e{i}" for i in range(3, 10)]
