"""``udbench generate`` runs through the run's executor (Dask), with the same instances."""

from __future__ import annotations

import pytest

from udbench.cli import main
from udbench.tasks import read_task_meta
from udbench.tasks.generate import get_prior


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("UDBENCH_DATA_DIR", raising=False)  # diabetes is embedded
    get_prior.cache_clear()
    yield
    get_prior.cache_clear()


ARGS = ["generate", "--noise", "homoscedastic", "--coverage", "balanced", "--seeds", "0-1"]
ARGS += ["--draws", "40", "--fidelity", "smoke"]


def test_generate_on_dask_workers_makes_the_same_instances_as_inline(tmp_path) -> None:
    assert main([*ARGS, "--out", str(tmp_path / "inline")]) == 0
    assert main([*ARGS, "--out", str(tmp_path / "dask"), "--workers", "2"]) == 0
    names = sorted(p.name for p in (tmp_path / "inline").glob("*.npz"))
    assert len(names) == 2
    assert names == sorted(p.name for p in (tmp_path / "dask").glob("*.npz"))
    for name in names:
        a = read_task_meta(tmp_path / "inline" / name)
        b = read_task_meta(tmp_path / "dask" / name)
        # every array the same bits (local workers keep this process's BLAS threads)
        assert a["array_sha256"] == b["array_sha256"]


def test_generate_rejects_a_bad_scheduler_address_before_any_work(tmp_path) -> None:
    out = tmp_path / "t"
    assert main([*ARGS, "--out", str(out), "--scheduler", "not an address"]) == 2
    assert not list(out.glob("*.npz")) if out.exists() else True


def test_priors_fitted_on_dask_workers_equal_the_inline_fit(tmp_path, monkeypatch) -> None:
    """With workers the priors are fitted side by side on them (not one after another in the
    submitting process); a fit made there is the same fit as inline, so the tasks agree."""
    import json

    from udbench.tasks.timelog import GENERATION_LOG

    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache-dask"))
    get_prior.cache_clear()
    assert main([*ARGS, "--out", str(tmp_path / "dask"), "--workers", "2"]) == 0
    assert not get_prior.cache_info().currsize  # this process fitted nothing
    lines = [json.loads(x) for x in (tmp_path / "dask" / GENERATION_LOG).read_text().splitlines()]
    assert [x["prior"] for x in lines if "prior" in x] == ["gp"]
    # inline in a fresh process (this one has used JAX already, so its XLA pool could not be
    # fixed at one thread: an inline fit here would not be the CLI's)
    import os
    import subprocess
    import sys

    env = {**os.environ, "UDBENCH_CACHE_DIR": str(tmp_path / "cache-inline")}
    code = "import sys; from udbench.cli import main; sys.exit(main(sys.argv[1:]))"
    cmd = [sys.executable, "-c", code, *ARGS, "--out", str(tmp_path / "inline")]
    subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=300)
    for path in sorted((tmp_path / "inline").glob("*.npz")):
        a = read_task_meta(path)
        b = read_task_meta(tmp_path / "dask" / path.name)
        assert a["array_sha256"] == b["array_sha256"]
