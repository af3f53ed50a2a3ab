"""The runs campaign's task-version rule (docs/campaigns.md, "Task versions across
machines"): with a reference version of the suite's tasks, a record made on another version
is stale (redone, left out of the summaries), an old task file is made again, and a task
file that is still another version is refused with a recorded failure that names both
checksums; without a reference (or one of other task settings or numerics) nothing is
checked."""

from __future__ import annotations

import json

import pytest

from _fakes import fake_concrete_generate, tiny_runs_suite
from udbench.campaigns import run_campaign, runs, unit_status
from udbench.campaigns.engine import Unit, current_records, record_file, stale_reason
from udbench.recipes import task_versions

SUITE = tiny_runs_suite("tiny-versions", seeds="0-2", methods="blr")
IDS = [f"concrete__gp__homoscedastic__balanced__s{s}" for s in range(3)]

pytestmark = pytest.mark.usefixtures("runs_env")


@pytest.fixture
def reference(tmp_path, monkeypatch):
    """Write the suite's reference into a folder of the test's own: ``write(tasks, ...)``
    with ``tasks`` id → numbers checksum (the content checksum is made up from it)."""
    folder = tmp_path / "task_versions"
    folder.mkdir()
    monkeypatch.setattr(task_versions, "TASK_VERSIONS_DIR", folder)
    task_versions._read.cache_clear()

    def write(
        tasks: dict[str, str], numerics: dict[str, int] | None = None, **settings: object
    ) -> None:
        from udbench.priors import family_numerics_version

        made = numerics or {"gp": family_numerics_version("gp")}
        entries = {k: {"arrays_sha256": v, "content_sha256": "c" + v[1:]} for k, v in tasks.items()}
        ours = {k: SUITE[k] for k in task_versions.TASK_SETTINGS} | settings
        data = {"numerics": made, "settings": ours, "tasks": entries}
        (folder / "tiny-versions.json").write_text(json.dumps(data))
        task_versions._read.cache_clear()

    yield write
    task_versions._read.cache_clear()


def _units(work):
    return runs.campaign_units(
        ["untuned"], work_dir=work, suite=SUITE, generate=fake_concrete_generate
    )


def _arrays(work) -> dict[str, str]:
    return {
        tid: task_versions.task_arrays_sha256(work / "gp-v2" / "tasks" / f"{tid}.npz")
        for tid in IDS
    }


def test_records_and_task_files_of_another_version(tmp_path, reference) -> None:
    work, records = tmp_path / "work", tmp_path / "records"
    units = _units(work)
    assert all(u.accepts is None for u in units)  # no reference: nothing checked
    assert run_campaign(units, records)["done"] == 3
    shas = _arrays(work)
    assert len(set(shas.values())) == 3
    rec = json.loads(record_file(records, units[0].unit_id).read_text())
    assert rec["result"]["task_arrays_sha256"] == shas[IDS[0]]
    other = "f" * 64
    reference({IDS[0]: shas[IDS[0]], IDS[1]: shas[IDS[1]], IDS[2]: other})
    units = _units(work)
    assert [unit_status(u, records)[0] for u in units] == ["done", "done", "stale"]
    # the summaries leave the stale record out, with its reason, in one note
    kept, notes = current_records(records, "untuned", units)
    assert [r["settings"]["task_id"] for r in kept] == IDS[:2]
    assert any(
        n.startswith(
            f"1 stale untuned record(s) left out: untuned/{IDS[2]}/blr: task {IDS[2]} has "
            f"numbers {shas[IDS[2]][:12]}, not the tiny-versions reference version's "
            f"{other[:12]}"
        )
        for n in notes
    )
    # a re-run redoes it: the file is made again once and is still another version (this
    # "machine" generates other numbers): a recorded failure, not a loop
    said: list[str] = []
    counts = run_campaign(units, records, progress=said.append)
    assert counts["skipped"] == 2 and counts["failed"] == 1
    assert any("record stale (task " in s for s in said)
    rec = json.loads(record_file(records, units[2].unit_id).read_text())
    assert rec["status"] == "failed"
    assert f"not the tiny-versions reference version's {other[:12]}" in rec["error"]
    assert "again and it is still another version" in rec["error"]


def test_an_old_task_file_is_made_again(tmp_path, reference) -> None:
    from udbench.campaigns._runs_versions import check_task_version

    work = tmp_path / "work"
    for unit in _units(work):
        unit.work()
    shas = _arrays(work)
    reference(shas)
    folder = work / "gp-v2" / "tasks"
    path, good = folder / f"{IDS[1]}.npz", (folder / f"{IDS[1]}.npz").read_bytes()
    path.write_bytes((folder / f"{IDS[0]}.npz").read_bytes())  # another version's numbers
    spec = runs.instance_specs(SUITE)[1]
    made: list[int] = []

    def remake() -> None:
        made.append(1)
        path.write_bytes(good)

    assert check_task_version(SUITE, spec, path, remake) == shas[IDS[1]] and made == [1]
    assert check_task_version(SUITE, spec, path, remake) == shas[IDS[1]] and made == [1]


