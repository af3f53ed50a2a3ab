"""The one generation pipeline, :func:`udbench.tasks.grid.generate_grid`: the same task files
as ``udbench generate``, resume, clashes, and a failing instance recorded while the others go
on (issue 33, item 3)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import udbench.tasks as tasks
from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.tasks.generate import get_prior
from udbench.tasks.grid import GridProgress, expand_grid, generate_grid, plan_grid
from udbench.tasks.timelog import GENERATION_LOG

ARGS = ["generate", "--noise", "homoscedastic", "--coverage", "balanced", "--seeds", "0-1"]
ARGS += ["--draws", "40", "--fidelity", "smoke"]


def _specs() -> list:
    return expand_grid("diabetes", "gp", "homoscedastic", "balanced", "0-1", "smoke", 40)


@pytest.fixture(scope="module", autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # one prior cache for the module (the smoke GP fit is made once), none of the user's
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("UDBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        mp.delenv("UDBENCH_DATA_DIR", raising=False)  # diabetes is embedded
        get_prior.cache_clear()
        yield
        get_prior.cache_clear()


def _sums(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.npz"))
    }


def _log(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / GENERATION_LOG).read_text().splitlines()]


def test_library_function_and_cli_make_byte_identical_task_files(tmp_path: Path) -> None:
    assert main([*ARGS, "--out", str(tmp_path / "cli")]) == 0
    result = generate_grid(_specs(), tmp_path / "lib")
    cli, lib = _sums(tmp_path / "cli"), _sums(tmp_path / "lib")
    assert len(cli) == 2 and cli == lib  # whole files, bit for bit
    assert sorted(result.generated) == sorted(n.removesuffix(".npz") for n in lib)
    assert result.failures == ()
    assert [p.name for p in result.paths] == [f"{s.task_id}.npz" for s in _specs()]
    # the same log lines: one prior, then one per instance
    for folder in ("cli", "lib"):
        lines = _log(tmp_path / folder)
        assert [x.get("prior") for x in lines] == ["gp", None, None]
        assert sorted(x["task_id"] for x in lines[1:]) == sorted(result.generated)


def test_resume_keeps_valid_files_and_remakes_a_damaged_one(tmp_path, monkeypatch) -> None:
    out = tmp_path / "t"
    first = generate_grid(_specs(), out)
    assert len(first.generated) == 2
    kept, damaged = (out / f"{s.task_id}.npz" for s in _specs())
    before = (kept.read_bytes(), kept.stat().st_mtime_ns)
    good = damaged.read_bytes()
    damaged.write_bytes(b"damaged")

    made: list[str] = []
    real = tasks.generate_task

    def counting(spec, **kwargs):  # type: ignore[no-untyped-def]
        made.append(spec.task_id)
        return real(spec, **kwargs)

    monkeypatch.setattr(tasks, "generate_task", counting)
    plan = plan_grid(_specs(), out)
    assert (plan.n_done, plan.n_damaged, plan.clashes) == (1, 1, ())
    second = generate_grid(_specs(), out)
    assert made == [_specs()[1].task_id]  # only the damaged file
    assert second.generated == (_specs()[1].task_id,)
    assert (kept.read_bytes(), kept.stat().st_mtime_ns) == before  # not rewritten
    assert damaged.read_bytes() == good  # made again, the same bits
    made.clear()
    third = generate_grid(_specs(), out)
    assert made == [] and third.generated == () and third.plan.n_done == 2


def test_a_file_made_otherwise_is_a_clash_unless_overwrite(tmp_path) -> None:
    out = tmp_path / "t"
    generate_grid(_specs(), out)
    sums = _sums(out)
    other = [replace(s, n_draws=50) for s in _specs()]
    with pytest.raises(UdbenchError) as err:
        generate_grid(other, out)
    text = str(err.value)
    assert text.startswith("generate: 2 task file(s) in ")
    assert "n_draws 40 (asked 50)" in text and "pass --overwrite" in text
    assert _sums(out) == sums  # nothing generated
    result = generate_grid(other, out, overwrite=True)
    assert len(result.plan.clashes) == 2 and len(result.generated) == 2
    assert _sums(out) != sums


def test_a_failing_instance_is_recorded_while_the_others_proceed(tmp_path, monkeypatch) -> None:
    out = tmp_path / "t"
    real = tasks.generate_task
    bad = _specs()[0]

    def flaky(spec, **kwargs):  # type: ignore[no-untyped-def]
        if spec == bad:
            raise RuntimeError("boom")
        return real(spec, **kwargs)

    monkeypatch.setattr(tasks, "generate_task", flaky)
    told: list[tuple[str, str]] = []

    class Progress(GridProgress):
        def instance_done(self, spec, error):  # type: ignore[no-untyped-def]
            told.append((spec.task_id, error))

    result = generate_grid(_specs(), out, progress=Progress())
    good = _specs()[1]
    assert result.failures == ((bad.task_id, "RuntimeError: boom"),)
    assert result.generated == (good.task_id,)
    assert sorted(told) == sorted([(bad.task_id, "RuntimeError: boom"), (good.task_id, "")])
    assert [p.name for p in result.paths] == [f"{good.task_id}.npz"]
    assert not (out / f"{bad.task_id}.npz").exists() and (out / f"{good.task_id}.npz").exists()
    assert [x.get("task_id") for x in _log(out)] == [None, good.task_id]  # prior, then good
    with pytest.raises(UdbenchError, match=r"^x: 1 of 2 instances failed: .*RuntimeError: boom$"):
        result.raise_failures("x")
    # a re-run makes only the failed instance
    monkeypatch.setattr(tasks, "generate_task", real)
    again = generate_grid(_specs(), out)
    assert again.generated == (bad.task_id,) and again.plan.n_done == 1


def test_the_cli_reports_a_failed_instance_and_exits_2(tmp_path, monkeypatch, capsys) -> None:
    real = tasks.generate_task
    bad = _specs()[1]

    def flaky(spec, **kwargs):  # type: ignore[no-untyped-def]
        if spec == bad:
            raise RuntimeError("boom")
        return real(spec, **kwargs)

    monkeypatch.setattr(tasks, "generate_task", flaky)
    assert main([*ARGS, "--out", str(tmp_path / "t")]) == 2  # a UdbenchError
    err = " ".join(capsys.readouterr().err.split())
    assert f"failed {bad.task_id}: RuntimeError: boom" in err
    assert "generate: 1 of 2 instances failed" in err
    assert (tmp_path / "t" / f"{_specs()[0].task_id}.npz").exists()
