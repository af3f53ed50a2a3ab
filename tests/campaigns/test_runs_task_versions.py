"""The runs campaign's task-version rule (docs/campaigns.md, "Task versions across
machines"): with a reference version of the suite's tasks, a record made on another version
is stale (redone, left out of the summaries), and a task file of another version is refused
with a recorded failure that names both checksums; without one nothing is checked."""

from __future__ import annotations

import json

import pytest

from _fakes import fake_concrete_generate
from udbench.campaigns import run_campaign, runs, unit_status
from udbench.campaigns.engine import current_records, record_file
from udbench.recipes import task_versions
from udbench.tasks import Task

SUITE = {
    "name": "tiny-versions",
    "datasets": "concrete",
    "families": "gp",
    "noise": "homoscedastic",
    "coverage": "balanced",
    "seeds": "0-2",
    "fidelity": "smoke",
    "draws": 40,
    "methods": "blr",
    "method_params": "smoke",
    "keep_predictions": False,
}
IDS = [f"concrete__gp__homoscedastic__balanced__s{s}" for s in range(3)]

pytestmark = pytest.mark.usefixtures("runs_env")


@pytest.fixture
def reference(tmp_path, monkeypatch):
    """Write the suite's reference (task id → checksum) into a folder of the test's own."""
    folder = tmp_path / "task_versions"
    folder.mkdir()
    monkeypatch.setattr(task_versions, "TASK_VERSIONS_DIR", folder)
    task_versions._read.cache_clear()

    def write(tasks: dict[str, str], numerics: dict[str, int] | None = None) -> None:
        from udbench.priors import family_numerics_version

        made = numerics or {"gp": family_numerics_version("gp")}
        (folder / "tiny-versions.json").write_text(json.dumps({"numerics": made, "tasks": tasks}))
        task_versions._read.cache_clear()

    yield write
    task_versions._read.cache_clear()


def _units(work):
    return runs.campaign_units(
        ["untuned"], work_dir=work, suite=SUITE, generate=fake_concrete_generate
    )


def test_records_and_task_files_of_another_version(tmp_path, reference) -> None:
    work, records = tmp_path / "work", tmp_path / "records"
    units = _units(work)
    assert all(u.accepts is None for u in units)  # no reference: nothing checked
    assert run_campaign(units, records)["done"] == 3
    shas = {tid: Task.load(work / "gp-v2" / "tasks" / f"{tid}.npz").content_sha256 for tid in IDS}
    assert len(set(shas.values())) == 3
    other = "f" * 64
    reference({IDS[0]: shas[IDS[0]], IDS[1]: shas[IDS[1]], IDS[2]: other})
    units = _units(work)
    assert [unit_status(u, records)[0] for u in units] == ["done", "done", "stale"]
    # the summaries leave the stale record out, with its reason
    kept, notes = current_records(records, "untuned", units)
    assert [r["settings"]["task_id"] for r in kept] == IDS[:2]
    assert any(
        n.startswith(
            f"1 stale untuned record(s) left out: untuned/{IDS[2]}/blr: task {IDS[2]} has "
            f"content {shas[IDS[2]][:12]}, not the tiny-versions reference version {other[:12]}"
        )
        for n in notes
    )
    # a re-run redoes it; this machine's file is still the other version: a recorded failure
    said: list[str] = []
    counts = run_campaign(units, records, progress=said.append)
    assert counts["skipped"] == 2 and counts["failed"] == 1
    assert any("record stale (task " in s for s in said)
    rec = json.loads(record_file(records, units[2].unit_id).read_text())
    assert rec["status"] == "failed"
    assert f"not the tiny-versions reference version {other[:12]}" in rec["error"]
    assert "its cells are not run here" in rec["error"]


def test_a_reference_made_under_other_numerics_does_not_apply(tmp_path, reference) -> None:
    reference({IDS[0]: "0" * 64}, numerics={"gp": -1})
    (unit, *_) = _units(tmp_path / "work")
    assert unit.accepts is None
    assert task_versions.reference_task_versions("tiny-versions", {"gp": -1}) == {IDS[0]: "0" * 64}


def test_transfer_records_are_checked_when_they_keep_the_checksum(reference) -> None:
    from udbench.campaigns._runs_versions import task_version_check

    reference({IDS[0]: "a" * 64})
    spec = runs.instance_specs(SUITE)[0]
    accepts = task_version_check("tiny-versions", spec)
    assert accepts is not None
    done = {"status": "done"}
    assert accepts({**done, "result": {"task_sha256": "a" * 64}}) is None
    assert "has content bbbbbbbbbbbb" in accepts({**done, "result": {"task_sha256": "b" * 64}})
    assert accepts({**done, "result": {}}) is None  # from before transfer kept it
    assert "has no checksum" in accepts({**done, "result": {"row": {"task_sha256": None}}})


def test_udbench_suite_says_whether_its_task_files_are_the_reference(tmp_path, reference):
    """compare_with_reference: the line ``udbench suite`` prints after its check stage."""
    work = tmp_path / "work"
    for unit in _units(work):  # generate the three fake task files (blr cells, no records)
        unit.work()
    files = sorted((work / "gp-v2" / "tasks").glob("*.npz"))
    shas = [Task.load(f).content_sha256 for f in files]
    assert task_versions.compare_with_reference("tiny-versions", files) is None  # none yet
    reference({IDS[0]: shas[0], IDS[1]: "e" * 64})
    line = task_versions.compare_with_reference("tiny-versions", files)
    assert line == (
        "task versions: 1 of 2 are tiny-versions's reference versions (1 task file(s) not in "
        f"the reference); 1 differ (first {IDS[1]}): results on them are not comparable with "
        "the committed campaign's (docs/campaigns.md, 'Task versions across machines')"
    )
    reference({IDS[0]: shas[0]}, numerics={"gp": -1})
    assert "made under numerics {'gp': -1}" in task_versions.compare_with_reference(
        "tiny-versions", files
    )