def test_a_reference_of_other_task_settings_or_numerics_does_not_apply(tmp_path, reference) -> None:
    """A user's suite file may reuse a preset's name with other settings."""
    reference({IDS[0]: "0" * 64}, seeds="0-9")
    (unit, *_) = _units(tmp_path / "work")
    assert unit.accepts is None
    assert task_versions.compare_with_reference(SUITE, []) is None
    reference({IDS[0]: "0" * 64}, numerics={"gp": -1})
    (unit, *_) = _units(tmp_path / "work")
    assert unit.accepts is None
    assert task_versions.reference_task_versions(SUITE, {"gp": -1}) == {
        IDS[0]: {"arrays_sha256": "0" * 64, "content_sha256": "c" + "0" * 63}
    }


def test_records_are_checked_by_numbers_else_by_the_rows_content_checksum(reference) -> None:
    from udbench.campaigns._runs_versions import task_version_check

    reference({IDS[0]: "a" * 64})
    accepts = task_version_check(SUITE, runs.instance_specs(SUITE)[0])
    assert accepts is not None
    done = {"status": "done"}
    assert accepts({**done, "result": {"task_arrays_sha256": "a" * 64}}) is None
    numbers = {"task_arrays_sha256": "b" * 64, "row": {"task_sha256": "c" + "a" * 63}}
    assert "has numbers bbbbbbbbbbbb" in accepts({**done, "result": numbers})
    # an older cell record: by its row's content checksum
    assert accepts({**done, "result": {"row": {"task_sha256": "c" + "a" * 63}}}) is None
    other = {"row": {"task_sha256": "d" * 64}}
    assert "has content dddddddddddd" in accepts({**done, "result": other})
    assert "has no checksum" in accepts({**done, "result": {"row": {"task_sha256": None}}})
    assert accepts({**done, "result": {}}) is None  # a transfer record from before it kept one
    # failed records that keep a row are judged too (they enter the progress counts)
    unit = Unit("u/x", "untuned", {}, {}, work=dict, accepts=accepts)
    assert stale_reason(unit, {"status": "failed", "result": other}) is not None
    assert stale_reason(unit, {"status": "failed"}) is None


def test_udbench_suite_says_whether_its_task_files_are_the_reference(tmp_path, reference):
    """compare_with_reference: the line ``udbench suite`` prints after its check stage."""
    work = tmp_path / "work"
    for unit in _units(work):  # generate the three fake task files (blr cells, no records)
        unit.work()
    files = sorted((work / "gp-v2" / "tasks").glob("*.npz"))
    shas = _arrays(work)
    assert task_versions.compare_with_reference(SUITE, files) is None  # none yet
    reference({IDS[0]: shas[IDS[0]], IDS[1]: "e" * 64})
    line = task_versions.compare_with_reference(SUITE, files)
    assert line.startswith(
        "task versions: 1 of 2 are tiny-versions's reference versions (1 task file(s) not in "
        f"the reference); 1 differ (first {IDS[1]}): results on them are not comparable with "
        "the committed campaign's. Files made before udbench shipped the kernel fits"
    )
    reference({IDS[0]: shas[IDS[0]]}, numerics={"gp": -1})
    assert "made under numerics {'gp': -1}" in task_versions.compare_with_reference(SUITE, files)


def test_a_fresh_result_its_own_check_refuses_is_recorded_failed(tmp_path) -> None:
    """Else the unit would be 'done', stale at the next run, redone, 'done' … for ever."""
    unit = Unit("u/x", "k", {}, {}, work=lambda: {"v": 1}, accepts=lambda r: "made elsewhere")
    assert run_campaign([unit], tmp_path)["failed"] == 1
    rec = json.loads(record_file(tmp_path, "u/x").read_text())
    assert rec["status"] == "failed" and rec["result"] == {"v": 1}
    assert rec["error"] == "made a record its check refuses: made elsewhere"


def test_the_blas_kernel_is_named_where_it_explains_another_version(monkeypatch) -> None:
    """gp-small's reference records OpenBLAS's SkylakeX kernel: under it nothing is added;
    under another kernel both are named in the campaign's refusal and in the suite's line."""
    from udbench.recipes import task_versions as tv
    from udbench.recipes.suites import load_suite

    suite = load_suite("gp-small")
    assert tv.blas_kernel().split()[0] in {"openblas", "mkl", "blis", "unknown"}
    monkeypatch.setattr(tv, "blas_kernel", lambda: "openblas SkylakeX")
    assert tv.kernel_note(suite) is None
    tid = "concrete__gp__homoscedastic__balanced__s0"
    problem = tv.task_version_problem(suite, tid, {"gp": 2}, arrays_sha256="0" * 64)
    assert problem is not None and "kernel" not in problem
    monkeypatch.setattr(tv, "blas_kernel", lambda: "openblas Haswell")
    note = tv.kernel_note(suite)
    assert note is not None and note.startswith(
        "this machine computes with openblas Haswell, the gp-small reference was made with "
        "openblas SkylakeX"
    )
    problem = tv.task_version_problem(suite, tid, {"gp": 2}, arrays_sha256="0" * 64)
    assert problem is not None and problem.endswith(note)
    assert tv.kernel_note({**suite, "seeds": "0-1"}) is None  # not the reference's settings
